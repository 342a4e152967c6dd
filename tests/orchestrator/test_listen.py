"""``serve_asgi`` (orchestrator/core/listen.py): the one way an app of ours is served."""

from __future__ import annotations

import functools
import logging
from typing import Any

import httpx2 as httpx
import pytest
import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from orchestrator.core.errors import exception_leaves
from orchestrator.core.listen import serve_asgi

_LOG = logging.getLogger("test_listen")


async def _hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("hello")


async def _refuse(request: Request) -> PlainTextResponse:
    return PlainTextResponse("unauthorized", status_code=401)  # the body is never read


async def _echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse((await request.body()).decode())


APP = Starlette(
    routes=[
        Route("/", _hello),
        Route("/refuse", _refuse, methods=["POST"]),
        Route("/echo", _echo, methods=["POST"]),
    ]
)


async def _response_head(stream: trio.SocketStream) -> bytes:
    """Read one whole response (its body has a Content-Length); return its head, lowercased.
    Read to its end: a client that hangs up while the response is still being sent makes
    Hypercorn answer the unfinished request with a 400 from another task, which collides with
    the one sending (a BusyResourceError in its log)."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = await stream.receive_some(4096)
        assert chunk, f"closed before a response: {received!r}"
        received += chunk
    head, body = received.split(b"\r\n\r\n", 1)
    head = head.lower()
    length = int(head.split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
    while len(body) < length:
        chunk = await stream.receive_some(4096)
        assert chunk, f"closed inside a response: {received + body!r}"
        body += chunk
    return head


async def test_serves_until_cancelled_on_the_bound_port() -> None:
    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(
            functools.partial(serve_asgi, APP, "127.0.0.1", 0, errorlog=_LOG)
        )
        url = binds[0]
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
        async with httpx.AsyncClient() as client:
            answer = await client.get(url + "/")
        assert answer.text == "hello"
        nursery.cancel_scope.cancel()


async def test_a_ctrl_c_in_hypercorns_own_task_is_raised_not_swallowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hypercorn catches a KeyboardInterrupt raised in its accept loop and returns from
    ``serve`` as if asked to stop. Before the fix ``serve_asgi`` then returned too, and whoever
    started it (``ringleader model-server``: its block sleeps until Ctrl-C) waited forever: a CI
    run hung there. Here the interrupt lands where trio put it in that run — the listeners'
    task, as it starts."""

    async def interrupted(handler: Any, listeners: list[trio.abc.Listener[Any]], **_: Any) -> None:
        for listener in listeners:  # as trio.serve_listeners does on its way out
            await listener.aclose()
        raise KeyboardInterrupt

    monkeypatch.setattr(trio, "serve_listeners", interrupted)
    with pytest.raises(BaseException) as raised:  # noqa: PT011 - the leaves are checked
        async with trio.open_nursery() as nursery:
            await nursery.start(functools.partial(serve_asgi, APP, "127.0.0.1", 0, errorlog=_LOG))
            with trio.fail_after(30):  # before the fix: here forever (as model-server's block)
                await trio.sleep_forever()
    leaves = exception_leaves(raised.value)
    assert leaves and all(isinstance(leaf, KeyboardInterrupt) for leaf in leaves), leaves


async def test_a_response_before_the_body_arrived_closes_the_connection() -> None:
    """A full run saw httpx's next POST on a kept-alive connection fail right after a 401
    ("Server disconnected without sending a response"): the refusal went out before the
    request's body had arrived, and Hypercorn cannot reuse such a connection. Here the body is
    held back until the response is in: it says ``Connection: close`` (before: it did not, and
    a second request on the connection got no answer). A request whose body was read keeps
    its connection."""
    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(
            functools.partial(serve_asgi, APP, "127.0.0.1", 0, errorlog=_LOG)
        )
        port = int(binds[0].rsplit(":", 1)[1])
        with trio.fail_after(30):
            refused = await trio.open_tcp_stream("127.0.0.1", port)
            async with refused:
                await refused.send_all(
                    b"POST /refuse HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\n"
                )
                head = await _response_head(refused)  # the body is not sent yet
                assert head.startswith(b"http/1.1 401")
                assert b"\r\nconnection: close" in head
            echoed = await trio.open_tcp_stream("127.0.0.1", port)
            async with echoed:
                request = b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello"
                await echoed.send_all(request)
                head = await _response_head(echoed)
                assert head.startswith(b"http/1.1 200")
                assert b"connection: close" not in head
                await echoed.send_all(request)  # the same connection serves the next one
                assert (await _response_head(echoed)).startswith(b"http/1.1 200")
        nursery.cancel_scope.cancel()
