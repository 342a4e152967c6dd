"""Rules of ``anvia-core-agent.txt`` (the agent surface, issue #21 part A), one test named after
each rule: options and validation, prompt / send / stream, max turns and cancellation, sessions
with the save policies, agents as tools, get_tool / call_tool, dynamic context and tools, skill
sets. Models are the in-process scripted model; providers' request bodies are checked through
the real SDKs over ``httpx2.MockTransport``."""

from __future__ import annotations

import json
import pickle
import re
import sys
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest
import trio
from pydantic import BaseModel

from adapters.native.anvia import (
    DEFAULT_MAX_TURNS,
    AgentBuilder,
    AgentDone,
    AgentError,
    AgentFinal,
    AgentStreamEvent,
    AgentTextDelta,
    AgentToolEvent,
    AgentToolResult,
    AgentTurnStart,
    AnviaAgent,
    Document,
    DynamicContext,
    DynamicTools,
    InMemoryAgentMemory,
    KeywordIndex,
    MemoryContext,
    SearchResult,
    SqliteAgentMemory,
    skill_set,
)
from adapters.native.content_skills import ContentSkill
from adapters.native.glove import SessionBusyError
from adapters.native.lifecycle import (
    CallNext,
    LifecycleHooks,
    ModelCall,
    ModelMiddleware,
    RunAction,
    SkipTool,
    StopRun,
    ToolCallAction,
    ToolCallInfo,
    TurnStartInfo,
)
from adapters.native.mcp import McpStdioServer
from adapters.native.messages import Message, format_tool_result_content
from adapters.native.models.anthropic import AnthropicModel
from adapters.native.models.base import (
    ModelError,
    ModelOptions,
    ModelResponse,
    PromptRequest,
    SpecificTool,
    SystemPrompt,
)
from adapters.native.models.openai_chat import OpenAIChatModel
from adapters.native.models.openai_responses import OpenAIResponsesModel
from adapters.native.models.scripted import Delta, Fail, Reply, ScriptedModel, Sleep
from adapters.native.subscriber import NotifyFn
from adapters.native.tools import Tool, ToolContext, tool
from orchestrator.core.errors import (
    AgentOptionsError,
    ConfigError,
    MaxTurnsError,
    McpStartError,
    PromptCancelledError,
    RingleaderError,
    ToolCallError,
)

# -- fixtures -------------------------------------------------------------------------------------


class CityInput(BaseModel):
    city: str


async def weather(value: CityInput, ctx: ToolContext) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {"city": value.city, "temp": 21}


WEATHER = tool("get_weather", "Weather for a city.", CityInput, weather)


def tool_turn(city: str = "Oslo") -> Reply:
    return Reply(tool_calls=[("get_weather", {"city": city})])


def make(steps: list[Any] | None = None, **options: Any) -> tuple[AnviaAgent, ScriptedModel]:
    model = ScriptedModel(steps or [])
    options.setdefault("tools", [WEATHER])
    return AnviaAgent(id="weather", model=model, **options), model


async def collect(agent_request: Any) -> list[AgentStreamEvent]:
    events: list[AgentStreamEvent] = []
    async with agent_request.stream() as stream:
        async for event in stream:
            events.append(event)
    return events


# -- Agent and its options ------------------------------------------------------------------------


async def test_the_constructor_throws_type_error_when_id_is_not_a_non_empty_string() -> None:
    model = ScriptedModel([])
    for bad in ("", "   ", None, 7):
        with pytest.raises(TypeError, match="non-empty string"):
            AnviaAgent(id=bad, model=model)  # pyright: ignore[reportArgumentType]
    with pytest.raises(RingleaderError):
        AnviaAgent(id="", model=model)
    assert AnviaAgent(id="  support ", model=model).id == "support"


async def test_agent_builder_mutators_return_the_builder_and_build_returns_an_agent() -> None:
    model = ScriptedModel([Reply(text="ok")])
    builder = AgentBuilder("support", model)
    same = (
        builder.name("Support")
        .description("Answers questions.")
        .instructions("Be brief.")
        .instructions("Be kind.")
        .context("Opening hours: 9-17.", "hours")
        .tool(WEATHER)
        .tools([WEATHER])
        .temperature(0.1)
        .max_tokens(50)
        .additional_params({"top_p": 0.9})
        .tool_choice("auto")
        .default_max_turns(3)
        .memory(InMemoryAgentMemory(), save_policy="turn")
    )
    assert same is builder
    agent = builder.build()
    assert (agent.id, agent.name, agent.description) == ("support", "Support", "Answers questions.")
    assert agent.instructions == "Be brief.\n\nBe kind."
    assert [d.id for d in agent.static_context] == ["hours"]
    assert len(agent.tools) == 1 and agent.default_max_turns == 3 and agent.save_policy == "turn"
    with pytest.raises(TypeError):
        AgentBuilder(" ", model).build()


