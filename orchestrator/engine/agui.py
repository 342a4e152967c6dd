"""The event log as AG-UI events (the Agent–User Interaction protocol), built with the
``ag-ui-protocol`` package's own types, so every event we send validates against them.

One ringleader run is one AG-UI *thread* (``threadId`` = the run key). An AG-UI *run* is a
stretch of it between interruptions: a run waiting for a person's approval finishes its AG-UI run
with an ``interrupt`` outcome (the approval id, the tool, its input), and the next event of the
run opens a new AG-UI run on the same thread (``runId`` = ``<run key>#<n>``) — AG-UI's model of
human-in-the-loop. The mapping:

==========================  ========================================================================
ringleader                  AG-UI
==========================  ========================================================================
first event of a run        ``RUN_STARTED`` (``protocolVersion`` declared)
``text-delta`` (assistant)  ``TEXT_MESSAGE_START`` once, then ``TEXT_MESSAGE_CONTENT``
``text-delta`` (reasoning)  ``REASONING_START`` + ``REASONING_MESSAGE_START`` once, then content
``tool-call``               ``TOOL_CALL_START``, ``TOOL_CALL_ARGS`` (the JSON input), ``TOOL_CALL_END``
``tool-result``             ``TOOL_CALL_RESULT``
``status`` / ``cost``       ``STATE_SNAPSHOT`` (runtime, phase, model, tokens, USD, estimated)
``status{waiting_approval}``  ``RUN_FINISHED`` with an ``interrupt`` outcome
fatal ``error``             ``RUN_ERROR`` (code, message)
``done``                    ``RUN_FINISHED`` (``success``; ``cancelled`` for an abort), or
                            ``RUN_ERROR`` for ``done{error}`` that no error event announced
==========================  ========================================================================

An open message is ended (``TEXT_MESSAGE_END`` / ``REASONING_END``) before anything else of its
run. Every event carries ``metadata.ringleader = {"runKey", "gid", "seq"}`` so a client following
every run can tell them apart. A translator folds each run's events in order; a stream resumed in
the middle of a run is first primed with that run's earlier events (:meth:`AguiTranslator.prime`),
so the messages it continues are the ones the client saw open.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs
from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.events import RunFinishedCancelledOutcome, RunFinishedInterruptOutcome

from orchestrator.core.events import (
    Cost,
    ErrorEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
)
from orchestrator.engine.eventlog import LoggedEvent

__all__ = ["AguiTranslator", "RunState", "sse_message"]


@attrs.define
class RunState:
    """What the translator knows of one run."""

    segment: int = 0
    """The AG-UI run of this thread now open (1, 2, …); 0: none open."""
    segments: int = 0
    message: str | None = None
    """The id of the open text or reasoning message, if any."""
    channel: str | None = None
    ended: bool = False
    snapshot: dict[str, Any] = attrs.field(factory=dict[str, Any])


@attrs.define
class AguiTranslator:
    """Folds logged events, in ``gid`` order, into AG-UI events (see the module docstring)."""

    runs: dict[str, RunState] = attrs.field(factory=dict[str, RunState])

    def knows(self, run_key: str) -> bool:
        return run_key in self.runs

    def prime(self, items: Iterable[LoggedEvent]) -> None:
        """Fold ``items`` (earlier events of runs the stream continues) without emitting them."""
        for item in items:
            self.translate(item)

    def translate(self, item: LoggedEvent) -> list[BaseEvent]:
        """The AG-UI events for one logged event (possibly none)."""
        state = self.runs.get(item.run_key)
        if state is None:
            state = self.runs[item.run_key] = RunState()
        event = item.event
        meta = {"ringleader": {"runKey": item.run_key, "gid": item.gid, "seq": item.seq}}
        out: list[BaseEvent] = []
        if state.ended:
            return out
        if state.segment == 0:
            state.segments += 1
            state.segment = state.segments
            out.append(
                RunStartedEvent(
                    thread_id=item.run_key,
                    run_id=self._run_id(item.run_key, state),
                    protocol_version=PROTOCOL_VERSION,
                    timestamp=event.ts,
                    metadata=meta,
                )
            )
        if isinstance(event, TextDelta):
            out += self._text(item, event, state, meta)
            return out
        out += self._close_message(state, event.ts, meta)
        if isinstance(event, ToolCall):
            if event.partial:
                return out
            args = json.dumps(event.input, ensure_ascii=False)
            out += [
                ToolCallStartEvent(
                    tool_call_id=event.tool_call_id,
                    tool_call_name=event.name,
                    timestamp=event.ts,
                    metadata=meta,
                ),
                ToolCallArgsEvent(
                    tool_call_id=event.tool_call_id, delta=args, timestamp=event.ts, metadata=meta
                ),
                ToolCallEndEvent(
                    tool_call_id=event.tool_call_id, timestamp=event.ts, metadata=meta
                ),
            ]
        elif isinstance(event, ToolResult):
            out.append(
                ToolCallResultEvent(
                    message_id=f"{item.run_key}:result:{item.seq}",
                    tool_call_id=event.tool_call_id,
                    content=event.output,
                    role="tool",
                    timestamp=event.ts,
                    metadata=meta | {"isError": event.is_error},
                )
            )
        elif isinstance(event, Status):
            state.snapshot |= {"phase": event.phase}
            if event.model:
                state.snapshot["model"] = event.model
            out.append(self._snapshot(item, state, meta))
            if event.phase == "waiting_approval" and event.approval is not None:
                call = event.approval
                out.append(
                    RunFinishedEvent(
                        thread_id=item.run_key,
                        run_id=self._run_id(item.run_key, state),
                        outcome=RunFinishedInterruptOutcome(
                            interrupts=[
                                Interrupt(
                                    id=call.id,
                                    reason="tool_approval",
                                    message=call.reason,
                                    tool_call_id=call.tool_call_id,
                                    metadata={"tool": call.name, "input": call.input},
                                )
                            ]
                        ),
                        timestamp=event.ts,
                        metadata=meta,
                    )
                )
                state.segment = 0
        elif isinstance(event, Cost):
            state.snapshot |= {
                "inputTokens": event.usage.input_tokens,
                "outputTokens": event.usage.output_tokens,
                "costUsd": event.cost_usd,
                "estimated": event.estimated,
            }
            out.append(self._snapshot(item, state, meta))
        elif isinstance(event, ErrorEvent):
            if event.fatal:
                out.append(
                    RunErrorEvent(
                        message=event.message,
                        code=event.code,
                        timestamp=event.ts,
                        metadata=meta | {"threadId": item.run_key},
                    )
                )
                state.ended = True
        else:  # done
            if event.reason == "error":
                out.append(
                    RunErrorEvent(
                        message=event.summary or "the run failed",
                        code="error",
                        timestamp=event.ts,
                        metadata=meta | {"threadId": item.run_key},
                    )
                )
            else:
                out.append(
                    RunFinishedEvent(
                        thread_id=item.run_key,
                        run_id=self._run_id(item.run_key, state),
                        outcome=RunFinishedCancelledOutcome()
                        if event.reason == "aborted"
                        else None,
                        result={"reason": event.reason, "summary": event.summary},
                        timestamp=event.ts,
                        metadata=meta,
                    )
                )
            state.ended = True
        return out

    def _run_id(self, run_key: str, state: RunState) -> str:
        return run_key if state.segment <= 1 else f"{run_key}#{state.segment}"

    def _snapshot(self, item: LoggedEvent, state: RunState, meta: dict[str, Any]) -> BaseEvent:
        return StateSnapshotEvent(
            snapshot={"runKey": item.run_key, **state.snapshot},
            timestamp=item.event.ts,
            metadata=meta,
        )

    def _text(
        self, item: LoggedEvent, event: TextDelta, state: RunState, meta: dict[str, Any]
    ) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if not event.text:
            return out
        if state.message is not None and state.channel != event.channel:
            out += self._close_message(state, event.ts, meta)
        if state.message is None:
            state.message = f"{item.run_key}:message:{item.seq}"
            state.channel = event.channel
            if event.channel == "reasoning":
                out += [
                    ReasoningStartEvent(
                        message_id=state.message, timestamp=event.ts, metadata=meta
                    ),
                    ReasoningMessageStartEvent(
                        message_id=state.message,
                        role="reasoning",
                        timestamp=event.ts,
                        metadata=meta,
                    ),
                ]
            else:
                out.append(
                    TextMessageStartEvent(
                        message_id=state.message,
                        role="assistant",
                        timestamp=event.ts,
                        metadata=meta,
                    )
                )
        if event.channel == "reasoning":
            out.append(
                ReasoningMessageContentEvent(
                    message_id=state.message, delta=event.text, timestamp=event.ts, metadata=meta
                )
            )
        else:
            out.append(
                TextMessageContentEvent(
                    message_id=state.message, delta=event.text, timestamp=event.ts, metadata=meta
                )
            )
        return out

    def _close_message(self, state: RunState, ts: int, meta: dict[str, Any]) -> list[BaseEvent]:
        message, channel = state.message, state.channel
        if message is None:
            return []
        state.message = state.channel = None
        if channel == "reasoning":
            return [
                ReasoningMessageEndEvent(message_id=message, timestamp=ts, metadata=meta),
                ReasoningEndEvent(message_id=message, timestamp=ts, metadata=meta),
            ]
        return [TextMessageEndEvent(message_id=message, timestamp=ts, metadata=meta)]


def sse_message(events: list[BaseEvent], gid: int) -> str:
    """One logged event's AG-UI events as SSE messages; the last carries ``id: <gid>``, so a
    client resuming with ``Last-Event-ID`` gets whole translations, never half of one. A logged
    event with no AG-UI counterpart still moves the client's cursor (an ``id`` with no data is
    not dispatched, but sets the last event id)."""
    parts = [f"data: {e.model_dump_json(by_alias=True, exclude_none=True)}\n\n" for e in events]
    if not parts:
        return f"id: {gid}\n\n"
    parts[-1] = f"id: {gid}\n" + parts[-1]
    return "".join(parts)
