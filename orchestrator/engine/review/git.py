"""Running git for review: one place that runs it in the environment of
:mod:`orchestrator.core.git` (no inherited ``GIT_DIR``/``GIT_INDEX_FILE``, no prompts, C locale,
nothing the repository configures is run), and a workspace's checkout as git sees it (a
worktree, or a temporary copy with its snapshot repository outside it)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path

import attrs

from orchestrator.core.errors import ReviewError, redact_secrets
from orchestrator.core.git import run_git

__all__ = ["Checkout", "git", "temporary_index"]


def git(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    what: str | None = None,
    input: bytes | None = None,
    hooks: bool = False,
    git_flags: Sequence[str] = (),
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git [GIT_FLAGS] ARGS`` in ``cwd`` (bytes out) with
    :func:`orchestrator.core.git.run_git` (``hooks``: the repository's hooks do run).
    ``check``: a failure is a :class:`ReviewError` naming ``what`` (default: the git command)
    and git's own message."""
    if shutil.which("git") is None:
        raise ReviewError("git is not installed (reviewing a workspace needs it)")
    done = run_git(args, cwd, env=env, input=input, git_flags=git_flags, hooks=hooks)
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        label = what or f"git {args[0] if args else ''}".strip()
        why = redact_secrets(message[-1]) if message else "no output"
        raise ReviewError(f"{label} failed in {cwd}: {why}")
    return done


@attrs.frozen
class Checkout:
    """A workspace's files and the git data that diffs them.

    ``git_dir`` is ``None`` for a git worktree (git finds its repository from ``root``), or the
    snapshot repository of a temporary copy (kept outside the copy, so the agent never saw a
    ``.git``). ``base`` is the commit the workspace started from."""

    root: Path
    base: str
    git_dir: Path | None = None

    def flags(self) -> list[str]:
        if self.git_dir is None:
            return []
        return ["--git-dir", str(self.git_dir), "--work-tree", str(self.root)]

    def run(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        what: str | None = None,
        input: bytes | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        return git(
            args,
            cwd=self.root,
            env=env,
            check=check,
            what=what,
            input=input,
            git_flags=self.flags(),
        )

    def index_path(self) -> Path:
        """The checkout's own index file (its stat cache makes ``add`` cheap)."""
        if self.git_dir is not None:
            return self.git_dir / "index"
        out = self.run("rev-parse", "--git-path", "index").stdout.decode().strip()
        path = Path(out)
        return path if path.is_absolute() else self.root / path


@contextlib.contextmanager
def temporary_index(checkout: Checkout) -> Generator[dict[str, str]]:
    """An environment whose ``GIT_INDEX_FILE`` is a private copy of the checkout's index: what
    review does to an index never touches the one the agent (or the person) uses."""
    folder = Path(tempfile.mkdtemp(prefix="ringleader-index-"))
    try:
        target = folder / "index"
        source = checkout.index_path()
        if source.is_file():
            shutil.copy2(source, target)  # its mtime too: git re-reads racily clean entries
        yield {"GIT_INDEX_FILE": str(target)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
