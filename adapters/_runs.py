"""One run's outbound events: the shared mechanism every adapter publishes through.

A :class:`RunEmitter` owns the run's :class:`~orchestrator.core.events.EventFactory` (gapless ``seq``,
tool-call bookkeeping, cumulative cost, one terminal) and its subscribers. An adapter's normalizer
turns native frames into events with ``emitter.factory``; the adapter hands them to
:meth:`RunEmitter.publish`. The emitter then keeps the contracts of docs/architecture.md (Contracts) for everyone:

* events published before anyone subscribed are buffered for the first subscriber (a runtime
  may speak before the host calls ``events()``);
* ``events()`` subscribes eagerly; the first subscriber sees ``seq`` from 1, later ones are
  renumbered from 1 at the point they joined;
* the run id is bound late: by :meth:`bind_run_id` from the runtime's own id, else on the first
  event from a generated id, and the :class:`RunHandle` sees it;
* nothing is delivered after ``done``; after ``done`` a one-shot run's streams close;
* the backpressure policy of :class:`~orchestrator.core.queue.EventQueue` (coalesce text deltas,
  make the producer wait for everything else) applies per subscriber;
* unknown native frames are counted and surfaced once per type as a ``status`` detail.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable

import attrs
import trio

from orchestrator.core.adapter import RunHandle
from orchestrator.core.errors import RingleaderError, RuntimeReportedError, redact_secrets
from orchestrator.core.events import Done, DoneReason, EventFactory, RuntimeEvent, now_ms, with_seq
from orchestrator.core.queue import DEFAULT_QUEUE_MAX, EventQueue, QueueEventStream

__all__ = ["RunEmitter", "RunTable"]

_YIELD_BACKLOG = 64

_log = logging.getLogger(__name__)


@attrs.define(eq=False)
class _Subscriber:
    queue: EventQueue
    seq_offset: int


@attrs.define(eq=False)
class RunEmitter:
    """The outbound side of one run (see the module docstring).

    The adapter's pattern for each native frame: bind the runtime's id if the frame carries one
    (:meth:`bind_run_id`), else :meth:`ensure_run_id`; normalize with :attr:`factory`; then
    :meth:`publish` the events.
    """

    handle: RunHandle
    clock: Callable[[], int] = now_ms
    one_shot: bool = True
    max_buffer: int = DEFAULT_QUEUE_MAX
    factory: EventFactory = attrs.field(init=False)
    unknown_frames: dict[str, int] = attrs.field(init=False, factory=dict[str, int])
    """Unknown native frame types seen, with counts."""
    dropped_after_done: int = attrs.field(init=False, default=0)
    """Events an adapter tried to publish after the terminal (a bug in that adapter)."""
    finished: trio.Event = attrs.field(init=False, factory=trio.Event)
    """Set once ``done`` has been published."""
    _subscribers: list[_Subscriber] = attrs.field(init=False, factory=list[_Subscriber])
    _unclaimed: _Subscriber | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self.factory = EventFactory(
            run_id=self.handle.run_id or "",
            session_id=self.handle.session_key,
            clock=self.clock,
        )
        # Buffers everything published before the host's first events() call.
        self._unclaimed = _Subscriber(EventQueue(self.max_buffer), 0)
        self._subscribers.append(self._unclaimed)

    @property
    def done(self) -> bool:
        """True once the terminal ``done`` has been published."""
        return self.finished.is_set()

    def bind_run_id(self, run_id: str) -> None:
        """Bind the runtime's own run id, if none is bound yet (the first id wins)."""
        if self.handle.run_id is None and run_id:
            self.handle.run_id = run_id
            self.factory.run_id = run_id

    def ensure_run_id(self) -> None:
        """Bind a generated run id if the runtime has not told us one yet."""
        if self.handle.run_id is None:
            self.bind_run_id(f"{self.handle.adapter_id}-{uuid.uuid4().hex[:12]}")

    def subscribe(self) -> QueueEventStream:
        """A new stream of this run's events (buffered from now on; the first gets the backlog)."""
        sub = self._unclaimed
        if sub is not None:
            self._unclaimed = None
        else:
            sub = _Subscriber(EventQueue(self.max_buffer), self.factory.seq)
            if self.done and self.one_shot:
                sub.queue.close()
            else:
                self._subscribers.append(sub)
        return QueueEventStream(
            sub.queue, on_close=lambda: self._unsubscribe(sub), close_on_done=self.one_shot
        )

    def _unsubscribe(self, sub: _Subscriber) -> None:
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    def note_unknown(self, frame_type: str) -> list[RuntimeEvent]:
        """Count an unknown native frame; the first of each type gives a ``status`` detail."""
        count = self.unknown_frames.get(frame_type, 0) + 1
        self.unknown_frames[frame_type] = count
        if count > 1 or self.done:
            return []
        self.ensure_run_id()
        return [self.factory.status("running", detail=f"ignored unknown frame type {frame_type!r}")]

    async def publish(self, events: Iterable[RuntimeEvent]) -> None:
        """Deliver events in order to every subscriber (or the backlog), applying backpressure.
        A batch is delivered whole: cancelled while it waits for room, it still reaches every
        subscriber (past their bound) before ``Cancelled`` propagates, so no ``seq`` is lost."""
        batch = list(events)
        if self.finished.is_set():
            dropped, batch = batch, []
        else:
            kinds = list(map(type, batch))  # (``type() is``, not isinstance: 3× cheaper)
            end = kinds.index(Done) if Done in kinds else None
            dropped = [] if end is None else batch[end + 1 :]
            if end is not None:
                batch = batch[: end + 1]
        for event in dropped:
            self.dropped_after_done += 1
            _log.warning("%s: %s event after done dropped", self.handle.adapter_id, event.kind)
        backlog = 0
        cancelled: trio.Cancelled | None = None
        if batch:
            for sub in tuple(self._subscribers):
                queue = sub.queue
                offset = sub.seq_offset
                out = batch if not offset else [with_seq(e, e.seq - offset) for e in batch]
                if cancelled is not None:  # the batch still reaches everyone: no seq gap
                    delivered = queue.put_all(out)
                else:
                    try:
                        delivered = await queue.send_batch(out)
                    except trio.Cancelled as exc:  # queued whole all the same (send_batch)
                        cancelled, delivered = exc, True
                if not delivered:
                    self._unsubscribe(sub)
                backlog = max(backlog, len(queue))
            if type(batch[-1]) is Done:
                self.finished.set()
                if self.one_shot:
                    for sub in self._subscribers:
                        sub.queue.close()
        if cancelled is not None:
            raise cancelled
        # A producer that never waits on I/O must not starve its consumers (they would only
        # ever see coalesced deltas): yield once a subscriber has a backlog worth draining.
        if backlog >= _YIELD_BACKLOG:
            await trio.lowlevel.checkpoint()

    async def finish(self, reason: DoneReason = "success", summary: str = "") -> None:
        """Publish the terminal group (no-op if already finished)."""
        self.ensure_run_id()
        await self.publish(self.factory.finish(reason, summary))

    async def fail(self, message: str, *, code: str | None = None) -> None:
        """Publish ``error{fatal}`` then ``done{error}`` (no-op if already finished)."""
        self.ensure_run_id()
        await self.publish(self.factory.fail(redact_secrets(message), code=code))

    async def fail_with(self, error: RingleaderError) -> None:
        """Report a typed error: ``error{fatal}`` then ``done{error}``. The code is the error's
        ``event_code``, except that a :class:`RuntimeReportedError` keeps the runtime's own
        ``code`` when it has one (``session_not_found``, ``rate_limited``, a JSON-RPC code)."""
        code = error.event_code
        if isinstance(error, RuntimeReportedError) and error.code:
            code = error.code
        await self.fail(str(error), code=code)

    async def fail_from(self, exc: Exception, adapter: str) -> None:
        """Report whatever ended a run's driver: a typed error as :meth:`fail_with`, anything
        else as ``adapter_error`` naming the adapter and the exception's type."""
        if isinstance(exc, RingleaderError):
            await self.fail_with(exc)
        else:
            await self.fail(
                f"{adapter} adapter failed: {type(exc).__name__}: {exc}", code="adapter_error"
            )


