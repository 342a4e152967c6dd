"""Issue 36, the Anvia surface (``anvia-core-agent.txt``): observers and the agent event store,
the trace option, ``withToolConcurrency``, ``ToolSet`` / ``useToolSet``, ``fromAgent``,
``readableStream``, the hook control objects and helpers, and streaming a model that cannot
stream — one test named after each rule."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from pydantic import BaseModel

from adapters.native.anvia import (
    AgentBuilder,
    AgentDone,
    AgentEventRecord,
    AgentFinal,
    AgentRequest,
    AgentStreamEvent,
    AgentToolEvent,
    AgentTraceOptions,
    AnviaAgent,
    InMemoryAgentEventStore,
    ObserveOptions,
    PromptCancelledError,
    ToolSet,
    cancel_prompt,
    create_hook,
    replay,
    request_tool_approval,
    run_control,
    skip_tool,
    tool_call_control,
)
from adapters.native.lifecycle import (
    LifecycleHooks,
    RequestApproval,
    RunAction,
    SkipTool,
    StopRun,
    ToolCallAction,
    ToolCallInfo,
    TurnStartInfo,
)
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.tools import ToolContext, tool
from orchestrator.core.errors import AgentOptionsError


class CityInput(BaseModel):
    city: str


async def weather(value: CityInput, ctx: ToolContext) -> str:
    await trio.sleep(10)
    return f"{value.city}: 21"


async def clock(value: CityInput, ctx: ToolContext) -> str:
    await trio.lowlevel.checkpoint()
    return "12:00"


WEATHER = tool("get_weather", "Weather for a city.", CityInput, weather)
CLOCK = tool("get_time", "Time in a city.", CityInput, clock)


def calls(*cities: str) -> Reply:
    return Reply(tool_calls=[("get_weather", {"city": c}) for c in cities])


async def collect(request: AgentRequest) -> list[AgentStreamEvent]:
    out: list[AgentStreamEvent] = []
    async with request.stream() as events:
        async for event in events:
            out.append(event)
    return out


async def test_observers_registered_on_an_agent_are_told_every_event_of_a_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[AgentEventRecord] = []
    nested: list[AgentEventRecord] = []

    async def observer(record: AgentEventRecord) -> None:
        seen.append(record)

    class Failing:
        async def observe(self, record: AgentEventRecord) -> None:
            raise RuntimeError("an observer bug never breaks the run")

    class OnlyNested:
        async def observe(self, record: AgentEventRecord) -> None:
            nested.append(record)

    model = ScriptedModel([calls("Oslo"), Reply(text="21 in Oslo.")])
    agent = (
        AgentBuilder("forecaster", model)
        .tool(WEATHER)
        .observe(observer)
        .observe(Failing())
        .observe(OnlyNested(), ObserveOptions(include="agent_tool_events"))
        .build()
    )
    response = await agent.prompt("Weather in Oslo?").send()  # send(), not only stream()
    types = [r.event.type for r in seen]
    assert types[0] == "turn_start" and types[-2:] == ["final", "done"]
    assert "tool_call" in types and "tool_result" in types
    assert {r.run_id for r in seen} == {response.run_id}
    assert {r.agent_id for r in seen} == {"forecaster"}
    result = next(r for r in seen if r.event.type == "tool_result")
    assert result.tool_name == "get_weather" and result.turn == 1
    assert nested == []  # no agent called as a tool in this run


async def test_the_agent_event_store_records_a_runs_events_and_replays_them_by_run_id() -> None:
    store = InMemoryAgentEventStore()
    model = ScriptedModel([Reply(tool_calls=[("get_time", {"city": "Oslo"})]), Reply(text="Noon.")])
    agent = AgentBuilder("clock", model).tool(CLOCK).event_store(store).build()
    events = await collect(agent.prompt("Time in Oslo?"))
    done = events[-1]
    assert isinstance(done, AgentDone)
    assert await replay(store, done.run_id) == events  # exactly the stream, in order
    await store.clear(done.run_id)
    assert await store.load(done.run_id) == []
    # include="agent_tool_events": only a streaming agent-tool's nested child events
    child_model = ScriptedModel([Reply(text="child says hi")])
    child = AnviaAgent(id="child", model=child_model)
    nested_store = InMemoryAgentEventStore()
    parent_model = ScriptedModel(
        [Reply(tool_calls=[("ask_child", {"prompt": "hi"})]), Reply(text="parent done")]
    )
    parent = (
        AgentBuilder("parent", parent_model)
        .tool(child.as_tool("ask_child", stream=True))
        .event_store(nested_store, include="agent_tool_events")
        .build()
    )
    parent_events = await collect(parent.prompt("go"))
    last = parent_events[-1]
    assert isinstance(last, AgentDone)
    records = await nested_store.load(last.run_id)
    assert records and all(isinstance(r.event, AgentToolEvent) for r in records)
    assert {r.agent_id for r in records} == {"child"}
    assert records[0].tool_name == "ask_child"


async def test_the_trace_option_puts_trace_info_on_the_response_and_the_final_event() -> None:
    model = ScriptedModel([Reply(text="a"), Reply(text="b"), Reply(text="c")])
    agent = AnviaAgent(id="traced", model=model)
    options = AgentTraceOptions(trace_id="trace-1", name="checkout", metadata={"user": "42"})
    response = await agent.prompt("x").with_trace(options).send()
    assert response.trace is not None
    assert (response.trace.trace_id, response.trace.span_id) == ("trace-1", response.run_id)
    assert response.trace.name == "checkout" and response.trace.metadata == {"user": "42"}
    events = await collect(agent.prompt("y").with_trace())
    final = next(e for e in events if isinstance(e, AgentFinal))
    assert final.trace is not None and final.trace.trace_id  # a fresh trace id
    assert (await agent.prompt("z").send()).trace is None  # untraced by default


async def test_with_tool_concurrency_runs_a_turns_tool_calls_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def agent() -> AnviaAgent:
        model = ScriptedModel([calls("A", "B", "C"), Reply(text="done")])
        return AnviaAgent(id="w", model=model, tools=[WEATHER])

    began = trio.current_time()
    await agent().prompt("go").send()
    one_at_a_time = trio.current_time() - began
    began = trio.current_time()
    response = await agent().prompt("go").with_tool_concurrency(3).send()
    at_once = trio.current_time() - began
    assert one_at_a_time == pytest.approx(30) and at_once == pytest.approx(10)
    results = [m for m in response.messages if m.tool_results]
    assert [r.result.data for r in results[0].tool_results or ()] == ["A: 21", "B: 21", "C: 21"]
    with pytest.raises(AgentOptionsError, match="positive integer"):
        agent().prompt("x").with_tool_concurrency(0)


async def test_tool_set_and_use_tool_set_share_tools_between_agents() -> None:
    shared = ToolSet([WEATHER]).add(CLOCK)
    assert shared.names() == ["get_time", "get_weather"] and "get_time" in shared
    built = AgentBuilder("a", ScriptedModel()).use_tool_set(shared).build()
    assert built.tool_set.names() == ["get_time", "get_weather"]
    direct = AnviaAgent(id="b", model=ScriptedModel(), tools=shared)
    assert [t.name for t in direct.tools] == ["get_weather", "get_time"]


async def test_from_agent_makes_the_same_request_as_agent_prompt() -> None:
    model = ScriptedModel([Reply(text="hello")])
    agent = AnviaAgent(id="a", model=model)
    request = AgentRequest.from_agent(agent, "hi")
    assert request.prompt.text == "hi" and request.state == "idle"
    assert (await request.send()).output == "hello"


async def test_readable_stream_gives_the_runs_events_and_closing_it_cancels_the_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = ScriptedModel([Reply(text="streamed")])
    agent = AnviaAgent(id="r", model=model)
    async with trio.open_nursery() as nursery:
        events = agent.prompt("hi").readable_stream(nursery)
        got = [event async for event in events]
    assert [e.type for e in got][-2:] == ["final", "done"]
    # a reader that stops early: the run is cancelled, never left running
    slow = AnviaAgent(
        id="s", model=ScriptedModel([calls("Oslo"), Reply(text="x")]), tools=[WEATHER]
    )
    request = slow.prompt("go")
    async with trio.open_nursery() as nursery:
        events = request.readable_stream(nursery, max_buffer=0)
        first = await events.receive()
        await events.aclose()
    assert first.type == "turn_start" and request.state == "cancelled"


class Controls(LifecycleHooks):
    """Uses the seed's control objects: ``tool.skip`` / ``tool.requestApproval`` and
    ``run.cancel`` / ``run.continue``."""

    async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
        if info.args.get("city") == "Nowhere":
            return info.tool.skip("no such city")
        return info.tool.run()

    async def on_turn_start(self, info: TurnStartInfo) -> RunAction:
        return info.run.cancel("enough") if info.turn == 3 else info.run.continue_()


async def test_hook_control_objects_and_helper_functions_make_the_seeds_actions() -> None:
    assert cancel_prompt("why") == run_control.cancel("why") == StopRun("why")
    assert skip_tool("x") == tool_call_control.skip("x") == SkipTool("x")
    assert request_tool_approval("r", "no") == tool_call_control.request_approval("r", "no")
    assert request_tool_approval() == RequestApproval()
    assert tool_call_control.run() is None and run_control.continue_() is None
    hook = create_hook(Controls())
    model = ScriptedModel([calls("Nowhere"), calls("Oslo"), Reply(text="never")])
    agent = AnviaAgent(id="h", model=model, tools=[WEATHER], hooks=[hook])
    with pytest.raises(PromptCancelledError, match="enough") as caught:
        await agent.prompt("go").send()
    results = [r for m in caught.value.chat_history for r in m.tool_results or ()]
    assert results[0].result.message == "no such city"  # skipped, the model saw the reason
    assert len(model.requests) == 2


async def test_streaming_a_model_that_cannot_stream_raises_before_anything_runs() -> None:
    model = ScriptedModel([Reply(text="x")], stream=False)
    agent = AnviaAgent(id="n", model=model)
    with pytest.raises(AgentOptionsError, match="cannot stream"):
        await collect(agent.prompt("hi"))
    assert model.requests == []
    assert (await agent.prompt("hi").send()).output == "x"  # send() is fine
