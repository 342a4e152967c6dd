"""OpenClaw Gateway frames → ``RuntimeEvent``s: pure functions of (frame, state, factory).

One run is one ``agent`` request. Its frames are the ``event:"agent"`` items of that run id and
the request's final response. The rules (docs/runtimes.md §3.3–3.7, and the traps seen in real
2026.9.6 frames):

* ``assistant`` frames carry both the cumulative ``text`` of an item and a ``delta``; events carry
  **true increments** (what was not emitted yet), never the snapshot. A ``replace: true`` frame
  restarts the item (an empty one appears between retry attempts): it emits nothing itself.
* ``chat`` frames repeat the ``agent`` stream's text and outcome for UIs: they are read by
  nobody here (reading both doubles the text).
* ``tool`` ``start`` → ``tool-call`` (once per call id), ``result`` → ``tool-result``;
  ``update``, ``item`` and ``command_output`` are progress the result restates.
* ``lifecycle``: ``start`` → ``status{init}``, ``model`` → ``status{running, model}``, a
  ``finishing`` with an error (a failed attempt OpenClaw retries) → ``status`` with the error;
  ``end`` / ``error`` record the outcome, and the run ends on the final ``agent`` response, which
  also carries the run's usage. After an abort (or a fail-fast) the first terminal signal ends
  the run: OpenClaw's ``end`` + ``error{aborted}`` + final ``status:"timeout"`` come out as one
  ``done{aborted}``.
* ``run_status`` ``retrying`` → ``status`` with OpenClaw's message; past ``retry_limit`` retries
  the state asks the adapter to stop the run (fail fast) instead of waiting out OpenClaw's own
  backoff (~85 s for a 500, minutes for a 429).
* usage → cumulative ``cost``, once its counts are known (the ``usage`` stream carries only the
  output tokens; the final response brings the input: until then no ``cost``). The USD OpenClaw reports is computed from the prices in its config
  (zero when none are configured), so ``cost_usd`` is ``None`` unless ``prices_configured``.
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from orchestrator.core.events import EventFactory, RuntimeEvent, Usage

from .dialect import (
    AgentFrame,
    EventFrame,
    Frame,
    ResFrame,
    UnknownFrame,
    as_dict,
    as_int,
    as_list,
    as_str,
    text_of_content,
)

__all__ = [
    "IGNORED_STREAMS",
    "RESTART_RECOVERY_TOOL",
    "Outcome",
    "RunState",
    "continuation_events",
    "error_code_for",
    "finish_from_lifecycle",
    "normalize",
    "restart_continuation",
]

IGNORED_STREAMS: Final = frozenset({"item", "command_output", "thinking_status", "compaction"})
"""Agent streams that only restate what other streams carry (progress for UIs)."""

_IGNORED_EVENTS: Final = frozenset({"chat", "chat.metadata.changed", "sessions.changed", "task"})

_FAILOVER_CODES: Final = {
    "server_error": "server_error",
    "rate_limit": "rate_limited",
    "overloaded": "overloaded",
    "timeout": "timeout",
    "auth": "authentication",
    "billing": "billing",
}

Intent = Literal["abort", "fail"]


@attrs.define
class Outcome:
    """What a terminal lifecycle event said (kept until the final response arrives)."""

    phase: Literal["end", "error"]
    aborted: bool
    error: str | None = None
    code: str | None = None
    text: str | None = None


@attrs.define
class RunState:
    """What the normalizer remembers about one run."""

    model: str | None = None
    prices_configured: bool = False
    retry_limit: int | None = None
    """Fail fast after this many OpenClaw retries (``None``: wait for OpenClaw to give up)."""
    item_text: dict[str, str] = attrs.field(factory=dict[str, str])
    """Per assistant item: the text already emitted."""
    text: list[str] = attrs.field(factory=list[str])
    """Every assistant increment emitted (the summary of an aborted run)."""
    tools: dict[str, str] = attrs.field(factory=dict[str, str])
    """Tool call id → name, for every call announced."""
    retries: int = 0
    started: bool = False
    model_announced: bool = False
    last_error: str | None = None
    last_error_code: str | None = None
    outcome: Outcome | None = None
    intent: Intent | None = None
    """Set by the adapter (abort) or by the normalizer (fail fast): the next terminal signal
    ends the run this way."""
    fail_message: str | None = None
    fail_code: str | None = None
    wants_stop: bool = False
    """Set when fail-fast tripped: the adapter must stop the run in the gateway."""

    @property
    def summary(self) -> str:
        return "".join(self.text)


def error_code_for(observation: object) -> str | None:
    """Our error code for OpenClaw's ``errorObservation.failoverReason``."""
    reason = as_str(as_dict(observation).get("failoverReason"))
    if not reason:
        return None
    return _FAILOVER_CODES.get(reason, reason)


