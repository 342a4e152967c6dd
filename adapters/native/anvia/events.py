"""The agent stream events (Anvia's ``AgentStreamEvent`` union, snake_case).

Order within a tool turn: ``turn_start`` → deltas and ``tool_call``s as they arrive →
``turn_end`` → ``tool_result`` / ``agent_tool_event`` in completion order → the next
``turn_start``. A stream ends with exactly one ``done`` (ringleader's contract), preceded by
``final`` when the run completed or ``error`` when it failed; a run that reaches its turn limit
ends in ``done{reason: "max_turns"}`` and a cancelled one in ``done{reason: "cancelled"}``.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import attrs

from adapters.native.messages import Message, TokenCounter, ToolCall

__all__ = [
    "AgentChildStreamEvent",
    "AgentDone",
    "AgentError",
    "AgentFinal",
    "AgentReasoningDelta",
    "AgentStreamEvent",
    "AgentTextDelta",
    "AgentToolCall",
    "AgentToolEvent",
    "AgentToolResult",
    "AgentTurnEnd",
    "AgentTurnStart",
    "DoneReason",
]

DoneReason: TypeAlias = Literal["completed", "max_turns", "cancelled", "error"]


@attrs.frozen
class AgentTurnStart:
    turn: int
    prompt: Message
    """The turn's last new message: the user prompt on turn 1, the tool results afterwards."""
    history: tuple[Message, ...]
    type: Literal["turn_start"] = "turn_start"


@attrs.frozen
class AgentTextDelta:
    turn: int
    delta: str
    type: Literal["text_delta"] = "text_delta"


@attrs.frozen
class AgentReasoningDelta:
    turn: int
    delta: str
    type: Literal["reasoning_delta"] = "reasoning_delta"


@attrs.frozen
class AgentToolCall:
    turn: int
    tool_call: ToolCall
    type: Literal["tool_call"] = "tool_call"


@attrs.frozen
class AgentToolResult:
    turn: int
    tool_name: str
    tool_call_id: str
    internal_call_id: str
    args: str
    """The call's arguments as JSON text."""
    result: str
    """The text the model sees."""
    is_error: bool = False
    """Our addition: Anvia results carry no error flag (B.20 #2)."""
    type: Literal["tool_result"] = "tool_result"


@attrs.frozen
class AgentTurnEnd:
    turn: int
    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str | None
    usage: TokenCounter
    """This turn's model call."""
    type: Literal["turn_end"] = "turn_end"


@attrs.frozen
class AgentFinal:
    run_id: str
    output: str
    usage: TokenCounter
    messages: tuple[Message, ...]
    structured: Any = None
    """The validated answer when the agent has an ``output_schema``."""
    trace: Any = None
    """The run's ``AgentTraceInfo`` when the request was made ``with_trace``."""
    type: Literal["final"] = "final"


@attrs.frozen
class AgentError:
    error: BaseException
    usage: TokenCounter
    type: Literal["error"] = "error"


@attrs.frozen
class AgentDone:
    run_id: str
    reason: DoneReason
    max_turns: int | None = None
    """Set when ``reason`` is ``max_turns``."""
    cancel_reason: str | None = None
    """Set when ``reason`` is ``cancelled``."""
    type: Literal["done"] = "done"


AgentChildStreamEvent: TypeAlias = (
    AgentTurnStart
    | AgentTextDelta
    | AgentReasoningDelta
    | AgentToolCall
    | AgentToolResult
    | AgentTurnEnd
    | AgentFinal
    | AgentError
    | AgentDone
)


@attrs.frozen
class AgentToolEvent:
    """A child agent's event, forwarded by ``as_tool(stream=True)`` while the parent streams."""

    turn: int
    tool_name: str
    tool_call_id: str
    internal_call_id: str
    agent_id: str
    agent_name: str | None
    event: AgentChildStreamEvent | AgentToolEvent
    type: Literal["agent_tool_event"] = "agent_tool_event"


AgentStreamEvent: TypeAlias = AgentChildStreamEvent | AgentToolEvent
