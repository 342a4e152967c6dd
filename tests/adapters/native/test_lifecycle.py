"""Lifecycle hooks and model-call middlewares (C#24, C#25), point by point."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio

from adapters.native.glove import Glove
from adapters.native.lifecycle import (
    CallNext,
    LifecycleHooks,
    ModelCall,
    ModelErrorInfo,
    ModelMiddleware,
    ModelResponseInfo,
    ReplaceResult,
    RewriteInput,
    RunAction,
    RunEndInfo,
    RunErrorInfo,
    RunStartInfo,
    SkipTool,
    StopRun,
    ToolCallAction,
    ToolCallInfo,
    ToolResultAction,
    ToolResultInfo,
    TurnEndInfo,
    TurnStartInfo,
)
from adapters.native.loop import LoopConfig
from adapters.native.messages import Message, ToolResultData
from adapters.native.models.base import ModelError, ModelResponse
from adapters.native.models.scripted import Fail, Reply, ScriptedModel
from adapters.native.tools import ToolContext

from .conftest import CityInput, EchoInput, Recorder


@attrs.define
class Tally:
    ran: list[tuple[str, Any]] = attrs.field(factory=list[tuple[str, Any]])

    async def weather(self, inp: CityInput, ctx: ToolContext) -> dict[str, Any]:
        self.ran.append(("get_weather", inp.city))
        return {"city": inp.city, "temp": 21}

    async def echo(self, inp: EchoInput, ctx: ToolContext) -> str:
        self.ran.append(("echo", inp.text))
        if inp.delay:
            await trio.sleep(inp.delay)
        if inp.text == "boom":
            raise RuntimeError("boom")
        return inp.text


def make(
    model: ScriptedModel,
    *hooks: LifecycleHooks,
    middlewares: tuple[ModelMiddleware, ...] = (),
    recorder: Recorder | None = None,
    tally: Tally | None = None,
    parallel: bool = False,
    **config: Any,
) -> Glove:
    tally = tally or Tally()
    glove = Glove(
        model=model,
        builtin_tools=False,
        loop_config=LoopConfig(hooks=hooks, middlewares=middlewares, **config),
    )
    glove.fold("get_weather", "Weather.", CityInput, tally.weather, parallel_safe=parallel)
    # "boom" raises: run once (no retries), so each hook sees exactly one attempt
    glove.fold("echo", "Echo.", EchoInput, tally.echo, parallel_safe=parallel, max_retries=0)
    if recorder is not None:
        glove.add_subscriber(recorder)
    return glove.build()


async def stored_results(glove: Glove) -> list[ToolResultData]:
    out: list[ToolResultData] = []
    for m in await glove.store.get_messages():
        out += [r.result for r in m.tool_results or ()]
    return out


class Everything(LifecycleHooks):
    """Records every point it is called at."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_run_start(self, info: RunStartInfo) -> RunAction:
        self.seen.append(f"run_start:{info.prompt.text if info.prompt else None}")
        return None

    async def on_turn_start(self, info: TurnStartInfo) -> RunAction:
        self.seen.append(f"turn_start:{info.turn}")
        return None

    async def on_model_call(self, info: ModelCall) -> RunAction:
        self.seen.append(f"model_call:{info.turn}")
        return None

    async def on_model_response(self, info: ModelResponseInfo) -> RunAction:
        self.seen.append(f"model_response:{info.turn}:{len(info.response.tool_calls)}")
        return None

    async def on_model_error(self, info: ModelErrorInfo) -> RunAction:
        self.seen.append(f"model_error:{info.turn}")
        return None

    async def on_turn_end(self, info: TurnEndInfo) -> RunAction:
        self.seen.append(f"turn_end:{info.turn}")
        return None

    async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
        self.seen.append(f"tool_call:{info.turn}:{info.tool_name}")
        return None

    async def on_tool_result(self, info: ToolResultInfo) -> ToolResultAction:
        self.seen.append(f"tool_result:{info.tool_name}")
        return None

    async def on_tool_error(self, info: ToolResultInfo) -> ToolResultAction:
        self.seen.append(f"tool_error:{info.tool_name}")
        return None

    async def on_run_end(self, info: RunEndInfo) -> RunAction:
        self.seen.append(f"run_end:{info.output}:{info.turns}")
        return None

    async def on_run_error(self, info: RunErrorInfo) -> RunAction:
        self.seen.append(f"run_error:{type(info.error).__name__}")
        return None


