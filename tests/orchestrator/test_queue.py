"""AsyncQueue (the original executor's semantics), EventQueue (coalesce deltas, backpressure everything
else) and QueueEventStream."""

from __future__ import annotations

from collections import deque
from typing import Any

import hypothesis
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core import (
    DEFAULT_QUEUE_MAX,
    AsyncQueue,
    Done,
    EventFactory,
    EventQueue,
    QueueEventStream,
    RuntimeEvent,
    TextDelta,
    Usage,
    create_async_queue,
)


def factory() -> EventFactory:
    return EventFactory(run_id="r", session_id="s", clock=lambda: 1)


# -- AsyncQueue ------------------------------------------------------------------------------------


async def test_fifo() -> None:
    q = AsyncQueue[int]()
    for i in range(5):
        q.push(i)
    assert len(q) == 5
    assert [await q.receive() for _ in range(5)] == [0, 1, 2, 3, 4]
    assert len(q) == 0


def test_defaults_and_validation() -> None:
    assert DEFAULT_QUEUE_MAX == 1000
    assert AsyncQueue[int]().max == 1000
    assert create_async_queue().max == 1000
    assert create_async_queue(max=7).max == 7
    with pytest.raises(ValueError, match="max"):
        AsyncQueue[int](0)


async def test_pending_receive_is_resolved_by_a_later_push() -> None:
    q = AsyncQueue[str]()
    got: list[str] = []

    async def consume() -> None:
        got.append(await q.receive())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        q.push("a")
    assert got == ["a"]
    assert len(q) == 0


async def test_close_resolves_a_pending_receive_as_end_and_sets_closed() -> None:
    q = AsyncQueue[str]()
    ended: list[bool] = []

    async def consume() -> None:
        with pytest.raises(trio.EndOfChannel):
            await q.receive()
        ended.append(True)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        assert not q.closed
        q.close()
    assert ended == [True]
    assert q.closed


async def test_close_ends_a_pending_async_for() -> None:
    q = AsyncQueue[int]()
    got: list[int] = []

    async def consume() -> None:
        async for v in q:
            got.append(v)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        q.push(1)
        await trio.testing.wait_all_tasks_blocked()
        q.close()
    assert got == [1]


async def test_drop_oldest_at_max_2() -> None:
    q = create_async_queue(max=2)
    q.push(1)
    q.push(2)
    q.push(3)
    assert len(q) == 2
    q.close()
    assert [v async for v in q] == [2, 3]


async def test_close_drains_buffered_items_then_ends() -> None:
    q = AsyncQueue[str]()
    q.push("a")
    q.push("b")
    q.close()
    q.close()  # idempotent
    assert q.closed
    assert await q.receive() == "a"
    assert await q.receive() == "b"
    with pytest.raises(trio.EndOfChannel):
        await q.receive()
    assert [v async for v in q] == []


async def test_push_after_close_is_a_noop() -> None:
    q = AsyncQueue[int]()
    q.push(1)
    q.close()
    q.push(2)
    assert len(q) == 1
    assert [v async for v in q] == [1]


async def test_aclose_closes_but_keeps_the_buffer() -> None:
    q = AsyncQueue[int]()
    q.push(1)
    await q.aclose()
    assert q.closed
    assert [v async for v in q] == [1]


async def test_a_second_concurrent_receive_raises_busy() -> None:
    q = AsyncQueue[int]()
    got: list[int] = []

    async def consume() -> None:
        got.append(await q.receive())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.BusyResourceError):
            await q.receive()
        q.push(7)
    assert got == [7]  # the first consumer was not disturbed
    q.push(8)
    assert await q.receive() == 8  # and the slot is free again


async def test_a_cancelled_receive_frees_the_consumer_slot() -> None:
    q = AsyncQueue[int]()
    with trio.move_on_after(0) as scope:
        await q.receive()
    assert scope.cancelled_caught
    q.push(1)
    assert await q.receive() == 1


@settings(max_examples=150, deadline=None)
@given(
    limit=st.integers(1, 8),
    ops=st.lists(st.one_of(st.integers(0, 10**6), st.none()), max_size=80),
)
def test_never_exceeds_max_and_keeps_the_newest_items_in_order(
    limit: int, ops: list[int | None]
) -> None:
    """Model: a deque with maxlen. ``None`` is a receive (when something is buffered)."""

    async def main() -> None:
        q = AsyncQueue[int](limit)
        model: deque[int] = deque(maxlen=limit)
        for op in ops:
            if op is None:
                if model:
                    assert await q.receive() == model.popleft()
            else:
                q.push(op)
                model.append(op)
            assert len(q) == len(model) <= limit
        q.close()
        assert [v async for v in q] == list(model)

    trio.run(main)


