"""The batched event path (adapter → actor → event log → feed): batches keep order and seq
gapless, every event is durable before a subscriber sees it, a slow subscriber loses nothing,
and a batch cut by an abort (or any cancellation) still goes out whole."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import ScriptedAdapter
from orchestrator.core import Done, EventFactory, RuntimeEvent, TextDelta
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.queue import EventQueue
from orchestrator.engine.actor import RunActor
from orchestrator.engine.eventlog import EventLog, LoggedEvent, _insert_rows
from orchestrator.engine.feed import Feed, FeedSubscription, RecordingSink


def script(n: int) -> list[dict[str, Any]]:
    """``n`` frames shaped like a real run (mostly text, tool calls with results, usage), then
    the result: several replay chunks' worth."""
    frames: list[dict[str, Any]] = [{"type": "init", "sessionId": "s-1"}]
    for i in range(n):
        match i % 10:
            case 4:
                frames.append({"type": "tool-call", "id": f"t{i}", "name": "Bash", "input": {}})
            case 5:
                frames.append({"type": "tool-result", "id": f"t{i - 1}", "output": "ok"})
            case 9:
                frames.append({"type": "usage", "inputTokens": i, "outputTokens": i})
            case _:
                frames.append({"type": "text", "text": f"w{i} "})
    frames.append({"type": "result", "ok": True, "summary": "done"})
    return frames


async def test_two_subscribers_one_slow_see_every_durable_event_in_order(tmp_path: Path) -> None:
    feed = Feed()
    fast: list[LoggedEvent] = []
    slow: list[LoggedEvent] = []
    not_yet_durable: list[int] = []
    async with EventLog.open(tmp_path / "log.db") as log:
        sink = RecordingSink(log, feed)
        fast_sub = feed.subscribe()
        slow_sub = feed.subscribe(max_items=16, slow="block")
        other = sqlite3.connect(log.path)  # another connection sees committed rows only

        async def drain(sub: FeedSubscription, out: list[LoggedEvent], lag: int) -> None:
            while True:
                batch = await sub.receive_batch()
                (top,) = other.execute("SELECT COALESCE(MAX(gid), 0) FROM events").fetchone()
                not_yet_durable.extend(i.gid for i in batch if i.gid > top)
                out += batch
                if batch[-1].kind == "done":
                    return
                for _ in range(lag):  # a slow board: the publisher waits on it
                    await trio.lowlevel.checkpoint()

        async with ScriptedAdapter(script(700)) as adapter:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain, fast_sub, fast, 0)
                nursery.start_soon(drain, slow_sub, slow, 20)
                run = await adapter.start(
                    TaskHandle(), StartOpts(agent_id="a", session_key="k", message="go")
                )
                actor = RunActor(adapter, run, "run-1", sink, adapter.capabilities())
                outcome = await actor.run()
        other.close()
        stored = await log.read("run-1")
        everything = await log.read_since(0)

    assert outcome.reason == "success"
    assert not_yet_durable == []
    # the fast subscriber: every event once, seq 1..n and gid ascending, as stored
    assert [i.seq for i in fast] == list(range(1, outcome.events + 1))
    assert [i.event for i in fast] == stored
    assert [i.gid for i in fast] == [i.gid for i in everything]
    assert [i.gid for i in everything] == list(range(everything[0].gid, everything[-1].gid + 1))
    # the slow one lagged (its deltas were coalesced) and lost nothing: each item picks up
    # where the one before ended, and the merged text is the text
    assert slow_sub.coalesced > 0
    assert sum(i.merged for i in slow) == len(fast)
    assert [i.first_gid for i in slow[1:]] == [i.gid + 1 for i in slow[:-1]]
    assert slow[-1].kind == "done"

    def text(items: list[LoggedEvent]) -> str:
        return "".join(i.event.text for i in items if isinstance(i.event, TextDelta))

    assert text(slow) == text(fast) != ""


