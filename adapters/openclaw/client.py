"""A client for the OpenClaw Gateway WebSocket (protocol 4), on httpx2's WebSocket support.

httpx2 ships WebSockets (``httpx2.websockets``, the httpx-ws code on wsproto) behind its ``ws``
extra; it runs on AnyIO, so it works under trio as it is, and it is the project's HTTP stack —
no second networking library is needed.

One :class:`GatewayClient` holds one connection and serves every run of an adapter:

* **Handshake** — the gateway sends ``connect.challenge``; we answer ``connect`` with the token,
  ``role:"operator"`` and ``caps:["tool-events"]`` (without it no tool events are sent) as the
  trusted local backend (``client.id:"gateway-client"``, ``mode:"backend"``); ``hello-ok``
  completes it. ``UNAVAILABLE`` with ``retryable`` (``startup-sidecars``) and a refused connection
  while the gateway starts are retried; a wrong token is permanent
  (:class:`~orchestrator.core.errors.RuntimeStartError`).
* **Requests** are correlated by id (:meth:`GatewayClient.request`). The ``agent`` method answers
  twice under one id: :meth:`GatewayClient.start_agent` returns the first answer
  (``accepted``) and delivers the second (the run's final result) to the run's subscription, in
  order with the run's events.
* **Events** are routed by ``payload.runId`` to the subscription of that run, else by
  ``payload.sessionKey`` (:meth:`GatewayClient.subscribe`); an ``exec.approval.*`` event by the
  run id and session key of its ``request``. Frames for nobody are dropped.
* **Reconnect** — when the connection drops, every pending request fails with
  :class:`~orchestrator.core.errors.RuntimeExitedError`, every subscription gets a
  :class:`Disconnected` marker, and the client reconnects with exponential backoff; after
  ``hello-ok`` every subscription gets :class:`Reconnected`.
"""

from __future__ import annotations

import math
import platform
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any, Final, Literal, TypeAlias

import attrs
import httpx2
import trio
from httpx2.websockets import HTTPXWSException
from httpx2.websockets._api import AsyncWebSocketSession, aconnect_ws

from orchestrator.core.errors import (
    AdapterError,
    ProtocolError,
    RuntimeExitedError,
    RuntimeReportedError,
    RuntimeStartError,
    exception_leaves,
    redact_secrets,
    single_exception,
)

from .dialect import (
    PROTOCOL_VERSION,
    AgentFrame,
    EventFrame,
    Frame,
    GatewayError,
    ResFrame,
    as_dict,
    as_str,
    decode_frame,
    encode_request,
)

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "Disconnected",
    "GatewayClient",
    "Reconnected",
    "RouteItem",
    "Subscription",
    "open_gateway_client",
]

DEFAULT_MAX_MESSAGE_BYTES: Final = 32 * 1024 * 1024
"""Largest frame accepted (the gateway's own ``policy.maxPayload`` is 25 MiB; ``hello-ok``
alone is tens of KiB)."""

_CLIENT_VERSION: Final = "0.1.0"
_SCOPES: Final = ("operator.read", "operator.write", "operator.admin")
_ADAPTER: Final = "openclaw"


@attrs.frozen
class Disconnected:
    """The connection dropped (pending answers are lost; the client is reconnecting)."""

    reason: str


@attrs.frozen
class Reconnected:
    """The connection is back (``boot_id`` tells whether the gateway restarted meanwhile)."""

    boot_id: str | None


RouteItem: TypeAlias = Frame | Disconnected | Reconnected


@attrs.define(eq=False)
class Subscription:
    """The frames of one run (by run id) or one session (by session key)."""

    client: GatewayClient
    run_id: str | None
    session_key: str | None
    send: trio.MemorySendChannel[RouteItem]
    receive: trio.MemoryReceiveChannel[RouteItem]

    def bind_run(self, run_id: str) -> None:
        """Also route frames of ``run_id`` here."""
        self.client._bind_run(self, run_id)  # pyright: ignore[reportPrivateUsage]

    def close(self) -> None:
        """Stop routing to this subscription (idempotent)."""
        self.client._unsubscribe(self)  # pyright: ignore[reportPrivateUsage]


@attrs.define(eq=False)
class _Pending:
    done: trio.Event = attrs.field(factory=trio.Event)
    frame: ResFrame | None = None
    error: AdapterError | None = None


class _Permanent(Exception):
    """A handshake failure that retrying cannot fix (wrong token, protocol mismatch)."""


