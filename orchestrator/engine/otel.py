"""OpenTelemetry traces of runs (the optional extra ``ringleader[otel]``), following the GenAI
semantic conventions.

:class:`OtelSink` is an event sink (put it among a :class:`~orchestrator.engine.feed.RecordingSink`'s
``extra`` sinks, or wrap another sink): each run becomes a span ``invoke_agent <runtime>``; each
model turn, where the runtime shows turns (``status{thinking}`` … ``status{turn-complete}``), a
child span ``chat <model>``; each tool call a child span ``execute_tool <name>`` closed by its
result. Token usage and cost go on the run span (``gen_ai.usage.input_tokens``,
``gen_ai.usage.output_tokens``, ``ringleader.cost.usd``, ``ringleader.cost.estimated``); an
error ends its span with status ERROR and ``error.type``. Prompts, outputs and tool arguments
are **not** recorded unless ``record_content=True``.

Spans are timed from the events' own ``ts`` (epoch ms), so a replayed log gives the same trace.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from orchestrator.core.events import (
    Cost,
    Done,
    ErrorEvent,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
)
from orchestrator.engine.actor import EventSink

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["OtelSink"]

_NS_PER_MS = 1_000_000


def _tracer(provider: Any | None) -> Tracer:
    try:
        from opentelemetry import trace
    except ImportError:  # pragma: no cover - exercised without the extra
        from orchestrator.core.errors import ConfigError

        raise ConfigError("tracing needs the otel extra: pip install 'ringleader[otel]'") from None
    source = provider if provider is not None else trace.get_tracer_provider()
    return source.get_tracer("ringleader")


@attrs.define
class _RunTrace:
    span: Span
    turn: Span | None = None
    tools: dict[str, Span] = attrs.field(factory=dict[str, Any])
    model: str | None = None
    text: list[str] = attrs.field(factory=list[str])


@attrs.define(eq=False)
class OtelSink:
    """An event sink that turns each run's events into spans (see the module docstring).

    ``runtime_of``: how to name the runtime of a run key (default: the ``runtime:<id>:…``
    prefix of the runner's session keys)."""

    tracer_provider: Any | None = None
    record_content: bool = False
    downstream: Sequence[EventSink] = ()
    _tracer: Any = attrs.field(init=False, default=None)
    _runs: dict[str, _RunTrace] = attrs.field(init=False, factory=dict[str, _RunTrace])

    def __attrs_post_init__(self) -> None:
        self._tracer = _tracer(self.tracer_provider)

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        for event in events:
            self._on(run_key, event)
        for sink in self.downstream:
            await sink.deliver(run_key, events)

    # -- mapping -----------------------------------------------------------------------------

    def _run(self, run_key: str, event: RuntimeEvent) -> _RunTrace:
        found = self._runs.get(run_key)
        if found is None:
            runtime = _runtime_of(run_key)
            span = self._tracer.start_span(
                f"invoke_agent {runtime}",
                start_time=event.ts * _NS_PER_MS,
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.system": runtime,
                    "gen_ai.agent.name": runtime,
                    "ringleader.run_key": run_key,
                },
            )
            found = self._runs[run_key] = _RunTrace(span)
        return found

    def _child(self, run: _RunTrace, name: str, ts: int, attributes: dict[str, Any]) -> Span:
        from opentelemetry import trace

        context = trace.set_span_in_context(run.span)
        return self._tracer.start_span(
            name, context=context, start_time=ts * _NS_PER_MS, attributes=attributes
        )

    def _on(self, run_key: str, event: RuntimeEvent) -> None:
        run = self._run(run_key, event)
        kind = type(event)
        ts = event.ts
        if kind is Status:
            status: Status = event  # type: ignore[assignment]
            if status.model:
                run.model = status.model
                run.span.set_attribute("gen_ai.request.model", status.model)
            if status.phase == "thinking" and run.turn is None:
                run.turn = self._child(
                    run,
                    f"chat {run.model or 'model'}",
                    ts,
                    {"gen_ai.operation.name": "chat", "gen_ai.request.model": run.model or ""},
                )
            elif status.phase == "turn-complete" and run.turn is not None:
                run.turn.end(end_time=ts * _NS_PER_MS)
                run.turn = None
        elif kind is ToolCall:
            call: ToolCall = event  # type: ignore[assignment]
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.tool_call_id,
            }
            if self.record_content:
                import json

                attributes["gen_ai.tool.call.arguments"] = json.dumps(call.input)
            run.tools[call.tool_call_id] = self._child(
                run, f"execute_tool {call.name}", ts, attributes
            )
        elif kind is ToolResult:
            result: ToolResult = event  # type: ignore[assignment]
            span = run.tools.pop(result.tool_call_id, None)
            if span is not None:
                if self.record_content:
                    span.set_attribute("gen_ai.tool.call.result", result.output)
                if result.is_error:
                    _fail(span, "tool_error")
                span.end(end_time=ts * _NS_PER_MS)
        elif kind is Cost:
            cost: Cost = event  # type: ignore[assignment]
            _usage(run.span, cost.usage.input_tokens, cost.usage.output_tokens)
            if cost.usage.cached_input_tokens is not None:
                run.span.set_attribute(
                    "gen_ai.usage.cache_read.input_tokens", cost.usage.cached_input_tokens
                )
            if cost.model:
                run.span.set_attribute("gen_ai.response.model", cost.model)
            if cost.cost_usd is not None:
                run.span.set_attribute("ringleader.cost.usd", cost.cost_usd)
                run.span.set_attribute("ringleader.cost.estimated", cost.estimated)
        elif kind is TextDelta:
            if self.record_content and event.channel == "assistant":  # type: ignore[union-attr]
                run.text.append(event.text)  # type: ignore[union-attr]
        elif kind is ErrorEvent:
            error: ErrorEvent = event  # type: ignore[assignment]
            if error.fatal:
                _fail(run.span, error.code or "error")
        elif kind is Done:
            done: Done = event  # type: ignore[assignment]
            self._finish(run_key, run, done)

    def _finish(self, run_key: str, run: _RunTrace, done: Done) -> None:
        end = done.ts * _NS_PER_MS
        for span in run.tools.values():
            span.end(end_time=end)
        if run.turn is not None:
            run.turn.end(end_time=end)
        span = run.span
        span.set_attribute("ringleader.done.reason", done.reason)
        if done.usage is not None:
            _usage(span, done.usage.input_tokens, done.usage.output_tokens)
        if done.cost_usd is not None:
            span.set_attribute("ringleader.cost.usd", done.cost_usd)
        if self.record_content and run.text:
            span.set_attribute("gen_ai.output.messages", "".join(run.text))
        if done.reason == "error":
            _fail(span, "error")
        span.end(end_time=end)
        del self._runs[run_key]


def _usage(span: Span, input_tokens: int, output_tokens: int) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", output_tokens)


def _fail(span: Span, kind: str) -> None:
    from opentelemetry.trace import Status as SpanStatus
    from opentelemetry.trace import StatusCode

    span.set_attribute("error.type", kind)
    span.set_status(SpanStatus(StatusCode.ERROR))


def _runtime_of(run_key: str) -> str:
    """``runtime:ID:task:…`` → ``ID`` (an id may hold a colon itself: ``acp:claude``)."""
    found = re.match(r"runtime:(.+?):task:", run_key)
    return found[1] if found else "runtime"
