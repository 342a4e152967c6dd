"""The board feed: logged events fanned out to many subscribers, as JSON Lines or Server-Sent
Events, where a reconnecting client resumes from ``Last-Event-ID`` without loss or duplicates.

**Order.** A :class:`Feed` attached to an :class:`~.eventlog.EventLog` (``log.add_listener(feed)``;
:class:`RecordingSink` does it) is published to by the log's writer *after* each commit, in
commit order: no subscriber sees an event that is not durable, and every subscriber sees the
log's global order (``gid``), even with many runs appending concurrently.

**Backpressure (docs/architecture.md, Choke points: backpressure), per subscriber.** Each subscription has its own bounded queue
(``max_items``). When it is full, a text delta is *coalesced* into the buffered delta before it
(same run, same channel; text concatenated, never lost; the merged item carries the ``gid`` and
``seq`` of the last delta it absorbed and ``first_gid`` of the first); any other kind makes the
publisher — and through the log writer, the producing runs — wait. How long is the subscriber's
``slow`` policy:

* ``"disconnect"`` (the default): wait at most ``slow_timeout_s`` (default 5 s), then drop the
  subscriber: it can still drain what it has buffered (a contiguous prefix), then its iteration
  ends with ``disconnected = True`` and it resumes from the log after the last ``gid`` it saw.
  Every event is already durable, so dropping a laggard loses nothing and one stuck subscriber
  stalls the runs for at most ``slow_timeout_s``, once.
* ``"block"``: wait as long as it takes (full backpressure; for an in-process consumer that
  must throttle the runs, e.g. a recorder that must see every event in band).

The publisher offers to subscribers one after the other, so a blocked subscriber holds up the
others too; with ``"disconnect"`` that is bounded by ``slow_timeout_s``.

**SSE event names.** Each message's ``event:`` is the event's kind, except a run's ``error``
events, named ``run-error`` (``event: error`` would reach an ``EventSource``'s connection-error
listeners); the ``data:`` keeps the event as it is, ``"kind": "error"`` included.

**SSE ids and resume.** Each SSE message's ``id:`` is the event's global log id (``gid``), one
cursor for a board that follows every run (``?run=<run key>`` filters to one run; the ids stay
global). A client reconnecting with ``Last-Event-ID: <gid>`` gets exactly the events after it:

1. the endpoint subscribes to the live feed *first*,
2. replays the log after the cursor, page by page, until a page comes back empty,
3. then follows the live subscription, skipping items with ``gid <= cursor`` (already replayed).

Nothing is lost — an event committed after the last (empty) read is published after it, hence
after the subscription existed — and nothing is duplicated — ids only ever increase. The SSE
subscription uses ``slow="disconnect"`` with a zero timeout: a board that falls behind never
holds up the runs; when its subscription is dropped, or a coalesced delta straddles the cursor,
the stream re-subscribes and goes back to step 2, so the log is the slow board's buffer.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import json
import logging
import secrets
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Literal, Protocol, Self, TypeAlias

import attrs
import trio
from pydantic.alias_generators import to_camel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from orchestrator.core.errors import ConfigError
from orchestrator.core.events import RuntimeEvent, TextDelta, event_to_json
from orchestrator.core.listen import serve_asgi
from orchestrator.engine.actor import EventSink
from orchestrator.engine.eventlog import EventLog, LoggedEvent, RunRow

__all__ = [
    "Feed",
    "FeedAuth",
    "FeedSubscription",
    "RecordingSink",
    "ServedFeed",
    "SlowPolicy",
    "check_bind",
    "feed_app",
    "feed_routes",
    "jsonl_line",
    "new_token",
    "refused",
    "run_json",
    "serve_feed",
    "write_jsonl",
]

_log = logging.getLogger(__name__)

SlowPolicy: TypeAlias = Literal["block", "disconnect"]


class FeedSubscription:
    """One subscriber: an async iterator of :class:`~.eventlog.LoggedEvent` (see the module
    docstring for its queue policy). ``async with`` or :meth:`aclose` releases it."""

    def __init__(
        self,
        feed: Feed,
        run_key: str | None,
        *,
        max_items: int,
        slow: SlowPolicy,
        slow_timeout_s: float,
    ) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self._feed = feed
        self.run_key = run_key
        self.max_items = max_items
        self.slow: SlowPolicy = slow
        self.slow_timeout_s = slow_timeout_s
        self._buffer: deque[LoggedEvent] = deque()
        self._merging: list[str] | None = None
        self._merge_last: LoggedEvent | None = None
        self._merged_extra = 0
        self._data = trio.lowlevel.ParkingLot()
        self._space = trio.lowlevel.ParkingLot()
        self.closed = False
        """No more items will arrive (released, dropped, or the feed closed)."""
        self.disconnected = False
        """The feed dropped this subscriber for lagging; resume from the log after the last gid."""
        self.coalesced = 0
        """How many text deltas were merged into an earlier one because this subscriber lagged."""

    def __len__(self) -> int:
        return len(self._buffer)

    # -- consumer side ---------------------------------------------------------------------------

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> LoggedEvent:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    async def receive(self) -> LoggedEvent:
        """The next item; :class:`trio.EndOfChannel` once closed and drained. A cancelled
        receive consumes nothing."""
        while not self._buffer:
            if self.closed:
                raise trio.EndOfChannel
            await self._data.park()
        await trio.lowlevel.checkpoint_if_cancelled()
        if len(self._buffer) == 1:
            self._seal()
        item = self._buffer.popleft()
        if self._space:
            self._space.unpark_all()
        return item

    async def receive_batch(self, max_items: int = 512) -> list[LoggedEvent]:
        """Up to ``max_items`` buffered items at once (at least one)."""
        while not self._buffer:
            if self.closed:
                raise trio.EndOfChannel
            await self._data.park()
        buf = self._buffer
        if len(buf) <= max_items:
            self._seal()
            batch = list(buf)
            buf.clear()
        else:
            batch = [buf.popleft() for _ in range(max_items)]
        if self._space:
            self._space.unpark_all()
        return batch

    async def aclose(self) -> None:
        """Leave the feed; buffered items are dropped. Idempotent."""
        self._feed._unsubscribe(self)  # pyright: ignore[reportPrivateUsage]
        self._buffer.clear()
        self._merging = self._merge_last = None
        self._close()
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

    # -- publisher side --------------------------------------------------------------------------

    def _close(self) -> None:
        self.closed = True
        self._data.unpark_all()
        self._space.unpark_all()

    def _seal(self) -> None:
        """Materialize the coalesced delta at the tail (one join, not n copies)."""
        parts, last = self._merging, self._merge_last
        if parts is None or last is None:
            return
        self._merging = self._merge_last = None
        head = self._buffer[-1]
        event = head.event.model_copy(
            update={"text": "".join(parts), "seq": last.seq, "ts": last.event.ts}
        )
        self._buffer[-1] = LoggedEvent(
            last.gid,
            head.run_key,
            event,
            first_gid=head.first_gid,
            merged=head.merged + self._merged_extra,
        )

    def _try_put(self, item: LoggedEvent) -> bool:
        buf = self._buffer
        if len(buf) < self.max_items:
            if self._merging is not None:
                self._seal()
            buf.append(item)
            return True
        if item.kind == "text-delta" and buf:
            tail = buf[-1]
            if tail.kind == "text-delta" and tail.run_key == item.run_key:
                tail_event, event = tail.event, item.event
                assert isinstance(tail_event, TextDelta) and isinstance(event, TextDelta)
                if tail_event.channel == event.channel:
                    if self._merging is None:
                        self._merging = [tail_event.text]
                        self._merged_extra = 0
                    self._merging.append(event.text)
                    self._merge_last = item
                    self._merged_extra += 1
                    self.coalesced += 1
                    return True
        return False

    async def _offer(self, items: Sequence[LoggedEvent]) -> None:
        """Queue ``items`` (already filtered to this subscriber) with the slow policy."""
        buf = self._buffer
        if not self.closed and self._merging is None and len(buf) + len(items) <= self.max_items:
            buf.extend(items)  # room for all: what one _try_put per item does, in one call
            if self._data:
                self._data.unpark_all()
            return
        try:
            for item in items:
                if self.closed:
                    return
                if self._try_put(item):
                    continue
                if self._data:
                    self._data.unpark_all()  # let the consumer see what is queued while we wait
                if self.slow == "block":
                    while not self.closed and not self._try_put(item):
                        await self._space.park()
                else:
                    with trio.move_on_after(self.slow_timeout_s):
                        while not self.closed and not self._try_put(item):
                            await self._space.park()
                        continue  # queued (or we were closed meanwhile): next item
                    # still full after slow_timeout_s
                    if not self.closed:
                        self._drop()
                    return
        finally:
            if self._buffer and self._data:
                self._data.unpark_all()

    def _drop(self) -> None:
        _log.info(
            "feed subscriber %s lagged by %d events; disconnected", self.run_key, len(self._buffer)
        )
        self.disconnected = True
        self._feed._unsubscribe(self)  # pyright: ignore[reportPrivateUsage]
        self._close()


@attrs.define(eq=False)
class Feed:
    """Fan-out of logged events to subscribers (see the module docstring).

    The attributes are the defaults of :meth:`subscribe`."""

    max_buffer: int = 1000
    slow_timeout_s: float = 5.0
    """How long a full ``"disconnect"`` subscriber may hold up the feed before it is dropped."""
    slow: SlowPolicy = "disconnect"
    _subscribers: list[FeedSubscription] = attrs.field(init=False, factory=list[FeedSubscription])
    published: int = attrs.field(init=False, default=0)
    closed: bool = attrs.field(init=False, default=False)

    def subscribe(
        self,
        run_key: str | None = None,
        *,
        max_items: int | None = None,
        slow: SlowPolicy | None = None,
        slow_timeout_s: float | None = None,
    ) -> FeedSubscription:
        """A live subscription (every run, or one run) from now on."""
        sub = FeedSubscription(
            self,
            run_key,
            max_items=self.max_buffer if max_items is None else max_items,
            slow=self.slow if slow is None else slow,
            slow_timeout_s=self.slow_timeout_s if slow_timeout_s is None else slow_timeout_s,
        )
        if self.closed:
            sub._close()  # pyright: ignore[reportPrivateUsage]
        else:
            self._subscribers.append(sub)
        return sub

    def _unsubscribe(self, sub: FeedSubscription) -> None:
        self._subscribers = [s for s in self._subscribers if s is not sub]

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def attach(self, log: EventLog) -> None:
        """Publish every commit of ``log`` (in commit order). Idempotent."""
        log.add_listener(self)

    async def publish(self, items: Sequence[LoggedEvent]) -> None:
        """Offer ``items`` (in ``gid`` order) to every subscriber; waits per the slow policies."""
        self.published += len(items)
        for sub in tuple(self._subscribers):
            key = sub.run_key
            mine = items if key is None else [i for i in items if i.run_key == key]
            if mine:
                await sub._offer(mine)  # pyright: ignore[reportPrivateUsage]
        await trio.lowlevel.checkpoint()

    def close(self) -> None:
        """End every subscription (each drains what it has buffered, then ends); later
        subscriptions end at once."""
        self.closed = True
        for sub in self._subscribers:
            sub._close()  # pyright: ignore[reportPrivateUsage]
        self._subscribers = []


@attrs.define(eq=False)
class RecordingSink:
    """The actor's sink: the event log first (which publishes to ``feed`` after the commit),
    then the extra sinks (renderers)."""

    log: EventLog
    feed: Feed | None = None
    extra: Sequence[EventSink] = ()

    def __attrs_post_init__(self) -> None:
        if self.feed is not None:
            self.feed.attach(self.log)

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        await self.log.append(run_key, events)
        for sink in self.extra:
            await sink.deliver(run_key, events)


# -- JSON Lines ------------------------------------------------------------------------------------


def jsonl_line(item: RuntimeEvent | LoggedEvent) -> str:
    """One JSON Lines line (with its newline): an event's wire JSON, or for a logged event the
    envelope ``{"id": gid, "runKey": …, "event": {…}}`` (the SSE ``data`` plus the id)."""
    if isinstance(item, LoggedEvent):
        return f'{{"id":{item.gid},"runKey":{json.dumps(item.run_key)},"event":{item.body}}}\n'
    return event_to_json(item) + "\n"


class AsyncTextWriter(Protocol):
    """What ``trio.wrap_file(open(..., "w"))`` gives: an awaitable ``write``."""

    async def write(self, data: str, /) -> object: ...


async def write_jsonl(
    source: FeedSubscription
    | AsyncIterable[RuntimeEvent]
    | AsyncIterable[LoggedEvent]
    | Iterable[RuntimeEvent | LoggedEvent],
    out: trio.abc.SendStream | AsyncTextWriter,
) -> int:
    """Write ``source`` as JSON Lines to ``out`` until the source ends; returns the line count.

    ``out`` is a byte stream (``trio.abc.SendStream``) or an async text file
    (``trio.wrap_file``). A :class:`FeedSubscription` is drained in batches (one write per
    batch)."""

    async def emit(lines: list[str]) -> None:
        text = "".join(lines)
        if isinstance(out, trio.abc.SendStream):
            await out.send_all(text.encode())
        else:
            await out.write(text)

    count = 0
    if isinstance(source, FeedSubscription):
        while True:
            try:
                batch = await source.receive_batch()
            except trio.EndOfChannel:
                return count
            await emit([jsonl_line(i) for i in batch])
            count += len(batch)
    if isinstance(source, AsyncIterable):
        async for item in source:
            await emit([jsonl_line(item)])
            count += 1
        return count
    lines = [jsonl_line(i) for i in source]
    if lines:
        await emit(lines)
    return len(lines)


# -- Server-Sent Events ----------------------------------------------------------------------------


SSE_ERROR_EVENT = "run-error"
"""The SSE event name of a run's ``error`` events: ``EventSource`` dispatches an ``event: error``
message to its ``error`` listeners, the ones that mean "the connection broke", so a board would
show "reconnecting" after every failed run. Every other kind is its own event name."""


def _sse(item: LoggedEvent) -> str:
    name = SSE_ERROR_EVENT if item.kind == "error" else item.kind
    return (
        f"id: {item.gid}\nevent: {name}\n"
        f'data: {{"runKey":{json.dumps(item.run_key)},"event":{item.body}}}\n\n'
    )


class _SSEStream:
    """Replays the log after the client's cursor, then follows a live subscription (see the
    module docstring). A class, not an async generator: the server may stop iterating at any
    point (the client went away) and a half-consumed async generator would be left to the GC."""

    def __init__(
        self,
        feed: Feed,
        log: EventLog,
        cursor: int,
        run_key: str | None,
        *,
        page: int,
        keepalive_s: float,
    ) -> None:
        self._feed = feed
        self._log = log
        self._cursor = cursor
        self._run_key = run_key
        self._page = page
        self._keepalive_s = keepalive_s
        self._sub = self._subscribe()
        self._replaying = True
        self._hello = True
        self.resyncs = 0

    def _subscribe(self) -> FeedSubscription:
        return self._feed.subscribe(self._run_key, slow="disconnect", slow_timeout_s=0)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        if self._hello:
            self._hello = False
            return b"retry: 1000\n\n"
        while True:
            if self._replaying:
                batch = await self._log.read_since(
                    self._cursor, limit=self._page, run_key=self._run_key
                )
                if batch:
                    self._cursor = batch[-1].gid
                    text = await self._encode(batch)
                    if text:
                        return text.encode()
                    continue
                self._replaying = False
            with trio.move_on_after(self._keepalive_s):
                try:
                    batch = await self._sub.receive_batch()
                except trio.EndOfChannel:
                    if not self._sub.disconnected:
                        raise StopAsyncIteration from None  # the feed closed
                    # dropped for lagging: resume from the log
                    self._resync()
                    continue
                out: list[LoggedEvent] = []
                for item in batch:
                    if item.gid <= self._cursor:
                        continue  # already replayed
                    if item.first_gid <= self._cursor:
                        # a coalesced delta straddling the cursor: take the rest from the log
                        self._resync()
                        break
                    self._cursor = item.gid
                    out.append(item)
                text = await self._encode(out) if out else ""
                if text:
                    return text.encode()
                continue
            return b": keepalive\n\n"

    async def _encode(self, batch: Sequence[LoggedEvent]) -> str:
        return "".join(_sse(i) for i in batch)

    def _resync(self) -> None:
        self.resyncs += 1
        self._feed._unsubscribe(self._sub)  # pyright: ignore[reportPrivateUsage]
        self._sub = self._subscribe()
        self._replaying = True

    async def aclose(self) -> None:
        await self._sub.aclose()


class _AguiStream(_SSEStream):
    """The same stream (replay, then live; resumable by ``Last-Event-ID``) as AG-UI events
    (:mod:`.agui`): a run first met in its middle is primed with its earlier events."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # imported on the first AG-UI request: the protocol's models take ~0.2 s to import
        from orchestrator.engine.agui import AguiTranslator

        super().__init__(*args, **kwargs)
        self._translator = AguiTranslator()

    async def _encode(self, batch: Sequence[LoggedEvent]) -> str:
        from orchestrator.engine.agui import sse_message

        out: list[str] = []
        for item in batch:
            if not self._translator.knows(item.run_key) and item.first_gid > 0 and item.seq > 1:
                self._translator.prime(await self._earlier(item))
            out.append(sse_message(self._translator.translate(item), item.gid))
        return "".join(out)

    async def _earlier(self, item: LoggedEvent) -> list[LoggedEvent]:
        found: list[LoggedEvent] = []
        cursor = 0
        while True:
            page = await self._log.read_since(cursor, limit=self._page, run_key=item.run_key)
            page = [i for i in page if i.gid < item.first_gid]
            if not page:
                return found
            found += page
            cursor = page[-1].gid


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


