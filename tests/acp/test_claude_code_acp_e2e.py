"""``ringleader acp --runtime claude-code`` end to end: the real Claude Code against the scripted
model server, driven by an outside ACP client over stdio — an MCP server named in
``session/new`` reaches it through ``--mcp-config`` (its tool call asked of the client and
allowed), an image block reaches the model, and ``session/fork`` continues a copy of the session
(``--resume ID --fork-session``) while the original goes on unchanged.

If Claude Code is not installed these tests FAIL with the install command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters._runtimes import install_hint, runtime_binary
from orchestrator.core.errors import RuntimeNotFoundError
from orchestrator.model_server import serve_model_server

from .client import stdio_agent

pytestmark = pytest.mark.e2e

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-acp-claude-0000000000"
ECHO_SERVER = Path(__file__).with_name("echo_mcp.py")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
SCRIPT = {
    "model": MODEL,
    "conversations": [
        {
            "name": "mcp",
            "marker": "[[cc:mcp]]",
            "turns": [
                {"tool_calls": [{"name": "mcp__echo__echo", "input": {"text": "hello"}}]},
                {"text": "ECHOED"},
            ],
        },
        {"name": "img", "marker": "[[cc:img]]", "turns": [{"text": "SAW IT"}]},
        {
            "name": "fork",
            "marker": "[[cc:fork]]",
            "turns": [{"text": "NOTED"}, {"text": "FORK ANSWER"}, {"text": "ORIGIN ANSWER"}],
        },
    ],
}


def claude_env(url: str) -> dict[str, str]:
    try:
        runtime_binary("claude-code")
    except RuntimeNotFoundError as exc:
        pytest.fail(f"claude-code is not installed: {install_hint('claude-code')} ({exc})")
    return {
        "RINGLEADER_CLAUDE_CODE_BASE_URL": url,
        "RINGLEADER_CLAUDE_CODE_MODEL": MODEL,
        "RINGLEADER_CLAUDE_CODE_API_KEY_ENV": "ACP_E2E_KEY",
        "ACP_E2E_KEY": KEY,
    }


async def allow(request: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow"}}


def prompt(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def session_header(request: Any) -> str:
    return request.headers.get("x-claude-code-session-id", "")


async def test_claude_code_through_acp_mcp_image_and_fork(tmp_path: Path) -> None:
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
    async with serve_model_server(SCRIPT) as model:
        env = claude_env(model.url)
        async with stdio_agent("claude-code", tmp_path / "state", **env) as client:
            caps = (await client.initialize())["agentCapabilities"]
            assert caps["promptCapabilities"]["image"] is True
            assert "fork" in caps["sessionCapabilities"]

            # an MCP server from session/new, through --mcp-config
            new = await client.ok("session/new", {"cwd": str(ws), "mcpServers": servers})
            sid = new.result["sessionId"]
            used = await client.ok(
                "session/prompt",
                {"sessionId": sid, "prompt": prompt("[[cc:mcp]] echo it")},
                answer=allow,
            )
            assert used.result["stopReason"] == "end_turn", used
            results = [
                u["content"][0]["content"]["text"]
                for u in used.updates
                if u["sessionUpdate"] == "tool_call_update" and u["status"] == "completed"
            ]
            assert any("echo says: hello" in r for r in results), used.updates
            assert "ECHOED" in used.text()
            # Claude Code defers MCP tools (ToolSearch) but names them to the model
            assert "mcp__echo__echo" in json.dumps(model.requests_for("mcp")[0].body)

            # an image block, as a stream-json image content block
            img = (await client.ok("session/new", {"cwd": str(ws), "mcpServers": []})).result[
                "sessionId"
            ]
            seen = await client.ok(
                "session/prompt",
                {
                    "sessionId": img,
                    "prompt": [
                        *prompt("[[cc:img]] what is this?"),
                        {"type": "image", "data": PNG, "mimeType": "image/png"},
                    ],
                },
            )
            assert "SAW IT" in seen.text()
            body = json.dumps(model.requests_for("img")[-1].body)
            assert PNG in body and '"image"' in body

            # fork: a copy of the session goes on; the origin is left as it was
            origin = (await client.ok("session/new", {"cwd": str(ws), "mcpServers": []})).result[
                "sessionId"
            ]
            await client.ok(
                "session/prompt", {"sessionId": origin, "prompt": prompt("[[cc:fork]] remember 42")}
            )
            first_session = session_header(model.requests_for("fork")[-1])
            fork = await client.ok(
                "session/fork", {"sessionId": origin, "cwd": str(ws), "mcpServers": []}
            )
            fid = fork.result["sessionId"]
            forked = await client.ok(
                "session/prompt", {"sessionId": fid, "prompt": prompt("which number?")}
            )
            assert "FORK ANSWER" in forked.text()
            fork_request = model.requests_for("fork")[-1]
            assert "remember 42" in json.dumps(fork_request.body)
            assert session_header(fork_request) not in ("", first_session)  # a new session
            back = await client.ok(
                "session/prompt", {"sessionId": origin, "prompt": prompt("still there?")}
            )
            assert "ORIGIN ANSWER" in back.text()
            body = json.dumps(model.requests_for("fork")[-1].body)
            assert "remember 42" in body and "which number?" not in body
