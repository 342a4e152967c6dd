"""Issue 40: ``recover`` must not run again an approved tool call that was running when the
orchestrator was killed. ``ringleader run --runtime native --approvals wait`` (the real CLI,
native against the scripted model server) asks before ``bash``; the call is approved from the
durable book (as ``ringleader approve`` does), starts — it appends a line to a file, then
sleeps — and the orchestrator is SIGKILLed. ``ringleader recover`` resumes the session: the
model is told the call was interrupted and decides what to do; the command is not run again
(the file keeps one line). Before the fix the book's remembered approval ran it a second time."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import trio

from orchestrator.core.approvals import ApprovalBook, approve
from orchestrator.core.events import Done, ToolResult, event_from_json
from orchestrator.model_server import serve_model_server

KEY = "sk-test-rerun-0000000000"
COMMAND = "echo ran >> runs.txt; sleep 20"
SCRIPT = {
    "model": "claude-haiku-4-5",
    "conversations": [
        {
            "name": "rerun",
            "marker": "[[t:rerun]]",
            "turns": [
                {"tool_calls": [{"name": "bash", "input": {"command": COMMAND}}]},
                {"text": "UNDERSTOOD: it was interrupted"},
            ],
        }
    ],
}


async def test_recover_reports_a_started_approved_call_as_interrupted(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = tmp_path / "state"
    runs = workspace / "runs.txt"
    async with serve_model_server(SCRIPT) as server:
        config = tmp_path / "ringleader.toml"
        config.write_text(
            f'[runtimes.native]\nbase_url = "{server.url}"\napi_key_env = "RERUN_TEST_KEY"\n'
            'provider = "anthropic"\nmodel = "claude-haiku-4-5"\n'
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")} | {
            "RINGLEADER_STATE_DIR": str(state),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "RERUN_TEST_KEY": KEY,
        }
        base = [sys.executable, "-m", "orchestrator.cli"]
        argv = [*base, "run", "--config", str(config), "--runtime", "native"]
        argv += ["--approvals", "wait", "--json", "[[t:rerun]] run the command"]
        proc = await trio.lowlevel.open_process(argv, cwd=workspace, env=env)
        book = ApprovalBook.in_state_dir(state)
        try:
            with trio.fail_after(90):
                while True:  # the call waits in the book (another process's)
                    if (state / "approvals.db").exists() and await book.pending():
                        break
                    await trio.sleep(0.1)
                [entry] = await book.pending()
                await book.decide(entry.id, approve())
                while True:  # approved: it runs
                    if runs.exists() and runs.read_text().count("ran") == 1:
                        break
                    await trio.sleep(0.1)
            proc.kill()  # SIGKILL while the approved command runs
            await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        recover = [*base, "recover", "--config", str(config), "--json"]
        with trio.fail_after(120):
            done = await trio.run_process(
                recover, cwd=workspace, env=env, capture_stdout=True, capture_stderr=True,
                check=False,
            )  # fmt: skip
        asked = server.requests_for("rerun")
    err = done.stderr.decode()
    assert done.returncode == 0, err[-3000:]
    assert runs.read_text().count("ran") == 1  # never run again
    events = [
        event_from_json(line) for line in done.stdout.decode().splitlines() if line[:1] == "{"
    ]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results and results[0].is_error and "interrupted" in results[0].output, results
    assert isinstance(events[-1], Done) and events[-1].reason == "success"
    # the model was told, and decided (its answer is the conversation's second turn)
    told = json.dumps(asked[-1].body)
    assert "was interrupted" in told and "not run again" in told
