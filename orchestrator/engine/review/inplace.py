"""A run in the person's own checkout (a single ``ringleader run``, no workspace made): where it
started, so ``ringleader diff`` shows what *the run* changed, not what was already uncommitted.

Before the run starts, :func:`record_start` writes the checkout's working tree as it is — tracked
files with their uncommitted edits, untracked files, ignored ones left out (and untracked files
above :data:`HUGE_BYTES`) — as a commit whose parent is ``HEAD``, built in a **temporary index**
(a copy of the checkout's own, so unchanged files are not hashed again): the person's index,
branches, ``HEAD`` and files are never touched, only git objects are written. The commit is kept
on a private ref, ``refs/ringleader/starts/<task>`` (on no branch; ``git gc`` keeps it), and
recorded in the event log as a workspace row of kind :data:`CHECKOUT_KIND` (its ``origin`` the
repository's top level, its ``path`` the run's directory, its ``root`` — the row's key —
``TOP#TASK``: one row per run, see :func:`~orchestrator.engine.review.records.workspace_dir`) —
so the review commands find it like any workspace: ``diff`` and the board's diff view read it
against that commit, ``compare`` and ``comment`` work, while ``apply`` refuses (the changes
already are in the checkout) and ``workspaces`` never lists it (it is the person's own folder);
``workspaces --prune`` forgets the start (deletes the ref) once its checkout is gone or, with
``--older-than``, once it is older than that.

A directory that is not in a git repository with a commit gets no row: its run has no diff.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import trio

from orchestrator.core.errors import ReviewError
from orchestrator.core.events import now_ms
from orchestrator.engine.eventlog import EventLog, WorkspaceRow
from orchestrator.engine.review.git import Checkout, git, temporary_index
from orchestrator.engine.review.records import CHECKOUT_KIND

__all__ = [
    "CHECKOUT_KIND",
    "START_REF_PREFIX",
    "CheckoutStart",
    "record_in_place",
    "record_start",
    "start_ref",
]

START_REF_PREFIX = "refs/ringleader/starts/"
HUGE_BYTES = 20 * 1024 * 1024
"""An untracked file above this size is not put into the starting snapshot (its run's diff then
lists it as added, marked ``large``)."""

_IDENTITY = {
    "GIT_AUTHOR_NAME": "ringleader",
    "GIT_AUTHOR_EMAIL": "ringleader@localhost",
    "GIT_COMMITTER_NAME": "ringleader",
    "GIT_COMMITTER_EMAIL": "ringleader@localhost",
}


@attrs.frozen
class CheckoutStart:
    root: Path
    """The repository's top level (what the diff's paths are relative to)."""
    base: str
    """The commit of the working tree as the run found it (its parent: ``HEAD``)."""
    ref: str


def start_ref(task_id: str) -> str:
    """The private ref that keeps a task's starting commit (characters git refuses: ``_``)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", task_id).strip(".") or "task"
    return START_REF_PREFIX + safe


def _huge_untracked(checkout: Checkout) -> list[str]:
    """Untracked (not ignored) files above :data:`HUGE_BYTES`: left out of the snapshot, so a
    stray data file is neither hashed before every run nor kept alive by the start ref."""
    out = checkout.run(
        "ls-files", "--others", "--exclude-standard", "-z", what="listing untracked files"
    ).stdout
    found: list[str] = []
    for raw in out.split(b"\0"):
        if not raw:
            continue
        path = raw.decode("utf-8", "surrogateescape")
        try:
            if (checkout.root / path).lstat().st_size > HUGE_BYTES:
                found.append(path)
        except OSError:
            continue
    return found


def record_start(cwd: str | Path, task_id: str) -> CheckoutStart | None:
    """The working tree of the checkout holding ``cwd`` as a commit (see the module docstring);
    ``None`` outside a git repository with a commit, or without git. Blocking.

    Raises:
        ReviewError: git failed while writing the snapshot.
    """
    here = Path(cwd)
    if not here.is_dir():
        return None
    try:
        top = git(["rev-parse", "--show-toplevel"], cwd=here, check=False)
        head = git(["rev-parse", "--verify", "--quiet", "HEAD"], cwd=here, check=False)
    except ReviewError:  # git is not installed
        return None
    if top.returncode != 0 or head.returncode != 0:
        return None
    root = Path(top.stdout.decode().strip())
    parent = head.stdout.decode().strip()
    checkout = Checkout(root, parent)
    skipped = _huge_untracked(checkout)
    with temporary_index(checkout) as env:
        checkout.run(
            "add",
            "-A",
            "--",
            ".",
            *(f":(exclude,literal){path}" for path in skipped),
            env=env,
            what="recording where the run started",
        )
        tree = checkout.run("write-tree", env=env).stdout.decode().strip()
    commit = (
        checkout.run(
            "commit-tree",
            tree,
            "-p",
            parent,
            "-m",
            f"ringleader: the working tree before task {task_id}",
            env=_IDENTITY,
        )
        .stdout.decode()
        .strip()
    )
    ref = start_ref(task_id)
    checkout.run("update-ref", ref, commit, what="keeping the starting point")
    return CheckoutStart(root, commit, ref)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


async def record_in_place(
    log: EventLog,
    *,
    cwd: str | Path,
    task_id: str,
    runtime_id: str,
    label: str,
    group_id: str,
) -> WorkspaceRow | None:
    """Before a run of ``task_id`` starts in ``cwd`` (no workspace made for it): its starting
    point (:func:`record_start`) recorded as a workspace row of kind :data:`CHECKOUT_KIND`.
    ``None`` — nothing recorded — outside git, or when ``cwd`` is inside a workspace ringleader
    made (a resumed or commented turn there belongs to that workspace's run)."""
    here = await trio.Path(cwd).resolve()
    for row in await log.workspaces():
        if (
            row.kind != CHECKOUT_KIND
            and row.removed_ms is None
            and _inside(Path(here), Path(row.root))
        ):
            return None
    start = await trio.to_thread.run_sync(record_start, Path(here), task_id)
    if start is None:
        return None
    row = WorkspaceRow(
        root=f"{start.root}#{task_id}",  # the key of the row: one per run, not per checkout
        task_id=task_id,
        runtime_id=runtime_id,
        label=label,
        group_id=group_id,
        kind=CHECKOUT_KIND,
        origin=str(start.root),
        path=str(here),
        base=start.base,
        git_dir=None,
        created_ms=now_ms(),
    )
    await log.record_workspace(row)
    return row
