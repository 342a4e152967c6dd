"""Rotation made visible: what ``record_rotation`` is told, the event log's links between the
sessions, per-task watermark and successor runtime, the CLI's rotation line, ``replay``'s chain
and the ``--watermark`` / ``--rotate-to`` flags (the scripted adapter; the real runtimes are in
``tests/e2e/test_rotation.py``)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import attrs
import pytest
from rich.console import Console

from adapters import ScriptedAdapter
from orchestrator.cli.commands import replay, rotation_chain
from orchestrator.cli.live import Lane, PlainView
from orchestrator.cli.main import main
from orchestrator.core import RuntimeRegistry
from orchestrator.engine import (
    EventLog,
    RotationRecord,
    Runner,
    TaskSpec,
    build_rotation_handoff_note,
)
from orchestrator.engine.actor import EventSink
from orchestrator.engine.feed import RecordingSink

from .test_runner import Scripts, caps, make_runner, registry_with, result, usage

TASK = TaskSpec(task_id="t9", title="Fix the bug")


def runner_with(registry: RuntimeRegistry, tmp_path: Path, sink: EventSink, **kw: Any) -> Runner:
    return attrs.evolve(make_runner(registry, tmp_path, **kw), sink=sink)


def full_then_done() -> Scripts:
    return Scripts(
        [
            {"type": "text", "text": "halfway there"},
            usage(950, 50, 0.01),
            result(False, errorMessage="context full", errorCode="context_length"),
        ],
        [{"type": "text", "text": "finished"}, usage(100, 20, 0.02), result(summary="fixed")],
    )


async def test_record_rotation_gets_the_note_the_watermark_and_both_sessions(
    tmp_path: Path,
) -> None:
    scripts = full_then_done()
    told: list[RotationRecord] = []
    runner = make_runner(
        registry_with(scripts, caps(context_window_tokens=1000)),
        tmp_path,
        record_rotation=told.append,
    )
    outcome = await runner.run_task("scripted", TASK)
    assert outcome.status == "success" and outcome.rotations == 1
    (record,) = told
    assert record.note == build_rotation_handoff_note(record.handoff)
    assert record.note_bytes == len(record.note.encode()) > 0
    assert record.note in scripts.starts[1].message  # the successor started with it
    assert record.handoff.tokens_used == 1000 and record.handoff.context_window_tokens == 1000
    assert record.handoff.watermark == 1.0
    assert record.predecessor is not None
    assert record.predecessor.session_key == "runtime:scripted:task:t9"
    assert record.successor.session_key == "runtime:scripted:task:t9:r1"


async def test_the_event_log_links_the_sessions_and_replay_shows_the_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    scripts = full_then_done()
    async with EventLog.open(state / "events.db") as log:
        runner = runner_with(
            registry_with(scripts, caps(context_window_tokens=1000)),
            tmp_path,
            RecordingSink(log),
            event_log=log,
        )
        outcome = await runner.run_task("scripted", TASK)
        await log.flush()
        runs = await log.runs()
    first, second = runs
    assert first.outcome is not None and second.outcome is not None
    assert first.run_key == outcome.runs[0].outcome.run_key
    assert "rotatedFrom" not in first.outcome
    assert second.outcome["rotatedFrom"] == first.run_key
    assert second.outcome["rotation"] == 1
    assert second.outcome["rotationReason"] == "context_watermark"
    assert second.outcome["tokensUsed"] == 1000
    assert second.outcome["contextWindowTokens"] == 1000
    note = scripts.starts[1].message
    assert second.outcome["handoffNoteBytes"] == len(
        note[note.index("Session handoff") :].split("\n\nToday:")[0].encode()
    )
    assert rotation_chain(runs, first.run_key) == rotation_chain(runs, second.run_key) == runs
    assert rotation_chain(runs, "nope") == []
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(state))
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    assert await replay(second.run_key, as_json=False, out=out) == 0
    lines = out.getvalue().splitlines()
    assert "[scripted] ■ done: error" in lines
    rotation = next(i for i, line in enumerate(lines) if "↻ rotation #1" in line)
    assert lines[rotation] == (
        "[scripted] ↻ rotation #1 (context_watermark at 100% of 1,000 tokens) → new scripted "
        f"session runtime:scripted:task:t9:r1, handoff note {second.outcome['handoffNoteBytes']} "
        "bytes"
    )
    assert lines.index("[scripted] ■ done: error") < rotation
    assert lines[-1] == "[scripted] ■ done: success after 1 rotation"
    as_json = io.StringIO()
    assert await replay("last", as_json=True, out=as_json) == 0
    keys = [line.split('"runKey":"')[1].split('"')[0] for line in as_json.getvalue().splitlines()]
    assert keys[0] == first.run_key and keys[-1] == second.run_key  # both sessions, in order


async def test_a_task_sets_its_own_watermark_and_successor_runtime(tmp_path: Path) -> None:
    def half_full() -> Scripts:
        return Scripts([usage(550, 50, None), result(False, errorMessage="x", errorCode="e")])

    below = await make_runner(
        registry_with(half_full(), caps(context_window_tokens=1000)), tmp_path
    ).run_task("scripted", TASK)
    assert below.rotations == 0  # 60% is under the default 85%
    second = Scripts([result(summary="done by b")])
    registry = registry_with(half_full(), caps(context_window_tokens=1000), "a")
    registry.register_factory("b", lambda: ScriptedAdapter(second, capabilities=caps()))
    task = attrs.evolve(TASK, watermark=0.6, rotate_to="b")
    outcome = await make_runner(registry, tmp_path).run_task("a", task)
    assert outcome.rotations == 1 and [r.runtime_id for r in outcome.runs] == ["a", "b"]
    # the runner's own default successor
    registry = registry_with(half_full(), caps(context_window_tokens=1000), "a")
    registry.register_factory("b", lambda: ScriptedAdapter(second, capabilities=caps()))
    runner = make_runner(registry, tmp_path, rotate_to="b")
    outcome = await runner.run_task("a", attrs.evolve(TASK, watermark=0.6))
    assert [r.runtime_id for r in outcome.runs] == ["a", "b"]


async def test_the_lane_shows_the_rotation_and_sums_usage_and_cost(tmp_path: Path) -> None:
    out = io.StringIO()
    view = PlainView(console=Console(file=out, no_color=True, width=300, highlight=False))
    lane: Lane = view.add_lane("cc", "scripted", "runtime:scripted:task:t9")
    runner = runner_with(
        registry_with(full_then_done(), caps(context_window_tokens=1000)),
        tmp_path,
        view,
        record_rotation=view.rotated,
    )
    await runner.run_task("scripted", TASK)
    lines = out.getvalue().splitlines()
    assert any(line.startswith("[cc] ↻ rotation #1 (context_watermark at 100%") for line in lines)
    assert lines[-1] == "[cc] ■ done: success after 1 rotation"
    assert lane.rotations == 1 and lane.outcome == "success"
    assert (lane.usage.input_tokens, lane.usage.output_tokens) == (1050, 70)
    assert lane.cost_usd == pytest.approx(0.03)


@pytest.mark.parametrize(
    ("flag", "message"),
    [("0", "not a percentage"), ("101", "not a percentage"), ("x", "not a number")],
)
def test_watermark_flag_is_a_percentage(
    flag: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--runtime", "scripted", "--watermark", flag, "hi"])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_rotate_to_an_unknown_runtime_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--runtime", "scripted", "--rotate-to", "nope", "hi"])
    assert code == 2
    assert "unknown runtime 'nope'" in capsys.readouterr().err


def test_watermark_and_rotate_to_from_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.cli.cmd_run import _rotation  # pyright: ignore[reportPrivateUsage]
    from orchestrator.cli.main import _parser  # pyright: ignore[reportPrivateUsage]
    from orchestrator.core.config import load_config

    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.scripted]\nwatermark = 70\nrotate_to = "native"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    config = load_config(None, runtime_ids=["scripted", "native"])
    args = _parser().parse_args(["run", "--runtime", "scripted", "hi"])
    assert _rotation(args, config, ["scripted", "native"]) == {
        "scripted": ("native", pytest.approx(0.7)),
        "native": (None, None),
    }
    flags = _parser().parse_args(
        ["run", "--runtime", "scripted", "--watermark", "50", "--rotate-to", "codex", "hi"]
    )
    assert _rotation(flags, config, ["scripted"]) == {"scripted": ("codex", 0.5)}
    monkeypatch.setenv("RINGLEADER_SCRIPTED_WATERMARK", "0")
    with pytest.raises(Exception, match="watermark"):
        load_config(None, runtime_ids=["scripted"])


async def test_nothing_rotates_without_a_window(tmp_path: Path) -> None:
    scripts = Scripts([usage(10**9, 1, None), result(False, errorMessage="x", errorCode="e")])
    outcome = await make_runner(registry_with(scripts, caps()), tmp_path).run_task(
        "scripted", attrs.evolve(TASK, watermark=0.01)
    )
    assert outcome.rotations == 0
