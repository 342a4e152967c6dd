"""LocalHost runs tasks side by side and leaves nothing running."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import trio

from adapters import ScriptedAdapter
from orchestrator.core import ConfigError, RuntimeEvent, RuntimeRegistry
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.hosts import LocalHost


class TextSeen:
    """A sink that tells when a run has emitted a text delta (the slow task's "slow…")."""

    def __init__(self) -> None:
        self.text = trio.Event()

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        if any(event.kind == "text-delta" and "slow" in run_key for event in events):
            self.text.set()


def runner(tmp_path: Path, sink: TextSeen | None = None) -> Runner:
    registry = RuntimeRegistry()
    registry.register_factory(
        "fast",
        lambda: ScriptedAdapter(
            [{"type": "text", "text": "quick"}, {"type": "result", "ok": True, "summary": "quick"}]
        ),
    )
    registry.register_factory(
        "slow",
        lambda: ScriptedAdapter(
            [
                {"type": "text", "text": "slow…"},
                {"type": "sleep", "seconds": 3600},
                {"type": "result", "ok": True},
            ]
        ),
    )
    return Runner(
        registry, sink=sink or TextSeen(), state_dir=tmp_path, today=lambda: dt.date(2026, 1, 1)
    )


async def test_tasks_run_side_by_side_and_abort_independently(
    tmp_path: Path,
) -> None:
    seen = TextSeen()
    async with LocalHost(runner(tmp_path, seen)) as host:
        slow = host.submit("slow", TaskSpec(task_id="s", title="slow"))
        fast = host.submit("fast", TaskSpec(task_id="f", title="fast"))
        assert (await fast.outcome()).status == "success"
        assert not slow.finished
        # not wait_all_tasks_blocked(): the start does work in threads, so "all blocked" can
        # come before the slow run has said anything (seen under load)
        await seen.text.wait()
        slow.abort()
        outcome = await slow.outcome()
    assert outcome.status == "aborted"
    assert outcome.summary == "slow…"


async def test_leaving_the_host_aborts_what_is_still_running(
    tmp_path: Path,
) -> None:
    async with LocalHost(runner(tmp_path)) as host:
        slow = host.submit("slow", TaskSpec(task_id="s", title="slow"))
        await trio.testing.wait_all_tasks_blocked()
    assert (await slow.outcome()).status == "aborted"


async def test_a_failing_task_keeps_its_error_and_spares_its_siblings(tmp_path: Path) -> None:
    async with LocalHost(runner(tmp_path)) as host:
        bad = host.submit("missing-runtime", TaskSpec(task_id="b", title="b"))
        good = host.submit("fast", TaskSpec(task_id="g", title="g"))
        with pytest.raises(ConfigError, match="unknown runtime"):
            await bad.outcome()
        assert (await good.outcome()).status == "success"
