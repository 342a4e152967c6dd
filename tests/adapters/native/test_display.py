"""The display manager: stack, listeners, renderers, strategies, and waits that never hang.

Test names follow the rules of the Glove seeds (``glove-core-api.txt`` Displaymanager table,
``glove-core-concepts.txt`` "The Display Stack").
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from pydantic import BaseModel

from adapters.native.cancel import CancelToken
from adapters.native.display import DisplayManager, Slot, SlotRejectedError, SlotValueError
from adapters.native.glove import Glove
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.tools import ToolContext
from orchestrator.core.errors import AbortError

from .conftest import CityInput


class Seen:
    """A listener that keeps a snapshot of (id, status) per notification."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    async def __call__(self, stack: list[Slot]) -> None:
        await trio.lowlevel.checkpoint()
        self.calls.append([(s.id, s.status) for s in stack])


class Choice(BaseModel):
    options: list[str]


class Picked(BaseModel):
    value: str


async def test_push_and_forget_pushes_a_slot_without_blocking_and_returns_its_id() -> None:
    dm = DisplayManager()
    seen = Seen()
    dm.subscribe(seen)
    slot_id = await dm.push_and_forget({"total": 3}, "receipt")
    assert slot_id == "slot_1"
    assert [(s.id, s.renderer, s.input) for s in dm.stack] == [("slot_1", "receipt", {"total": 3})]
    assert seen.calls == [[("slot_1", "shown")]]


async def test_push_and_wait_blocks_until_resolved_and_returns_the_value() -> None:
    dm = DisplayManager()
    seen = Seen()
    dm.subscribe(seen)
    got: list[Any] = []

    async def tool() -> None:
        got.append(await dm.push_and_wait({"q": "size?"}, "form"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tool)
        await trio.testing.wait_all_tasks_blocked()
        assert [s.id for s in dm.pending()] == ["slot_1"]
        assert got == []
        assert await dm.resolve("slot_1", "large") is True
    assert got == ["large"]
    # the listener saw the push and the resolution (the waited slot leaves by default)
    assert seen.calls == [[("slot_1", "pending")], []]
    assert await dm.resolve("slot_1", "again") is False  # unknown/answered ids are ignored


async def test_reject_makes_push_and_wait_throw() -> None:
    dm = DisplayManager()
    errors: list[str] = []

    async def tool() -> None:
        try:
            await dm.push_and_wait({"q": "pay?"})
        except SlotRejectedError as exc:
            errors.append(str(exc))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tool)
        await trio.testing.wait_all_tasks_blocked()
        assert await dm.reject("slot_1", "user said no") is True
    assert errors == ["user said no"]
    assert dm.stack == []


async def test_subscribe_returns_an_unsubscribe_function() -> None:
    dm = DisplayManager()
    seen = Seen()
    unsubscribe = dm.subscribe(seen)
    await dm.push_and_forget(1)
    unsubscribe()
    unsubscribe()  # idempotent
    await dm.push_and_forget(2)
    assert len(seen.calls) == 1


async def test_notify_manually_triggers_listeners_with_the_current_stack() -> None:
    dm = DisplayManager()
    await dm.push_and_forget("a")
    seen = Seen()
    dm.subscribe(seen)
    await dm.notify()
    assert seen.calls == [[("slot_1", "shown")]]


async def test_remove_slot_removes_by_id_and_notifies_listeners() -> None:
    dm = DisplayManager()
    await dm.push_and_forget("a")
    await dm.push_and_forget("b")
    seen = Seen()
    dm.subscribe(seen)
    assert await dm.remove_slot("slot_1") is True
    assert seen.calls == [[("slot_2", "shown")]]
    assert await dm.remove_slot("slot_9") is False
    assert len(seen.calls) == 1  # no change, no notification


async def test_remove_slot_under_a_waiter_rejects_it_instead_of_hanging() -> None:
    dm = DisplayManager()
    errors: list[str] = []

    async def tool() -> None:
        with pytest.raises(SlotRejectedError) as info:
            await dm.push_and_wait("q")
        errors.append(str(info.value))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tool)
        await trio.testing.wait_all_tasks_blocked()
        await dm.remove_slot("slot_1")
    assert errors == ["slot removed"]


async def test_clear_stack_removes_all_slots_notifies_and_rejects_waiters() -> None:
    dm = DisplayManager()
    seen = Seen()
    dm.subscribe(seen)
    outcomes: list[str] = []

    async def tool() -> None:
        try:
            await dm.push_and_wait("q")
        except SlotRejectedError as exc:
            outcomes.append(str(exc))

    async with trio.open_nursery() as nursery:
        await dm.push_and_forget("a")
        nursery.start_soon(tool)
        await trio.testing.wait_all_tasks_blocked()
        await dm.clear_stack()
    assert dm.stack == []
    assert seen.calls[-1] == []
    assert outcomes == ["display stack cleared"]


