"""Queues between producers (runtimes) and consumers (hosts, boards).

Two queues live here:

* :class:`AsyncQueue` — the original executor's bounded bridge with exactly its semantics: ``push`` never
  blocks, at ``max`` items (default 1000) the *oldest* item is dropped, ``close`` lets the consumer
  drain what is buffered and then ends, one consumer. (Where the original executor orphans a second
  concurrent pull forever, ours raises :class:`trio.BusyResourceError`.)
* :class:`EventQueue` — the stricter event path (docs/architecture.md, Choke points: backpressure). Nothing is ever dropped. When the
  consumer lags and the buffer is full, a text delta is **coalesced** into the buffered text delta
  before it (content concatenated, never lost) and every other kind makes the producer wait
  (backpressure: for a CLI the pipe fills and the CLI waits). Coalescing absorbs one ``seq``, so
  events queued after it are renumbered and the stream stays gapless.

:class:`QueueEventStream` is the :class:`~orchestrator.core.adapter.EventStream` adapters return: it
reads an :class:`EventQueue`, ends after the run's ``done`` (one-shot streams close), and its
``aclose`` releases the producer's subscription.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import trio

from orchestrator.core.adapter import EventStream
from orchestrator.core.events import Done, RuntimeEvent, TextDelta, with_seq, with_text

__all__ = [
    "DEFAULT_QUEUE_MAX",
    "AsyncQueue",
    "EventQueue",
    "QueueEventStream",
    "collect_until_done",
    "create_async_queue",
]

T = TypeVar("T")

DEFAULT_QUEUE_MAX = 1000


class AsyncQueue(Generic[T]):
    """A single-consumer, drop-oldest, bounded async queue (the original executor's ``AsyncQueue``)."""

    def __init__(self, max: int = DEFAULT_QUEUE_MAX) -> None:
        if max < 1:
            raise ValueError("max must be at least 1")
        self._max = max
        self._buffer: deque[T] = deque()
        self._closed = False
        self._waiter = trio.lowlevel.ParkingLot()
        self._receiving = False

    @property
    def max(self) -> int:
        return self._max

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._buffer)

    def push(self, value: T) -> None:
        """Append ``value``; drops the oldest item when full; a no-op once closed."""
        if self._closed:
            return
        if len(self._buffer) >= self._max:
            self._buffer.popleft()
        self._buffer.append(value)
        self._waiter.unpark_all()

    def close(self) -> None:
        """End the queue after what is buffered has been drained. Idempotent."""
        self._closed = True
        self._waiter.unpark_all()

    async def receive(self) -> T:
        """The oldest item; waits for one. Raises :class:`trio.EndOfChannel` once closed and empty."""
        if self._receiving:
            raise trio.BusyResourceError("AsyncQueue has a single consumer")
        self._receiving = True
        try:
            while not self._buffer:
                if self._closed:
                    raise trio.EndOfChannel
                await self._waiter.park()
            return self._buffer.popleft()
        finally:
            self._receiving = False

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Close the queue (the original executor's iterator ``return()``); buffered items stay."""
        self.close()


def create_async_queue(max: int = DEFAULT_QUEUE_MAX) -> AsyncQueue[Any]:
    """Build an :class:`AsyncQueue` (the original executor's ``createAsyncQueue``).

    Prefer ``AsyncQueue[T](max)`` when the item type matters to the type checker.
    """
    return AsyncQueue[Any](max)


class EventQueue:
    """The event-path queue: coalesce text deltas, apply backpressure to everything else.

    The producer calls :meth:`send` (or :meth:`send_batch`) and finally :meth:`close`. The
    consumer calls :meth:`receive` / :meth:`receive_batch`; :meth:`close_receiver` means the
    consumer has gone: later sends are discarded and report ``False``.
    """

    def __init__(self, max_items: int = DEFAULT_QUEUE_MAX) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self._max = max_items
        self._buffer: deque[RuntimeEvent] = deque()
        self._closed = False
        self._receiver_closed = False
        self._shift = 0
        self._merging: list[str] | None = None
        """Texts being coalesced into the last buffered delta (joined once, when it leaves)."""
        self._data = trio.lowlevel.ParkingLot()
        self._space = trio.lowlevel.ParkingLot()
        self.coalesced = 0
        """How many text deltas were merged into an earlier one because the consumer lagged."""

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def receiver_closed(self) -> bool:
        return self._receiver_closed

    def __len__(self) -> int:
        return len(self._buffer)

    def _renumbered(self, event: RuntimeEvent) -> RuntimeEvent:
        if self._shift:
            return with_seq(event, event.seq - self._shift)
        return event

    def _seal(self) -> None:
        """Materialize the coalesced delta at the tail of the buffer (one join, not n copies)."""
        parts = self._merging
        if parts is not None:
            self._merging = None
            last = self._buffer[-1]
            assert isinstance(last, TextDelta)
            self._buffer[-1] = with_text(last, "".join(parts))

    def _try_put(self, event: RuntimeEvent) -> bool:
        """Put without waiting if possible (room, or a delta that can be coalesced)."""
        buf = self._buffer
        if len(buf) < self._max:
            if self._merging is not None:
                self._seal()
            buf.append(self._renumbered(event) if self._shift else event)
            if self._data:
                self._data.unpark_all()
            return True
        if isinstance(event, TextDelta) and buf:
            last = buf[-1]
            if isinstance(last, TextDelta) and last.channel == event.channel:
                if self._merging is None:
                    self._merging = [last.text]
                self._merging.append(event.text)
                self._shift += 1
                self.coalesced += 1
                return True
        return False

    async def send(self, event: RuntimeEvent) -> bool:
        """Queue ``event``; waits while the buffer is full (unless it can be coalesced).

        Returns ``False`` when the consumer has gone (the event is discarded). Raises
        :class:`trio.ClosedResourceError` if the producer already closed the queue.
        """
        while True:
            if self._closed:
                raise trio.ClosedResourceError("event queue already closed by its producer")
            if self._receiver_closed:
                return False
            if self._try_put(event):
                await trio.lowlevel.checkpoint_if_cancelled()
                return True
            await self._space.park()

    async def send_batch(self, events: list[RuntimeEvent]) -> bool:
        """Queue several events in order, with the same policy as :meth:`send` (waiting only
        when the buffer is full; one cancellation point for the batch otherwise).

        A batch goes in whole: cancelled while it waits for room, the rest of it is queued
        past the bound (:meth:`put_all`) before ``Cancelled`` propagates. The producer has
        numbered these events; dropping the end of a batch would leave a gap in ``seq``."""
        buf = self._buffer
        if (
            len(buf) + len(events) <= self._max
            and not self._shift
            and self._merging is None
            and not self._closed
            and not self._receiver_closed
        ):  # room for all, nothing to renumber or seal: what _try_put does per event, at once
            buf.extend(events)
            if self._data:
                self._data.unpark_all()
            await trio.lowlevel.checkpoint_if_cancelled()
            return True
        try_put = self._try_put
        for i, event in enumerate(events):
            while True:
                if self._closed:
                    raise trio.ClosedResourceError("event queue already closed by its producer")
                if self._receiver_closed:
                    return False
                if try_put(event):
                    break
                try:
                    await self._space.park()
                except trio.Cancelled:
                    self.put_all(events[i:])
                    raise
        await trio.lowlevel.checkpoint_if_cancelled()
        return True

    def put_all(self, events: list[RuntimeEvent]) -> bool:
        """Queue ``events`` now, past the bound if need be (the end of a batch whose send was
        cancelled: the queue overshoots by at most that batch). ``False`` when the consumer
        has gone."""
        if self._closed:
            raise trio.ClosedResourceError("event queue already closed by its producer")
        if self._receiver_closed:
            return False
        self._seal()
        shift = self._shift
        self._buffer.extend([with_seq(e, e.seq - shift) for e in events] if shift else events)
        if self._data:
            self._data.unpark_all()
        return True

    def close(self) -> None:
        """The producer is done: the consumer drains the buffer and then sees the end."""
        self._closed = True
        self._data.unpark_all()
        self._space.unpark_all()

    def close_receiver(self) -> None:
        """The consumer has gone: drop the buffer, wake and release waiting producers."""
        self._receiver_closed = True
        self._merging = None
        self._buffer.clear()
        self._data.unpark_all()
        self._space.unpark_all()

    async def receive(self) -> RuntimeEvent:
        """The next event; raises :class:`trio.EndOfChannel` when closed and drained."""
        while not self._buffer:
            if self._closed or self._receiver_closed:
                raise trio.EndOfChannel
            await self._data.park()
        if len(self._buffer) == 1:
            self._seal()
        event = self._buffer.popleft()
        if self._space:
            self._space.unpark_all()
        return event

    async def receive_batch(self, max_items: int = 256) -> list[RuntimeEvent]:
        """Up to ``max_items`` events at once (at least one); ``EndOfChannel`` at the end."""
        while not self._buffer:
            if self._closed or self._receiver_closed:
                raise trio.EndOfChannel
            await self._data.park()
        return self.take_ready(max_items)

    def take_ready(self, max_items: int = 256) -> list[RuntimeEvent]:
        """Up to ``max_items`` buffered events, without waiting (``[]`` if none)."""
        buf = self._buffer
        if not buf:
            return []
        if len(buf) <= max_items:
            self._seal()
            batch = list(buf)
            buf.clear()
        else:
            batch = [buf.popleft() for _ in range(max_items)]
        if self._space:
            self._space.unpark_all()
        return batch


class QueueEventStream:
    """The standard :class:`~orchestrator.core.adapter.EventStream` over an :class:`EventQueue`.

    After it has yielded a ``done`` (when ``close_on_done``) the stream ends and releases its
    subscription, so a one-shot stream always closes after its terminal.
    """

    cancel_safe = True
    """A cancelled pull consumes nothing (the idle guard relies on it)."""

    def __init__(
        self,
        queue: EventQueue,
        *,
        on_close: Callable[[], None] | None = None,
        close_on_done: bool = True,
    ) -> None:
        self._queue = queue
        self._on_close = on_close
        self._close_on_done = close_on_done
        self._finished = False

    @property
    def queue(self) -> EventQueue:
        return self._queue

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> RuntimeEvent:
        if self._finished:
            raise StopAsyncIteration
        try:
            event = await self._queue.receive()
        except trio.EndOfChannel:
            self._release()
            raise StopAsyncIteration from None
        if self._close_on_done and isinstance(event, Done):
            self._release()
        return event

    def take_ready(self, max_items: int = 256) -> list[RuntimeEvent]:
        """Up to ``max_items`` events the stream holds, without waiting (``[]`` if none, or at
        the end); like ``__anext__`` it stops after ``done`` (and then ends the stream)."""
        if self._finished:
            return []
        batch = self._queue.take_ready(max_items)
        if self._close_on_done:
            kinds = list(map(type, batch))  # (``type() is``, not isinstance: 3× cheaper)
            if Done in kinds:
                self._release()  # nothing after done is delivered
                return batch[: kinds.index(Done) + 1]
        return batch

    def _release(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._queue.close_receiver()
        if self._on_close is not None:
            self._on_close()

    async def aclose(self) -> None:
        self._release()
        await trio.lowlevel.checkpoint()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def collect_until_done(stream: EventStream, cap: int = 200) -> list[RuntimeEvent]:
    """Pull events until the first ``done`` or ``cap`` events, then close the stream."""
    out: list[RuntimeEvent] = []
    try:
        async for event in stream:
            out.append(event)
            if isinstance(event, Done) or len(out) >= cap:
                break
    finally:
        await stream.aclose()
    return out
