"""ACP conformance of ``ringleader acp``, as an outside client sees it, over stdio and over
``--listen`` (WebSocket, and Streamable HTTP), for the native runtime (against the scripted model server) and the
scripted runtime: initialize, prompt, a tool call with permission, cancel, load with replay,
list, resume, fork, and robustness (garbage, unknown methods, bad parameters)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.model_server import serve_model_server

from .client import AcpClient, HttpWire, Transport, agents

TRANSPORTS: list[Transport] = ["stdio", "ws", "http"]

SCRIPT = {
    "model": "claude-sonnet-4-5",
    "conversations": [
        {
            "name": "conf",
            "marker": "[[conf]]",
            "turns": [
                {"tool_calls": [{"name": "bash", "input": {"command": "echo ran > out.txt"}}]},
                {"text": "Wrote it."},
                {"text": "Second answer."},
                {"text": "Third answer."},
            ],
        },
        {
            "name": "cancel",
            "marker": "[[cancel]]",
            "turns": [
                {"tool_calls": [{"name": "bash", "input": {"command": "echo no > no.txt"}}]},
                {"text": "never"},
            ],
        },
        {
            "name": "fork",
            "marker": "[[fork]]",
            "turns": [{"text": "Noted."}, {"text": "Fork answer."}, {"text": "Origin answer."}],
        },
    ],
}


def native_env(url: str) -> dict[str, str]:
    return {
        "RINGLEADER_NATIVE_PROVIDER": "anthropic",
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-conformance-0000",
    }


async def allow(request: dict[str, Any]) -> dict[str, Any]:
    assert request["method"] == "session/request_permission"
    kinds = {o["kind"] for o in request["params"]["options"]}
    assert {"allow_once", "reject_once"} <= kinds
    return {"outcome": {"outcome": "selected", "optionId": "allow"}}


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


async def robustness(client: AcpClient, cwd: Path) -> None:
    """Every kind of bad input gets its JSON-RPC error, and the connection goes on."""
    garbage = await client.raw("this is not json {")
    assert garbage.error is not None and garbage.error["code"] == -32700
    deep = await client.raw("[" * 100_000 + "]" * 100_000)  # valid JSON, nested too deeply
    assert deep.error is not None and deep.error["code"] == -32700
    if isinstance(client.wire, HttpWire):  # Streamable HTTP answers a batch 501 (the RFD)
        await client.wire.send_text("[1, 2]")
        assert client.wire.statuses[-1] == 501
    else:
        batch = await client.raw("[1, 2]")
        assert batch.error is not None and batch.error["code"] == -32600
    unknown = await client.request("session/teleport", {})
    assert unknown.error is not None and unknown.error["code"] == -32601
    assert "session/teleport" in unknown.error["message"]
    no_cwd = await client.request("session/new", {"mcpServers": []})
    assert no_cwd.error is not None and no_cwd.error["code"] == -32602
    relative = await client.request("session/new", {"cwd": "ws", "mcpServers": []})
    assert relative.error is not None and relative.error["code"] == -32602
    assert "absolute" in relative.error["message"]
    not_object = await client.request("session/new", ["/tmp"])
    assert not_object.error is not None and not_object.error["code"] == -32602
    nobody = await client.request("session/prompt", {"sessionId": "acp-0", "prompt": text("x")})
    assert nobody.error is not None and nobody.error["code"] == -32602
    new = await client.ok("session/new", {"cwd": str(cwd), "mcpServers": []})
    sid = new.result["sessionId"]
    bad_prompt = await client.request("session/prompt", {"sessionId": sid, "prompt": "hi"})
    assert bad_prompt.error is not None and bad_prompt.error["code"] == -32602
    audio = [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]
    refused = await client.request("session/prompt", {"sessionId": sid, "prompt": audio})
    assert refused.error is not None and refused.error["code"] == -32602
    cursor = await client.request("session/list", {"cursor": "not-a-cursor"})
    assert cursor.error is not None and cursor.error["code"] == -32602
    load = await client.request("session/load", {"sessionId": "acp-0", "cwd": str(cwd)})
    assert load.error is not None and load.error["code"] == -32602
    await client.notify("session/cancel", {"sessionId": "acp-nobody"})  # nothing to answer
    again = await client.initialize()  # still talking
    assert again["protocolVersion"] == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_native_conformance(transport: Transport, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    async with serve_model_server(SCRIPT) as model:
        env = native_env(model.url)
        async with agents(transport, "native", tmp_path / "state", **env) as fresh:
            async with fresh() as client:
                caps = (await client.initialize())["agentCapabilities"]
                assert caps["loadSession"] is True
                assert caps["sessionCapabilities"] == {
                    "list": {},
                    "resume": {},
                    "close": {},
                    "fork": {},
                }
                assert caps["promptCapabilities"]["image"] is True
                assert caps["mcpCapabilities"] == {"http": True, "sse": False}

                # a prompt with a tool call the client allows
                sid = (await client.ok("session/new", {"cwd": str(ws), "mcpServers": []})).result[
                    "sessionId"
                ]
                first = await client.ok(
                    "session/prompt",
                    {"sessionId": sid, "prompt": text("[[conf]] write the file")},
                    answer=allow,
                )
                assert first.result["stopReason"] == "end_turn"
                assert len(first.asked) == 1
                assert (ws / "out.txt").read_text() == "ran\n"
                kinds = first.kinds()
                assert kinds.index("tool_call") < kinds.index("agent_message_chunk")
                done = [
                    u
                    for u in first.updates
                    if u["sessionUpdate"] == "tool_call_update" and u["status"] == "completed"
                ]
                assert len(done) == 1
                assert first.text() == "Wrote it."
                [info] = [u for u in first.updates if u["sessionUpdate"] == "session_info_update"]
                assert info["title"] == "[[conf]] write the file"
                assert info["updatedAt"].endswith("Z")
                usage = [u for u in first.updates if u["sessionUpdate"] == "usage_update"]
                assert usage and usage[-1]["size"] == 200_000
                first_cost = usage[-1]["cost"]["amount"]
                assert usage[-1]["cost"]["currency"] == "USD" and first_cost > 0

                # the next prompt continues the runtime's session (its history is sent)
                second = await client.ok(
                    "session/prompt", {"sessionId": sid, "prompt": text("and again")}
                )
                assert second.text() == "Second answer."
                assert "write the file" in json.dumps(model.requests_for("conf")[-1].body)
                cost = [u for u in second.updates if u["sessionUpdate"] == "usage_update"]
                assert cost[-1]["cost"]["amount"] > first_cost  # the session's, cumulative

                # cancel: the permission request is left unanswered, the prompt is cancelled
                cid = (await client.ok("session/new", {"cwd": str(ws), "mcpServers": []})).result[
                    "sessionId"
                ]

                async def cancel(request: dict[str, Any]) -> dict[str, Any]:
                    await client.notify("session/cancel", {"sessionId": cid})
                    return {"outcome": {"outcome": "cancelled"}}

                cancelled = await client.ok(
                    "session/prompt",
                    {"sessionId": cid, "prompt": text("[[cancel]] try it")},
                    answer=cancel,
                )
                assert cancelled.result["stopReason"] == "cancelled"
                assert not (ws / "no.txt").exists()

                # fork: the fork continues a copy, the origin goes on unchanged
                fid_origin = (
                    await client.ok("session/new", {"cwd": str(ws), "mcpServers": []})
                ).result["sessionId"]
                await client.ok(
                    "session/prompt",
                    {"sessionId": fid_origin, "prompt": text("[[fork]] remember 42")},
                )
                fork = await client.ok(
                    "session/fork", {"sessionId": fid_origin, "cwd": str(ws), "mcpServers": []}
                )
                fid = fork.result["sessionId"]
                assert fid != fid_origin
                forked = await client.ok(
                    "session/prompt", {"sessionId": fid, "prompt": text("which number?")}
                )
                assert forked.text() == "Fork answer."
                assert "remember 42" in json.dumps(model.requests_for("fork")[-1].body)
                origin = await client.ok(
                    "session/prompt", {"sessionId": fid_origin, "prompt": text("still there?")}
                )
                assert origin.text() == "Origin answer."
                body = json.dumps(model.requests_for("fork")[-1].body)
                assert "remember 42" in body and "which number?" not in body

                # list: newest first, filtered by cwd
                listed = (await client.ok("session/list", {})).result
                ids = [s["sessionId"] for s in listed["sessions"]]
                assert {sid, cid, fid_origin, fid} <= set(ids)
                assert "nextCursor" not in listed
                mine = next(s for s in listed["sessions"] if s["sessionId"] == sid)
                assert mine["cwd"] == str(ws)
                assert mine["title"] == "[[conf]] write the file"
                assert mine["updatedAt"].endswith("Z")
                assert mine["_meta"]["prompts"] == 2
                elsewhere = await client.ok("session/list", {"cwd": str(other)})
                assert elsewhere.result["sessions"] == []

                await robustness(client, ws)

            # load on a fresh connection: the whole conversation replayed before the answer
            async with fresh() as client:
                loaded = await client.ok(
                    "session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
                )
                assert loaded.result is not None  # the session's modes (default and plan)
                assert loaded.result["modes"]["currentModeId"] == "default"
                users = [
                    u["content"]["text"]
                    for u in loaded.updates
                    if u["sessionUpdate"] == "user_message_chunk"
                ]
                assert users == ["[[conf]] write the file", "and again"]
                assert loaded.kinds()[0] == "user_message_chunk"
                assert "tool_call" in loaded.kinds()
                assert loaded.text() == "Wrote it.Second answer."

                fork_loaded = await client.ok(
                    "session/load", {"sessionId": fid, "cwd": str(ws), "mcpServers": []}
                )
                users = [
                    u["content"]["text"]
                    for u in fork_loaded.updates
                    if u["sessionUpdate"] == "user_message_chunk"
                ]
                assert users == ["[[fork]] remember 42", "which number?"]

            # resume on a fresh connection: no replay, and the conversation goes on
            async with fresh() as client:
                resumed = await client.ok(
                    "session/resume", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
                )
                assert resumed.updates == []  # no replay
                assert resumed.result["modes"]["currentModeId"] == "default"
                third = await client.ok(
                    "session/prompt", {"sessionId": sid, "prompt": text("one more")}
                )
                assert third.text() == "Third answer."
                assert "write the file" in json.dumps(model.requests_for("conf")[-1].body)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_scripted_conformance(transport: Transport, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with agents(transport, "scripted", tmp_path / "state") as fresh:
        async with fresh() as client:
            caps = (await client.initialize())["agentCapabilities"]
            assert caps["sessionCapabilities"] == {"list": {}, "resume": {}, "close": {}}  # no fork
            assert caps["promptCapabilities"]["image"] is False
            assert caps["mcpCapabilities"]["http"] is False
            sid = (await client.ok("session/new", {"cwd": str(ws), "mcpServers": []})).result[
                "sessionId"
            ]
            said = await client.ok("session/prompt", {"sessionId": sid, "prompt": text("hi")})
            assert said.result["stopReason"] == "end_turn"
            assert said.text() == "Hello from the scripted runtime."

            fork = await client.request(
                "session/fork", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
            )
            assert fork.error is not None and fork.error["code"] == -32602
            assert "cannot fork" in fork.error["message"]
            image = [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]
            refused = await client.request("session/prompt", {"sessionId": sid, "prompt": image})
            assert refused.error is not None and refused.error["code"] == -32602
            assert "takes no images" in refused.error["message"]
            servers: list[dict[str, Any]] = [
                {"name": "x", "command": "/bin/true", "args": [], "env": []}
            ]
            no_mcp = await client.request("session/new", {"cwd": str(ws), "mcpServers": servers})
            assert no_mcp.error is not None and no_mcp.error["code"] == -32602
            assert "MCP" in no_mcp.error["message"]
            listed = (await client.ok("session/list", {"cwd": str(ws)})).result["sessions"]
            assert [s["sessionId"] for s in listed] == [sid]
            await robustness(client, ws)

            # close: the session is gone from this connection, the log keeps it
            assert (await client.ok("session/close", {"sessionId": sid})).result == {}
            gone = await client.request("session/prompt", {"sessionId": sid, "prompt": text("x")})
            assert gone.error is not None and gone.error["code"] == -32602
            twice = await client.request("session/close", {"sessionId": sid})
            assert twice.error is not None and twice.error["code"] == -32602

        async with fresh() as client:
            loaded = await client.ok(
                "session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
            )
            assert loaded.kinds()[0] == "user_message_chunk"
            assert loaded.text() == "Hello from the scripted runtime."
        async with fresh() as client:
            resumed = await client.ok(
                "session/resume", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
            )
            assert resumed.updates == []  # no replay
            assert resumed.result["modes"]["currentModeId"] == "default"
            again = await client.ok("session/prompt", {"sessionId": sid, "prompt": text("more")})
            assert again.result["stopReason"] == "end_turn"