async def test_register_renderer_validates_input_and_answer_and_exposes_schemas() -> None:
    dm = DisplayManager()
    dm.register_renderer("choice", Choice, Picked)
    schemas = dm.renderer_schemas()
    assert schemas[0]["name"] == "choice"
    assert schemas[0]["input"]["properties"]["options"]["type"] == "array"
    assert schemas[0]["output"]["properties"]["value"]["type"] == "string"
    with pytest.raises(SlotValueError, match="input for renderer 'choice'"):
        await dm.push_and_forget({"options": "not a list"}, "choice")
    assert dm.stack == []
    got: list[Any] = []

    async def tool() -> None:
        got.append(await dm.push_and_wait({"options": ["a", "b"]}, "choice"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tool)
        await trio.testing.wait_all_tasks_blocked()
        assert dm.stack[0].input == {"options": ["a", "b"]}
        with pytest.raises(SlotValueError, match="answer for renderer 'choice'"):
            await dm.resolve("slot_1", {"nope": 1})
        assert [s.id for s in dm.pending()] == ["slot_1"]  # a bad answer leaves it pending
        await dm.resolve("slot_1", {"value": "b"})
    assert got == [Picked(value="b")]


async def test_strategy_stay_keeps_an_answered_slot_on_the_stack() -> None:
    dm = DisplayManager()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: dm.push_and_wait("q", "form", strategy="stay"))
        await trio.testing.wait_all_tasks_blocked()
        await dm.resolve("slot_1", 42)
    assert [(s.id, s.status, s.value) for s in dm.stack] == [("slot_1", "resolved", 42)]


async def test_strategy_hide_on_complete_hides_the_slot_once_answered() -> None:
    dm = DisplayManager()

    async def tool() -> None:
        with pytest.raises(SlotRejectedError):
            await dm.push_and_wait("q", "form", strategy="hide-on-complete")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tool)
        await trio.testing.wait_all_tasks_blocked()
        assert len(dm.stack) == 1
        await dm.reject("slot_1", "no")  # rejected counts as complete too
    assert dm.stack == []


async def test_strategy_hide_on_new_hides_when_a_newer_slot_from_the_same_tool_appears() -> None:
    dm = DisplayManager()
    await dm.push_and_forget("p1", "progress", strategy="hide-on-new", tool_name="build")
    await dm.push_and_forget("other", "progress", strategy="hide-on-new", tool_name="test")
    await dm.push_and_forget("p2", "progress", strategy="hide-on-new", tool_name="build")
    assert [s.input for s in dm.stack] == ["other", "p2"]


async def test_push_and_wait_never_answered_does_not_hang_a_cancelled_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    dm = DisplayManager()
    seen = Seen()
    dm.subscribe(seen)

    async def ask(value: CityInput, ctx: ToolContext) -> Any:
        return await ctx.push_and_wait({"city": value.city}, "confirm")

    model = ScriptedModel([Reply(tool_calls=[("ask", {"city": "Oslo"})]), Reply(text="x")])
    glove = Glove(model=model, display_manager=dm).fold("ask", "Ask.", CityInput, ask).build()
    token = CancelToken(grace_s=1)
    with trio.fail_after(30):  # the cancelled run ends (grace 1 s), never hangs
        await _run_and_cancel(glove, token, dm)
    assert dm.stack == []  # the dead question left the stack ...
    assert seen.calls[-1] == []  # ... and the UI was told
    messages = await glove.store.get_messages()
    assert messages[-1].tool_results is not None
    assert messages[-1].tool_results[0].result.status == "aborted"


async def _run_and_cancel(glove: Glove, token: CancelToken, dm: DisplayManager) -> None:
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            with pytest.raises(AbortError):
                await glove.process_request("go", token)

        nursery.start_soon(run)
        await trio.testing.wait_all_tasks_blocked()
        slot = dm.stack[0]
        assert (slot.renderer, slot.tool_name, slot.status) == ("confirm", "ask", "pending")
        assert slot.tool_call_id == "call_1"  # attributed to the call that pushed it
        token.cancel()


async def test_a_tool_receives_the_display_manager_through_its_context() -> None:
    dm = DisplayManager()

    async def show(value: CityInput, ctx: ToolContext) -> str:
        assert ctx.display is dm
        return await ctx.push_and_forget({"city": value.city})

    model = ScriptedModel([Reply(tool_calls=[("show", {"city": "Rome"})]), Reply(text="ok")])
    glove = Glove(model=model, display_manager=dm).fold("show", "Show.", CityInput, show).build()
    await glove.process_request("go")
    assert [(s.renderer, s.tool_name, s.input) for s in dm.stack] == [
        ("show", "show", {"city": "Rome"})
    ]
