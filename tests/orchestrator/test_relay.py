"""The relay between a node's runs and the head's log (``orchestrator.engine.hosts.relay``), without Ray:
batching by count and by time, acknowledgement and re-delivery, backpressure, exactly-once
application in order, and closing the open runs of a lost node."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.core.events import ErrorEvent, EventFactory, RuntimeEvent
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import RecordingSink
from orchestrator.engine.hosts.relay import (
    EventsOp,
    HeadApplier,
    Op,
    Outbox,
    OutboxRecorder,
    OutboxSink,
    TaskEndedOp,
)


def deltas(make: EventFactory, n: int) -> list[RuntimeEvent]:
    return [make.text_delta(f"d{i} ") for i in range(n)]


async def test_take_returns_a_full_batch_at_once_and_a_partial_one_after_the_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    outbox = Outbox()
    sink = OutboxSink(outbox)
    make = EventFactory(run_id="r", session_id="s")
    for event in deltas(make, 5):
        await sink.deliver("k", [event])
    start = trio.current_time()
    batch = await outbox.take(0, max_items=5, max_wait_s=1.0)
    assert [seq for seq, _ in batch] == [1, 2, 3, 4, 5]
    assert trio.current_time() == start  # full: no waiting
    await sink.deliver("k", deltas(make, 1))
    batch = await outbox.take(5, max_items=5, max_wait_s=1.0)
    assert [seq for seq, _ in batch] == [6]
    assert trio.current_time() - start == pytest.approx(1.0)  # partial: after max_wait_s
    assert outbox.pending() == 1  # not acknowledged yet


async def test_an_unacknowledged_batch_is_answered_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    outbox = Outbox()
    make = EventFactory(run_id="r", session_id="s")
    await OutboxSink(outbox).deliver("k", deltas(make, 3))
    first = await outbox.take(0, max_items=10, max_wait_s=0)
    again = await outbox.take(0, max_items=10, max_wait_s=0)  # the first answer was lost
    assert first == again
    assert await outbox.take(1, max_items=10, max_wait_s=0, poll_s=0.5) == []


async def test_a_full_outbox_makes_the_run_wait_until_the_head_acknowledges(
    autojump_clock: trio.testing.MockClock,
) -> None:
    outbox = Outbox(capacity=2)
    sink = OutboxSink(outbox)
    make = EventFactory(run_id="r", session_id="s")
    delivered = 0

    async def run() -> None:
        nonlocal delivered
        for event in deltas(make, 4):
            await sink.deliver("k", [event])
            delivered += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await trio.sleep(10)
        assert delivered == 2 and outbox.pending() == 2
        outbox.ack(2)
        await trio.sleep(10)
        assert delivered == 4


async def test_the_head_applies_each_op_once_in_order_and_closes_a_lost_nodes_runs(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    outbox = Outbox()
    recorder = OutboxRecorder(outbox, "task-1")
    make = EventFactory(run_id="r1", session_id="s1")
    await recorder.start_run("run-a", runtime_id="scripted", session_key="s1")
    await OutboxSink(outbox).deliver("run-a", [make.status("running"), *deltas(make, 3)])
    await recorder.start_run("run-b", runtime_id="scripted", session_key="s2")
    other = EventFactory(run_id="r2", session_id="s2")
    await OutboxSink(outbox).deliver("run-b", [other.status("running")])
    await OutboxSink(outbox).deliver("run-b", other.finish("success", "ok"))
    await recorder.finish_run("run-b", status="success", outcome={"reason": "success"})
    ended: list[TaskEndedOp] = []
    outbox.put_nowait(TaskEndedOp("task-2"))

    async with EventLog.open(tmp_path / "e.db") as log:
        applier = HeadApplier(RecordingSink(log), log, on_task_ended=ended.append)
        batch: list[tuple[int, Op]] = await outbox.take(0, max_items=100, max_wait_s=0)
        await applier.apply(batch[:3])
        await applier.apply(batch)  # overlaps what was applied: applied once
        assert [op.task_key for op in ended] == ["task-2"]
        assert set(applier.open_runs) == {"run-a"}
        assert await applier.interrupt_open("node lost") == ["run-a"]
        await log.flush()
        events = list(await log.read("run-a"))
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert [e.kind for e in events][-2:] == ["error", "done"]
        error = events[-2]
        assert isinstance(error, ErrorEvent) and error.code == "interrupted"
        rows = {row.run_key: row.status for row in await log.runs()}
        assert rows == {"run-a": "interrupted", "run-b": "success"}
        assert len(list(await log.read("run-b"))) == 2
        assert not any(isinstance(op, EventsOp) and not op.events for _, op in batch)


async def test_a_node_relays_the_quota_it_sees_for_the_account_it_ran_as(tmp_path: Path) -> None:
    """A node's run reports a rate-limit window: the head's meters keep it under the run's
    account (no Ray needed: the node's book, its outbox and the head's applier)."""
    from orchestrator.core.quota import QuotaBook, QuotaReading
    from orchestrator.engine.hosts.relay import Outbox, RelayedQuotaBook

    outbox = Outbox(capacity=16)
    node_book = RelayedQuotaBook(outbox=outbox)
    reading = QuotaReading(
        runtime_id="codex",
        account="work",
        window="primary",
        used_percent=42.0,
        resets_at_ms=2_000_000_000_000,
        window_minutes=300,
        state="allowed",
        source="codex: rate limits",
        seen_ms=1_000,
    )
    await trio.to_thread.run_sync(node_book.record, [reading])
    head_book = QuotaBook(tmp_path / "quota.json")

    class NoSink:
        async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
            raise AssertionError("no events were relayed")

    applier = HeadApplier(sink=NoSink(), log=None, on_task_ended=lambda _op: None, quota=head_book)
    batch = await outbox.take(0, max_wait_s=0.0)
    await applier.apply(batch)
    (kept,) = head_book.readings()
    assert (kept.runtime_id, kept.account, kept.used_percent) == ("codex", "work", 42.0)
