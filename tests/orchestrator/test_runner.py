"""The runner, actor and supervisor end to end with the scripted adapter."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from adapters import ScriptedAdapter
from adapters._base import closed_stream
from orchestrator.core import (
    Capabilities,
    CapabilityError,
    ConfigError,
    Done,
    MailboxClosedError,
    NativeHomeClaim,
    RunHandle,
    RuntimeEvent,
    RuntimeRegistry,
    StartOpts,
    TaskHandle,
)
from orchestrator.core.queue import QueueEventStream
from orchestrator.engine import RestartPolicy, RunActor, Runner, TaskSpec
from orchestrator.engine.eventlog import EventLog

Frames = list[dict[str, Any]]


class ListSink:
    def __init__(self) -> None:
        self.events: dict[str, list[RuntimeEvent]] = {}
        self.calls = 0

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        self.calls += 1
        self.events.setdefault(run_key, []).extend(events)
        await trio.lowlevel.checkpoint()


def caps(**extra: Any) -> Capabilities:
    return Capabilities(
        streaming=True, mcp=False, worktrees=False, resume=True, tool_approval=False, **extra
    )


def result(ok: bool = True, **extra: Any) -> dict[str, Any]:
    return {"type": "result", "ok": ok, **extra}


def usage(tokens_in: int, tokens_out: int, usd: float | None) -> dict[str, Any]:
    return {"type": "usage", "inputTokens": tokens_in, "outputTokens": tokens_out, "costUsd": usd}


class Scripts:
    """Hands out one script per start, recording the start options."""

    def __init__(self, *scripts: Frames) -> None:
        self.scripts = list(scripts)
        self.starts: list[StartOpts] = []

    def __call__(self, opts: StartOpts) -> Sequence[dict[str, Any]]:
        self.starts.append(opts)
        return self.scripts.pop(0) if len(self.scripts) > 1 else self.scripts[0]


def registry_with(
    scripts: Scripts, capabilities: Capabilities, runtime_id: str = "scripted"
) -> RuntimeRegistry:
    registry = RuntimeRegistry()
    registry.register_factory(
        runtime_id, lambda: ScriptedAdapter(scripts, capabilities=capabilities)
    )
    return registry


def make_runner(
    registry: RuntimeRegistry, tmp_path: Path, sink: ListSink | None = None, **kw: Any
) -> Runner:
    return Runner(
        registry,
        sink=sink or ListSink(),
        state_dir=tmp_path / "state",
        today=lambda: dt.date(2026, 11, 22),
        restart=RestartPolicy(max_restarts=2, initial_s=1.0),
        **kw,
    )


TASK = TaskSpec(task_id="t1", title="Fix the bug", description="It crashes on empty input.")


async def test_watermark_crossing_rotates_with_a_handoff_note(tmp_path: Path) -> None:
    scripts = Scripts(
        [
            {"type": "text", "text": "halfway there"},
            usage(900, 50, 0.01),
            result(False, errorMessage="context full", errorCode="context_length"),
        ],
        [{"type": "text", "text": "finished"}, usage(100, 20, 0.02), result(summary="fixed")],
    )
    sink = ListSink()
    runner = make_runner(registry_with(scripts, caps(context_window_tokens=1000)), tmp_path, sink)
    outcome = await runner.run_task("scripted", TASK)
    assert outcome.status == "success"
    assert outcome.rotations == 1
    assert [r.session_key for r in outcome.runs] == [
        "runtime:scripted:task:t1",
        "runtime:scripted:task:t1:r1",
    ]
    assert outcome.runs[0].outcome.reason == "error"
    second = scripts.starts[1].message
    assert "Session handoff (rotation)" in second
    assert "- Reason: context_watermark" in second
    assert "- Last progress: halfway there" in second
    assert second.startswith("# Task: Fix the bug\n\nIt crashes on empty input.")
    assert "Today: 2026-11-22" in second
    assert outcome.cost_usd == pytest.approx(0.03)
    assert outcome.cost_complete
    assert outcome.usage.input_tokens == 1000 and outcome.usage.output_tokens == 70
    assert outcome.runs[0].serialized_session is not None  # the codec blob travels with the lineage
    for events in sink.events.values():
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert sum(isinstance(e, Done) for e in events) == 1 and isinstance(events[-1], Done)


async def test_below_the_watermark_a_failure_does_not_rotate(tmp_path: Path) -> None:
    scripts = Scripts(
        [usage(100, 10, None), result(False, errorMessage="bad input", errorCode="invalid_request")]
    )
    runner = make_runner(registry_with(scripts, caps(context_window_tokens=1000)), tmp_path)
    outcome = await runner.run_task("scripted", TASK)
    assert outcome.status == "error" and outcome.rotations == 0
    assert outcome.error_message == "bad input"
    assert len(scripts.starts) == 1  # permanent: not retried either


async def test_max_turns_rotates_and_the_rotation_cap_holds(tmp_path: Path) -> None:
    scripts = Scripts([usage(10, 1, None), result(False, maxTurns=True, summary="step")])
    runner = make_runner(registry_with(scripts, caps()), tmp_path)
    outcome = await runner.run_task("scripted", TASK, max_rotations=2)
    assert outcome.status == "max_turns"
    assert outcome.rotations == 2
    assert len(outcome.runs) == 3
    assert "- Reason: max_turns" in scripts.starts[1].message
    assert "- Rotation: #2" in scripts.starts[2].message
    assert outcome.cost_usd is None and not outcome.cost_complete


async def test_rotation_onto_another_runtime(tmp_path: Path) -> None:
    first = Scripts([result(False, maxTurns=True, summary="handing over")])
    second = Scripts([{"type": "text", "text": "taken over"}, result(summary="done by b")])
    registry = RuntimeRegistry()
    registry.register_factory("a", lambda: ScriptedAdapter(first, capabilities=caps()))
    registry.register_factory("b", lambda: ScriptedAdapter(second, capabilities=caps()))
    outcome = await make_runner(registry, tmp_path).run_task("a", TASK, rotate_to="b")
    assert outcome.status == "success" and outcome.summary == "done by b"
    assert [r.runtime_id for r in outcome.runs] == ["a", "b"]
    assert "Last progress: handing over" in second.starts[0].message


class FailingSecondStart(ScriptedAdapter):
    starts = 0

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        FailingSecondStart.starts += 1
        if FailingSecondStart.starts > 1:
            raise ConfigError("model not allowed")
        return await super().start(task, opts)


async def test_restart_failure_during_rotation_propagates(tmp_path: Path) -> None:
    FailingSecondStart.starts = 0
    registry = RuntimeRegistry()
    registry.register_factory(
        "x", lambda: FailingSecondStart([result(False, maxTurns=True)], capabilities=caps())
    )
    sink = ListSink()
    async with EventLog.open(tmp_path / "events.db") as log:
        runner = make_runner(registry, tmp_path, sink=sink, event_log=log)
        with pytest.raises(ConfigError, match="model not allowed"):
            await runner.run_task("x", TASK)
        first, failed = await log.runs()
    # the successor that could not start is a logged run, not only an exception
    assert first.status == "max_turns" and failed.status == "error"
    assert failed.outcome is not None and failed.outcome["errorCode"] == "config_error"
    assert failed.run_key.startswith(f"{failed.session_key}:run-")


async def test_transient_failure_is_retried_with_backoff(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    rate_limited = [result(False, errorMessage="429 rate limited", errorCode="rate_limit")]
    scripts = Scripts(
        rate_limited, rate_limited, [{"type": "text", "text": "ok"}, result(summary="ok")]
    )
    runner = make_runner(registry_with(scripts, caps()), tmp_path)
    began = trio.current_time()
    outcome = await runner.run_task("scripted", TASK)
    assert outcome.status == "success"
    assert outcome.runs[0].attempts == 3
    assert [s.session_key for s in scripts.starts] == [
        "runtime:scripted:task:t1",
        "runtime:scripted:task:t1:a1",
        "runtime:scripted:task:t1:a2",
    ]
    assert trio.current_time() - began == pytest.approx(1.0 + 2.0)  # backoff 1 s, then 2 s


async def test_transient_failures_stop_at_the_cap(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    scripts = Scripts([result(False, errorMessage="overloaded", errorCode="overloaded_error")])
    outcome = await make_runner(registry_with(scripts, caps()), tmp_path).run_task("scripted", TASK)
    assert outcome.status == "error"
    assert outcome.runs[0].attempts == 3  # 1 + max_restarts=2
    assert len(scripts.starts) == 3


async def test_failure_after_output_is_not_retried(tmp_path: Path) -> None:
    scripts = Scripts(
        [
            {"type": "text", "text": "did half"},
            result(False, errorMessage="503 unavailable", errorCode="server_error"),
        ]
    )
    outcome = await make_runner(registry_with(scripts, caps()), tmp_path).run_task("scripted", TASK)
    assert outcome.status == "error"
    assert len(scripts.starts) == 1


async def test_persistent_home_is_kept_and_ephemeral_home_removed(tmp_path: Path) -> None:
    homes: list[str | None] = []

    def script(opts: StartOpts) -> Frames:
        homes.append(opts.home_dir)
        assert opts.home_dir is not None and Path(opts.home_dir).is_dir()
        return [result(summary="ok")]

    persistent = caps(
        runtime_class="native", native_home=NativeHomeClaim(scope="per-identity", persist=True)
    )
    registry = RuntimeRegistry()
    registry.register_factory("p", lambda: ScriptedAdapter(script, capabilities=persistent))
    registry.register_factory("e", lambda: ScriptedAdapter(script, capabilities=caps()))
    runner = make_runner(registry, tmp_path)
    await runner.run_task("p", TaskSpec(task_id="t", title="x", agent_id="alice"))
    await runner.run_task("e", TaskSpec(task_id="t", title="x", agent_id="alice"))
    assert homes[0] == str(tmp_path / "state" / "homes" / "p" / "alice")
    assert Path(homes[0]).is_dir()
    assert homes[1] is not None and "runs" in homes[1]
    assert not Path(homes[1]).exists()


class EndsWithoutDone(ScriptedAdapter):
    def events(self, run: RunHandle) -> QueueEventStream:
        return closed_stream()


async def test_actor_synthesizes_error_and_done_when_a_stream_ends_without_done() -> None:
    sink = ListSink()
    async with EndsWithoutDone([]) as adapter:
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="m")
        )
        actor = RunActor(
            adapter=adapter, run_handle=run, run_key="k", sink=sink, capabilities=caps()
        )
        outcome = await actor.run()
    assert outcome.reason == "error" and outcome.error_code == "stream_ended"
    kinds = [e.kind for e in sink.events["k"]]
    assert kinds == ["error", "done"]


async def test_silent_runtime_is_aborted_by_the_idle_guard(
    autojump_clock: trio.testing.MockClock,
) -> None:
    sink = ListSink()
    async with ScriptedAdapter(
        [{"type": "text", "text": "thinking…"}, {"type": "sleep", "seconds": 3600}]
    ) as adapter:
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="m")
        )
        actor = RunActor(
            adapter=adapter,
            run_handle=run,
            run_key="k",
            sink=sink,
            capabilities=caps(),
            idle_s=60,
            grace_s=5,
        )
        outcome = await actor.run()
    assert outcome.reason == "aborted"
    assert outcome.summary == "thinking…"
    assert any(c.method == "abort" for c in adapter.calls)


async def test_mailbox_refuses_steer_on_a_non_steerable_runtime_and_closes_after_the_run() -> None:
    sink = ListSink()
    async with ScriptedAdapter(
        [{"type": "sleep", "seconds": 0.01}, result(summary="ok")]
    ) as adapter:
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="m")
        )
        actor = RunActor(
            adapter=adapter, run_handle=run, run_key="k", sink=sink, capabilities=caps()
        )
        with pytest.raises(CapabilityError):
            actor.steer("focus on tests")
        actor.set_model("model-b")
        outcome = await actor.run()
        assert outcome.reason == "success"
        with pytest.raises(MailboxClosedError):
            actor.set_model("model-c")
    assert any(c.method == "setModel" and c.params["model"] == "model-b" for c in adapter.calls)


async def test_abort_through_the_mailbox_ends_aborted() -> None:
    sink = ListSink()
    async with ScriptedAdapter(
        [{"type": "text", "text": "x"}, {"type": "sleep", "seconds": 30}]
    ) as adapter:
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="m")
        )
        actor = RunActor(
            adapter=adapter, run_handle=run, run_key="k", sink=sink, capabilities=caps()
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(actor.run)
            await trio.testing.wait_all_tasks_blocked()
            actor.abort()
            actor.abort()  # idempotent
        assert actor.finished.is_set()
    events = sink.events["k"]
    assert isinstance(events[-1], Done) and events[-1].reason == "aborted"


async def test_a_fenced_actor_delivers_nothing() -> None:
    sink = ListSink()
    async with ScriptedAdapter([{"type": "text", "text": "x"}, result(summary="x")]) as adapter:
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="m")
        )
        actor = RunActor(
            adapter=adapter, run_handle=run, run_key="k", sink=sink, capabilities=caps()
        )
        actor.fence()
        await actor.run()
    assert sink.events == {}


async def test_runs_and_sessions_are_recorded_for_resume(tmp_path: Path) -> None:
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.feed import RecordingSink

    scripts = Scripts([{"type": "init", "sessionId": "native-7"}, result(summary="ok")])
    async with EventLog.open(tmp_path / "log.db") as log:
        runner = make_runner(registry_with(scripts, caps()), tmp_path, event_log=log)
        runner.sink = RecordingSink(log)
        task = TaskSpec(task_id="t9", title="x", cwd=str(tmp_path / "repo"))
        await runner.run_task("scripted", task)
        (run,) = await log.runs()
        assert run.status == "success"
        session = await log.get_session(run.session_key)
        assert session is not None
        assert session.native_session_id == "native-7"
        assert session.origin_cwd == str(tmp_path / "repo")
        assert session.codec_blob is not None
        events = await log.read(run.run_key)
        assert events[-1].kind == "done"


async def test_a_plan_task_on_a_runtime_without_a_plan_mode_is_refused_before_it_starts(
    tmp_path: Path,
) -> None:
    """``run --plan`` on a runtime that would ignore ``StartOpts.plan`` (the scripted runtime,
    OpenClaw, Hermes) ends in one logged error naming the reason; the runtime never starts."""
    scripts = Scripts([{"type": "text", "text": "changed files"}, result()])
    sink = ListSink()
    runner = make_runner(registry_with(scripts, caps()), tmp_path, sink)
    outcome = await runner.run_task("scripted", attrs.evolve(TASK, plan=True))
    assert outcome.status == "error" and outcome.error_code == "capability_error"
    assert "has no plan mode" in (outcome.error_message or "")
    assert scripts.starts == []
    [events] = sink.events.values()
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
