"""examples/agui/follow.py: an AG-UI client starts `ringleader serve --model-server`, starts a
native run through POST /tasks and follows it on GET /agui; every event validates against the
ag-ui-protocol types (the example checks; so does this test), in protocol order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from ag_ui.core import Event
from pydantic import TypeAdapter

from orchestrator.engine import EventLog

from .kit import EXAMPLES, clean_env

SCRIPT = EXAMPLES / "agui" / "follow.py"
ANSWER = "Done: this answer comes from ringleader's built-in scripted model server."


async def test_a_run_followed_as_ag_ui_events(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("something to list\n")
    argv = [sys.executable, str(SCRIPT), "--json"]
    env = clean_env(tmp_path)
    result = await trio.to_thread.run_sync(
        lambda: subprocess.run(
            argv, cwd=work, env=env, capture_output=True, text=True, timeout=180, check=False
        )
    )
    assert result.returncode == 0, result.stderr
    events: list[dict[str, Any]] = [json.loads(line) for line in result.stdout.splitlines()]
    validator: TypeAdapter[Any] = TypeAdapter(Event)
    for event in events:
        validator.validate_python(event)
    types = [e["type"] for e in events]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert types.count("RUN_STARTED") == 1 and types.count("RUN_FINISHED") == 1
    assert len({e["threadId"] for e in events if "threadId" in e}) == 1
    assert types.count("TEXT_MESSAGE_START") == types.count("TEXT_MESSAGE_END") == 2
    # the tool call: start, args, end, then its result, under one id
    start = types.index("TOOL_CALL_START")
    assert types[start : start + 3] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    call = events[start]
    result_event = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert call["toolCallName"] == "list_files"
    assert result_event["toolCallId"] == call["toolCallId"]
    assert "notes.md" in result_event["content"]  # it ran where serve runs
    text = "".join(e["delta"] for e in events[start:] if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == ANSWER
    snapshots = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"]
    assert snapshots[-1]["outputTokens"] > 0 and snapshots[-1]["estimated"] is True

    run_key = events[0]["threadId"]
    async with EventLog.open(tmp_path / "state" / "events.db") as log:
        rows = await log.runs()
    assert [(row.run_key, row.status) for row in rows] == [(run_key, "success")]