async def test_an_abort_that_cuts_a_replay_batch_leaves_no_seq_gap() -> None:
    # 1,100 usage frames: cost events are never coalesced, so the replay blocks on the
    # stream's full queue (1,000) in the middle of a 64-frame batch; the abort cancels it there
    frames = [{"type": "usage", "inputTokens": i, "outputTokens": 0} for i in range(1, 1101)]
    async with ScriptedAdapter(frames) as adapter:
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="go")
        )
        stream = adapter.events(run)
        await trio.testing.wait_all_tasks_blocked()
        got: list[RuntimeEvent] = []

        async def drain() -> None:
            async for event in stream:
                got.append(event)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(adapter.abort, run)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(drain)

    assert 1000 < len(got) < 1100  # cut mid-replay, past the bound by the rest of one batch
    assert [e.seq for e in got] == list(range(1, len(got) + 1))
    last = got[-1]
    assert isinstance(last, Done) and last.reason == "aborted"


async def test_a_batch_send_cancelled_while_waiting_for_room_is_queued_whole() -> None:
    make = EventFactory(run_id="r", clock=lambda: 1)
    queue = EventQueue(4)
    assert await queue.send_batch([make.text_delta("a"), make.text_delta("b")])
    batch: list[RuntimeEvent] = [make.status("running") for _ in range(5)]  # room for 2
    with trio.move_on_after(1) as scope:
        await queue.send_batch(batch)
    assert scope.cancelled_caught
    assert len(queue) == 7  # over the bound by the rest of the batch, never cut
    assert [e.seq for e in queue.take_ready(10)] == list(range(1, 8))


async def test_rows_go_in_in_order_across_multi_row_statements(tmp_path: Path) -> None:
    big = EventFactory(run_id="a", clock=lambda: 1)
    small = EventFactory(run_id="b", clock=lambda: 1)
    first = [big.text_delta(f"{i}") for i in range(150)]  # 64 + 64 + 22 rows a statement
    second = [small.status("running", detail=str(i)) for i in range(3)]
    async with EventLog.open(tmp_path / "log.db") as log:
        async with trio.open_nursery() as nursery:  # queued together
            nursery.start_soon(log.append, "a", first)
            nursery.start_soon(log.append, "b", second)
        items = await log.read_since(0)
        assert await log.read("a") == first
    keys = [i.run_key for i in items]
    assert keys in (["a"] * 150 + ["b"] * 3, ["b"] * 3 + ["a"] * 150)  # each append whole
    assert [i.seq for i in items if i.run_key == "a"] == list(range(1, 151))
    assert [i.seq for i in items if i.run_key == "b"] == [1, 2, 3]
    assert [i.gid for i in items] == list(range(1, 154))


_KINDS = st.sampled_from(["a", "r", "s"])
"""An assistant delta, a reasoning delta (never merged with an assistant one), a status."""


def _events(make: EventFactory, kinds: list[str]) -> list[RuntimeEvent]:
    out: list[RuntimeEvent] = []
    for i, kind in enumerate(kinds):
        if kind == "s":
            out.append(make.status("running", detail=str(i)))
        else:
            out.append(make.text_delta(f"{kind}{i} ", "assistant" if kind == "a" else "reasoning"))
    return out


def _shape(events: list[RuntimeEvent]) -> list[tuple[str, int, str]]:
    return [(e.kind, e.seq, e.text if isinstance(e, TextDelta) else "") for e in events]


def _text(events: list[RuntimeEvent], channel: str) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == channel)


