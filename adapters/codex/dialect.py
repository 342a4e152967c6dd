"""Codex's own wire formats, typed: ``codex exec --json`` lines and ``codex app-server`` JSON-RPC.

Both are decoded with ``orjson`` when it is installed (else the stdlib scanner; what ``orjson``
refuses, the stdlib decides) and dispatched on a string (``type`` for exec lines, ``method`` for
app-server messages) before anything else is built: the types below are ``TypedDict`` views of
the decoded objects, so parsing costs nothing beyond the decode. The one line that is the same
bytes every time, ``{"type":"turn.started"}``, is recognized without decoding. Other lines are not
cut apart by their opening bytes as Claude Code's deltas are: Codex lines are short and their
strings must be checked for escapes and control characters, and doing that in Python costs more
than ``orjson.loads`` of the whole line (2.8 µs against 0.6 µs for an app-server text delta;
measured 2026-11-26). Every field is optional and every accessor checks the type it reads, so unknown fields, missing
fields and unknown frame types never raise (docs/architecture.md, Contracts: dialects). Only a line that is
not a JSON object at all is a :class:`~orchestrator.core.errors.ProtocolError`.

Exec (measured on Codex 0.169.0, docs/runtimes.md §2.4–2.5)::

    {"type":"thread.started","thread_id":"01a2…"}
    {"type":"turn.started"}
    {"type":"item.started"|"item.updated"|"item.completed","item":{"id":"item_1","type":"agent_message",…}}
    {"type":"error","message":"Reconnecting... 1/2 (…)"}          (retries; a warning, not fatal)
    {"type":"turn.completed","usage":{"input_tokens":204,"cached_input_tokens":0,…}}
    {"type":"turn.failed","error":{"message":"…"}}

Item types: ``agent_message``, ``reasoning``, ``command_execution``, ``file_change``,
``mcp_tool_call``, ``web_search``, ``todo_list``, ``error`` (a non-fatal warning item).

App-server (docs/runtimes.md §2.9): one JSON object per line, no ``"jsonrpc"`` field; a message with
``id`` and ``result``/``error`` is a response, with ``id`` and ``method`` a server request (tool
approvals), with only ``method`` a notification.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, TypedDict, cast

from .._json import json_object
from .._jsonrpc import RpcKind, as_dict, as_int, as_str, rpc_kind

__all__ = [
    "EXEC_EVENT_TYPES",
    "EXEC_ITEM_TYPES",
    "AppItem",
    "ExecError",
    "ExecEvent",
    "ExecItem",
    "ExecUsage",
    "FileUpdate",
    "RpcKind",
    "RpcMessage",
    "TodoItem",
    "as_dict",
    "as_int",
    "as_str",
    "decode_exec_line",
    "decode_rpc_line",
    "rpc_kind",
]

EXEC_EVENT_TYPES: Final = frozenset(
    {
        "thread.started",
        "turn.started",
        "item.started",
        "item.updated",
        "item.completed",
        "error",
        "turn.completed",
        "turn.failed",
    }
)
"""The ``type`` values of ``codex exec --json`` lines this dialect knows."""

EXEC_ITEM_TYPES: Final = frozenset(
    {
        "agent_message",
        "reasoning",
        "command_execution",
        "file_change",
        "mcp_tool_call",
        "web_search",
        "todo_list",
        "error",
    }
)
"""The ``item.type`` values this dialect knows."""


class FileUpdate(TypedDict, total=False):
    path: str
    kind: str
    """``add`` | ``delete`` | ``update``."""


class TodoItem(TypedDict, total=False):
    text: str
    completed: bool


class ExecItem(TypedDict, total=False):
    """One item of a thread; which fields are present depends on ``type``."""

    id: str
    type: str
    text: str
    """agent_message, reasoning."""
    command: str
    aggregated_output: str
    exit_code: int | None
    status: str
    """``in_progress`` | ``completed`` | ``failed`` (| ``declined``)."""
    changes: list[FileUpdate]
    """file_change."""
    server: str
    tool: str
    arguments: Any
    result: Any
    error: Any
    """mcp_tool_call."""
    query: str
    """web_search."""
    items: list[TodoItem]
    """todo_list."""
    message: str
    """error item."""


class ExecUsage(TypedDict, total=False):
    input_tokens: int
    cached_input_tokens: int
    cache_write_input_tokens: int
    output_tokens: int
    reasoning_output_tokens: int


class ExecError(TypedDict, total=False):
    message: str


class ExecEvent(TypedDict, total=False):
    """One ``codex exec --json`` line."""

    type: str
    thread_id: str
    item: ExecItem
    usage: ExecUsage
    error: ExecError
    message: str


_scan_once: Final[Callable[[str, int], tuple[object, int]]] = cast(
    Any,
    json.JSONDecoder(),  # pyright: ignore[reportUnknownMemberType]
).scan_once
"""The C scanner behind ``json.loads``, called directly: no encoding sniffing, no whitespace
regexes (a third faster on Codex lines). Anything unusual falls back to ``json.loads``."""


try:  # orjson is optional (the bench extra); the stdlib scanner is the fallback
    from orjson import loads as _orjson_loads  # pyright: ignore[reportMissingImports, reportUnknownVariableType]
except ImportError:  # pragma: no cover - depends on the environment
    _orjson_loads = None

_fast_loads: Final[Callable[[bytes | str], object] | None] = cast(Any, _orjson_loads)


def _stdlib_loads(line: bytes | str) -> object:
    """What ``orjson`` refuses (NaN, huge integers, lone surrogates …) the stdlib decides;
    raises ``ValueError`` for a line that is not JSON."""
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
        obj, end = _scan_once(text, 0)
        if end == len(text):
            return obj
    except (StopIteration, ValueError):
        pass
    return json.loads(line)


def _loads(line: bytes | str) -> object:
    if _fast_loads is not None:
        try:
            return _fast_loads(line)
        except ValueError:
            pass
    return _stdlib_loads(line)


def _object(line: bytes | str, what: str) -> dict[str, Any]:
    """One line as a JSON object (the slow path: error reporting and the stdlib fallback)."""
    return json_object(line, _loads, runtime=what, adapter="codex")


_TURN_STARTED: Final = b'{"type":"turn.started"}'
"""The one exec line that is the same bytes every time (no decoding needed)."""


def decode_exec_line(line: bytes | str) -> ExecEvent:
    """Decode one stdout line. Raises :class:`ProtocolError` unless it is a JSON object.

    An object without a string ``type`` is returned as is; the normalizer treats it as unknown.
    """
    if type(line) is bytes:
        if line == _TURN_STARTED:
            return {"type": "turn.started"}
        if _fast_loads is not None:
            try:
                obj: Any = _fast_loads(line)
            except ValueError:
                pass
            else:
                if type(obj) is dict:  # (no ``cast``: a function call per line)
                    return obj  # pyright: ignore[reportReturnType, reportUnknownVariableType]
    return cast(ExecEvent, _object(line, "codex"))


# ---------------------------------------------------------------------------------- app-server


class RpcMessage(TypedDict, total=False):
    """One app-server message (either direction)."""

    id: int | str
    method: str
    params: Any
    result: Any
    error: Any


class AppItem(TypedDict, total=False):
    """An app-server thread item (camelCase: ``agentMessage``, ``commandExecution`` …)."""

    id: str
    type: str
    text: str
    summary: list[str]
    content: Any
    command: str
    aggregatedOutput: str | None
    exitCode: int | None
    status: str
    changes: list[Any]
    server: str
    tool: str
    arguments: Any
    result: Any
    error: Any
    query: str


def decode_rpc_line(line: bytes | str) -> RpcMessage:
    """Decode one app-server line; raises :class:`ProtocolError` unless it is a JSON object."""
    if _fast_loads is not None:
        try:
            obj: Any = _fast_loads(line)
        except ValueError:
            pass
        else:
            if type(obj) is dict:
                return obj  # pyright: ignore[reportReturnType, reportUnknownVariableType]
    return cast(RpcMessage, _object(line, "codex app-server"))
