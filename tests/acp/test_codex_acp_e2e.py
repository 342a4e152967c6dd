"""``ringleader acp --runtime codex`` end to end: an image block of the client's prompt reaches
the model through the real Codex (app-server ``turn/start`` image input).

If Codex is not installed this test FAILS with the install command."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters._runtimes import install_hint, runtime_binary
from orchestrator.core.errors import RuntimeNotFoundError
from orchestrator.model_server import serve_model_server

from .client import stdio_agent

pytestmark = pytest.mark.e2e

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


async def test_codex_through_acp_sends_the_image_to_the_model(tmp_path: Path) -> None:
    try:
        runtime_binary("codex")
    except RuntimeNotFoundError as exc:
        pytest.fail(f"codex is not installed: {install_hint('codex')} ({exc})")
    script = {
        "model": "gpt-5.5",
        "conversations": [{"name": "img", "marker": "[[cx:img]]", "turns": [{"text": "SAW IT"}]}],
    }
    ws = tmp_path / "ws"
    ws.mkdir()
    async with serve_model_server(script) as model:
        env = {
            "RINGLEADER_CODEX_BASE_URL": model.base_url,
            "RINGLEADER_CODEX_MODEL": "gpt-5.5",
            "RINGLEADER_CODEX_API_KEY_ENV": "ACP_E2E_KEY",
            "ACP_E2E_KEY": "sk-acp-codex-0000",
        }
        async with stdio_agent("codex", tmp_path / "state", **env) as client:
            caps = (await client.initialize())["agentCapabilities"]
            assert caps["promptCapabilities"]["image"] is True
            new = await client.ok("session/new", {"cwd": str(ws), "mcpServers": []})
            reply = await client.ok(
                "session/prompt",
                {
                    "sessionId": new.result["sessionId"],
                    "prompt": [
                        {"type": "text", "text": "[[cx:img]] what is this?"},
                        {"type": "image", "data": PNG, "mimeType": "image/png"},
                    ],
                },
            )
    assert reply.result["stopReason"] == "end_turn"
    assert "SAW IT" in reply.text()
    [request] = model.requests_for("img")
    users = [i for i in request.body["input"] if i.get("role") == "user"]
    images = [p for u in users for p in u["content"] if p.get("type") == "input_image"]
    assert [i["image_url"] for i in images] == [f"data:image/png;base64,{PNG}"]
