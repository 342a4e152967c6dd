"""The OpenClaw adapter's own behaviour on the fake gateway: fail-fast, a lost connection, the
controls (model, context files, tool blocklist), the codec, and the managed gateway's config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.openclaw import (
    GatewayManager,
    GatewaySettings,
    ModelProvider,
    OpenClawAdapter,
    OpenClawConfig,
)
from adapters.openclaw.gateway import gateway_config, gateway_env
from contract import check_stream, collect_run
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import Done, ErrorEvent, Status

from .harness import OpenClawHarness


def run_in_harness(body: Any, **config: Any) -> None:
    harness = OpenClawHarness(**config)

    async def main() -> None:
        adapter = harness.make_adapter()
        async with adapter:
            assert isinstance(adapter, OpenClawAdapter)
            await body(harness, adapter)

    trio.run(main)


def retrying(harness: OpenClawHarness, key: str, n: int) -> dict[str, Any]:
    state = harness._runs[key]  # pyright: ignore[reportPrivateUsage]
    return harness._agent(state, "run_status", {  # pyright: ignore[reportPrivateUsage]
        "phase": "retrying", "message": f"Provider temporarily unavailable. Retrying ({n}/8).",
        "retryAttempt": n, "maxRetries": 8,
    })  # fmt: skip


def test_fail_fast_stops_the_run_in_the_gateway_and_ends_in_error() -> None:
    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        run = await harness.start(adapter, "ff")
        stream = adapter.events(run)
        fake = harness.fake
        assert fake is not None
        finishing = harness._agent(harness._runs["ff"], "lifecycle", {  # pyright: ignore[reportPrivateUsage]
            "phase": "finishing", "error": "request failed (HTTP 500)",
            "errorObservation": {"failoverReason": "server_error"},
        })  # fmt: skip
        for n in (1, 2):
            await fake.push(finishing)
            await fake.push(retrying(harness, "ff", n))
        events = await collect_run(stream, deadline_s=10)
        check_stream(events)
        assert {"chat.abort", "sessions.abort"} <= set(fake.methods())
        errors = [e for e in events if isinstance(e, ErrorEvent)]
        assert len(errors) == 1 and errors[0].code == "server_error"
        assert "fail-fast" in errors[0].message
        assert isinstance(events[-1], Done) and events[-1].reason == "error"
        assert sum(isinstance(e, Status) and "Retrying" in (e.detail or "") for e in events) == 2

    run_in_harness(body, retry_limit=1)


def test_a_run_lost_with_the_connection_ends_in_runtime_exited() -> None:
    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        run = await harness.start(adapter, "lost")
        stream = adapter.events(run)
        await harness.emit(harness.frames.delta("partial"), run)
        assert harness.fake is not None
        await harness.fake.drop()  # the fake's agent.wait then says the run is unknown
        events = await collect_run(stream, deadline_s=20)
        check_stream(events)
        errors = [e for e in events if isinstance(e, ErrorEvent)]
        assert errors and errors[-1].code == "runtime_exited"
        assert "lost" in errors[-1].message
        assert isinstance(events[-1], Done) and events[-1].reason == "error"

    run_in_harness(body, client_options={"backoff_initial": 0.05})


def test_set_model_patches_the_session() -> None:
    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        run = await harness.start(adapter, "model")
        await adapter.set_model(run, "other/model-b")
        assert harness.fake is not None
        patch = next(r for r in harness.fake.requests if r["method"] == "sessions.patch")
        assert patch["params"] == {"key": "agent:main:model", "model": "other/model-b"}
        await adapter.abort(run)

    run_in_harness(body)


def test_start_passes_the_model_but_not_cwd(tmp_path: Path) -> None:
    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        opts = StartOpts(agent_id="a", session_key="m", message="hi", model="prov/model-c",
                         cwd=str(tmp_path), context="ctx")  # fmt: skip
        run = await adapter.start(TaskHandle(), opts)
        assert harness.fake is not None
        agent = next(r for r in harness.fake.requests if r["method"] == "agent")
        params = agent["params"]
        assert params["model"] == "model-c" and params["provider"] == "prov"
        assert "cwd" not in params  # the gateway reserves cwd for its plugins
        assert params["message"] == "ctx\n\nhi"
        assert params["sessionKey"] == "agent:main:m"
        await adapter.abort(run)

    run_in_harness(body)


def test_write_context_agent_files_go_through_the_gateway_others_to_the_workspace() -> None:
    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        run = await harness.start(adapter, "ctx")
        await adapter.write_context(run, "AGENTS.md", "be brief")
        await adapter.write_context(run, "notes/plan.md", "step 1")
        assert harness.fake is not None
        sets = [r["params"] for r in harness.fake.requests if r["method"] == "agents.files.set"]
        assert sets == [{"agentId": "main", "name": "AGENTS.md", "content": "be brief"}]
        assert (harness.workspace / "notes" / "plan.md").read_text() == "step 1"
        for bad in ("../x.md", "/etc/x.md", "a/../../x.md"):
            with pytest.raises(ConfigError):
                await adapter.write_context(run, bad, "no")
        await adapter.abort(run)

    run_in_harness(body)


def test_a_tool_blocklist_the_gateway_does_not_enforce_is_refused() -> None:
    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        opts = StartOpts(
            agent_id="a", session_key="b", message="hi", child_tool_blocklist=("exec",)
        )
        with pytest.raises(ConfigError, match="cannot block tools per run"):
            await adapter.start(TaskHandle(), opts)
        assert harness.fake is not None
        assert "agent" not in harness.fake.methods()

    run_in_harness(body)


def test_codec_round_trip_names_the_openclaw_session() -> None:
    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        run = await harness.start(adapter, "task:42")
        blob = await adapter.session_codec.serialize(run)
        assert json.loads(blob) == {"sessionKey": "task:42", "sessionId": "agent:main:task:42"}
        restored = await adapter.session_codec.restore(blob)
        assert restored.run_id == "agent:main:task:42"
        await adapter.abort(run)
        # resuming by that id addresses the same OpenClaw session
        opts = StartOpts(agent_id="a", session_key="new", message="again",
                         resume_session_id=restored.run_id)  # fmt: skip
        again = await adapter.start(TaskHandle(), opts)
        assert harness.fake is not None
        keys = [r["params"]["sessionKey"] for r in harness.fake.requests if r["method"] == "agent"]
        assert keys == ["agent:main:task:42", "agent:main:task:42"]
        await adapter.abort(again)

    run_in_harness(body)


def test_capabilities_say_what_openclaw_is() -> None:
    provider = ModelProvider(base_url="http://127.0.0.1:1/v1", models=("m1", "m2"))
    adapter = OpenClawAdapter(OpenClawConfig(gateway=GatewaySettings(provider=provider)))
    caps = adapter.capabilities()
    assert caps.runtime_class == "connected-substrate" and caps.native_channels == "gateway"
    assert caps.streaming and caps.resume and not caps.steerable and not caps.mcp
    assert caps.models == ("ringleader/m1", "ringleader/m2")
    assert caps.context_window_tokens == 128_000


def test_attach_needs_url_and_token() -> None:
    with pytest.raises(ConfigError):
        OpenClawAdapter(OpenClawConfig(url="ws://127.0.0.1:1"))
    with pytest.raises(ConfigError):
        GatewayManager(url="ws://127.0.0.1:1")


def test_managed_config_stops_background_traffic_and_keeps_the_token_out_of_argv(
    tmp_path: Path,
) -> None:
    provider = ModelProvider(base_url="http://127.0.0.1:9/v1", api_key="sk-test-12345678",
                             models=("fake-model",))  # fmt: skip
    settings = GatewaySettings(provider=provider, tool_deny=("exec",), binary="/bin/true")
    config = gateway_config(settings, port=18999, token="tok", workspace=tmp_path)
    assert config["update"] == {"checkOnStart": False, "auto": {"enabled": False}}
    assert config["telemetry"] == {"enabled": False}
    assert config["models"]["catalogRefresh"] == {"enabled": False}
    assert config["models"]["mode"] == "replace"
    assert config["gateway"] == {"mode": "local", "port": 18999, "bind": "loopback",
                                 "auth": {"mode": "token", "token": "tok"}}  # fmt: skip
    assert config["agents"]["defaults"]["heartbeat"] == {"every": "0m"}
    assert config["agents"]["defaults"]["model"] == {"primary": "ringleader/fake-model"}
    assert config["tools"] == {"deny": ["exec"]}
    env = gateway_env(settings, state_dir=tmp_path, config_path=tmp_path / "c.json5",
                      tmp_dir=tmp_path / "tmp")  # fmt: skip
    for flag in ("OPENCLAW_NO_AUTO_UPDATE", "OPENCLAW_DISABLE_BONJOUR", "OPENCLAW_SKIP_CHANNELS",
                 "OPENCLAW_NO_RESPAWN", "OPENCLAW_SKIP_CRON"):  # fmt: skip
        assert env[flag] == "1"
    assert env["OPENCLAW_STATE_DIR"] == str(tmp_path)
    assert "sk-test" not in json.dumps(env)


def test_provider_from_env() -> None:
    openai = ModelProvider.from_env({"OPENAI_BASE_URL": "http://127.0.0.1:5/v1",
                                     "OPENAI_API_KEY": "k"}, "x/m")  # fmt: skip
    assert openai is not None and openai.api == "openai-completions" and openai.models == ("m",)
    anthropic = ModelProvider.from_env({"ANTHROPIC_BASE_URL": "http://127.0.0.1:5"})
    assert anthropic is not None and anthropic.api == "anthropic-messages"
    assert ModelProvider.from_env({}) is None
