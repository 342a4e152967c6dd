"""Workspace bootstrap: ignored files carried into each new worktree, setup and teardown scripts,
and the secrets of those files kept out of the event log.

* ``.worktreeinclude`` at the repository root (gitignore syntax, Claude Code's convention) names
  files that are **ignored** by git and that a new worktree should still get (``.env``, local
  configuration). Git does the matching (``git ls-files --others --ignored --exclude-from``), so
  every gitignore rule (``**``, ``!``, anchors, directories) means what it means to git. Ignored
  folders that are heavy and never local configuration (``node_modules``, ``.venv``, … — see
  :data:`~orchestrator.engine.workspaces.COPY_IGNORED`) are only searched when the include file
  names them.
* ``[workspace] setup`` / ``teardown`` (:class:`~orchestrator.core.config.WorkspaceConfig`) run
  with ``sh -c`` in the workspace, in their own process group, stopped (SIGTERM, then SIGKILL)
  after ``timeout_s``; their output comes back as lines (redacted).
* :func:`register_workspace_secrets`: the values in the copied files (and any ``.env*`` at the
  workspace's root) that look like secrets are registered with :mod:`orchestrator.core.redact`,
  so a tool output that prints them (``cat .env``) reaches the event log as ``[REDACTED]``. A
  value counts as a secret when its name looks like one (``KEY``, ``TOKEN``, ``SECRET``,
  ``PASSWORD``, …: the rule of :func:`~orchestrator.core.redact.register_env_secrets`), when it
  looks like a credential (16+ characters without spaces mixing letters and digits), or when it
  is the password of a URL (``postgres://user:PASSWORD@host``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from orchestrator.core.errors import RingleaderError
from orchestrator.core.git import run_git
from orchestrator.core.redact import (
    MIN_SECRET_CHARS,
    redact_text,
    register_secret,
)

__all__ = [
    "WORKTREE_INCLUDE",
    "ScriptResult",
    "SetupFailedError",
    "copy_included_files",
    "included_files",
    "register_workspace_secrets",
    "run_workspace_script",
    "secrets_in_text",
]

WORKTREE_INCLUDE = ".worktreeinclude"
"""The file at a repository's root naming ignored files each new worktree gets."""

_HEAVY = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".runtimes",
    }
)
"""Ignored folders searched only when ``.worktreeinclude`` names them (the copy's list)."""


class SetupFailedError(RingleaderError):
    """A workspace's setup script failed (exit status, timeout, or it could not start): its
    run ends ``error{setup_failed}`` + ``done{error}`` and no agent starts."""

    event_code = "setup_failed"


def _git(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_git(args, cwd, text=True, input=stdin)


def included_files(top: Path) -> list[str]:
    """The ignored files of the repository at ``top`` that its ``.worktreeinclude`` names
    (paths relative to ``top``, sorted); ``[]`` without the file or without git."""
    include = top / WORKTREE_INCLUDE
    if not include.is_file() or shutil.which("git") is None:
        return []
    try:
        patterns = include.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    if not any(
        line.strip() and not line.lstrip().startswith("#") for line in patterns.splitlines()
    ):
        return []
    # the ignored entries, ignored folders collapsed (git does not descend into them)
    listed = _git(
        ["ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"], top
    )
    if listed.returncode != 0:
        return []
    entries = [e for e in listed.stdout.split("\0") if e]
    wanted: list[str] = []
    for entry in entries:
        name = entry.rstrip("/").rsplit("/", 1)[-1]
        if entry.endswith("/") and name in _HEAVY and name not in patterns:
            continue
        wanted.append(entry)
    if not wanted:
        return []
    # of those, the files the include patterns match (git's own gitignore matching)
    found = _git(
        [
            "ls-files",
            "--others",
            "--ignored",
            f"--exclude-from={include}",
            "-z",
            "--",
            *(":(literal)" + e for e in wanted),
        ],
        top,
    )
    if found.returncode != 0:
        return []
    return sorted({f for f in found.stdout.split("\0") if f})


def copy_included_files(top: Path, target: Path) -> list[str]:
    """Copy the files :func:`included_files` names from ``top`` into the worktree ``target``
    (same relative paths, modes and symlinks kept; a file already there is left alone); returns
    what was copied. Their secrets are registered for redaction first."""
    files = included_files(top)
    copied: list[str] = []
    for rel in files:
        source, dest = top / rel, target / rel
        if dest.exists() or dest.is_symlink():
            continue
        with contextlib.suppress(OSError):
            _register_file(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest, follow_symlinks=False)
            copied.append(rel)
    return copied


# -- secrets -----------------------------------------------------------------------------------

_ASSIGNMENT = re.compile(
    r"""^\s*(?:export\s+)?["']?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)["']?\s*[:=]\s*(?P<value>.*?)\s*,?\s*$"""
)
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:(?P<password>[^\s@/]+)@")
_SECRET_NAME = re.compile(r"(?i)(key|token|secret|passw(or)?d|credential|auth|private)")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1]
    if " #" in value:  # a trailing comment of an unquoted dotenv value
        value = value.split(" #", 1)[0].rstrip()
    return value


