"""ringleader as an MCP server (`ringleader mcp`): an agent starts, waits for and reads other runs.

The native runtime, run by `ringleader run` against the scripted model server, has `ringleader mcp`
as an MCP server in its ringleader.toml; the scripted model calls its tools: start a scripted run,
wait for it, read its events — all real processes on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import trio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

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


async def test_serve_offers_the_tools_over_streamable_http_with_its_token(tmp_path: Path) -> None:
    """`ringleader serve` at /mcp: an MCP client holding the board's token starts a run, waits
    for it and reads it; without the token it is refused."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"RINGLEADER_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path)}
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "orchestrator.cli", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        first = b""
        with trio.fail_after(60):
            while b"\n" not in first:
                first += await proc.stdout.receive_some(4096)
        events_url = first.split(b"\n", 1)[0].decode()
        base, token = events_url.split("/events?token=")
        async with httpx2.AsyncClient(timeout=30) as anonymous:
            refused = await anonymous.post(f"{base}/mcp", json={})
            assert refused.status_code == 401
        auth = {"authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=auth, timeout=60) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = sorted(t.name for t in (await session.list_tools()).tools)
            assert names == [
                "abort_run",
                "approve",
                "list_runs",
                "read_diff",
                "read_events",
                "say",
                "start_run",
                "wait_run",
            ]
            started = await session.call_tool("start_run", {"runtime": "scripted", "prompt": "hi"})
            task = json.loads(started.content[0].text)["task"]
            waited = await session.call_tool("wait_run", {"run": task, "timeout_s": 60})
            assert json.loads(waited.content[0].text)["status"] == "success"
            unknown = await session.call_tool("read_events", {"run": "no-such-run"})
            assert unknown.is_error
    finally:
        proc.send_signal(signal.SIGINT)
        with trio.fail_after(30):
            await proc.wait()
