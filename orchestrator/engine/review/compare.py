"""The runs of one side-by-side task next to each other: which files each touched, and for each
file whether the runs that touched it agree (the same resulting content) or differ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from orchestrator.core.errors import ReviewError
from orchestrator.engine.review.diff import WorkspaceDiff, workspace_diff
from orchestrator.engine.review.records import ResolvedRun, checkout_of, workspace_dir

__all__ = ["ComparedRun", "Comparison", "compare_runs"]


@attrs.frozen
class ComparedRun:
    run: ResolvedRun
    diff: WorkspaceDiff | None
    digests: dict[str, str]
    """Each changed file's resulting content (a blob id, or ``deleted``)."""
    error: str | None = None

    @property
    def label(self) -> str:
        return self.run.workspace.label


@attrs.frozen
class Comparison:
    group: str
    runs: tuple[ComparedRun, ...]

    def files(self) -> list[str]:
        found: set[str] = set()
        for r in self.runs:
            if r.diff is not None:
                found |= r.diff.paths()
        return sorted(found)

    def touched_by(self, path: str) -> list[ComparedRun]:
        return [r for r in self.runs if r.diff is not None and path in r.diff.paths()]

    def agree(self, path: str) -> bool:
        """Every run that touched ``path`` left the same content (and more than one did)."""
        touched = self.touched_by(path)
        return len(touched) > 1 and len({r.digests.get(path) for r in touched}) == 1

    def to_json(self) -> dict[str, Any]:
        runs: list[dict[str, Any]] = []
        for r in self.runs:
            last = r.run.last
            runs.append(
                {
                    "label": r.label,
                    "runtime": r.run.workspace.runtime_id,
                    "runKey": last.run_key if last else None,
                    "status": last.status if last else "never started",
                    "workspace": workspace_dir(r.run.workspace),
                    "files": sorted(r.diff.paths()) if r.diff else [],
                    "added": r.diff.added if r.diff else 0,
                    "removed": r.diff.removed if r.diff else 0,
                    "error": r.error,
                }
            )
        files: list[dict[str, Any]] = []
        for path in self.files():
            touched = self.touched_by(path)
            per: dict[str, Any] = {}
            for r in touched:
                assert r.diff is not None
                f = next(x for x in r.diff.files if x.path == path)
                per[r.label] = {"status": f.status, "added": f.added, "removed": f.removed}
            files.append(
                {
                    "path": path,
                    "runs": per,
                    "untouchedBy": [r.label for r in self.runs if r not in touched],
                    "agree": self.agree(path),
                }
            )
        return {"task": self.group, "runs": runs, "files": files}


def _digests(run: ResolvedRun, diff: WorkspaceDiff) -> dict[str, str]:
    checkout = checkout_of(run.workspace)
    present = [f.path for f in diff.files if f.status != "deleted"]
    found = {f.path: "deleted" for f in diff.files if f.status == "deleted"}
    if present:
        out = checkout.run(
            "hash-object",
            "--no-filters",
            "--stdin-paths",
            input="\n".join(str(checkout.root / p) for p in present).encode() + b"\n",
            check=False,
        ).stdout.decode()
        for path, digest in zip(present, out.split(), strict=False):
            found[path] = digest
    return found


def compare_runs(group: str, runs: Sequence[ResolvedRun]) -> Comparison:
    """Diff each run's workspace and line them up (blocking: call it in a thread). A run whose
    workspace cannot be diffed (removed) is listed with the reason."""
    compared: list[ComparedRun] = []
    for run in runs:
        try:
            diff = workspace_diff(checkout_of(run.workspace))
            compared.append(ComparedRun(run, diff, _digests(run, diff)))
        except ReviewError as exc:
            compared.append(ComparedRun(run, None, {}, str(exc)))
    return Comparison(group, tuple(compared))
