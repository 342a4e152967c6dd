"""Queues (reference semantics and the event-path policy), the idle guard, events, errors."""

from __future__ import annotations

import pickle
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import (
    AsyncQueue,
    ConfigError,
    Cost,
    Done,
    ErrorEvent,
    EventFactory,
    EventQueue,
    LineTooLongError,
    ProtocolError,
    QueueEventStream,
    RingleaderError,
    RuntimeEvent,
    RuntimeExitedError,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    assert_exhaustive,
    create_async_queue,
    event_from_json,
    event_to_json,
    redact_secrets,
    with_idle_timeout,
)

# -- AsyncQueue: the reference semantics ---------------------------------------------------------


async def test_async_queue_fifo_close_drains_and_drop_oldest() -> None:
    q: AsyncQueue[int] = create_async_queue(max=2)
    q.push(1)
    q.push(2)
    q.push(3)  # drops 1
    assert len(q) == 2
    q.close()
    q.push(4)  # no-op once closed
    assert [v async for v in q] == [2, 3]
    assert q.closed


async def test_async_queue_pending_receive_and_close_wakes_it() -> None:
    q = AsyncQueue[str]()
    got: list[str] = []
    async with trio.open_nursery() as nursery:

        async def consume() -> None:
            async for v in q:
                got.append(v)

        nursery.start_soon(consume)
        await trio.testing.wait_all_tasks_blocked()
        q.push("a")
        await trio.testing.wait_all_tasks_blocked()
        assert got == ["a"]
        q.close()
    assert got == ["a"]


async def test_async_queue_has_a_single_consumer() -> None:
    q = AsyncQueue[int]()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(q.receive)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.BusyResourceError):
            await q.receive()
        q.push(1)


@settings(max_examples=60, deadline=None)
@given(items=st.lists(st.integers(), max_size=60), limit=st.integers(1, 10))
def test_async_queue_keeps_the_newest_items_in_order(items: list[int], limit: int) -> None:
    q = AsyncQueue[int](limit)
    for item in items:
        q.push(item)
        assert len(q) <= limit
    q.close()

    async def drain() -> list[int]:
        return [v async for v in q]

    assert trio.run(drain) == items[-limit:]


# -- EventQueue: coalesce deltas, backpressure everything else -----------------------------------


async def test_event_queue_applies_backpressure_to_non_deltas() -> None:
    make = EventFactory(run_id="r", clock=lambda: 1)
    q = EventQueue(2)
    await q.send(make.status("init"))
    await q.send(make.status("running"))
    sent = trio.Event()

    async def producer() -> None:
        await q.send(make.tool_call("t", "Bash", {}))
        sent.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(producer)
        await trio.testing.wait_all_tasks_blocked()
        assert not sent.is_set()  # waiting for room
        await q.receive()
        await trio.testing.wait_all_tasks_blocked()
        assert sent.is_set()


async def test_event_queue_releases_producers_when_the_consumer_leaves() -> None:
    make = EventFactory(run_id="r", clock=lambda: 1)
    q = EventQueue(1)
    await q.send(make.status("init"))
    results: list[bool] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _send_into(q, make.status("running"), results))
        await trio.testing.wait_all_tasks_blocked()
        q.close_receiver()
    assert results == [False]
    assert await q.send(make.status("running")) is False


async def _send_into(q: EventQueue, event: RuntimeEvent, results: list[bool]) -> None:
    results.append(await q.send(event))


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(max_size=5), min_size=1, max_size=80), limit=st.integers(1, 6))
def test_coalescing_never_loses_text_and_keeps_seq_gapless(texts: list[str], limit: int) -> None:
    async def main() -> list[RuntimeEvent]:
        make = EventFactory(run_id="r", clock=lambda: 1)
        q = EventQueue(limit)
        out: list[RuntimeEvent] = []

        async def produce() -> None:
            for text in texts:  # nobody reads yet: the queue fills, then deltas coalesce
                await q.send(make.text_delta(text))
            await q.send_batch(make.finish("success"))  # waits for room: never dropped
            q.close()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            await trio.testing.wait_all_tasks_blocked()
            while True:
                try:
                    out.extend(await q.receive_batch(3))
                except trio.EndOfChannel:
                    break
        return out

    events = trio.run(main)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "".join(texts)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert isinstance(events[-1], Done)


async def test_queue_event_stream_ends_after_done_and_releases() -> None:
    released: list[bool] = []
    make = EventFactory(run_id="r", clock=lambda: 1)
    q = EventQueue()
    stream = QueueEventStream(q, on_close=lambda: released.append(True))
    for event in [make.text_delta("a"), *make.finish("success")]:
        await q.send(event)
    assert [e.kind async for e in stream] == ["text-delta", "done"]
    await stream.aclose()
    assert released == [True]


