"""Claude Code's own wire format, typed: ``--output-format stream-json`` lines and the control
protocol of ``--input-format stream-json`` (measured on Claude Code 2.1.330, docs/runtimes.md §1.5–1.10).

Speed first (docs/architecture.md, Speed targets): most lines of a streamed turn are small ``stream_event`` lines carrying
one text delta. :func:`decode_line` recognizes those by their fixed opening bytes and decodes only
the delta's string (the C string scanner behind :mod:`json`), returning a :class:`FastDelta`;
``input_json_delta`` and ``thinking_tokens`` lines, which the normalizer ignores, are recognized
the same way and not decoded at all (:data:`SKIP`). Everything else is decoded with ``orjson``
when it is installed, else stdlib :func:`json.loads`, and returned as the plain dict; the
normalizer dispatches on ``type`` / ``subtype`` / ``event.type`` strings before anything is built.
Rare frames (``system/init``, ``result``, ``api_retry``, ``permission_denied``,
``rate_limit_event``, control requests) are then read through the pydantic models below, which
ignore unknown fields and give every field a default, so a newer CLI never breaks the parse. Only
a line that is not a JSON object at all is a :class:`~orchestrator.core.errors.ProtocolError`.

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
import re
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
    "RateLimitWindow",
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

_STREAM: Final = re.compile(
    rb'\{"type":"stream_event","event":\{"type":"(?:'
    rb'content_block_delta","index":(\d{1,9}),"delta":\{"type":"(?:'
    rb'(?:text_delta","text|(thinking_delta","thinking))":"([^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*)"\}\},'
    rb'|(input_json_delta"))'
    rb'|(content_block_stop"|message_stop"|ping")'
    rb'|content_block_start","index":(\d{1,9}),"content_block":\{"type":"'
    rb'(?:text","text":""|(thinking","thinking":"","signature":""))\}\})'
)
"""The main agent's hot stream lines by their fixed opening bytes; ``lastindex`` says which:
3 a text (group 2 set: thinking) delta at index 1 with its raw string, 4 an ``input_json_delta``,
5 a stop or ping, 6 an empty text block start at index 6 (7: a thinking block). ``"`` cannot
appear unescaped inside a JSON string, so each key match is exact."""
_DELTA, _INPUT_JSON, _STOP, _START_TEXT, _START_THINKING = 3, 4, 5, 6, 7
_match_stream: Final = _STREAM.match
_INDEX: Final = {str(i).encode(): i for i in range(32)}
"""Small block indices by their bytes (``int()`` of bytes costs twice the lookup)."""
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


def decode_line(line: bytes | str) -> Line:
    """Decode one stdout line (see the module docstring for the three results).

    A main-agent stream line recognized by :data:`_STREAM` is returned without a full decode
    when it ends the way a whole line ends (``}``) and names no ``parent_tool_use_id``.

    Raises:
        ProtocolError: the line is not JSON, or not a JSON object.
    """
    if type(line) is bytes:
        m = _match_stream(line)
        if m is not None:
            which = m.lastindex
            if which == _DELTA:
                if line.endswith(b"}") and line.find(_MAIN_AGENT, m.end()) > 0:
                    raw: bytes = m[3]
                    try:
                        text = raw.decode("utf-8")
                        if b"\\" in raw:  # escapes: the C scanner of json reads them
                            text = _scan_string(text + '"', 0)[0]
                    except (UnicodeDecodeError, ValueError):
                        pass
                    else:
                        index = _INDEX.get(m[1])
                        return (
                            "assistant" if m[2] is None else "reasoning",
                            int(m[1]) if index is None else index,
                            text,
                        )
            elif which == _INPUT_JSON:
                return SKIP
            elif which == _STOP:
                if line.endswith(b"}"):
                    return SKIP
            elif line.endswith(b"}") and line.find(_MAIN_AGENT, m.end()) > 0:
                return ("assistant" if which == _START_TEXT else "reasoning", int(m[6]))
        elif line.startswith(_THINKING_TOKENS):
            return SKIP
    try:
        obj = _loads(line)
    except ValueError:
        obj = None
    if type(obj) is dict:
        return cast(dict[str, Any], obj)
    return json_object(line, _loads, runtime="claude", adapter="claude-code")  # raises


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


class RateLimitWindow(BaseModel):
    """One of ``unifiedWindows``: ``utilization`` is the fraction of the window used (0–1)."""

    model_config = _TOLERANT
    utilization: float | None = None
    resets_at: float | None = Field(default=None, alias="resetsAt")
    status: str | None = None


class RateLimitInfo(BaseModel):
    model_config = _TOLERANT
    status: str | None = None
    resets_at: float | None = Field(default=None, alias="resetsAt")
    rate_limit_type: str | None = Field(default=None, alias="rateLimitType")
    utilization: float | None = None
    """The fraction (0–1) of the ``rateLimitType`` window used."""
    unified_windows: dict[str, RateLimitWindow] | None = Field(default=None, alias="unifiedWindows")
    """Per window (``five_hour``, ``seven_day``, …) as the CLI read them from the
    ``anthropic-ratelimit-unified-*`` response headers."""


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
