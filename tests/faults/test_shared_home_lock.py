"""Item 8: runs that share a persistent home are serialized across a whole ``LocalHost`` (one
lock table per host, not a fresh one per task)."""

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


async def test_200_same_agent_runs_on_one_host_never_overlap(tmp_path: Path) -> None:
    overlap = Overlap()
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
    runner = Runner(registry, sink=overlap, state_dir=tmp_path / "state")
    async with LocalHost(runner) as host:
        refs = [
            host.submit("p", TaskSpec(task_id=f"t{i}", title="x", agent_id="alice"))
            for i in range(RUNS)
        ]
        outcomes = [await ref.outcome() for ref in refs]
    assert [o.status for o in outcomes] == ["success"] * RUNS
    assert overlap.done == RUNS
    assert overlap.most == 1
