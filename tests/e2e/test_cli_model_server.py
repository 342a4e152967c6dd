"""``ringleader run --model-server --json`` through a real subprocess, for every runtime that can be
pointed at the built-in scripted model server: the built-in script gives a real tool turn (a tool
the runtime offers, run in the working directory; its result is not an error) and a text answer.

Claude Code and Codex are the real CLIs installed by ``scripts/install-runtimes``; if one is
missing its test FAILS with the install command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters._runtimes import install_hint, runtime_binary
from orchestrator.errors import RuntimeNotFoundError
from orchestrator.events import Done, RuntimeEvent, TextDelta, ToolCall, ToolResult, event_from_json

pytestmark = pytest.mark.e2e

TOOL = {"native": "list_files", "claude-code": "Bash", "codex": "exec_command"}
ANSWER = "Done: this answer comes from ringleader's built-in scripted model server."


def installed(runtime: str) -> None:
    if runtime == "native":
        return
    try:
        runtime_binary(runtime)
    except RuntimeNotFoundError as exc:
        pytest.fail(f"{runtime} is not installed: {install_hint(runtime)} ({exc})")


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RINGLEADER_") or k == "RINGLEADER_RUNTIMES_DIR"
    }
    return env | {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }


def ringleader(
    *args: str, cwd: Path, env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def events_of(stdout: str) -> list[RuntimeEvent]:
    return [event_from_json(line) for line in stdout.splitlines() if line.strip()]


def check_tool_and_text_turns(runtime: str, events: list[RuntimeEvent]) -> None:
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success", done
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == [TOOL[runtime]]
    assert [r.tool_call_id for r in results] == [calls[0].tool_call_id]
    assert not results[0].is_error, results[0].output
    assert "marker.txt" in str(results[0].output)  # the tool really ran in the working directory
    text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == "assistant")
    assert text.endswith(ANSWER)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "marker.txt").write_text("hello\n")
    return ws


@pytest.mark.parametrize("runtime", ["native", "claude-code", "codex"])
def test_run_model_server_json(runtime: str, workspace: Path, tmp_path: Path) -> None:
    installed(runtime)
    result = ringleader(
        "run", "--runtime", runtime, "--model-server", "--json", "look around",
        cwd=workspace, env=cli_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    check_tool_and_text_turns(runtime, events_of(result.stdout))


def test_model_server_script_file_and_bare_prompt(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"conversations": [{"name": "c", "turns": [{"text": "from my script"}]}]}')
    env = cli_env(tmp_path)
    result = ringleader(
        "run", "--runtime", "native", "--model-server", str(script), "--json", "hi",
        cwd=workspace, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = events_of(result.stdout)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "from my script"
    # human output, and `--model-server PROMPT` (no script file): the prompt, built-in script
    human = ringleader("run", "--runtime", "native", "--model-server", "hi", cwd=workspace, env=env)
    assert human.returncode == 0, human.stderr
    assert ANSWER in human.stdout and "✓ list_files" in human.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"conversations": [{"turns": []}]}')
    failed = ringleader(
        "run", "--runtime", "native", "--model-server", str(bad), "hi", cwd=workspace, env=env
    )
    assert failed.returncode == 2
    assert failed.stderr.startswith(f"ringleader: script {bad}: not a model-server script:")
    missing = ringleader(
        "run", "--runtime", "scripted", "--model-server", "hi", cwd=workspace, env=env
    )
    assert missing.returncode == 2
    assert "cannot be pointed at the model server" in missing.stderr
