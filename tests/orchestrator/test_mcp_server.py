"""ringleader as an MCP server (`ringleader mcp`): an agent starts, waits for and reads other runs.

The native runtime, run by `ringleader run` against the scripted model server, has `ringleader mcp`
as an MCP server in its ringleader.toml; the scripted model calls its tools: start a scripted run,
wait for it, read its events — all real processes on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from orchestrator.core import Done, ToolCall, ToolResult

from ..adapters.native.cli_run import run_native_cli


def ringleader_mcp_toml() -> str:
    return (
        "[runtimes.native.mcp_servers.ringleader]\n"
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["-m", "orchestrator.cli", "mcp"]\n'
        'env_vars = ["RINGLEADER_STATE_DIR"]\n'
        "call_timeout_s = 60\n"
    )


def turn(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": f"mcp__ringleader__{name}", "input": args}]}


def test_an_agent_starts_waits_for_and_reads_a_run_through_ringleader_mcp(tmp_path: Path) -> None:
    (tmp_path / "ringleader.toml").write_text(ringleader_mcp_toml(), encoding="utf-8")
    script = {
        "conversations": [
            {
                "name": "orchestrate",
                "turns": [
                    turn("start_run", {"runtime": "scripted", "prompt": "say hello"}),
                    turn("wait_run", {"run": "last", "timeout_s": 60}),
                    turn("read_events", {"run": "last"}),
                    turn("say", {"run": "last", "text": "too late"}),
                    turn("start_run", {"runtime": "nope", "prompt": "x"}),
                    {"text": "The scripted run said hello."},
                ],
            }
        ]
    }
    events = run_native_cli(tmp_path, script, "orchestrate a scripted run")
    calls = [e.name for e in events if isinstance(e, ToolCall)]
    assert calls == [
        "mcp__ringleader__start_run",
        "mcp__ringleader__wait_run",
        "mcp__ringleader__read_events",
        "mcp__ringleader__say",
        "mcp__ringleader__start_run",
    ]
    results = [e for e in events if isinstance(e, ToolResult)]
    started = json.loads(results[0].output)
    assert not results[0].is_error
    assert started["runtime"] == "scripted" and started["task"].startswith("mcp-")
    assert started["runKey"].startswith(f"runtime:scripted:task:{started['task']}:")
    waited = json.loads(results[1].output)
    assert waited["finished"] is True and waited["status"] == "success"
    assert waited["runKey"] == started["runKey"]
    read = json.loads(results[2].output)
    kinds = [e["kind"] for e in read["events"]]
    assert kinds[-1] == "done" and "text-delta" in kinds
    text = "".join(e["text"] for e in read["events"] if e["kind"] == "text-delta")
    assert text == "Hello from the scripted runtime."
    assert results[3].is_error and "not live" in results[3].output  # it had finished
    assert results[4].is_error and "unknown runtime 'nope'" in results[4].output
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