KEEP_FINISHED = 256
"""Finished runs an adapter keeps (the most recent): their emitters replay to a late subscriber
and their records answer ``session_of``/``write_context``; older ones are forgotten, so a
long-lived adapter's memory does not grow with every run it ever made."""


def _forget_nothing(session_key: str) -> None:
    del session_key


@attrs.define
class RunTable:
    """An adapter's runs by session key (a new run for a key replaces the old one).

    Live runs are always kept; of the finished ones only the :data:`KEEP_FINISHED` most recent
    (by start). ``on_forget`` is told each session key dropped, so the adapter can drop its own
    record of that run too."""

    runs: dict[str, RunEmitter] = attrs.field(factory=dict[str, RunEmitter])
    keep_finished: int = KEEP_FINISHED
    on_forget: Callable[[str], None] = _forget_nothing
    _prune_at: int = attrs.field(init=False, default=0)

    def add(self, emitter: RunEmitter) -> None:
        runs = self.runs
        key = emitter.handle.session_key
        runs.pop(key, None)  # a new run for a key counts as the newest
        runs[key] = emitter
        if len(runs) > max(self._prune_at, self.keep_finished):
            self._prune()

    def _prune(self) -> None:
        """Forget the oldest finished runs beyond :attr:`keep_finished` (amortized: the next
        prune waits until a quarter of the cap more runs were added)."""
        runs = self.runs
        finished = [key for key, emitter in runs.items() if emitter.done]
        for key in finished[: max(0, len(finished) - self.keep_finished)]:
            del runs[key]
            self.on_forget(key)
        self._prune_at = len(runs) + max(1, self.keep_finished // 4)

    def get(self, run: RunHandle) -> RunEmitter | None:
        return self.runs.get(run.session_key)
