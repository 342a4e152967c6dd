"""The MCP client behind :mod:`.mcp` (imported on first use: the ``mcp`` package is heavy).

See :mod:`.mcp` for what it does; this module holds the connections, their holder tasks, the
stdio and streamable-HTTP transports, and the mapping of tools and results.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, TypeAlias

import anyio
import attrs
import httpx2
import trio
from mcp import ClientSession
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    PaginatedRequestParams,
    ResourceLink,
    TextContent,
    ToolListChangedNotification,
    jsonrpc_message_adapter,
)
from mcp_types import Tool as McpTool

from orchestrator.core.errors import (
    ConfigError,
    LineTooLongError,
    McpServerDiedError,
    McpStartError,
    RuntimeNotFoundError,
    RuntimeStartError,
    exception_leaves,
    redact_secrets,
    single_exception,
)
from orchestrator.core.redact import register_secret

from .._process import ChildProcess, child_env, open_child
from .mcp import (
    ChangedCallback,
    DiedCallback,
    McpHttpServer,
    McpHub,
    McpServer,
    McpStdioServer,
    mcp_tool_name,
)
from .messages import ContentPart, ContentSource, ToolResultData
from .tools import Tool, ToolContext

__all__ = ["open_servers", "result_data"]

_log = logging.getLogger(__name__)

_SECRET_HEADER: Final = re.compile(r"auth|token|key|secret|cookie|session", re.IGNORECASE)
_MAX_LINE_BYTES: Final = 32 * 1024 * 1024
_STDERR_LINES: Final = 3
_STDERR_CHARS: Final = 500
_DEATH_REPORT_WAIT_S: Final = 5.0
_CLOSE_GRACE_S: Final = 1.0
"""After closing a stdio server's stdin: how long it has to exit before SIGINT, then SIGTERM,
then SIGKILL (each after the same grace)."""
_CLOSE_LIMIT_S: Final = 10.0
_HTTP_TIMEOUT: Final = httpx2.Timeout(30.0, read=300.0)


@attrs.define(eq=False)
class _Connection:
    """One server's live session, owned by its holder task."""

    server: McpServer
    session_key: str | None
    session: ClientSession | None = None
    tools: tuple[McpTool, ...] = ()
    died: McpServerDiedError | None = None
    child: ChildProcess | None = None
    closing: bool = False
    stopping: bool = False
    """The holder should leave: the block ends, or the stdio child's output ended."""
    wake: trio.Event = attrs.field(factory=trio.Event)
    """Wakes the holder: a stop, or the server's tool list changed."""
    tools_changed: bool = False
    relisted: trio.Event | None = None
    """Set once the tool list announced by a ``tools/list_changed`` has been applied."""
    ended: trio.Event = attrs.field(factory=trio.Event)
    """Set when the holder has left its session (``died`` is final by then)."""

    def stop(self) -> None:
        self.stopping = True
        self.wake.set()

    async def on_message(self, message: IncomingMessage) -> None:
        """The session's notifications: ``tools/list_changed`` wakes the holder to re-list."""
        if isinstance(message, ToolListChangedNotification):
            self.tools_changed = True
            if self.relisted is None:
                self.relisted = trio.Event()
            self.wake.set()
        await trio.lowlevel.checkpoint()

    def gone(self, reason: str) -> McpServerDiedError:
        return McpServerDiedError(
            f"MCP server {self.server.name!r} died: {reason}",
            server=self.server.name,
            adapter="native",
            session_key=self.session_key,
        )

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call one tool; raises :class:`McpServerDiedError` when the server is gone and
        :class:`MCPError` for a JSON-RPC error answer."""
        if self.died is not None:
            raise self.died
        session = self.session
        assert session is not None
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, trio.BrokenResourceError):
            pass
        else:
            # a `tools/list_changed` the server sent before answering is handled in a task the
            # session spawned before our answer arrived: one checkpoint lets it flag the change
            await trio.lowlevel.checkpoint()
            relisted = self.relisted
            if relisted is not None:
                # the call changed the server's tools: the model's next turn sees the new list
                with trio.move_on_after(_DEATH_REPORT_WAIT_S):
                    await relisted.wait()
            return result
        # the connection broke under the call: let the holder record why, then report that
        with trio.move_on_after(_DEATH_REPORT_WAIT_S):
            await self.ended.wait()
        raise self.died or self.gone("the connection closed")


@asynccontextmanager
async def open_servers(
    servers: Sequence[McpServer],
    *,
    cwd: str | None = None,
    session_key: str | None = None,
    on_died: DiedCallback | None = None,
    on_tools_changed: ChangedCallback | None = None,
) -> AsyncGenerator[McpHub]:
    """:func:`.mcp.open_mcp_servers`."""
    names = [s.name for s in servers]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"two MCP servers are named {name!r}")
    conns = [_Connection(server=s, session_key=session_key) for s in servers]
    failures: dict[int, McpStartError] = {}
    hub: McpHub | None = None

    async def changed() -> None:
        if hub is None:  # still starting: the hub is built from the latest lists
            return
        try:
            hub.tools = _tools(conns)
        except ConfigError:
            _log.warning("MCP tool list change ignored", exc_info=True)
            return
        if on_tools_changed is not None:
            await on_tools_changed(hub)

    try:
        async with trio.open_nursery() as holders:

            async def start(index: int, conn: _Connection) -> None:
                try:
                    await holders.start(_hold, conn, cwd, on_died, changed)
                except McpStartError as exc:
                    failures[index] = exc

            async with trio.open_nursery() as starters:
                for index, conn in enumerate(conns):
                    starters.start_soon(start, index, conn)
            try:
                if not failures:
                    hub = McpHub(conns, _tools(conns))
                    yield hub
            finally:
                for conn in conns:
                    conn.closing = True
                    conn.stop()
    except BaseExceptionGroup as group:
        # the block's own exception comes out of the nursery as it went in
        single = single_exception(group)
        if single is None:
            raise
        raise single from None
    if failures:
        raise failures[min(failures)]


async def _hold(
    conn: _Connection,
    cwd: str | None,
    on_died: DiedCallback | None,
    on_changed: Callable[[], Awaitable[None]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Own one server's transport and session: start, report ready, follow its tool list,
    close."""
    server = conn.server
    started = False
    try:
        with trio.fail_after(server.start_timeout_s) as deadline:
            async with (
                _transport(conn, cwd) as (read, write),
                ClientSession(read, write, message_handler=conn.on_message) as session,
            ):
                await session.initialize()
                conn.tools = await _list_tools(session)
                conn.session = session
                deadline.deadline = math.inf
                started = True
                task_status.started()
                while not conn.stopping:
                    await conn.wake.wait()
                    conn.wake = trio.Event()
                    if conn.tools_changed and not conn.stopping:
                        await _relist(conn, session, on_changed)
                # closing is bounded too (an HTTP session's DELETE to a host that went away)
                deadline.deadline = trio.current_time() + _CLOSE_LIMIT_S
    except trio.TooSlowError:
        if not started:
            raise _start_error(conn, None) from None
    except Exception as exc:
        if not started:
            raise _start_error(conn, exc) from None
        if conn.died is None and not conn.closing:
            conn.died = conn.gone(_describe(exc))
    finally:
        if started and conn.died is None and not conn.closing:
            conn.died = conn.gone(_exit_reason(conn) or "the connection closed")
        conn.ended.set()
    if conn.died is not None and on_died is not None:
        await on_died(conn.died)


