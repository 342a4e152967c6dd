"""The board feed: logged events fanned out to many subscribers, as JSON Lines or Server-Sent
Events, where a reconnecting client resumes from ``Last-Event-ID`` without loss or duplicates.

Order of delivery: :class:`RecordingSink` writes a batch to the :class:`~.eventlog.EventLog`
first, then publishes it to the :class:`Feed`, then to any extra sinks (the CLI renderer).

Backpressure: every subscriber has its own bounded buffer. A full buffer makes the publisher
wait, but only for ``slow_timeout_s``: because every event is already durable in the log, a
subscriber that stays ``max_buffer`` events behind longer than that is *disconnected* instead of
stalling the pipeline; an SSE client then reconnects with ``Last-Event-ID`` and the log replays
what it missed. Nothing is lost and one slow board cannot hold up the runs (the text
delta coalescing of DESIGN §4 happens upstream, between adapter and actor).

Resume without a gap or a duplicate: the SSE endpoint subscribes to the live feed *before* it
replays the log from the client's last id, then skips live items it already replayed (ids are the
log's increasing ``gid``).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Self, TextIO

import attrs
import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .actor import EventSink
from .errors import ConfigError
from .eventlog import EventLog, LoggedEvent
from .events import RuntimeEvent, event_to_json

__all__ = ["Feed", "FeedSubscription", "RecordingSink", "feed_app", "serve_feed", "write_jsonl"]

_log = logging.getLogger(__name__)


class FeedSubscription:
    """One subscriber's view of the feed: an async iterator of :class:`LoggedEvent`."""

    def __init__(self, feed: Feed, run_key: str | None) -> None:
        self._feed = feed
        self.run_key = run_key
        self._buffer: deque[LoggedEvent] = deque()
        self._data = trio.lowlevel.ParkingLot()
        self._space = trio.lowlevel.ParkingLot()
        self.closed = False
        self.disconnected = False
        """True when the feed dropped this subscriber for lagging (it should resume from the log)."""

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> LoggedEvent:
        while not self._buffer:
            if self.closed:
                raise StopAsyncIteration
            await self._data.park()
        item = self._buffer.popleft()
        if self._space:
            self._space.unpark_all()
        return item

    def _close(self) -> None:
        self.closed = True
        self._data.unpark_all()
        self._space.unpark_all()

    async def aclose(self) -> None:
        self._feed._unsubscribe(self)  # pyright: ignore[reportPrivateUsage]
        self._close()
        await trio.lowlevel.checkpoint()

    async def _offer(self, item: LoggedEvent) -> None:
        if self.closed or (self.run_key is not None and item.run_key != self.run_key):
            return
        feed = self._feed
        if len(self._buffer) >= feed.max_buffer:
            with trio.move_on_after(feed.slow_timeout_s):
                while len(self._buffer) >= feed.max_buffer and not self.closed:
                    await self._space.park()
            if len(self._buffer) >= feed.max_buffer:
                self._drop()
                return
        self._buffer.append(item)
        if self._data:
            self._data.unpark_all()

    def _drop(self) -> None:
        _log.info("feed subscriber lagged by %d events; disconnected", len(self._buffer))
        self.disconnected = True
        self._feed._unsubscribe(self)  # pyright: ignore[reportPrivateUsage]
        self._close()


@attrs.define(eq=False)
class Feed:
    """Fan-out of logged events to subscribers (see the module docstring)."""

    max_buffer: int = 1000
    slow_timeout_s: float = 5.0
    """How long a full subscriber may hold up the feed before it is disconnected."""
    _subscribers: list[FeedSubscription] = attrs.field(init=False, factory=list[FeedSubscription])

    def subscribe(self, run_key: str | None = None) -> FeedSubscription:
        """A live subscription (every run, or one run) from now on."""
        sub = FeedSubscription(self, run_key)
        self._subscribers.append(sub)
        return sub

    def _unsubscribe(self, sub: FeedSubscription) -> None:
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    async def publish(self, items: Sequence[LoggedEvent]) -> None:
        for item in items:
            for sub in tuple(self._subscribers):
                await sub._offer(item)  # pyright: ignore[reportPrivateUsage]
        await trio.lowlevel.checkpoint()


@attrs.define(eq=False)
class RecordingSink:
    """The actor's sink: event log first, then the feed, then the extra sinks (renderers)."""

    log: EventLog
    feed: Feed | None = None
    extra: Sequence[EventSink] = ()

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        gids = await self.log.append(run_key, events)
        if self.feed is not None:
            await self.feed.publish(
                [LoggedEvent(g, run_key, e) for g, e in zip(gids, events, strict=True)]
            )
        for sink in self.extra:
            await sink.deliver(run_key, events)


