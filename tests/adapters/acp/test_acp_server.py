"""``ringleader acp``: a runtime served as an ACP agent, driven by our own ACP client adapter.

The round trip crosses both directions of the protocol for real: the ACP adapter starts
``ringleader acp --runtime …`` as its agent process, and the server runs the runtime through the
runner (recording the run in its event log) and maps the events back to ACP updates.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
import trio

from adapters.acp import AcpAdapter, AcpConfig
from contract import check_stream, collect_run
from orchestrator.acp.server import event_to_update
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.approvals import ApprovalBook
from orchestrator.core.events import (
    Cost,
    Done,
    EventFactory,
    RuntimeEvent,
    TextDelta,
    ToolCall,
    ToolResult,
)
from orchestrator.model_server import serve_model_server


def acp_adapter(
    runtime: str, state: Path, permission: Literal["allow", "deny"] = "deny", **env: str
) -> AcpAdapter:
    command = [sys.executable, "-m", "orchestrator.cli", "acp", "--runtime", runtime]
    root = str(Path(__file__).resolve().parents[3])
    return AcpAdapter(
        AcpConfig(
            command=command,
            env={"RINGLEADER_STATE_DIR": str(state), "PYTHONPATH": root, **env},
            handshake_timeout=30,
            permission=permission,
        )
    )


async def run_once(adapter: AcpAdapter, cwd: Path, message: str) -> list[RuntimeEvent]:
    run = await adapter.start(
        TaskHandle(), StartOpts(agent_id="ed", session_key="ed:1", message=message, cwd=str(cwd))
    )
    return await collect_run(adapter.events(run), deadline_s=60)


async def test_scripted_runtime_round_trip(tmp_path: Path) -> None:
    async with acp_adapter("scripted", tmp_path / "state") as adapter:
        events = await run_once(adapter, tmp_path / "ws", "hi")
    check_stream(events)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Hello from the scripted runtime."
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    cost = [e for e in events if isinstance(e, Cost)]
    assert cost and (cost[-1].usage.input_tokens, cost[-1].usage.output_tokens) == (12, 6)
    assert (tmp_path / "state" / "events.db").exists()  # the server recorded the run


NATIVE_SCRIPT = {
    "model": "claude-sonnet-4-5",
    "conversations": [
        {
            "name": "acp",
            "marker": "[[acp]]",
            "turns": [
                {"tool_calls": [{"name": "list_files", "input": {"path": "."}}]},
                {"text": "I see the files."},
            ],
        }
    ],
}


async def test_native_runtime_round_trip(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hi")
    async with serve_model_server(NATIVE_SCRIPT) as server:
        env = {
            "RINGLEADER_NATIVE_PROVIDER": "anthropic",
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-ant-acp-test-0000",
        }
        async with acp_adapter("native", tmp_path / "state", **env) as adapter:
            events = await run_once(adapter, ws, "[[acp]] list the files")
    check_stream(events)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success", events
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["list_files"]
    assert results and results[0].tool_call_id == calls[0].tool_call_id
    assert "I see the files." in done.summary


BASH_SCRIPT = {
    "model": "claude-sonnet-4-5",
    "conversations": [
        {
            "name": "bash",
            "marker": "[[bash]]",
            "turns": [
                {"tool_calls": [{"name": "bash", "input": {"command": "echo ran > out.txt"}}]},
                {"text": "Finished."},
            ],
        }
    ],
}


@pytest.mark.parametrize("permission", ["allow", "deny"])
async def test_a_call_that_needs_approval_is_decided_by_the_acp_client(
    permission: Literal["allow", "deny"], tmp_path: Path
) -> None:
    # ringleader acp forwards the native runtime's bash approval to the client as
    # session/request_permission; our ACP client adapter answers by its policy
    ws = tmp_path / "ws"
    ws.mkdir()
    async with serve_model_server(BASH_SCRIPT) as server:
        env = {
            "RINGLEADER_NATIVE_PROVIDER": "anthropic",
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-ant-acp-test-0000",
        }
        async with acp_adapter("native", tmp_path / "state", permission, **env) as adapter:
            events = await run_once(adapter, ws, "[[bash]] write the file")
            asked = [c for c in adapter.calls if c.method == "permission"]
    check_stream(events)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success", events
    assert len(asked) == 1  # the client was asked once
    [result] = [e for e in events if isinstance(e, ToolResult)]
    if permission == "allow":
        assert (ws / "out.txt").read_text() == "ran\n"
        assert not result.is_error
    else:
        assert not (ws / "out.txt").exists()
        assert result.is_error
        assert "rejected this tool call in their editor" in str(result.output)
    assert await ApprovalBook.in_state_dir(tmp_path / "state").pending() == []


def test_event_mapping_is_what_the_client_normalizes_back() -> None:
    make = EventFactory(run_id="r")
    events = [
        make.text_delta("a"),
        make.text_delta("b", "reasoning"),
        make.tool_call("c1", "Bash", {"command": "ls"}),
        make.tool_result("c1", "x", is_error=True),
        make.status("running"),
    ]
    updates = [event_to_update(e, 1000) for e in events]
    assert [u["sessionUpdate"] if u else None for u in updates] == [
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        None,
    ]
    assert json.loads(json.dumps(updates[2]))["rawInput"] == {"command": "ls"}
    assert updates[3] is not None and updates[3]["status"] == "failed"


@pytest.mark.parametrize("runtime", ["nope"])
async def test_unknown_runtime_fails_the_handshake(runtime: str, tmp_path: Path) -> None:
    async with acp_adapter(runtime, tmp_path / "state") as adapter:
        events = await run_once(adapter, tmp_path / "ws", "hi")
    check_stream(events)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "error"


class RawAcp:
    """``ringleader acp`` driven line by line, as an outside ACP client drives it."""

    def __init__(self, proc: trio.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.stdin, self.stdout = proc, proc.stdin, proc.stdout
        self.buffer = b""
        self.next_id = 0

    async def line(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            chunk = await self.stdout.receive_some(65536)
            assert chunk, "the agent closed its stdout"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    async def call(self, method: str, params: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
        """The answer, and the notifications the agent sent before it."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        await self.stdin.send_all(json.dumps(message).encode() + b"\n")
        before: list[dict[str, Any]] = []
        with trio.fail_after(60):
            while True:
                got = await self.line()
                if got.get("id") == self.next_id and "method" not in got:
                    assert "error" not in got, got
                    return got["result"], before
                before.append(got)


