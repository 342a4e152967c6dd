"""What an ACP client hands ``ringleader acp`` besides text reaches the runtime: image blocks
(native: content parts to the model), MCP servers named in ``session/new`` (native: started by its
MCP client; Claude Code: ``--mcp-config``; Codex: ``-c mcp_servers…``), and the ``--listen``
transport's access rules."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from contextlib import suppress
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest
import trio
from httpx2.websockets import WebSocketUpgradeError

from adapters.claude_code.driver import ClaudeCodeConfig, claude_args, mcp_config_file, user_message
from adapters.codex.driver import CodexConfig, exec_argv, mcp_overrides
from orchestrator.core.adapter import PromptImage, RunMcpServer
from orchestrator.engine.eventlog import EventLog
from orchestrator.model_server import serve_model_server

from .client import ROOT, agent_env, connect_ws, listening, stdio_agent

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n-one-pixel-").decode()
ECHO_SERVER = Path(__file__).with_name("echo_mcp.py")


def native_env(url: str) -> dict[str, str]:
    return {
        "RINGLEADER_NATIVE_PROVIDER": "anthropic",
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-inputs-0000",
    }


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_an_image_block_reaches_the_native_model(provider: str, tmp_path: Path) -> None:
    script = {
        "model": "claude-sonnet-4-5" if provider == "anthropic" else "gpt-4.1",
        "conversations": [{"name": "img", "marker": "[[img]]", "turns": [{"text": "A pixel."}]}],
    }
    ws = tmp_path / "ws"
    ws.mkdir()
    async with serve_model_server(script) as model:
        env = native_env(model.url)
        if provider == "openai":
            env = {
                "RINGLEADER_NATIVE_PROVIDER": "openai",
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-inputs-0000",
            }
        async with stdio_agent("native", tmp_path / "state", **env) as client:
            await client.initialize()
            sid = (await client.ok("session/new", {"cwd": str(ws), "mcpServers": []})).result[
                "sessionId"
            ]
            prompt = [
                {"type": "text", "text": "[[img]] what is this?"},
                {"type": "image", "data": PIXEL, "mimeType": "image/png"},
            ]
            reply = await client.ok("session/prompt", {"sessionId": sid, "prompt": prompt})
            assert reply.text() == "A pixel."
            bad = [{"type": "image", "data": "not base64!", "mimeType": "image/png"}]
            refused = await client.request("session/prompt", {"sessionId": sid, "prompt": bad})
            assert refused.error is not None and refused.error["code"] == -32602
    [request] = model.requests_for("img")
    if provider == "openai":  # the Responses API: an input_image with a data URL
        [user] = [item for item in request.body["input"] if item.get("role") == "user"]
        images = [part for part in user["content"] if part["type"] == "input_image"]
        assert [part["image_url"] for part in images] == [f"data:image/png;base64,{PIXEL}"]
        return
    user = request.body["messages"][0]["content"]
    images = [{k: part[k] for k in ("type", "source")} for part in user if part["type"] == "image"]
    assert images == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}
    ]


async def test_an_mcp_server_from_session_new_serves_the_native_runtime(tmp_path: Path) -> None:
    script = {
        "model": "claude-sonnet-4-5",
        "conversations": [
            {
                "name": "mcp",
                "marker": "[[mcp]]",
                "turns": [
                    {"tool_calls": [{"name": "mcp__echo__echo", "input": {"text": "hello"}}]},
                    {"text": "Echoed."},
                ],
            }
        ],
    }
    ws = tmp_path / "ws"
    ws.mkdir()
    servers = [
        {
            "name": "echo",
            "command": sys.executable,
            "args": [str(ECHO_SERVER)],
            "env": [{"name": "ECHO_PREFIX", "value": "echo says: "}],
        }
    ]
    async with serve_model_server(script) as model:
        async with stdio_agent("native", tmp_path / "state", **native_env(model.url)) as client:
            await client.initialize()
            new = await client.ok("session/new", {"cwd": str(ws), "mcpServers": servers})
            sid = new.result["sessionId"]
            reply = await client.ok(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": "[[mcp]] go"}]},
            )
    assert reply.result["stopReason"] == "end_turn"
    [call] = [u for u in reply.updates if u["sessionUpdate"] == "tool_call"]
    assert call["title"] == "mcp__echo__echo"
    [result] = [
        u
        for u in reply.updates
        if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == call["toolCallId"]
    ]
    assert result["status"] == "completed"
    assert "echo says: hello" in result["content"][0]["content"]["text"]
    offered = [t["name"] for t in model.requests_for("mcp")[0].body["tools"]]
    assert "mcp__echo__echo" in offered


def test_claude_code_gets_the_clients_mcp_servers_in_a_private_config_file(
    tmp_path: Path,
) -> None:
    servers = (
        RunMcpServer(name="echo", command="/usr/bin/echo-mcp", args=("-v",), env={"K": "s3cret"}),
        RunMcpServer(name="web", url="http://127.0.0.1:9/mcp", headers={"Authorization": "x"}),
    )
    path = mcp_config_file(tmp_path, servers)
    assert path is not None
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(Path(path).read_text()) == {
        "mcpServers": {
            "echo": {
                "type": "stdio",
                "command": "/usr/bin/echo-mcp",
                "args": ["-v"],
                "env": {"K": "s3cret"},
            },
            "web": {
                "type": "http",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": "x"},
            },
        }
    }
    args = claude_args(
        ClaudeCodeConfig(), prompt="hi", model=None, resume="S1", fork=True, mcp_config=path
    )
    assert args[args.index("--resume") : args.index("--resume") + 3] == [
        "--resume",
        "S1",
        "--fork-session",
    ]
    assert args[args.index("--mcp-config") + 1] == path
    assert "s3cret" not in " ".join(args)
    assert mcp_config_file(tmp_path, ()) is None


def test_claude_code_gets_images_as_a_stream_json_user_message() -> None:
    line = json.loads(user_message("look", (PromptImage(mime_type="image/png", data=PIXEL),)))
    assert line["message"]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
    ]
    args = claude_args(ClaudeCodeConfig(), prompt=None, model=None, stream_input=True)
    assert args[args.index("--input-format") + 1] == "stream-json"


def test_codex_gets_the_clients_mcp_servers_as_config_overrides_with_secrets_in_its_env() -> None:
    servers = (
        RunMcpServer(
            name="echo", command="/usr/bin/echo-mcp", args=("-v", "x y"), env={"K": "s3cret"}
        ),
        RunMcpServer(
            name="web", url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer t0k"}
        ),
    )
    args, env = mcp_overrides(servers)
    assert args == [
        "-c", 'mcp_servers.echo.command="/usr/bin/echo-mcp"',
        "-c", 'mcp_servers.echo.args=["-v", "x y"]',
        "-c", 'mcp_servers.echo.env_vars=["K"]',
        "-c", 'mcp_servers.web.url="http://127.0.0.1:9/mcp"',
        "-c", 'mcp_servers.web.env_http_headers={"Authorization" = "RINGLEADER_MCP_1_HEADER_0"}',
    ]  # fmt: skip
    assert env == {"K": "s3cret", "RINGLEADER_MCP_1_HEADER_0": "Bearer t0k"}
    argv = exec_argv(CodexConfig(), None, "hi", model=None, mcp=args)
    assert argv.index('mcp_servers.echo.command="/usr/bin/echo-mcp"') < argv.index("--")
    assert "s3cret" not in " ".join(argv) and "t0k" not in " ".join(argv)


async def test_listen_refuses_connections_without_the_token_or_from_another_origin(
    tmp_path: Path,
) -> None:
    async with listening("scripted", tmp_path / "state") as (url, _):
        bare, _, query = url.partition("?")
        assert query.startswith("token=")
        token = query.removeprefix("token=")
        for attempt, headers in [
            (bare, {}),
            (f"{bare}?token=wrong", {}),
            (bare, {"Authorization": "Bearer wrong"}),
            (url, {"Origin": "http://evil.example"}),
        ]:
            with pytest.raises(WebSocketUpgradeError):
                async with connect_ws(attempt, **headers):
                    pass
        async with connect_ws(bare, Authorization=f"Bearer {token}") as client:
            assert (await client.initialize())["protocolVersion"] == 1
        async with connect_ws(url) as client:  # ?token= too (a browser cannot set headers)
            assert (await client.initialize())["protocolVersion"] == 1

        # the Streamable HTTP profile on the same path: the same token, and the RFD's codes
        endpoint = bare.replace("ws://", "http://", 1)
        auth = {"Authorization": f"Bearer {token}"}
        json_type = {"Content-Type": "application/json"}
        init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        async with httpx2.AsyncClient() as http:
            denied = await http.post(endpoint, content=init, headers=json_type)
            assert denied.status_code == 401
            evil = {**auth, **json_type, "Origin": "http://evil.example"}
            assert (await http.post(endpoint, content=init, headers=evil)).status_code == 401
            not_json = await http.post(endpoint, content=init, headers=auth)
            assert not_json.status_code == 415
            first = await http.post(endpoint, content="[]", headers={**auth, **json_type})
            assert first.status_code == 501
            no_init = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/list"})
            early = await http.post(endpoint, content=no_init, headers={**auth, **json_type})
            assert early.status_code == 400
            opened = await http.post(endpoint, content=init, headers={**auth, **json_type})
            assert opened.status_code == 200 and opened.json()["result"]["protocolVersion"] == 1
            connection = opened.headers["acp-connection-id"]
            unknown = {**auth, **json_type, "Acp-Connection-Id": "nope"}
            assert (await http.post(endpoint, content=no_init, headers=unknown)).status_code == 404
            mine = {**auth, "Acp-Connection-Id": connection}
            assert (await http.get(endpoint, headers=mine)).status_code == 406
            prompt = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "session/prompt",
                    "params": {"sessionId": "acp-1", "prompt": []},
                }
            )
            unscoped = await http.post(endpoint, content=prompt, headers={**mine, **json_type})
            assert unscoped.status_code == 400  # a session-scoped POST without Acp-Session-Id
            assert (await http.delete(endpoint, headers=mine)).status_code == 202
            assert (await http.delete(endpoint, headers=mine)).status_code == 404

        # a body over the limit is refused while it is read: a declared length over it at once
        # (not a byte read), a streamed one at the first chunk past it — never buffered whole
        where = urlsplit(endpoint)

        async def raw_post(head: str, body: bytes) -> bytes:
            stream = await trio.open_tcp_stream(where.hostname or "127.0.0.1", where.port or 80)
            async with stream:
                with suppress(trio.BrokenResourceError):  # it may answer, and close, first
                    await stream.send_all(
                        f"POST {where.path} HTTP/1.1\r\nHost: {where.netloc}\r\n"
                        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                        f"{head}\r\n".encode()
                        + body
                    )
                with trio.fail_after(20):  # the body is never finished
                    return await stream.receive_some(4096)

        huge = await raw_post("Content-Length: 419430400\r\n", b'{"jsonrpc": "2.0", "x": "')
        assert huge.startswith(b"HTTP/1.1 413"), huge
        chunks = [b"x" * 1_048_576] * 8 + [b"just past it"]  # no more is sent than that
        streamed = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)
        endless = await raw_post("Transfer-Encoding: chunked\r\n", streamed)
        assert endless.startswith(b"HTTP/1.1 413"), endless


def test_listen_off_loopback_needs_a_configured_token(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "orchestrator.cli", "acp", "--runtime", "scripted"]
    env = agent_env(tmp_path / "state")
    env.pop("RINGLEADER_FEED_TOKEN", None)
    env.pop("RINGLEADER_FEED_TOKEN_FILE", None)
    done = subprocess.run(
        [*argv, "--listen", "0.0.0.0:0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode != 0
    assert "requires a token" in done.stderr
    assert "Traceback" not in done.stderr
    bad = subprocess.run(
        [*argv, "--listen", "nope"], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert bad.returncode != 0 and "HOST:PORT" in bad.stderr


async def test_a_closed_websocket_aborts_its_running_prompt(tmp_path: Path) -> None:
    """The client goes away mid-prompt: the run is aborted and recorded so, never left running."""
    slow = {"text": "tick " * 200, "chunk_chars": 5, "chunk_delay_s": 0.2}
    script = {
        "model": "claude-sonnet-4-5",
        "conversations": [{"name": "slow", "marker": "[[slow]]", "turns": [slow]}],
    }
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    async with serve_model_server(script) as model:
        async with listening("native", state, **native_env(model.url)) as (url, _):
            async with connect_ws(url) as client:
                await client.initialize()
                new = await client.ok("session/new", {"cwd": str(ws), "mcpServers": []})
                await client.send(
                    {
                        "id": 99,
                        "method": "session/prompt",
                        "params": {
                            "sessionId": new.result["sessionId"],
                            "prompt": [{"type": "text", "text": "[[slow]] count"}],
                        },
                    }
                )
                with trio.fail_after(60):
                    while "agent_message_chunk" not in await client.wire.receive_text():
                        pass
            # the socket is closed: the server aborts the run; its row says so
            with trio.fail_after(60):
                while True:
                    async with EventLog.open(state / "events.db") as log:
                        runs = await log.runs()
                    if runs and runs[-1].status != "running":
                        break
                    await trio.sleep(0.2)  # another process finishes the run: poll its log
    assert runs[-1].status == "aborted"


async def test_an_over_long_stdio_line_is_dropped_and_the_agent_goes_on(tmp_path: Path) -> None:
    async with stdio_agent("scripted", tmp_path / "state") as client:
        huge = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"p": "a" * MAX}})
        await client.wire.send_text(huge)  # 9 MiB, over the 8 MiB cap: dropped, not parsed
        # initialize is id 1 too: had the huge line been answered (-32601), it would fail here
        answer = await client.initialize()
    assert answer["protocolVersion"] == 1


MAX = 9 * 1024 * 1024
