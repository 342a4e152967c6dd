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
:class:`~orchestrator.core.errors.McpStartError`. A server that dies while in use is reported once to
``on_died`` (a :class:`~orchestrator.core.errors.McpServerDiedError`); every call of its tools then
ends in an error result that says so, and the run goes on (the model can do without it). A
server's ``notifications/tools/list_changed`` re-lists its tools into :attr:`McpHub.tools` and
calls ``on_tools_changed``; a tool call whose server announced a change before answering
returns only once the new list is applied (so the model's next turn sees it).

Results: text parts are joined into the result's text, images ride along as content parts,
resources are rendered as text, ``structured_content`` is the data when there is no text; a
result with ``isError`` is an error result carrying its text.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

import attrs

from orchestrator.core.errors import ConfigError, McpServerDiedError

from .policy import Decision
from .tools import Tool

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from .messages import ToolResultData

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
ChangedCallback: TypeAlias = Callable[["McpHub"], Awaitable[None]]
"""Called after a server's ``tools/list_changed`` was applied to :attr:`McpHub.tools`."""


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` as the CLIs spell it: characters other than letters, digits,
    ``_`` and ``-`` become ``_``; a name past 64 characters is cut and given a short hash."""
    name = _TOOL_CHARS.sub("_", f"mcp__{server}__{tool}")
    if len(name) > MAX_TOOL_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[: MAX_TOOL_NAME - 9]}_{digest}"
    return name


class _Connection(Protocol):
    server: McpServer
    died: McpServerDiedError | None
    tools: tuple[Any, ...]


@attrs.define(eq=False)
class McpHub:
    """The servers of one :func:`open_mcp_servers` block and their tools (see the module
    docstring)."""

    _connections: Sequence[_Connection]
    tools: list[Tool[Any]]
    """Every server's tools as our :class:`~.tools.Tool`, namespaced, in server order."""

    @property
    def servers(self) -> list[str]:
        return [c.server.name for c in self._connections]

    def describe(self) -> str:
        """``mcp: files (3 tools), search (1 tool)`` — what the run is connected to."""
        parts = [
            f"{c.server.name} ({len(c.tools)} tool{'' if len(c.tools) == 1 else 's'})"
            for c in self._connections
        ]
        return "mcp: " + ", ".join(parts)

    def died(self, server: str) -> McpServerDiedError | None:
        """Why ``server`` is gone (``None`` while it is alive)."""
        for conn in self._connections:
            if conn.server.name == server:
                return conn.died
        raise KeyError(server)


def open_mcp_servers(
    servers: Sequence[McpServer],
    *,
    cwd: str | None = None,
    session_key: str | None = None,
    on_died: DiedCallback | None = None,
    on_tools_changed: ChangedCallback | None = None,
) -> AbstractAsyncContextManager[McpHub]:
    """Start every server (in parallel), list their tools, keep them until the block ends.

    The ``mcp`` package is imported here, on first use (it costs about 1.5 s to import).

    Raises:
        ConfigError: two servers share a name, or two tools map to one name.
        McpStartError: a server could not start; the others are stopped first.
    """
    from ._mcp_client import open_servers

    return open_servers(
        servers,
        cwd=cwd,
        session_key=session_key,
        on_died=on_died,
        on_tools_changed=on_tools_changed,
    )


def mcp_result_data(result: CallToolResult) -> ToolResultData:
    """An MCP tool result as ours (see the module docstring)."""
    from ._mcp_client import result_data

    return result_data(result)
