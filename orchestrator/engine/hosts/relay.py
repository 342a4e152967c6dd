"""The relay between a remote node's runs and the head's event log (no Ray in here).

A node runs tasks with an ordinary :class:`~orchestrator.engine.runner.Runner` whose sink and run
recorder are one :class:`Outbox`: every event batch, run row, session row and task end becomes an
:data:`Op`, numbered in order. The head *pulls* ops in batches (:meth:`Outbox.take`: up to
``max_items``, or whatever arrived within ``max_wait_s`` of the first one) and acknowledges them
with the next pull. The node forgets ops only once they are acknowledged, so a pull lost in
flight is simply answered again; the head applies each op exactly once, in order
(:class:`HeadApplier`), writing to its event log before any subscriber sees an event. A full
outbox makes the node's runs wait (backpressure), exactly as a slow event log does locally.

When a node dies, the head still knows, for every run it was relaying, the last event it wrote:
:meth:`HeadApplier.interrupt_open` closes those streams with ``error{interrupted}`` +
``done{error}`` and marks their run rows ``interrupted``. What the head wrote is a gapless prefix
of what the node produced; nothing written is lost.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias

import attrs
import trio

from orchestrator.core.errors import ConfigError
from orchestrator.core.events import EventFactory, RuntimeEvent, now_ms
from orchestrator.core.quota import QuotaBook, QuotaReading
from orchestrator.engine.actor import EventSink
from orchestrator.engine.eventlog import INTERRUPTED_CODE, RunRecorder, RunRow, SessionRow

__all__ = [
    "EventsOp",
    "FinishRunOp",
    "HeadApplier",
    "Op",
    "Outbox",
    "OutboxRecorder",
    "OutboxSink",
    "QuotaOp",
    "RelayedQuotaBook",
    "SessionOp",
    "StartRunOp",
    "TaskEndedOp",
]


@attrs.frozen
class StartRunOp:
    task_key: str
    run_key: str
    runtime_id: str
    session_key: str


@attrs.frozen
class EventsOp:
    run_key: str
    events: tuple[RuntimeEvent, ...]


@attrs.frozen
class SessionOp:
    session_key: str
    runtime_id: str
    native_session_id: str | None
    codec_blob: str | None
    origin_cwd: str | None
    run_key: str | None
    agent_id: str | None = None


@attrs.frozen
class FinishRunOp:
    run_key: str
    status: str
    outcome: dict[str, Any]


@attrs.frozen
class TaskEndedOp:
    """A task finished on the node: its outcome, or the error it raised (errors pickle)."""

    task_key: str
    outcome: Any = None
    error: BaseException | None = None


@attrs.frozen
class QuotaOp:
    """Rate-limit windows a node's run reported, for the account it ran as (the head keeps the
    quota meters)."""

    readings: tuple[QuotaReading, ...]


Op: TypeAlias = StartRunOp | EventsOp | SessionOp | FinishRunOp | TaskEndedOp | QuotaOp


@attrs.define(eq=False)
class Outbox:
    """Numbered ops waiting for the head (see the module docstring). Lives on the node's trio
    thread; ``capacity`` bounds the unacknowledged ops (then :meth:`put` waits)."""

    capacity: int = 4096
    _ops: deque[tuple[int, Op]] = attrs.field(init=False, factory=deque[tuple[int, Op]])
    _next: int = attrs.field(init=False, default=1)
    _changed: trio.Event = attrs.field(init=False, factory=trio.Event)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def put(self, op: Op) -> None:
        while len(self._ops) >= self.capacity:
            await self._changed.wait()
        self._ops.append((self._next, op))
        self._next += 1
        self._notify()

    def put_nowait(self, op: Op) -> None:
        """For the task end (never blocks: a finished task must always be reported)."""
        self._ops.append((self._next, op))
        self._next += 1
        self._notify()

    def ack(self, upto: int) -> None:
        """Forget ops numbered ``<= upto`` (the head has applied them)."""
        dropped = False
        while self._ops and self._ops[0][0] <= upto:
            self._ops.popleft()
            dropped = True
        if dropped:
            self._notify()

    def pending(self) -> int:
        return len(self._ops)

    async def take(
        self, ack: int, *, max_items: int = 256, max_wait_s: float = 0.02, poll_s: float = 1.0
    ) -> list[tuple[int, Op]]:
        """Acknowledge ``<= ack``, then the ops after it: as soon as ``max_items`` are there, or
        ``max_wait_s`` after the first one is there; an empty list after ``poll_s`` of quiet."""
        self.ack(ack)
        with trio.move_on_after(poll_s):
            while not self._ops:
                await self._changed.wait()
        if not self._ops:
            return []
        with trio.move_on_after(max_wait_s):
            while len(self._ops) < max_items:
                await self._changed.wait()
        return [self._ops[i] for i in range(min(max_items, len(self._ops)))]


@attrs.define(eq=False)
class OutboxSink:
    """The node's :class:`EventSink`: event batches go to the outbox."""

    outbox: Outbox

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        await self.outbox.put(EventsOp(run_key, tuple(events)))