def normalize(frame: Frame, state: RunState, make: EventFactory) -> list[RuntimeEvent] | None:
    """The events for one frame of a run; ``None`` for a frame type the normalizer does not know."""
    if isinstance(frame, AgentFrame):
        return _agent(frame, state, make)
    if isinstance(frame, ResFrame):
        return _final(frame, state, make)
    if isinstance(frame, EventFrame):
        return [] if frame.event in _IGNORED_EVENTS else None
    if isinstance(frame, UnknownFrame):  # pyright: ignore[reportUnnecessaryIsInstance]
        return None
    return None


def _agent(frame: AgentFrame, state: RunState, make: EventFactory) -> list[RuntimeEvent] | None:
    match frame.stream:
        case "assistant":
            return _assistant(frame.data, state, make)
        case "tool":
            return _tool(frame.data, state, make)
        case "lifecycle":
            return _lifecycle(frame.data, state, make)
        case "run_status":
            return _run_status(frame.data, state, make)
        case "usage":
            return _usage(frame.data, state, make)
        case "thinking" | "reasoning":
            text = as_str(frame.data.get("delta")) or as_str(frame.data.get("text"))
            return [make.text_delta(text, "reasoning")] if text else []
        case stream if stream in IGNORED_STREAMS:
            return []
        case _:
            return None


def _assistant(data: dict[str, object], state: RunState, make: EventFactory) -> list[RuntimeEvent]:
    item = as_str(data.get("itemId"))
    seen = state.item_text.get(item, "")
    text = data.get("text")
    delta = as_str(data.get("delta"))
    if data.get("replace") is True:
        seen = ""
    if isinstance(text, str):
        if text.startswith(seen):
            increment = text[len(seen) :]
            seen = text
        else:  # a snapshot that does not extend what we sent: trust the delta
            increment = delta
            seen = text
    else:
        increment = delta
        seen += delta
    state.item_text[item] = seen
    if not increment:
        return []
    state.text.append(increment)
    return [make.text_delta(increment)]


def _tool(data: dict[str, object], state: RunState, make: EventFactory) -> list[RuntimeEvent]:
    call_id = as_str(data.get("toolCallId"))
    name = as_str(data.get("name")) or "tool"
    phase = as_str(data.get("phase"))
    if not call_id:
        return []
    if phase == "start":
        if call_id in state.tools:
            return []
        state.tools[call_id] = name
        args = data.get("args")
        return [make.tool_call(call_id, name, args if isinstance(args, dict) else {})]  # pyright: ignore[reportUnknownArgumentType]
    if phase == "result":
        out: list[RuntimeEvent] = []
        if call_id not in state.tools:  # a result whose start we never saw: announce it first
            state.tools[call_id] = name
            out.append(make.tool_call(call_id, name, {}))
        if call_id not in make.open_tool_calls:
            return out  # already answered
        result = data.get("result")
        output = (
            result if isinstance(result, str) else text_of_content(as_dict(result).get("content"))
        )
        is_error = data.get("isError") is True
        out.append(make.tool_result(call_id, output, name=name, is_error=is_error))
        return out
    return []


def _lifecycle(data: dict[str, object], state: RunState, make: EventFactory) -> list[RuntimeEvent]:
    phase = as_str(data.get("phase"))
    match phase:
        case "start":
            if state.started:  # OpenClaw restarts the lifecycle on every retry attempt
                return []
            state.started = True
            return [make.status("init", model=state.model)]
        case "model":
            provider, model = as_str(data.get("provider")), as_str(data.get("model"))
            qualified = f"{provider}/{model}" if provider and model else model
            if not qualified or (qualified == state.model and state.model_announced):
                return []  # the phase repeats for every model call of the run
            state.model = qualified
            state.model_announced = True
            return [make.status("running", model=qualified)]
        case "finishing":
            error = as_str(data.get("error"))
            if not error:
                return []
            state.last_error = error
            state.last_error_code = error_code_for(data.get("errorObservation"))
            return [make.status("running", detail=f"model attempt failed: {error}")]
        case "end" | "error":
            aborted = data.get("aborted") is True
            error = as_str(data.get("error")) or None
            code = error_code_for(data.get("errorObservation"))
            if state.outcome is None:
                reply = as_dict(data.get("terminalReply"))
                state.outcome = Outcome(
                    phase="end" if phase == "end" else "error",
                    aborted=aborted,
                    error=error,
                    code=code,
                    text=as_str(reply.get("text")) or None,
                )
            if error:
                state.last_error = error
                state.last_error_code = code or state.last_error_code
            if state.intent is not None or aborted:
                return finish_from_lifecycle(state, make)
            return []
        case _:
            return []


