"""Claude Code's own wire format, typed: ``--output-format stream-json`` lines and the control
protocol of ``--input-format stream-json`` (measured on Claude Code 2.1.330, runtimes.md §1.5–1.10).

Speed first (DESIGN §9): most lines of a streamed turn are small ``stream_event`` lines carrying
one text delta. :func:`decode_line` recognizes those by their fixed opening bytes and decodes only
the delta's string (the C string scanner behind :mod:`json`), returning a :class:`FastDelta`;
``input_json_delta`` and ``thinking_tokens`` lines, which the normalizer ignores, are recognized
the same way and not decoded at all (:data:`SKIP`). Everything else is decoded with ``orjson``
when it is installed, else stdlib :func:`json.loads`, and returned as the plain dict; the
normalizer dispatches on ``type`` / ``subtype`` / ``event.type`` strings before anything is built.
Rare frames (``system/init``, ``result``, ``api_retry``, ``permission_denied``,
``rate_limit_event``, control requests) are then read through the pydantic models below, which
ignore unknown fields and give every field a default, so a newer CLI never breaks the parse. Only
a line that is not a JSON object at all is a :class:`~orchestrator.errors.ProtocolError`.

Line kinds (``type``; ``subtype`` for ``system``):

=====================  ===========================================================================
``system/init``        session id, model, cwd, tools (one per turn in long-lived mode)
``system/status``      ``status: "requesting"`` before each model request
``system/api_retry``   ``attempt``, ``max_retries``, ``retry_delay_ms``, ``error_status``, ``error``
``system/permission_denied``  ``tool_name``, ``tool_use_id``, ``message``
``system/…``           ``thinking_tokens``, ``compact_boundary``, ``hook_*``, ``task_*``, …
``stream_event``       a raw Anthropic SSE event (``message_start``, ``content_block_start|delta|
                       stop``, ``message_delta``, ``message_stop``) with ``--include-partial-messages``
``assistant``          one complete content block (text, thinking, tool_use) of a message; arrives
                       *before* that block's ``content_block_stop``
``user``               tool results (``tool_result`` blocks), or an echo / interruption marker
``result``             the end of a turn: usage, cost, ``is_error``, ``terminal_reason``
``rate_limit_event``   ``rate_limit_info{status, resetsAt, rateLimitType}``
``control_request``    long-lived mode: ``can_use_tool`` permission prompts from the CLI
``control_response``   long-lived mode: answers to our ``initialize`` / ``interrupt`` / ``set_model``
=====================  ===========================================================================
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field

from .._json import as_dict as as_dict
from .._json import as_int as as_int
from .._json import as_list as as_list
from .._json import as_str as as_str
from .._json import json_object

__all__ = [
    "SKIP",
    "ApiRetryLine",
    "BlockStart",
    "CanUseToolRequest",
    "ControlResponse",
    "FastDelta",
    "InitLine",
    "Line",
    "ModelUsageEntry",
    "PermissionDeniedLine",
    "RateLimitInfo",
    "RateLimitLine",
    "ResultLine",
    "ResultUsage",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "decode_line",
    "encode_line",
]

# ---------------------------------------------------------------------------------- decoding

FastDelta: TypeAlias = tuple[Literal["assistant", "reasoning"], int, str]
"""A streamed ``text_delta`` / ``thinking_delta`` of the main agent: (channel, block index, text)."""

SKIP: Final[tuple[()]] = ()
"""A line the normalizer ignores, recognized without decoding it (``input_json_delta``,
``system/thinking_tokens``)."""

Line: TypeAlias = "dict[str, Any] | FastDelta | BlockStart | tuple[()]"
"""What :func:`decode_line` gives: a decoded JSON object, a :data:`FastDelta`, a
:data:`BlockStart`, or :data:`SKIP`."""

_HEAD: Final = b'{"type":"stream_event","event":{"type":"'
_DELTA: Final = b'content_block_delta","index":'
_MID: Final = b',"delta":{"type":"'
_TEXT: Final = b'text_delta","text":"'
_THINKING: Final = b'thinking_delta","thinking":"'
_INPUT_JSON: Final = b'input_json_delta"'
_STOPS: Final = (b'content_block_stop"', b'message_stop"', b'ping"')
_START: Final = b'content_block_start","index":'
_START_TEXT: Final = b',"content_block":{"type":"text","text":""}}'
_START_THINKING: Final = b',"content_block":{"type":"thinking","thinking":"","signature":""}}'
_THINKING_TOKENS: Final = b'{"type":"system","subtype":"thinking_tokens",'
_MAIN_AGENT: Final = b'"parent_tool_use_id":null'

BlockStart: TypeAlias = tuple[Literal["assistant", "reasoning"], int]
"""A main-agent ``content_block_start`` of an empty text or thinking block: (channel, index)."""

_scan_string: Final[Callable[[str, int], tuple[str, int]]] = cast(
    Any,
    json.decoder,  # pyright: ignore[reportUnknownMemberType]
).scanstring
"""The C string scanner behind :func:`json.loads` (``scanstring(text, after_quote)``)."""

try:  # orjson is optional (the bench extra); stdlib json is the fallback
    from orjson import loads as _loads_impl  # pyright: ignore[reportMissingImports, reportUnknownVariableType]
except ImportError:  # pragma: no cover - depends on the environment
    _loads_impl = json.loads

_loads: Final[Callable[[bytes | str], object]] = cast(Any, _loads_impl)

_HEAD_LEN: Final = len(_HEAD)
_DELTA_AT: Final = _HEAD_LEN + len(_DELTA)
_START_AT: Final = _HEAD_LEN + len(_START)


def _index(line: bytes, at: int, follow: bytes) -> tuple[int, int] | None:
    """The block index written at ``at`` and where ``follow`` (which must come next) ends."""
    if line.startswith(follow, at + 1) and 48 <= line[at] <= 57:  # one digit: the usual case
        return line[at] - 48, at + 1 + len(follow)
    end = line.find(follow, at, at + 12 + len(follow))
    if end < 0 or not line[at:end].isdigit():
        return None
    return int(line[at:end]), end + len(follow)


def _fast(line: bytes) -> Line | None:
    """A main-agent stream line recognized from its fixed opening bytes, or ``None`` to decode
    the line fully. Only lines that end the way a whole line ends (``}``) and name no
    ``parent_tool_use_id`` qualify (``"`` cannot appear unescaped inside a JSON string, so the
    key match is exact)."""
    if line.startswith(_DELTA, _HEAD_LEN):
        found = _index(line, _DELTA_AT, _MID)
        if found is None:
            return None
        index, at = found
        if line.startswith(_TEXT, at):
            channel: Literal["assistant", "reasoning"] = "assistant"
            at += len(_TEXT)
        elif line.startswith(_THINKING, at):
            channel = "reasoning"
            at += len(_THINKING)
        elif line.startswith(_INPUT_JSON, at):
            return SKIP
        else:
            return None
        end = line.find(b'"', at)
        if end < 0:
            return None
        if line.find(b"\\", at, end) < 0:
            try:
                value = line[at:end].decode("utf-8")
            except UnicodeDecodeError:
                return None
            end += 1
        else:  # escapes: let the C scanner read the string (offsets before ``at`` are ASCII)
            try:
                text = line.decode("utf-8")
                value, end = _scan_string(text, at)
            except (UnicodeDecodeError, ValueError):
                return None
            end = len(text[:end].encode("utf-8", "surrogatepass"))
        if not (
            line.startswith(b"}},", end) and line.endswith(b"}") and line.find(_MAIN_AGENT, end) > 0
        ):
            return None
        return (channel, index, value)
    if line.startswith(_STOPS, _HEAD_LEN):
        return SKIP if line.endswith(b"}") else None
    if line.startswith(_START, _HEAD_LEN):
        found = _index(line, _START_AT, b",")
        if found is None:
            return None
        index, at = found
        at -= 1
        if line.startswith(_START_TEXT, at):
            channel = "assistant"
        elif line.startswith(_START_THINKING, at):
            channel = "reasoning"
        else:
            return None
        if line.endswith(b"}") and line.find(_MAIN_AGENT, at) > 0:
            return (channel, index)
    return None


def decode_line(line: bytes | str) -> Line:
    """Decode one stdout line (see the module docstring for the three results).

    Raises:
        ProtocolError: the line is not JSON, or not a JSON object.
    """
    if isinstance(line, bytes):
        if line.startswith(_HEAD):
            fast = _fast(line)
            if fast is not None:
                return fast
        elif line.startswith(_THINKING_TOKENS):
            return SKIP
    return json_object(line, _loads, runtime="claude", adapter="claude-code")


def encode_line(message: dict[str, Any]) -> bytes:
    """One stdin line for the long-lived protocol (compact JSON, no newline)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


