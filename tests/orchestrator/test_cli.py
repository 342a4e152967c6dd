"""The `ringleader` command, through a real subprocess."""

from __future__ import annotations

import subprocess
import sys

from orchestrator import Done, event_from_json


def ringleader(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_demo_runs_the_native_runtime_against_the_model_server() -> None:
    result = ringleader("demo")
    assert result.returncode == 0, result.stderr
    assert "model=anthropic:" in result.stdout  # the native loop through the Anthropic SDK
    assert "→ list_files" in result.stdout
    assert "✓ list_files" in result.stdout
    assert "■ done: success" in result.stdout


def test_demo_json_is_wire_events() -> None:
    result = ringleader("demo", "--json")
    assert result.returncode == 0, result.stderr
    events = [event_from_json(line) for line in result.stdout.splitlines()]
    kinds = [e.kind for e in events]
    assert kinds.count("done") == 1
    assert kinds[-1] == "done"
    assert "tool-call" in kinds
    assert "tool-result" in kinds


def test_run_json_prints_wire_events_ending_in_one_done() -> None:
    result = ringleader("run", "--runtime", "scripted", "--json", "say hello")
    assert result.returncode == 0, result.stderr
    events = [event_from_json(line) for line in result.stdout.splitlines()]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert isinstance(events[-1], Done)
    assert events[-1].reason == "success"
    assert '"runId"' in result.stdout


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