@attrs.define(eq=False)
class OutboxRecorder:
    """One task's run recorder on the node (the part of :class:`EventLog` a running task uses):
    rows go to the outbox, in order with the events; sessions are looked up on the head."""

    outbox: Outbox
    task_key: str

    async def start_run(self, run_key: str, *, runtime_id: str, session_key: str) -> None:
        await self.outbox.put(StartRunOp(self.task_key, run_key, runtime_id, session_key))

    async def finish_run(self, run_key: str, *, status: str, outcome: dict[str, Any]) -> None:
        await self.outbox.put(FinishRunOp(run_key, status, outcome))

    async def record_session(
        self,
        session_key: str,
        *,
        runtime_id: str,
        native_session_id: str | None,
        codec_blob: str | None,
        origin_cwd: str | None = None,
        run_key: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        await self.outbox.put(
            SessionOp(
                session_key,
                runtime_id,
                native_session_id,
                codec_blob,
                origin_cwd,
                run_key,
                agent_id,
            )
        )

    async def runs(self) -> list[RunRow]:
        raise ConfigError("a node does not look sessions up: the head resolves --resume")

    async def get_session(self, key: str) -> SessionRow | None:
        raise ConfigError("a node does not look sessions up: the head resolves --resume")


@attrs.define
class _OpenRun:
    run_id: str = ""
    session_id: str | None = None
    seq: int = 0


@attrs.define(eq=False)
class RelayedQuotaBook(QuotaBook):
    """The node runner's quota meters: kept in memory (so a task's fallbacks skip an account a
    run here found held; seeded with the head's readings of the task's targets) and relayed to
    the head, which keeps the real meters. :meth:`record` runs in a worker thread, as the
    runner calls it."""

    outbox: Outbox | None = None

    def record(self, readings: Iterable[QuotaReading]) -> None:
        fresh = tuple(readings)
        super().record(fresh)
        if fresh and self.outbox is not None:
            trio.from_thread.run_sync(self.outbox.put_nowait, QuotaOp(fresh))


@attrs.define(eq=False)
class HeadApplier:
    """Applies one node's ops on the head, exactly once and in order (see the module docstring).

    ``sink`` is the head runner's sink (the event log first, then the views); ``log`` is the
    head's run recorder for run and session rows (``None``: nothing recorded but events)."""

    sink: EventSink
    log: RunRecorder | None
    on_task_ended: Callable[[TaskEndedOp], Awaitable[None] | None]
    on_run_started: Callable[[StartRunOp], None] | None = None
    on_session: Callable[[SessionOp], None] | None = None
    quota: QuotaBook | None = None
    """The head's quota meters: the rate-limit windows the node's runs report (per account,
    :class:`QuotaOp`) are kept here."""
    applied: int = 0
    open_runs: dict[str, _OpenRun] = attrs.field(factory=dict[str, _OpenRun])

    async def apply(self, batch: Sequence[tuple[int, Op]]) -> None:
        for seq, op in batch:
            if seq <= self.applied:
                continue  # answered again after a lost pull
            await self._apply(op)
            self.applied = seq

    async def _apply(self, op: Op) -> None:
        log = self.log
        match op:
            case EventsOp(run_key=key, events=events):
                if events:
                    last = events[-1]
                    run = self.open_runs.setdefault(key, _OpenRun())
                    run.run_id, run.session_id, run.seq = last.run_id, last.session_id, last.seq
                    await self.sink.deliver(key, list(events))
            case StartRunOp(run_key=key, runtime_id=runtime_id, session_key=session_key):
                self.open_runs.setdefault(key, _OpenRun())
                if log is not None:
                    await log.start_run(key, runtime_id=runtime_id, session_key=session_key)
                if self.on_run_started is not None:
                    self.on_run_started(op)
            case SessionOp():
                if self.on_session is not None:
                    self.on_session(op)
                if log is not None:
                    await log.record_session(
                        op.session_key,
                        runtime_id=op.runtime_id,
                        native_session_id=op.native_session_id,
                        codec_blob=op.codec_blob,
                        origin_cwd=op.origin_cwd,
                        run_key=op.run_key,
                        agent_id=op.agent_id,
                    )
            case FinishRunOp(run_key=key, status=status, outcome=outcome):
                self.open_runs.pop(key, None)
                if log is not None:
                    await log.finish_run(key, status=status, outcome=outcome)
            case QuotaOp(readings=readings):
                if self.quota is not None and readings:
                    await trio.to_thread.run_sync(self.quota.record, readings)
            case TaskEndedOp():
                result = self.on_task_ended(op)
                if result is not None:
                    await result

    async def interrupt_open(self, reason: str) -> list[str]:
        """Close every run still open (the node died): ``error{interrupted}`` + ``done{error}``
        after the last event written, and the run row marked ``interrupted``. Returns their keys."""
        keys = list(self.open_runs)
        for key in keys:
            run = self.open_runs.pop(key)
            make = EventFactory(
                run_id=run.run_id, session_id=run.session_id, clock=now_ms, seq=run.seq
            )
            await self.sink.deliver(key, make.fail(reason, code=INTERRUPTED_CODE))
            if self.log is not None:
                await self.log.finish_run(
                    key,
                    status="interrupted",
                    outcome={"reason": "error", "summary": reason, "errorCode": INTERRUPTED_CODE},
                )
        return keys