@settings(max_examples=100, deadline=None)
@given(limit=st.integers(1, 10), items=st.lists(st.integers(), max_size=60))
def test_pushes_then_drain_give_the_last_max_items(limit: int, items: list[int]) -> None:
    async def main() -> list[int]:
        q = AsyncQueue[int](limit)
        for item in items:
            q.push(item)
            assert len(q) <= limit
        q.close()
        return [v async for v in q]

    assert trio.run(main) == items[-limit:]


# -- EventQueue ------------------------------------------------------------------------------------


async def test_event_queue_fifo_and_validation() -> None:
    make = factory()
    q = EventQueue()
    sent = [make.status("init"), make.text_delta("a"), *make.finish("success")]
    for event in sent:
        assert await q.send(event) is True
    assert len(q) == 3
    q.close()
    assert q.closed
    got = [await q.receive() for _ in range(3)]
    assert got == sent
    with pytest.raises(trio.EndOfChannel):
        await q.receive()
    with pytest.raises(ValueError, match="max_items"):
        EventQueue(0)


async def test_non_delta_send_blocks_when_full_until_the_consumer_receives() -> None:
    make = factory()
    q = EventQueue(2)
    await q.send(make.status("init"))
    await q.send(make.status("running"))
    sent = trio.Event()

    async def producer() -> None:
        assert await q.send(make.tool_call("t1", "Bash", {"cmd": "ls"}))
        sent.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(producer)
        await trio.testing.wait_all_tasks_blocked()
        assert not sent.is_set()
        assert len(q) == 2
        first = await q.receive()
        assert first.seq == 1
        await trio.testing.wait_all_tasks_blocked()
        assert sent.is_set()
    assert [e.kind for e in [await q.receive(), await q.receive()]] == ["status", "tool-call"]


@pytest.mark.parametrize("kind", ["status", "tool-call", "tool-result", "cost", "error", "done"])
async def test_every_non_delta_kind_waits_for_room(
    kind: str, autojump_clock: trio.testing.MockClock
) -> None:
    make = factory()
    q = EventQueue(1)
    await q.send(make.text_delta("x"))
    events: dict[str, Any] = {
        "status": lambda: make.status("running"),
        "tool-call": lambda: make.tool_call("t", "Read", {}),
        "tool-result": lambda: make.tool_result("t", "out"),
        "cost": lambda: make.cost(Usage(input_tokens=1), cost_usd=None),
        "error": lambda: make.error("boom", fatal=False),
        "done": lambda: make.finish("success")[-1],
    }
    event = events[kind]()
    with trio.move_on_after(10) as scope:
        await q.send(event)
    assert scope.cancelled_caught  # still full: the producer waited
    assert len(q) == 1
    assert (await q.receive()).kind == "text-delta"
    assert await q.send(event)
    assert (await q.receive()).kind == kind


async def test_text_deltas_coalesce_when_full_and_seq_is_renumbered() -> None:
    make = factory()
    q = EventQueue(2)
    await q.send(make.status("init"))  # seq 1
    await q.send(make.text_delta("Hel"))  # seq 2
    await q.send(make.text_delta("lo, "))  # seq 3: coalesced into seq 2
    await q.send(make.text_delta("world"))  # seq 4: coalesced too
    assert q.coalesced == 2
    assert len(q) == 2
    first = await q.receive()
    assert first.seq == 1
    await q.send(make.status("turn-complete"))  # seq 5 → renumbered to 3
    merged = await q.receive()
    assert isinstance(merged, TextDelta)
    assert (merged.seq, merged.text) == (2, "Hello, world")
    status = await q.receive()
    assert (status.kind, status.seq) == ("status", 3)


async def test_deltas_of_another_channel_are_not_merged_and_wait() -> None:
    make = factory()
    q = EventQueue(1)
    await q.send(make.text_delta("thinking", channel="reasoning"))
    with trio.move_on_after(0) as scope:
        await q.send(make.text_delta("answer"))
    assert scope.cancelled_caught
    assert q.coalesced == 0


async def test_a_delta_after_a_non_delta_waits_when_full() -> None:
    make = factory()
    q = EventQueue(1)
    await q.send(make.status("running"))
    with trio.move_on_after(0) as scope:
        await q.send(make.text_delta("a"))
    assert scope.cancelled_caught


