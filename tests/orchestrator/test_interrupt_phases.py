"""Ctrl-C before a run has started (issue 34 item 1), deterministically in one process: a
Ctrl-C while the command is still getting ready (a model server starting, SDKs importing)
aborts the runs submitted after it, and an abort while a runtime starts (a gateway booting)
stops the start. Each run is logged ``aborted``; none runs on to ``success``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import trio
from rich.console import Console

from adapters import ScriptedAdapter
from adapters.scripted import Script
from orchestrator.cli import sidebyside
from orchestrator.cli.live import PlainView
from orchestrator.cli.options import Interrupt
from orchestrator.cli.sidebyside import Job, run_jobs
from orchestrator.core import RuntimeRegistry, StartOpts, TaskHandle
from orchestrator.core.adapter import RunHandle
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.hosts import LocalHost

SLOW = [
    {"type": "text", "text": "working\n"},
    {"type": "sleep", "seconds": 3600},
    {"type": "result", "ok": True, "summary": "finished"},
]


class SlowStart(ScriptedAdapter):
    """A runtime whose start takes an hour (an OpenClaw gateway booting, say); ``entered`` is
    set once a start has begun."""

    def __init__(self, script: Script, entered: trio.Event) -> None:
        super().__init__(script)
        self.entered = entered

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        self.entered.set()
        await trio.sleep(3600)
        return await super().start(task, opts)


def view() -> PlainView:
    return PlainView(console=Console(file=io.StringIO(), width=200))


async def statuses(state: Path) -> list[str]:
    async with EventLog.open(state / "events.db") as log:
        return [row.status for row in await log.runs()]


async def test_a_ctrl_c_before_the_runs_start_aborts_them(tmp_path: Path) -> None:
    registry = RuntimeRegistry()
    registry.register_factory("slow", lambda: ScriptedAdapter(SLOW))
    interrupt = Interrupt()
    interrupt.abort()  # Ctrl-C while the command was still getting ready
    jobs = [
        Job(label=name, runtime_id="slow", task=TaskSpec(task_id=name, title="t"))
        for name in ("a", "b")
    ]
    with trio.fail_after(30):  # real time: a run that was not aborted sleeps for an hour
        results = await run_jobs(
            registry, jobs, view(), state_dir=tmp_path, on_host=interrupt.attach
        )
    assert [r.outcome.status if r.outcome else None for r in results] == ["aborted", "aborted"]
    assert await statuses(tmp_path) == ["aborted", "aborted"]


async def test_an_abort_while_a_runtime_starts_stops_the_start_and_is_logged(
    tmp_path: Path,
) -> None:
    registry = RuntimeRegistry()
    entered = trio.Event()
    registry.register_factory("gateway", lambda: SlowStart(SLOW, entered))
    async with EventLog.open(tmp_path / "events.db") as log:
        runner = Runner(registry, state_dir=tmp_path, event_log=log)
        async with LocalHost(runner) as host:
            ref = host.submit("gateway", TaskSpec(task_id="g", title="t"))
            # the abort comes once the gateway is booting (for an hour), not after a fixed 0.5 s:
            # with the runner's worker threads slowed, that came before the start had begun
            with trio.fail_after(30):  # real time: only if the start never begins
                await entered.wait()
            ref.abort()
            with trio.fail_after(30):
                outcome = await ref.outcome()
        rows = await log.runs()
    assert outcome.status == "aborted"
    assert [row.status for row in rows] == ["aborted"]


async def test_a_run_slow_to_start_is_said_to_be_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 34 item 11: a runtime that shows nothing for a while (OpenClaw's gateway booting)
    is said to be starting, with what it does, instead of silence."""

    class BriefStart(ScriptedAdapter):
        async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
            await trio.sleep(1.0)
            return await super().start(task, opts)

    monkeypatch.setattr(sidebyside, "STARTING_NOTE_S", 0.2)
    registry = RuntimeRegistry()
    done = [{"type": "text", "text": "up\n"}, {"type": "result", "ok": True, "summary": "ok"}]
    registry.register_factory("openclaw", lambda: BriefStart(done))
    jobs = [Job(label="oc", runtime_id="openclaw", task=TaskSpec(task_id="o", title="t"))]
    with trio.fail_after(30):
        [result] = await run_jobs(registry, jobs, view(), state_dir=tmp_path)
    assert result.ok
    err = capsys.readouterr().err
    assert "ringleader: [oc] OpenClaw's gateway is booting" in err, err
    assert err.count("gateway is booting") == 1  # said once, not per poll