async def test_the_agent_is_an_immutable_configuration_around_one_completion_model() -> None:
    agent, model = make([Reply(text="a"), Reply(text="b")], name="W", description="Weather.")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        agent.name = "other"  # pyright: ignore[reportAttributeAccessIssue]
    warmer = attrs.evolve(agent, temperature=0.7)
    assert (agent.temperature, warmer.temperature) == (None, 0.7)
    await agent.prompt("x").send()
    await warmer.prompt("x").send()
    assert [r.options.temperature for r in model.requests] == [None, 0.7]


async def test_instructions_blocks_are_joined_with_blank_lines_and_sent_as_the_system_prompt() -> (
    None
):
    agent, model = make(instructions=["Be brief.", "Answer in French."])
    assert agent.instructions == "Be brief.\n\nAnswer in French."
    assert agent.bound_model().model == model.model
    bound = agent.bound_model()
    assert isinstance(bound, ScriptedModel)
    assert bound.system_prompt == "Be brief.\n\nAnswer in French."
    assert model.system_prompt == ""  # the caller's model is not changed


async def test_a_duplicate_tool_name_replaces_the_earlier_tool() -> None:
    async def other(value: CityInput, ctx: ToolContext) -> str:
        return "replaced"

    agent, _ = make(tools=[WEATHER, tool("get_weather", "Other.", CityInput, other)])
    assert len(agent.tools) == 1 and agent.tools[0].description == "Other."


async def test_temperature_tool_choice_and_additional_params_reach_the_model_request() -> None:
    params = {"top_p": 0.5, "metadata": {"user": "u1"}}
    agent, model = make(
        [Reply(text="ok")],
        temperature=0.2,
        tool_choice="required",
        additional_params=params,
        max_tokens=123,
    )
    await agent.prompt("x").send()
    request = model.requests[0]
    assert request.options == ModelOptions(0.2, "required", params)
    assert request.max_tokens == 123


async def test_default_max_turns_must_be_a_non_negative_integer() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(AgentOptionsError, match="max_turns"):
            make(default_max_turns=bad)
    agent, _ = make()
    with pytest.raises(AgentOptionsError):
        agent.prompt("x").max_turns(-2)


# -- additional model parameters per provider -----------------------------------------------------


def _capture(bodies: list[dict[str, Any]], reply: dict[str, Any]) -> httpx2.AsyncClient:
    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=reply)

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


ANTHROPIC_REPLY: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
CHAT_REPLY: dict[str, Any] = {
    "id": "c1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-x",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}
RESPONSES_REPLY: dict[str, Any] = {
    "id": "r1",
    "object": "response",
    "created_at": 1,
    "model": "gpt-x",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "m1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 3,
        "output_tokens": 1,
        "total_tokens": 4,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}