async def test_the_terminal_is_never_dropped_even_under_a_flood_of_deltas(
    autojump_clock: trio.testing.MockClock,
) -> None:
    make = factory()
    q = EventQueue(3)
    out: list[RuntimeEvent] = []

    async def produce() -> None:
        for i in range(500):
            await q.send(make.text_delta(str(i % 10)))
        await q.send_batch(make.finish("success", "all done"))
        q.close()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(produce)
        await trio.sleep(1)  # the consumer stalls while everything is produced
        while True:
            try:
                out.append(await q.receive())
            except trio.EndOfChannel:
                break
            await trio.sleep(0.01)
    assert isinstance(out[-1], Done)
    assert out[-1].summary == "all done"
    text = "".join(e.text for e in out if isinstance(e, TextDelta))
    assert text == "".join(str(i % 10) for i in range(500))
    assert [e.seq for e in out] == list(range(1, len(out) + 1))


async def test_close_receiver_releases_blocked_producers_and_later_sends_return_false() -> None:
    make = factory()
    q = EventQueue(1)
    await q.send(make.status("init"))
    results: list[bool] = []

    async def producer() -> None:
        results.append(await q.send(make.status("running")))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(producer)
        nursery.start_soon(producer)
        await trio.testing.wait_all_tasks_blocked()
        assert results == []
        q.close_receiver()
    assert results == [False, False]
    assert q.receiver_closed
    assert len(q) == 0  # the buffer was dropped
    assert await q.send(make.text_delta("late")) is False
    assert await q.send_batch(make.finish("success")) is False
    with pytest.raises(trio.EndOfChannel):
        await q.receive()


async def test_close_receiver_wakes_a_waiting_consumer() -> None:
    q = EventQueue()

    async def consume() -> None:
        with pytest.raises(trio.EndOfChannel):
            await q.receive()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        q.close_receiver()


async def test_send_after_the_producer_closed_raises() -> None:
    q = EventQueue()
    q.close()
    with pytest.raises(trio.ClosedResourceError):
        await q.send(factory().status("init"))


async def test_close_wakes_a_waiting_consumer_with_end() -> None:
    q = EventQueue()

    async def consume() -> None:
        with pytest.raises(trio.EndOfChannel):
            await q.receive_batch()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        q.close()


async def test_receive_batch() -> None:
    make = factory()
    q = EventQueue()
    sent = [make.text_delta(str(i)) for i in range(5)]
    assert await q.send_batch(sent)
    assert await q.receive_batch(2) == sent[:2]
    assert await q.receive_batch() == sent[2:]
    got: list[list[RuntimeEvent]] = []

    async def consume() -> None:
        got.append(await q.receive_batch())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []  # waits for at least one
        last = make.finish("success")
        await q.send_batch(last)
    assert got == [last]
    q.close()
    with pytest.raises(trio.EndOfChannel):
        await q.receive_batch()


async def test_receive_batch_returns_the_coalesced_tail() -> None:
    make = factory()
    q = EventQueue(2)
    await q.send_batch([make.status("init"), make.text_delta("a"), make.text_delta("b")])
    batch = await q.receive_batch()
    assert [e.seq for e in batch] == [1, 2]
    merged = batch[1]
    assert isinstance(merged, TextDelta)
    assert merged.text == "ab"


# hypothesis: random event sequences through a lagging consumer


def _send_op() -> st.SearchStrategy[tuple[str, Any]]:
    delta = st.tuples(
        st.just("delta"),
        st.tuples(st.text(max_size=4), st.sampled_from(["assistant", "assistant", "reasoning"])),
    )
    return st.one_of(
        delta,
        delta,
        delta,
        st.tuples(st.just("status"), st.sampled_from(["thinking", "running", "turn-complete"])),
        st.tuples(st.just("tool"), st.text(min_size=1, max_size=3)),
    )


def _merge_adjacent(events: list[RuntimeEvent]) -> list[tuple[Any, ...]]:
    """Events without seq, adjacent same-channel deltas merged: what coalescing may change."""
    out: list[tuple[Any, ...]] = []
    for e in events:
        if isinstance(e, TextDelta):
            if out and out[-1][0] == "text-delta" and out[-1][1] == e.channel:
                out[-1] = ("text-delta", e.channel, out[-1][2] + e.text)
                continue
            out.append(("text-delta", e.channel, e.text))
        else:
            out.append((e.kind, e.model_dump_json(exclude={"seq"})))
    return out


