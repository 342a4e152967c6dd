"""Claude Code lines → ringleader events: pure functions of (line, state, event factory).

No I/O and no clock (the factory carries the injected clock). :func:`normalize_line` returns the
events for one decoded line (:func:`~.dialect.decode_line`), or ``None`` when the line is of a
kind it does not know (the adapter then counts it with
:meth:`~adapters._runs.RunEmitter.note_unknown`). Streamed text is held in the state and goes out
as one ``text-delta`` per run of consecutive deltas: before any other event, and at the end of
each batch of lines the adapter read (:func:`flush_text`). Deltas that arrive together are thus
joined (never lost or reordered), and a delta that arrives alone goes out alone.

=============================  =====================================================================
``system/init``                ``status{init, model}`` (the adapter binds the session id as run id)
``system/status`` requesting   ``status{thinking}`` (a model request is under way)
``system/api_retry``           ``status{running, detail: "api_retry 1/2: server_error (HTTP 500) …"}``;
                               a 429 is ``status{rate_limited, resets_at}`` (now + the CLI's
                               ``retry_delay_ms``: it honours ``retry-after`` and waits itself)
``rate_limit_event``           ``rejected``: ``status{rate_limited, resets_at}``; another status
                               but ``allowed`` (a warning): ``status{running, detail}``
``system/permission_denied``   the tool's ``tool-result{is_error}`` with the CLI's message
``system/compact_boundary``    ``status{running, detail: "context compacted"}``
stream ``text_delta``          ``text-delta{assistant}``; ``thinking_delta`` → ``text-delta{reasoning}``
stream ``message_delta``       ``cost``: the run's usage so far (USD unknown until the result)
``assistant`` text/thinking    only what the deltas did not already carry (all of it without
                               ``--include-partial-messages``); a sub-agent's text (a line with a
                               ``parent_tool_use_id``) goes to the reasoning channel
``assistant`` tool_use         ``tool-call`` (whole input; ``partial`` is never used)
``user`` tool_result           ``tool-result`` (text blocks joined); ignored if already answered;
                               a call our permission policy denied starts ``[declined]``
``result``                     ``cost`` (the run's usage with cache tokens, and USD), then one
                               terminal group: aborted (our abort, or ``terminal_reason``
                               ``aborted_*``) → ``done{aborted}``; max turns → ``done{max_turns}``;
                               ``is_error`` false and subtype ``success`` → ``done{success}``;
                               anything else → ``error{fatal, code}`` + ``done{error}``. ``is_error:
                               true`` is a failure even when ``subtype`` says ``success``.
=============================  =====================================================================

A ``result`` with ``queued_turn_count > 0`` in long-lived mode means a message the host steered in
mid-run became a turn of its own: the run goes on to that turn's result (``status{turn-complete}``
in between), as the native runtime's steering does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, cast

import attrs

from orchestrator.core.drift import note_missing_fields
from orchestrator.core.errors import redact_secrets
from orchestrator.core.events import (
    EventFactory,
    QuotaWindow,
    RuntimeEvent,
    TextChannel,
    Usage,
    usage_of,
)
from orchestrator.core.refusals import DECLINED_MARK

from .dialect import (
    ApiRetryLine,
    InitLine,
    Line,
    ModelUsageEntry,
    PermissionDeniedLine,
    RateLimitInfo,
    RateLimitLine,
    ResultLine,
    as_dict,
    as_int,
    as_list,
    as_str,
)

__all__ = [
    "ClaudeState",
    "classify_result",
    "flush_text",
    "frame_label",
    "normalize_line",
    "normalize_lines",
    "result_usage",
]

_IGNORED_TYPES: Final = frozenset(
    {
        "control_request",
        "control_response",
        "control_cancel_request",
        "keep_alive",
        "tool_progress",
        "tool_use_summary",
        "auth_status",
        "prompt_suggestion",
        "streamlined_text",
        "streamlined_tool_use_summary",
    }
)
"""Line types that carry nothing for the event stream (control lines are the adapter's)."""

_IGNORED_SYSTEM: Final = frozenset(
    {
        "thinking_tokens",
        "hook_started",
        "hook_progress",
        "hook_response",
        "task_started",
        "task_progress",
        "task_notification",
        "task_updated",
        "files_persisted",
        "local_command_output",
        "elicitation_complete",
        "informational",
    }
)
_IGNORED_STREAM: Final = frozenset({"content_block_stop", "message_stop", "ping", "error"})


_list = cast(Callable[[], list[Any]], list)
_dict = cast(Callable[[], dict[Any, Any]], dict)
_set = cast(Callable[[], set[Any]], set)
"""Typed factories for the state's containers (``list[str]`` as a factory costs 7× ``list``)."""


@attrs.define(slots=True)
class _Block:
    """A text or thinking block being streamed: how much arrived as deltas."""

    channel: TextChannel
    chars: int = 0
    claimed: bool = False


@attrs.define(slots=True)
class ClaudeState:
    """What one run remembers between lines."""

    model: str | None = None
    """The run's model (from ``StartOpts``, then from ``system/init``)."""
    session_id: str | None = None
    text: list[str] = attrs.field(factory=_list)
    """The run's assistant text (the summary when there is no result text)."""
    pending: list[str] = attrs.field(factory=_list)
    """Deltas not yet emitted (see :func:`flush_text`)."""
    pending_channel: TextChannel = "assistant"
    message_id: str | None = None
    """The message being streamed (from ``message_start``)."""
    blocks: dict[int, _Block] = attrs.field(factory=_dict)
    """That message's streamed text/thinking blocks by index."""
    message_usage: dict[str, Any] = attrs.field(factory=_dict)
    stream_totals: list[int] = attrs.field(factory=lambda: [0, 0, 0, 0])
    """Usage of the run's finished model requests from the stream: input (with the cache),
    output, cache read, cache write."""
    result_usage: Usage | None = None
    result_cost_usd: float | None = None
    """Usage and USD of the run from its ``result`` lines."""
    base_cost_usd: float = 0.0
    """Long-lived mode: the process's cumulative USD before this run (only used when the CLI
    does not report ``model_usage_since_last_result``)."""
    closed_tools: set[str] = attrs.field(factory=_set)
    results: int = 0
    aborting: bool = False
    """Set by the adapter when the host aborted the run: its result ends in ``done{aborted}``."""
    last_retry: str | None = None
    api_error_text: str | None = None
    """The CLI's synthetic "API Error: …" assistant message (reported by the result)."""
    result: ResultLine | None = None
    """The terminal ``result`` line, once seen."""
    drift_noted: set[str] = attrs.field(factory=_set)
    """Frames already reported for missing expected fields (drift)."""
    declined: set[str] = attrs.field(factory=_set)
    """Calls our permission policy denied (by ``tool_use_id``): their failed result's output
    starts with :data:`~orchestrator.core.refusals.DECLINED_MARK`, since the text Claude Code
    returns is only the policy's message."""

    @property
    def summary(self) -> str:
        return "".join(self.text)


# ---------------------------------------------------------------------------------- text


def flush_text(make: EventFactory, state: ClaudeState) -> list[RuntimeEvent]:
    """The held deltas as one ``text-delta`` (or nothing); call at the end of every batch."""
    pending = state.pending
    if not pending:
        return []
    text = pending[0] if len(pending) == 1 else "".join(pending)
    pending.clear()
    return [make.text_delta(text, state.pending_channel)]


def _delta(
    channel: TextChannel, text: str, make: EventFactory, state: ClaudeState
) -> list[RuntimeEvent]:
    if not text:
        return []
    out: list[RuntimeEvent] = []
    if state.pending and state.pending_channel != channel:
        out = flush_text(make, state)
    state.pending_channel = channel
    state.pending.append(text)
    if channel == "assistant":
        state.text.append(text)
    return out


# ---------------------------------------------------------------------------------- usage


def _usage(raw: dict[str, Any]) -> Usage:
    """Anthropic usage (``input_tokens`` without the cache) as ours (with it)."""
    read = as_int(raw.get("cache_read_input_tokens")) or 0
    write = as_int(raw.get("cache_creation_input_tokens")) or 0
    return usage_of(
        input_tokens=(as_int(raw.get("input_tokens")) or 0) + read + write,
        output_tokens=as_int(raw.get("output_tokens")) or 0,
        cached_input_tokens=read,
        cache_write_tokens=write,
    )


def _entry_usage(entries: Iterable[ModelUsageEntry]) -> tuple[Usage, float | None]:
    given = output = read = write = 0
    usd: float | None = 0.0
    for e in entries:
        given += e.input_tokens
        output += e.output_tokens
        read += e.cache_read_input_tokens
        write += e.cache_creation_input_tokens
        usd = None if usd is None or e.cost_usd is None else usd + e.cost_usd
    return usage_of(given + read + write, output, read, write), usd


def result_usage(result: ResultLine, base_cost_usd: float = 0.0) -> tuple[Usage, float | None]:
    """The usage and USD of the turn a ``result`` line ends.

    ``model_usage_since_last_result`` is the turn's own (per model, with cache tokens and USD);
    without it, ``usage`` (the turn's) and ``total_cost_usd`` minus the process's earlier total.
    """
    if result.model_usage_since_last_result:
        return _entry_usage(result.model_usage_since_last_result.values())
    raw = result.usage
    usage = _usage(raw.model_dump()) if raw is not None else Usage()
    usd = result.total_cost_usd
    if usd is not None:
        usd = max(0.0, usd - base_cost_usd)
    return usage, usd


_STREAM_USAGE: Final = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _stream_cost(make: EventFactory, state: ClaudeState, delta_usage: object) -> list[RuntimeEvent]:
    """``message_delta``: the finished request's usage (each count from the delta, else from
    ``message_start``) added to the run's stream totals, as a ``cost`` event."""
    start = state.message_usage
    delta = as_dict(delta_usage)
    state.message_usage = {}
    counts: list[int] = []
    for name in _STREAM_USAGE:
        value = delta.get(name)
        if type(value) is not int:
            value = start.get(name)
            if type(value) is not int:
                value = 0
        counts.append(value)
    given, output, read, write = counts
    totals = state.stream_totals
    totals[0] += given + read + write
    totals[1] += output
    totals[2] += read
    totals[3] += write
    usage = usage_of(totals[0], totals[1], totals[2], totals[3])
    out = flush_text(make, state)
    out.append(make.cost(usage, cost_usd=None, model=state.model))
    return out


# ---------------------------------------------------------------------------------- per kind


def _stream(
    frame: dict[str, Any], make: EventFactory, state: ClaudeState
) -> list[RuntimeEvent] | None:
    if frame.get("parent_tool_use_id"):
        return []  # a sub-agent's stream: its assistant lines carry the content
    event = as_dict(frame.get("event"))
    kind = event.get("type")
    if kind == "content_block_delta":
        delta = as_dict(event.get("delta"))
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = as_str(delta.get("text"))
            channel: TextChannel = "assistant"
        elif dtype == "thinking_delta":
            text = as_str(delta.get("thinking"))
            channel = "reasoning"
        else:
            return []  # input_json_delta (the assistant line has the whole input), signature…
        block = state.blocks.get(as_int(event.get("index")) or 0)
        if block is not None:
            block.chars += len(text)
        return _delta(channel, text, make, state)
    if kind == "content_block_start":
        block_raw = as_dict(event.get("content_block"))
        btype = block_raw.get("type")
        if btype == "text" or btype == "thinking":
            channel = "assistant" if btype == "text" else "reasoning"
            text = as_str(block_raw.get(btype))
            state.blocks[as_int(event.get("index")) or 0] = _Block(channel, len(text))
            return _delta(channel, text, make, state)
        return []
    if kind == "message_start":
        message = as_dict(event.get("message"))
        state.message_id = as_str(message.get("id")) or None
        state.blocks = {}
        state.message_usage = as_dict(message.get("usage"))
        return []
    if kind == "message_delta":
        return _stream_cost(make, state, event.get("usage"))
    if kind in _IGNORED_STREAM:
        return []
    return None


def _claim(state: ClaudeState, message_id: str, channel: TextChannel) -> _Block | None:
    if message_id != state.message_id:
        return None
    for block in state.blocks.values():
        if not block.claimed and block.channel == channel:
            block.claimed = True
            return block
    return None


def _assistant(frame: dict[str, Any], make: EventFactory, state: ClaudeState) -> list[RuntimeEvent]:
    message = as_dict(frame.get("message"))
    content = as_list(message.get("content"))
    if frame.get("is_api_error_message") or message.get("model") == "<synthetic>":
        texts = [as_str(as_dict(b).get("text")) for b in content]
        state.api_error_text = "".join(texts) or None
        return []  # the CLI's own "API Error: …" text; the result reports the failure
    sub_agent = bool(frame.get("parent_tool_use_id"))
    message_id = as_str(message.get("id"))
    out: list[RuntimeEvent] = []
    for raw in content:
        block = as_dict(raw)
        btype = block.get("type")
        if btype == "text" or btype == "thinking":
            full = as_str(block.get(btype))
            channel: TextChannel = "assistant" if btype == "text" and not sub_agent else "reasoning"
            streamed = None if sub_agent else _claim(state, message_id, channel)
            rest = full if streamed is None else full[streamed.chars :]
            out += _delta(channel, rest, make, state)
        elif btype == "tool_use" or btype == "server_tool_use" or btype == "mcp_tool_use":
            call_id = as_str(block.get("id"))
            if not call_id or call_id in make.open_tool_calls or call_id in state.closed_tools:
                continue
            out += flush_text(make, state)
            out.append(make.tool_call(call_id, as_str(block.get("name")), block.get("input")))
    return out


def tool_output(content: object) -> str:
    """A ``tool_result``'s content as text: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for raw in as_list(content):
        block = as_dict(raw)
        btype = block.get("type")
        if btype == "text":
            parts.append(as_str(block.get("text")))
        elif isinstance(btype, str):
            parts.append(f"[{btype}]")
    return "\n".join(parts)


def _user(frame: dict[str, Any], make: EventFactory, state: ClaudeState) -> list[RuntimeEvent]:
    content = as_dict(frame.get("message")).get("content")
    blocks = as_list(content)
    if not blocks:
        return []  # an echoed prompt
    out: list[RuntimeEvent] = []
    for raw in blocks:
        block = as_dict(raw)
        if block.get("type") != "tool_result":
            continue  # "[Request interrupted by user]" and echoed text
        call_id = as_str(block.get("tool_use_id"))
        if not call_id or call_id in state.closed_tools:
            continue  # already answered (a permission denial comes first)
        out += flush_text(make, state)
        if call_id not in make.open_tool_calls:
            out.append(make.tool_call(call_id, "", None))  # a result for a call we never saw
        state.closed_tools.add(call_id)
        output, failed = tool_output(block.get("content")), block.get("is_error") is True
        if failed and call_id in state.declined:  # it never ran: say why (core.refusals reads it)
            output = f"{DECLINED_MARK}\n{output}" if output else DECLINED_MARK
        out.append(make.tool_result(call_id, output, is_error=failed))
    return out


def _retry_detail(line: ApiRetryLine) -> str:
    attempt = f" {line.attempt}/{line.max_retries}" if line.attempt is not None else ""
    status = f" (HTTP {line.error_status})" if line.error_status is not None else ""
    delay = (
        f"; retrying in {round(line.retry_delay_ms)} ms" if line.retry_delay_ms is not None else ""
    )
    return f"api_retry{attempt}: {line.error or 'error'}{status}{delay}"


def _system(
    frame: dict[str, Any], make: EventFactory, state: ClaudeState
) -> list[RuntimeEvent] | None:
    subtype = frame.get("subtype")
    if subtype == "status":
        status = frame.get("status")
        if status == "requesting":
            out = flush_text(make, state)
            out.append(make.status("thinking", model=state.model))
            return out
        if isinstance(status, str) and status:
            out = flush_text(make, state)
            out.append(make.status("running", detail=status))
            return out
        return []
    if subtype in _IGNORED_SYSTEM:
        return []
    if subtype == "init":
        init = InitLine.model_validate(frame)
        state.session_id = init.session_id or state.session_id
        state.model = init.model or state.model
        out = flush_text(make, state)
        out.append(make.status("init", model=state.model))
        out += note_missing_fields(make, state.drift_noted, "system/init", frame, _INIT_FIELDS)
        return out
    if subtype == "api_retry":
        retry = ApiRetryLine.model_validate(frame)
        detail = _retry_detail(retry)
        state.last_retry = detail
        out = flush_text(make, state)
        if retry.error_status == 429 or retry.error == "rate_limit":
            # the CLI waits out the limit itself (it honours retry-after), then retries
            delay = retry.retry_delay_ms
            resets_at = make.clock() + round(delay) if delay is not None else None
            out.append(make.rate_limited(detail, resets_at))
        else:
            out.append(make.status("running", detail=detail))
        return out
    if subtype == "permission_denied":
        denied = PermissionDeniedLine.model_validate(frame)
        out = flush_text(make, state)
        call_id = denied.tool_use_id
        message = redact_secrets(denied.message or "permission denied")
        if call_id and call_id not in state.closed_tools:
            if call_id not in make.open_tool_calls:
                out.append(make.tool_call(call_id, denied.tool_name, None))
            state.closed_tools.add(call_id)
            out.append(make.tool_result(call_id, message, name=denied.tool_name, is_error=True))
        return out
    if subtype == "compact_boundary":
        out = flush_text(make, state)
        out.append(make.status("running", detail="context compacted"))
        return out
    return None


_WINDOW_MINUTES: Final = {"five_hour": 300, "seven_day": 10080}


def _quota(info: RateLimitInfo) -> list[QuotaWindow]:
    """The windows a ``rate_limit_event`` states (``utilization`` 0–1 → percent)."""
    found: dict[str, QuotaWindow] = {}
    for name, window in (info.unified_windows or {}).items():
        found[name] = QuotaWindow(
            name=name,
            used_percent=_percent(window.utilization),
            resets_at=round(window.resets_at * 1000) if window.resets_at is not None else None,
            window_minutes=_WINDOW_MINUTES.get(name),
            state=window.status,
        )
    name = info.rate_limit_type
    if name and (name not in found or info.status == "rejected"):
        known = found.get(name)
        found[name] = QuotaWindow(
            name=name,
            used_percent=_percent(info.utilization)
            if info.utilization is not None or known is None
            else known.used_percent,
            resets_at=round(info.resets_at * 1000) if info.resets_at is not None else None,
            window_minutes=_WINDOW_MINUTES.get(name),
            state=info.status,
        )
    return list(found.values())


def _percent(fraction: float | None) -> float | None:
    return None if fraction is None else round(fraction * 100, 2)


def _rate_limit(
    frame: dict[str, Any], make: EventFactory, state: ClaudeState
) -> list[RuntimeEvent]:
    info = RateLimitLine.model_validate(frame).rate_limit_info
    quota = _quota(info)
    if info.status is None or (info.status == "allowed" and not quota):
        return []
    parts = [f"rate limit {info.status}"]
    if info.rate_limit_type:
        parts.append(f"({info.rate_limit_type})")
    if info.resets_at is not None:
        parts.append(f"resets at {info.resets_at:.0f}")
    out = flush_text(make, state)
    if info.status == "rejected":  # the account is held until the reset
        resets_at = round(info.resets_at * 1000) if info.resets_at is not None else None
        out.append(make.rate_limited(" ".join(parts), resets_at, quota))
    elif quota:  # the account's windows (a warning, or plain usage): the run goes on
        out.append(make.quota_report(quota, " ".join(parts)))
    else:  # a warning (``allowed_warning``) that named no window
        out.append(make.status("running", detail=" ".join(parts)))
    return out


def classify_result(result: ResultLine, message: str) -> str:
    """The ``error.code`` of a failed ``result`` line."""
    status = result.api_error_status
    if status == 429:
        return "rate_limited"
    if status in (503, 529):
        return "overloaded"
    if status is not None and status >= 500:
        return "server_error"
    if status in (401, 403):
        return "authentication_failed"
    if status in (400, 404, 413, 422):
        return "invalid_request"
    lowered = message.lower()
    if "not logged in" in lowered or "invalid api key" in lowered or "/login" in lowered:
        return "authentication_failed"
    if result.subtype.startswith("error_max_budget"):
        return "budget_exceeded"
    if status is not None or result.terminal_reason == "api_error":
        return "api_error"
    return "runtime_reported"


def _failure_message(result: ResultLine, state: ClaudeState) -> str:
    if result.result:
        return result.result
    errors = [e for e in result.errors if not e.startswith("[ede_diagnostic]")]
    if errors:
        return "; ".join(errors)
    if state.api_error_text:
        return state.api_error_text
    reason = result.terminal_reason or result.subtype or "error"
    return f"claude reported {reason}"


_INIT_FIELDS: Final = ("session_id", "model", "tools")
_RESULT_FIELDS: Final = ("subtype", "is_error", "session_id", "usage", "total_cost_usd")
"""What the adapter reads from these frames (drift: a frame without them is reported)."""


def _result(frame: dict[str, Any], make: EventFactory, state: ClaudeState) -> list[RuntimeEvent]:
    result = ResultLine.model_validate(frame)
    state.results += 1
    usage, usd = result_usage(result, state.base_cost_usd)
    if state.result_usage is not None:
        usage = state.result_usage + usage
        usd = None if usd is None or state.result_cost_usd is None else state.result_cost_usd + usd
    state.result_usage = usage
    state.result_cost_usd = usd
    if result.total_cost_usd is not None:
        state.base_cost_usd = result.total_cost_usd
    out = flush_text(make, state)
    out += note_missing_fields(make, state.drift_noted, "result", frame, _RESULT_FIELDS)
    out.append(make.cost(usage, cost_usd=usd, model=state.model))
    reason = result.terminal_reason or ""
    aborted = state.aborting or reason.startswith("aborted")
    if (result.queued_turn_count or 0) > 0 and not aborted and not result.is_error:
        out.append(make.status("turn-complete", model=state.model))
        return out  # a steered message runs as the next turn of this run
    state.result = result
    if aborted:
        out += make.finish("aborted", state.summary)
    elif result.subtype == "error_max_turns" or reason == "max_turns":
        out += make.finish("max_turns", state.summary)
    elif not result.is_error and result.subtype == "success":
        out += make.finish("success", result.result if result.result is not None else state.summary)
    else:
        message = redact_secrets(_failure_message(result, state))
        out += make.fail(message, code=classify_result(result, message))
    return out


# ---------------------------------------------------------------------------------- entry points


def normalize_line(line: Line, make: EventFactory, state: ClaudeState) -> list[RuntimeEvent] | None:
    """Events for one decoded line; ``None`` if its kind is unknown (see the module docstring).

    Streamed text is held in ``state`` until another event or :func:`flush_text` releases it.
    """
    if type(line) is tuple:
        if len(line) == 3:
            channel, index, text = line
            block = state.blocks.get(index)
            if block is not None:
                block.chars += len(text)
            if text and (not state.pending or state.pending_channel == channel):
                state.pending_channel = channel
                state.pending.append(text)
                if channel == "assistant":
                    state.text.append(text)
                return []
            return _delta(channel, text, make, state)
        if len(line) == 2:
            channel, index = line
            state.blocks[index] = _Block(channel)
        return []
    frame: dict[str, Any] = line  # pyright: ignore[reportAssignmentType]
    kind = frame.get("type")
    if kind == "stream_event":
        return _stream(frame, make, state)
    if kind == "assistant":
        return _assistant(frame, make, state)
    if kind == "user":
        return _user(frame, make, state)
    if kind == "system":
        return _system(frame, make, state)
    if kind == "result":
        return _result(frame, make, state)
    if kind == "rate_limit_event":
        return _rate_limit(frame, make, state)
    if kind in _IGNORED_TYPES:
        return []
    return None


def normalize_lines(
    lines: Iterable[Line], make: EventFactory, state: ClaudeState
) -> tuple[list[RuntimeEvent], list[str]]:
    """Normalize a batch, then flush the held text: (events, labels of unknown lines)."""
    out: list[RuntimeEvent] = []
    unknown: list[str] = []
    for line in lines:
        events = normalize_line(line, make, state)
        if events is None:
            unknown.append(frame_label(line))
        elif events:
            out += events
    if state.pending:
        out += flush_text(make, state)
    return out, unknown


def frame_label(line: Line) -> str:
    """A name for an unknown line (for ``note_unknown``): ``type``, ``system/<subtype>``,
    ``stream_event/<event type>``."""
    if type(line) is tuple:
        return "stream_event"
    frame: dict[str, Any] = line  # pyright: ignore[reportAssignmentType]
    kind = as_str(frame.get("type"), "?")
    if kind == "system":
        return f"system/{as_str(frame.get('subtype'), '?')}"
    if kind == "stream_event":
        return f"stream_event/{as_str(as_dict(frame.get('event')).get('type'), '?')}"
    return kind
