"""argv, environment, homes, capabilities and the session codec of the Claude Code adapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig, claude_args, run_env
from adapters.claude_code.driver import (
    QUIET_ENV,
    PermissionDecision,
    deny_all,
    permission_answer,
    prepare_home,
    turn_end_uuid,
)
from orchestrator.core.errors import ConfigError


def test_one_shot_argv_streams_partial_messages_and_ends_with_the_prompt() -> None:
    config = ClaudeCodeConfig(disallowed_tools=("WebFetch",), allowed_tools=("Bash(git add:*)",))
    args = claude_args(
        config, prompt="-p is a prompt", model="sonnet", resume="abc", max_turns=3,
        blocklist=("sessions_send", "WebFetch"),
    )  # fmt: skip
    assert args[:5] == [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
    ]
    assert args[-2:] == ["--", "-p is a prompt"]
    assert args[args.index("--model") + 1] == "sonnet"
    assert args[args.index("--resume") + 1] == "abc"
    assert args[args.index("--max-turns") + 1] == "3"
    assert args[args.index("--disallowedTools") + 1] == "WebFetch,sessions_send"
    assert args[args.index("--allowedTools") + 1] == "Bash(git add:*)"
    assert "--input-format" not in args


def test_long_lived_argv_reads_stream_json_and_asks_over_stdio() -> None:
    args = claude_args(ClaudeCodeConfig(mode="long-lived"), prompt=None, model=None)
    assert args[args.index("--input-format") + 1] == "stream-json"
    assert args[args.index("--permission-prompt-tool") + 1] == "stdio"
    assert "--" not in args


def test_env_is_allow_listed_quiet_and_isolated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leak")
    monkeypatch.setenv("PATH", "/usr/bin")
    config = ClaudeCodeConfig(base_url="http://127.0.0.1:1", api_key="sk-ant-cfg-000000000")
    env = run_env(
        config,
        home=tmp_path,
        extra={"CLAUDE_CODE_MAX_RETRIES": "0", "HOME": "/root", "DISABLE_TELEMETRY": "0"},
    )
    assert "AWS_SECRET_ACCESS_KEY" not in env and env["PATH"] == "/usr/bin"
    assert env["CLAUDE_CONFIG_DIR"] == str(tmp_path) and env["HOME"] == str(tmp_path / "home")
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:1"
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-cfg-000000000"
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "0"  # a run may lower the retry cap
    for name, value in QUIET_ENV.items():
        assert env[name] == value  # but not turn traffic back on
    assert "sk-ant" not in repr(config)


def test_homes(tmp_path: Path) -> None:
    own, owned = prepare_home(None, tmp_path, "run-1")
    assert owned and own == tmp_path / "run-1" and (own / "home").is_dir()
    assert (own.stat().st_mode & 0o777) == 0o700
    host, owned = prepare_home(str(tmp_path / "identity"), tmp_path, "run-2")
    assert not owned and host == tmp_path / "identity"


def test_permission_answers() -> None:
    assert permission_answer(deny_all("Bash", {}), {}) == {
        "behavior": "deny",
        "message": "denied by the ringleader permission policy",
    }
    allow = PermissionDecision(allow=True, updated_input={"command": "ls"})
    assert permission_answer(allow, {"command": "rm -rf /"}) == {
        "behavior": "allow",
        "updatedInput": {"command": "ls"},
    }


def test_bad_config() -> None:
    with pytest.raises(ConfigError):
        ClaudeCodeConfig(mode="daemon")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ClaudeCodeConfig(max_retries=-1)


def test_capabilities_tell_the_truth() -> None:
    one = ClaudeCodeAdapter(ClaudeCodeConfig(model="claude-sonnet-4-6")).capabilities()
    live = ClaudeCodeAdapter(ClaudeCodeConfig(mode="long-lived")).capabilities()
    assert one.streaming and one.resume and one.mcp and not one.steerable
    assert live.steerable
    assert one.context_window_tokens == 200_000
    assert one.models[0] == "claude-sonnet-4-6" and "sonnet" in one.models
    assert one.native_home is not None and one.native_home.persist
    assert not ClaudeCodeAdapter(ClaudeCodeConfig(partial_messages=False)).capabilities().streaming


async def test_codec_round_trip_remembers_the_origin(tmp_path: Path) -> None:
    adapter = ClaudeCodeAdapter()
    blob = json.dumps({"sessionKey": "k", "sessionId": "s-1", "cwd": str(tmp_path)})
    run = await adapter.session_codec.restore(blob)
    assert (run.session_key, run.run_id) == ("k", "s-1")
    session = adapter.session_of(run)
    assert session.cwd == str(tmp_path) and session.session_id == "s-1"
    assert json.loads(await adapter.session_codec.serialize(run)) == json.loads(blob)


async def test_missing_binary_fails_with_the_install_command(tmp_path: Path) -> None:
    from orchestrator.core.adapter import StartOpts, TaskHandle
    from orchestrator.core.errors import RuntimeNotFoundError

    config = ClaudeCodeConfig(binary=str(tmp_path / "nope"), state_root=tmp_path)
    async with ClaudeCodeAdapter(config) as adapter:
        with pytest.raises(RuntimeNotFoundError, match="ringleader install claude-code"):
            await adapter.start(TaskHandle(), StartOpts(agent_id="a", session_key="k", message="m"))
        health = await adapter.health()
    assert not health.ok


def _entry(kind: str, uid: str, content: Any, message_id: str | None = None, **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if message_id is not None:
        message["id"] = message_id
    return json.dumps({"type": kind, "uuid": uid, "message": message, **extra})


def test_turn_end_uuid_finds_where_each_turn_of_a_run_ends(tmp_path: Path) -> None:
    tool_use: list[dict[str, Any]] = [{"type": "tool_use", "id": "t", "name": "Bash"}]
    result: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]
    lines = [
        json.dumps({"type": "queue-operation"}),
        _entry("user", "p0", "first prompt"),
        json.dumps({"type": "attachment", "uuid": "att"}),
        _entry("assistant", "a1", [{"type": "text", "text": "hi"}], "m1"),
        _entry("assistant", "a1b", tool_use, "m1"),  # the same answer, another block
        _entry("user", "r1", result),
        _entry("assistant", "side", [{"type": "text", "text": "x"}], "ms", isSidechain=True),
        _entry("user", "meta", "caveat", isMeta=True),
        _entry("assistant", "a2", [{"type": "text", "text": "done"}], "m2"),
        _entry("user", "p1", [{"type": "text", "text": "a resumed run's prompt"}]),
        _entry("assistant", "b1", tool_use, "m3"),
        _entry("user", "s1", result),
        "not json",
    ]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    assert [turn_end_uuid(transcript, t) for t in range(4)] == ["p0", "r1", "a2", None]
    assert [turn_end_uuid(transcript, t, 1) for t in range(3)] == ["p1", "s1", None]
    assert turn_end_uuid(transcript, 0, 2) is None
    assert turn_end_uuid(tmp_path / "missing.jsonl", 0) is None


def test_a_fork_resumes_at_a_message_as_a_new_session() -> None:
    args = claude_args(ClaudeCodeConfig(), prompt="p", model=None, resume="s-1", fork_at="u-9")
    assert args[args.index("--resume") :][:5] == [
        "--resume", "s-1", "--resume-session-at", "u-9", "--fork-session",
    ]  # fmt: skip
    plain = claude_args(ClaudeCodeConfig(), prompt="p", model=None, resume="s-1")
    assert "--fork-session" not in plain


def test_an_untrusted_directory_keeps_its_project_settings_out() -> None:
    """``claude -p`` skips Claude Code's workspace trust dialog: in a directory not trusted
    (``ringleader trust``) the project's settings (hooks) and ``.mcp.json`` are not loaded."""
    kept = claude_args(ClaudeCodeConfig(), prompt="p", model=None, project_settings=False)
    assert kept[kept.index("--setting-sources") + 1] == "user" and "--strict-mcp-config" in kept
    assert kept.index("--strict-mcp-config") < kept.index("--")
    trusted = claude_args(ClaudeCodeConfig(), prompt="p", model=None)
    assert "--setting-sources" not in trusted and "--strict-mcp-config" not in trusted