# ---------------------------------------------------------------------------------- typed frames

_TOLERANT = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class InitLine(BaseModel):
    """``system/init``: the session is named (one per turn in long-lived mode)."""

    model_config = _TOLERANT
    session_id: str = ""
    model: str | None = None
    cwd: str | None = None
    tools: tuple[str, ...] = ()
    permission_mode: str | None = Field(default=None, alias="permissionMode")
    claude_code_version: str | None = None


class ApiRetryLine(BaseModel):
    """``system/api_retry``: a model request failed and the CLI retries it."""

    model_config = _TOLERANT
    attempt: int | None = None
    max_retries: int | None = None
    retry_delay_ms: float | None = None
    error_status: int | None = None
    error: str | None = None


class PermissionDeniedLine(BaseModel):
    """``system/permission_denied``: the CLI refused a tool call."""

    model_config = _TOLERANT
    tool_name: str = ""
    tool_use_id: str = ""
    message: str = ""


class RateLimitInfo(BaseModel):
    model_config = _TOLERANT
    status: str | None = None
    resets_at: float | None = Field(default=None, alias="resetsAt")
    rate_limit_type: str | None = Field(default=None, alias="rateLimitType")


class RateLimitLine(BaseModel):
    """``rate_limit_event``: the account's rate-limit state changed."""

    model_config = _TOLERANT
    rate_limit_info: RateLimitInfo = RateLimitInfo()


