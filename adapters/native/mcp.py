"""MCP servers for the native runtime: their tools, namespaced ``mcp__<server>__<tool>``.

::

    servers = [
        McpStdioServer("files", "python", ["-m", "my_files_server"]),
        McpHttpServer("search", "http://127.0.0.1:8931/mcp"),
    ]
    async with open_mcp_servers(servers) as hub:
        for t in hub.tools:             # our Tool objects, JSON Schema inputs as the server gave
            glove.add_tool(t)
        ...                             # every server lives until the block ends

The client is the official ``mcp`` package (it runs on anyio, which runs on trio). A stdio
server is spawned through :func:`adapters._process.open_child`, the one child-process driver of
every adapter: its own process group, an allow-listed environment (plus the server's ``env``),
a stderr tail with secrets redacted, termination of the whole group when the block ends (or our
process dies). A streamable-HTTP server is reached with an ``httpx2`` client carrying the
server's ``headers``.

Lifetime: :func:`open_mcp_servers` opens a nursery; each server has one *holder* task that owns
its transport and ``ClientSession`` and waits until the block ends, so the servers start in
parallel and close together, and no child outlives the block. A server that cannot start (spawn,
handshake, ``tools/list``, ``start_timeout_s``) stops the others and raises
:class:`~orchestrator.errors.McpStartError`. A server that dies while in use is reported once to
``on_died`` (a :class:`~orchestrator.errors.McpServerDiedError`); every call of its tools then
ends in an error result that says so, and the run goes on (the model can do without it).

Results: text parts are joined into the result's text, images ride along as content parts,
resources are rendered as text, ``structured_content`` is the data when there is no text; a
result with ``isError`` is an error result carrying its text.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import anyio
import attrs
import httpx2
import trio

from orchestrator.errors import (
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
from orchestrator.redact import register_secret

from .._process import ChildProcess, child_env, open_child
from .messages import ContentPart, ContentSource, ToolResultData
from .policy import Decision
from .tools import Tool, ToolContext

# The ``mcp`` client takes most of a second of CPU to import: it is imported when servers are
# opened (or a result converted), so the native runtime (and ``ringleader runtimes``) start
# without it.
if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.shared.message import SessionMessage
    from mcp_types import CallToolResult
    from mcp_types import Tool as McpTool

__all__ = [
    "McpHttpServer",
    "McpHub",
    "McpServer",
    "McpStdioServer",
    "mcp_result_data",
    "mcp_tool_name",
    "open_mcp_servers",
]

_NAME: Final = re.compile(r"^[A-Za-z0-9_-]+$")
_TOOL_CHARS: Final = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME: Final = 64
"""The longest tool name every provider accepts (Anthropic and OpenAI: 64)."""
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


def _server_name(_instance: object, _attribute: object, value: str) -> None:
    if not _NAME.match(value):
        raise ConfigError(
            f"MCP server name {value!r}: use letters, digits, '_' and '-' only "
            "(it becomes part of the tool names, mcp__<server>__<tool>)"
        )


def _timeout(_instance: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"MCP server {attribute.name}: must be a positive number of seconds")


def _strings(value: Sequence[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class McpStdioServer:
    """An MCP server run as a child process speaking JSON-RPC on its stdin and stdout."""

    name: str = attrs.field(validator=_server_name)
    command: str
    args: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    env: Mapping[str, str] = attrs.field(factory=dict[str, str])
    """Variables added to the allow-listed environment (``HOME`` is not passed unless set here)."""
    cwd: str | None = None
    """Default: the run's working directory."""
    permission: Decision = "allow"
    """The policy decision for its tools (a ``PermissionPolicy.tools`` entry for a namespaced
    name wins): configuring a server is consent to call it; ``ask`` or ``deny`` to gate it."""
    start_timeout_s: float = attrs.field(default=30.0, validator=_timeout)
    """Spawn, handshake and tool listing must finish within this."""
    call_timeout_s: float | None = attrs.field(default=None, validator=_timeout)
    """Each tool call's limit (a ``timeout`` error result); ``None``: none."""


@attrs.frozen
class McpHttpServer:
    """An MCP server reached over streamable HTTP at ``url`` (e.g. ``http://host:port/mcp``)."""

    name: str = attrs.field(validator=_server_name)
    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict[str, str])
    """Sent with every request (e.g. ``Authorization``); the values are redacted everywhere."""
    permission: Decision = "allow"
    start_timeout_s: float = attrs.field(default=30.0, validator=_timeout)
    call_timeout_s: float | None = attrs.field(default=None, validator=_timeout)

    def __attrs_post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"MCP server {self.name!r}: url must start with http:// or https://")