async def test_additional_params_are_passed_to_every_provider_that_supports_them() -> None:
    extra = {"top_k": 5, "service_tier": "auto"}
    choice = SpecificTool("get_weather")
    bodies: list[dict[str, Any]] = []
    anthropic = AnthropicModel(
        "claude-x", http_client=_capture(bodies, ANTHROPIC_REPLY), stream=False
    )
    chat = OpenAIChatModel("gpt-x", http_client=_capture(bodies, CHAT_REPLY), stream=False)
    responses = OpenAIResponsesModel(
        "gpt-x", http_client=_capture(bodies, RESPONSES_REPLY), stream=False
    )
    agents = [
        # this Anthropic SDK's Messages API takes no temperature (refused: next test)
        AnviaAgent(
            id="a", model=anthropic, tools=[WEATHER], tool_choice=choice, additional_params=extra
        ),
        AnviaAgent(
            id="b",
            model=chat,
            tools=[WEATHER],
            tool_choice=choice,
            additional_params=extra,
            temperature=0.4,
        ),
        AnviaAgent(
            id="c",
            model=responses,
            tools=[WEATHER],
            tool_choice=choice,
            additional_params=extra,
            temperature=0.4,
        ),
    ]
    for agent in agents:
        assert (await agent.prompt("x").send()).output == "ok"
    for body in bodies:
        assert body["top_k"] == 5 and body["service_tier"] == "auto"
    assert "temperature" not in bodies[0]
    assert bodies[1]["temperature"] == bodies[2]["temperature"] == 0.4
    assert bodies[0]["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert bodies[1]["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert bodies[2]["tool_choice"] == {"type": "function", "name": "get_weather"}


async def test_additional_params_are_refused_clearly_where_a_model_does_not_support_them() -> None:
    @attrs.define
    class BareModel:
        """A third-party adapter that declares no request options."""

        name: str = "bare:m"
        model: str = "m"

        def set_system_prompt(self, prompt: SystemPrompt) -> None:
            del prompt

        def with_model(self, model: str) -> BareModel:
            return BareModel(model=model)

        async def prompt(self, request: PromptRequest, notify: NotifyFn) -> ModelResponse:
            return ModelResponse(text="ok")

    AnviaAgent(id="a", model=BareModel())  # no options: fine
    with pytest.raises(AgentOptionsError, match=r"bare:m does not accept additional_params"):
        AnviaAgent(id="a", model=BareModel(), additional_params={"top_k": 1})
    claude = AnthropicModel("claude-x", api_key="k")
    with pytest.raises(ConfigError, match=r"anthropic:claude-x: .* takes no temperature"):
        AnviaAgent(id="a", model=claude, temperature=0.5)
    gpt = OpenAIChatModel("gpt-x", api_key="k")
    with pytest.raises(ConfigError, match=r"temperature 2.5 is outside 0..2"):
        AnviaAgent(id="a", model=gpt, temperature=2.5)
    with pytest.raises(AgentOptionsError, match="may not set messages"):
        AnviaAgent(id="a", model=claude, additional_params={"messages": []})


# -- prompt, send, stream -------------------------------------------------------------------------


async def test_prompt_creates_a_single_use_prompt_request() -> None:
    agent, _ = make([Reply(text="one")])
    request = agent.prompt("hi")
    assert request.state == "idle"
    await request.send()
    assert request.state == "completed"
    with pytest.raises(AgentOptionsError, match="already been used"):
        await request.send()


async def test_prompt_message_list_treats_the_last_message_as_the_prompt_and_the_rest_as_stateless_history() -> (
    None
):
    agent, model = make([Reply(text="Paris")])
    history = [
        Message(sender="user", text="I live in France."),
        Message(sender="agent", text="Nice."),
    ]
    response = await agent.prompt([*history, Message(sender="user", text="Capital?")]).send()
    sent = model.requests[0].messages
    assert [m.text for m in sent] == ["I live in France.", "Nice.", "Capital?"]
    # the history is not part of the response's messages, and nothing is kept between prompts
    assert [m.text for m in response.messages] == ["Capital?", "Paris"]
    model.push(Reply(text="?"))
    await agent.prompt("again").send()
    assert [m.text for m in model.requests[1].messages] == ["again"]
    with pytest.raises(AgentOptionsError):
        agent.prompt([])


async def test_send_resolves_a_final_prompt_response_with_output_usage_and_new_messages() -> None:
    agent, _ = make([tool_turn(), Reply(text="21 in Oslo", tokens_in=7, tokens_out=3)])
    response = await agent.prompt("weather?").send()
    assert response.output == "21 in Oslo"
    assert (response.usage.tokens_in, response.usage.tokens_out) == (17, 8)
    assert [m.sender for m in response.messages] == ["user", "agent", "user", "agent"]
    assert response.messages[2].tool_results is not None
    assert response.run_id


async def test_stream_yields_turn_tool_and_final_events_in_order_with_turn_numbers() -> None:
    agent, _ = make([tool_turn(), Reply(text="21 in Oslo")])
    events = await collect(agent.prompt("weather?"))
    assert [(e.type, getattr(e, "turn", None)) for e in events] == [
        ("turn_start", 1),
        ("tool_call", 1),
        ("turn_end", 1),
        ("tool_result", 1),
        ("turn_start", 2),
        ("text_delta", 2),
        ("turn_end", 2),
        ("final", None),
        ("done", None),
    ]
    first, second = events[0], events[4]
    assert isinstance(first, AgentTurnStart) and first.prompt.text == "weather?"
    assert isinstance(second, AgentTurnStart) and second.prompt.tool_results is not None
    assert len(second.history) == 2
    result = events[3]
    assert isinstance(result, AgentToolResult)
    assert json.loads(result.args) == {"city": "Oslo"}
    assert json.loads(result.result) == {"city": "Oslo", "temp": 21}
    assert result.tool_call_id and result.internal_call_id and not result.is_error


async def test_the_terminal_final_event_includes_the_run_id() -> None:
    agent, _ = make([Reply(text="ok")])
    events = await collect(agent.prompt("x"))
    final, done = events[-2], events[-1]
    assert isinstance(final, AgentFinal) and isinstance(done, AgentDone)
    assert final.run_id == done.run_id != "" and done.reason == "completed"
    assert final.output == "ok" and [m.text for m in final.messages] == ["x", "ok"]


async def test_terminal_failures_are_yielded_as_an_error_event_then_done() -> None:
    err = ModelError("HTTP 401: bad key", "auth", 401)
    agent, _ = make([Fail(err)])
    events = await collect(agent.prompt("x"))
    assert [e.type for e in events] == ["turn_start", "error", "done"]
    error, done = events[1], events[2]
    assert isinstance(error, AgentError) and error.error is err
    assert isinstance(done, AgentDone) and done.reason == "error"
    agent, _ = make([Fail(err)])
    with pytest.raises(ModelError):
        await agent.prompt("x").send()


# -- max turns and cancellation -------------------------------------------------------------------


async def test_default_max_turns_is_20() -> None:
    assert DEFAULT_MAX_TURNS == 20
    agent, model = make([tool_turn() for _ in range(25)])
    assert agent.default_max_turns == 20
    with pytest.raises(MaxTurnsError):
        await agent.prompt("loop").send()
    assert len(model.requests) == 20  # an exact cap (Anvia's allows 22: B.20 #1)


async def test_max_turns_error_when_the_tool_loop_exceeds_the_turn_limit() -> None:
    agent, model = make([tool_turn(), tool_turn(), tool_turn()])
    with pytest.raises(MaxTurnsError) as caught:
        await agent.prompt("loop").max_turns(2).send()
    err = caught.value
    assert (err.max_turns, str(err)) == (2, "Reached max turn limit: 2")
    assert err.prompt.text == "loop" and len(model.requests) == 2
    # the history has every call closed by its result
    assert [m.sender for m in err.chat_history] == ["user", "agent", "user", "agent", "user"]
    again = pickle.loads(pickle.dumps(err))
    assert again.max_turns == 2 and len(again.chat_history) == 5


async def test_max_turns_ends_the_event_stream_with_done_max_turns() -> None:
    agent, _ = make([tool_turn(), tool_turn()])
    events = await collect(agent.prompt("loop").max_turns(1))
    done = events[-1]
    assert isinstance(done, AgentDone) and (done.reason, done.max_turns) == ("max_turns", 1)
    assert not any(isinstance(e, AgentError | AgentFinal) for e in events)


async def test_prompt_cancelled_error_when_the_run_is_cancelled() -> None:
    gate = trio.Event()

    async def slow(value: CityInput, ctx: ToolContext) -> str:
        gate.set()
        await trio.sleep(100)
        return "never"

    agent, _ = make([tool_turn()], tools=[tool("get_weather", "W.", CityInput, slow)])
    request = agent.prompt("x")
    caught: list[PromptCancelledError] = []

    async def run() -> None:
        try:
            await request.send()
        except PromptCancelledError as exc:
            caught.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await gate.wait()
        request.cancel("user pressed stop")
    (err,) = caught
    assert err.reason == "user pressed stop" and str(err) == "Prompt cancelled: user pressed stop"
    results = err.chat_history[-1].tool_results
    assert results is not None and results[0].result.status == "aborted"
    assert request.state == "cancelled"


async def test_closing_the_stream_early_cancels_the_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent, model = make([Sleep(50), Reply(text="late")])
    request = agent.prompt("x")
    async with request.stream() as events:
        async for event in events:
            assert event.type == "turn_start"
            break
    assert request.state == "cancelled"
    assert model.remaining == 1  # the reply was never produced
    # an error of the caller's inside the block comes out as itself (not in a group)
    agent, _ = make([Sleep(50), Reply(text="late")])
    with pytest.raises(KeyError):
        async with agent.prompt("x").stream() as events:
            async for _event in events:
                raise KeyError("mine")


# -- sessions and memory --------------------------------------------------------------------------


async def test_session_throws_when_no_memory_store_is_configured_or_the_session_id_is_empty() -> (
    None
):
    agent, _ = make()
    with pytest.raises(AgentOptionsError, match="no memory"):
        agent.session("s1")
    agent, _ = make(memory=InMemoryAgentMemory())
    with pytest.raises(AgentOptionsError, match="non-empty"):
        agent.session("  ")


async def test_session_prompt_loads_messages_from_the_memory_store_before_the_run() -> None:
    agent, model = make([Reply(text="Hi Ada."), Reply(text="Ada.")], memory=InMemoryAgentMemory())
    session = agent.session("s1", user_id="u1")
    await session.prompt("I am Ada.").send()
    response = await session.prompt("Who am I?").send()
    assert [m.text for m in model.requests[1].messages] == [
        "I am Ada.",
        "Hi Ada.",
        "Who am I?",
    ]
    assert [m.text for m in response.messages] == ["Who am I?", "Ada."]
    assert [m.text for m in await session.messages()] == [
        "I am Ada.",
        "Hi Ada.",
        "Who am I?",
        "Ada.",
    ]
    # another user's session with the same id is another transcript
    assert await agent.session("s1", user_id="u2").messages() == []


async def test_session_prompts_do_not_accept_message_lists() -> None:
    agent, _ = make(memory=InMemoryAgentMemory())
    with pytest.raises(AgentOptionsError, match="stateless transcript"):
        agent.session("s1").prompt([Message(sender="user", text="x")])  # pyright: ignore[reportArgumentType]


async def test_session_clear_removes_the_stored_conversation() -> None:
    agent, _ = make([Reply(text="a")], memory=InMemoryAgentMemory())
    session = agent.session("s1")
    await session.prompt("x").send()
    assert len(await session.messages()) == 2
    await session.clear()
    assert await session.messages() == []


async def test_one_run_at_a_time_per_session(autojump_clock: trio.testing.MockClock) -> None:
    agent, _ = make([Sleep(5), Reply(text="a")], memory=InMemoryAgentMemory())
    session = agent.session("s1")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.prompt("first").send)
        await trio.sleep(1)
        with pytest.raises(SessionBusyError):
            await session.prompt("second").send()


