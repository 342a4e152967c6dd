"""The `ringleader` command, through a real subprocess."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx2
import pytest

from orchestrator.core import Done, TextDelta, event_from_json


def ringleader(*args: str, state: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["RINGLEADER_STATE_DIR"] = str(state or tempfile.mkdtemp(prefix="ringleader-cli-"))
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_demo_runs_the_native_runtime_against_the_model_server() -> None:
    result = ringleader("demo", "--runtime", "native")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ringleader demo: a scripted model server on 127.0.0.1")
    assert "model=anthropic:" in result.stdout  # the native loop through the Anthropic SDK
    assert "→ list_files" in result.stdout
    assert "✓ list_files" in result.stdout
    assert "■ done: success" in result.stdout
    assert "est." in result.stdout  # a list-price estimate, marked so


def test_demo_json_is_wire_events() -> None:
    result = ringleader("demo", "--runtime", "native", "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("ringleader demo: a scripted model server")  # not in the JSON
    events = [event_from_json(line) for line in result.stdout.splitlines()]
    kinds = [e.kind for e in events]
    assert kinds.count("done") == 1
    assert kinds[-1] == "done"
    assert "tool-call" in kinds
    assert "tool-result" in kinds


def test_demo_without_the_clis_runs_native_alone_and_says_why(tmp_path: Path) -> None:
    env = dict(
        os.environ, RINGLEADER_STATE_DIR=str(tmp_path), RINGLEADER_RUNTIMES_DIR=str(tmp_path)
    )
    env.pop("NO_COLOR", None)
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ringleader demo:")
    for runtime in ("claude-code", "codex"):
        (why,) = [line for line in lines if line.startswith(f"{runtime} is not installed")]
        assert why.endswith(f"the demo runs without {runtime}")
        assert f"ringleader install {runtime}" in why
    assert result.stdout.count("■ done: success") == 1
    assert "[native] ✓ list_files" in result.stdout


def test_run_json_prints_wire_events_ending_in_one_done() -> None:
    result = ringleader("run", "--runtime", "scripted", "--json", "say hello")
    assert result.returncode == 0, result.stderr
    events = [event_from_json(line) for line in result.stdout.splitlines()]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert isinstance(events[-1], Done)
    assert events[-1].reason == "success"
    assert '"runId"' in result.stdout


def test_each_scripted_run_has_its_own_run_id(tmp_path: Path) -> None:
    ids = set()
    for _ in range(2):
        result = ringleader("run", "--runtime", "scripted", "--json", "hi", state=tmp_path)
        assert result.returncode == 0, result.stderr
        ids |= {event_from_json(line).run_id for line in result.stdout.splitlines()}
    assert len(ids) == 2


def test_run_acp_drives_the_agent_command_given_on_the_command_line(tmp_path: Path) -> None:
    # the agent is ringleader itself serving the scripted runtime over ACP: both directions
    agent = shlex.join([sys.executable, "-m", "orchestrator.cli", "acp", "--runtime", "scripted"])
    result = ringleader(
        "run", "--runtime", "acp", "--acp-command", agent, "--json", "hi", state=tmp_path
    )
    assert result.returncode == 0, result.stderr
    events = [event_from_json(line) for line in result.stdout.splitlines()]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Hello from the scripted runtime."
    assert isinstance(events[-1], Done) and events[-1].reason == "success"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runtime", "scripted", "--acp-command", "x"], "add --runtime acp"),
        (["--runtime", "acp", "--acp-command", "'x"], "--acp-command: No closing quotation"),
        (["--runtime", "acp", "--acp-command", " "], "--acp-command: the command is empty"),
    ],
)
def test_a_bad_acp_command_is_one_line(args: list[str], message: str) -> None:
    result = ringleader("run", *args, "hi")
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_runtime_is_a_clear_error() -> None:
    result = ringleader("run", "--runtime", "no-such-runtime", "x")
    assert result.returncode == 2
    assert "unknown runtime 'no-such-runtime'" in result.stderr
    assert "scripted" in result.stderr


def test_bad_flag_is_a_usage_error() -> None:
    result = ringleader("run", "--bogus")
    assert result.returncode == 2
    assert "usage:" in result.stderr


def test_runtimes_lists_each_runtime_with_its_plan() -> None:
    result = ringleader("runtimes")
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split()[:2] == ["runtime", "health"]
    assert any(row.split()[0] == "scripted" and row.split()[1] == "ok" for row in rows)


def test_runs_are_logged_and_replayable(tmp_path: Path) -> None:
    first = ringleader("run", "--runtime", "scripted", "--json", "hi", state=tmp_path)
    assert first.returncode == 0, first.stderr
    listing = ringleader("replay", "--list", "--json", state=tmp_path)
    (line,) = listing.stdout.splitlines()
    run_key = json.loads(line)["runKey"]
    assert run_key.startswith("runtime:scripted:task:")
    replay = ringleader("replay", run_key, "--json", state=tmp_path)
    assert replay.stdout == first.stdout  # the log holds exactly what was shown live
    missing = ringleader("replay", "nope", state=tmp_path)
    assert missing.returncode == 2
    assert "no events for run 'nope'" in missing.stderr


def test_serve_streams_runs_from_other_processes(tmp_path: Path) -> None:
    env = dict(os.environ, RINGLEADER_STATE_DIR=str(tmp_path))
    with subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as server:
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            with httpx2.Client(timeout=30) as http, http.stream("GET", url) as response:
                assert (
                    ringleader("run", "--runtime", "scripted", "hi", state=tmp_path).returncode == 0
                )
                kinds: list[str] = []
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        kinds.append(line[7:])
                        if kinds[-1] == "done":
                            break
            assert kinds[0] == "status"
            assert kinds.count("done") == 1
        finally:
            server.send_signal(signal.SIGINT)
            server.communicate(timeout=10)


def test_serve_off_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    result = ringleader("serve", "--host", "0.0.0.0", "--token", "", state=tmp_path)
    assert result.returncode == 2
    assert "requires a token" in result.stderr
