"""What the review tests share: git with a fixed identity, and side-by-side runs recorded as
``run_jobs`` records them (real workspaces from ``create_workspace``, a real event log)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import trio

from orchestrator.engine import create_workspace
from orchestrator.engine.eventlog import EventLog, WorkspaceRow

GIT_ID = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(*args: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ID
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def make_runs(
    origin: Path,
    state: Path,
    labels: tuple[str, ...],
    *,
    group: str = "task1",
    status: str = "success",
) -> dict[str, Path]:
    """A workspace per label (recorded as `run_jobs` records it) and a finished run in each."""

    async def go() -> dict[str, Path]:
        made: dict[str, Path] = {}
        async with EventLog.open(state / "events.db") as log:
            for label in labels:
                ws = await create_workspace(origin, label, state_dir=state)
                await log.record_workspace(
                    WorkspaceRow(
                        root=str(ws.root),
                        task_id=f"t-{label}",
                        runtime_id=label,
                        label=label,
                        group_id=group,
                        kind=ws.kind,
                        origin=str(ws.origin),
                        path=str(ws.path),
                        base=ws.base,
                        git_dir=None if ws.git_dir is None else str(ws.git_dir),
                        created_ms=1_000,
                    )
                )
                key = f"runtime:{label}:task:t-{label}:run-0001"
                await log.start_run(key, runtime_id=label, session_key=key)
                await log.finish_run(
                    key,
                    status=status,
                    outcome={
                        "reason": status,
                        "summary": f"{label}: added the greeting\nmore detail",
                        "title": "add a greeting",
                        "costUsd": 0.0123,
                        "usage": {"inputTokens": 10, "outputTokens": 5},
                    },
                )
                made[label] = ws.root
        return made

    return trio.run(go)