async def test_save_policy_defaults_to_message() -> None:
    agent, _ = make(memory=InMemoryAgentMemory())
    assert agent.save_policy == "message"
    with pytest.raises(AgentOptionsError, match="save_policy"):
        make(memory=InMemoryAgentMemory(), save_policy="always")


async def _rows_after_failure(
    policy: str, memory: InMemoryAgentMemory | SqliteAgentMemory
) -> list[tuple[int, str]]:
    """Turn 1 calls a tool, turn 2 calls it again, then the model fails: what was written."""
    agent, _ = make(
        [tool_turn("A"), tool_turn("B"), Fail(ModelError("HTTP 400: bad", "bad_request", 400))],
        memory=memory,
        save_policy=policy,
    )
    session = agent.session("s1")
    appended: list[tuple[int, str]] = []
    with pytest.raises(ModelError):
        await session.prompt("go").send()
    for _run, turn, msg in await memory.rows(session.context):
        kind = "results" if msg.tool_results else ("calls" if msg.tool_calls else msg.text)
        appended.append((turn, kind))
    return appended


async def test_message_policy_appends_each_message_as_produced_and_a_tool_call_with_its_results() -> (
    None
):
    memory = InMemoryAgentMemory()
    rows = await _rows_after_failure("message", memory)
    assert rows == [(1, "go"), (1, "calls"), (1, "results"), (2, "calls"), (2, "results")]


