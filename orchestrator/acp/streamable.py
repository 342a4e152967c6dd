"""ACP's Streamable HTTP profile on ``/acp`` (``ringleader acp --listen``), beside WebSocket.

As the RFD "Streamable HTTP & WebSocket Transport" lays it out:

* ``POST /acp`` with ``initialize`` and no ``Acp-Connection-Id`` creates a connection and answers
  ``200`` with the JSON-RPC response, the id in the ``Acp-Connection-Id`` header;
* every other ``POST`` (a request, a notification, or the client's answer to one of ours) names its
  connection (``Acp-Connection-Id``; session-scoped methods also ``Acp-Session-Id``) and is
  answered ``202`` at once; what it causes arrives on the streams below, correlated by JSON-RPC id;
* ``GET /acp`` (``Accept: text/event-stream``) with ``Acp-Connection-Id`` opens the connection's
  SSE stream (responses to ``initialize``-less connection-level requests: ``session/new``,
  ``session/load``, ``session/resume``, ``session/list``, ``session/fork``, and errors without an
  id); with ``Acp-Session-Id`` too, that session's stream (its ``session/update`` notifications,
  our ``session/request_permission`` requests, and the responses to ``session/prompt`` and
  ``session/close``). Messages wait in the stream's queue until it is opened. Every event carries
  an SSE ``id``, one sequence over all the connection's streams, so a client can put back in
  order what two streams delivered (a ``session/load``'s replay on the session's stream before
  its answer on the connection's);
* ``DELETE /acp`` ends the connection: its running prompts are aborted, its streams close.

Status codes as the RFD says: ``415`` for a POST that is not JSON, ``406`` for a GET that does
not accept SSE, ``400`` for a missing header, ``404`` for an unknown connection, ``501`` for a
batch. The RFD asks for HTTP/2 (Hypercorn speaks it, ``h2c`` included); HTTP/1.1 works too, one
TCP connection per open stream. Not resumable (the RFD defers ``Last-Event-ID`` to ACP v2).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any, Final, cast

import attrs
import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from orchestrator.acp.server import MAX_LINE, AcpServer

__all__ = ["HttpConnections"]

CONNECTION_HEADER: Final = "acp-connection-id"
SESSION_HEADER: Final = "acp-session-id"
_SESSION_SCOPED: Final = frozenset({"session/prompt", "session/cancel", "session/close"})
"""Requests answered on the session's stream (the others on the connection's)."""
_KEEPALIVE_S: Final = 15.0
_ABORT_GRACE_S: Final = 10.0


@attrs.define(eq=False)
class _Stream:
    send: trio.MemorySendChannel[tuple[int, str]]
    receive: trio.MemoryReceiveChannel[tuple[int, str]]
    open: bool = False

    @classmethod
    def new(cls) -> _Stream:
        send, receive = trio.open_memory_channel[tuple[int, str]](math.inf)
        return cls(send, receive)


@attrs.define(eq=False)
class _Connection:
    connection_id: str
    server: AcpServer | None = None
    inbox: tuple[
        trio.MemorySendChannel[dict[str, Any]], trio.MemoryReceiveChannel[dict[str, Any]]
    ] = attrs.field(factory=lambda: trio.open_memory_channel[dict[str, Any]](math.inf))
    streams: dict[str | None, _Stream] = attrs.field(factory=dict[str | None, _Stream])
    """By session id; ``None``: the connection's own stream."""
    routes: dict[str, str] = attrs.field(factory=dict[str, str])
    """Pending session-scoped request ids (as JSON) → their session."""
    initialize_id: Any = None
    initialized: trio.Event = attrs.field(factory=trio.Event)
    initialize_answer: dict[str, Any] | None = None
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    closed: bool = False
    sent: int = 0
    """The connection's last event id: one sequence over all its streams."""

    def stream(self, session_id: str | None) -> _Stream:
        found = self.streams.get(session_id)
        if found is None:
            found = self.streams[session_id] = _Stream.new()
        return found

    async def deliver(self, message: dict[str, Any]) -> None:
        """One message of the agent's, onto the stream it belongs on."""
        if self.closed:
            return
        request_id = message.get("id")
        if "method" not in message and request_id == self.initialize_id and request_id is not None:
            self.initialize_answer = message
            self.initialize_id = None
            self.initialized.set()
            return
        session_id: str | None = None
        params = message.get("params")
        if "method" in message and isinstance(params, dict):
            found = cast(dict[str, Any], params).get("sessionId")
            session_id = found if isinstance(found, str) else None
        elif request_id is not None:
            session_id = self.routes.pop(json.dumps(request_id), None)
        self.sent += 1
        self.stream(session_id).send.send_nowait((self.sent, json.dumps(message)))


