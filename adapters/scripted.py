"""The scripted adapter: an in-memory runtime for demos, tests and adapter authors.

It follows the same three layers as every real adapter, in one small module:

* **dialect** — :data:`ScriptedFrame`, the native frames (``init``, ``text``, ``tool-call``,
  ``tool-result``, ``usage``, ``result``, and ``sleep`` for replays); unknown types are tolerated;
* **normalize** — :func:`normalize_frame`, a pure function of (frame, event factory);
* **driver** — a replay task per run (when the adapter has a script) or frames pushed with
  :meth:`ScriptedAdapter.inject` (the contract harness does that).

``abort``, ``set_model`` and ``write_context`` are recorded in :attr:`ScriptedAdapter.calls`
(``RecordedCall(method, params)``), which is how the contract suite observes side effects.
``write_context`` also writes the file when the run has a working directory (confined to it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypeAlias

import attrs
import trio
from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from orchestrator.core.adapter import Capabilities, RunHandle, StartOpts, TaskHandle
from orchestrator.core.events import EventFactory, RuntimeEvent, now_ms, usage_of

from ._base import AdapterBase, JsonSessionCodec, validate_context_key, write_context_file
from ._runs import RunEmitter

__all__ = [
    "RecordedCall",
    "ScriptedAdapter",
    "ScriptedCodec",
    "ScriptedFrame",
    "normalize_frame",
    "parse_frame",
]

_FRAME = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

_REPLAY_CHUNK = 64
"""Frames a replay normalizes before it publishes their events at once and yields."""


class InitFrame(BaseModel):
    model_config = _FRAME
    type: Literal["init"]
    session_id: str = Field(alias="sessionId")
    model: str | None = None


class TextFrame(BaseModel):
    model_config = _FRAME
    type: Literal["text"]
    text: str
    channel: Literal["assistant", "reasoning"] = "assistant"


class ToolCallFrame(BaseModel):
    model_config = _FRAME
    type: Literal["tool-call"]
    id: str
    name: str
    input: JsonValue = None


class ToolResultFrame(BaseModel):
    model_config = _FRAME
    type: Literal["tool-result"]
    id: str
    name: str | None = None
    output: str = ""
    is_error: bool = Field(default=False, alias="isError")


class UsageFrame(BaseModel):
    """Cumulative usage so far (and USD when known)."""

    model_config = _FRAME
    type: Literal["usage"]
    input_tokens: int = Field(default=0, alias="inputTokens")
    output_tokens: int = Field(default=0, alias="outputTokens")
    cost_usd: float | None = Field(default=None, alias="costUsd")
    model: str | None = None


class ResultFrame(BaseModel):
    model_config = _FRAME
    type: Literal["result"]
    ok: bool
    summary: str = ""
    aborted: bool = False
    max_turns: bool = Field(default=False, alias="maxTurns")
    error_message: str | None = Field(default=None, alias="errorMessage")
    error_code: str | None = Field(default=None, alias="errorCode")


class StatusFrame(BaseModel):
    """A runtime's status line (``Reconnecting… 2/5``): talk, not progress."""

    model_config = _FRAME
    type: Literal["status"]
    phase: Literal["init", "thinking", "running", "turn-complete", "rate_limited"] = "running"
    detail: str | None = None


class SleepFrame(BaseModel):
    """Replay only: wait this long before the next frame."""

    model_config = _FRAME
    type: Literal["sleep"]
    seconds: float


ScriptedFrame: TypeAlias = Annotated[
    InitFrame
    | TextFrame
    | ToolCallFrame
    | ToolResultFrame
    | UsageFrame
    | ResultFrame
    | StatusFrame
    | SleepFrame,
    Field(discriminator="type"),
]
_FRAME_ADAPTER: TypeAdapter[ScriptedFrame] = TypeAdapter(ScriptedFrame)
_validate_frame = _FRAME_ADAPTER.validator.validate_python
"""The union's validator, called directly: ``TypeAdapter.validate_python`` adds 0.5 µs a frame
of keyword handling around the same call."""


def parse_frame(raw: dict[str, Any] | ScriptedFrame) -> ScriptedFrame | str:
    """A typed frame, or the frame's type name (``"?"`` if none) when it is not one we know."""
    if not isinstance(raw, dict):
        return raw
    try:
        return _validate_frame(raw)
    except ValidationError:
        kind = raw.get("type")
        return kind if isinstance(kind, str) else "?"


def normalize_frame(
    frame: ScriptedFrame, make: EventFactory, text_so_far: str
) -> list[RuntimeEvent]:
    """Map one scripted frame to events (pure apart from the factory's counters)."""
    # dispatch on the discriminator, the hot kind first (a class pattern is an isinstance
    # check, which on a model class costs 3× a string comparison)
    match frame.type:
        case "text":
            return [make.text_delta(frame.text, frame.channel)] if frame.text else []
        case "tool-call":
            return [make.tool_call(frame.id, frame.name, frame.input)]
        case "tool-result":
            return [
                make.tool_result(frame.id, frame.output, name=frame.name, is_error=frame.is_error)
            ]
        case "usage":
            usage = usage_of(frame.input_tokens, frame.output_tokens)
            return [make.cost(usage, cost_usd=frame.cost_usd, model=frame.model)]
        case "init":
            return [make.status("init", model=frame.model)]
        case "result":
            summary = frame.summary or text_so_far
            if frame.aborted:
                return make.finish("aborted", summary)
            if frame.max_turns:
                return make.finish("max_turns", summary)
            if frame.ok:
                return make.finish("success", frame.summary)
            message = frame.error_message or "error"
            return make.fail(message, code=frame.error_code, summary=frame.summary or message)
        case "status":
            return [make.status(frame.phase, detail=frame.detail)]
        case "sleep":
            return []


