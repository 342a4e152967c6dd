"""The native adapter end to end: a 10-turn tool session, cost, steering, abort, resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from adapters.native.adapter import NativeAdapter
from adapters.native.models.scripted import Reply, ScriptedModel, Sleep
from adapters.native.pricing import Price, PriceTable
from adapters.native.tools import Tool, ToolContext
from contract import check_stream, collect_run
from orchestrator.core.adapter import STEER_KEY, RunHandle, StartOpts, TaskHandle
from orchestrator.core.events import (
    Cost,
    Done,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
)

from .conftest import EchoInput


async def echo(inp: EchoInput, ctx: ToolContext) -> str:
    if inp.delay:
        await trio.sleep(inp.delay)
    return f"echo:{inp.text}"


ECHO = Tool(name="echo", description="Echo text.", do=echo, input_model=EchoInput)


def opts(key: str = "agent:a:main", **kw: Any) -> StartOpts:
    return StartOpts(agent_id="a", session_key=key, message="do the thing", **kw)


async def run_to_done(
    adapter: NativeAdapter, start: StartOpts
) -> tuple[RunHandle, list[RuntimeEvent]]:
    run = await adapter.start(TaskHandle(), start)
    events = await collect_run(adapter.events(run), deadline_s=10)
    check_stream(events)
    return run, events


async def test_ten_turn_tool_session_end_to_end() -> None:
    script = [
        Reply(
            text=f"step {i}. ",
            tool_calls=[("echo", {"text": str(i)})],
            tokens_in=100 + i,
            tokens_out=10,
        )
        for i in range(10)
    ] + [Reply(text="All ten done.", tokens_in=200, tokens_out=5)]
    model = ScriptedModel(script, model="claude-haiku-4-5")
    prices = PriceTable().add("claude-haiku-4-5", Price(1.0, 5.0))
    async with NativeAdapter(model_factory=lambda o: model, tools=[ECHO], prices=prices) as adapter:
        run, events = await run_to_done(adapter, opts())
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(calls) == len(results) == 10
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls]
    assert [r.output for r in results] == [f"echo:{i}" for i in range(10)]
    costs = [e for e in events if isinstance(e, Cost)]
    assert len(costs) == 11
    inputs = [c.usage.input_tokens for c in costs]
    assert inputs == sorted(inputs)  # cumulative, never decreasing
    last = costs[-1]
    assert last.usage.input_tokens == sum(100 + i for i in range(10)) + 200
    assert last.usage.output_tokens == 105
    assert last.cost_usd == pytest.approx((1245 * 1.0 + 105 * 5.0) / 1e6)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success" and done.summary == "All ten done."
    assert run.run_id is not None and run.run_id.startswith("native-")
    assert all(e.run_id == run.run_id for e in events)
    assert isinstance(events[0], Status) and events[0].phase == "init"
    assert len(model.requests) == 11


async def test_unpriced_model_reports_unknown_usd() -> None:
    model = ScriptedModel([Reply(text="hi")], model="mystery-model")
    async with NativeAdapter(model_factory=lambda o: model) as adapter:
        _, events = await run_to_done(adapter, opts())
    costs = [e for e in events if isinstance(e, Cost)]
    assert costs and all(c.cost_usd is None for c in costs)


async def test_max_turns_ends_in_done_max_turns() -> None:
    model = ScriptedModel([Reply(tool_calls=[("echo", {})]) for _ in range(5)])
    async with NativeAdapter(model_factory=lambda o: model, tools=[ECHO]) as adapter:
        _, events = await run_to_done(adapter, opts(max_turns=2))
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "max_turns"
    assert len(model.requests) == 2


async def test_steer_arriving_during_the_final_turn_lands(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the model takes 10 s to produce its final (tool-free) answer; the steer arrives at 5 s
    model = ScriptedModel([Sleep(10), Reply(text="Hello."), Reply(text="Goodbye.")])
    async with NativeAdapter(model_factory=lambda o: model) as adapter:
        run = await adapter.start(TaskHandle(), opts())
        stream = adapter.events(run)
        await trio.sleep(5)
        await adapter.write_context(run, STEER_KEY, "Also say goodbye.")
        events = await collect_run(stream, deadline_s=30)
    check_stream(events)
    done = events[-1]
    assert isinstance(done, Done) and done.summary == "Goodbye."
    assert len(model.requests) == 2
    assert model.requests[-1].messages[-1].text == "Also say goodbye."
    assert any(
        isinstance(e, Status) and (e.detail or "").startswith("steering_applied") for e in events
    )
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello.Goodbye."
    assert adapter.calls[-1].params["steered"] is True


async def test_write_context_with_a_file_key_writes_and_steers(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    model = ScriptedModel([Sleep(1), Reply(text="noted")])
    async with NativeAdapter(model_factory=lambda o: model) as adapter:
        run = await adapter.start(TaskHandle(), opts(cwd=str(tmp_path)))
        stream = adapter.events(run)
        await adapter.write_context(run, "notes/NOTES.md", "use tabs")
        events = await collect_run(stream, deadline_s=10)
    assert (tmp_path / "notes" / "NOTES.md").read_text() == "use tabs"
    assert events[-1].kind == "done"
    assert model.requests[-1].messages[-1].text == "[context update: notes/NOTES.md]\nuse tabs"


async def test_abort_mid_tool_closes_the_call_and_repairs_history(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = ScriptedModel([Reply(tool_calls=[("echo", {"delay": 100})])])
    async with NativeAdapter(model_factory=lambda o: model, tools=[ECHO]) as adapter:
        run = await adapter.start(TaskHandle(), opts())
        stream = adapter.events(run)
        await trio.sleep(1)
        glove = adapter.glove_for(run)
        assert glove is not None
        await adapter.abort(run)
        events = await collect_run(stream, deadline_s=10)
        history = list(await glove.store.get_messages())
    check_stream(events)
    assert isinstance(events[-1], Done) and events[-1].reason == "aborted"
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.is_error and "aborted" in result.output.lower()
    assert history[-1].tool_results is not None  # repaired at abort time


async def test_set_model_switches_at_the_next_call(autojump_clock: trio.testing.MockClock) -> None:
    model = ScriptedModel([Reply(tool_calls=[("echo", {"delay": 1})]), Reply(text="ok")])
    async with NativeAdapter(model_factory=lambda o: model, tools=[ECHO]) as adapter:
        run = await adapter.start(TaskHandle(), opts())
        stream = adapter.events(run)
        await adapter.set_model(run, "scripted:other-model")
        events = await collect_run(stream, deadline_s=10)
    costs = [e for e in events if isinstance(e, Cost)]
    assert costs[-1].model == "other-model"


async def test_model_errors_are_typed_error_then_done() -> None:
    from adapters.native.models.base import ModelError
    from adapters.native.models.scripted import Fail

    model = ScriptedModel([Fail(ModelError("HTTP 401: bad key sk-ant-abcdefghijkl", "auth", 401))])
    async with NativeAdapter(model_factory=lambda o: model) as adapter:
        _, events = await run_to_done(adapter, opts())
    error = events[-2]
    assert error.kind == "error" and error.code == "model_auth" and error.fatal
    assert "sk-ant-abcdefghijkl" not in error.message
    assert isinstance(events[-1], Done) and events[-1].reason == "error"


async def test_missing_key_fails_the_run_not_start() -> None:
    async with NativeAdapter() as adapter:
        _, events = await run_to_done(
            adapter, opts(model="gemini:gemini-2.5-flash", env={"GEMINI_API_KEY": ""})
        )
    assert events[-2].kind == "error" and events[-2].code == "config_error"


async def test_resume_continues_the_sqlite_session(tmp_path: Path) -> None:
    first = ScriptedModel([Reply(text="first answer")])
    second = ScriptedModel([Reply(text="second answer")])
    models = iter([first, second])
    async with NativeAdapter(model_factory=lambda o: next(models)) as adapter:
        run, _ = await run_to_done(adapter, opts(home_dir=str(tmp_path)))
        blob = await adapter.session_codec.serialize(run)
        restored = await adapter.session_codec.restore(blob)
        assert restored.run_id == run.run_id
        again, _ = await run_to_done(
            adapter,
            opts(key="agent:a:next", home_dir=str(tmp_path), resume_session_id=restored.run_id),
        )
    assert again.run_id == run.run_id
    seen = [m.text for m in second.requests[0].messages]
    assert seen == ["do the thing", "first answer", "do the thing"]
    assert (tmp_path / "native" / "sessions.db").exists()


async def test_scripted_demo_runs_a_tool_turn(tmp_path: Path) -> None:
    from adapters.native.demo import DEMO_PROMPT, scripted_demo_adapter

    (tmp_path / "README.md").write_text("hi")
    async with scripted_demo_adapter(str(tmp_path)) as adapter:
        _, events = await run_to_done(
            adapter, StartOpts(agent_id="demo", session_key="demo:1", message=DEMO_PROMPT)
        )
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.name == "list_files" and result.output == "README.md"
    costs = [e for e in events if isinstance(e, Cost)]
    assert costs[-1].cost_usd == pytest.approx((300 * 1.0 + 40 * 5.0) / 1e6)
    assert isinstance(events[-1], Done) and events[-1].reason == "success"


async def test_a_long_lived_adapter_keeps_only_its_recent_finished_runs() -> None:
    # an adapter serving run after run must not hold every finished run forever (its glove, store,
    # emitter): past the cap the oldest finished ones are forgotten; live runs never are
    model = ScriptedModel([*(Reply(text="hi") for _ in range(12)), Sleep(60), Reply(text="x")])
    async with NativeAdapter(model_factory=lambda o: model) as adapter:
        adapter._runs.keep_finished = 4  # pyright: ignore[reportPrivateUsage]
        runs = [(await run_to_done(adapter, opts(f"k{i}")))[0] for i in range(12)]
        live = await adapter.start(TaskHandle(), opts("live"))
        assert adapter.glove_for(runs[-1]) is not None  # the most recent are still there
        kept = [r for r in runs if adapter.emitter_for(r) is not None]
        assert kept == runs[len(runs) - len(kept) :] and 4 <= len(kept) <= 5
        assert all(adapter.glove_for(r) is None for r in runs[: len(runs) - len(kept)])
        assert adapter.emitter_for(live) is not None and adapter.glove_for(live) is not None
        await adapter.abort(live)