async def _relist(
    conn: _Connection, session: ClientSession, on_changed: Callable[[], Awaitable[None]]
) -> None:
    conn.tools_changed = False
    relisted = conn.relisted  # kept on the connection until applied: callers wait on it
    try:
        conn.tools = await _list_tools(session)
        await on_changed()
    finally:
        if conn.relisted is relisted:
            conn.relisted = None
        if relisted is not None:
            relisted.set()


def _start_error(conn: _Connection, exc: BaseException | None) -> McpStartError:
    server = conn.server
    if exc is None:
        reason = f"not ready within {server.start_timeout_s:g}s"
    elif isinstance(exc, RuntimeNotFoundError):
        reason = f"command not found or not executable: {exc.path}"
    elif isinstance(exc, RuntimeStartError):
        reason = exc.message
    else:
        reason = _exit_reason(conn) or _describe(exc)
    where = server.url if isinstance(server, McpHttpServer) else server.command
    return McpStartError(
        redact_secrets(f"MCP server {server.name!r} ({where}) could not start: {reason}"),
        server=server.name,
        adapter="native",
        session_key=conn.session_key,
    )


def _exit_reason(conn: _Connection) -> str:
    """``exited with status N`` and the stderr tail, for a stdio child that has exited."""
    child = conn.child
    if child is None or child.returncode is None:
        return ""
    lines = [line.strip() for line in child.stderr_tail.splitlines() if line.strip()]
    tail = " | ".join(lines[-_STDERR_LINES:])[-_STDERR_CHARS:]
    return f"exited with status {child.returncode}" + (f"; stderr: {tail}" if tail else "")


def _describe(exc: BaseException) -> str:
    leaves = exception_leaves(exc)
    leaf = leaves[0] if len(leaves) == 1 else exc
    if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
        return "the connection closed"
    text = str(leaf)
    return redact_secrets(f"{type(leaf).__name__}: {text}")


async def _list_tools(session: ClientSession) -> tuple[McpTool, ...]:
    tools: list[McpTool] = []
    cursor: str | None = None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tuple(tools)


# -- transports --------------------------------------------------------------------------------


_Streams: TypeAlias = tuple[
    anyio.abc.ObjectReceiveStream[SessionMessage | Exception],
    anyio.abc.ObjectSendStream[SessionMessage],
]


def _transport(conn: _Connection, cwd: str | None) -> Any:
    server = conn.server
    if isinstance(server, McpHttpServer):
        return _http_transport(server)
    return _stdio_transport(conn, server, cwd)