def two_turns() -> ScriptedModel:
    return ScriptedModel(
        [
            Reply(tool_calls=[("get_weather", {"city": "Oslo"}), ("echo", {"text": "boom"})]),
            Reply(text="Done."),
        ]
    )


# -- every point, in order -----------------------------------------------------------------


async def test_hooks_are_called_at_every_point_in_run_order() -> None:
    hook = Everything()
    result = await make(two_turns(), hook).process_request("go")
    assert result.stop == "completed"
    assert hook.seen == [
        "run_start:go",
        "turn_start:1",
        "model_call:1",
        "model_response:1:2",
        "turn_end:1",
        "tool_call:1:get_weather",
        "tool_result:get_weather",
        "tool_call:1:echo",
        "tool_error:echo",  # the tool raised: its error result goes to on_tool_error
        "turn_start:2",
        "model_call:2",
        "model_response:2:0",
        "turn_end:2",
        "run_end:Done.:2",
    ]


async def test_hooks_that_override_nothing_are_free_and_change_nothing() -> None:
    model = two_turns()
    glove = make(model, LifecycleHooks())
    assert not glove.agent.lifecycle.wraps_model
    assert not glove.agent.lifecycle.tool_hooks
    result = await glove.process_request("go")
    assert (result.stop, result.text, result.cancel_reason) == ("completed", "Done.", None)


async def test_run_start_sees_the_prompt_and_the_history_before_it() -> None:
    seen: list[RunStartInfo] = []

    class Look(LifecycleHooks):
        async def on_run_start(self, info: RunStartInfo) -> RunAction:
            seen.append(info)
            return None

    glove = make(ScriptedModel([Reply(text="a"), Reply(text="b")]), Look())
    await glove.run_request("one")
    await glove.run_request("two")
    assert [i.prompt.text for i in seen if i.prompt] == ["one", "two"]
    assert [m.text for m in seen[1].history] == ["one", "a"]
    assert seen[0].max_turns == glove.agent.config.max_model_calls


# -- stop the run, at each run-level point ---------------------------------------------------


class StopAt(LifecycleHooks):
    def __init__(self, point: str, turn: int = 1) -> None:
        self.point = point
        self.turn = turn

    def _stop(self, point: str, turn: int = 1) -> RunAction:
        return StopRun(f"stop at {point}") if (point, turn) == (self.point, self.turn) else None

    async def on_run_start(self, info: RunStartInfo) -> RunAction:
        return self._stop("on_run_start")

    async def on_turn_start(self, info: TurnStartInfo) -> RunAction:
        return self._stop("on_turn_start", info.turn)

    async def on_model_call(self, info: ModelCall) -> RunAction:
        return self._stop("on_model_call", info.turn)

    async def on_model_response(self, info: ModelResponseInfo) -> RunAction:
        return self._stop("on_model_response", info.turn)

    async def on_turn_end(self, info: TurnEndInfo) -> RunAction:
        return self._stop("on_turn_end", info.turn)

    async def on_run_end(self, info: RunEndInfo) -> RunAction:
        return self._stop("on_run_end")


async def test_on_run_start_stop_ends_the_run_before_any_model_call() -> None:
    model = two_turns()
    glove = make(model, StopAt("on_run_start"))
    result = await glove.run_request("go")
    assert result.stop == "aborted"
    assert result.cancel_reason == "on_run_start: stop at on_run_start"
    assert model.requests == []
    assert list(await glove.store.get_messages()) == []  # the run never started


@pytest.mark.parametrize("point", ["on_turn_start", "on_model_call"])
async def test_a_stop_before_the_model_call_makes_no_call(point: str) -> None:
    model = two_turns()
    tally = Tally()
    result = await make(model, StopAt(point, turn=2), tally=tally).run_request("go")
    assert result.stop == "aborted"
    assert result.cancel_reason == f"{point}: stop at {point}"
    assert len(model.requests) == 1  # turn 1 ran, turn 2's call was never made
    assert result.turns == 1
    assert tally.ran == [("get_weather", "Oslo"), ("echo", "boom")]


async def test_on_model_response_stop_drops_the_reply_before_its_tools_run() -> None:
    tally = Tally()
    glove = make(two_turns(), StopAt("on_model_response"), tally=tally)
    result = await glove.run_request("go")
    assert (result.stop, result.cancel_reason) == (
        "aborted",
        "on_model_response: stop at on_model_response",
    )
    assert tally.ran == []
    assert [m.text for m in await glove.store.get_messages()] == ["go"]
    assert result.usage.tokens_in == 10  # the dropped reply's usage still counts


