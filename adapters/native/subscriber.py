"""Subscriber events: the native loop's own frames (Glove's union, typed), and the fan-out.

This is the native runtime's *dialect*: the loop, the executor and the model adapters emit these;
``normalize.py`` maps them onto ringleader's seven kinds. Names follow Glove (``text_delta``,
``tool_use``, ``model_response_complete`` …) with a few additions Glove lacks (``retry``,
``steer_applied``, ``turn_start``). Every event has a ``type`` string.

:class:`Notifier` fans an event out to subscribers in order, and isolates failures (C#52): a
subscriber that raises is logged and skipped, never failing the run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypeAlias

import attrs

from orchestrator.core.approvals import ApprovalRequest

from .messages import Message, TokenCounter, ToolCall, ToolResultData

__all__ = [
    "ApprovalRequested",
    "CompactionEnd",
    "CompactionStart",
    "HookActionEvent",
    "HookInvoked",
    "ModelResponseEvent",
    "Notifier",
    "NotifyFn",
    "OutputRetryEvent",
    "RetryEvent",
    "SkillInvoked",
    "SteerApplied",
    "SubagentCompleted",
    "SubagentInvoked",
    "Subscriber",
    "SubscriberEvent",
    "TextDeltaEvent",
    "TokenConsumption",
    "ToolUseEvent",
    "ToolUseResult",
    "TurnStart",
    "UnknownEvent",
]

_log = logging.getLogger(__name__)


@attrs.frozen
class TextDeltaEvent:
    text: str
    channel: Literal["assistant", "reasoning"] = "assistant"
    type: Literal["text_delta"] = "text_delta"


@attrs.frozen
class ToolUseEvent:
    id: str
    name: str
    input: Any
    type: Literal["tool_use"] = "tool_use"


@attrs.frozen
class ModelResponseEvent:
    """A model call finished (``model_response`` when not streamed, else ``..._complete``)."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str | None
    tokens: TokenCounter
    model: str
    type: Literal["model_response", "model_response_complete"] = "model_response_complete"


@attrs.frozen
class ToolUseResult:
    tool_name: str
    call_id: str
    result: ToolResultData
    duration_ms: float
    type: Literal["tool_use_result"] = "tool_use_result"

    @property
    def id(self) -> str:  # Glove's preferred alias
        return self.call_id

    @property
    def name(self) -> str:
        return self.tool_name


@attrs.frozen
class TokenConsumption:
    """One model call's usage (``consumption``) and the run's total so far."""

    consumption: TokenCounter
    total: TokenCounter
    model: str
    source: Literal["turn", "compaction"] = "turn"
    type: Literal["token_consumption"] = "token_consumption"


@attrs.frozen
class CompactionStart:
    current_token_consumption: int
    type: Literal["compaction_start"] = "compaction_start"


@attrs.frozen
class CompactionEnd:
    current_token_consumption: int
    summary_message: Message
    type: Literal["compaction_end"] = "compaction_end"


@attrs.frozen
class TurnStart:
    turn: int
    model: str
    type: Literal["turn_start"] = "turn_start"


@attrs.frozen
class RetryEvent:
    attempt: int
    delay_s: float
    reason: str
    type: Literal["retry"] = "retry"


@attrs.frozen
class SteerApplied:
    count: int
    type: Literal["steer_applied"] = "steer_applied"


@attrs.frozen
class HookInvoked:
    """A ``/name`` hook directive bound and its handler is about to run."""

    name: str
    type: Literal["hook_invoked"] = "hook_invoked"


@attrs.frozen
class SkillInvoked:
    """A skill was materialised by the user (``/name``) or the agent (``glove_invoke_skill``)."""

    name: str
    source: Literal["user", "agent"]
    args: str | None = None
    type: Literal["skill_invoked"] = "skill_invoked"


@attrs.frozen
class SubagentInvoked:
    """Opens a sub-agent run; everything until the matching close belongs to it."""

    name: str
    prompt: str
    type: Literal["subagent_invoked"] = "subagent_invoked"


@attrs.frozen
class SubagentCompleted:
    """Closes the sub-agent run opened by the last unmatched :class:`SubagentInvoked`."""

    name: str
    status: Literal["success", "error"]
    message: str | None = None
    type: Literal["subagent_completed"] = "subagent_completed"


@attrs.frozen
class ApprovalRequested:
    """A tool call now waits for an approval handler's decision."""

    request: ApprovalRequest
    type: Literal["approval_requested"] = "approval_requested"


@attrs.frozen
class HookActionEvent:
    """A lifecycle hook changed the run's course (:mod:`.lifecycle`): ``point`` is the hook
    point, ``action`` one of ``stop``, ``skip``, ``rewrite_input``, ``replace_result``."""

    point: str
    action: str
    detail: str
    type: Literal["hook_action"] = "hook_action"


@attrs.frozen
class OutputRetryEvent:
    """The final answer did not match the output schema; the model is asked again."""

    attempt: int
    problems: tuple[str, ...]
    type: Literal["output_retry"] = "output_retry"


@attrs.frozen
class UnknownEvent:
    """Anything else a model adapter or extension emits (tolerated, counted, surfaced)."""

    type: str
    data: Any = None


SubscriberEvent: TypeAlias = (
    TextDeltaEvent
    | ToolUseEvent
    | ModelResponseEvent
    | ToolUseResult
    | TokenConsumption
    | CompactionStart
    | CompactionEnd
    | TurnStart
    | RetryEvent
    | SteerApplied
    | HookInvoked
    | SkillInvoked
    | SubagentInvoked
    | SubagentCompleted
    | ApprovalRequested
    | HookActionEvent
    | OutputRetryEvent
    | UnknownEvent
)


class Subscriber(Protocol):
    async def record(self, event: SubscriberEvent) -> None: ...


class NotifyFn(Protocol):
    async def __call__(self, event: SubscriberEvent) -> None: ...


@attrs.define
class Notifier:
    """Ordered fan-out with failure isolation."""

    subscribers: list[Subscriber] = attrs.field(factory=list[Subscriber])

    def add(self, subscriber: Subscriber) -> None:
        self.subscribers.append(subscriber)

    def remove(self, subscriber: Subscriber) -> None:
        if subscriber in self.subscribers:
            self.subscribers.remove(subscriber)

    async def __call__(self, event: SubscriberEvent) -> None:
        for sub in self.subscribers:
            try:
                await sub.record(event)
            except Exception:
                _log.warning("subscriber %r failed on %s", sub, event.type, exc_info=True)

    def snapshot(self) -> Sequence[Subscriber]:
        return tuple(self.subscribers)


async def discard(event: SubscriberEvent) -> None:
    """A notify function that drops everything (used for the compaction summary call)."""
    del event
