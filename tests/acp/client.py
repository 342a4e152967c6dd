"""A small outside ACP client for the conformance tests: ``ringleader acp`` driven over stdio (a
child process, one message per line) or over WebSocket (``--listen``), message by message."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import attrs
import httpx2
import trio
from httpx2.websockets._api import aconnect_ws

ROOT = Path(__file__).resolve().parents[2]
Transport = Literal["stdio", "ws", "http"]
Answer = Callable[[dict[str, Any]], Awaitable[Any]]
"""Answers a request of the agent's (``session/request_permission``): the result to send."""


class Wire(Protocol):
    async def send_text(self, text: str) -> None: ...
    async def receive_text(self) -> str: ...


@attrs.define
class Reply:
    """A request's answer and what the agent sent before it."""

    result: Any = None
    error: dict[str, Any] | None = None
    updates: list[dict[str, Any]] = attrs.field(factory=list[dict[str, Any]])
    """The ``update`` objects of the ``session/update`` notifications, in order."""
    asked: list[dict[str, Any]] = attrs.field(factory=list[dict[str, Any]])
    """The agent's own requests (``session/request_permission``) answered meanwhile."""

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"]["text"] for u in self.updates if u["sessionUpdate"] == kind)

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates]


@attrs.define(eq=False)
class AcpClient:
    wire: Wire
    next_id: int = 0

    async def send(self, message: Mapping[str, Any]) -> None:
        await self.wire.send_text(json.dumps({"jsonrpc": "2.0", **message}))

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send({"method": method, "params": params})

    async def request(
        self, method: str, params: Any, *, answer: Answer | None = None, limit_s: float = 60
    ) -> Reply:
        self.next_id += 1
        await self.send({"id": self.next_id, "method": method, "params": params})
        return await self.until(self.next_id, answer=answer, limit_s=limit_s)

    async def raw(self, text: str, *, limit_s: float = 30) -> Reply:
        """Send ``text`` as it is; the answer is the next message with an id of null."""
        await self.wire.send_text(text)
        return await self.until(None, answer=None, limit_s=limit_s)

    async def until(self, request_id: Any, *, answer: Answer | None, limit_s: float) -> Reply:
        reply = Reply()
        with trio.fail_after(limit_s):
            while True:
                message: dict[str, Any] = json.loads(await self.wire.receive_text())
                assert message.get("jsonrpc") == "2.0", message
                method = message.get("method")
                if method == "session/update":
                    reply.updates.append(message["params"]["update"])
                elif method is not None:  # a request of the agent's
                    reply.asked.append(message)
                    assert answer is not None, f"unexpected request {message}"
                    result = await answer(message)
                    await self.send({"id": message["id"], "result": result})
                elif message.get("id") == request_id:
                    reply.result = message.get("result")
                    reply.error = message.get("error")
                    return reply

    async def initialize(self) -> dict[str, Any]:
        reply = await self.request(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "conformance"}},
        )
        assert reply.error is None, reply.error
        return reply.result

    async def ok(self, method: str, params: Any, *, answer: Answer | None = None) -> Reply:
        reply = await self.request(method, params, answer=answer)
        assert reply.error is None, (method, reply.error)
        return reply


