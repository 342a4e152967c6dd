"""examples/mcp/orchestrate.py: an MCP client (the official SDK) starts `ringleader mcp`, lists
its tools, starts a scripted run, waits for it and reads its events; the run is recorded in the
client's own state directory (the server shares its environment)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import trio

from orchestrator.engine import EventLog

from .kit import EXAMPLES, clean_env

SCRIPT = EXAMPLES / "mcp" / "orchestrate.py"


def orchestrate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=tmp_path, env=clean_env(tmp_path), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


async def test_a_run_started_waited_for_and_read_over_mcp(tmp_path: Path) -> None:
    result = await trio.to_thread.run_sync(lambda: orchestrate(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    assert lines["tools"] == (
        "abort_run, approve, list_runs, read_diff, read_events, say, start_run, wait_run"
    )
    assert lines["status"] == "success"
    assert lines["events"] == "status text-delta cost done"
    assert lines["answer"] == "Hello from the scripted runtime."
    async with EventLog.open(tmp_path / "state" / "events.db") as log:
        rows = await log.runs()
    assert [(row.run_key, row.status) for row in rows] == [(lines["started"], "success")]