async def test_on_turn_end_stop_closes_the_turns_tool_calls_without_running_them(
    recorder: Recorder,
) -> None:
    tally = Tally()
    glove = make(two_turns(), StopAt("on_turn_end"), tally=tally, recorder=recorder)
    result = await glove.run_request("go")
    assert result.stop == "aborted"
    assert tally.ran == []
    results = await stored_results(glove)
    assert [r.status for r in results] == ["aborted", "aborted"]  # no tool_use left dangling
    assert len(recorder.of("tool_use_result")) == 2
    actions = recorder.of("hook_action")
    assert [(a.point, a.action) for a in actions] == [("on_turn_end", "stop")]


async def test_on_run_end_stop_cancels_even_a_finished_run() -> None:
    result = await make(two_turns(), StopAt("on_run_end")).run_request("go")
    assert result.stop == "aborted"
    assert result.text == "Done."
    assert result.cancel_reason == "on_run_end: stop at on_run_end"


# -- model errors ------------------------------------------------------------------------------


class OnModelError(LifecycleHooks):
    def __init__(self, stop: bool) -> None:
        self.stop = stop
        self.errors: list[Exception] = []

    async def on_model_error(self, info: ModelErrorInfo) -> RunAction:
        self.errors.append(info.error)
        return StopRun("model is down") if self.stop else None

    async def on_run_error(self, info: RunErrorInfo) -> RunAction:
        self.errors.append(info.error)
        return None


async def test_on_model_error_sees_the_error_which_still_propagates() -> None:
    hook = OnModelError(stop=False)
    model = ScriptedModel([Fail(ModelError("bad key", "auth", 401))])
    with pytest.raises(ModelError, match="bad key"):
        await make(model, hook).process_request("go")
    assert [type(e).__name__ for e in hook.errors] == ["ModelError", "ModelError"]


async def test_on_model_error_stop_turns_the_failure_into_a_stop() -> None:
    hook = OnModelError(stop=True)
    model = ScriptedModel([Fail(ModelError("bad key", "auth", 401))])
    result = await make(model, hook).run_request("go")
    assert (result.stop, result.cancel_reason) == ("aborted", "on_model_error: model is down")


async def test_transient_failures_are_retried_inside_the_hooked_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hook = Everything()
    model = ScriptedModel([Fail(ModelError("busy", "overloaded", 529)), Reply(text="ok")])
    result = await make(model, hook).process_request("go")
    assert result.text == "ok"
    assert len(model.requests) == 2
    assert hook.seen.count("model_call:1") == 1  # hooks do not run again for a retry
    assert "model_error:1" not in hook.seen


async def test_on_run_error_stop_converts_any_failure() -> None:
    class Convert(LifecycleHooks):
        async def on_run_error(self, info: RunErrorInfo) -> RunAction:
            return StopRun(f"gave up: {info.error}")

    model = ScriptedModel([Fail(ModelError("bad request", "bad_request", 400))])
    result = await make(model, Convert()).run_request("go")
    assert (result.stop, result.cancel_reason) == ("aborted", "on_run_error: gave up: bad request")


async def test_a_hook_that_raises_fails_the_run() -> None:
    class Broken(LifecycleHooks):
        async def on_turn_start(self, info: TurnStartInfo) -> RunAction:
            raise LookupError("hook bug")

    with pytest.raises(LookupError, match="hook bug"):
        await make(two_turns(), Broken()).process_request("go")


# -- tool-call controls ------------------------------------------------------------------------


class ToolControl(LifecycleHooks):
    def __init__(self, action: ToolCallAction, only: str = "get_weather") -> None:
        self.action = action
        self.only = only

    async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
        return self.action if info.tool_name == self.only else None


async def test_skip_does_not_run_the_tool_and_the_model_sees_the_reason(
    recorder: Recorder,
) -> None:
    tally = Tally()
    model = two_turns()
    glove = make(
        model, ToolControl(SkipTool("weather is off today")), tally=tally, recorder=recorder
    )
    result = await glove.run_request("go")
    assert result.stop == "completed"
    assert tally.ran == [("echo", "boom")]
    sent = model.requests[1].messages[-1].tool_results
    assert sent is not None
    assert sent[0].result.status == "error"
    assert sent[0].result.error_kind == "denied"
    assert sent[0].result.message == "weather is off today"
    assert [a.action for a in recorder.of("hook_action")] == ["skip"]


