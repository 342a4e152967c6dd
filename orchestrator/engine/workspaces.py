"""Per-run workspaces: each of several runs of one task works in its own copy of the directory.

* In a git repository (with at least one commit): a **git worktree** of ``HEAD``, detached, under
  ``<state_dir>/workspaces/`` (uncommitted changes of the origin are not in it). Afterwards the
  changes are ``git diff --shortstat`` against ``HEAD``, untracked files included.
* Elsewhere: a **temporary copy** of the directory (in ``$TMPDIR``), without version-control and
  cache folders (``.git``, ``.venv``, ``node_modules``, …); a directory too large to copy is
  refused with a :class:`~orchestrator.core.errors.ConfigError`. Afterwards the changes are counted
  against a snapshot (size, mtime) taken right after the copy.

Workspaces are kept after the runs so their changes can be inspected; a worktree goes away with
``git worktree remove PATH``, a copy with ``rm -r PATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import attrs
import trio

from orchestrator.core.errors import ConfigError
from orchestrator.core.git import run_git
from orchestrator.engine.reviewloop.bootstrap import copy_included_files

__all__ = [
    "COPY_IGNORED",
    "COPY_MAX_BYTES",
    "COPY_MAX_FILES",
    "Snapshot",
    "Workspace",
    "changes_since",
    "create_workspace",
    "snapshot",
    "workspace_changes",
]

COPY_IGNORED = frozenset(
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
"""Folder names a temporary copy leaves out."""
COPY_MAX_FILES = 5_000
COPY_MAX_BYTES = 200 * 1024 * 1024

WorkspaceKind = Literal["git worktree", "temporary copy"]


@attrs.frozen
class Workspace:
    """Where one run works: ``path`` (its working directory), and how it was made."""

    path: Path
    kind: WorkspaceKind
    origin: Path
    root: Path
    """The worktree's top level, or the copy itself (``path`` may be a folder inside it)."""
    baseline: Snapshot | None = attrs.field(default=None, repr=False)
    """A temporary copy's files right after the copy (what its changes are counted against)."""
    base: str | None = None
    """The commit the workspace started from: the worktree's ``HEAD`` when it was made, or the
    commit of a temporary copy's snapshot (see :func:`_snapshot_copy`)."""
    git_dir: Path | None = None
    """A temporary copy's snapshot repository, kept outside the copy (the agent never sees a
    ``.git``): ``git --git-dir GIT_DIR --work-tree ROOT`` diffs the copy against ``base``."""
    included: tuple[str, ...] = ()
    """Ignored files copied in because the repository's ``.worktreeinclude`` names them
    (:mod:`orchestrator.engine.reviewloop.bootstrap`)."""


@attrs.frozen
class Snapshot:
    """The files under ``root`` at one moment (size, mtime), for counting what a run changed.
    Folders named in :data:`COPY_IGNORED` (``.git``, caches) that already existed are not
    walked; one the run creates is (a ``git init`` counts)."""

    root: Path
    files: dict[str, tuple[int, int]]
    skipped: frozenset[str]


class _TooMany(Exception):
    pass


