"""``ringleader serve`` (the board, hosting runs) and ``ringleader run --board``. Part of the CLI:
the library never imports this module."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

import attrs
import trio

from orchestrator.board.server import BoardHost, board_app
from orchestrator.cli.commands import serve_banner, usable_state_dir
from orchestrator.core.approvals import ApprovalBook
from orchestrator.core.config import AccountConfig, ScheduleConfig
from orchestrator.core.quota import QuotaBook
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.eventlog import EventLog, LoggedEvent
from orchestrator.engine.feed import Feed, RecordingSink, serve_feed
from orchestrator.engine.hosts import LocalHost
from orchestrator.engine.runner import Runner
from orchestrator.engine.schedule import ScheduleBook, Scheduler, describe_cron, host_firing

__all__ = ["FeedRelay", "board_for_run", "serve_board", "tail_log"]


STOP_GRACE_S = 10.0
"""How long ``serve`` waits, after Ctrl-C, for its runs to end as aborted."""


@attrs.define(eq=False)
class FeedRelay:
    """Publishes to ``feed`` what this process commits (as the log's listener) and what other
    processes append (:func:`tail_log`), each event once and in ``gid`` order."""

    feed: Feed
    last: int = 0
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def publish(self, items: Sequence[LoggedEvent]) -> None:
        async with self._lock:
            fresh = [i for i in items if i.gid > self.last]
            if fresh:
                self.last = fresh[-1].gid
                await self.feed.publish(fresh)


async def tail_log(log: EventLog, relay: FeedRelay, interval_s: float = 0.2) -> None:
    """Publish what other processes append to the log (``ringleader run`` in another shell)."""
    relay.last = max(relay.last, await log.last_gid())
    while True:
        batch = await log.read_since(relay.last)
        if batch:
            await relay.publish(batch)
        else:
            await trio.sleep(interval_s)


async def serve_board(
    registry: RuntimeRegistry,
    *,
    host: str,
    port: int,
    token: str | None,
    out: TextIO,
    schedules: Sequence[ScheduleConfig] = (),
    accounts: Mapping[str, AccountConfig] | None = None,
) -> int:
    """Serve the board over the event log, hosting the runs posted to ``/tasks`` (they work in
    the current directory); runs of other processes show up live too. ``schedules``: the
    ``[[schedule]]`` tasks it runs on their cron schedule (``orchestrator/engine/schedule.py``)."""
    state = usable_state_dir()
    feed = Feed()
    async with EventLog.open(state / "events.db") as log:
        relay = FeedRelay(feed)
        log.add_listener(relay)
        runner = Runner(
            registry,
            sink=RecordingSink(log),
            state_dir=state,
            event_log=log,
            approvals=True,  # tool calls that need approval wait for the board (or the CLI)
            quota=QuotaBook.in_state_dir(state),
            accounts=accounts or {},
        )
        async with LocalHost(runner) as local:
            hosted = BoardHost(
                local,
                tuple(registry.ids()),
                approvals=ApprovalBook.in_state_dir(state),
                task_defaults={"cwd": os.getcwd(), "agent_id": "board"},
            )
            app = board_app(
                feed, log, token=token, hosted=hosted, quota=QuotaBook.in_state_dir(state)
            )
            async with (
                serve_feed(feed, log, host=host, port=port, token=token, app=app) as served,
                trio.open_nursery() as nursery,
            ):
                nursery.start_soon(tail_log, log, relay)
                with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    out.write(serve_banner(served.url, token=bool(token)) + "\n")
                    out.flush()
                    if schedules:
                        nursery.start_soon(_run_schedules, schedules, local, state, out)
                    async for _ in signals:
                        break
                    await _abort_hosted(local, signals)
                nursery.cancel_scope.cancel()
    return 130


async def _run_schedules(
    schedules: Sequence[ScheduleConfig], local: LocalHost, state: Path, out: TextIO
) -> None:
    """The ``[[schedule]]`` tasks, fired on this server's host; missed and skipped firings are
    reported on ``out``."""

    def notify(line: str) -> None:
        out.write(f"ringleader: {line}\n")
        out.flush()

    for schedule in schedules:
        notify(f"schedule {schedule.id}: {describe_cron(schedule)} ({schedule.timezone})")
    scheduler = Scheduler(
        schedules,
        host_firing(local.submit, state_dir=state, base_dir=Path.cwd()),
        book=ScheduleBook.in_state_dir(state),
        notify=notify,
    )
    await scheduler.run()


async def _abort_hosted(
    local: LocalHost, signals: AsyncIterator[int], grace_s: float = STOP_GRACE_S
) -> None:
    """Ctrl-C: abort the runs this process hosts and wait (up to ``grace_s``, or a second
    signal) for each to end as ``aborted`` in the log, rather than be cut off mid-run."""
    live = [ref for ref in local.tasks if not ref.finished]
    for ref in live:
        ref.abort()
    with trio.move_on_after(grace_s):
        async with trio.open_nursery() as nursery:

            async def second_signal() -> None:
                async for _ in signals:
                    nursery.cancel_scope.cancel()

            async def all_done() -> None:
                for ref in live:
                    with contextlib.suppress(Exception):
                        await ref.outcome()
                nursery.cancel_scope.cancel()

            nursery.start_soon(second_signal)
            nursery.start_soon(all_done)


@asynccontextmanager
async def board_for_run(
    log: EventLog, local: LocalHost, *, notice: TextIO, approvals: ApprovalBook | None = None
) -> AsyncGenerator[BoardHost]:
    """``run --board``: the board on 127.0.0.1 (a free port) over this process's runs while
    they run (with ``approvals``: their pending approvals too); prints its URL to ``notice``."""
    feed = Feed()
    feed.attach(log)
    hosted = BoardHost(local, (), approvals=approvals)
    app = board_app(feed, log, hosted=hosted)
    async with serve_feed(feed, log, host="127.0.0.1", port=0, app=app) as served:
        notice.write(f"ringleader: board at {served.url}/ (open while the runs run)\n")
        notice.flush()
        try:
            yield hosted
        finally:
            feed.close()
            log.remove_listener(feed)