McpServer: TypeAlias = McpStdioServer | McpHttpServer
DiedCallback: TypeAlias = Callable[[McpServerDiedError], Awaitable[None]]


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` as the CLIs spell it: characters other than letters, digits,
    ``_`` and ``-`` become ``_``; a name past 64 characters is cut and given a short hash."""
    name = _TOOL_CHARS.sub("_", f"mcp__{server}__{tool}")
    if len(name) > MAX_TOOL_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[: MAX_TOOL_NAME - 9]}_{digest}"
    return name


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
    stop: trio.Event = attrs.field(factory=trio.Event)
    """Set to end the holder: the block ends, or the stdio child's output ended."""
    ended: trio.Event = attrs.field(factory=trio.Event)
    """Set when the holder has left its session (``died`` is final by then)."""

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
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        session = self.session
        assert session is not None
        try:
            return await session.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, trio.BrokenResourceError):
            pass
        # the connection broke under the call: let the holder record why, then report that
        with trio.move_on_after(_DEATH_REPORT_WAIT_S):
            await self.ended.wait()
        raise self.died or self.gone("the connection closed")


@attrs.define(eq=False)
class McpHub:
    """The servers of one :func:`open_mcp_servers` block and their tools (see the module
    docstring)."""

    _connections: list[_Connection]
    tools: list[Tool[Any]]
    """Every server's tools as our :class:`~.tools.Tool`, namespaced, in server order."""

    @property
    def servers(self) -> list[str]:
        return [c.server.name for c in self._connections]

    def died(self, server: str) -> McpServerDiedError | None:
        """Why ``server`` is gone (``None`` while it is alive)."""
        for conn in self._connections:
            if conn.server.name == server:
                return conn.died
        raise KeyError(server)


@asynccontextmanager
async def open_mcp_servers(
    servers: Sequence[McpServer],
    *,
    cwd: str | None = None,
    session_key: str | None = None,
    on_died: DiedCallback | None = None,
) -> AsyncGenerator[McpHub]:
    """Start every server (in parallel), list their tools, keep them until the block ends.

    Raises:
        ConfigError: two servers share a name, or two tools map to one name.
        McpStartError: a server could not start; the others are stopped first.
    """
    names = [s.name for s in servers]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"two MCP servers are named {name!r}")
    conns = [_Connection(server=s, session_key=session_key) for s in servers]
    failures: dict[int, McpStartError] = {}
    try:
        async with trio.open_nursery() as holders:

            async def start(index: int, conn: _Connection) -> None:
                try:
                    await holders.start(_hold, conn, cwd, on_died)
                except McpStartError as exc:
                    failures[index] = exc

            async with trio.open_nursery() as starters:
                for index, conn in enumerate(conns):
                    starters.start_soon(start, index, conn)
            try:
                if not failures:
                    yield McpHub(conns, _tools(conns))
            finally:
                for conn in conns:
                    conn.closing = True
                    conn.stop.set()
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
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Own one server's transport and session: start, report ready, wait, close."""
    from mcp import ClientSession

    server = conn.server
    started = False
    try:
        with trio.fail_after(server.start_timeout_s) as deadline:
            async with (
                _transport(conn, cwd) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                conn.tools = await _list_tools(session)
                conn.session = session
                deadline.deadline = math.inf
                started = True
                task_status.started()
                await conn.stop.wait()
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
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    leaves = exception_leaves(exc)
    leaf = leaves[0] if len(leaves) == 1 else exc
    if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
        return "the connection closed"
    text = str(leaf)
    return redact_secrets(f"{type(leaf).__name__}: {text}")


async def _list_tools(session: ClientSession) -> tuple[McpTool, ...]:
    from mcp_types import PaginatedRequestParams

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


if TYPE_CHECKING:  # annotations only (SessionMessage is imported when a server starts)
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
    from mcp.client.streamable_http import streamable_http_client

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
    from mcp.shared.message import SessionMessage

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
                conn.stop.set()  # output ended: the holder closes the session and reports

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
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

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
    from mcp.shared.exceptions import MCPError

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
        return mcp_result_data(result)

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
    )


def mcp_result_data(result: CallToolResult) -> ToolResultData:
    """An MCP tool result as ours (see the module docstring)."""
    from mcp_types import (
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
    )

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
