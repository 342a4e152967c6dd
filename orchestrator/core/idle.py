"""The idle guard: end a stream that has gone silent, after giving ``on_idle`` a grace window.

``with_idle_timeout`` re-yields a source. Each gap between events is bounded by ``idle_s``; when a
gap runs out, ``on_idle`` (typically ``adapter.abort``) is started in the background and never
awaited (a wedged abort must not hang the consumer), and the stream goes on in the *grace*
window: from then on every gap is bounded by ``grace_s`` (after an abort only a terminal is
expected). A second expiry ends the stream. The timer is an idle reset, not a total budget;
the consumer pauses it (``paused``) while the run waits for a person.

The pending pull is never lost to a timeout: a cancel-safe source (one that sets
``cancel_safe = True``, like :class:`~orchestrator.core.queue.QueueEventStream`) is pulled directly,
because a cancelled receive consumes nothing — and what it already holds is taken without any
timeout scope (its ``take_ready``; :meth:`IdleGuard.next_batch` takes it all at once), so only a
pull that must wait pays for a timer; any other async iterator is pumped by a helper task
whose in-flight pull carries over from one window to the next. Source exceptions reach the
consumer. On exit the source is closed (errors from its ``aclose`` are swallowed) and a still
running ``on_idle`` gets one grace window to finish before it is cancelled.

Usage::

    async with with_idle_timeout(stream, idle_s=600, on_idle=lambda: adapter.abort(run)) as events:
        async for event in events:
            ...
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Generic, Self, TypeVar

import outcome
import trio

__all__ = [
    "DEFAULT_RUN_SILENT_TIMEOUT_S",
    "DEFAULT_RUN_STALL_TIMEOUT_S",
    "IDLE_ABORT_GRACE_S",
    "IdleGuard",
    "with_idle_timeout",
]

T = TypeVar("T")

DEFAULT_RUN_SILENT_TIMEOUT_S = 30 * 60.0
"""A run that says nothing for 30 minutes is considered wedged."""
DEFAULT_RUN_STALL_TIMEOUT_S = 20 * 60.0
"""A run whose runtime keeps talking (statuses, retries, "Reconnecting…") without progress —
no text, tool call, tool result or cost — for 20 minutes ends ``error{stalled}`` (the actor's
``stall_s``)."""
IDLE_ABORT_GRACE_S = 5.0
"""After ``on_idle`` fires, this long is allowed for the terminal to arrive."""

_log = logging.getLogger(__name__)

OnIdle = Callable[[], Awaitable[object] | None]


class IdleGuard(Generic[T]):
    """The async iterator yielded by :func:`with_idle_timeout`."""

    def __init__(
        self,
        source: AsyncIterator[T],
        *,
        idle_s: float,
        grace_s: float,
        on_idle: OnIdle,
        nursery: trio.Nursery,
    ) -> None:
        self._source = source
        self._idle_s = idle_s
        self._grace_s = grace_s
        self._on_idle = on_idle
        self._nursery = nursery
        self._idled = False
        self._ended = False
        self.paused = False
        """While True, a gap is unbounded: the source is waiting for a person (a tool call
        waiting for approval), not silent. Set by the consumer."""
        self.idle_fired = trio.Event()
        """Set once ``on_idle`` has been started."""
        self._receive: trio.MemoryReceiveChannel[outcome.Outcome[T]] | None = None
        self._pump_scope = trio.CancelScope()
        self._pump_done = trio.Event()
        self._take_ready: Callable[[int], list[T]] | None = None
        if getattr(source, "cancel_safe", False):
            self._pump_done.set()
            self._take_ready = getattr(source, "take_ready", None)
        else:
            send, receive = trio.open_memory_channel[outcome.Outcome[T]](0)
            self._receive = receive
            nursery.start_soon(self._pump, send)

    @property
    def idled(self) -> bool:
        """True once the idle window has expired at least once."""
        return self._idled

    async def _pump(self, send: trio.MemorySendChannel[outcome.Outcome[T]]) -> None:
        try:
            with self._pump_scope, send:
                while True:
                    try:
                        value = await self._source.__anext__()
                    except StopAsyncIteration:
                        return
                    except Exception as exc:  # forwarded to the consumer
                        await send.send(outcome.Error(exc))
                        return
                    await send.send(outcome.Value(value))
        except trio.BrokenResourceError:
            pass  # the consumer has gone
        finally:
            self._pump_done.set()

    async def _stop_pump(self) -> None:
        """Cancel the pump and wait until it no longer touches the source."""
        self._pump_scope.cancel()
        await self._pump_done.wait()

    async def _pull(self) -> T:
        if self._receive is None:
            return await self._source.__anext__()
        try:
            result = await self._receive.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None
        return result.unwrap()

    async def _fire(self) -> None:
        try:
            result = self._on_idle()
            if result is not None:
                await result
        except Exception:
            _log.warning("on_idle raised; ignored", exc_info=True)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        if self._ended:
            raise StopAsyncIteration
        if self._take_ready is not None:
            ready = self._take_ready(1)
            if ready:
                await trio.lowlevel.checkpoint()
                return ready[0]
        return await self._wait_one()

    async def next_batch(self, max_items: int = 256) -> list[T]:
        """Every item the source has ready (at most ``max_items``; at least one, waiting under
        the idle window if none is ready). Raises :class:`StopAsyncIteration` at the end.

        Items already buffered in a cancel-safe source that offers ``take_ready`` are taken
        without a timeout scope: a busy stream costs no timer at all."""
        if self._ended:
            raise StopAsyncIteration
        take = self._take_ready
        if take is not None:
            ready = take(max_items)
            if ready:
                await trio.lowlevel.checkpoint()
                return ready
        first = await self._wait_one()
        if take is None or max_items <= 1:
            return [first]
        return [first, *take(max_items - 1)]

    def take_ready(self, max_items: int = 256) -> list[T]:
        """What the source already holds (at most ``max_items``), without waiting: ``[]`` when
        it holds nothing, has ended, or cannot say (a source without ``take_ready``)."""
        if self._ended or self._take_ready is None:
            return []
        return self._take_ready(max_items)

    async def _wait_one(self) -> T:
        while True:
            window = self._grace_s if self._idled else self._idle_s
            if self.paused and not self._idled:
                window = math.inf
            with trio.move_on_after(window):
                try:
                    return await self._pull()
                except StopAsyncIteration:
                    self._ended = True
                    raise
            if self._idled:
                self._ended = True
                raise StopAsyncIteration
            self._idled = True
            self.idle_fired.set()
            self._nursery.start_soon(self._fire)


@asynccontextmanager
async def with_idle_timeout(
    source: AsyncIterator[T],
    *,
    on_idle: OnIdle,
    idle_s: float = DEFAULT_RUN_SILENT_TIMEOUT_S,
    grace_s: float = IDLE_ABORT_GRACE_S,
) -> AsyncGenerator[IdleGuard[T]]:
    """Guard ``source`` against silence (see the module docstring)."""
    if idle_s <= 0 or grace_s <= 0:
        raise ValueError("idle_s and grace_s must be positive")
    async with trio.open_nursery() as nursery:
        guard = IdleGuard(source, idle_s=idle_s, grace_s=grace_s, on_idle=on_idle, nursery=nursery)
        try:
            yield guard
        finally:
            with trio.CancelScope(shield=True):
                await guard._stop_pump()  # pyright: ignore[reportPrivateUsage]
                await _close_quietly(source)
            # only a still-running on_idle gets the grace window
            nursery.cancel_scope.deadline = min(
                nursery.cancel_scope.deadline, trio.current_time() + grace_s
            )


async def _close_quietly(source: Any) -> None:
    aclose = getattr(source, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except Exception:
        _log.debug("source aclose raised; ignored", exc_info=True)
