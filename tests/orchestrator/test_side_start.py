"""A side-by-side start (issue 37): each runtime's runs wait for their own runtime's warm-up only,
so a runtime slow to get ready (the native runtime importing its model SDKs) never holds back
another runtime's start."""

from __future__ import annotations

import io
from pathlib import Path

import trio
from rich.console import Console

from adapters import ScriptedAdapter
from orchestrator.cli.live import PlainView
from orchestrator.cli.sidebyside import Job, run_jobs
from orchestrator.core import RuntimeRegistry, StartOpts, TaskHandle
from orchestrator.core.adapter import RunHandle
from orchestrator.engine import TaskSpec

DONE = [{"type": "text", "text": "hi\n"}, {"type": "result", "ok": True, "summary": "ok"}]


async def test_a_slow_warm_up_does_not_hold_back_another_runtimes_start(tmp_path: Path) -> None:
    fast_started = trio.Event()
    order: list[str] = []
    built = 0

    class SlowToWarm(ScriptedAdapter):
        warming = False

        async def aclose(self) -> None:
            # the warm-up's adapter: ready only once the other runtime's run has started
            if self.warming:
                await fast_started.wait()
                order.append("slow warmed up")
            await super().aclose()

    def slow() -> SlowToWarm:
        nonlocal built
        built += 1
        adapter = SlowToWarm(DONE)
        adapter.warming = built == 1
        return adapter

    class Fast(ScriptedAdapter):
        async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
            order.append("fast started")
            fast_started.set()
            return await super().start(task, opts)

    registry = RuntimeRegistry()
    registry.register_factory("slow", slow)
    registry.register_factory("fast", lambda: Fast(DONE))
    jobs = [
        Job(label=rid, runtime_id=rid, task=TaskSpec(task_id=rid, title="t"))
        for rid in ("slow", "fast")
    ]
    view = PlainView(console=Console(file=io.StringIO(), width=200))
    with trio.fail_after(30):
        results = await run_jobs(registry, jobs, view, state_dir=tmp_path)
    assert [r.ok for r in results] == [True, True]
    assert order == ["fast started", "slow warmed up"]
