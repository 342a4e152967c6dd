"""ACP over the network: ``ringleader acp --listen HOST:PORT``.

The transport of the ACP RFD "Streamable HTTP & WebSocket Transport" (agentclientprotocol.com,
``docs/rfds/streamable-http-websocket-transport.mdx``), both of its profiles on one endpoint,
``/acp``:

* **WebSocket**: a ``GET`` with ``Upgrade: websocket`` opens a connection (its
  ``Acp-Connection-Id`` in the 101 response), and every JSON-RPC message is one text frame, both
  ways (binary frames are ignored). The client sends ``initialize`` first, as on stdio.
* **Streamable HTTP**: ``POST`` / ``GET`` (SSE) / ``DELETE`` with ``Acp-Connection-Id`` and
  ``Acp-Session-Id`` headers (:mod:`orchestrator.acp.streamable`).

Each connection gets its own :class:`~orchestrator.acp.server.AcpServer` (its own sessions) over
the same runtime registry and event log, so a session served on one connection can be listed,
loaded, resumed or forked on another, or over stdio. When a connection closes, its running
prompts are aborted (each run ends in ``done{aborted}``, recorded) before the connection's tasks
end.

Security, as the board's (``orchestrator/board/server.py``): every connection needs the token,
on loopback too — ``Authorization: Bearer <token>`` on the upgrade request, or ``?token=`` (a
browser's ``WebSocket`` cannot set headers); a handshake with an ``Origin`` other than this
server is refused (another site's page cannot drive the agent). Off loopback a token must be
configured (:func:`~orchestrator.engine.feed.check_bind`).
"""

from __future__ import annotations

import functools
import hmac
import json
import logging
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final
from urllib.parse import urlsplit

import trio
from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from orchestrator.acp.server import MAX_LINE, AcpServer
from orchestrator.acp.streamable import HttpConnections
from orchestrator.core.listen import serve_asgi
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import FeedAuth, check_bind
from orchestrator.engine.runner import Runner

__all__ = ["ACP_PATH", "acp_app", "serve_acp_remote"]

ACP_PATH: Final = "/acp"
_ABORT_GRACE_S: Final = 10.0
"""How long the runs of a closed connection get to end after their abort."""
_log = logging.getLogger(__name__)


def acp_app(
    registry: RuntimeRegistry,
    runtime_id: str,
    *,
    token: str,
    event_log: EventLog | None = None,
    model: str | None = None,
    approvals: bool = False,
    runner_factory: Callable[..., Runner] = Runner,
    nursery: trio.Nursery | None = None,
) -> tuple[Starlette, HttpConnections | None]:
    """The ASGI app serving ``runtime_id`` as an ACP agent on ``/acp`` (WebSocket; Streamable
    HTTP too when given the ``nursery`` its connections run in), and those connections."""
    auth = FeedAuth(token)

    def make_server(write: Callable[[dict[str, Any]], Any]) -> AcpServer:
        return AcpServer(
            registry,
            runtime_id,
            write,
            event_log=event_log,
            model=model,
            approvals=approvals,
            runner_factory=runner_factory,
        )

    async def endpoint(websocket: WebSocket) -> None:
        if not _allowed(auth, websocket):
            await websocket.close(code=1008)  # before accept: the upgrade is refused (403)
            return
        connection = uuid.uuid4().hex
        await websocket.accept(headers=[(b"acp-connection-id", connection.encode())])

        gone = False

        async def write(message: dict[str, Any]) -> None:
            nonlocal gone
            if gone:
                return  # the client left: what its runs still say has nobody to go to
            try:
                await websocket.send_text(json.dumps(message))
            except Exception:  # closed under us (Starlette raises several kinds)
                gone = True

        server = make_server(write)
        async with trio.open_nursery() as nursery:
            try:
                while True:
                    message = await websocket.receive()
                    if message["type"] == "websocket.disconnect":
                        break
                    text = message.get("text")
                    if isinstance(text, str):
                        await server.handle_line(text, nursery)
            except (WebSocketDisconnect, trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            finally:
                gone = True
                server.abort_all()  # the runs end in done{aborted}, recorded
                with trio.move_on_after(_ABORT_GRACE_S) as waiting:
                    waiting.shield = True
                    await server.idle()
                nursery.cancel_scope.cancel()

    routes: list[Any] = [WebSocketRoute(ACP_PATH, endpoint)]
    connections: HttpConnections | None = None
    if nursery is not None:
        http = connections = HttpConnections(make_server, nursery)

        async def streamable(request: Request) -> Response:
            if not _allowed(auth, request):
                return JSONResponse({"error": "unauthorized"}, status_code=401)
            if request.method == "POST":
                return await http.post(request)
            if request.method == "GET":
                return await http.get(request)
            return await http.delete(request)

        routes.append(Route(ACP_PATH, streamable, methods=["GET", "POST", "DELETE"]))
    return Starlette(routes=routes), connections


def _allowed(auth: FeedAuth, connection: HTTPConnection) -> bool:
    """The token (header, or ``?token=``), and no foreign ``Origin``."""
    origin = connection.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != connection.headers.get("host"):
        return False
    header = connection.headers.get("authorization", "")
    offered = header[7:] if header[:7].lower() == "bearer " else ""
    offered = offered or connection.query_params.get("token", "")
    return hmac.compare_digest(offered.encode(), auth.token.encode())


@asynccontextmanager
async def serve_acp_remote(
    registry: RuntimeRegistry,
    runtime_id: str,
    *,
    host: str,
    port: int,
    token: str,
    event_log: EventLog | None = None,
    model: str | None = None,
    approvals: bool = False,
) -> AsyncGenerator[str]:
    """Serve :func:`acp_app` (WebSocket and Streamable HTTP) with Hypercorn's trio worker;
    yields the ``ws://`` URL of ``/acp`` (its port is the bound one: ``port`` 0 picks a free
    one; the same path over ``http://`` is the Streamable HTTP endpoint).

    Raises:
        ConfigError: off loopback without a token, or an empty token.
    """
    check_bind(host, token)
    bare = host.strip("[]")
    async with trio.open_nursery() as nursery:
        app, connections = acp_app(
            registry,
            runtime_id,
            token=token,
            event_log=event_log,
            model=model,
            approvals=approvals,
            nursery=nursery,
        )
        binds: list[str] = await nursery.start(
            functools.partial(
                serve_asgi,
                app,
                host,
                port,
                errorlog=_log,
                websocket_max_message_size=MAX_LINE,
                websocket_ping_interval=20.0,
            )
        )
        bound = int(binds[0].rsplit(":", 1)[1])
        shown = "127.0.0.1" if bare == "localhost" else (f"[{bare}]" if ":" in bare else bare)
        try:
            yield f"ws://{shown}:{bound}{ACP_PATH}"
        finally:
            if connections is not None:
                with trio.CancelScope(shield=True):
                    await connections.aclose()
            nursery.cancel_scope.cancel()
