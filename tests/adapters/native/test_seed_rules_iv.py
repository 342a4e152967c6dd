"""Issue 36, Glove core: each test is named after a rule of ``glove-core-api.txt`` /
``glove-core-concepts.txt`` the native runtime did not follow before, and uses the seed's own
example where it gives one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from adapters.native import (
    AbortError,
    CancelToken,
    CompactionConfig,
    Context,
    DisplayManagerAdapter,
    Glove,
    LoopConfig,
    MemoryStore,
    Message,
    Observer,
    PromptMachine,
    ScriptedModel,
    ToolContext,
)
from adapters.native.display import Listener, Renderer, Slot
from adapters.native.lifecycle import LifecycleHooks, StopRun, TurnStartInfo
from adapters.native.models.scripted import Reply
from adapters.native.stores.sqlite import SqliteStore
from adapters.native.subscriber import SubagentCompleted

from .conftest import CityInput, EchoInput, Recorder


async def weather(value: CityInput, ctx: ToolContext) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {"city": value.city, "temp": 21}


def seed_glove(model: ScriptedModel, store: Any = None, **kw: Any) -> Glove:
    """The seed's first example: a Glove with ``compaction_config`` and ``get_weather``."""
    config = kw.pop(
        "compaction_config",
        CompactionConfig(compaction_instructions="Summarize the conversation.", max_turns=30),
    )
    return (
        Glove(
            model=model,
            store=store or MemoryStore("session"),
            system_prompt="You are a helpful assistant.",
            compaction_config=config,
            **kw,
        )
        .fold("get_weather", "Get weather for a city.", CityInput, weather)
        .build()
    )


# -- compaction follows the documented config -------------------------------------------------


async def test_compaction_config_max_turns_is_the_number_of_turns_before_compaction() -> None:
    # the seed's config says max_turns: 30; with 2, five tool rounds are NOT cut at 2 calls:
    # compaction runs once the store has counted 2 turns, and the request goes on to its answer
    rounds = [Reply(tool_calls=[("get_weather", {"city": f"c{i}"})]) for i in range(5)]
    model = ScriptedModel(
        [
            *rounds[:2],
            Reply(text="SUMMARY A"),
            *rounds[2:4],
            Reply(text="SUMMARY B"),
            rounds[4],
            Reply(text="Tokyo is 21."),
        ]
    )
    recorder = Recorder()
    glove = seed_glove(
        model,
        compaction_config=CompactionConfig(
            "Summarize the conversation.", max_turns=2, compaction_context_limit=None
        ),
    )
    glove.add_subscriber(recorder)
    result = await glove.process_request("What is the weather in Tokyo?")
    assert result.stop == "completed" and result.text == "Tokyo is 21."
    assert result.turns == 6  # six loop calls, two summaries besides
    assert recorder.types().count("compaction_start") == 2
    summaries = [r for r in model.requests if r.messages[-1].is_compaction_request]
    assert [s.messages[-1].text for s in summaries] == ["Summarize the conversation."] * 2


async def test_compaction_triggers_on_the_stores_token_consumption_and_a_resumed_session_over_the_limit_compacts_before_its_first_call(
    tmp_path: Any,
) -> None:
    db = tmp_path / "sessions.db"
    first = ScriptedModel([Reply(text="hello", tokens_in=700, tokens_out=400)])
    config = CompactionConfig("Summarize.", compaction_context_limit=1000)
    store = SqliteStore(db, "s1")
    await seed_glove(first, store, compaction_config=config).process_request("hi")
    assert await store.get_token_count() == 1100  # over the limit, in the store
    await store.aclose()
    # a new process resumes the session: the store is over the limit before any call
    resumed_model = ScriptedModel([Reply(text="SUMMARY"), Reply(text="again")])
    resumed = SqliteStore(db, "s1")
    glove = seed_glove(resumed_model, resumed, compaction_config=config)
    await glove.process_request("and now?")
    first_call = resumed_model.requests[0]
    assert first_call.messages[-1].is_compaction_request  # compacted before its first call
    assert resumed_model.requests[1].messages[0].is_compaction
    await resumed.aclose()