class ModelUsageEntry(BaseModel):
    """One model's figures in ``modelUsage`` / ``model_usage_since_last_result`` (camelCase)."""

    model_config = _TOLERANT
    input_tokens: int = Field(default=0, alias="inputTokens")
    output_tokens: int = Field(default=0, alias="outputTokens")
    cache_read_input_tokens: int = Field(default=0, alias="cacheReadInputTokens")
    cache_creation_input_tokens: int = Field(default=0, alias="cacheCreationInputTokens")
    cost_usd: float | None = Field(default=None, alias="costUSD")
    context_window: int | None = Field(default=None, alias="contextWindow")


class ResultUsage(BaseModel):
    """``result.usage`` (Anthropic's snake_case; ``input_tokens`` excludes the cache)."""

    model_config = _TOLERANT
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class ResultLine(BaseModel):
    """``result``: the end of one turn.

    ``subtype`` says ``success`` even on API errors: ``is_error`` and ``terminal_reason``
    (``completed``, ``api_error``, ``max_turns``, ``aborted_streaming``, …) tell the truth.
    In long-lived mode ``usage`` is the turn's, ``total_cost_usd`` and ``modelUsage`` are the
    process's cumulative figures and ``model_usage_since_last_result`` is the turn's per model.
    """

    model_config = _TOLERANT
    subtype: str = ""
    is_error: bool = False
    result: str | None = None
    session_id: str = ""
    num_turns: int | None = None
    total_cost_usd: float | None = None
    usage: ResultUsage | None = None
    model_usage: dict[str, ModelUsageEntry] | None = Field(default=None, alias="modelUsage")
    model_usage_since_last_result: dict[str, ModelUsageEntry] | None = None
    terminal_reason: str | None = None
    stop_reason: str | None = None
    api_error_status: int | None = None
    errors: tuple[str, ...] = ()
    queued_turn_count: int | None = None
    result_index: int | None = None


class CanUseToolRequest(BaseModel):
    """``control_request{can_use_tool}``: the CLI asks whether a tool may run."""

    model_config = _TOLERANT
    tool_name: str = ""
    input: dict[str, Any] = Field(default_factory=dict[str, Any])
    tool_use_id: str | None = None
    description: str | None = None
    blocked_path: str | None = None
    decision_reason: str | None = None


class ControlResponse(BaseModel):
    """``control_response.response``: the answer to one of our control requests."""

    model_config = _TOLERANT
    subtype: str = ""
    request_id: str = ""
    error: str | None = None
    response: dict[str, Any] | None = None
