"""Issue 40: ``ringleader recover`` of an OpenClaw run continues its session with the interrupted
conversation, as the other runtimes do. The orchestrator (``ringleader run --runtime openclaw``,
a real OpenClaw gateway against the scripted model server) is SIGKILLed while the model streams;
``ringleader recover`` (another process, a new gateway) resumes the recorded session. The
model server must see the interrupted conversation again (its prompt, which carries the
conversation's marker) — before the fix the new gateway started on a fresh temporary state
directory and sent only "Continue where you left off.".

The new gateway also continues the interrupted turn by itself (OpenClaw's restart recovery, about
half a second after it is ready). ``recover``'s own resume raced it and lost intermittently
(refused with ``SESSION_WORK_START_CHANGED``, or a second continuation the script has no turn
for: ``recover`` exited 1); the resume now waits for that continuation and takes it as the
resumed turn, so the model is asked exactly once more. The killed run's gateway is gone before
``recover`` starts (nothing outlives the run), so it cannot hold ``<state>/openclaw``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio

from orchestrator.core.events import Done, ToolCall, ToolResult, event_from_json
from orchestrator.core.lifetime import marked_pids
from orchestrator.engine.eventlog import EventLog
from orchestrator.model_server import serve_model_server

from .kit import cli_env, installed, served_config

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-openclaw-recover-0000"
MODEL = "fake-model"
PROMPT = "[[e2e:crash]] write a long story"
SCRIPT = {
    "model": MODEL,
    "conversations": [
        {
            "name": "crash",
            "marker": "[[e2e:crash]]",
            "turns": [
                {"text": "once upon a time " * 400, "chunk_chars": 6, "chunk_delay_s": 0.2},
                {"tool_calls": [{"name": "exec", "input": {"command": "echo tool-after-restart"}}]},
                {"text": "RECOVERED the story"},
            ],
        }
    ],
}


async def session_recorded(state: Path) -> bool:
    db = state / "events.db"
    if not db.exists():
        return False
    async with EventLog.open(db) as log:
        for row in await log.runs():
            if await log.get_session(row.run_key) is not None:
                return True
    return False


async def test_recover_resumes_an_openclaw_session_with_its_conversation(tmp_path: Path) -> None:
    installed("openclaw")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = tmp_path / "state"
    async with serve_model_server(SCRIPT) as server:
        config = served_config(
            tmp_path, "openclaw", server.base_url, key_env="E2E_OPENCLAW_KEY", model=MODEL
        )
        env = cli_env(state, XDG_CONFIG_HOME=str(tmp_path / "xdg"), E2E_OPENCLAW_KEY=KEY)
        base = [sys.executable, "-m", "orchestrator.cli"]
        argv = [*base, "run", "--config", str(config), "--runtime", "openclaw", "--json", PROMPT]
        proc = await trio.lowlevel.open_process(argv, cwd=workspace, env=env)
        try:
            with trio.fail_after(300):  # a cold gateway on a loaded machine
                while True:  # streaming, and its session recorded by the other process
                    streaming = any(r.outcome == "streaming" for r in server.requests_for("crash"))
                    if streaming and await session_recorded(state):
                        break
                    await trio.sleep(0.3)
            proc.kill()  # SIGKILL mid-stream: nothing of the orchestrator runs any more
            await proc.wait()
            marks = [json.loads(p.read_text())["mark"] for p in (state / "procs").glob("*.json")]
            assert marks  # its gateway was recorded …
            with trio.fail_after(30):  # … and dies with it, before anything reaps it
                while any(marked_pids(mark) for mark in marks):  # noqa: ASYNC110 - /proc
                    await trio.sleep(0.1)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        recover = [*base, "recover", "--config", str(config), "--json"]
        with trio.fail_after(400):
            done = await trio.run_process(
                recover, cwd=workspace, env=env, capture_stdout=True, capture_stderr=True,
                check=False,
            )  # fmt: skip
        err = done.stderr.decode()
        asked = server.requests_for("crash")
    said = done.stdout.decode()
    assert done.returncode == 0, (err[-3000:], said[-3000:], [(r.turn, r.outcome) for r in asked])
    assert "recovering" in err
    # one continuation, with the interrupted conversation (its marker): it took turns 2 and 3
    assert [r.turn for r in asked if not r.side] == [0, 1, 2], [(r.turn, r.outcome) for r in asked]
    lines = done.stdout.decode().splitlines()
    events = [event_from_json(line) for line in lines if line.startswith("{")]
    assert isinstance(events[-1], Done) and events[-1].reason == "success", err[-3000:]
    texts = "".join(getattr(e, "text", "") for e in events)
    assert "RECOVERED" in texts
    # the tool the continuation ran is in the resumed run's events, with its result
    [call] = [e for e in events if isinstance(e, ToolCall)]
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert (call.name, call.input) == ("exec", {"command": "echo tool-after-restart"})
    assert result.tool_call_id == call.tool_call_id and "tool-after-restart" in result.output