class GatewayClient:
    """One Gateway connection shared by many runs. Create with :func:`open_gateway_client`."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        client_name: str = "ringleader",
        connect_timeout: float = 120.0,
        request_timeout: float = 60.0,
        backoff_initial: float = 0.25,
        backoff_factor: float = 1.7,
        backoff_max: float = 10.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        tap: Callable[[Literal["in", "out"], str], None] | None = None,
        exec_approvals: bool = False,
    ) -> None:
        self.url = url
        self.exec_approvals = exec_approvals
        """Connect as an exec approval client (``caps`` ``exec-approvals``): the gateway sends
        this connection ``exec.approval.requested`` for the commands its exec policy asks about,
        and waits for ``exec.approval.resolve`` (without one such client it denies them at once,
        ``no-approval-route``)."""
        self._token = token
        self.client_name = client_name
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.backoff_initial = backoff_initial
        self.backoff_factor = backoff_factor
        self.backoff_max = backoff_max
        self.max_message_bytes = max_message_bytes
        self.tap = tap
        """Called with every frame sent (``out``, after the handshake) and received (``in``):
        for recording transcripts and debugging."""
        self.hello: dict[str, Any] | None = None
        """The last ``hello-ok`` payload."""
        self.connections = 0
        """How many times a handshake completed (1 + reconnects)."""
        self._ws: AsyncWebSocketSession | None = None
        self._send_lock = trio.Lock()
        self._connected = trio.Event()
        self._closed = False
        self._pending: dict[str, _Pending] = {}
        self._finals: dict[str, Subscription] = {}
        self._by_run: dict[str, Subscription] = {}
        self._by_session: dict[str, list[Subscription]] = {}
        self._subs: set[Subscription] = set()
        self.last_error: str | None = None

    # -- state ---------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._ws is not None and self._connected.is_set()

    @property
    def boot_id(self) -> str | None:
        server = (self.hello or {}).get("server")
        boot = server.get("bootId") if isinstance(server, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return boot if isinstance(boot, str) else None

    @property
    def server_version(self) -> str | None:
        server = (self.hello or {}).get("server")
        version = server.get("version") if isinstance(server, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return version if isinstance(version, str) else None

    async def wait_connected(self, wait_s: float) -> bool:
        """Wait up to ``wait_s`` seconds for a live connection; whether there is one."""
        with trio.move_on_after(wait_s):
            while not self.connected:
                await self._connected.wait()
                if not self.connected:
                    await trio.sleep(0.01)
            return True
        return self.connected

    # -- subscriptions -------------------------------------------------------------------------

    def subscribe(
        self, *, run_id: str | None = None, session_key: str | None = None
    ) -> Subscription:
        """Route the frames of ``run_id`` (and, when they carry no run id, of ``session_key``)
        to a new subscription. Unbounded: a slow run never stalls the connection's other runs."""
        send, receive = trio.open_memory_channel[RouteItem](math.inf)
        sub = Subscription(self, run_id, session_key, send, receive)
        self._subs.add(sub)
        if run_id:
            self._by_run[run_id] = sub
        if session_key:
            self._by_session.setdefault(session_key, []).append(sub)
        return sub

    def _bind_run(self, sub: Subscription, run_id: str) -> None:
        if sub in self._subs:
            sub.run_id = run_id
            self._by_run[run_id] = sub

    def _unsubscribe(self, sub: Subscription) -> None:
        if sub not in self._subs:
            return
        self._subs.discard(sub)
        for table in (self._by_run, self._finals):
            for key in [k for k, v in table.items() if v is sub]:
                del table[key]
        if sub.session_key:
            subs = self._by_session.get(sub.session_key, [])
            if sub in subs:
                subs.remove(sub)
            if not subs:
                self._by_session.pop(sub.session_key, None)
        sub.send.close()

    def _route(self, frame: Frame) -> None:
        sub: Subscription | None = None
        if isinstance(frame, ResFrame):
            sub = self._finals.get(frame.id)
        elif isinstance(frame, AgentFrame | EventFrame):
            run_id, session_key = frame.run_id, frame.session_key
            by_session = not run_id
            if isinstance(frame, EventFrame) and frame.event.startswith("exec.approval."):
                # an approval names its run (and session) inside its request
                request = as_dict(frame.payload.get("request"))
                run_id, session_key = (
                    as_str(request.get("runId")),
                    as_str(request.get("sessionKey")),
                )
                by_session = True
            sub = self._by_run.get(run_id) if run_id else None
            if sub is None and by_session and session_key:
                subs = self._by_session.get(session_key)
                sub = subs[-1] if subs else None
        if sub is not None:
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                sub.send.send_nowait(frame)

    def _broadcast(self, item: Disconnected | Reconnected) -> None:
        for sub in list(self._subs):
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                sub.send.send_nowait(item)

    # -- requests ------------------------------------------------------------------------------

    async def request(
        self, method: str, params: Mapping[str, Any], *, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Send a request; its payload on ``ok``.

        Raises:
            RuntimeReportedError: the gateway answered ``ok:false`` (``code`` = its error code).
            RuntimeExitedError: the connection dropped before the answer.
            trio.TooSlowError: no answer within ``timeout_s`` (default ``request_timeout``).
        """
        frame = await self._call(str(uuid.uuid4()), method, params, timeout_s=timeout_s)
        return frame.payload

    async def start_agent(
        self, params: Mapping[str, Any], sub: Subscription, *, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Send ``agent`` (request id = ``params.idempotencyKey`` = the run id); the first answer
        (``accepted``) is returned, the final one is delivered to ``sub`` after the run's events."""
        run_id = str(params["idempotencyKey"])
        sub.bind_run(run_id)
        self._finals[run_id] = sub
        try:
            frame = await self._call(run_id, "agent", params, timeout_s=timeout_s)
        except BaseException:
            self._finals.pop(run_id, None)
            raise
        return frame.payload

    async def _call(
        self, request_id: str, method: str, params: Mapping[str, Any], *, timeout_s: float | None
    ) -> ResFrame:
        if self._closed:
            raise RuntimeExitedError("gateway client is closed", exit_code=None, adapter=_ADAPTER)
        ws = self._ws
        if ws is None or not self._connected.is_set():
            raise RuntimeExitedError(
                f"gateway not connected ({self.last_error or 'connecting'})",
                exit_code=None,
                adapter=_ADAPTER,
            )
        pending = _Pending()
        self._pending[request_id] = pending
        try:
            with trio.fail_after(self.request_timeout if timeout_s is None else timeout_s):
                try:
                    text = encode_request(request_id, method, dict(params))
                    if self.tap is not None:
                        self.tap("out", text)
                    async with self._send_lock:
                        await ws.send_text(text)
                except (HTTPXWSException, httpx2.TransportError, OSError, Exception) as exc:
                    if isinstance(exc, AdapterError):
                        raise
                    raise RuntimeExitedError(
                        f"gateway connection lost while sending {method}: {type(exc).__name__}",
                        exit_code=None,
                        adapter=_ADAPTER,
                    ) from None
                await pending.done.wait()
        finally:
            self._pending.pop(request_id, None)
        if pending.error is not None:
            raise pending.error
        frame = pending.frame
        assert frame is not None
        if not frame.ok:
            error = frame.error or GatewayError(code="UNKNOWN", message="request failed")
            raise RuntimeReportedError(
                redact_secrets(f"{method}: {error.message}"), code=error.code, adapter=_ADAPTER
            )
        return frame

    # -- connection ----------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect, serve, reconnect with backoff until cancelled. ``started`` after the first
        ``hello-ok``; a permanent failure (or no connection within ``connect_timeout``) before
        that raises :class:`~orchestrator.core.errors.RuntimeStartError`."""
        started = False
        delay = self.backoff_initial
        deadline = trio.current_time() + self.connect_timeout
        while not self._closed:
            try:
                async with aconnect_ws(
                    self.url,
                    max_message_size_bytes=self.max_message_bytes,
                    keepalive_ping_interval_seconds=None,
                ) as ws:
                    await self._handshake(ws)
                    self._ws = ws
                    self._connected.set()
                    self.connections += 1
                    delay = self.backoff_initial
                    if not started:
                        started = True
                        task_status.started()
                    else:
                        self._broadcast(Reconnected(self.boot_id))
                    await self._read(ws)
                self.last_error = "gateway closed the connection"
            except _Permanent as exc:
                self.last_error = str(exc)
                if not started:
                    raise RuntimeStartError(str(exc), adapter=_ADAPTER) from None
            except (Exception, BaseExceptionGroup) as exc:
                leaves = exception_leaves(exc)
                if any(not isinstance(e, Exception) for e in leaves):
                    raise  # cancellation (or KeyboardInterrupt) inside the WebSocket's task group
                permanent = [e for e in leaves if isinstance(e, _Permanent)]
                if permanent:
                    self.last_error = str(permanent[0])
                    if not started:
                        raise RuntimeStartError(str(permanent[0]), adapter=_ADAPTER) from None
                else:
                    self.last_error = redact_secrets(
                        "; ".join(f"{type(e).__name__}: {e}" for e in leaves)[:300]
                    )
            finally:
                self._drop_connection()
            if not started and trio.current_time() + delay > deadline:
                raise RuntimeStartError(
                    f"no gateway at {self.url} within {self.connect_timeout:g} s: {self.last_error}",
                    adapter=_ADAPTER,
                )
            await trio.sleep(delay)
            delay = min(delay * self.backoff_factor, self.backoff_max)

    def _drop_connection(self) -> None:
        was_connected = self._ws is not None
        self._ws = None
        self._connected = trio.Event()
        error = RuntimeExitedError(
            f"gateway connection lost ({self.last_error or 'closed'})",
            exit_code=None,
            adapter=_ADAPTER,
        )
        for pending in list(self._pending.values()):
            if not pending.done.is_set():
                pending.error = error
                pending.done.set()
        if was_connected:
            self._broadcast(Disconnected(self.last_error or "closed"))

    async def _handshake(self, ws: AsyncWebSocketSession) -> None:
        # The gateway speaks first (connect.challenge); connect must be our first frame.
        with trio.move_on_after(5.0):
            while True:
                frame = decode_frame(await ws.receive_text())
                if isinstance(frame, EventFrame) and frame.event == "connect.challenge":
                    break
        request_id = str(uuid.uuid4())
        params: dict[str, Any] = {
            "minProtocol": PROTOCOL_VERSION,
            "maxProtocol": PROTOCOL_VERSION,
            "client": {
                "id": "gateway-client",
                "version": _CLIENT_VERSION,
                "platform": platform.system().lower() or "linux",
                "mode": "backend",
            },
            "role": "operator",
            "scopes": list(_SCOPES),
            "caps": ["tool-events", *(["exec-approvals"] if self.exec_approvals else [])],
            "auth": {"token": self._token},
            "userAgent": f"{self.client_name}/{_CLIENT_VERSION}",
        }
        await ws.send_text(encode_request(request_id, "connect", params))
        with trio.fail_after(30.0):
            while True:
                frame = decode_frame(await ws.receive_text())
                if isinstance(frame, ResFrame) and frame.id == request_id:
                    break
        if frame.ok and frame.payload.get("type") == "hello-ok":
            self.hello = frame.payload
            return
        error = frame.error or GatewayError(code="UNKNOWN", message="connect refused")
        message = redact_secrets(f"gateway refused connect: {error.code} {error.message}")
        if error.retryable or error.code == "UNAVAILABLE":
            if error.retry_after_ms:
                await trio.sleep(error.retry_after_ms / 1000)
            raise ProtocolError(message, adapter=_ADAPTER)  # transient: reconnect
        raise _Permanent(message)

    async def _read(self, ws: AsyncWebSocketSession) -> None:
        while True:
            text = await ws.receive_text()
            if self.tap is not None:
                self.tap("in", text)
            try:
                frame = decode_frame(text)
            except ProtocolError:
                continue  # a frame we cannot read is dropped, not fatal for every run
            if isinstance(frame, ResFrame):
                pending = self._pending.get(frame.id)
                if pending is not None and not pending.done.is_set():
                    pending.frame = frame
                    pending.done.set()
                    continue
            elif isinstance(frame, EventFrame) and frame.event == "shutdown":
                self.last_error = "gateway shut down"
            self._route(frame)

    async def aclose(self) -> None:
        """Close the connection; pending requests fail and subscriptions end."""
        self._closed = True
        ws = self._ws
        if ws is not None:
            with trio.CancelScope(shield=True), suppress(Exception):
                await ws.close()
        for sub in list(self._subs):
            self._unsubscribe(sub)


@asynccontextmanager
async def open_gateway_client(url: str, token: str, **kwargs: Any) -> AsyncGenerator[GatewayClient]:
    """A connected :class:`GatewayClient` for the block (connected = ``hello-ok`` received).

    Raises:
        RuntimeStartError: no ``hello-ok`` within ``connect_timeout`` or a permanent refusal.
    """
    client = GatewayClient(url, token, **kwargs)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(client.run)
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel()
                await client.aclose()
    except BaseExceptionGroup as group:
        leaf = single_exception(group)
        if leaf is None:
            raise
        raise leaf from None
