"""Which workspace a run worked in, from the event log: the ``workspaces`` table (one row per
workspace, written when it was made) and the runs of its task (run keys
``runtime:<runtime>:task:<task>:…``; a resumed run is found by the directory its session ran in).

A reference to a run (``diff REF``, ``apply REF``) is, in this order: ``last`` (the newest run that
worked in a recorded workspace, when its task ran on one runtime; otherwise the runs are named), a
run key, a task id, a side-by-side task's id with its label (``TASK/codex``, ``last/codex``), or a
label or runtime id (its newest workspace)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from orchestrator.core.errors import ReviewError
from orchestrator.engine.eventlog import EventLog, RunRow, WorkspaceRow
from orchestrator.engine.review.git import Checkout

__all__ = [
    "ResolvedRun",
    "checkout_of",
    "resolve_group",
    "resolve_run",
    "runs_of",
    "task_prefix",
    "workspace_dir",
]

CHECKOUT_KIND = "your checkout"
"""The ``kind`` of a workspace row that is the person's own checkout: a run that worked in place
(see :mod:`orchestrator.engine.review.inplace`); its ``origin`` is the repository's top level."""


def workspace_dir(row: WorkspaceRow) -> str:
    """The folder the row's changes are in: the workspace, or — a run in the person's own
    checkout, whose ``root`` is only the row's key — the repository's top level."""
    return row.origin if row.kind == CHECKOUT_KIND else row.root


def checkout_of(row: WorkspaceRow) -> Checkout:
    """The workspace as git sees it (refused when nothing recorded its base)."""
    if row.removed_ms is not None:
        raise ReviewError(f"the workspace {row.root} was removed (`ringleader workspaces --prune`)")
    if row.base is None:
        raise ReviewError(
            f"the workspace {row.root} has no recorded starting point (git was not available "
            "when it was made), so its changes cannot be diffed"
        )
    return Checkout(Path(workspace_dir(row)), row.base, Path(row.git_dir) if row.git_dir else None)


def task_prefix(row: WorkspaceRow) -> str:
    """The run-key prefix of the workspace's task (its retries and rotations continue it)."""
    return f"runtime:{row.runtime_id}:task:{row.task_id}"


def runs_of(row: WorkspaceRow, runs: Sequence[RunRow]) -> list[RunRow]:
    """The runs of the workspace's task (its retries and rotations), oldest first."""
    prefix = task_prefix(row)
    return [r for r in runs if r.run_key == prefix or r.run_key.startswith(prefix + ":")]


@attrs.frozen
class ResolvedRun:
    workspace: WorkspaceRow
    runs: tuple[RunRow, ...]
    """The task's runs in this workspace, oldest first (may be empty: a run that never
    started)."""

    @property
    def last(self) -> RunRow | None:
        return self.runs[-1] if self.runs else None

    @property
    def key(self) -> str:
        last = self.last
        return (
            last.run_key if last is not None else f"{self.workspace.task_id}/{self.workspace.label}"
        )


async def _origin_match(
    log: EventLog, key: str, rows: Sequence[WorkspaceRow]
) -> WorkspaceRow | None:
    """The workspace a run (e.g. one resumed from a workspace run) worked in, by its session's
    directory: a folder inside a workspace, or exactly the folder a run in the person's checkout
    started in (the newest such run's)."""
    session = await log.get_session(key)
    if session is None or not session.origin_cwd:
        return None
    cwd = Path(session.origin_cwd)
    for row in reversed(rows):
        if row.kind == CHECKOUT_KIND:
            if cwd == Path(row.path):  # a follow-up of the newest run started in that folder
                return row
            continue
        root = Path(row.root)
        if cwd == root or root in cwd.parents:
            return row
    return None


async def resolve_run(log: EventLog, ref: str) -> ResolvedRun:
    """The workspace and runs ``ref`` names (see the module docstring).

    Raises:
        ReviewError: nothing matches, or the run worked in no recorded workspace."""
    rows = await log.workspaces()
    if not rows:
        raise ReviewError(
            "no workspace is recorded yet: run a task (`ringleader run …`) in a git repository, "
            "or on several runtimes (`--runtime A --runtime B`), or a batch"
        )

    async def found(row: WorkspaceRow, extra: Sequence[RunRow] = ()) -> ResolvedRun:
        mine = await log.runs_under([task_prefix(row)])
        mine += [r for r in extra if r not in mine]
        return ResolvedRun(row, tuple(mine))

    if ref == "last":
        runs = await log.runs_under([task_prefix(row) for row in rows])
        chosen = rows[-1]
        if runs:
            newest = max(runs, key=lambda r: r.started_ms)
            chosen = next((row for row in reversed(rows) if runs_of(row, [newest])), chosen)
        siblings = [row for row in rows if row.group_id == chosen.group_id]
        if len(siblings) > 1:
            names = ", ".join(f"{chosen.group_id}/{row.label}" for row in siblings)
            raise ReviewError(
                f"the newest task ({chosen.group_id}) ran on {len(siblings)} runtimes: name one "
                f"({names}, or last/LABEL)"
            )
        return await found(chosen)
    keyed = await log.runs_under([ref]) if ref.startswith("runtime:") else []
    keyed = [r for r in keyed if r.run_key == ref]
    if keyed:
        for row in reversed(rows):
            if runs_of(row, keyed):
                return await found(row)
        row = await _origin_match(log, ref, rows)
        if row is not None:
            return await found(row, keyed)
        raise ReviewError(
            f"run {ref!r} did not work in a workspace ringleader made, and where it started was "
            "not recorded (it ran in a folder outside git, or inside a workspace of another run)"
        )
    by_task = [row for row in rows if row.task_id == ref]
    if by_task:
        return await found(by_task[-1])
    group, sep, label = ref.rpartition("/")
    if sep:
        if group == "last":
            group = rows[-1].group_id
        named = [r for r in rows if r.group_id == group and label in (r.label, r.runtime_id)]
        if named:
            return await found(named[-1])
    named = [r for r in rows if ref in (r.label, r.runtime_id)]
    if named:
        return await found(named[-1])
    raise ReviewError(
        f"no run or workspace matches {ref!r} (a run key from `ringleader replay --list`, a "
        "task from `ringleader workspaces` or TASK/LABEL, a runtime, or last)"
    )


async def resolve_group(log: EventLog, ref: str) -> list[ResolvedRun]:
    """The runs of one side-by-side task (``last``: the newest; or its id, or any of its
    runs), in the order they were started.

    Raises:
        ReviewError: nothing matches."""
    rows = await log.workspaces()
    if not rows:
        raise ReviewError(
            "no side-by-side task is recorded yet (`ringleader run --runtime A --runtime B …`)"
        )
    group: str | None = None
    if ref == "last":
        group = rows[-1].group_id
    elif any(r.group_id == ref for r in rows):
        group = ref
    else:
        group = (await resolve_run(log, ref)).workspace.group_id
    mine = [row for row in rows if row.group_id == group]
    runs = await log.runs_under([task_prefix(row) for row in mine])
    return [ResolvedRun(row, tuple(runs_of(row, runs))) for row in mine]