def _run_status(data: dict[str, object], state: RunState, make: EventFactory) -> list[RuntimeEvent]:
    if as_str(data.get("phase")) != "retrying":
        return []
    state.retries += 1
    message = as_str(data.get("message")) or f"retrying (attempt {state.retries})"
    out: list[RuntimeEvent] = [make.status("running", detail=message)]
    limit = state.retry_limit
    if limit is not None and state.retries > limit and state.intent is None:
        state.intent = "fail"
        state.wants_stop = True
        state.fail_message = (
            f"gave up after {limit} model retr{'y' if limit == 1 else 'ies'} (fail-fast): "
            f"{state.last_error or message}"
        )
        state.fail_code = state.last_error_code or "model_error"
    return out


def _usage(data: dict[str, object], state: RunState, make: EventFactory) -> list[RuntimeEvent]:
    """A ``usage`` frame as a cumulative ``cost`` once every count is known. OpenClaw 2026.9.6
    streams only the run's output tokens here (``emitAgentRunOutputTokens``); the input comes
    with the final response. A count not known yet is never reported as 0: the frame waits."""
    prev = make.usage
    inp = as_int(data.get("inputTokens"))
    out = as_int(data.get("outputTokens"))
    if prev is not None:
        inp = prev.input_tokens if inp is None else inp
        out = prev.output_tokens if out is None else out
    if inp is None or out is None:
        return []
    usage = Usage(
        input_tokens=inp,
        output_tokens=out,
        cached_input_tokens=as_int(data.get("cacheReadTokens")),
        cache_write_tokens=as_int(data.get("cacheWriteTokens")),
    )
    usd = data.get("costUsd")
    cost_usd = float(usd) if state.prices_configured and isinstance(usd, int | float) else None
    return [make.cost(usage, cost_usd=cost_usd, model=state.model, estimated=cost_usd is not None)]


def _result_usage(payload: dict[str, object]) -> tuple[Usage, float | None] | None:
    meta = as_dict(as_dict(as_dict(payload.get("result")).get("meta")).get("agentMeta"))
    raw = as_dict(meta.get("usage"))
    if not raw:
        return None
    cache_read = as_int(raw.get("cacheRead"))
    usage = Usage(
        input_tokens=(as_int(raw.get("input")) or 0) + (cache_read or 0),
        output_tokens=as_int(raw.get("output")) or 0,
        cached_input_tokens=cache_read,
        cache_write_tokens=as_int(raw.get("cacheWrite")),
    )
    total = as_dict(raw.get("cost")).get("total")
    return usage, float(total) if isinstance(total, int | float) else None


def _final(frame: ResFrame, state: RunState, make: EventFactory) -> list[RuntimeEvent]:
    payload = frame.payload
    if frame.ok and frame.status == "accepted":
        return []
    out: list[RuntimeEvent] = []
    usage = _result_usage(payload)
    if usage is not None:
        tokens, usd = usage
        cost_usd = usd if state.prices_configured else None
        out.append(
            make.cost(tokens, cost_usd=cost_usd, model=state.model, estimated=cost_usd is not None)
        )
    aborted = (
        state.intent == "abort"
        or payload.get("summary") == "aborted"
        or as_dict(as_dict(payload.get("result")).get("meta")).get("aborted") is True
        or (state.outcome is not None and state.outcome.aborted)
    )
    if state.intent == "fail":
        return out + _fail(state, make)
    if aborted:
        return out + make.finish("aborted", state.summary)
    if frame.ok and frame.status == "ok":
        texts = [
            as_str(as_dict(p).get("text"))
            for p in as_list(as_dict(payload.get("result")).get("payloads"))
        ]
        summary = "\n".join(t for t in texts if t) or state.summary
        return out + make.finish("success", summary)
    error = frame.error
    message = (
        (error.message if error else "")
        or as_str(payload.get("summary"))
        or state.last_error
        or f"openclaw run ended with status {frame.status or 'unknown'}"
    )
    code = state.last_error_code
    if code is None:
        code = "timeout" if frame.status == "timeout" else "runtime_reported"
    return out + make.fail(message, code=code)


