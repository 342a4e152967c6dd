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
from orchestrator import EventLog, Runner, RuntimeRegistry, Status, TaskSpec
from orchestrator.feed import RecordingSink
from orchestrator.governance.drift import drift_report, unknown_frame_type

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

    from orchestrator._doctor import doctor
    from orchestrator.config import load_config
    from orchestrator.registry import discover_runtimes

    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(state))
    specs = discover_runtimes()
    out = io.StringIO()
    code = await doctor(specs, load_config(cwd=tmp_path), as_json=False, out=out)
    assert code == 1
    report = out.getvalue()
    assert "drift: claude-code" in report
    assert "sent 1 unknown frame type in 1 run since" in report
    assert "brand_new_frame ×1" in report


async def test_doctor_without_drift_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator._doctor import doctor
    from orchestrator.config import load_config

    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "empty"))
    out = io.StringIO()
    assert await doctor([], load_config(cwd=tmp_path), as_json=False, out=out) == 0
    assert "nothing to check" in out.getvalue()