def _looks_like_credential(value: str) -> bool:
    return (
        len(value) >= 16
        and not any(c.isspace() for c in value)
        and any(c.isalpha() for c in value)
        and any(c.isdigit() for c in value)
    )


def secrets_in_text(text: str) -> list[str]:
    """The values of ``text`` (a dotenv, TOML, YAML or JSON file: ``NAME=value`` /
    ``name: value`` / ``"name": "value"`` lines) that count as secrets (see the module
    docstring)."""
    found: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith(("#", "//", ";")):
            continue
        for match in _URL_PASSWORD.finditer(line):
            found.append(match.group("password"))
        m = _ASSIGNMENT.match(line)
        if m is None:
            continue
        value = _unquote(m.group("value"))
        if len(value) < MIN_SECRET_CHARS:
            continue
        if _SECRET_NAME.search(m.group("name")) or _looks_like_credential(value):
            found.append(value)
    return found


_MAX_SECRET_FILE = 1024 * 1024


def _register_file(path: Path) -> None:
    try:
        if not path.is_file() or path.stat().st_size > _MAX_SECRET_FILE:
            return
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for value in secrets_in_text(text):
        register_secret(value)


def _repo_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def register_workspace_secrets(cwd: str | Path | None) -> None:
    """Register the secrets of the files a workspace was given (``.worktreeinclude``'s files
    at its repository's root) and of any ``.env``/``.env.*`` at its root and in ``cwd``, for
    redaction (blocking: a few file reads, one ``git`` call when ``.worktreeinclude`` exists).
    The runner calls it before every run, so a run resumed in another process is covered too."""
    if cwd is None:
        return
    here = Path(cwd)
    if not here.is_dir():
        return
    root = _repo_root(here)
    folders: list[Path] = [here] if root is None or root == here else [here, root]
    for folder in folders:
        with contextlib.suppress(OSError):
            for entry in folder.iterdir():
                if entry.name == ".env" or entry.name.startswith(".env."):
                    _register_file(entry)
    if root is not None and (root / WORKTREE_INCLUDE).is_file():
        for rel in included_files(root):
            _register_file(root / rel)


# -- setup and teardown --------------------------------------------------------------------------


@attrs.frozen
class ScriptResult:
    """How a setup or teardown script ended: ``ok``, its exit ``status`` (``None``: it did
    not exit by itself), whether it ``timed_out``, its output ``lines`` (redacted) and, when it
    could not start, ``error``."""

    ok: bool
    status: int | None
    timed_out: bool
    lines: tuple[str, ...]
    error: str | None = None

    def describe(self, what: str, timeout_s: float) -> str:
        if self.error is not None:
            return f"the workspace {what} script could not start: {self.error}"
        if self.timed_out:
            return f"the workspace {what} script did not finish within {timeout_s:g}s"
        if self.status is not None and self.status < 0:
            return f"the workspace {what} script was killed by signal {-self.status}"
        tail = f": {self.lines[-1]}" if self.lines else ""
        return f"the workspace {what} script exited with status {self.status}{tail}"


MAX_SCRIPT_LINES = 200
"""Output lines kept per script (the last ones); longer lines are cut at 2,000 characters."""
_KILL_GRACE_S = 3.0


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def run_workspace_script(
    command: str,
    cwd: str | Path,
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
    on_line: Callable[[str], object] | None = None,
) -> ScriptResult:
    """Run ``sh -c command`` in ``cwd`` (its own process group, stdin closed, stdout and stderr
    merged) for at most ``timeout_s`` seconds; ``on_line`` gets each output line (redacted) as
    it comes. Nothing of it outlives the call: the group gets SIGTERM, then SIGKILL."""
    environ = {**os.environ, **(env or {})}
    lines: list[str] = []
    try:
        proc = await trio.lowlevel.open_process(
            ["/bin/sh", "-c", command],
            cwd=str(cwd),
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return ScriptResult(False, None, False, (), error=exc.strerror or str(exc))
    timed_out = False
    try:
        assert proc.stdout is not None
        with trio.move_on_after(timeout_s) as scope:
            pending = b""
            async for chunk in proc.stdout:
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    _line(raw, lines, on_line)
            if pending:
                _line(pending, lines, on_line)
            await proc.wait()
        timed_out = scope.cancelled_caught
    finally:
        with trio.CancelScope(shield=True):
            if proc.returncode is None:
                _kill_group(proc.pid, signal.SIGTERM)
                with trio.move_on_after(_KILL_GRACE_S):
                    await proc.wait()
            _kill_group(proc.pid, signal.SIGKILL)  # whatever the script left behind
            if proc.returncode is None:
                await proc.wait()
            if proc.stdout is not None:
                await proc.stdout.aclose()
    status = None if timed_out else proc.returncode
    return ScriptResult(status == 0 and not timed_out, status, timed_out, tuple(lines))


def _line(raw: bytes, lines: list[str], on_line: Callable[[str], object] | None) -> None:
    text = redact_text(raw.decode("utf-8", "replace").rstrip("\r")[:2000])
    lines.append(text)
    del lines[:-MAX_SCRIPT_LINES]
    if on_line is not None:
        on_line(text)