def _scan(
    root: Path, skip: frozenset[str] | None, limit: int | None = None
) -> tuple[dict[str, tuple[int, int]], set[str]]:
    """Files under ``root`` and the ignored folders not walked: ``skip`` ``None`` skips every
    folder named in :data:`COPY_IGNORED`, else only these (relative paths). More than ``limit``
    files raises ``_TooMany``."""
    found: dict[str, tuple[int, int]] = {}
    skipped: set[str] = set()
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        keep: list[str] = []
        for d in dirs:
            rel = str((here / d).relative_to(root))
            if (skip is None and d in COPY_IGNORED) or (skip is not None and rel in skip):
                skipped.add(rel)
            else:
                keep.append(d)
        dirs[:] = keep
        for name in files:
            path = here / name
            try:
                st = path.lstat()
            except OSError:
                continue
            found[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
            if limit is not None and len(found) > limit:
                raise _TooMany
    return found, skipped


def _snapshot(
    root: Path, limit: int | None = None, exclude: Sequence[Path] = ()
) -> Snapshot | None:
    left_out: set[str] = set()
    for path in exclude:  # ringleader's own state directory, when it is inside the root
        try:
            left_out.add(str(path.resolve().relative_to(root.resolve())))
        except ValueError:
            continue
    try:
        files, skipped = _scan(root, None, limit)
    except _TooMany:
        return None
    for rel in left_out:
        files = {k: v for k, v in files.items() if not (k == rel or k.startswith(rel + os.sep))}
    return Snapshot(root, files, frozenset(skipped | left_out))


def _count(before: Snapshot) -> str:
    try:
        now, _ = _scan(before.root, before.skipped)
    except OSError:
        return "unknown"
    added = len(now.keys() - before.files.keys())
    deleted = len(before.files.keys() - now.keys())
    modified = sum(1 for k in now.keys() & before.files.keys() if now[k] != before.files[k])
    total = added + deleted + modified
    if not total:
        return "none"
    return f"{total} file{'s' if total != 1 else ''} changed (+{added} ~{modified} -{deleted})"


async def snapshot(root: str | Path, exclude: Sequence[Path] = ()) -> Snapshot | None:
    """The files of a directory a run works in place (``None``: too many to count, or it
    cannot be read), but ``exclude`` (the state directory): :func:`changes_since` counts what
    the run changed there."""
    try:
        return await trio.to_thread.run_sync(_snapshot, Path(root), COPY_MAX_FILES, exclude)
    except OSError:
        return None


async def changes_since(before: Snapshot) -> str:
    """What changed under the snapshot's root since it was taken, as one short line."""
    return await trio.to_thread.run_sync(_count, before)


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_git(args, cwd, text=True)


def _git_toplevel(origin: Path) -> Path | None:
    if shutil.which("git") is None:
        return None
    top = _git("rev-parse", "--show-toplevel", cwd=origin)
    if top.returncode != 0:
        return None
    if _git("rev-parse", "--verify", "--quiet", "HEAD", cwd=origin).returncode != 0:
        return None  # no commit yet: nothing to check out
    return Path(top.stdout.strip())


def _walk(root: Path) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in COPY_IGNORED]
        for name in files:
            path = Path(folder, name)
            try:
                st = path.lstat()
            except OSError:
                continue
            found[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return found


def _copy(origin: Path, name: str) -> Workspace:
    listing = _walk(origin)
    size = sum(s for s, _ in listing.values())
    if len(listing) > COPY_MAX_FILES or size > COPY_MAX_BYTES:
        raise ConfigError(
            f"{origin} is too large to copy into a workspace ({len(listing)} files, "
            f"{size // (1024 * 1024)} MB; limits {COPY_MAX_FILES} files, "
            f"{COPY_MAX_BYTES // (1024 * 1024)} MB): run from a git repository or a smaller directory"
        )
    target = Path(tempfile.mkdtemp(prefix=f"ringleader-{name}-"))
    shutil.copytree(
        origin,
        target,
        symlinks=True,
        ignore=lambda _dir, names: [n for n in names if n in COPY_IGNORED],
        dirs_exist_ok=True,
    )
    return Workspace(
        path=target, kind="temporary copy", origin=origin, root=target, baseline=_snapshot(target)
    )


def _worktree(origin: Path, top: Path, name: str, state_dir: Path) -> Workspace:
    base = state_dir / "workspaces"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
    target.rmdir()  # git creates it
    added = _git("worktree", "add", "--detach", "--quiet", str(target), "HEAD", cwd=top)
    if added.returncode != 0:
        raise ConfigError(
            f"could not create a git worktree of {top}: {added.stderr.strip() or added.stdout.strip()}"
        )
    included = tuple(copy_included_files(top, target))
    return Workspace(
        path=target / origin.relative_to(top),
        kind="git worktree",
        origin=origin,
        root=target,
        included=included,
    )


def _create(origin: Path, name: str, state_dir: Path) -> Workspace:
    if not origin.is_dir():
        raise ConfigError(f"working directory {origin} does not exist")
    top = _git_toplevel(origin)
    if top is not None:
        ws = _worktree(origin, top, name, state_dir)
        head = _git("rev-parse", "--verify", "HEAD", cwd=ws.root)
        return attrs.evolve(ws, base=head.stdout.strip() if head.returncode == 0 else None)
    return _snapshot_copy(_copy(origin, name), state_dir)


SNAPSHOT_IDENTITY = {
    "GIT_AUTHOR_NAME": "ringleader",
    "GIT_AUTHOR_EMAIL": "ringleader@localhost",
    "GIT_COMMITTER_NAME": "ringleader",
    "GIT_COMMITTER_EMAIL": "ringleader@localhost",
}


def _snapshot_copy(ws: Workspace, state_dir: Path) -> Workspace:
    """Record a temporary copy as it was right after copying: a commit in a bare repository
    under ``<state_dir>/workspaces/snapshots/`` whose work tree is the copy (objects only; the
    folders a copy leaves out stay excluded). Without git, the copy keeps only its (size, mtime)
    baseline."""
    if shutil.which("git") is None:
        return ws
    base = state_dir / "workspaces" / "snapshots"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    git_dir = Path(tempfile.mkdtemp(prefix=f"{ws.root.name}-", suffix=".git", dir=base))
    flags = ("--git-dir", str(git_dir), "--work-tree", str(ws.root))
    if _git("init", "--bare", "--quiet", str(git_dir), cwd=base).returncode != 0:
        shutil.rmtree(git_dir, ignore_errors=True)
        return ws
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text("".join(f"{n}/\n" for n in sorted(COPY_IGNORED)))
    steps = [
        ["config", "core.bare", "false"],
        ["add", "-A", "."],
        ["write-tree"],
    ]
    out = ""
    for step in steps:
        done = run_git(step, ws.root, text=True, env=SNAPSHOT_IDENTITY, git_flags=flags)
        if done.returncode != 0:
            shutil.rmtree(git_dir, ignore_errors=True)
            return ws
        out = done.stdout.strip()
    message = f"ringleader snapshot of {ws.origin}"
    commit = run_git(
        ["commit-tree", out, "-m", message], ws.root, text=True, env=SNAPSHOT_IDENTITY,
        git_flags=flags,
    )  # fmt: skip
    if commit.returncode != 0:
        shutil.rmtree(git_dir, ignore_errors=True)
        return ws
    head = commit.stdout.strip()
    run_git(["update-ref", "refs/ringleader/base", head], ws.root, git_flags=flags)
    return attrs.evolve(ws, base=head, git_dir=git_dir)


async def create_workspace(origin: str | Path, name: str, *, state_dir: Path) -> Workspace:
    """A new workspace of ``origin`` for the run called ``name`` (see the module docstring).

    Create the workspaces of one repository one after the other (git locks its worktree list)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "run"
    return await trio.to_thread.run_sync(lambda: _create(Path(origin).resolve(), safe, state_dir))


def _changes(ws: Workspace) -> str:
    if ws.kind == "git worktree":
        _git("add", "-A", cwd=ws.root)
        stat = _git("diff", "--cached", "--shortstat", "HEAD", cwd=ws.root)
        if stat.returncode != 0:
            return "unknown"
        return stat.stdout.strip() or "none"
    if ws.baseline is None:
        return "unknown"
    return _count(ws.baseline)


async def workspace_changes(ws: Workspace) -> str:
    """What the run changed in its workspace, as one short line (``none`` when nothing)."""
    return await trio.to_thread.run_sync(_changes, ws)
