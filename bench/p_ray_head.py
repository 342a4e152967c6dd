"""Path 7: the head's event log under N concurrent remote runs (``RayHost``'s relay, simulated).

How far does one head scale when its runs live on other nodes? Every remote run's events reach
the head through ``orchestrator.engine.hosts.relay``: the node's runner writes ops into an ``Outbox``,
the head pulls them in batches (by count and by time) and a ``HeadApplier`` writes them to the
head's durable ``EventLog`` (WAL, group commit) through the ``RecordingSink``. Here the nodes are
simulated in the same process (``NODES`` outboxes; fake runtimes: each run emits ``status``,
twelve ``text-delta``, ``cost`` and ``done``, with a checkpoint between events, all runs at once),
so the figure is the head's side — pull, apply, commit — without Ray's own transport (pickling
and the RPC per batch; that cost is per *batch*, not per event).

Reported: events committed per second on the head, the peak RSS, and the same runs written
straight into the event log by a local sink (what ``LocalHost`` does) as the limit, measured in
the same pass. Typical case only: the runs are not batched beyond what the relay batches.
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from ._core import Config, Row, Target, figure, path
from .p_sessions import _rss_mib  # pyright: ignore[reportPrivateUsage]

NODES = 8
DELTAS = 12
EVENTS_PER_RUN = DELTAS + 3


def _one_pass(runs: int, tmp: Path, relayed: bool) -> tuple[float, int]:
    """(seconds, events committed) for ``runs`` concurrent fake runs."""
    import trio

    from orchestrator.core.events import EventFactory, Usage
    from orchestrator.engine.actor import EventSink
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.feed import RecordingSink
    from orchestrator.engine.hosts.relay import (
        HeadApplier,
        Outbox,
        OutboxRecorder,
        OutboxSink,
        TaskEndedOp,
    )

    committed = 0

    async def fake_run(index: int, sink: EventSink, recorder: object | None) -> None:
        make = EventFactory(run_id=f"r{index}", session_id=f"s{index}")
        run_key = f"runtime:fake:task:{index}:run-0"
        if isinstance(recorder, OutboxRecorder):
            await recorder.start_run(run_key, runtime_id="fake", session_key=f"s{index}")
        await sink.deliver(run_key, [make.status("running")])
        for n in range(DELTAS):
            await trio.lowlevel.checkpoint()
            await sink.deliver(run_key, [make.text_delta(f"chunk {n} of run {index} ")])
        usage = Usage(input_tokens=400, output_tokens=30)
        await sink.deliver(run_key, [make.cost(usage, cost_usd=None)])
        await sink.deliver(run_key, make.finish("success", "done"))
        if isinstance(recorder, OutboxRecorder):
            await recorder.finish_run(run_key, status="success", outcome={"reason": "success"})

    async def main() -> float:
        nonlocal committed
        async with EventLog.open(tmp / f"events-{uuid.uuid4().hex}.db") as log:
            head_sink = RecordingSink(log)
            t0 = time.perf_counter()
            if not relayed:
                async with trio.open_nursery() as nursery:
                    for index in range(runs):
                        nursery.start_soon(fake_run, index, head_sink, None)
                await log.flush()
                committed = await log.last_gid()
                return time.perf_counter() - t0
            outboxes = [Outbox() for _ in range(NODES)]
            finished = 0
            all_done = trio.Event()

            def ended(op: TaskEndedOp) -> None:
                nonlocal finished
                finished += 1
                if finished == runs:
                    all_done.set()

            async def node_run(index: int) -> None:
                outbox = outboxes[index % NODES]
                await fake_run(index, OutboxSink(outbox), OutboxRecorder(outbox, str(index)))
                outbox.put_nowait(TaskEndedOp(str(index)))

            async def pump(outbox: Outbox) -> None:
                applier = HeadApplier(sink=head_sink, log=log, on_task_ended=ended)
                while True:
                    batch = await outbox.take(applier.applied, max_items=256, max_wait_s=0.02)
                    await applier.apply(batch)

            async with trio.open_nursery() as nursery:
                for outbox in outboxes:
                    nursery.start_soon(pump, outbox)
                for index in range(runs):
                    nursery.start_soon(node_run, index)
                await all_done.wait()
                nursery.cancel_scope.cancel()
            await log.flush()
            committed = await log.last_gid()
            return time.perf_counter() - t0

    seconds = trio.run(main)
    return seconds, committed


@path(
    "ray_head",
    "Ray head: event log under N concurrent remote runs (relay, simulated nodes)",
    timeout_s=1200,
)
def bench_ray_head(cfg: Config) -> list[Row]:
    runs = 200 if cfg.smoke else (2_000 if cfg.quick else 10_000)
    passes = 1 if cfg.smoke else 3
    ours: list[float] = []
    limit: list[float] = []
    peak = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(passes):
            gc.collect()
            seconds, events = _one_pass(runs, Path(tmp), relayed=True)
            ours.append(events / seconds)
            peak = max(peak, _rss_mib()[1])
            seconds, events = _one_pass(runs, Path(tmp), relayed=False)
            limit.append(events / seconds)
    row = Row(
        key=f"ray_head_{runs}",
        title=f"head event log, {runs:,} concurrent remote runs × {EVENTS_PER_RUN} events",
        unit="events/s",
        better="higher",
        target=Target("≥ 0.5× the local sink (relay overhead ≤ 2×)", "min_ratio_to_limit", 0.5),
        ours=figure("relay → head log", ours, "events/s", "higher"),
        limit=figure("local sink → log", limit, "events/s", "higher"),
    )
    row.notes.append(
        f"{NODES} simulated nodes in one process; Ray's transport (pickle + one RPC per batch of "
        f"≤256 ops) not included; peak RSS {peak:.0f} MiB; "
        f"median wall {runs * EVENTS_PER_RUN / statistics.median(ours):.1f} s per pass"
    )
    return [row]