@asynccontextmanager
async def raw_acp(state: Path) -> AsyncIterator[RawAcp]:
    root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "RINGLEADER_STATE_DIR": str(state), "PYTHONPATH": root}
    argv = [sys.executable, "-m", "orchestrator.cli", "acp", "--runtime", "scripted"]
    proc = await trio.lowlevel.open_process(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        client = RawAcp(proc)
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        yield client
    finally:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await client.stdin.aclose()
        with trio.fail_after(30):
            await proc.wait()


async def test_session_load_replays_the_conversation_before_it_answers(tmp_path: Path) -> None:
    """A new agent process loads a session served earlier: every prompt comes back as a
    user_message_chunk, then that run's own updates, all before the load's answer."""
    cwd = tmp_path / "ws"
    cwd.mkdir()
    async with raw_acp(tmp_path / "state") as first:
        new, _ = await first.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        session = new["sessionId"]
        prompt = [{"type": "text", "text": "say hello"}]
        answer, live = await first.call("session/prompt", {"sessionId": session, "prompt": prompt})
        assert answer["stopReason"] == "end_turn"
    async with raw_acp(tmp_path / "state") as second:
        loaded, replay = await second.call(
            "session/load", {"sessionId": session, "cwd": str(cwd), "mcpServers": []}
        )
    assert loaded is not None and loaded["modes"]["currentModeId"] == "default"
    updates = [m["params"]["update"] for m in replay if m.get("method") == "session/update"]
    assert updates[0] == {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": "say hello"},
    }
    said = "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert said == "Hello from the scripted runtime."
    live_kinds = [m["params"]["update"]["sessionUpdate"] for m in live if "params" in m]
    # the run's own updates come back; the session's title (session_info_update) is not a turn
    assert [u["sessionUpdate"] for u in updates[1:]] == [
        kind for kind in live_kinds if kind != "session_info_update"
    ]


async def test_session_modes_are_offered_and_switched(tmp_path: Path) -> None:
    """``default`` and ``plan`` come with a new session; ``session/set_mode`` switches (and says
    so in a ``current_mode_update``); an unknown mode is refused with -32602."""
    cwd = tmp_path / "ws"
    cwd.mkdir()
    async with raw_acp(tmp_path / "state") as agent:
        new, _ = await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        modes = new["modes"]
        assert modes["currentModeId"] == "default"
        assert [m["id"] for m in modes["availableModes"]] == ["default", "plan"]
        session = new["sessionId"]
        answer, told = await agent.call(
            "session/set_mode", {"sessionId": session, "modeId": "plan"}
        )
        assert answer == {}
        assert told[-1]["params"]["update"] == {
            "sessionUpdate": "current_mode_update",
            "currentModeId": "plan",
        }
        agent.next_id += 1
        bad = {"sessionId": session, "modeId": "yolo"}
        message = {
            "jsonrpc": "2.0",
            "id": agent.next_id,
            "method": "session/set_mode",
            "params": bad,
        }
        await agent.stdin.send_all(json.dumps(message).encode() + b"\n")
        with trio.fail_after(30):
            error = await agent.line()
        assert error["error"]["code"] == -32602 and "yolo" in error["error"]["message"]