async def test_compaction_resets_the_stores_turn_and_token_counts() -> None:
    store = MemoryStore("session")
    model = ScriptedModel(
        [
            Reply(tool_calls=[("get_weather", {"city": "Tokyo"})], tokens_in=600, tokens_out=500),
            Reply(text="SUMMARY", tokens_in=900, tokens_out=50),
            Reply(text="21 degrees", tokens_in=80, tokens_out=20),
        ]
    )
    config = CompactionConfig("Summarize.", compaction_context_limit=1000)
    recorder = Recorder()
    glove = seed_glove(model, store, compaction_config=config)
    glove.add_subscriber(recorder)
    await glove.process_request("weather?")
    end = recorder.of("compaction_end")[0]
    assert end.current_token_consumption == 0  # reset at compaction
    # after it: only the final call is counted (1 turn, 100 tokens)
    assert await store.get_turn_count() == 1
    assert await store.get_token_count() == 100


async def test_compaction_thresholds_are_settable_at_run_time_as_the_seeds_setters_allow() -> None:
    store = MemoryStore("session")
    ctx = Context(store)
    model = ScriptedModel([Reply(text="SUM 1"), Reply(text="SUM 2")])
    pm = PromptMachine(model, ctx, "You are a helpful assistant.")
    # the seed's example: Observer(store, ctx, promptMachine, instructions, 30, 100000)
    observer = Observer(store, ctx, pm, "Summarize the conversation so far.", 30, 100000)
    assert (observer.MAX_TURNS, observer.CONTEXT_COMPACTION_LIMIT) == (30, 100000)
    await ctx.append_messages([Message(sender="user", text="Hello")])
    for _ in range(3):
        await observer.turn_complete()
    await observer.add_tokens_consumed(500)
    assert await observer.get_current_turns() == 3
    assert await observer.get_current_token_consumption() == 500
    assert await observer.try_compaction() is None  # 3 < 30 turns, 500 < 100000 tokens
    observer.set_max_turns(3)
    observer.set_compaction_instructions("Summarize in one line.")
    done = await observer.try_compaction()
    assert done is not None and done.summary.is_compaction
    assert model.requests[0].messages[-1].text == "Summarize in one line."
    assert await observer.get_current_turns() == 0
    observer.set_max_turns(None)
    observer.set_context_compaction_limit(10)
    await observer.add_tokens_consumed(11)
    assert await observer.try_compaction() is not None  # 11 > 10
    # through a Glove: glove.observer is the same object the loop asks
    glove = seed_glove(ScriptedModel([Reply(text="a"), Reply(text="SUM"), Reply(text="b")]))
    await glove.process_request("one")
    glove.observer.set_max_turns(1)
    await glove.process_request("two")
    assert (await glove.store.get_context_messages())[0].is_compaction


async def test_the_loop_cap_is_a_separate_clearly_named_setting_max_model_calls() -> None:
    model = ScriptedModel([Reply(tool_calls=[("get_weather", {"city": "x"})])] * 5)
    glove = seed_glove(model, loop_config=LoopConfig(max_model_calls=2))
    result = await glove.process_request("loop")
    assert result.stop == "max_turns" and len(model.requests) == 2


# -- aborts raise AbortError ------------------------------------------------------------------


async def test_an_aborted_request_raises_abort_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from adapters.native.models.scripted import Sleep

    glove = seed_glove(ScriptedModel([Sleep(100), Reply(text="never")]))
    token = CancelToken()
    caught: list[AbortError] = []

    async def run() -> None:
        # the seed's example: try { await agent.processRequest("Hello", signal) }
        # catch (err) { if (err instanceof AbortError) ... }
        try:
            await glove.process_request("Hello", token)
        except AbortError as err:
            caught.append(err)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await trio.sleep(1)
        token.cancel()
    assert len(caught) == 1 and caught[0].result.stop == "aborted"
    with pytest.raises(AbortError):  # and Agent.ask (the loop) raises it as well
        await glove.agent.ask(Message(sender="user", text="x"), token=token)