async def test_rewrite_input_runs_the_tool_with_the_new_arguments() -> None:
    tally = Tally()
    result = await make(
        two_turns(), ToolControl(RewriteInput({"city": "Bergen"})), tally=tally
    ).process_request("go")
    assert result.stop == "completed"
    assert tally.ran[0] == ("get_weather", "Bergen")


async def test_a_rewritten_input_is_still_validated() -> None:
    tally = Tally()
    model = two_turns()
    glove = make(model, ToolControl(RewriteInput({"town": "Bergen"})), tally=tally)
    await glove.process_request("go")
    assert ("get_weather", "Bergen") not in tally.ran
    first = (await stored_results(glove))[0]
    assert first.error_kind == "invalid_input"
    assert "city: Field required" in (first.message or "")


async def test_rewrite_input_fixes_arguments_that_were_not_json() -> None:
    tally = Tally()
    from adapters.native.messages import ToolCall

    bad = ToolCall(tool_name="get_weather", input_args="{city:", id="c1", parse_error="bad")
    model = ScriptedModel([Reply(tool_calls=[bad]), Reply(text="ok")])
    await make(model, ToolControl(RewriteInput({"city": "Oslo"})), tally=tally).process_request(
        "go"
    )
    assert tally.ran == [("get_weather", "Oslo")]


async def test_replace_result_before_the_call_answers_it_without_running_the_tool() -> None:
    tally = Tally()
    model = two_turns()
    await make(
        model, ToolControl(ReplaceResult({"city": "Oslo", "temp": -3})), tally=tally
    ).process_request("go")
    assert ("get_weather", "Oslo") not in tally.ran
    sent = model.requests[1].messages[-1].tool_results
    assert sent is not None
    assert sent[0].result.status == "success"
    assert sent[0].result.data == {"city": "Oslo", "temp": -3}


async def test_stop_at_a_tool_call_stops_the_run_and_closes_every_open_call() -> None:
    tally = Tally()
    model = two_turns()
    glove = make(model, ToolControl(StopRun("no weather"), only="get_weather"), tally=tally)
    result = await glove.run_request("go")
    assert (result.stop, result.cancel_reason) == ("aborted", "on_tool_call: no weather")
    assert tally.ran == []  # neither the stopped call nor the one after it ran
    assert len(model.requests) == 1
    results = await stored_results(glove)
    assert [r.status for r in results] == ["aborted", "aborted"]
    assert "on_tool_call: no weather" in (results[0].message or "")


async def test_stop_in_a_parallel_group_cancels_the_running_siblings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tally = Tally()
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[("echo", {"text": "slow", "delay": 10}), ("get_weather", {"city": "X"})]
            ),
            Reply(text="never"),
        ]
    )

    class StopWeather(LifecycleHooks):
        async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
            if info.tool_name == "get_weather":
                await trio.sleep(1)  # the echo call is running by now
                return StopRun("stop")
            return None

    glove = make(model, StopWeather(), tally=tally, parallel=True)
    began = trio.current_time()
    result = await glove.run_request("go")
    assert result.stop == "aborted"
    assert trio.current_time() - began < 5  # the 10 s sibling was cancelled
    assert tally.ran == [("echo", "slow")]
    assert [r.status for r in await stored_results(glove)] == ["aborted", "aborted"]


# -- after the call --------------------------------------------------------------------------


async def test_replace_result_after_the_call_is_what_the_model_sees_and_hooks_chain() -> None:
    class Redact(LifecycleHooks):
        async def on_tool_result(self, info: ToolResultInfo) -> ToolResultAction:
            return ReplaceResult({**info.result.data, "temp": "<redacted>"})

    class Annotate(LifecycleHooks):
        def __init__(self) -> None:
            self.saw: Any = None

        async def on_tool_result(self, info: ToolResultInfo) -> ToolResultAction:
            self.saw = info.result.data
            return ReplaceResult(f"{info.result.data['city']}: {info.result.data['temp']}")

    model = two_turns()
    second = Annotate()
    await make(model, Redact(), second).process_request("go")
    assert second.saw == {"city": "Oslo", "temp": "<redacted>"}
    sent = model.requests[1].messages[-1].tool_results
    assert sent is not None
    assert sent[0].result.data == "Oslo: <redacted>"


