"""The Agent Client Protocol's wire format, as far as a client reads it (ACP protocol version 1).

ACP is JSON-RPC 2.0, one message per line on the agent's stdin/stdout. The client calls
``initialize``, ``session/new`` (or ``session/load``), ``session/prompt``, and notifies
``session/cancel``; the agent streams ``session/update`` notifications while a prompt runs and
calls back ``session/request_permission`` (and, if the client offered them, ``fs/*`` and
``terminal/*``). The prompt's response carries the ``stopReason`` and, optionally, the turn's
token ``usage``. Shapes measured on Hermes 0.19.0 (``tests/fixtures/hermes/``)::

    {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"…"}}
    {"sessionUpdate":"tool_call","toolCallId":"tc-…","kind":"execute","title":"terminal: echo hi",
     "content":[{"type":"content","content":{"type":"text","text":"$ echo hi"}}],"locations":[]}
    {"sessionUpdate":"tool_call_update","toolCallId":"tc-…","status":"completed","content":[…]}
    {"sessionUpdate":"usage_update","size":131072,"used":8857}           (context occupancy)
    {"stopReason":"end_turn","usage":{"inputTokens":20,"outputTokens":10,"cachedReadTokens":0,…}}

The types are ``TypedDict`` views over what ``json.loads`` gives (every field optional, every
accessor checks its type), so unknown fields and update kinds never raise. Our own models rather
than the ``agent-client-protocol`` package's: its runtime is asyncio, its schema models are
strict (an agent's slightly-off frame would raise), and Hermes pins an older release of it.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias, TypedDict

from .._jsonrpc import as_dict, as_int, as_list, as_str

__all__ = [
    "KNOWN_UPDATES",
    "PROTOCOL_VERSION",
    "STOP_REASONS",
    "AcpUsage",
    "SessionUpdate",
    "StopReason",
    "content_text",
    "tool_content_text",
    "usage_of",
]

PROTOCOL_VERSION: Final = 1

StopReason: TypeAlias = Literal[
    "end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"
]
STOP_REASONS: Final[frozenset[str]] = frozenset(
    {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
)

KNOWN_UPDATES: Final[frozenset[str]] = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "usage_update",
        "session_info_update",
    }
)
"""The ``sessionUpdate`` kinds of ACP v1 this client knows (others are counted as unknown)."""


class SessionUpdate(TypedDict, total=False):
    """One ``session/update``'s ``update`` object (all kinds in one view)."""

    sessionUpdate: str
    content: Any  # a content block (chunks) or a list of tool-call contents (tool calls)
    toolCallId: str
    title: str
    kind: str
    status: str
    rawInput: Any
    rawOutput: Any
    entries: list[Any]  # plan
    currentModeId: str
    size: int  # usage_update: context window
    used: int  # usage_update: tokens in context
    cost: dict[str, Any]  # usage_update: {"amount": float, "currency": "USD"} (cumulative)


class AcpUsage(TypedDict, total=False):
    inputTokens: int
    outputTokens: int
    cachedReadTokens: int
    cachedWriteTokens: int
    thoughtTokens: int
    totalTokens: int


def content_text(block: object) -> str:
    """The text of one content block (``text``, or a text ``resource``); '' for others."""
    data = as_dict(block)
    kind = as_str(data.get("type"))
    if kind == "text":
        return as_str(data.get("text"))
    if kind == "resource":
        return as_str(as_dict(data.get("resource")).get("text"))
    if kind == "resource_link":
        return as_str(data.get("uri"))
    return ""


def tool_content_text(contents: object) -> str:
    """The text of a tool call's ``content`` list (content blocks and diffs)."""
    parts: list[str] = []
    for item in as_list(contents):
        entry = as_dict(item)
        kind = as_str(entry.get("type"))
        if kind == "content":
            text = content_text(entry.get("content"))
        elif kind == "diff":
            text = f"diff {as_str(entry.get('path'))}"
        elif kind == "terminal":
            text = f"terminal {as_str(entry.get('terminalId'))}"
        else:
            text = ""
        if text:
            parts.append(text)
    return "\n".join(parts)


def usage_of(result: object) -> AcpUsage | None:
    """The prompt response's ``usage`` (``None`` when absent — Hermes omits it on failure).
    Also reads a message chunk's ``_meta.usage`` (Qwen Code's per-model-call usage)."""
    data = as_dict(result)
    raw = as_dict(data.get("usage")) or as_dict(as_dict(data.get("_meta")).get("usage"))
    if not raw:
        return None
    usage: AcpUsage = {}
    for key in (
        "inputTokens",
        "outputTokens",
        "cachedReadTokens",
        "cachedWriteTokens",
        "thoughtTokens",
        "totalTokens",
    ):
        value = as_int(raw.get(key))
        if value is not None:
            usage[key] = value
    return usage