@attrs.define(eq=False)
class HttpConnections:
    """The Streamable HTTP connections of one ``--listen`` server; their tasks run in
    ``nursery`` (the server's)."""

    make_server: Callable[[Callable[[dict[str, Any]], Any]], AcpServer]
    nursery: trio.Nursery
    _connections: dict[str, _Connection] = attrs.field(init=False, factory=dict[str, _Connection])

    async def post(self, request: Request) -> Response:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _problem(415, "POST /acp takes application/json")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_LINE:
            return _problem(413, "message too large")  # said up front: not a byte is read
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():  # the limit holds while reading, not after
            size += len(chunk)
            if size > MAX_LINE:
                return _problem(413, "message too large")
            chunks.append(chunk)
        try:
            message: Any = json.loads(b"".join(chunks))
        except (ValueError, RecursionError):  # RecursionError: valid JSON nested too deeply
            return JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}},
                status_code=400,
            )
        if isinstance(message, list):
            return _problem(501, "batch requests are not supported")
        if not isinstance(message, dict):
            return JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "not a JSON-RPC object"},
                },
                status_code=400,
            )
        message = cast(dict[str, Any], message)
        connection_id = request.headers.get(CONNECTION_HEADER)
        if connection_id is None:
            if message.get("method") != "initialize" or message.get("id") is None:
                return _problem(400, "no Acp-Connection-Id: send initialize first")
            return await self._initialize(message)
        connection = self._connections.get(connection_id)
        if connection is None:
            return _problem(404, "unknown Acp-Connection-Id")
        method = message.get("method")
        params = message.get("params")
        session_id = (
            cast(dict[str, Any], params).get("sessionId") if isinstance(params, dict) else None
        )
        if method in _SESSION_SCOPED and isinstance(session_id, str):
            if request.headers.get(SESSION_HEADER) != session_id:
                return _problem(400, f"{method} needs Acp-Session-Id: {session_id}")
            if message.get("id") is not None:
                connection.routes[json.dumps(message["id"])] = session_id
        connection.inbox[0].send_nowait(message)
        return Response(status_code=202)

    async def get(self, request: Request) -> Response:
        if "text/event-stream" not in request.headers.get("accept", ""):
            return _problem(406, "GET /acp opens a text/event-stream")
        connection_id = request.headers.get(CONNECTION_HEADER)
        if connection_id is None:
            return _problem(400, "GET /acp needs Acp-Connection-Id")
        connection = self._connections.get(connection_id)
        if connection is None:
            return _problem(404, "unknown Acp-Connection-Id")
        session_id = request.headers.get(SESSION_HEADER)
        stream = connection.stream(session_id)
        if stream.open:
            return _problem(409, "that stream is open already")
        stream.open = True

        async def events() -> AsyncGenerator[str]:
            try:
                yield ": open\n\n"
                while True:
                    event: tuple[int, str] | None = None
                    with trio.move_on_after(_KEEPALIVE_S):
                        try:
                            event = await stream.receive.receive()
                        except trio.EndOfChannel:
                            return
                    yield (
                        ": keepalive\n\n"
                        if event is None
                        else f"id: {event[0]}\ndata: {event[1]}\n\n"
                    )
            finally:
                stream.open = False

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def delete(self, request: Request) -> Response:
        connection_id = request.headers.get(CONNECTION_HEADER)
        if connection_id is None:
            return _problem(400, "DELETE /acp needs Acp-Connection-Id")
        connection = self._connections.pop(connection_id, None)
        if connection is None:
            return _problem(404, "unknown Acp-Connection-Id")
        await self._close(connection)
        return Response(status_code=202)

    async def aclose(self) -> None:
        """End every connection (the server stops)."""
        for connection in list(self._connections.values()):
            await self._close(connection)
        self._connections.clear()

    async def _initialize(self, message: dict[str, Any]) -> Response:
        connection = _Connection(uuid.uuid4().hex)
        connection.server = self.make_server(connection.deliver)
        connection.initialize_id = message["id"]
        self._connections[connection.connection_id] = connection
        await self.nursery.start(self._serve, connection)
        connection.inbox[0].send_nowait(message)
        await connection.initialized.wait()
        return JSONResponse(
            connection.initialize_answer,
            headers={"Acp-Connection-Id": connection.connection_id},
        )

    async def _serve(
        self,
        connection: _Connection,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """The connection's messages, handled in order (prompts in their own tasks)."""
        server = connection.server
        assert server is not None
        with connection.scope:
            async with trio.open_nursery() as nursery:
                task_status.started()
                async for message in connection.inbox[1]:
                    await server.handle(message, nursery)
                nursery.cancel_scope.cancel()

    async def _close(self, connection: _Connection) -> None:
        connection.closed = True
        if connection.server is not None:
            connection.server.abort_all()  # the runs end in done{aborted}, recorded
            with trio.move_on_after(_ABORT_GRACE_S):
                await connection.server.idle()
        connection.inbox[0].close()
        for stream in connection.streams.values():
            stream.send.close()
        connection.scope.cancel()


def _problem(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)
