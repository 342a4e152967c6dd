"""A sandbox for every run: each child a run spawns goes through Debian's bubblewrap (``bwrap``,
the mechanism Claude Code itself uses on Linux), whatever the runtime.

Inside, the system is read-only; the run's workspace, its runtime home and a private ``/tmp``
are writable; the user's home is hidden (an empty tmpfs) except what the runtime needs (its
binary's install, its config: :attr:`SandboxPolicy.readable`); everything else under ``/tmp``
(other runs' temporary copies) is invisible and other runs' homes and worktrees live under the
state directory, hidden with it when it is in the home or under ``/tmp``; the network is
allowed (the model must be reachable). It does not confine what a runtime does in-process (the
native loop's file tools run in ringleader's own process and keep their own workspace checks),
nor the model server, nor a gateway another process started.

The policy is a context variable set by the runner around a run
(:data:`current_sandbox`); :func:`adapters._process.open_child`, where every child is spawned,
wraps the command line with :func:`wrap`. ``[sandbox] kind = "bubblewrap"`` turns it on;
where ``bwrap`` is missing or cannot create its namespaces, :func:`probe` says why and runs go
unconfined with one line saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path

import attrs

__all__ = ["SandboxPolicy", "bwrap_binary", "current_sandbox", "probe", "wrap"]


@attrs.frozen
class SandboxPolicy:
    """What one run's children may see and change (see the module docstring)."""

    writable: tuple[str, ...] = ()
    """Bound read-write: the run's workspace and its runtime home."""
    readable: tuple[str, ...] = ()
    """Shown read-only although under the hidden home (the runtime's install, its config)."""
    hidden: tuple[str, ...] = ()
    """Replaced by an empty tmpfs (the user's home, the state directory)."""
    bwrap: str = "bwrap"

    def with_paths(
        self, *, writable: Sequence[str] = (), readable: Sequence[str] = ()
    ) -> SandboxPolicy:
        """This policy with more paths (absolute; missing ones are skipped when wrapping)."""
        return attrs.evolve(
            self,
            writable=(*self.writable, *writable),
            readable=(*self.readable, *readable),
        )


current_sandbox: ContextVar[SandboxPolicy | None] = ContextVar("current_sandbox", default=None)
"""The sandbox of the run whose children are being spawned (``None``: unconfined)."""


def bwrap_binary() -> str | None:
    """Where ``bwrap`` is, if installed."""
    return shutil.which("bwrap")


def wrap(policy: SandboxPolicy, argv: Sequence[str], cwd: str | None) -> list[str]:
    """``argv`` run inside ``bwrap`` under ``policy`` (in ``cwd``, which is made writable)."""
    args = [
        policy.bwrap,
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
    ]

    def real(path: str) -> str:  # a bind onto a symlink's path fails: bind where it points
        return os.path.realpath(path)

    for path in dict.fromkeys(map(real, policy.hidden)):
        if os.path.isdir(path):
            args += ["--tmpfs", path]
    for path in dict.fromkeys(map(real, policy.readable)):
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    for path in dict.fromkeys(map(real, [*policy.writable, *([cwd] if cwd else [])])):
        if os.path.exists(path):
            args += ["--bind", path, path]
    if cwd:
        args += ["--chdir", cwd]
    return [*args, "--", *argv]


def probe() -> str | None:
    """``None`` when bubblewrap works here, else why not (one line)."""
    found = bwrap_binary()
    if found is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    try:
        done = subprocess.run(
            wrap(SandboxPolicy(bwrap=found), ["true"], None),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot run: {exc}"
    if done.returncode != 0:
        why = " ".join(done.stderr.split())[:200] or f"exit {done.returncode}"
        return f"bubblewrap cannot create its sandbox here: {why}"
    return None


def home_of_user() -> Path:
    """The user's home (hidden in the sandbox)."""
    return Path(os.environ.get("HOME") or Path.home())
