"""The real Claude Code and Codex CLIs complete a text turn and a tool turn against the scripted
model server (issue: the model server is accepted by the real runtimes), offline."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters._runtimes import runtime_binary
from orchestrator.model_server import ModelServer, serve_model_server

pytestmark = pytest.mark.e2e

SCRIPT: dict[str, Any] = {
    "conversations": [
        {
            "name": "claude-text",
            "marker": "[[e2e:claude-text]]",
            "turns": [{"text": "FINAL: hello from the scripted server"}],
        },
        {
            "name": "claude-tool",
            "marker": "[[e2e:claude-tool]]",
            "turns": [
                {
                    "text": "Running it.",
                    "tool_calls": [
                        {
                            "name": "Bash",
                            "input": {"command": "echo hi-from-tool && pwd", "description": "echo"},
                        }
                    ],
                },
                {"text": "TOOL_RESULT_SEEN"},
            ],
        },
        {
            "name": "codex-text",
            "marker": "[[e2e:codex-text]]",
            "turns": [{"text": "FINAL: hello from the scripted server"}],
        },
        {
            "name": "codex-tool",
            "marker": "[[e2e:codex-tool]]",
            "turns": [
                {
                    "text": "Running it.",
                    "tool_calls": [{"name": "exec_command", "input": {"cmd": "echo hi-from-tool"}}],
                },
                {"text": "TOOL_RESULT_SEEN"},
            ],
        },
    ]
}


def base_env(state: Path) -> dict[str, str]:
    home = state / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }


async def run_cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    with trio.fail_after(120):
        result = await trio.run_process(
            argv,
            env=env,
            cwd=str(cwd),
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def claude(
    server: ModelServer, prompt: str, tmp_path: Path
) -> tuple[int, list[dict[str, Any]], str]:
    state = tmp_path / "claude-state"
    state.mkdir()
    env = base_env(state) | {
        "CLAUDE_CONFIG_DIR": str(state),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "sk-ant-e2e-0000000000",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    argv = [
        str(runtime_binary("claude-code")),
        "-p",
        prompt,
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "claude-sonnet-4-6",
    ]
    code, out, err = await run_cli(argv, env, tmp_path)
    return code, [json.loads(line) for line in out.splitlines() if line.strip()], err


async def codex(
    server: ModelServer, prompt: str, tmp_path: Path
) -> tuple[int, list[dict[str, Any]], str]:
    state = tmp_path / "codex-state"
    state.mkdir()
    env = base_env(state) | {"CODEX_HOME": str(state), "FAKE_API_KEY": "sk-e2e-0000000000"}
    # as the adapter does: Codex will not create its sandbox helper link under the temporary
    # directory, and with bubblewrap installed its shell needs it on PATH
    helper = state / "bin"
    helper.mkdir()
    (helper / "codex-linux-sandbox").symlink_to(runtime_binary("codex"))
    env["PATH"] = f"{helper}:{env.get('PATH', '')}"
    argv = [
        str(runtime_binary("codex")), "exec", "--json", "--skip-git-repo-check",
        "-c", "model_provider=fake", "-c", "model_providers.fake.name=fake",
        "-c", f"model_providers.fake.base_url={server.base_url}",
        "-c", "model_providers.fake.wire_api=responses", "-c", "model_providers.fake.env_key=FAKE_API_KEY",
        "-c", "model_providers.fake.request_max_retries=0", "-c", "model_providers.fake.stream_max_retries=0",
        "-m", "gpt-5.5", "--disable", "plugins", "-c", "analytics.enabled=false", prompt,
    ]  # fmt: skip
    code, out, err = await run_cli(argv, env, tmp_path)
    return (
        code,
        [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")],
        err,
    )


async def test_claude_code_text_turn(tmp_path: Path) -> None:
    async with serve_model_server(SCRIPT) as server:
        code, lines, err = await claude(server, "[[e2e:claude-text]] say hello", tmp_path)
    assert code == 0, err
    result = lines[-1]
    assert result["type"] == "result"
    assert result["is_error"] is False
    assert result["result"] == "FINAL: hello from the scripted server"
    requests = [r for r in server.requests if r.conversation == "claude-text"]
    assert len(requests) == 1
    assert requests[0].path == "/v1/messages"
    assert requests[0].user_agent.startswith("claude-cli/")
    assert "sk-ant-e2e" not in json.dumps(requests[0].headers)


async def test_claude_code_tool_turn(tmp_path: Path) -> None:
    async with serve_model_server(SCRIPT) as server:
        code, lines, err = await claude(server, "[[e2e:claude-tool]] run echo", tmp_path)
    assert code == 0, err
    assert lines[-1]["result"] == "TOOL_RESULT_SEEN"
    requests = [r for r in server.requests if r.conversation == "claude-tool"]
    assert len(requests) == 2
    tool_results = [
        block
        for message in requests[1].body["messages"]
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert "hi-from-tool" in json.dumps(tool_results)
    assert server.prefix_reuse("claude-tool")[0] > 1000  # the second request replays the first


async def test_codex_text_turn(tmp_path: Path) -> None:
    async with serve_model_server(SCRIPT) as server:
        code, lines, err = await codex(server, "[[e2e:codex-text]] say hello", tmp_path)
    assert code == 0, err
    messages = [
        line["item"]["text"]
        for line in lines
        if line.get("type") == "item.completed" and line["item"].get("type") == "agent_message"
    ]
    assert messages == ["FINAL: hello from the scripted server"]
    assert any(line.get("type") == "turn.completed" for line in lines)
    requests = [r for r in server.requests if r.conversation == "codex-text"]
    assert requests[0].path == "/v1/responses"
    assert requests[0].user_agent.startswith("codex_exec/")


async def test_codex_tool_turn(tmp_path: Path) -> None:
    async with serve_model_server(SCRIPT) as server:
        code, lines, err = await codex(server, "[[e2e:codex-tool]] run echo", tmp_path)
    assert code == 0, err
    commands = [
        line["item"]
        for line in lines
        if line.get("type") == "item.completed" and line["item"].get("type") == "command_execution"
    ]
    assert commands
    assert "hi-from-tool" in commands[0].get("aggregated_output", "")
    requests = [r for r in server.requests if r.conversation == "codex-tool"]
    assert len(requests) == 2
    outputs = [i for i in requests[1].body["input"] if i.get("type") == "function_call_output"]
    assert "hi-from-tool" in json.dumps(outputs)
