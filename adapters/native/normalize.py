"""Subscriber events → ringleader's seven kinds (pure, apart from the factory's counters).

Part E's mapping: ``text_delta`` → ``text-delta`` (reasoning on its channel); ``tool_use`` →
``tool-call``; ``tool_use_result`` → ``tool-result`` with ``is_error`` and the text the model saw
(never ``render_data``); ``token_consumption`` → a *cumulative* ``cost`` (USD from the price
table, ``None`` when unknown; compaction calls counted too); turn starts, retries, compaction
and applied steers → ``status``; a lifecycle hook's action (``hook_action``) and a structured-output
retry (``output_retry``) → ``status`` details; the app layer's ``hook_invoked``, ``skill_invoked`` and the
``subagent_invoked`` / ``subagent_completed`` brackets → ``status`` details (a sub-agent's own
events travel in the parent's stream between its brackets, and its usage adds to the parent's
cumulative ``cost``); ``approval_requested`` → ``status{waiting_approval}`` carrying the call.
Returns ``None`` for an event type it does not know, so the
adapter can count and surface it.
"""

from __future__ import annotations

from orchestrator.core.events import ApprovalCall, EventFactory, RuntimeEvent, usage_of

from .messages import format_tool_result_content
from .pricing import PriceTable
from .subscriber import (
    ApprovalRequested,
    CompactionEnd,
    CompactionStart,
    HookActionEvent,
    HookInvoked,
    ModelResponseEvent,
    OutputRetryEvent,
    RetryEvent,
    SkillInvoked,
    SteerApplied,
    SubagentCompleted,
    SubagentInvoked,
    SubscriberEvent,
    TextDeltaEvent,
    TokenConsumption,
    ToolUseEvent,
    ToolUseResult,
    TurnStart,
)

__all__ = ["normalize_event"]


def normalize_event(
    event: SubscriberEvent, make: EventFactory, prices: PriceTable
) -> list[RuntimeEvent] | None:
    match event:
        case TextDeltaEvent():
            return [make.text_delta(event.text, event.channel)] if event.text else []
        case ToolUseEvent():
            return [make.tool_call(event.id, event.name, event.input)]
        case ToolUseResult():
            return [
                make.tool_result(
                    event.call_id,
                    format_tool_result_content(event.result),
                    name=event.tool_name,
                    is_error=event.result.is_error,
                )
            ]
        case TokenConsumption():
            t = event.consumption
            delta = usage_of(
                t.tokens_in, t.tokens_out, t.cache_read_input_tokens, t.cache_creation_input_tokens
            )
            usd = prices.cost(event.model, t)
            # USD from the price table is a list-price estimate, never a bill
            return [
                make.add_cost(
                    delta, cost_usd_delta=usd, model=event.model, estimated=usd is not None
                )
            ]
        case TurnStart():
            return [make.status("thinking", model=event.model, detail=f"turn {event.turn}")]
        case ModelResponseEvent():
            if event.tool_calls:
                n = len(event.tool_calls)
                return [make.status("running", detail=f"running {n} tool call(s)")]
            return []
        case RetryEvent():
            return [
                make.status(
                    "thinking",
                    detail=f"retry {event.attempt} in {event.delay_s:.1f}s: {event.reason}",
                )
            ]
        case CompactionStart():
            return [make.status("running", detail="compaction started")]
        case CompactionEnd():
            return [
                make.status(
                    "running",
                    detail=f"compaction done ({event.current_token_consumption} tokens summary)",
                )
            ]
        case SteerApplied():
            return [make.status("running", detail=f"steering_applied: {event.count}")]
        case HookInvoked():
            return [make.status("running", detail=f"hook_invoked: {event.name}")]
        case SkillInvoked():
            return [make.status("running", detail=f"skill_invoked: {event.name} ({event.source})")]
        case SubagentInvoked():
            return [make.status("running", detail=f"subagent_invoked: {event.name}")]
        case SubagentCompleted():
            tail = f": {event.message}" if event.message else ""
            return [
                make.status(
                    "running",
                    detail=f"subagent_completed: {event.name} ({event.status}){tail}",
                )
            ]
        case ApprovalRequested():
            r = event.request
            call = ApprovalCall(
                id=r.id,
                tool_call_id=r.call_id,
                name=r.tool_name,
                input=r.tool_input,
                reason=r.reason,
            )
            return [make.waiting_approval(call, detail=f"approval {r.id}: {r.tool_name}")]
        case HookActionEvent():
            return [
                make.status(
                    "running", detail=f"hook {event.point}: {event.action} ({event.detail})"
                )
            ]
        case OutputRetryEvent():
            return [
                make.status(
                    "thinking",
                    detail=f"output_retry {event.attempt}: " + "; ".join(event.problems),
                )
            ]
        case _:
            return None