# -- idle guard --------------------------------------------------------------------------------


async def gen(items: list[tuple[float, str]]) -> AsyncIterator[str]:
    for delay, value in items:
        await trio.sleep(delay)
        yield value


async def test_idle_guard_is_an_idle_reset_not_a_budget(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fired: list[bool] = []
    source = gen([(0.02, str(i)) for i in range(5)])
    async with with_idle_timeout(
        source, idle_s=0.04, grace_s=0.01, on_idle=lambda: fired.append(True)
    ) as guarded:
        got = [v async for v in guarded]
    assert got == ["0", "1", "2", "3", "4"]
    assert fired == []


async def test_idle_fires_then_grace_delivers_the_terminal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fired: list[float] = []
    source = gen([(0.0, "a"), (1.5, "terminal")])
    async with with_idle_timeout(
        source, idle_s=1.0, grace_s=5.0, on_idle=lambda: fired.append(trio.current_time())
    ) as guarded:
        got = [v async for v in guarded]
    assert got == ["a", "terminal"]  # the pull pending across the expiry was not lost
    assert len(fired) == 1


async def test_silence_through_grace_ends_the_stream(
    autojump_clock: trio.testing.MockClock,
) -> None:
    source = gen([(0.0, "a"), (100.0, "too late")])
    began = trio.current_time()
    async with with_idle_timeout(source, idle_s=1.0, grace_s=2.0, on_idle=lambda: None) as guarded:
        got = [v async for v in guarded]
        assert guarded.idled
    assert got == ["a"]
    assert trio.current_time() - began == pytest.approx(3.0)


async def test_after_one_expiry_every_gap_is_bounded_by_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    source = gen([(1.5, "a"), (0.5, "b"), (0.9, "c"), (1.2, "d")])
    async with with_idle_timeout(source, idle_s=1.0, grace_s=1.0, on_idle=lambda: None) as guarded:
        got = [v async for v in guarded]
    assert got == ["a", "b", "c"]


async def test_a_wedged_or_raising_on_idle_never_hangs_the_consumer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def wedged() -> None:
        await trio.sleep_forever()

    def raising() -> None:
        raise RuntimeError("abort failed")

    for on_idle in (wedged, raising):
        async with with_idle_timeout(
            gen([(0.0, "a"), (50.0, "b")]), idle_s=1.0, grace_s=1.0, on_idle=on_idle
        ) as guarded:
            assert [v async for v in guarded] == ["a"]


async def test_cancel_safe_source_keeps_its_pending_event(
    autojump_clock: trio.testing.MockClock,
) -> None:
    make = EventFactory(run_id="r", clock=lambda: 1)
    q = EventQueue()
    stream = QueueEventStream(q)

    async def late() -> None:
        await trio.sleep(1.5)
        await q.send_batch(make.finish("aborted"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(late)
        async with with_idle_timeout(
            stream, idle_s=1.0, grace_s=5.0, on_idle=lambda: None
        ) as guarded:
            got = [e.kind async for e in guarded]
    assert got == ["done"]


async def test_source_errors_reach_the_consumer() -> None:
    async def broken() -> AsyncIterator[str]:
        yield "a"
        raise ValueError("source broke")

    with pytest.RaisesGroup(ValueError, allow_unwrapped=True, flatten_subgroups=True):
        async with with_idle_timeout(broken(), idle_s=10, on_idle=lambda: None) as guarded:
            async for _ in guarded:
                pass


# -- events --------------------------------------------------------------------------------------

usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10**7),
    output_tokens=st.integers(0, 10**7),
    cached_input_tokens=st.none() | st.integers(0, 10**6),
)
base = {
    "run_id": st.text(max_size=10),
    "session_id": st.none() | st.text(max_size=10),
    "ts": st.integers(0, 2**45),
    "seq": st.integers(1, 10**6),
}
events = st.one_of(
    st.builds(
        TextDelta, text=st.text(), channel=st.sampled_from(["assistant", "reasoning"]), **base
    ),
    st.builds(
        ToolCall,
        tool_call_id=st.text(max_size=8),
        name=st.text(max_size=8),
        input=st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4), max_size=3),
        **base,
    ),
    st.builds(
        ToolResult,
        tool_call_id=st.text(max_size=8),
        name=st.text(max_size=8),
        output=st.text(),
        is_error=st.booleans(),
        **base,
    ),
    st.builds(
        Status,
        phase=st.sampled_from(["init", "thinking", "running", "turn-complete"]),
        model=st.none() | st.text(max_size=5),
        **base,
    ),
    st.builds(
        Cost,
        usage=usages,
        cost_usd=st.none() | st.floats(0, 1e3, allow_nan=False),
        estimated=st.booleans(),
        **base,
    ),
    st.builds(
        Done,
        reason=st.sampled_from(["success", "max_turns", "aborted", "error"]),
        summary=st.text(),
        usage=st.none() | usages,
        **base,
    ),
    st.builds(
        ErrorEvent,
        code=st.none() | st.text(max_size=6),
        message=st.text(),
        fatal=st.booleans(),
        **base,
    ),
)