def new_token() -> str:
    """A fresh random access token (what ``serve`` uses when none is configured)."""
    return secrets.token_urlsafe(32)


@attrs.frozen
class FeedAuth:
    """Who may read the feed (and, on the board, act): whoever holds ``token``, on loopback
    too — another local user can reach a loopback port, so the address is no boundary (the
    Jupyter model: a random token printed once at start unless one is configured).

    A request sends ``Authorization: Bearer <token>``, compared in constant time. ``GET
    /events`` alone may pass it as ``?token=`` instead: ``EventSource`` cannot set headers, and
    a query parameter (unlike a cookie) is never attached by the browser to another site's
    request, so no CSRF; the access log is off, so the query string is not logged."""

    token: str

    def __attrs_post_init__(self) -> None:
        if not self.token:
            raise ConfigError("the feed token must not be empty")

    def bearer(self, request: Request) -> str:
        header = request.headers.get("authorization", "")
        return header[7:] if header[:7].lower() == "bearer " else ""

    def reads(self, request: Request, *, query: bool = False) -> bool:
        """Whether ``request`` carries the token (in the header; with ``query``, or ``?token=``)."""
        offered = self.bearer(request)
        if not offered and query:
            offered = request.query_params.get("token", "")
        return hmac.compare_digest(offered.encode(), self.token.encode())


