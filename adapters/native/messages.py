"""The native loop's data model (Glove's, in Python): messages, tool calls and results, tasks, inbox.

Tool calls live on an *agent* message; their results live on the *user* message that follows it
(Glove's layout). ``render_data`` on a result is for UIs only: no formatter ever sends it to a
model. Every flag (``is_compaction`` …) is part of the model and is persisted by every store (the
glove-sqlite loss of ``is_compaction`` is a bug we do not copy).

Models are frozen pydantic models so they serialize for the SQLite store and the session codec;
the loop builds them on its hot path with ordinary construction (a few µs each).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeAlias

import attrs
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "ContentPart",
    "ContentSource",
    "InboxItem",
    "InboxStatus",
    "Message",
    "PermissionStatus",
    "ReasoningBlock",
    "Sender",
    "Task",
    "TaskStatus",
    "TokenCounter",
    "ToolCall",
    "ToolErrorKind",
    "ToolResult",
    "ToolResultData",
    "ToolResultStatus",
    "format_tool_result_content",
    "messages_from_json",
    "messages_to_json",
    "repair_history",
    "split_at_last_compaction",
]

Sender: TypeAlias = Literal["user", "agent"]
ToolResultStatus: TypeAlias = Literal["success", "error", "aborted"]
ToolErrorKind: TypeAlias = Literal[
    "invalid_input", "not_found", "denied", "timeout", "aborted", "failed"
]
"""Model-visible error taxonomy (Part D item 8)."""
TaskStatus: TypeAlias = Literal["pending", "in_progress", "completed"]
InboxStatus: TypeAlias = Literal["pending", "resolved", "consumed"]
PermissionStatus: TypeAlias = Literal["granted", "denied", "unset"]

_MODEL = ConfigDict(frozen=True, extra="ignore")


class ContentSource(BaseModel):
    model_config = _MODEL
    type: Literal["base64", "url"]
    media_type: str
    data: str | None = None
    url: str | None = None


class ContentPart(BaseModel):
    """A multimodal element: text, image, video or document."""

    model_config = _MODEL
    type: Literal["text", "image", "video", "document"]
    text: str | None = None
    source: ContentSource | None = None
    cache: bool | None = None
    """True: a prompt-cache breakpoint after this part (Anthropic ``cache_control``; providers
    that cache by prefix on their own ignore it). None when not set, so dumps without ``None``
    fields stay as they were."""


class ToolCall(BaseModel):
    """A tool call the model asked for. ``parse_error`` is set when its arguments were not JSON."""

    model_config = _MODEL
    tool_name: str
    input_args: Any = None
    id: str = ""
    parse_error: str | None = None


class ToolResultData(BaseModel):
    """What a tool produced. Only ``status``, ``data`` and ``message`` ever reach the model."""

    model_config = _MODEL
    status: ToolResultStatus
    data: Any = None
    message: str | None = None
    render_data: Any = None
    """Client-only payload (UI replay); stripped by every model formatter."""
    error_kind: ToolErrorKind | None = None
    content: tuple[ContentPart, ...] | None = None
    """Rich result content (e.g. images) for providers that accept it."""

    @property
    def is_error(self) -> bool:
        return self.status != "success"


class ToolResult(BaseModel):
    model_config = _MODEL
    tool_name: str
    call_id: str
    result: ToolResultData
    duration_ms: float | None = None


class ReasoningBlock(BaseModel):
    """A thinking block, kept with its signature so it can be echoed back (C#45)."""

    model_config = _MODEL
    text: str = ""
    signature: str | None = None
    redacted_data: str | None = None


class Message(BaseModel):
    """One conversation message (there is no system role: the system prompt is on the model)."""

    model_config = _MODEL
    sender: Sender
    text: str = ""
    id: str | None = None
    content: tuple[ContentPart, ...] | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    tool_results: tuple[ToolResult, ...] | None = None
    is_compaction: bool = False
    is_compaction_request: bool = False
    is_skill_injection: bool = False
    is_steer: bool = False
    """Text that arrived mid-run through ``write_context`` / ``steer``."""
    pre_modified_text: str | None = None
    """The text the user typed, when a hook's ``rewrite_text`` changed it."""
    reasoning: tuple[ReasoningBlock, ...] | None = None
    stop_reason: str | None = None


class Task(BaseModel):
    model_config = _MODEL
    id: str
    content: str
    active_form: str = Field(default="")
    status: TaskStatus = "pending"


class InboxItem(BaseModel):
    model_config = _MODEL
    id: str
    tag: str
    request: str
    response: str | None = None
    status: InboxStatus = "pending"
    blocking: bool = False
    created_at: str = ""
    resolved_at: str | None = None


@attrs.frozen
class TokenCounter:
    """One model call's tokens (``tokens_in`` includes cached prompt tokens).

    A plain attrs class, not pydantic: the loop adds these on every turn.
    """

    tokens_in: int = 0
    tokens_out: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __add__(self, other: TokenCounter) -> TokenCounter:
        return TokenCounter(
            self.tokens_in + other.tokens_in,
            self.tokens_out + other.tokens_out,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
        )


_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def messages_to_json(messages: Iterable[Message]) -> str:
    return _MESSAGES.dump_json(list(messages), exclude_defaults=True).decode()


def messages_from_json(data: str | bytes) -> list[Message]:
    return _MESSAGES.validate_json(data)


def split_at_last_compaction(messages: Sequence[Message]) -> Sequence[Message]:
    """The slice starting at the last ``is_compaction`` message (all of it when there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].is_compaction:
            return messages[i:]
    return messages


NO_RESULT = "No result available"


def repair_history(messages: Sequence[Message]) -> list[Message]:
    """Make a history valid for any provider (pure; property-tested).

    * tool results whose call id was already answered are dropped (dedupe by id), until a
      later call reuses that id (a provider that repeats ids): its result is kept;
    * tool results that answer no earlier open call are dropped;
    * every tool call left without a result right after its message gets a synthetic
      ``error`` result ``"No result available"`` in a user message inserted after it.

    Merging consecutive same-role messages is the formatters' job (their shapes differ).
    """
    out: list[Message] = []
    open_calls: dict[str, str] = {}
    answered: set[str] = set()

    def close_open() -> None:
        if not open_calls:
            return
        patch = _patches(open_calls)
        answered.update(open_calls)
        open_calls.clear()
        out.append(Message(sender="user", text="tool results", tool_results=patch))

    for msg in messages:
        if msg.tool_results:
            kept_list: list[ToolResult] = []
            for r in msg.tool_results:
                if r.call_id in open_calls:
                    del open_calls[r.call_id]
                    answered.add(r.call_id)
                    kept_list.append(r)
            kept = tuple(kept_list)
            if open_calls and kept:
                kept += _patches(open_calls)
                answered.update(open_calls)
                open_calls.clear()
            close_open()
            if kept != msg.tool_results:
                if not kept and not msg.content:
                    continue
                msg = msg.model_copy(update={"tool_results": kept or None})
            out.append(msg)
            continue
        close_open()
        out.append(msg)
        if msg.sender == "agent" and msg.tool_calls:
            for call in msg.tool_calls:
                if call.id:  # an id reused by a later call opens again: its result is kept
                    open_calls[call.id] = call.tool_name
                    answered.discard(call.id)
    close_open()
    return out


def _patches(open_calls: dict[str, str]) -> tuple[ToolResult, ...]:
    return tuple(
        ToolResult(
            tool_name=name,
            call_id=cid,
            result=ToolResultData(status="error", message=NO_RESULT, error_kind="aborted"),
        )
        for cid, name in open_calls.items()
    )


def format_tool_result_content(result: ToolResultData) -> str:
    """The text a model sees for a result (never ``render_data``)."""
    data = result.data
    body = "" if data is None else data if isinstance(data, str) else _json(data)
    if result.status == "success":
        return body
    label = "Aborted" if result.status == "aborted" else "Error"
    return f"{label}: {result.message or 'Unknown error'}\n{body}".strip()


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