class _StopAtFirstTurn(LifecycleHooks):
    async def on_turn_start(self, info: TurnStartInfo) -> StopRun | None:
        return StopRun("the reviewer is off duty")


async def test_an_aborted_sub_agent_raises_abort_error_and_the_bracket_closes_with_its_status() -> (
    None
):
    recorder = Recorder()
    child_raised: list[AbortError] = []

    class Watching:
        """A runnable wrapping the child Glove, to see what its processRequest raised."""

        def __init__(self, child: Glove) -> None:
            self.child = child

        async def process_request(self, request: str, cancel: CancelToken | None = None) -> Any:
            try:
                return await self.child.process_request(request, cancel)
            except AbortError as exc:
                child_raised.append(exc)
                raise

    async def reviewer(ctx: Any) -> Watching:
        child = Glove(
            model=ScriptedModel([Reply(text="never")]),
            loop_config=LoopConfig(hooks=(_StopAtFirstTurn(),)),
        )
        return Watching(child.build())

    model = ScriptedModel(
        [
            Reply(tool_calls=[("glove_invoke_subagent", {"name": "reviewer", "prompt": "PR 1"})]),
            Reply(text="the reviewer could not run"),
        ]
    )
    glove = Glove(model=model).define_sub_agent("reviewer", reviewer).add_subscriber(recorder)
    await glove.build().process_request("@reviewer please look at PR #123")
    assert len(child_raised) == 1
    closed = [e for e in recorder.events if isinstance(e, SubagentCompleted)]
    assert closed[0].status == "error"
    assert closed[0].message == (
        'Subagent "reviewer" run aborted: on_turn_start: the reviewer is off duty'
    )


# -- tool execution ---------------------------------------------------------------------------


async def test_max_retries_retries_failed_tool_executions(
    autojump_clock: trio.testing.MockClock,
) -> None:
    attempts: list[int] = []

    async def flaky(value: CityInput, ctx: ToolContext) -> str:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError("weather service down")
        return f"{value.city}: 21"

    def model() -> ScriptedModel:
        return ScriptedModel([Reply(tool_calls=[("get_weather", {"city": "Tokyo"})]), Reply()])

    glove = Glove(model=model(), max_retries=2).fold("get_weather", "W.", CityInput, flaky).build()
    await glove.process_request("weather?")  # any tool, not only idempotent ones
    assert attempts == [1, 2, 3]
    first = (await glove.store.get_messages())[2].tool_results
    assert first is not None and first[0].result.data == "Tokyo: 21"
    attempts.clear()
    once = Glove(model=model(), max_retries=0).fold("get_weather", "W.", CityInput, flaky).build()
    await once.process_request("again")
    assert attempts == [1]  # maxRetries 0: no retry


async def test_an_un_abortable_tool_runs_to_completion_despite_an_abort(
    autojump_clock: trio.testing.MockClock,
) -> None:
    finished: list[float] = []

    async def checkout(value: EchoInput, ctx: ToolContext) -> str:
        await trio.sleep(100)  # far beyond any grace period
        finished.append(trio.current_time())
        return "paid"

    model = ScriptedModel([Reply(tool_calls=[("checkout", {})]), Reply(text="never")])
    glove = Glove(model=model).fold("checkout", "Pay.", EchoInput, checkout, un_abortable=True)
    glove.build()
    token = CancelToken(grace_s=3)
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            with pytest.raises(AbortError):
                await glove.process_request("buy it", token)

        nursery.start_soon(run)
        await trio.sleep(1)
        token.cancel()
    assert finished and finished[0] >= 100
    stored = (await glove.store.get_messages())[-1].tool_results
    assert stored is not None and stored[0].result.status == "success"
    assert stored[0].result.data == "paid"
    assert len(model.requests) == 1  # the request ended after the tool, no further call


# -- public classes -----------------------------------------------------------------------------


