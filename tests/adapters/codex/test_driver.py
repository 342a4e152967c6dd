"""argv, environment, homes, the rollout usage baseline, the codec, and the JSON-RPC client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.codex import CodexAdapter, CodexCodec, CodexConfig, CodexProvider, JsonRpcClient
from adapters.codex.driver import (
    app_server_argv,
    exec_argv,
    prepare_home,
    provider_for,
    run_env,
    thread_total_usage,
)
from orchestrator.core.adapter import RunHandle
from orchestrator.core.errors import ConfigError, RuntimeReportedError
from orchestrator.core.events import Usage

PROVIDER = CodexProvider(
    base_url="http://127.0.0.1:18080/v1", api_key="sk-secret-123456789", request_max_retries=1
)


def test_exec_argv_points_only_at_the_provider_and_keeps_the_key_out() -> None:
    args = exec_argv(CodexConfig(), PROVIDER, "-starts with a dash", model="gpt-5.5")
    assert args[:4] == ["exec", "--json", "--skip-git-repo-check", "-c"]
    joined = " ".join(args)
    assert 'model_providers.ringleader.base_url="http://127.0.0.1:18080/v1"' in joined
    assert 'model_providers.ringleader.wire_api="responses"' in joined
    assert "model_providers.ringleader.request_max_retries=1" in joined
    assert "stream_max_retries" not in joined
    assert "--disable plugins" in joined and "analytics.enabled=false" in joined
    assert 'sandbox_mode="workspace-write"' in joined
    assert "sk-secret" not in joined
    assert args[-2:] == ["--", "-starts with a dash"]
    assert args[args.index("-m") + 1] == "gpt-5.5"


def test_exec_resume_argv_and_bypass() -> None:
    args = exec_argv(CodexConfig(sandbox="bypass"), None, "go", model=None, resume_thread="t-1")
    assert args[:2] == ["exec", "resume"]
    assert args[-3:] == ["--", "t-1", "go"]
    assert "--dangerously-bypass-approvals-and-sandbox" in args
    assert "sandbox_mode" not in " ".join(args)
    assert "-m" not in args


def test_app_server_argv() -> None:
    args = app_server_argv(CodexConfig(extra_config=("foo.bar=1",)), PROVIDER)
    assert args[0] == "app-server" and "foo.bar=1" in args and "sandbox_mode" not in " ".join(args)


def test_env_is_allow_listed_with_per_run_homes(tmp_path: Path) -> None:
    base_env = {"PATH": "/bin", "SECRET_TOKEN": "x", "OPENAI_API_KEY": "sk-leak-000000"}
    config = CodexConfig(provider=PROVIDER, env_allow=("PATH",))
    env = run_env(config, PROVIDER, codex_home=tmp_path, extra={"EXTRA": "1", **base_env})
    assert env["CODEX_HOME"] == str(tmp_path) and env["HOME"] == str(tmp_path / "home")
    assert env["RINGLEADER_CODEX_API_KEY"] == "sk-secret-123456789"
    assert "OPENAI_API_KEY" not in env
    assert env["EXTRA"] == "1"


def test_provider_from_run_env_because_codex_ignores_openai_base_url() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-abcdefghij"}
    provider = provider_for(CodexConfig(), env)
    assert provider is not None and provider.base_url == "http://127.0.0.1:9/v1"
    assert provider.api_key == "sk-abcdefghij" and "sk-abc" not in repr(provider)
    assert provider_for(CodexConfig(provider=PROVIDER), env) is PROVIDER
    assert provider_for(CodexConfig(), {}) is None


def test_homes(tmp_path: Path) -> None:
    home, owned = prepare_home(None, tmp_path / "root", "run-1")
    assert owned and home == tmp_path / "root" / "run-1" and (home / "home").is_dir()
    assert home.stat().st_mode & 0o777 == 0o700
    given, owned = prepare_home(str(tmp_path / "identity"), None, "run-2")
    assert not owned and given == tmp_path / "identity"


def test_bad_mode() -> None:
    with pytest.raises(ConfigError):
        CodexConfig(mode="interactive")  # type: ignore[arg-type]


def test_thread_total_usage_from_rollout(tmp_path: Path) -> None:
    day = tmp_path / "sessions" / "2026" / "11" / "22"
    day.mkdir(parents=True)
    count = {"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 20, "cached_input_tokens": 4, "output_tokens": 10}}}}  # fmt: skip
    lines = [json.dumps({"type": "session_meta"}), json.dumps(count), "not json token_count"]
    (day / "rollout-2026-11-22T13-30-31-th-1.jsonl").write_text("\n".join(lines) + "\n")
    assert thread_total_usage(tmp_path, "th-1") == Usage(
        input_tokens=20, output_tokens=10, cached_input_tokens=4
    )
    assert thread_total_usage(tmp_path, "other") is None
    assert thread_total_usage(tmp_path / "nope", "th-1") is None


async def test_codec_round_trip_keeps_the_origin_directory() -> None:
    adapter = CodexAdapter()
    codec = adapter.session_codec
    assert isinstance(codec, CodexCodec)
    blob = json.dumps({"sessionKey": "k", "sessionId": "thread-1", "cwd": "/work/x"})
    run = await codec.restore(blob)
    assert run == RunHandle(adapter_id="codex", session_key="k", run_id="thread-1")
    assert json.loads(await codec.serialize(run)) == {
        "sessionKey": "k", "sessionId": "thread-1", "cwd": "/work/x"
    }  # fmt: skip
    assert CodexCodec.parse("[]").session_id is None


def test_capabilities_by_mode() -> None:
    exec_caps = CodexAdapter(CodexConfig(mode="exec", model="gpt-5.5")).capabilities()
    app_caps = CodexAdapter(CodexConfig()).capabilities()  # app-server is the default
    assert not exec_caps.streaming and app_caps.streaming
    assert app_caps.tool_approval and not exec_caps.tool_approval
    assert app_caps.steerable and not exec_caps.steerable
    assert exec_caps.resume and exec_caps.context_window_tokens == 258_400
    assert exec_caps.models == ("gpt-5.5",) and app_caps.models == ()


async def test_json_rpc_client() -> None:
    sent: list[dict[str, Any]] = []

    async def send(line: bytes) -> None:
        sent.append(json.loads(line))
        await trio.lowlevel.checkpoint()

    client = JsonRpcClient(send, adapter="codex", version=False)
    results: list[Any] = []
    async with trio.open_nursery() as nursery:

        async def call() -> None:
            results.append(await client.request("thread/start", {"cwd": "/w"}))

        nursery.start_soon(call)
        await trio.testing.wait_all_tasks_blocked()
        assert sent == [{"id": 1, "method": "thread/start", "params": {"cwd": "/w"}}]
        assert not client.resolve({"id": 99, "result": {}})
        assert client.resolve({"id": 1, "result": {"thread": {"id": "t"}}})
    assert results == [{"thread": {"id": "t"}}]

    async def failing() -> None:
        with pytest.raises(RuntimeReportedError, match="no rollout found") as info:
            await client.request("thread/resume", {"threadId": "x"})
        assert info.value.code == "-32600"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.notify, "initialized")
        await trio.testing.wait_all_tasks_blocked()
        assert sent[-1] == {"method": "initialized"}
        nursery.start_soon(failing)
        await trio.testing.wait_all_tasks_blocked()
        client.resolve({"id": 2, "error": {"code": -32600, "message": "no rollout found"}})
    async with trio.open_nursery() as nursery:

        async def broken() -> None:
            with pytest.raises(trio.BrokenResourceError):
                await client.request("turn/start", {})

        nursery.start_soon(broken)
        await trio.testing.wait_all_tasks_blocked()
        client.close()
    with pytest.raises(trio.ClosedResourceError):
        await client.request("x")


def test_an_untrusted_directory_and_its_repository_are_untrusted_for_codex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex trusts the directory it runs in by itself (and loads the repository's
    ``.codex/config.toml``): unless ``ringleader trust`` named it, the run says it is not."""
    from adapters.codex.driver import untrusted_project
    from orchestrator.core.config import trust_directory

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    [flag, value] = untrusted_project(repo / "sub")
    assert flag == "-c" and value.startswith("projects={")
    import tomllib

    table = tomllib.loads(value)["projects"]
    assert table == {
        str((repo / "sub").resolve()): {"trust_level": "untrusted"},
        str(repo.resolve()): {"trust_level": "untrusted"},
    }
    trust_directory(repo)
    assert untrusted_project(repo / "sub") == []
