"""Listening on a port: the ``--port`` argument, the one line for a failure to bind, and
:func:`serve_asgi`, the one way an app of ours is served (Hypercorn's trio worker).

Shared by every command that listens (the board, the scripted model server, ``acp listen``) and
by adapters that start a local server.
"""

from __future__ import annotations

import argparse
import errno
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from orchestrator.core.errors import exception_leaves

__all__ = ["bind_error", "port_number", "serve_asgi"]


def port_number(text: str) -> int:
    """argparse ``type`` for ``--port``: 0 (a free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range (0-65535; 0 picks a free port)")
    return port


def bind_error(exc: BaseException, host: str, port: int) -> str | None:
    """One line for a failure to listen on ``host:port`` (in use, not allowed), else None."""
    leaves = exception_leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, OSError):
            if leaf.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is in use; pick another, or --port 0 for a free one"
            if leaf.errno in (errno.EACCES, errno.EPERM):
                return f"not allowed to listen on {host}:{port}; use a port above 1023, or --port 0"
            if leaf.errno == errno.EADDRNOTAVAIL:
                return f"cannot listen on {host}: no such address on this machine"
    return None


async def serve_asgi(
    app: Any,
    host: str,
    port: int,
    *,
    errorlog: logging.Logger,
    websocket_max_message_size: int | None = None,
    websocket_ping_interval: float | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the ASGI ``app`` on ``host:port`` (``[::1]`` and bare IPv6 both work; 0: a free
    port) until cancelled; ``task_status.started`` gets Hypercorn's bound URLs. No access log
    (query strings may carry a token); half a second of grace for open requests.

    Hypercorn catches a ``KeyboardInterrupt`` raised in its own tasks and returns as if asked to
    stop (``hypercorn/trio/run.py``, ``worker_serve``). Given no shutdown trigger and no request
    limit, that is the only way its ``serve`` returns, so the interrupt is raised again here:
    a Ctrl-C landing in one of Hypercorn's tasks (it happens right after the bind, as the
    listeners start) would otherwise stop the server while the block that started it waits
    forever — ``ringleader model-server`` hung on a Ctrl-C that way in a CI run.
    """
    from hypercorn.config import Config
    from hypercorn.trio import serve  # pyright: ignore[reportUnknownVariableType]

    config = Config()
    bare = host.strip("[]")
    config.bind = [f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"]
    config.accesslog = None
    config.errorlog = errorlog
    config.graceful_timeout = 0.5
    if websocket_max_message_size is not None:
        config.websocket_max_message_size = websocket_max_message_size
    if websocket_ping_interval is not None:
        config.websocket_ping_interval = websocket_ping_interval
    served: Any = _CloseWhenUnread(app)  # hypercorn's ASGI types are TypedDicts
    await serve(served, config, task_status=task_status)
    raise KeyboardInterrupt


@attrs.frozen
class _CloseWhenUnread:
    """ASGI middleware: a response that starts before its request's body was read (a refusal:
    401 without a token, 413, 415) says ``Connection: close``.

    Hypercorn can reuse an HTTP/1.1 connection only once it has received the whole request; a
    body that arrives after the response went out leaves the connection stuck, and the client,
    told nothing, sends its next request there and gets no answer ("Server disconnected without
    sending a response", seen in a full run right after a 401). Closing is also what a refusal
    should do: an unread body is never read on the refused client's behalf."""

    app: Any

    async def __call__(self, scope: dict[str, Any], receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = dict(scope.get("headers") or ())
        unread = headers.get(b"content-length", b"0").strip() not in (b"0", b"") or (
            b"transfer-encoding" in headers
        )

        async def reading() -> dict[str, Any]:
            nonlocal unread
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                unread = False
            return message

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and unread:
                closing = [*message.get("headers", ()), (b"connection", b"close")]
                message = {**message, "headers": closing}
            await send(message)

        await self.app(scope, reading, sending)


_Receive = Callable[[], Awaitable[dict[str, Any]]]
_Send = Callable[[dict[str, Any]], Awaitable[None]]
