"""Drift alarms: a recorded Claude Code transcript replayed by the fake CLI with an injected
unknown frame type is recorded in the event log and reported by ``ringleader doctor``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import trio

from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig
from contract.fake_cli import fake_cli_argv
from orchestrator.core import RuntimeRegistry, Status
from orchestrator.core.drift import drift_report, unknown_frame_type
from orchestrator.engine import EventLog, Runner, TaskSpec
from orchestrator.engine.feed import RecordingSink

FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "2.1.330" / "text.jsonl"
)


def test_unknown_frame_type_reads_the_adapters_status_detail() -> None:
    assert unknown_frame_type("ignored unknown frame type 'brand_new'") == "brand_new"
    assert unknown_frame_type("ignored unknown frame type 'system/whatever'") == "system/whatever"
    assert unknown_frame_type("rate limit rejected resets at 1") is None
    assert unknown_frame_type(None) is None


async def test_injected_unknown_frame_is_logged_and_reported_by_doctor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    injected = json.dumps({"type": "brand_new_frame", "payload": {"x": 1}})
    replay = [*lines[:3], injected, *lines[3:]]
    config = ClaudeCodeConfig(
        launcher=lambda args: fake_cli_argv(replay), state_root=tmp_path / "cc"
    )
    registry = RuntimeRegistry()
    registry.register_factory("claude-code", lambda: ClaudeCodeAdapter(config))
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    async with EventLog.open(state / "events.db") as log:
        runner = Runner(registry, sink=RecordingSink(log), state_dir=state, event_log=log)
        with trio.fail_after(60):
            outcome = await runner.run_task("claude-code", TaskSpec(task_id="d1", title="hi"))
        assert outcome.status == "success"  # an unknown frame never breaks the run
        assert outcome.runs[0].outcome.unknown_frames == ("brand_new_frame",)
        rows = await log.runs()
        events = [e for row in rows for e in await log.read(row.run_key)]
    assert any(
        isinstance(e, Status) and unknown_frame_type(e.detail) == "brand_new_frame" for e in events
    )
    [finding] = drift_report(rows)
    assert finding.runtime_id == "claude-code" and finding.frame_types == {"brand_new_frame": 1}

    from orchestrator.cli.doctor import doctor
    from orchestrator.core.config import load_config
    from orchestrator.core.registry import discover_runtimes

    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(state))
    specs = discover_runtimes()
    out = io.StringIO()
    code = await doctor(specs, load_config(cwd=tmp_path), as_json=False, out=out)
    assert code == 1
    report = out.getvalue()
    assert "drift: claude-code" in report
    assert "sent 1 unknown frame type (brand_new_frame ×1) in 1 run since" in report
    # this registry cannot locate the executable: no version recorded, the installed one shown
    assert "runs: claude-code: 1 run with no recorded version" in report


async def test_doctor_reports_each_runs_version_and_frames_missing_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runtime upgrade that drops a field the adapter reads (the result's USD) is drift too,
    reported against the version the run used."""
    from orchestrator.cli.doctor import doctor
    from orchestrator.core.config import load_config
    from orchestrator.core.registry import Installed, RuntimeSpec

    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    result = json.loads(lines[-1])
    assert result["type"] == "result"
    del result["total_cost_usd"]
    replay = [*lines[:-1], json.dumps(result)]
    config = ClaudeCodeConfig(
        launcher=lambda args: fake_cli_argv(replay), state_root=tmp_path / "cc"
    )
    spec = RuntimeSpec(
        id="claude-code",
        factory=lambda _cfg: ClaudeCodeAdapter(config),
        locate=lambda _cfg: Installed("/opt/claude", "2.1.999"),
    )
    registry = RuntimeRegistry.from_specs([spec])
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    async with EventLog.open(state / "events.db") as log:
        runner = Runner(registry, sink=RecordingSink(log), state_dir=state, event_log=log)
        with trio.fail_after(60):
            outcome = await runner.run_task("claude-code", TaskSpec(task_id="d2", title="hi"))
        assert outcome.status == "success"  # a missing field never breaks the run
        assert outcome.runs[0].outcome.missing_fields == (("result", ("total_cost_usd",)),)
        (row,) = await log.runs()
    assert row.outcome["runtimeVersion"] == "2.1.999"
    assert row.outcome["drift"] == {"missingFields": {"result": ["total_cost_usd"]}}

    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(state))
    out = io.StringIO()
    assert await doctor([spec], load_config(cwd=tmp_path), as_json=False, out=out) == 1
    report = out.getvalue()
    assert "runs: claude-code: 1 run on 2.1.999" in report
    assert (
        "drift: claude-code 2.1.999 sent frames missing expected fields "
        "(result without total_cost_usd ×1) in 1 run since"
    ) in report
    out = io.StringIO()
    assert await doctor([spec], load_config(cwd=tmp_path), as_json=True, out=out) == 1
    sound, *records, sandbox = (json.loads(line) for line in out.getvalue().splitlines())
    finding, versions = records
    assert sound["sound"] is True and sound["problems"] == []
    assert "sandbox" in sandbox  # whether bubblewrap works here, last
    assert finding["version"] == "2.1.999" and finding["installedVersion"] == "2.1.999"
    assert finding["missingFields"] == {"result without total_cost_usd": 1}
    assert versions == {"runtimeId": "claude-code", "runsByVersion": {"2.1.999": 1}}


async def test_doctor_lists_open_breakers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.cli.doctor import doctor
    from orchestrator.core.config import load_config
    from orchestrator.engine.governance import BreakerBoard, BreakerPolicy

    state = tmp_path / "state"
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(state))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    (tmp_path / "ringleader.toml").write_text(
        "[breaker]\nfailures = 1\ncooldown_s = 600\n", encoding="utf-8"
    )
    board = BreakerBoard(BreakerPolicy(1, 600), path=state / "breakers.json")
    board.record("codex", ok=False, reason="exit 1")
    out = io.StringIO()
    assert await doctor([], load_config(cwd=tmp_path), as_json=False, out=out) == 1
    assert (
        "breaker open: codex: circuit breaker open after 1 failed tasks in a row (last: exit 1)"
        in out.getvalue()
    )


async def test_doctor_without_drift_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.cli.doctor import doctor
    from orchestrator.core.config import load_config

    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "empty"))
    out = io.StringIO()
    assert await doctor([], load_config(cwd=tmp_path), as_json=False, out=out) == 0
    assert "nothing to check" in out.getvalue()
