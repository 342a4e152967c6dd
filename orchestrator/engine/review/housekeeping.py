"""Kept workspaces: each with its run, size, age and whether it was applied; pruning the applied
and the old ones (the worktree, its ``ringleader/…`` branch and its runs' checkpoint refs, or the
copy and its snapshot), never one whose run is live. A run in the person's own checkout has no
workspace to remove, only its recorded start (a private ref, :mod:`.inplace`): pruning forgets
the starts whose checkout is gone or that are older than asked (:func:`stale_starts`,
:func:`forget_start`), leaving the person's files, index and branches as they are."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from orchestrator.core.errors import ReviewError
from orchestrator.engine.eventlog import RunRow, WorkspaceRow
from orchestrator.engine.review.git import git
from orchestrator.engine.review.inplace import start_ref
from orchestrator.engine.review.records import CHECKOUT_KIND, runs_of
from orchestrator.engine.reviewloop.checkpoints import checkpoint_ref_prefix

__all__ = ["KeptWorkspace", "forget_start", "kept_workspaces", "remove_workspace", "stale_starts"]


def _size(root: Path) -> int:
    total = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            try:
                total += Path(folder, name).lstat().st_size
            except OSError:
                continue
    return total


@attrs.frozen
class KeptWorkspace:
    row: WorkspaceRow
    runs: tuple[RunRow, ...]
    size: int
    """Bytes of its files (``.git`` not counted); 0 when it is gone."""
    exists: bool

    @property
    def live(self) -> bool:
        return any(r.status == "running" for r in self.runs)

    @property
    def status(self) -> str:
        return self.runs[-1].status if self.runs else "never started"

    def age_s(self, now_ms: int) -> float:
        return max(0.0, (now_ms - self.row.created_ms) / 1000)

    def to_json(self, now_ms: int) -> dict[str, Any]:
        row = self.row
        return {
            "workspace": row.root,
            "kind": row.kind,
            "task": row.task_id,
            "group": row.group_id,
            "label": row.label,
            "runtime": row.runtime_id,
            "run": self.runs[-1].run_key if self.runs else None,
            "status": self.status,
            "live": self.live,
            "sizeBytes": self.size,
            "ageSeconds": round(self.age_s(now_ms), 1),
            "applied": row.applied,
            "origin": row.origin,
            "exists": self.exists,
        }


def kept_workspaces(rows: Sequence[WorkspaceRow], runs: Sequence[RunRow]) -> list[KeptWorkspace]:
    """The recorded workspaces that were not removed (blocking: sizes are walked)."""
    kept: list[KeptWorkspace] = []
    for row in rows:
        if row.removed_ms is not None or row.kind == CHECKOUT_KIND:
            continue  # removed, or the person's own checkout (never ringleader's to remove)
        root = Path(row.root)
        exists = root.is_dir()
        kept.append(
            KeptWorkspace(row, tuple(runs_of(row, runs)), _size(root) if exists else 0, exists)
        )
    return kept


def _drop_checkpoints(repo: Path, run_keys: list[str]) -> None:
    """Delete the runs' checkpoint refs (``refs/ringleader/checkpoints/<run>/…``): the
    workspace they restore is gone, and the refs would keep its objects alive."""
    lines: list[str] = []
    for key in run_keys:
        listed = git(
            ["for-each-ref", "--format=%(refname)", checkpoint_ref_prefix(key) + "/"],
            cwd=repo,
            check=False,
        )
        lines += [f"delete {ref}" for ref in listed.stdout.decode().split() if ref]
    if lines:
        git(
            ["update-ref", "--stdin"],
            cwd=repo,
            check=False,
            input=("\n".join(lines) + "\n").encode(),
        )


def remove_workspace(ws: KeptWorkspace) -> None:
    """Remove a workspace: a worktree with ``git worktree remove --force`` (and its
    ``ringleader/…`` branch once applied), a copy and its snapshot repository with ``rm -r``.
    Blocking."""
    row = ws.row
    if row.kind == CHECKOUT_KIND:
        raise ReviewError(f"{row.origin} is your own checkout: ringleader never removes it")
    root = Path(row.root)
    if row.kind == "git worktree":
        origin = Path(row.origin)
        where = origin if origin.is_dir() else root
        if root.is_dir():
            git(["worktree", "remove", "--force", str(root)], cwd=where, check=False)
        shutil.rmtree(root, ignore_errors=True)
        if origin.is_dir():
            git(["worktree", "prune"], cwd=origin, check=False)
            branch = (row.applied or {}).get("branch")
            if isinstance(branch, str) and branch.startswith("ringleader/"):
                git(["branch", "-D", "--quiet", branch], cwd=origin, check=False)
            _drop_checkpoints(origin, [r.run_key for r in ws.runs])
    else:
        shutil.rmtree(root, ignore_errors=True)
        if row.git_dir:
            shutil.rmtree(row.git_dir, ignore_errors=True)


def stale_starts(
    rows: Sequence[WorkspaceRow], runs: Sequence[RunRow], now_ms: int, older_s: float | None
) -> list[KeptWorkspace]:
    """The recorded starts of runs in the person's own checkout that pruning forgets: not live,
    and their checkout gone or (with ``older_s``) older than that. Blocking."""
    stale: list[KeptWorkspace] = []
    for row in rows:
        if row.removed_ms is not None or row.kind != CHECKOUT_KIND:
            continue
        start = KeptWorkspace(row, tuple(runs_of(row, runs)), 0, Path(row.origin).is_dir())
        old = older_s is not None and start.age_s(now_ms) > older_s
        if not start.live and (old or not start.exists):
            stale.append(start)
    return stale


def forget_start(start: KeptWorkspace) -> None:
    """Delete the private ref that kept a run's starting point in the person's checkout (its
    diff can no longer be shown; nothing else there changes). Blocking."""
    origin = Path(start.row.origin)
    if origin.is_dir():
        git(["update-ref", "-d", start_ref(start.row.task_id)], cwd=origin, check=False)