@settings(max_examples=200, deadline=None)
@given(
    cap=st.integers(1, 6), first=st.lists(_KINDS, max_size=10), second=st.lists(_KINDS, max_size=14)
)
def test_a_batch_send_queues_what_sending_one_by_one_would(
    cap: int, first: list[str], second: list[str]
) -> None:
    async def main() -> None:
        make = EventFactory(run_id="r", clock=lambda: 1)
        head, tail = _events(make, first), _events(make, second)
        one, many = EventQueue(cap), EventQueue(cap)
        finished: list[str] = []

        async def per_event() -> None:
            for event in [*head, *tail]:
                await one.send(event)
            finished.append("one")

        async def batched() -> None:
            await many.send_batch(head)
            await many.send_batch(tail)
            finished.append("many")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(per_event)
            nursery.start_soon(batched)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()  # whichever waits for room (nobody consumes)
        got = many.take_ready(100)
        if "one" in finished:  # nothing had to wait: the same queue, event for event
            assert finished == ["one", "many"] or finished == ["many", "one"]
            assert _shape(got) == _shape(one.take_ready(100))
            assert many.coalesced == one.coalesced
            return
        # something had to wait and was cancelled: the batches went in whole, seq gapless
        sent = len(got) + many.coalesced
        assert sent in (len(head), len(head) + len(tail))
        assert [e.seq for e in got] == list(range(1, len(got) + 1))
        whole = [*head, *tail][:sent]
        for channel in ("assistant", "reasoning"):
            assert _text(got, channel) == _text(whole, channel)

    trio.run(main)


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(0, 200), min_size=1, max_size=5))
def test_multi_row_inserts_write_what_executemany_writes(sizes: list[int]) -> None:
    insert = "INSERT INTO events (run, seq, kind, ts, body) VALUES (?, ?, ?, ?, ?)"
    schema = "CREATE TABLE events (gid INTEGER PRIMARY KEY AUTOINCREMENT, run INTEGER, seq INTEGER, kind TEXT, ts INTEGER, body TEXT, UNIQUE (run, seq))"
    ours, reference = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (ours, reference):
        conn.execute(schema)
    seq = 0
    for size in sizes:
        rows = [(1, seq + i, "text-delta", i, f'{{"n":{seq + i}}}') for i in range(size)]
        seq += size
        _insert_rows(ours, rows)
        reference.executemany(insert, rows)
    dump = "SELECT gid, run, seq, kind, ts, body FROM events ORDER BY gid"
    assert ours.execute(dump).fetchall() == reference.execute(dump).fetchall()


class _BatchSink:
    """Records each ``deliver`` call (one batch) with the trio time it came at."""

    def __init__(self) -> None:
        self.batches: list[tuple[float, list[RuntimeEvent]]] = []

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        self.batches.append((trio.current_time(), list(events)))
        await trio.lowlevel.checkpoint()

    @property
    def events(self) -> list[RuntimeEvent]:
        return [e for _, batch in self.batches for e in batch]


async def test_a_producer_publishing_frame_by_frame_reaches_the_sink_in_batches() -> None:
    sink = _BatchSink()
    async with ScriptedAdapter() as adapter:  # no script: frames are injected one at a time
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="go")
        )
        actor = RunActor(adapter, run, "run-1", sink, adapter.capabilities())

        async def produce() -> None:
            await adapter.inject({"type": "init", "sessionId": "s-1"})
            for i in range(300):  # one publish per scheduler round, like one line per read
                await trio.lowlevel.checkpoint()
                await adapter.inject({"type": "text", "text": f"w{i} "})
            await adapter.inject({"type": "result", "ok": True})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            outcome = await actor.run()
    assert outcome.reason == "success" and outcome.text == "".join(f"w{i} " for i in range(300))
    assert [e.seq for e in sink.events] == list(range(1, 303))
    assert len(sink.batches) < 302 // 4  # batched on the way to the log, not one by one


async def test_a_paced_producer_is_delivered_without_waiting_for_more(
    autojump_clock: trio.testing.MockClock,
) -> None:
    frames: list[dict[str, Any]] = [{"type": "init", "sessionId": "s-1"}]
    for i in range(5):
        frames += [{"type": "sleep", "seconds": 1}, {"type": "text", "text": f"w{i} "}]
    sink = _BatchSink()
    async with ScriptedAdapter(frames) as adapter:
        start = trio.current_time()
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="go")
        )
        actor = RunActor(adapter, run, "run-1", sink, adapter.capabilities())
        await actor.run()
    # each delta reaches the sink at the (virtual) second it was published, on its own
    deltas = [(t - start, e) for t, batch in sink.batches for e in batch if e.kind == "text-delta"]
    assert [round(t) for t, _ in deltas] == [1, 2, 3, 4, 5]
    assert all(len(batch) == 1 for t, batch in sink.batches if 0 < t - start < 5)