async def test_turn_policy_appends_complete_turns_so_earlier_turns_survive_a_later_failure() -> (
    None
):
    memory = InMemoryAgentMemory()
    rows = await _rows_after_failure("turn", memory)
    assert rows == [(1, "go"), (1, "calls"), (1, "results"), (2, "calls"), (2, "results")]
    # a turn is written at once: the failing third turn wrote nothing; a cancelled turn neither
    agent, _ = make([tool_turn()], memory=memory, save_policy="turn")
    session = agent.session("s2")
    with pytest.raises(MaxTurnsError):
        await session.prompt("go").max_turns(0).send()
    assert await session.messages() == []


async def test_run_policy_appends_all_new_messages_only_after_a_successful_final() -> None:
    memory = InMemoryAgentMemory()
    assert await _rows_after_failure("run", memory) == []
    agent, _ = make([tool_turn(), Reply(text="done")], memory=memory, save_policy="run")
    session = agent.session("s3")
    await session.prompt("go").send()
    rows = await memory.rows(session.context)
    assert [m.sender for _, _, m in rows] == ["user", "agent", "user", "agent"]


async def test_record_error_keeps_the_failed_runs_error_and_messages() -> None:
    memory = InMemoryAgentMemory()
    await _rows_after_failure("run", memory)
    (recorded,) = memory.errors[MemoryContext("s1").scope_key]
    assert recorded.error_type == "ModelError" and "bad" in recorded.error
    assert [m.sender for m in recorded.messages] == ["user", "agent", "user", "agent", "user"]