@settings(max_examples=200, deadline=None)
@given(event=events)
def test_events_round_trip_through_json_unchanged(event: RuntimeEvent) -> None:
    assert event_from_json(event_to_json(event)) == event


def test_wire_names_are_camel_case_and_unknown_input_fields_are_ignored() -> None:
    make = EventFactory(run_id="r", session_id="s", clock=lambda: 7)
    wire = event_to_json(make.tool_result("t1", "out", name="Bash", is_error=True))
    assert '"toolCallId":"t1"' in wire
    assert '"isError":true' in wire
    assert '"runId":"r"' in wire
    assert '"sessionId":"s"' in wire
    cost = event_to_json(make.cost(Usage(input_tokens=1, cached_input_tokens=1), cost_usd=None))
    assert '"costUsd":null' in cost
    assert '"cachedInputTokens":1' in cost
    parsed = event_from_json(
        '{"kind":"text-delta","runId":"r","ts":1,"seq":1,"text":"x","futureField":42}'
    )
    assert isinstance(parsed, TextDelta)
    with pytest.raises(Exception, match="frozen"):
        parsed.text = "y"  # type: ignore[misc]


def test_assert_exhaustive_raises() -> None:
    with pytest.raises(AssertionError, match="Unhandled RuntimeEvent variant"):
        assert_exhaustive("bogus")  # type: ignore[arg-type]


def test_event_factory_bookkeeping() -> None:
    make = EventFactory(run_id="r", clock=lambda: 1)
    a = make.tool_call("a", "Bash", {"cmd": "ls"})
    make.tool_call("b", "Read", {})
    result = make.tool_result("a", "ok")
    assert result.name == "Bash"
    first = make.cost(Usage(input_tokens=10, output_tokens=5), cost_usd=0.5)
    lower = make.cost(Usage(input_tokens=3, output_tokens=9), cost_usd=0.1)
    assert (lower.usage.input_tokens, lower.usage.output_tokens, lower.cost_usd) == (10, 9, 0.5)
    terminal = make.finish("aborted", "stopped")
    assert [e.kind for e in terminal] == ["tool-result", "done"]
    synthetic = terminal[0]
    assert isinstance(synthetic, ToolResult)
    assert synthetic.tool_call_id == "b"
    assert synthetic.is_error
    assert make.finish("success") == []
    assert [a.seq, first.seq, terminal[-1].seq] == [1, 4, 7]
    failing = EventFactory(run_id="r", clock=lambda: 1)
    assert [e.kind for e in failing.fail("boom", code="x")] == ["error", "done"]
    adding = EventFactory(run_id="r", clock=lambda: 1)
    adding.add_cost(Usage(input_tokens=1), cost_usd_delta=0.25)
    total = adding.add_cost(Usage(input_tokens=2), cost_usd_delta=0.25)
    assert (total.usage.input_tokens, total.cost_usd) == (3, 0.5)
    unknown = adding.add_cost(Usage(input_tokens=1), cost_usd_delta=None)
    assert unknown.cost_usd is None  # one unknown turn makes the total unknown, never 0


# -- errors ---------------------------------------------------------------------------------------


def test_error_hierarchy_pickles_and_redacts() -> None:
    assert issubclass(ConfigError, ValueError)
    assert issubclass(LineTooLongError, ProtocolError)
    errors: list[Any] = [
        ConfigError("bad flag"),
        RuntimeExitedError(
            "exited",
            exit_code=3,
            stderr_tail="key sk-ant-abcdefghijklmnop",
            adapter="codex",
            session_key="k",
        ),
        LineTooLongError("too long", limit=10, line=b"x" * 500, adapter="claude-code"),
    ]
    for err in errors:
        assert isinstance(err, RingleaderError)
        copy = pickle.loads(pickle.dumps(err))
        assert type(copy) is type(err)
        assert str(copy) == str(err)
        assert copy.__dict__ == err.__dict__
    assert "sk-ant" not in errors[1].stderr_tail
    assert len(errors[2].line) == 200
    assert errors[2].event_code == "line_too_long"
    text = redact_secrets(
        'Authorization: Bearer abcdef123456 {"api_key": "s3cr3tvalue"} sk-proj-0123456789ab'
    )
    assert "abcdef123456" not in text
    assert "s3cr3tvalue" not in text
    assert "sk-proj-0123456789ab" not in text