def _fail(state: RunState, make: EventFactory) -> list[RuntimeEvent]:
    return make.fail(
        state.fail_message or state.last_error or "openclaw run failed",
        code=state.fail_code or state.last_error_code or "runtime_reported",
    )


RESTART_RECOVERY_TOOL: Final = "main_session_restart_recovery"
"""The ``provenance.sourceTool`` of the prompt a gateway adds to a session whose turn its
restart interrupted (OpenClaw 2026.9.6), before it continues that turn by itself."""


def restart_continuation(
    messages: list[dict[str, object]], *, since_ms: int = 0
) -> list[dict[str, object]] | None:
    """The messages after the last user message of a transcript (``sessions.get``), when that
    user message is the gateway's restart-recovery prompt, written at ``since_ms`` or later (by
    this gateway, not an earlier one), and its answer is complete (the last message an
    assistant's that stopped normally); ``None`` otherwise."""
    if not messages:
        return None
    last = messages[-1]
    if as_str(last.get("role")) != "assistant" or as_str(last.get("stopReason")) != "stop":
        return None
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if as_str(message.get("role")) == "user":
            source = as_str(as_dict(message.get("provenance")).get("sourceTool"))
            written = as_int(message.get("timestamp")) or 0
            if source != RESTART_RECOVERY_TOOL or written < since_ms:
                return None
            return messages[index + 1 :]
    return None


def continuation_events(
    messages: list[dict[str, object]], state: RunState, make: EventFactory
) -> list[RuntimeEvent]:
    """A whole run from the gateway's own continuation of a turn (see
    :func:`restart_continuation`): its assistant text and the usage it recorded, then
    ``done{success}``. Its tool calls ran in the gateway before the run took it over; they are
    reported from the transcript as they were recorded — each assistant message's ``toolCall``
    blocks as ``tool-call``, each ``toolResult`` message as its ``tool-result`` — in order."""
    out: list[RuntimeEvent] = [make.status("init", model=state.model)]
    texts: list[str] = []
    inp = out_tokens = 0
    cache_read: int | None = None
    cost = 0.0
    for message in messages:
        role = as_str(message.get("role"))
        if role == "toolResult":  # as the live stream's tool result (see _tool)
            result = {"content": message.get("content")}
            out += _tool({**message, "name": message.get("toolName"), "phase": "result",
                          "result": result}, state, make)  # fmt: skip
            continue
        if role != "assistant":
            continue
        text = text_of_content(message.get("content"))
        if text:
            texts.append(text)
            out.append(make.text_delta(text))
        for block in as_list(message.get("content")):
            call = as_dict(block)
            if call.get("type") == "toolCall":  # as the live stream's tool start (see _tool)
                start = {"toolCallId": call.get("id"), "name": call.get("name"), "phase": "start"}
                out += _tool({**start, "args": call.get("arguments")}, state, make)
        usage = as_dict(message.get("usage"))
        read = as_int(usage.get("cacheRead"))
        inp += (as_int(usage.get("input")) or 0) + (read or 0)
        out_tokens += as_int(usage.get("output")) or 0
        if read is not None:
            cache_read = (cache_read or 0) + read
        total = as_dict(usage.get("cost")).get("total")
        cost += float(total) if isinstance(total, int | float) else 0.0
    usd = cost if state.prices_configured else None
    tokens = Usage(input_tokens=inp, output_tokens=out_tokens, cached_input_tokens=cache_read)
    out.append(make.cost(tokens, cost_usd=usd, model=state.model, estimated=usd is not None))
    return out + make.finish("success", texts[-1] if texts else "")


def finish_from_lifecycle(state: RunState, make: EventFactory) -> list[RuntimeEvent]:
    """End the run from what is known without the final response (after an abort or fail-fast,
    or when the response does not come): the terminal group, or ``[]`` if already finished."""
    if state.intent == "fail":
        return _fail(state, make)
    outcome = state.outcome
    if state.intent == "abort" or (outcome is not None and outcome.aborted):
        return make.finish("aborted", state.summary)
    if outcome is None:
        return make.fail("openclaw run ended without a result", code="adapter_error")
    if outcome.phase == "end" and not outcome.error:
        return make.finish("success", outcome.text or state.summary)
    return make.fail(
        outcome.error or state.last_error or "openclaw run failed",
        code=outcome.code or state.last_error_code or "runtime_reported",
    )
