"""A log written before text was made valid (a run outcome escaping a lone surrogate) still
opens and serves: its runs read with U+FFFD, ``/runs`` answers, ``replay --list`` lists."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import httpx2
import trio

from orchestrator.engine import EventLog, Feed, serve_feed
from orchestrator.engine.runner import TaskSpec


async def test_an_old_log_with_a_lone_surrogate_opens_and_serves(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    db = state / "events.db"
    async with EventLog.open(db) as log:
        await log.start_run("runtime:scripted:task:t", runtime_id="scripted", session_key="s")
        await log.finish_run("runtime:scripted:task:t", status="success", outcome={"title": "x"})
        await log.flush()
    with sqlite3.connect(db) as conn:  # what the earlier code stored: json.dumps's \ud800
        conn.execute("UPDATE runs SET outcome = ?", (json.dumps({"title": "\ud800 go"}),))
    async with (
        EventLog.open(db) as log,
        serve_feed(Feed(), log) as url,
        httpx2.AsyncClient(timeout=10, headers={"authorization": f"Bearer {url.token}"}) as http,
    ):
        [row] = await log.runs()
        assert row.outcome == {"title": "\ufffd go"}
        answer = await http.get(f"{url}/runs")
        assert answer.status_code == 200 and answer.json()[0]["outcome"]["title"] == "\ufffd go"
        # new text is valid before it is stored
        await log.start_run("runtime:scripted:task:u", runtime_id="scripted", session_key="u")
        title = TaskSpec(task_id="u", title="\udc80 bad").title
        await log.finish_run("runtime:scripted:task:u", status="success", outcome={"title": title})
        await log.finish_run("runtime:scripted:task:t", status="success", outcome={"t": "\ud800"})
        await log.flush()
        assert [r.outcome for r in await log.runs()][1] == {"title": "\ufffd bad"}
    listed = await trio.run_process(
        [sys.executable, "-m", "orchestrator.cli", "replay", "--list", "--json"],
        env={**os.environ, "RINGLEADER_STATE_DIR": str(state)},
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert "\ufffd go" in listed.stdout.decode()