class _Lines:
    def __init__(self, proc: trio.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.stdin, self.stdout = proc.stdin, proc.stdout
        self.buffer = b""

    async def send_text(self, text: str) -> None:
        await self.stdin.send_all(text.encode() + b"\n")

    async def receive_text(self) -> str:
        while b"\n" not in self.buffer:
            chunk = await self.stdout.receive_some(65536)
            assert chunk, "the agent closed its stdout"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()


class _Socket:
    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def send_text(self, text: str) -> None:
        await self.ws.send_text(text)

    async def receive_text(self) -> str:
        return await self.ws.receive_text()


class HttpWire:
    """ACP's Streamable HTTP profile from the client's side: every message is a POST; what the
    agent says arrives on the connection's SSE stream and on one stream per session, opened
    before the first message of a session goes out (or when a result names a new session)."""

    def __init__(self, url: str, http: httpx2.AsyncClient, nursery: trio.Nursery) -> None:
        base, _, query = url.partition("?")
        self.url = base.replace("ws://", "http://", 1)
        self.auth = {"Authorization": f"Bearer {query.removeprefix('token=')}"}
        self.http, self.nursery = http, nursery
        self.connection: str | None = None
        self.opened: set[str | None] = set()
        self.to_client, self.received = trio.open_memory_channel[tuple[int, str]](math.inf)
        self.held: dict[int, str] = {}
        self.next_event = 1
        """The agent's events are numbered over all streams (SSE ids): taken in that order."""
        self.statuses: list[int] = []

    def headers(self, session_id: str | None = None) -> dict[str, str]:
        headers = {**self.auth}
        if self.connection is not None:
            headers["Acp-Connection-Id"] = self.connection
        if session_id is not None:
            headers["Acp-Session-Id"] = session_id
        return headers

    async def open(self, session_id: str | None) -> None:
        if session_id not in self.opened:
            self.opened.add(session_id)
            await self.nursery.start(self._read, session_id)

    async def _read(
        self,
        session_id: str | None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        headers = {**self.headers(session_id), "Accept": "text/event-stream"}
        async with self.http.stream("GET", self.url, headers=headers) as response:
            assert response.status_code == 200, response.status_code
            task_status.started()
            event_id = 0
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    event_id = int(line.removeprefix("id: "))
                elif line.startswith("data: "):
                    self.to_client.send_nowait((event_id, line.removeprefix("data: ")))

    async def send_text(self, text: str) -> None:
        session_id: str | None = None
        with suppress(ValueError, RecursionError):
            found = _session_of(json.loads(text), "params")
            session_id = found
        if session_id is not None:
            await self.open(session_id)
        headers = {**self.headers(session_id), "Content-Type": "application/json"}
        response = await self.http.post(self.url, content=text.encode(), headers=headers)
        self.statuses.append(response.status_code)
        if self.connection is None and response.status_code == 200:
            self.connection = response.headers["acp-connection-id"]
            await self.open(None)
            self.to_client.send_nowait((0, response.text))  # answered on the POST itself
        elif response.status_code == 400 and response.json().get("jsonrpc") == "2.0":
            self.to_client.send_nowait((0, response.text))  # a parse error: answered on the POST
        else:
            assert response.status_code in (202, 501), (response.status_code, response.text)

    async def receive_text(self) -> str:
        while self.next_event not in self.held:
            event_id, text = await self.received.receive()
            if event_id == 0:  # an answer on a POST: no place in the streams' order
                break
            self.held[event_id] = text
        else:
            text = self.held.pop(self.next_event)
            self.next_event += 1
        session_id = _session_of(json.loads(text), "result")
        if session_id is not None:
            await self.open(session_id)
        return text

    async def close(self) -> None:
        response = await self.http.delete(self.url, headers=self.headers())
        assert response.status_code == 202, response.status_code


def _session_of(message: Any, field: str) -> str | None:
    """The ``sessionId`` in a message's ``params`` (or ``result``), if any."""
    if not isinstance(message, dict):
        return None
    inner: Any = cast(dict[str, Any], message).get(field)
    if not isinstance(inner, dict):
        return None
    found: Any = cast(dict[str, Any], inner).get("sessionId")
    return found if isinstance(found, str) else None


@asynccontextmanager
async def connect_http(url: str) -> AsyncGenerator[AcpClient]:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=None)) as http:
        async with trio.open_nursery() as nursery:
            wire = HttpWire(url, http, nursery)
            yield AcpClient(wire)
            await wire.close()
            nursery.cancel_scope.cancel()


def agent_env(state: Path, **env: str) -> dict[str, str]:
    return {**os.environ, "RINGLEADER_STATE_DIR": str(state), "PYTHONPATH": str(ROOT), **env}


@asynccontextmanager
async def listening(
    runtime: str, state: Path, *extra: str, **env: str
) -> AsyncGenerator[tuple[str, trio.Process]]:
    """``ringleader acp --listen 127.0.0.1:0``: its printed URL (with the token) and process;
    stopped with SIGINT at the end, which it must survive cleanly (exit 130)."""
    argv = [sys.executable, "-m", "orchestrator.cli", "acp", "--runtime", runtime]
    argv += ["--listen", "127.0.0.1:0", *extra]
    proc = await trio.lowlevel.open_process(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=agent_env(state, **env)
    )
    try:
        assert proc.stdout is not None
        buffer = b""
        with trio.fail_after(60):
            while b"\n" not in buffer:
                chunk = await proc.stdout.receive_some(4096)
                assert chunk, "acp --listen ended before it printed its URL"
                buffer += chunk
        url = buffer.split(b"\n", 1)[0].decode()
        assert re.match(r"ws://127\.0\.0\.1:\d+/acp", url), url
        yield url, proc
    finally:
        with suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        with trio.fail_after(30):
            code = await proc.wait()
        assert code == 130, code


@asynccontextmanager
async def connect_ws(url: str, **headers: str) -> AsyncGenerator[AcpClient]:
    async with aconnect_ws(
        url,
        max_message_size_bytes=8 * 1024 * 1024,
        keepalive_ping_interval_seconds=None,
        headers=headers or None,
    ) as ws:
        yield AcpClient(_Socket(ws))


@asynccontextmanager
async def stdio_agent(runtime: str, state: Path, **env: str) -> AsyncGenerator[AcpClient]:
    argv = [sys.executable, "-m", "orchestrator.cli", "acp", "--runtime", runtime]
    proc = await trio.lowlevel.open_process(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=agent_env(state, **env)
    )
    try:
        yield AcpClient(_Lines(proc))
    finally:
        assert proc.stdin is not None
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await proc.stdin.aclose()
        with trio.fail_after(30):
            code = await proc.wait()
        assert code == 0, code


@asynccontextmanager
async def agents(
    transport: Transport, runtime: str, state: Path, **env: str
) -> AsyncGenerator[Callable[[], Any]]:
    """A factory of fresh connections to one agent: over stdio each is a new ``ringleader acp``
    process (sharing the state directory: its event log); over WebSocket each is a new
    connection to one ``--listen`` process."""
    async with AsyncExitStack() as stack:
        if transport == "stdio":

            @asynccontextmanager
            async def fresh() -> AsyncGenerator[AcpClient]:
                async with stdio_agent(runtime, state, **env) as client:
                    await client.initialize()
                    yield client

        else:
            url, _ = await stack.enter_async_context(listening(runtime, state, **env))
            connect = connect_ws if transport == "ws" else connect_http

            @asynccontextmanager
            async def fresh() -> AsyncGenerator[AcpClient]:
                async with connect(url) as client:
                    await client.initialize()
                    yield client

        yield fresh
