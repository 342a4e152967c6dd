"""Budgets on the native runtime: the scripted model server, the real SDK, the real loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from adapters.native import NativeAdapter
from adapters.native.models.providers import create_adapter
from contract import check_stream
from orchestrator.core import (
    Cost,
    Done,
    ErrorEvent,
    RuntimeEvent,
    RuntimeRegistry,
    StartOpts,
    TextDelta,
)
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.governance import Budget, Governance
from orchestrator.model_server import serve_model_server


def tool_turn(n: int) -> dict[str, Any]:
    return {
        "text": f"step {n}. ",
        "tool_calls": [{"name": "list_files", "input": {"path": "."}}],
        "usage": {"input_tokens": 1000 * n, "output_tokens": 100},
    }


SCRIPT: dict[str, Any] = {
    "conversations": [
        {
            "name": "long",
            "turns": [
                tool_turn(1),
                tool_turn(2),
                tool_turn(3),
                {"text": "NEVER REACHED", "usage": {"input_tokens": 5000, "output_tokens": 10}},
            ],
        }
    ]
}


class ListSink:
    def __init__(self) -> None:
        self.events: list[RuntimeEvent] = []

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        self.events.extend(events)
        await trio.lowlevel.checkpoint()


async def run_native(tmp_path: Path, budget: Budget) -> tuple[Any, list[RuntimeEvent], int]:
    (tmp_path / "ws").mkdir()
    sink = ListSink()
    async with serve_model_server(SCRIPT) as server:

        def factory(opts: StartOpts) -> Any:
            return create_adapter(
                provider="anthropic",
                model="claude-haiku-4-5",
                api_key="sk-test-0000000000",
                base_url=server.url,
            )

        registry = RuntimeRegistry()
        registry.register_factory(
            "native", lambda: NativeAdapter(model_factory=factory, workspace=tmp_path / "ws")
        )
        runner = Runner(
            registry,
            sink=sink,
            state_dir=tmp_path / "state",
            governance=Governance(task_budget=budget),
        )
        with trio.fail_after(60):
            outcome = await runner.run_task("native", TaskSpec(task_id="n1", title="list"))
        requests = len(server.requests)
    return outcome, sink.events, requests


def after_crossing(events: list[RuntimeEvent], limit: float, usd: bool) -> list[RuntimeEvent]:
    for index, event in enumerate(events):
        if isinstance(event, Cost):
            spent = (event.cost_usd or 0.0) if usd else event.usage.total_tokens
            if spent > limit:
                return events[index + 1 :]
    raise AssertionError("no cost event crossed the budget")


async def test_native_token_budget_stops_within_one_event(tmp_path: Path) -> None:
    outcome, events, requests = await run_native(tmp_path, Budget(tokens=2500))
    check_stream(events)
    tail = after_crossing(events, 2500, usd=False)
    assert [e.kind for e in tail if e.kind != "tool-result"] == ["error", "done"]
    error = tail[0]
    assert isinstance(error, ErrorEvent) and error.code == "budget_exceeded"
    last = tail[-1]
    assert isinstance(last, Done) and last.reason == "error"
    said = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "NEVER REACHED" not in said and "step 3" not in said
    assert requests == 2  # the loop stopped: no third model call
    assert outcome.error_code == "budget_exceeded"


async def test_native_usd_budget_uses_the_native_loops_own_usd(tmp_path: Path) -> None:
    # claude-haiku-4-5 at $1/M input, $5/M output: turn 1 = $0.0015, turn 2 ≈ $0.0045 cumulative
    outcome, events, _ = await run_native(tmp_path, Budget(usd=0.003))
    check_stream(events)
    costs = [e for e in events if isinstance(e, Cost)]
    assert costs and all(c.cost_usd is not None for c in costs)  # native prices its own calls
    assert costs[-1].cost_usd is not None and costs[-1].cost_usd > 0.003
    assert outcome.error_code == "budget_exceeded"
    assert "of its $0.003 budget" in (outcome.error_message or "")


async def test_native_429_with_retry_after_parks_and_continues_its_session(
    tmp_path: Path,
) -> None:
    """The model server answers 429 (``retry-after: 0``) more often than the native loop retries
    by itself: the run fails, is parked until the reset, and continues its session."""
    script: dict[str, Any] = {
        "conversations": [
            {
                "name": "limited",
                "turns": [
                    {"fault": {"kind": "rate_limit", "times": 3, "retry_after": 0}, "text": "OK"},
                ],
            }
        ]
    }
    (tmp_path / "ws").mkdir()
    sink = ListSink()
    notices: list[Any] = []
    async with serve_model_server(script) as server:

        def factory(opts: StartOpts) -> Any:
            return create_adapter(
                provider="anthropic",
                model="claude-haiku-4-5",
                api_key="sk-test-0000000000",
                base_url=server.url,
            )

        registry = RuntimeRegistry()
        registry.register_factory(
            "native", lambda: NativeAdapter(model_factory=factory, workspace=tmp_path / "ws")
        )
        runner = Runner(
            registry,
            sink=sink,
            state_dir=tmp_path / "state",
            governance=Governance(),
            on_retry=notices.append,
        )
        with trio.fail_after(60):
            outcome = await runner.run_task("native", TaskSpec(task_id="n2", title="hello"))
    from orchestrator.core import Status

    assert outcome.status == "success"
    parked = [e for e in sink.events if isinstance(e, Status) and e.phase == "rate_limited"]
    assert len(parked) == 1 and parked[0].resets_at is not None
    assert "rate limited; parked" in str(notices[0])
    assert outcome.runs[0].attempts == 2
