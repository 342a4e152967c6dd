"""Runs that share a persistent home run side by side (issue 34 item 7: runs of one runtime no
longer wait for each other); a runtime's ``max_runs`` limit holds across a whole ``LocalHost``
(one limiter table per host, not a fresh one per task), and a task over it is told why it
waits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from adapters import ScriptedAdapter
from orchestrator.core import (
    Capabilities,
    NativeHomeClaim,
    RuntimeEvent,
    RuntimeRegistry,
    StartOpts,
)
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.hosts.local import LocalHost

RUNS = 200


class Overlap:
    """Counts runs between their start and their ``done`` (the home is held across that)."""

    def __init__(self) -> None:
        self.active = 0
        self.most = 0
        self.done = 0

    def script(self, opts: StartOpts) -> list[dict[str, Any]]:
        assert opts.home_dir is not None
        self.active += 1
        self.most = max(self.most, self.active)
        return [{"type": "text", "text": f"t{i}"} for i in range(3)] + [
            {"type": "result", "ok": True, "summary": "ok"}
        ]

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        for event in events:
            if event.kind == "done":
                self.active -= 1
                self.done += 1
        await trio.lowlevel.checkpoint()


def persistent_registry(overlap: Overlap) -> RuntimeRegistry:
    persistent = Capabilities(
        streaming=True,
        mcp=False,
        worktrees=False,
        resume=True,
        tool_approval=False,
        runtime_class="native",
        native_home=NativeHomeClaim(scope="per-identity", persist=True),
    )
    registry = RuntimeRegistry()
    registry.register_factory("p", lambda: ScriptedAdapter(overlap.script, capabilities=persistent))
    return registry


async def test_same_agent_runs_sharing_a_home_run_side_by_side(tmp_path: Path) -> None:
    overlap = Overlap()
    runner = Runner(persistent_registry(overlap), sink=overlap, state_dir=tmp_path / "state")
    async with LocalHost(runner) as host:
        refs = [
            host.submit("p", TaskSpec(task_id=f"t{i}", title="x", agent_id="alice"))
            for i in range(20)
        ]
        outcomes = [await ref.outcome() for ref in refs]
    assert [o.status for o in outcomes] == ["success"] * 20
    assert overlap.most > 1  # they did not wait for each other
    assert all(ref.waiting is None for ref in refs)


async def test_200_runs_over_a_limit_of_one_never_overlap_and_say_why_they_wait(
    tmp_path: Path,
) -> None:
    overlap = Overlap()
    registry = persistent_registry(overlap)
    registry.set_limit("p", 1)
    runner = Runner(registry, sink=overlap, state_dir=tmp_path / "state")
    reasons: list[str] = []
    async with LocalHost(runner) as host:
        refs = [
            host.submit("p", TaskSpec(task_id=f"t{i}", title="x", agent_id="alice"))
            for i in range(RUNS)
        ]
        for ref in refs:
            ref.on_wait = reasons.append
        outcomes = [await ref.outcome() for ref in refs]
    assert [o.status for o in outcomes] == ["success"] * RUNS
    assert overlap.done == RUNS
    assert overlap.most == 1
    assert reasons and set(reasons) == {"at most 1 p run at once (max_runs)"}