@asynccontextmanager
async def _http_transport(server: McpHttpServer) -> AsyncGenerator[_Streams]:
    for header, value in server.headers.items():
        if _SECRET_HEADER.search(header):
            register_secret(value)
    async with (
        httpx2.AsyncClient(headers=dict(server.headers), timeout=_HTTP_TIMEOUT) as client,
        streamable_http_client(server.url, http_client=client) as (read, write),
    ):
        yield read, write  # pyright: ignore[reportReturnType]


@asynccontextmanager
async def _stdio_transport(
    conn: _Connection, server: McpStdioServer, cwd: str | None
) -> AsyncGenerator[_Streams]:
    """JSON-RPC lines over a child's pipes, with :func:`open_child`'s lifetime guarantees."""
    env = child_env(extra=server.env)
    workdir = server.cwd or cwd
    async with open_child(
        [server.command, *server.args],
        env=env,
        cwd=workdir,
        stdin=True,
        max_line_bytes=_MAX_LINE_BYTES,
        sigint_grace=_CLOSE_GRACE_S,
        sigterm_grace=_CLOSE_GRACE_S,
        adapter="native",
        session_key=conn.session_key,
    ) as child:
        conn.child = child
        to_session, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write, from_session = anyio.create_memory_object_stream[SessionMessage](0)

        async def pump_out() -> None:
            async with to_session:
                async for batch in child.batches():
                    for frame in batch:
                        await to_session.send(_parse(frame))
                with trio.move_on_after(_CLOSE_GRACE_S):
                    await child.wait()
                conn.stop()  # output ended: the holder closes the session and reports

        async def pump_in() -> None:
            async with from_session:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    try:
                        await child.send_line(data.encode())
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump_out)
            nursery.start_soon(pump_in)
            try:
                yield read, write
            finally:
                nursery.cancel_scope.cancel()
                with trio.CancelScope(shield=True):
                    # the spec's shutdown: close stdin, give the server a moment to exit
                    await child.close_stdin()
                    with trio.move_on_after(_CLOSE_GRACE_S):
                        await child.wait()


def _parse(frame: bytes | LineTooLongError) -> SessionMessage | Exception:
    if isinstance(frame, LineTooLongError):
        return frame
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(frame, by_name=False))
    except ValueError as exc:
        return exc


# -- tools and results -------------------------------------------------------------------------


def _tools(conns: Sequence[_Connection]) -> list[Tool[Any]]:
    tools: dict[str, Tool[Any]] = {}
    for conn in conns:
        for spec in conn.tools:
            name = mcp_tool_name(conn.server.name, spec.name)
            if name in tools:
                raise ConfigError(
                    f"MCP server {conn.server.name!r}: two tools map to the name {name!r}"
                )
            tools[name] = _tool(conn, spec, name)
    return list(tools.values())


def _tool(conn: _Connection, spec: McpTool, name: str) -> Tool[Any]:
    server, original = conn.server, spec.name

    async def call(arguments: Any, ctx: ToolContext) -> ToolResultData:
        try:
            result = await conn.call(original, arguments)
        except McpServerDiedError as exc:
            return ToolResultData(status="error", message=str(exc), error_kind="failed")
        except MCPError as exc:
            return ToolResultData(
                status="error",
                message=redact_secrets(
                    f"MCP server {server.name!r} refused the call to {original!r}: {exc.message}"
                ),
                error_kind="failed",
            )
        return result_data(result)

    schema: dict[str, Any] = dict(spec.input_schema)
    schema.setdefault("type", "object")
    return Tool(
        name=name,
        description=spec.description or spec.title or original,
        do=call,
        json_schema=schema,
        permission=server.permission,
        timeout_s=server.call_timeout_s,
        parallel_safe=bool(spec.annotations and spec.annotations.read_only_hint),
        max_retries=0,  # the server decides; a remote call is never repeated behind its back
    )


def result_data(result: CallToolResult) -> ToolResultData:
    """An MCP tool result as ours (see the module docstring)."""
    texts: list[str] = []
    media: list[ContentPart] = []
    for block in result.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif isinstance(block, ImageContent):
            source = ContentSource(type="base64", media_type=block.mime_type, data=block.data)
            media.append(ContentPart(type="image", source=source))
        elif isinstance(block, ResourceLink):
            texts.append(f"[resource: {block.uri}]")
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, BlobResourceContents):
                texts.append(f"[resource: {resource.uri} ({resource.mime_type or 'binary'})]")
            else:
                texts.append(resource.text)
        else:  # audio: no provider takes it in a tool result
            texts.append(f"[{block.type}: {block.mime_type}]")
    text = "\n".join(texts)
    if result.is_error:
        return ToolResultData(
            status="error", message=text or "the tool failed", error_kind="failed"
        )
    data: Any = text if texts or result.structured_content is None else result.structured_content
    if not media:
        return ToolResultData(status="success", data=data)
    parts = ((ContentPart(type="text", text=text),) if text else ()) + tuple(media)
    return ToolResultData(status="success", data=data, content=parts)