async def test_on_tool_error_may_replace_an_error_result() -> None:
    class Soften(LifecycleHooks):
        async def on_tool_error(self, info: ToolResultInfo) -> ToolResultAction:
            assert info.result.is_error
            return ReplaceResult(f"echo failed, carry on ({info.args['text']})")

    model = two_turns()
    await make(model, Soften()).process_request("go")
    sent = model.requests[1].messages[-1].tool_results
    assert sent is not None
    assert [r.result.status for r in sent] == ["success", "success"]
    assert sent[1].result.data == "echo failed, carry on (boom)"


async def test_stop_after_a_call_keeps_its_real_result() -> None:
    class StopAfter(LifecycleHooks):
        async def on_tool_result(self, info: ToolResultInfo) -> ToolResultAction:
            return StopRun("seen enough")

    tally = Tally()
    glove = make(two_turns(), StopAfter(), tally=tally)
    result = await glove.run_request("go")
    assert (result.stop, result.cancel_reason) == ("aborted", "on_tool_result: seen enough")
    assert tally.ran == [("get_weather", "Oslo")]
    results = await stored_results(glove)
    assert [r.status for r in results] == ["success", "aborted"]
    assert results[0].data == {"city": "Oslo", "temp": 21}


async def test_result_hooks_see_skipped_calls_with_the_effective_arguments() -> None:
    seen: list[tuple[Any, str]] = []

    class Both(LifecycleHooks):
        async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
            if info.tool_name == "echo":
                return SkipTool("no echo")
            return RewriteInput({"city": "Bergen"})

        async def on_tool_result(self, info: ToolResultInfo) -> ToolResultAction:
            seen.append((info.args, info.result.status))
            return None

        async def on_tool_error(self, info: ToolResultInfo) -> ToolResultAction:
            seen.append((info.args, info.result.status))
            return None

    await make(two_turns(), Both()).process_request("go")
    assert seen == [({"city": "Bergen"}, "success"), ({"text": "boom"}, "error")]


# -- order -------------------------------------------------------------------------------------


async def test_hooks_run_in_order_and_the_first_stop_wins() -> None:
    calls: list[str] = []

    class Named(LifecycleHooks):
        def __init__(self, name: str, action: ToolCallAction) -> None:
            self.name = name
            self.action = action

        async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
            calls.append(f"{self.name}:{info.args}")
            return self.action

    first = Named("first", RewriteInput({"city": "Rome"}))
    second = Named("second", SkipTool("skipped by second"))
    third = Named("third", None)
    model = ScriptedModel([Reply(tool_calls=[("get_weather", {"city": "Oslo"})]), Reply(text="k")])
    await make(model, first, second, third).process_request("go")
    assert calls == ["first:{'city': 'Oslo'}", "second:{'city': 'Rome'}"]


# -- middlewares ---------------------------------------------------------------------------------


async def test_middlewares_wrap_the_model_call_outermost_first() -> None:
    trace: list[str] = []

    def named(name: str) -> ModelMiddleware:
        async def middleware(call: ModelCall, call_next: CallNext) -> ModelResponse:
            trace.append(f"{name}>{call.turn}")
            response = await call_next(call.request)
            trace.append(f"{name}<{call.turn}")
            return response

        return middleware

    hook = Everything()
    await make(
        ScriptedModel([Reply(text="hi")]), hook, middlewares=(named("outer"), named("inner"))
    ).process_request("go")
    assert trace == ["outer>1", "inner>1", "inner<1", "outer<1"]
    assert hook.seen[2:4] == ["model_call:1", "model_response:1:0"]


async def test_a_middleware_may_rewrite_the_request() -> None:
    async def add_note(call: ModelCall, call_next: CallNext) -> ModelResponse:
        note = Message(sender="user", text="[note] be brief")
        request = attrs.evolve(
            call.request,
            messages=[*call.request.messages, note],
            tools=[t for t in call.request.tools if t.name != "echo"],
        )
        return await call_next(request)

    model = ScriptedModel([Reply(text="hi")])
    glove = make(model, middlewares=(add_note,))
    await glove.process_request("go")
    sent = model.requests[0]
    assert sent.messages[-1].text == "[note] be brief"
    assert [t.name for t in sent.tools] == ["get_weather"]
    assert [m.text for m in await glove.store.get_messages()] == ["go", "hi"]  # not stored


