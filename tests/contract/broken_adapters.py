"""Deliberately broken adapters: each violates exactly one rule of the contract."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

from adapters.scripted import ScriptedAdapter
from contract import ScriptedHarness
from orchestrator.core.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle
from orchestrator.core.events import Cost, Done, RuntimeEvent, TextDelta, ToolResult, Usage
from orchestrator.core.queue import QueueEventStream


class RewritingStream:
    """Passes events through ``rewrite``; optionally keeps going after ``done``."""

    cancel_safe = True

    def __init__(self, inner: QueueEventStream, adapter: RewritingAdapter) -> None:
        self._inner = inner
        self._adapter = adapter
        self._after_done: list[RuntimeEvent] = []
        self._ended = False
        self._seq = 0

    def _renumber(self, event: RuntimeEvent) -> RuntimeEvent:
        """Keep seq gapless after a rewrite dropped events (unless the rule broken is seq)."""
        if not self._adapter.renumber:
            return event
        self._seq += 1
        return event.model_copy(update={"seq": self._seq})

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> RuntimeEvent:
        while True:
            if self._after_done:
                return self._renumber(self._after_done.pop(0))
            if self._ended:
                if self._adapter.hang_after_done:
                    import trio

                    await trio.sleep_forever()
                raise StopAsyncIteration
            event = await self._inner.__anext__()
            if isinstance(event, Done):
                self._ended = True
                self._after_done = self._adapter.after_done(event)
            out = self._adapter.rewrite(event)
            if out is not None:
                return self._renumber(out)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class RewritingAdapter(ScriptedAdapter):
    """A scripted adapter whose stream is rewritten by one broken rule."""

    hang_after_done = False
    renumber = True

    def rewrite(self, event: RuntimeEvent) -> RuntimeEvent | None:
        return event

    def after_done(self, done: Done) -> list[RuntimeEvent]:
        return []

    def events(self, run: RunHandle) -> Any:
        return RewritingStream(super().events(run), self)


class EventsAfterDone(RewritingAdapter):
    def after_done(self, done: Done) -> list[RuntimeEvent]:
        return [
            TextDelta(
                run_id=done.run_id,
                session_id=done.session_id,
                ts=done.ts,
                seq=done.seq + 1,
                text="late",
            )
        ]


class NeverClosesAfterDone(RewritingAdapter):
    hang_after_done = True


class SeqGap(RewritingAdapter):
    renumber = False

    def rewrite(self, event: RuntimeEvent) -> RuntimeEvent | None:
        return event.model_copy(update={"seq": event.seq * 2}) if event.seq > 1 else event


class RunIdBoundAtStart(ScriptedAdapter):
    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        run = await super().start(task, opts)
        run.run_id = "bound-too-early"
        return run


class AbortEndsInError(ScriptedAdapter):
    async def abort(self, run: RunHandle) -> None:
        live = self.emitter_for(run)
        self.calls.append(type(self.calls[0])("abort", {}) if self.calls else None)  # type: ignore[arg-type]
        if live is not None:
            await live.fail("aborted by user", code="aborted")


class ToolCallNeverClosed(RewritingAdapter):
    def rewrite(self, event: RuntimeEvent) -> RuntimeEvent | None:
        return None if isinstance(event, ToolResult) else event


class DecreasingCost(RewritingAdapter):
    def rewrite(self, event: RuntimeEvent) -> RuntimeEvent | None:
        if isinstance(event, Cost) and event.usage.input_tokens >= 30:
            return event.model_copy(update={"usage": Usage(input_tokens=1, output_tokens=1)})
        return event


class UnknownUsdAsZero(RewritingAdapter):
    def rewrite(self, event: RuntimeEvent) -> RuntimeEvent | None:
        if isinstance(event, Cost) and event.cost_usd is None:
            return event.model_copy(update={"cost_usd": 0.0})
        return event


class CrashesOnUnknownFrame(ScriptedAdapter):
    async def inject(self, frame: dict[str, Any], session_key: str | None = None) -> None:
        if frame.get("type") not in {"text", "tool-call", "tool-result", "usage", "result", "init"}:
            raise KeyError(frame.get("type"))
        await super().inject(frame, session_key)


class ErrorWithoutDone(RewritingAdapter):
    def rewrite(self, event: RuntimeEvent) -> RuntimeEvent | None:
        if isinstance(event, Done) and event.reason == "error":
            return event.model_copy(update={"reason": "success"})
        return event


class LeaksBetweenRuns(ScriptedAdapter):
    async def inject(self, frame: dict[str, Any], session_key: str | None = None) -> None:
        await super().inject(frame, None)  # always into the latest run


class NoStandInAtTerminal(ScriptedAdapter):
    """Forgets its open tool calls when the run ends, fails or is aborted (no stand-in result)."""

    def _normalize(self, run: Any, frame: Any) -> list[RuntimeEvent]:
        if getattr(frame, "type", None) == "result":
            run.emitter.factory.open_tool_calls.clear()
        return super()._normalize(run, frame)

    async def abort(self, run: RunHandle) -> None:
        emitter = self.emitter_for(run)
        if emitter is not None:
            emitter.factory.open_tool_calls.clear()
        await super().abort(run)


class UsdPerTurn(RewritingAdapter):
    """Reports each turn's USD instead of the running total (tokens stay cumulative)."""

    def __init__(self) -> None:
        super().__init__()
        self._usd = 0.0

    def rewrite(self, event: RuntimeEvent) -> RuntimeEvent | None:
        if isinstance(event, Cost) and event.cost_usd is not None:
            turn, self._usd = event.cost_usd - self._usd, event.cost_usd
            return event.model_copy(update={"cost_usd": turn})
        return event


class DropsUnknownSilently(ScriptedAdapter):
    """Ignores unknown frames without counting or surfacing them."""

    def _normalize(self, run: Any, frame: Any) -> list[RuntimeEvent]:
        if isinstance(frame, str):
            return []
        return super()._normalize(run, frame)


class TsInSeconds(RewritingAdapter):
    def rewrite(self, event: RuntimeEvent) -> RuntimeEvent | None:
        return event.model_copy(update={"ts": event.ts // 1000})


class SetModelRaisesValueError(ScriptedAdapter):
    async def set_model(self, run: RunHandle, model: str) -> None:
        raise ValueError(f"unknown model {model}")


class AbortRaisesProcessLookupError(ScriptedAdapter):
    async def abort(self, run: RunHandle) -> None:
        await super().abort(run)
        raise ProcessLookupError(3, "No such process")


class WriteContextRaisesGroup(ScriptedAdapter):
    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        raise ExceptionGroup("from a nursery", [OSError(28, "No space left on device")])


class BrokenHarness(ScriptedHarness):
    def __init__(self, adapter_cls: type[ScriptedAdapter]) -> None:
        super().__init__()
        self.label = adapter_cls.__name__
        self._cls = adapter_cls

    def make_adapter(self) -> RuntimeAdapter:
        adapter = self._cls()
        self._adapter = adapter
        return adapter
