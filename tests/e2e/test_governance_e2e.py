"""Budgets on the real Claude Code against the scripted model server: the cost event that crosses
the budget is the last thing the runtime says; the run ends error{budget_exceeded} + done{error};
Claude Code's process is gone and the next turn's tool call never ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig
from contract import check_stream
from orchestrator.core import Cost, Done, ErrorEvent, RuntimeEvent, RuntimeRegistry
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.governance import Budget, Governance
from orchestrator.model_server import ModelServer

from .kit import assert_no_drift, installed

pytestmark = pytest.mark.e2e

KEY = "sk-ant-e2e-budget-0000000000"
MODEL = "claude-sonnet-4-6"


def bash(command: str) -> dict[str, Any]:
    return {"name": "Bash", "input": {"command": command, "description": "run"}}


def script() -> dict[str, Any]:
    return {
        "model": MODEL,
        "conversations": [
            {
                "name": "spend",
                "marker": "[[e2e:spend]]",
                "turns": [
                    {
                        "text": "Step one.",
                        "tool_calls": [bash("echo one")],
                        "usage": {"input_tokens": 2000, "output_tokens": 20},  # crosses
                    },
                    {
                        "text": "Step two.",
                        "tool_calls": [bash("touch second.txt")],
                        "usage": {"input_tokens": 3000, "output_tokens": 20},
                    },
                    {"text": "NEVER", "usage": {"input_tokens": 3000, "output_tokens": 20}},
                ],
            }
        ],
    }


class ListSink:
    def __init__(self) -> None:
        self.events: list[RuntimeEvent] = []

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        self.events.extend(events)
        await trio.lowlevel.checkpoint()


async def test_claude_code_token_budget_stops_within_one_event(
    server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    installed("claude-code")
    config = ClaudeCodeConfig(
        mode="one-shot",
        model=MODEL,
        base_url=server.url,
        api_key=KEY,
        state_root=tmp_path / "state",
    )
    registry = RuntimeRegistry()
    registry.register_factory("claude-code", lambda: ClaudeCodeAdapter(config))
    sink = ListSink()
    runner = Runner(
        registry,
        sink=sink,
        state_dir=tmp_path / "rl-state",
        governance=Governance(task_budget=Budget(tokens=1500)),
    )
    task = TaskSpec(task_id="b1", title="[[e2e:spend]] do the steps", cwd=str(workspace))
    with trio.fail_after(120):
        outcome = await runner.run_task("claude-code", task)
    events = sink.events
    check_stream(events)
    assert_no_drift("claude-code", events)
    crossing = next(
        i for i, e in enumerate(events) if isinstance(e, Cost) and e.usage.total_tokens > 1500
    )
    tail = events[crossing + 1 :]
    assert [e.kind for e in tail if e.kind != "tool-result"] == ["error", "done"]
    assert isinstance(tail[0], ErrorEvent) and tail[0].code == "budget_exceeded"
    assert isinstance(tail[-1], Done) and tail[-1].reason == "error"
    assert outcome.status == "error" and outcome.error_code == "budget_exceeded"
    assert len(outcome.runs) == 1 and outcome.runs[0].attempts == 1  # no retry, no rotation
    assert not (workspace / "second.txt").exists()  # the turn after the crossing never ran
    assert len(server.requests_for("spend")) <= 2
