"""ACP ``session/update`` notifications and the prompt's response → ``RuntimeEvent``s. Pure.

* ``agent_message_chunk`` → ``text-delta``; ``agent_thought_chunk`` → ``text-delta{reasoning}``;
  ``user_message_chunk`` (the agent echoing or replaying the user) → nothing.
* ``tool_call`` → ``tool-call`` (name from the title's ``name:`` prefix, a one-word title, else
  the tool kind;
  input = ``rawInput``, else the title and content the agent showed); ``tool_call_update`` with
  status ``completed``/``failed`` → ``tool-result`` (``is_error`` when failed). An update for a
  call we never saw opens it first, so every result has its call. A call announced while its
  input is still being prepared (``rawInput: {}``, nothing shown: claude-agent-acp, Qwen Code)
  waits for the first update that carries its input (or its result) and is reported with it;
  an input the agent showed only in its permission request (Qwen Code) is taken from there
  (:func:`note_permission`).
* ``plan`` and ``current_mode_update`` → ``status{running}`` with a detail.
* ``usage_update`` is context **occupancy** (``used`` of ``size`` tokens), not spend: it is kept
  as state (and shown in a status detail), never as billed tokens. Its optional ``cost`` is the
  session's cumulative USD: the run's USD is its growth since the prompt started, and unknown
  (``None``) when the session's cost before the run is unknown.
* The prompt response: ``usage`` (this turn's tokens) → ``cost``; ``stopReason`` → ``done``:
  ``end_turn`` → success, ``max_tokens`` → success after a non-fatal ``error{max_tokens}`` (the
  answer is cut), ``max_turn_requests`` → ``max_turns``, ``cancelled`` → ``aborted``,
  ``refusal`` → ``error{refusal}`` + ``done{error}``.
* ``available_commands_update``, ``config_option_update`` and ``session_info_update`` (titles,
  which may arrive after the response and belong to no run) are known and dropped.

Updates read before the run's prompt is under way (``session/load`` replays the old history as
updates before it answers) are history, not output (``replay=True``): only a cumulative cost is
kept, as the run's baseline.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import attrs

from orchestrator.core.events import EventFactory, RuntimeEvent, Usage

from .._jsonrpc import as_dict, as_float, as_int, as_list, as_str
from .dialect import KNOWN_UPDATES, AcpUsage, content_text, tool_content_text, usage_of

__all__ = ["AcpState", "normalize_prompt_end", "normalize_update", "note_permission"]

_USAGE_KEYS: tuple[
    Literal[
        "inputTokens",
        "outputTokens",
        "cachedReadTokens",
        "cachedWriteTokens",
        "thoughtTokens",
        "totalTokens",
    ],
    ...,
] = (
    "inputTokens",
    "outputTokens",
    "cachedReadTokens",
    "cachedWriteTokens",
    "thoughtTokens",
    "totalTokens",
)

_SILENT = frozenset({"available_commands_update", "config_option_update", "session_info_update"})


@attrs.define
class AcpState:
    """What normalizing one prompt needs to remember."""

    model: str | None = None
    resumed: bool = False
    """The run continues a loaded session (its spend before the run is unknown unless the
    replayed history reported it)."""
    text: list[str] = attrs.field(factory=list[str])
    """The assistant text streamed in this run (the summary, and Hermes' failure text)."""
    context_used: int | None = None
    context_size: int | None = None
    session_cost: float | None = None
    """The session's cumulative USD as last reported by the agent."""
    cost_base: float | None = attrs.field(
        default=attrs.Factory(lambda s: None if s.resumed else 0.0, takes_self=True)
    )
    """The session's cumulative USD when the run started (``None``: unknown)."""
    tool_names: dict[str, str] = attrs.field(factory=dict[str, str])
    preparing: dict[str, dict[str, Any]] = attrs.field(factory=dict[str, dict[str, Any]])
    """Calls announced without their input yet (reported once an update brings it)."""
    meta_usage: AcpUsage | None = None
    """Usage the agent reported in message chunks' ``_meta`` (Qwen Code), summed over the
    prompt's model calls: the run's usage when the prompt's answer has none."""
    refused: int = 0
    """Permission requests refused in this run (an agent may end its turn on one: Codex)."""
    refused_calls: dict[str, str] = attrs.field(factory=dict[str, str])
    """The calls whose permission was refused, by call id: the mark their failed result's
    output starts with (:data:`~orchestrator.core.refusals.NEEDS_APPROVAL_MARK` when nobody
    could be asked, else :data:`~orchestrator.core.refusals.DECLINED_MARK`)."""
    asked_inputs: dict[str, Any] = attrs.field(factory=dict[str, Any])
    """Inputs the agent showed in permission requests, by call id."""

    @property
    def summary(self) -> str:
        return "".join(self.text)

    @property
    def run_cost(self) -> float | None:
        if self.session_cost is None or self.cost_base is None:
            return None
        return max(0.0, self.session_cost - self.cost_base)


def normalize_update(
    update: dict[str, Any], make: EventFactory, state: AcpState, *, replay: bool = False
) -> list[RuntimeEvent] | None:
    """Events for one ``session/update``'s ``update``; ``None`` for an unknown kind.

    ``replay``: the update is old history the agent replays while loading a session.
    """
    kind = as_str(update.get("sessionUpdate"))
    if kind not in KNOWN_UPDATES:
        return None
    if kind == "usage_update":
        return _usage_update(update, make, state, replay=replay)
    if replay or kind in _SILENT or kind == "user_message_chunk":
        return []
    match kind:
        case "agent_message_chunk":
            _note_meta_usage(update, state)
            text = content_text(update.get("content"))
            if not text:
                return []
            state.text.append(text)
            return [make.text_delta(text)]
        case "agent_thought_chunk":
            text = content_text(update.get("content"))
            return [make.text_delta(text, "reasoning")] if text else []
        case "tool_call":
            return _tool_call(update, make, state)
        case "tool_call_update":
            return _tool_update(update, make, state)
        case "plan":
            entries = [as_dict(e) for e in as_list(update.get("entries"))]
            done = sum(1 for e in entries if e.get("status") == "completed")
            return [make.status("running", detail=f"plan: {done}/{len(entries)} steps done")]
        case "current_mode_update":
            mode = as_str(update.get("currentModeId"))
            return [make.status("running", detail=f"mode: {mode}")]
        case _:
            return []


def normalize_prompt_end(result: object, make: EventFactory, state: AcpState) -> list[RuntimeEvent]:
    """The terminal group for the prompt's response (a ``cost`` first when it has usage)."""
    out: list[RuntimeEvent] = []
    usage = usage_of(result) or state.meta_usage
    if usage is not None or state.run_cost is not None:
        out.append(
            make.cost(_usage(usage), cost_usd=state.run_cost, model=state.model, estimated=False)
        )
    reason = as_str(as_dict(result).get("stopReason"))
    summary = state.summary
    match reason:
        case "end_turn" | "":
            out += make.finish("success", summary)
        case "max_tokens":
            out.append(
                make.error(
                    "the agent stopped at its output token limit (the answer is cut)",
                    code="max_tokens",
                    fatal=False,
                )
            )
            out += make.finish("success", summary)
        case "max_turn_requests":
            out += make.finish("max_turns", summary)
        case "cancelled":
            if state.refused:  # nobody aborted: the agent ended its turn on a refusal (Codex)
                detail = "the agent ended its turn after a refused permission"
                out.append(make.status("running", detail=detail))
            out += make.finish("aborted", summary)
        case "refusal":
            out += make.fail("the agent refused the prompt", code="refusal", summary=summary)
        case _:
            out.append(make.status("running", detail=f"unknown stop reason {reason!r}"))
            out += make.finish("success", summary)
    return out


def _note_meta_usage(update: dict[str, Any], state: AcpState) -> None:
    if not as_dict(update.get("_meta")).get("usage"):
        return
    usage = usage_of(update)
    if usage is None:
        return
    before = state.meta_usage or {}
    total: AcpUsage = {}
    for key in _USAGE_KEYS:
        if key in usage or key in before:
            total[key] = before.get(key, 0) + usage.get(key, 0)
    state.meta_usage = total


def _usage_update(
    update: dict[str, Any], make: EventFactory, state: AcpState, *, replay: bool
) -> list[RuntimeEvent]:
    used, size = as_int(update.get("used")), as_int(update.get("size"))
    cost = as_dict(update.get("cost"))
    amount = as_float(cost.get("amount"))
    if amount is not None and as_str(cost.get("currency"), "USD").upper() == "USD":
        state.session_cost = amount
        if replay:
            state.cost_base = amount
    if replay:
        return []
    state.context_used, state.context_size = used, size
    if amount is not None and state.run_cost is not None and make.usage is not None:
        # A spend update between turns: keep the cost stream current (tokens unchanged).
        return [make.cost(make.usage, cost_usd=state.run_cost, model=state.model)]
    return []


def _tool_name(update: dict[str, Any]) -> str:
    title = as_str(update.get("title"))
    head, sep, _ = title.partition(":")
    if sep and head and " " not in head.strip():
        return head.strip()  # "terminal: echo hi" (Hermes)
    if title and " " not in title.strip():
        return title.strip()  # a bare tool name (ringleader acp)
    return as_str(update.get("kind")) or title or "tool"


def _tool_input(update: dict[str, Any]) -> Any:
    raw = update.get("rawInput")
    if raw is not None:
        return raw
    shown: dict[str, Any] = {"title": as_str(update.get("title"))}
    kind = as_str(update.get("kind"))
    if kind:
        shown["kind"] = kind
    text = tool_content_text(update.get("content"))
    if text:
        shown["content"] = text
    return shown


def note_permission(params: dict[str, Any], state: AcpState) -> None:
    """Keep the input a ``session/request_permission`` shows for its call (routed as it
    arrives, before the call's later updates are normalized)."""
    call = as_dict(params.get("toolCall"))
    call_id = as_str(call.get("toolCallId"))
    raw = call.get("rawInput")
    if call_id and raw:
        state.asked_inputs[call_id] = raw


def _unprepared(update: dict[str, Any]) -> bool:
    """A call announced before its input: ``rawInput`` given but still empty (``{}``), nothing
    shown yet. (An agent that sends no ``rawInput`` at all has its call reported at once.)"""
    return (
        update.get("rawInput") == {}
        and not tool_content_text(update.get("content"))
        and as_str(update.get("status")) not in ("completed", "failed")
    )


def _tool_call(update: dict[str, Any], make: EventFactory, state: AcpState) -> list[RuntimeEvent]:
    call_id = as_str(update.get("toolCallId"))
    if not call_id or call_id in make.open_tool_calls:
        return []
    if _unprepared(update):
        state.preparing[call_id] = dict(update)
        return []
    name = _tool_name(update)
    state.tool_names[call_id] = name
    out: list[RuntimeEvent] = [make.tool_call(call_id, name, _tool_input(update))]
    status = as_str(update.get("status"))
    if status in ("completed", "failed"):
        out.append(_result(update, make, call_id, status, state))
    return out


def _tool_update(update: dict[str, Any], make: EventFactory, state: AcpState) -> list[RuntimeEvent]:
    call_id = as_str(update.get("toolCallId"))
    status = as_str(update.get("status"))
    announced = state.preparing.get(call_id)
    if announced is not None:
        # the announced name stays ("Terminal", "Shell"); the input comes with this update
        merged = {**announced, **{k: v for k, v in update.items() if v not in (None, "", [], {})}}
        merged["title"] = announced.get("title") or merged.get("title")
        if merged.get("rawInput") == {} and call_id in state.asked_inputs:
            merged["rawInput"] = state.asked_inputs[call_id]
        if _unprepared(merged):
            state.preparing[call_id] = merged
            return []
        del state.preparing[call_id]
        return _tool_call(merged, make, state)
    if not call_id or status not in ("completed", "failed"):
        return []
    out: list[RuntimeEvent] = []
    if call_id not in make.open_tool_calls:
        if call_id in state.tool_names:
            return []  # already closed: a late duplicate
        name = _tool_name(update)
        state.tool_names[call_id] = name
        out.append(make.tool_call(call_id, name, _tool_input(update)))
    out.append(_result(update, make, call_id, status, state))
    return out


def _result(
    update: dict[str, Any], make: EventFactory, call_id: str, status: str, state: AcpState
) -> RuntimeEvent:
    output = tool_content_text(update.get("content"))
    if not output:
        raw = update.get("rawOutput")
        output = raw if isinstance(raw, str) else ("" if raw is None else json.dumps(raw))
    mark = state.refused_calls.get(call_id) if status == "failed" else None
    if mark is not None:  # it never ran: say why (orchestrator.core.refusals reads it)
        output = f"{mark}\n{output}" if output else mark
    return make.tool_result(call_id, output, is_error=status == "failed")


def _usage(usage: AcpUsage | None) -> Usage:
    if usage is None:
        return Usage(input_tokens=0, output_tokens=0)
    return Usage(
        input_tokens=usage.get("inputTokens", 0),
        output_tokens=usage.get("outputTokens", 0) + usage.get("thoughtTokens", 0),
        cached_input_tokens=usage.get("cachedReadTokens"),
        cache_write_tokens=usage.get("cachedWriteTokens"),
    )
