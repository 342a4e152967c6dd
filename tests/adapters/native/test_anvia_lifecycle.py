"""The Anvia agent passes lifecycle hooks, middlewares and an output schema through to the loop
(the seed's ``hook`` / ``withHook``, ``middlewares`` / ``withMiddleware``, ``outputSchema``)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from adapters.native import AnviaAgent
from adapters.native.anvia import AgentBuilder, PromptCancelledError
from adapters.native.lifecycle import (
    CallNext,
    LifecycleHooks,
    ModelCall,
    SkipTool,
    StopRun,
    ToolCallAction,
    ToolCallInfo,
)
from adapters.native.models.base import ModelResponse
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.tools import ToolContext, tool
from orchestrator.errors import OutputValidationError

from .conftest import CityInput


class Verdict(BaseModel):
    ok: bool


ran: list[str] = []


async def weather(value: CityInput, ctx: ToolContext) -> str:
    ran.append(value.city)
    return f"21 in {value.city}"


WEATHER = tool("get_weather", "Weather for a city.", CityInput, weather)


class Skip(LifecycleHooks):
    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
        return SkipTool(self.reason)


def agent_with(steps: list[Any], **options: Any) -> tuple[AnviaAgent, ScriptedModel]:
    model = ScriptedModel(steps)
    return AnviaAgent(id="a", model=model, tools=[WEATHER], **options), model


def weather_then(text: str) -> list[Any]:
    return [Reply(tool_calls=[("get_weather", {"city": "Oslo"})]), Reply(text=text)]


async def test_the_agent_hook_runs_on_every_request() -> None:
    ran.clear()
    agent, model = agent_with(weather_then("no weather"), hooks=[Skip("weather is off")])
    response = await agent.prompt("Oslo?").send()
    assert response.output == "no weather"
    assert ran == []
    sent = model.requests[1].messages[-1].tool_results
    assert sent is not None and sent[0].result.message == "weather is off"


async def test_with_hook_replaces_the_agent_hook_for_one_request() -> None:
    ran.clear()
    agent, model = agent_with([*weather_then("a"), *weather_then("b")], hooks=[Skip("agent hook")])
    await agent.prompt("Oslo?").with_hook(Skip("request hook")).send()
    sent = model.requests[1].messages[-1].tool_results
    assert sent is not None and sent[0].result.message == "request hook"
    await agent.prompt("Oslo?").with_hook().send()  # no hooks at all for this one
    assert ran == ["Oslo"]


async def test_a_hook_stop_raises_prompt_cancelled_with_its_reason() -> None:
    class Stop(LifecycleHooks):
        async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
            return StopRun("not today")

    agent, _ = agent_with(weather_then("never"), hooks=[Stop()])
    with pytest.raises(PromptCancelledError) as caught:
        await agent.prompt("Oslo?").send()
    assert caught.value.reason == "on_tool_call: not today"
    history = caught.value.chat_history
    assert history[-1].tool_results is not None  # the call was closed with a result


async def test_request_middlewares_run_after_the_agents() -> None:
    trace: list[str] = []

    def named(name: str) -> Any:
        async def middleware(call: ModelCall, call_next: CallNext) -> ModelResponse:
            trace.append(name)
            return await call_next(call.request)

        return middleware

    agent, _ = agent_with([Reply(text="hi")], middlewares=[named("agent")])
    await agent.prompt("hi").with_middleware(named("request")).send()
    assert trace == ["agent", "request"]


async def test_output_schema_gives_a_structured_response_after_a_retry() -> None:
    agent, model = agent_with(
        [Reply(text='{"ok": "perhaps"}'), Reply(text='{"ok": true}')], output_schema=Verdict
    )
    response = await agent.prompt("Is it fine?").send()
    assert response.structured == Verdict(ok=True)
    assert response.output == '{"ok": true}'
    assert "ok: Input should be a valid boolean" in model.requests[1].messages[-2].text


async def test_spent_output_retries_fail_the_run() -> None:
    agent, _ = agent_with(
        [Reply(text="no"), Reply(text="no")], output_schema=Verdict, output_retries=1
    )
    with pytest.raises(OutputValidationError, match="after 2 attempts"):
        await agent.prompt("Is it fine?").send()


async def test_the_builder_sets_hooks_middlewares_and_the_output_schema() -> None:
    async def passthrough(call: ModelCall, call_next: CallNext) -> ModelResponse:
        return await call_next(call.request)

    model = ScriptedModel([])
    hook = Skip("x")
    agent = (
        AgentBuilder("b", model)
        .hook(hook)
        .middleware(passthrough)
        .middlewares([passthrough])
        .output_schema(Verdict, retries=3)
        .build()
    )
    assert agent.hooks == (hook,)
    assert agent.middlewares == (passthrough, passthrough)
    assert agent.output_schema is not None and agent.output_schema.model is Verdict
    assert agent.output_retries == 3