@settings(max_examples=60, deadline=None)
@given(
    limit=st.integers(1, 5),
    ops=st.lists(_send_op(), min_size=8, max_size=60),
    producer_pauses=st.lists(st.sampled_from([0, 0, 0, 0.001, 0.01]), max_size=60),
    consumer_pauses=st.lists(st.sampled_from([0, 0.02, 0.1, 1]), min_size=1, max_size=20),
    batch=st.integers(1, 4),
)
def test_coalescing_keeps_every_character_and_a_gapless_seq(
    limit: int,
    ops: list[tuple[str, Any]],
    producer_pauses: list[float],
    consumer_pauses: list[float],
    batch: int,
) -> None:
    sent: list[RuntimeEvent] = []

    async def main() -> list[RuntimeEvent]:
        make = factory()
        q = EventQueue(limit)
        out: list[RuntimeEvent] = []

        async def produce() -> None:
            for i, (op, arg) in enumerate(ops):
                if op == "delta":
                    event: RuntimeEvent = make.text_delta(arg[0], channel=arg[1])
                elif op == "status":
                    event = make.status(arg)
                else:
                    event = make.tool_call(f"{arg}-{i}", arg, {"i": i})
                sent.append(event)
                assert await q.send(event)
                assert len(q) <= limit
                if producer_pauses:
                    await trio.sleep(producer_pauses[i % len(producer_pauses)])
            terminal = make.finish("success")
            sent.extend(terminal)
            assert await q.send_batch(terminal)
            q.close()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            i = 0
            while True:
                await trio.sleep(consumer_pauses[i % len(consumer_pauses)])  # a slow consumer
                i += 1
                try:
                    out.extend(await q.receive_batch(batch))
                except trio.EndOfChannel:
                    break
        hypothesis.event("coalesced" if q.coalesced else "not coalesced")
        return out

    received = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert [e.seq for e in received] == list(range(1, len(received) + 1))
    assert _merge_adjacent(received) == _merge_adjacent(sent)
    for channel in ("assistant", "reasoning"):
        assert "".join(
            e.text for e in received if isinstance(e, TextDelta) and e.channel == channel
        ) == "".join(e.text for e in sent if isinstance(e, TextDelta) and e.channel == channel)
    assert isinstance(received[-1], Done)
    assert sum(isinstance(e, Done) for e in received) == 1


# -- QueueEventStream ------------------------------------------------------------------------------


async def test_stream_ends_after_done_and_calls_on_close_once() -> None:
    make = factory()
    q = EventQueue()
    closed: list[bool] = []
    stream = QueueEventStream(q, on_close=lambda: closed.append(True))
    assert stream.queue is q
    await q.send_batch([make.text_delta("a"), *make.finish("success")])
    assert [e.kind async for e in stream] == ["text-delta", "done"]
    assert closed == [True]
    assert q.receiver_closed
    # the producer sees the consumer gone
    assert await q.send(make.status("running")) is False
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()
    await stream.aclose()
    await stream.aclose()  # idempotent
    assert closed == [True]


async def test_stream_ends_when_the_producer_closes_without_done() -> None:
    make = factory()
    q = EventQueue()
    closed: list[bool] = []
    stream = QueueEventStream(q, on_close=lambda: closed.append(True))
    await q.send(make.text_delta("a"))
    q.close()
    assert [e.kind async for e in stream] == ["text-delta"]
    assert closed == [True]


async def test_continuous_stream_keeps_going_after_done() -> None:
    make = factory()
    q = EventQueue()
    stream = QueueEventStream(q, close_on_done=False)
    await q.send_batch(make.finish("success"))
    await q.send(make.status("running"))
    q.close()
    assert [e.kind async for e in stream] == ["done", "status"]


async def test_aclose_releases_the_subscription_and_is_idempotent() -> None:
    q = EventQueue()
    closed: list[bool] = []
    async with QueueEventStream(q, on_close=lambda: closed.append(True)) as stream:
        await q.send(factory().text_delta("a"))
        assert (await stream.__anext__()).kind == "text-delta"
    assert closed == [True]
    await stream.aclose()
    assert closed == [True]
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


async def test_aclose_wakes_nothing_pending_and_ends_a_later_pull() -> None:
    q = EventQueue()
    stream = QueueEventStream(q)
    await stream.aclose()
    assert [e async for e in stream] == []
    assert q.receiver_closed


async def test_stream_is_cancel_safe() -> None:
    q = EventQueue()
    stream = QueueEventStream(q)
    assert stream.cancel_safe
    with trio.move_on_after(0):
        await stream.__anext__()
    await q.send(factory().text_delta("kept"))
    event = await stream.__anext__()
    assert isinstance(event, TextDelta)
    assert event.text == "kept"