async def test_context_observer_and_prompt_machine_are_public_as_the_seed_shows() -> None:
    store = MemoryStore("session")
    # new Context(store); getMessages() splits at the last compaction
    ctx = Context(store)
    await ctx.append_messages([Message(sender="user", text="Hello")])
    await store.append_messages([Message(sender="user", text="S", is_compaction=True)])
    await ctx.append_messages([Message(sender="user", text="after")])
    assert [m.text for m in await ctx.get_messages()] == ["S", "after"]
    assert len(await store.get_messages()) == 3
    from adapters.native import Task

    await ctx.add_tasks([Task(id="t1", content="Fix the login bug", status="pending")])
    await ctx.update_task("t1", status="completed")
    assert [t.status for t in await ctx.get_tasks()] == ["completed"]
    # new PromptMachine(model, ctx, "You are a helpful assistant."); addSubscriber; run
    model = ScriptedModel([Reply(text="Hi!")])
    pm = PromptMachine(model, ctx, "You are a helpful assistant.")
    recorder = Recorder()
    pm.add_subscriber(recorder)
    result = await pm.run(list(await ctx.get_messages()), [])
    assert result.text == "Hi!" and result.tokens.tokens_in == 10
    assert recorder.types()[-1] in ("model_response", "model_response_complete")
    assert model.system_prompt == "You are a helpful assistant."
    glove = seed_glove(ScriptedModel())
    assert isinstance(glove.context, Context) and isinstance(glove.observer, Observer)
    assert isinstance(glove.prompt_machine, PromptMachine)
    assert glove.observer.MAX_TURNS == 30  # from the seed's compaction_config


async def test_the_hand_over_delegation_function_reaches_tools() -> None:
    handed: list[Any] = []

    async def hand_over(value: Any) -> Any:
        handed.append(value)
        return {"approved_by": "a human"}

    async def escalate(value: CityInput, ctx: ToolContext) -> Any:
        assert ctx.hand_over is not None
        return await ctx.hand_over({"city": value.city})

    model = ScriptedModel([Reply(tool_calls=[("escalate", {"city": "Oslo"})]), Reply(text="ok")])
    glove = Glove(model=model).fold("escalate", "Escalate.", CityInput, escalate).build()
    await glove.process_request("escalate it", hand_over=hand_over)
    assert handed == [{"city": "Oslo"}]
    results = (await glove.store.get_messages())[2].tool_results
    assert results is not None and results[0].result.data == {"approved_by": "a human"}


@attrs.define
class AutoApprove:
    """A user's own display manager: answers every wait at once (no UI)."""

    stack: list[Slot] = attrs.field(factory=list[Slot])
    renderers: dict[str, Renderer] = attrs.field(factory=dict[str, Renderer])
    pushed: list[tuple[str, Any]] = attrs.field(factory=list[tuple[str, Any]])

    def register_renderer(self, name: str, input_model: Any = None, output_model: Any = None):
        self.renderers[name] = Renderer(name, input_model, output_model)
        return self.renderers[name]

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return lambda: None

    async def notify(self) -> None:
        await trio.lowlevel.checkpoint()

    async def push_and_forget(self, input: Any, renderer: str = "generic", **kw: Any) -> str:
        self.pushed.append((renderer, input))
        return "s1"

    async def push_and_wait(self, input: Any, renderer: str = "generic", **kw: Any) -> Any:
        self.pushed.append((renderer, input))
        return True

    async def resolve(self, slot_id: str, value: Any) -> bool:
        return False

    async def reject(self, slot_id: str, error: str) -> bool:
        return False

    async def remove_slot(self, slot_id: str) -> bool:
        return False

    async def clear_stack(self) -> None:
        self.stack.clear()


async def test_the_display_manager_is_a_pluggable_protocol_a_user_implements() -> None:
    async def confirm(value: CityInput, ctx: ToolContext) -> str:
        ok = await ctx.push_and_wait({"city": value.city}, "confirm")
        return "booked" if ok else "cancelled"

    dm = AutoApprove()
    assert isinstance(dm, DisplayManagerAdapter)
    model = ScriptedModel([Reply(tool_calls=[("book", {"city": "Rome"})]), Reply(text="done")])
    glove = Glove(model=model, display_manager=dm).fold("book", "Book.", CityInput, confirm)
    await glove.build().process_request("book Rome")
    assert dm.pushed == [("confirm", {"city": "Rome"})]
    assert glove.display_manager is dm
