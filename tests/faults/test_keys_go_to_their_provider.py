"""The native runtime's configured key goes only to the provider it belongs to: a model that
names another provider (``--model ollama:x``, or the board's form) never receives it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.native_spec import NATIVE
from contract import collect_run
from orchestrator.core import Done, StartOpts, TaskHandle
from orchestrator.core.config import RuntimeConfig
from orchestrator.model_server import serve_model_server

KEY = "sk-ant-api03-t4-the-users-anthropic-key-000000"

SCRIPT: dict[str, Any] = {
    "api_key": KEY,  # the server answers only a request that carries this key
    "conversations": [{"name": "c", "turns": [{"text": "hello"}] * 4}],
}


async def run(model: str, env: dict[str, str], config: RuntimeConfig, root: Path) -> list[Any]:
    adapter = NATIVE.factory(config)
    async with adapter:
        handle = await adapter.start(
            TaskHandle(),
            StartOpts(
                agent_id="a", session_key="k", message="hi", model=model, env=env, cwd=str(root)
            ),
        )
        return await collect_run(adapter.events(handle), deadline_s=30)


async def test_a_model_of_another_provider_never_gets_the_configured_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("T4_ANTHROPIC_KEY", KEY)
    async with serve_model_server(SCRIPT) as server:
        config = RuntimeConfig(
            provider="anthropic", api_key_env="T4_ANTHROPIC_KEY", base_url=server.url
        )
        # the same server stands in for a local Ollama: whoever runs it sees what is sent
        env = {"OLLAMA_BASE_URL": server.base_url}
        events = await run("ollama:llama3", env, config, tmp_path)
        to_ollama = [r for r in server.requests if r.api == "chat"]
        assert to_ollama and all(r.status == 401 for r in to_ollama)  # no key came with them
        done = events[-1]
        assert isinstance(done, Done) and done.reason == "error"
        # the key still goes where it belongs: the configured (Anthropic) provider
        events = await run("anthropic:claude-haiku-4-5", {}, config, tmp_path)
        done = events[-1]
        assert isinstance(done, Done) and done.reason == "success", events
        assert [r.status for r in server.requests if r.api == "anthropic"] == [200]
