"""The contract harness for the native runtime: runs driven by a scripted model fed by frames.

A *native frame* here is a step for the run's :class:`ScriptedModel` (text deltas, a reply with a
tool call, cumulative usage, a failure, an unknown subscriber event) or a tool result for the
harness's tools (``Bash``, ``Read``, ``Edit``), which wait for it. So the contract drives the real
loop, executor and normalizer end to end; nothing is injected past the model.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import trio

from adapters.native.adapter import NativeAdapter
from adapters.native.messages import ToolCall, ToolResultData
from adapters.native.models.base import ModelError
from adapters.native.models.scripted import Delta, Emit, Fail, Reply, ScriptedModel, Usage
from adapters.native.subscriber import UnknownEvent
from adapters.native.tools import Tool, ToolContext
from contract import RecordedCall
from orchestrator.core.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle


@attrs.frozen
class ToolResultFrame:
    call_id: str
    output: str
    is_error: bool


@attrs.frozen
class NoOp:
    pass


class NativeFrames:
    def delta(self, text: str) -> Any:
        return Delta(text)

    def tool_call(self, name: str, input: Any, call_id: str) -> Any:
        return Reply(
            tool_calls=[ToolCall(tool_name=name, input_args=input, id=call_id)],
            tokens_in=0,
            tokens_out=0,
        )

    def tool_result(self, call_id: str, name: str, output: str, *, is_error: bool = False) -> Any:
        return ToolResultFrame(call_id, output, is_error)

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Any:
        return Usage(input_tokens, output_tokens)

    def final(self, summary: str) -> Any:
        return Reply(text="", tokens_in=0, tokens_out=0)

    def aborted(self) -> Any:
        return NoOp()

    def error(self, message: str) -> Any:
        return Fail(ModelError(message, "bad_request", 400))

    def unknown(self) -> Any:
        return Emit(UnknownEvent("contract_unknown_event", {"x": 1}))


class NativeHarness:
    label = "native"

    def __init__(self) -> None:
        self.frames = NativeFrames()
        self._adapter: NativeAdapter | None = None
        self._models: dict[str, ScriptedModel] = {}
        self._results: dict[str, ToolResultFrame] = {}
        self._arrived: dict[str, trio.Event] = {}
        self._keys = itertools.count(1)

    def _event(self, call_id: str) -> trio.Event:
        return self._arrived.setdefault(call_id, trio.Event())

    async def _wait_result(self, value: Any, ctx: ToolContext) -> ToolResultData:
        await self._event(ctx.call_id).wait()
        frame = self._results[ctx.call_id]
        if frame.is_error:
            return ToolResultData(status="error", message=frame.output, error_kind="failed")
        return ToolResultData(status="success", data=frame.output)

    def make_adapter(self) -> RuntimeAdapter:
        tools = [
            Tool(
                name=n,
                description=f"{n} (contract)",
                do=self._wait_result,
                json_schema={"type": "object"},
            )
            for n in ("Bash", "Read", "Edit")
        ]

        def model_for(opts: StartOpts) -> ScriptedModel:
            model = ScriptedModel(wait=True, model="contract-model")
            self._models[opts.session_key] = model
            return model

        self._adapter = NativeAdapter(model_factory=model_for, tools=tools)
        return self._adapter

    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle:
        key = session_key or f"agent:native-{next(self._keys)}:main"
        return await adapter.start(
            TaskHandle(), StartOpts(agent_id="native-1", session_key=key, message="hi")
        )

    async def emit(self, frame: Any, run: RunHandle | None = None) -> None:
        if isinstance(frame, NoOp):
            await trio.lowlevel.checkpoint()
            return
        if isinstance(frame, ToolResultFrame):
            self._results[frame.call_id] = frame
            self._event(frame.call_id).set()
            await trio.lowlevel.checkpoint()
            return
        model = self._models[run.session_key] if run else next(reversed(self._models.values()))
        model.push(frame)
        await trio.lowlevel.checkpoint()

    def recorded_calls(self) -> list[RecordedCall]:
        assert self._adapter is not None
        return [RecordedCall(c.method, c.params) for c in self._adapter.calls]

    def make_hung_adapter(self) -> None:
        """The loop runs in-process and health() does not call the model: nothing can hang."""
        return None