def refused() -> Response:
    return JSONResponse({"error": "unauthorized"}, status_code=401)


def feed_routes(
    feed: Feed,
    log: EventLog,
    auth: FeedAuth,
    *,
    page: int = 1000,
    keepalive_s: float = 15.0,
) -> list[Route]:
    """The feed's routes (see :func:`feed_app`), for an app that serves more (the board)."""
    authorized = auth.reads

    async def events(request: Request, kind: type[_SSEStream] = _SSEStream) -> Response:
        if not auth.reads(request, query=True):  # EventSource cannot set a header
            return refused()
        raw = (
            request.headers.get("last-event-id") or request.query_params.get("last_event_id") or "0"
        )
        last = _event_id(raw)
        if last is None:
            return JSONResponse(
                {"error": f"Last-Event-ID must be an integer from 0 to {_MAX_EVENT_ID}"},
                status_code=400,
            )
        stream = kind(
            feed,
            log,
            last,
            request.query_params.get("run"),
            page=page,
            keepalive_s=keepalive_s,
        )
        return _ClosingStreamingResponse(
            stream,
            on_close=stream.aclose,
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def agui(request: Request) -> Response:
        """``GET /agui``: the same stream as ``/events``, as AG-UI events (:mod:`.agui`)."""
        return await events(request, _AguiStream)

    async def runs(request: Request) -> Response:
        if not authorized(request):
            return refused()
        rows = await log.runs()
        return JSONResponse([run_json(r) for r in rows])

    async def run_events(request: Request) -> Response:
        if not authorized(request):
            return refused()
        items = await log.read(request.path_params["key"])
        if not items and not any(r.run_key == request.path_params["key"] for r in await log.runs()):
            return JSONResponse({"error": "no such run"}, status_code=404)
        return Response(
            "".join(event_to_json(e) + "\n" for e in items), media_type="application/x-ndjson"
        )

    return [
        Route("/events", events),
        Route("/agui", agui),
        Route("/runs", runs),
        Route("/runs/{key:path}", run_events),
    ]


def feed_app(
    feed: Feed,
    log: EventLog,
    *,
    token: str,
    page: int = 1000,
    keepalive_s: float = 15.0,
) -> Starlette:
    """A Starlette app: ``GET /events`` (SSE, resumable by ``Last-Event-ID``; ``?run=`` filters
    to one run), ``GET /runs`` (JSON), ``GET /runs/{key}`` (JSON Lines of one run).

    Every request needs ``Authorization: Bearer <token>`` (``/events`` also takes ``?token=``;
    see :class:`FeedAuth`)."""
    return Starlette(
        routes=feed_routes(feed, log, FeedAuth(token), page=page, keepalive_s=keepalive_s)
    )


_MAX_EVENT_ID = 2**63 - 1
"""The largest global id the log can hold (SQLite's INTEGER is signed 64-bit)."""


def _event_id(raw: str) -> int | None:
    """A ``Last-Event-ID`` as an int in ``[0, 2**63)``; ``None`` for anything else (so the
    answer is a 400, never a stream that dies on an out-of-range cursor)."""
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19:
        return None
    value = int(raw)
    return value if value <= _MAX_EVENT_ID else None


def run_json(row: RunRow) -> dict[str, Any]:
    """A run row with the wire's camelCase names (``runKey``, ``startedMs``, …)."""
    return {to_camel(k): v for k, v in attrs.asdict(row).items()}


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ServedFeed(str):
    """The served feed's base URL (a ``str``, e.g. ``http://127.0.0.1:8123``), with ``.url``,
    ``.port`` and ``.token`` (what clients send)."""

    port: int
    token: str

    def __new__(cls, url: str, port: int, token: str = "") -> ServedFeed:
        self = super().__new__(cls, url)
        self.port = port
        self.token = token
        return self

    @property
    def url(self) -> str:
        return str.__str__(self)


def check_bind(host: str, token: str | None) -> None:
    """Refuse serving on ``host`` with the configured ``token``: off loopback a token must be
    configured (a generated one would be printed to whoever started it, but nobody else could
    have chosen it); an empty one never does (:class:`ConfigError`)."""
    if not _is_loopback(host) and not token:
        raise ConfigError(f"serving the feed on {host!r} (not loopback) requires a token")
    if token is not None and not token:
        raise ConfigError("the feed token must not be empty")


@asynccontextmanager
async def serve_feed(
    feed: Feed,
    log: EventLog,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    keepalive_s: float = 15.0,
    app: Starlette | None = None,
) -> AsyncGenerator[ServedFeed]:
    """Serve :func:`feed_app` (or ``app``, e.g. the board, built with the same ``token``) with
    Hypercorn's trio worker; yields the base URL (an ephemeral port by default) with the token
    clients send (``token``, else a random one: loopback is no trust boundary). Loopback by
    default; any other address requires a configured token
    (:class:`~orchestrator.core.errors.ConfigError` otherwise)."""
    check_bind(host, token)
    if app is not None and token is None:
        raise ConfigError("serving an app needs the token it was built with")
    token = token or new_token()
    served_app: Any = app or feed_app(feed, log, token=token, keepalive_s=keepalive_s)
    served_token = token
    bare = host.strip("[]")
    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(
            functools.partial(serve_asgi, served_app, host, port, errorlog=_log)
        )
        bound = int(binds[0].rsplit(":", 1)[1])
        shown = "127.0.0.1" if bare == "localhost" else (f"[{bare}]" if ":" in bare else bare)
        try:
            yield ServedFeed(f"http://{shown}:{bound}", bound, served_token)
        finally:
            nursery.cancel_scope.cancel()