async def test_sqlite_memory_keeps_sessions_across_reopening_with_the_save_policies(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    memory = SqliteAgentMemory(path)
    rows = await _rows_after_failure("message", memory)
    assert rows == [(1, "go"), (1, "calls"), (1, "results"), (2, "calls"), (2, "results")]
    (recorded,) = await memory.errors(MemoryContext("s1"))
    assert recorded.error_type == "ModelError"
    memory.close()
    reopened = SqliteAgentMemory(path)
    agent, model = make([Reply(text="welcome back")], memory=reopened)
    await agent.session("s1").prompt("still there?").send()
    assert len(model.requests[0].messages) == 6  # 5 stored + the prompt
    await agent.session("s1").clear()
    assert await agent.session("s1").messages() == []
    reopened.close()


# -- agents as tools, get_tool, call_tool ---------------------------------------------------------


async def test_as_tool_exposes_the_agent_as_a_tool_that_returns_the_nested_output_string() -> None:
    child, child_model = make([Reply(text="It is 21 in Oslo.")], description="Knows the weather.")
    tool_ = child.as_tool("weather_agent")
    assert tool_.description == "Knows the weather."
    assert tool_.definition.input_schema["required"] == ["prompt"]
    parent = AnviaAgent(
        id="boss",
        model=ScriptedModel(
            [Reply(tool_calls=[("weather_agent", {"prompt": "Oslo?"})]), Reply(text="21.")]
        ),
        tools=[tool_],
    )
    response = await parent.prompt("weather?").send()
    results = response.messages[2].tool_results
    assert results is not None and results[0].result.data == "It is 21 in Oslo."
    assert [m.text for m in child_model.requests[0].messages] == ["Oslo?"]  # stateless child
    # the child's usage is rolled into the parent's (two parent calls, one child call)
    assert (response.usage.tokens_in, response.usage.tokens_out) == (30, 15)
    assert AnviaAgent(id="x", model=child_model).as_tool("helper").description == (
        "Prompt the helper agent."
    )


async def test_as_tool_stream_forwards_child_stream_events_when_the_parent_run_uses_stream() -> (
    None
):
    child, _ = make([Reply(text="21 in Oslo")], name="Weatherman")
    parent = AnviaAgent(
        id="boss",
        model=ScriptedModel(
            [Reply(tool_calls=[("ask_weather", {"prompt": "Oslo?"})]), Reply(text="21.")]
        ),
        tools=[child.as_tool("ask_weather", stream=True)],
    )
    events = await collect(parent.prompt("weather?"))
    forwarded = [e for e in events if isinstance(e, AgentToolEvent)]
    assert [e.event.type for e in forwarded] == [
        "turn_start",
        "text_delta",
        "turn_end",
        "final",
        "done",
    ]
    first = forwarded[0]
    assert (first.agent_id, first.agent_name, first.tool_name, first.turn) == (
        "weather",
        "Weatherman",
        "ask_weather",
        1,
    )
    result = next(e for e in events if isinstance(e, AgentToolResult))
    assert result.result == "21 in Oslo" and result.internal_call_id == first.internal_call_id
    # the child's events come after the parent's turn_end and before the tool result
    kinds = [e.type for e in events]
    assert kinds.index("turn_end") < kinds.index("agent_tool_event") < kinds.index("tool_result")
    # sent, not streamed: nothing is forwarded
    parent_model = ScriptedModel(
        [Reply(tool_calls=[("ask_weather", {"prompt": "Oslo?"})]), Reply(text="21.")]
    )
    child2, _ = make([Reply(text="21 in Oslo")])
    quiet = AnviaAgent(
        id="b", model=parent_model, tools=[child2.as_tool("ask_weather", stream=True)]
    )
    assert (await quiet.prompt("x").send()).output == "21."


@pytest.mark.parametrize("stream", [False, True])
async def test_as_tool_forwards_errors_from_the_nested_run_as_the_tools_error_result(
    stream: bool,
) -> None:
    child, _ = make([tool_turn(), tool_turn()])
    parent = AnviaAgent(
        id="boss",
        model=ScriptedModel(
            [Reply(tool_calls=[("helper", {"prompt": "loop"})]), Reply(text="gave up")]
        ),
        tools=[child.as_tool("helper", max_turns=1, stream=stream)],
    )
    request = parent.prompt("x")
    if stream:
        final = (await collect(request))[-2]
        assert isinstance(final, AgentFinal)
        output, messages = final.output, final.messages
    else:
        response = await request.send()
        output, messages = response.output, response.messages
    results = messages[2].tool_results
    assert results is not None
    message = results[0].result.message or ""
    assert results[0].result.is_error and "MaxTurnsError: Reached max turn limit: 1" in message
    assert output == "gave up"  # the parent goes on


async def test_get_tool_resolves_static_tools_first_then_dynamic_tool_sets() -> None:
    async def forecast(value: CityInput, ctx: ToolContext) -> str:
        return "sunny"

    dynamic = tool("get_forecast", "Forecast for a city.", CityInput, forecast)
    agent, _ = make(dynamic_tools=[DynamicTools([dynamic], top_k=1)])
    assert agent.get_tool("get_weather") is WEATHER
    assert agent.get_tool("get_forecast") is dynamic
    assert agent.get_tool("nope") is None


async def test_call_tool_runs_a_tool_with_json_args_and_returns_its_text() -> None:
    agent, _ = make()
    assert json.loads(await agent.call_tool("get_weather", '{"city": "Oslo"}')) == {
        "city": "Oslo",
        "temp": 21,
    }
    with pytest.raises(ToolCallError, match="Tool not found: nope") as caught:
        await agent.call_tool("nope", "{}")
    assert caught.value.kind == "not_found"
    with pytest.raises(ToolCallError) as caught:
        await agent.call_tool("get_weather", "{city")
    assert caught.value.kind == "invalid_input"
    with pytest.raises(ToolCallError, match="city") as caught:
        await agent.call_tool("get_weather", "{}")
    assert caught.value.kind == "invalid_input"


# -- dynamic context, dynamic tools, skills -------------------------------------------------------


def _docs_index() -> KeywordIndex[str]:
    index = KeywordIndex[str]()
    index.add("oslo", "oslo", "Oslo is the capital of Norway.", {"lang": "en"})
    index.add("paris", "paris", "Paris is the capital of France.", {"lang": "en"})
    return index


async def test_dynamic_context_is_retrieved_before_each_turn_from_the_latest_user_text() -> None:
    agent, model = make(
        [tool_turn(), Reply(text="ok")],
        static_context=[Document("style", "Answer in one line.")],
        dynamic_contexts=[DynamicContext(_docs_index(), top_k=1)],
    )
    await agent.prompt("Tell me about Oslo, Norway").send()
    for request in model.requests:  # both turns: the same query, never the tool output
        docs = request.messages[0]
        assert docs.text.startswith("<file id: style>\nAnswer in one line.\n</file>")
        assert '<file id: oslo>\n<metadata lang: "en" />\nOslo is the capital' in docs.text
        assert "paris" not in docs.text
    # documents are context, not conversation
    assert [m.text for m in model.requests[1].messages[1:2]] == ["Tell me about Oslo, Norway"]


async def test_static_tools_are_always_sent_and_matching_dynamic_tools_are_added_after_them() -> (
    None
):
    async def forecast(value: CityInput, ctx: ToolContext) -> str:
        return "sunny"

    async def stocks(value: CityInput, ctx: ToolContext) -> str:
        return "up"

    dynamic = DynamicTools(
        [
            tool("get_forecast", "Weather forecast for a city.", CityInput, forecast),
            tool("get_stocks", "Stock prices.", CityInput, stocks),
            WEATHER,  # deduped by name against the static tool
        ],
        top_k=3,
    )
    agent, model = make(
        [Reply(tool_calls=[("get_forecast", {"city": "Oslo"})]), Reply(text="sunny")],
        dynamic_tools=[dynamic],
    )
    response = await agent.prompt("weather forecast for Oslo").send()
    assert [t.name for t in model.requests[0].tools] == ["get_weather", "get_forecast"]
    results = response.messages[2].tool_results
    assert results is not None and results[0].result.data == "sunny"  # retrieved tools run


async def test_errors_from_the_vector_index_surface_before_the_model_request_is_sent() -> None:
    class BrokenIndex:
        async def search(
            self, query: str, top_k: int, threshold: float | None = None, filter: Any = None
        ) -> list[SearchResult[Any]]:
            raise RuntimeError("index offline")

    agent, model = make(
        [Reply(text="x")], dynamic_contexts=[DynamicContext(BrokenIndex(), top_k=2)]
    )
    with pytest.raises(RuntimeError, match="index offline"):
        await agent.prompt("x").send()
    assert model.requests == []


async def test_a_skill_set_adds_its_instructions_after_the_agents_and_its_read_tool() -> None:
    skills = await skill_set(
        [
            ContentSkill(
                "release", "How to cut a release.", "1. tag 2. push", sections={"tag": "git tag v1"}
            ),
            ContentSkill("secret", "Hidden.", "x", hidden=True),
        ]
    )
    agent, model = make(
        [
            Reply(tool_calls=[("read_skill", {"name": "release", "section": "tag"})]),
            Reply(text="ok"),
        ],
        instructions="Be brief.",
        skills=skills,
    )
    response = await agent.prompt("cut a release").send()
    system = agent.system_prompt
    assert system.startswith("Be brief.\n\nYou have skills")
    assert '<skill name="release" sections="tag">How to cut a release.</skill>' in system
    assert "secret" not in system
    assert "read_skill" in [t.name for t in model.requests[0].tools]
    results = response.messages[2].tool_results
    assert results is not None and "git tag v1" in str(results[0].result.data)


async def test_tools_receive_the_run_through_their_context() -> None:
    seen: list[Any] = []

    async def probe(value: CityInput, ctx: ToolContext) -> str:
        seen.append(ctx.run)
        return "ok"

    agent, _ = make(
        [tool_turn(), Reply(text="done")],
        tools=[Tool(name="get_weather", description="W.", do=probe, input_model=CityInput)],
    )
    await agent.prompt("x").send()
    assert getattr(seen[0], "depth", None) == 0 and seen[0].agent is agent


async def test_the_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[3] / "docs" / "runtimes" / "native.md").read_text(
        encoding="utf-8"
    )
    section = readme.split("## The native runtime's Anvia agent surface", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "docs/runtimes/native.md lost its Anvia agent example"
    namespace: dict[str, Any] = {}
    exec(compile(match.group(1), "docs/runtimes/native.md", "exec"), namespace)
    await namespace["main"]()
    out = capsys.readouterr().out.split()
    assert out[:4] == ["turn_start", "text_delta", "turn_end", "final"]
    assert out[4:] == ["done", "2", "5", "21", "°C.", "forecaster"]


async def test_steer_queues_user_input_for_the_running_request_after_the_tool_results() -> None:
    holder: list[Any] = []

    async def steering(value: CityInput, ctx: ToolContext) -> str:
        assert holder[0].steer("Also Rome, please.")
        return "21"

    agent, model = make(
        [tool_turn(), Reply(text="Oslo 21, Rome 25")],
        tools=[tool("get_weather", "W.", CityInput, steering)],
    )
    request = agent.prompt("Oslo?")
    holder.append(request)
    response = await request.send()
    sent = model.requests[1].messages
    assert sent[-2].tool_results is not None
    assert (sent[-1].text, sent[-1].is_steer) == ("Also Rome, please.", True)
    assert [m.text for m in response.messages][-2:] == ["Also Rome, please.", "Oslo 21, Rome 25"]
    assert request.steer("too late") is False


# -- MCP servers ----------------------------------------------------------------------------------

MCP_SERVER = Path(__file__).with_name("mcp_server.py")


async def test_mcp_servers_add_their_tools_to_every_run_namespaced_by_server() -> None:
    calc = McpStdioServer("calc", sys.executable, [str(MCP_SERVER)])
    agent, model = make(
        [Reply(tool_calls=[("mcp__calc__add", {"a": 2, "b": 3})]), Reply(text="5")],
        mcp_servers=[calc],
    )
    with trio.fail_after(60):
        response = await agent.prompt("2+3?").send()
    assert "mcp__calc__add" in [t.name for t in model.requests[0].tools]
    results = response.messages[2].tool_results
    assert results is not None and not results[0].result.is_error
    assert format_tool_result_content(results[0].result) == "5"
    assert AgentBuilder("b", model).mcp([calc]).build().mcp_servers == (calc,)


async def test_an_mcp_server_that_cannot_start_fails_the_run_with_mcp_start_error() -> None:
    agent, model = make(
        [Reply(text="never")], mcp_servers=[McpStdioServer("gone", "/nonexistent/x")]
    )
    with trio.fail_after(60), pytest.raises(McpStartError, match="gone"):
        await agent.prompt("x").send()
    assert model.requests == []


# -- hooks, middlewares, output schema (the native loop's lifecycle, through the agent) ----------


class Recording(LifecycleHooks):
    def __init__(self, name: str, log: list[str], stop_tool: bool = False) -> None:
        self.name, self.log, self.stop_tool = name, log, stop_tool

    async def on_turn_start(self, info: TurnStartInfo) -> RunAction:
        self.log.append(f"{self.name}:turn{info.turn}")
        return None

    async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
        if self.stop_tool:
            return StopRun(f"no {info.tool_name}")
        return SkipTool("weather is off today")


async def test_a_terminating_hook_produces_prompt_cancelled_error() -> None:
    log: list[str] = []
    agent, _ = make([tool_turn(), Reply(text="never")], hooks=[Recording("h", log, stop_tool=True)])
    with pytest.raises(PromptCancelledError, match="no get_weather") as caught:
        await agent.prompt("x").send()
    results = caught.value.chat_history[-1].tool_results
    assert results is not None and results[0].result.is_error  # the call is closed, not orphaned
    events = await collect(attrs.evolve(agent, model=ScriptedModel([tool_turn()])).prompt("x"))
    done = events[-1]
    assert isinstance(done, AgentDone) and done.reason == "cancelled"
    assert "no get_weather" in (done.cancel_reason or "")


async def test_with_hook_replaces_the_agent_hook_for_one_request() -> None:
    log: list[str] = []
    agent, model = make(
        [tool_turn(), Reply(text="ok"), tool_turn(), Reply(text="ok")],
        hooks=[Recording("agent", log)],
    )
    await agent.prompt("x").send()
    response = await agent.prompt("y").with_hook(Recording("request", log)).send()
    assert log == ["agent:turn1", "agent:turn2", "request:turn1", "request:turn2"]
    # a skipping hook: the model sees the reason as the call's result
    results = response.messages[2].tool_results
    assert results is not None and results[0].result.message == "weather is off today"
    assert model.remaining == 0


async def test_request_middlewares_run_after_the_agents() -> None:
    order: list[str] = []

    def named(name: str) -> ModelMiddleware:
        async def middleware(call: ModelCall, call_next: CallNext) -> ModelResponse:
            order.append(name)
            return await call_next(call.request)

        return middleware

    agent, _ = make([Reply(text="ok")], middlewares=[named("agent")])
    await agent.prompt("x").with_middleware(named("one")).with_middlewares([named("two")]).send()
    assert order == ["agent", "one", "two"]


class Forecast(BaseModel):
    city: str
    temp: int


async def test_output_schema_validates_the_final_answer_with_a_bounded_retry() -> None:
    agent, model = make(
        [Reply(text='{"city": "Oslo"}'), Reply(text='{"city": "Oslo", "temp": 21}')],
        output_schema=Forecast,
    )
    response = await agent.prompt("forecast?").send()
    assert response.structured == Forecast(city="Oslo", temp=21)
    assert "temp" in model.requests[1].messages[-2].text  # the retry named the missing field
    model.push(Reply(text='{"city": "Rome", "temp": 25}'))
    final = (await collect(agent.prompt("and Rome?")))[-2]
    assert isinstance(final, AgentFinal) and final.structured == Forecast(city="Rome", temp=25)
    with pytest.raises(AgentOptionsError, match="output_schema"):
        make(output_schema={"type": "no-such-type"})
    built = AgentBuilder("b", model).output_schema(Forecast).hook(Recording("h", [])).build()
    assert built.output_schema is not None and len(built.hooks) == 1


async def test_a_slow_stream_consumer_gets_every_event_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    deltas = [Delta(f"{i} ") for i in range(200)]  # more than the stream's buffer
    agent, _ = make([*deltas, Reply(text="end")])
    seen: list[str] = []
    async with agent.prompt("count").stream() as events:
        async for event in events:
            if isinstance(event, AgentTextDelta):
                seen.append(event.delta)
            await trio.sleep(1)  # a consumer slower than the run: backpressure, nothing dropped
    assert seen == [f"{i} " for i in range(200)] + ["end"]