async def test_a_middleware_may_replace_the_response_or_answer_without_the_model() -> None:
    async def shout(call: ModelCall, call_next: CallNext) -> ModelResponse:
        response = await call_next(call.request)
        return attrs.evolve(response, text=response.text.upper())

    async def cached(call: ModelCall, call_next: CallNext) -> ModelResponse:
        return ModelResponse(text="from cache")

    model = ScriptedModel([Reply(text="hi")])
    result = await make(model, middlewares=(shout,)).process_request("go")
    assert result.text == "HI"
    model = ScriptedModel([Reply(text="never")])
    result = await make(model, middlewares=(cached,)).process_request("go")
    assert (result.text, model.requests) == ("from cache", [])


async def test_middlewares_do_not_wrap_the_compaction_call() -> None:
    from adapters.native.compaction import CompactionConfig

    seen: list[int] = []

    async def count(call: ModelCall, call_next: CallNext) -> ModelResponse:
        seen.append(call.turn)
        return await call_next(call.request)

    model = ScriptedModel([Reply(text="a"), Reply(text="summary"), Reply(text="b")])
    glove = Glove(
        model=model,
        builtin_tools=False,
        loop_config=LoopConfig(middlewares=(count,)),
        compaction_config=CompactionConfig(max_turns=1),
    ).build()
    await glove.process_request("one")
    await glove.process_request("two")
    assert len(model.requests) == 3
    assert seen == [1, 1]  # each request's turn 1; the compaction call in between is not wrapped


# -- through the adapter -------------------------------------------------------------------------


async def test_the_adapter_runs_its_hooks_and_a_stop_ends_in_done_aborted() -> None:
    from adapters.native import NativeAdapter
    from adapters.native.tools import tool
    from contract import check_stream, collect_run
    from orchestrator.core import Done, StartOpts, Status, TaskHandle, ToolResult

    tally = Tally()
    model = two_turns()
    adapter = NativeAdapter(
        model_factory=lambda opts: model,
        tools=[
            tool("get_weather", "Weather.", CityInput, tally.weather),
            tool("echo", "Echo.", EchoInput, tally.echo),
        ],
        workspace_tools=False,
        builtin_tools=False,
        hooks=[ToolControl(StopRun("no weather via the adapter"))],
    )
    async with adapter:
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="go")
        )
        events = await collect_run(adapter.events(run), deadline_s=30)
    check_stream(events)  # every tool call closed by a result, one done, last
    done = events[-1]
    assert isinstance(done, Done)
    assert (done.reason, done.summary) == ("aborted", "on_tool_call: no weather via the adapter")
    details = [e.detail for e in events if isinstance(e, Status)]
    assert "hook on_tool_call: stop (no weather via the adapter)" in details
    assert all(e.is_error for e in events if isinstance(e, ToolResult))
    assert tally.ran == []


async def test_readme_hook_and_output_schema_examples_run() -> None:
    """The native runtime page's (docs/runtimes/native.md) lifecycle section: the hook skips a force push, the middleware times the
    call, and the output-schema Glove answers a validated ``Forecast``."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "docs" / "runtimes" / "native.md").read_text()
    section = readme[readme.index("## The native runtime's lifecycle hooks") :]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)[:2]
    hook_ns: dict[str, Any] = {}
    exec(compile(blocks[0], "docs/runtimes/native.md", "exec"), hook_ns)
    schema_ns: dict[str, Any] = {}
    exec(compile(blocks[1], "docs/runtimes/native.md", "exec"), schema_ns)

    ran: list[str] = []

    class Command(EchoInput):
        command: str = ""

    async def bash(inp: Command, ctx: ToolContext) -> str:
        ran.append(inp.command)
        return "ok"

    model = ScriptedModel(
        [
            Reply(tool_calls=[("bash", {"command": "git push --force"})]),
            Reply(tool_calls=[("bash", {"command": "git push"})]),
            Reply(text="pushed"),
        ]
    )
    glove = Glove(
        model=model,
        builtin_tools=False,
        loop_config=LoopConfig(hooks=[hook_ns["NoForcePush"]()], middlewares=[hook_ns["timed"]]),
    )
    glove.fold("bash", "Run a command.", Command, bash).build()
    await glove.process_request("push it")
    assert ran == ["git push"]
    first = model.requests[1].messages[-1].tool_results
    assert first is not None
    assert first[0].result.message == "force-pushing is not allowed; push normally"
    assert len(hook_ns["timings"]) == 3
    assert hook_ns["adapter"].id == "native"

    forecast = schema_ns["glove"]
    forecast.set_model(ScriptedModel([Reply(text='{"city": "Oslo", "temp_c": -2}')]))
    result = await forecast.process_request("Weather in Oslo?")
    assert result.output == schema_ns["Forecast"](city="Oslo", temp_c=-2)