@attrs.frozen
class RecordedCall:
    """A side effect the adapter issued (what the contract suite inspects)."""

    method: str
    params: dict[str, Any]


@attrs.define
class _Run:
    emitter: RunEmitter
    opts: StartOpts
    text: list[str] = attrs.field(factory=list[str])
    model: str | None = None
    cancel: trio.CancelScope = attrs.field(factory=trio.CancelScope)


class ScriptedCodec(JsonSessionCodec):
    """Session codec: ``{"sessionKey", "sessionId"}`` JSON, like the original executor's driver adapters."""


Script: TypeAlias = Sequence[dict[str, Any]] | Callable[[StartOpts], Sequence[dict[str, Any]]]


class ScriptedAdapter(AdapterBase):
    """An in-memory runtime: replays a script per run, or takes frames from :meth:`inject`.

    ``script`` is a list of frames, or a callable ``(StartOpts) -> frames`` (e.g. to answer
    differently per message). Without a script, runs wait for :meth:`inject`. ``capabilities``
    can be overridden, e.g. to give a context window for rotation tests.
    """

    id = "scripted"

    def __init__(
        self,
        script: Script | None = None,
        *,
        capabilities: Capabilities | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        super().__init__(clock=clock)
        self._script = script
        self._caps = capabilities or Capabilities(
            streaming=True,
            mcp=False,
            worktrees=False,
            resume=True,
            tool_approval=False,
            models=("scripted-model",),
            steerable=False,
            runtime_class="wrapped-oneshot",
            reports_cost_usd=True,
        )
        self.calls: list[RecordedCall] = []
        self._live: dict[str, _Run] = {}
        self._codec = ScriptedCodec(self)

    @property
    def session_codec(self) -> ScriptedCodec:
        return self._codec

    def capabilities(self) -> Capabilities:
        return self._caps

    def recorded_calls(self) -> list[RecordedCall]:
        return list(self.calls)

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        emitter = self.new_run(opts.session_key)
        run = _Run(emitter=emitter, opts=opts, model=opts.model)
        self._live[opts.session_key] = run
        self.calls.append(
            RecordedCall("start", {"sessionKey": opts.session_key, "message": opts.message})
        )
        if self._script is not None:
            frames = self._script(opts) if callable(self._script) else self._script
            if opts.resume_session_id:
                emitter.bind_run_id(opts.resume_session_id)
            self.spawn(self._replay, run, list(frames))
        await trio.lowlevel.checkpoint()
        return emitter.handle

    async def _replay(self, run: _Run, frames: list[dict[str, Any]]) -> None:
        # the events of up to _REPLAY_CHUNK frames go out in one publish (as a CLI adapter
        # publishes what one pipe read holds), then the replay yields; a sleep flushes first
        emitter = run.emitter
        with run.cancel:
            events: list[RuntimeEvent] = []
            pending = 0
            for raw in frames:
                frame = parse_frame(raw)
                if type(frame) is SleepFrame:
                    if events:
                        await emitter.publish(events)
                        events, pending = [], 0
                    await trio.sleep(frame.seconds)
                    continue
                events += self._normalize(run, frame)
                pending += 1
                if pending == _REPLAY_CHUNK:
                    await emitter.publish(events)
                    events, pending = [], 0
                    await trio.lowlevel.checkpoint()
            if events:
                await emitter.publish(events)
            if not emitter.done:
                await emitter.finish("success", "".join(run.text))

    def forget_run(self, session_key: str) -> None:
        self._live.pop(session_key, None)

    async def inject(self, frame: dict[str, Any], session_key: str | None = None) -> None:
        """Push a native frame into a run (the latest run when ``session_key`` is None)."""
        run = (
            self._live.get(session_key)
            if session_key
            else next(reversed(self._live.values()), None)
        )
        if run is None:
            raise LookupError("no run to inject into")
        await run.emitter.publish(self._normalize(run, parse_frame(frame)))

    def _normalize(self, run: _Run, frame: ScriptedFrame | str) -> list[RuntimeEvent]:
        emitter = run.emitter
        if isinstance(frame, str):
            return emitter.note_unknown(frame)
        if frame.type == "init":
            emitter.bind_run_id(frame.session_id)
        else:
            emitter.ensure_run_id()
        # only a result frame reads the text so far: joining it per frame was quadratic
        text = "".join(run.text) if frame.type == "result" else ""
        events = normalize_frame(frame, emitter.factory, text)
        if frame.type == "text" and frame.channel == "assistant":
            run.text.append(frame.text)
        return events

    async def abort(self, run: RunHandle) -> None:
        self.calls.append(
            RecordedCall("abort", {"sessionKey": run.session_key, "runId": run.run_id})
        )
        live = self._live.get(run.session_key)
        if live is None or live.emitter.done:
            await trio.lowlevel.checkpoint()
            return
        live.cancel.cancel()
        await live.emitter.finish("aborted", "".join(live.text))

    async def set_model(self, run: RunHandle, model: str) -> None:
        self.calls.append(RecordedCall("setModel", {"sessionKey": run.session_key, "model": model}))
        live = self._live.get(run.session_key)
        if live is not None:
            live.model = model
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        validate_context_key(key)
        live = self._live.get(run.session_key)
        if live is not None and live.opts.cwd:
            await write_context_file(live.opts.cwd, key, value)
        self.calls.append(RecordedCall("writeContext", {"key": key, "value": value}))
        await trio.lowlevel.checkpoint()