def write_jsonl(events: Sequence[RuntimeEvent], out: TextIO) -> None:
    """Write events as JSON Lines (wire names), one per line."""
    out.writelines(event_to_json(e) + "\n" for e in events)
    out.flush()


def _sse(item: LoggedEvent) -> bytes:
    data = json.dumps(
        {"runKey": item.run_key, "event": json.loads(event_to_json(item.event))},
        separators=(",", ":"),
    )
    return f"id: {item.gid}\nevent: {item.event.kind}\ndata: {data}\n\n".encode()


class _SSEStream:
    """Replays the log after the client's last id, then follows the live subscription.

    A class, not an async generator: the server may stop iterating at any point (the client
    went away) and a half-consumed async generator would be left to the garbage collector.
    """

    def __init__(
        self, log: EventLog, sub: FeedSubscription, cursor: int, run_key: str | None
    ) -> None:
        self._log = log
        self._sub = sub
        self._cursor = cursor
        self._run_key = run_key
        self._pending: deque[LoggedEvent] = deque()
        self._replaying = True

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        while self._replaying:
            if not self._pending:
                batch = await self._log.read_since(self._cursor)
                if not batch:
                    self._replaying = False
                    break
                self._pending.extend(batch)
            item = self._pending.popleft()
            self._cursor = item.gid
            if self._run_key is None or item.run_key == self._run_key:
                return _sse(item)
        while True:
            item = await self._sub.__anext__()
            if item.gid > self._cursor:
                self._cursor = item.gid
                return _sse(item)


class _ClosingStreamingResponse(StreamingResponse):
    """A streaming response that releases the feed subscription however the stream ends."""

    def __init__(
        self, content: _SSEStream, *, on_close: Callable[[], Awaitable[None]], **kwargs: Any
    ) -> None:
        super().__init__(content, **kwargs)
        self._on_close = on_close

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with trio.CancelScope(shield=True):
                await self._on_close()


def feed_app(feed: Feed, log: EventLog, *, token: str | None = None) -> Starlette:
    """A Starlette app: ``GET /events`` (SSE, resumable), ``GET /runs``, ``GET /runs/{key}``."""

    def authorized(request: Request) -> bool:
        if token is None:
            return True
        header = request.headers.get("authorization", "")
        offered = (
            header[7:]
            if header.lower().startswith("bearer ")
            else request.query_params.get("token", "")
        )
        return hmac.compare_digest(offered.encode(), token.encode())

    async def events(request: Request) -> Response:
        if not authorized(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        raw = (
            request.headers.get("last-event-id") or request.query_params.get("last_event_id") or "0"
        )
        try:
            last = int(raw)
        except ValueError:
            return JSONResponse({"error": "Last-Event-ID must be an integer"}, status_code=400)
        run_key = request.query_params.get("run")
        # live first, so nothing published during the replay is missed
        sub = feed.subscribe(run_key)
        stream = _SSEStream(log, sub, last, run_key)
        return _ClosingStreamingResponse(
            stream,
            on_close=sub.aclose,
            media_type="text/event-stream",
            headers={"cache-control": "no-cache"},
        )

    async def runs(request: Request) -> Response:
        if not authorized(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        rows = await log.runs()
        return JSONResponse([attrs.asdict(r) for r in rows])

    async def run_events(request: Request) -> Response:
        if not authorized(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        items = await log.read(request.path_params["key"])
        return Response(
            "".join(event_to_json(e) + "\n" for e in items), media_type="application/x-ndjson"
        )

    return Starlette(
        routes=[
            Route("/events", events),
            Route("/runs", runs),
            Route("/runs/{key:path}", run_events),
        ]
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@attrs.frozen
class ServedFeed:
    url: str
    port: int


@asynccontextmanager
async def serve_feed(
    feed: Feed, log: EventLog, *, host: str = "127.0.0.1", port: int = 0, token: str | None = None
) -> AsyncGenerator[ServedFeed]:
    """Serve :func:`feed_app` with Hypercorn's trio worker. Loopback by default; any other
    address requires a token."""
    if not _is_loopback(host) and not token:
        raise ConfigError(f"serving the feed on {host} (not loopback) requires a token")
    from hypercorn.config import Config
    from hypercorn.trio import serve  # pyright: ignore[reportUnknownVariableType]

    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = _log
    config.graceful_timeout = 0.5
    app: Any = feed_app(feed, log, token=token)

    async def run(*, task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
        await serve(app, config, task_status=task_status)

    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(run)
        bound = int(binds[0].rsplit(":", 1)[1])
        shown = "127.0.0.1" if host == "localhost" else host
        try:
            yield ServedFeed(url=f"http://{shown}:{bound}", port=bound)
        finally:
            nursery.cancel_scope.cancel()
