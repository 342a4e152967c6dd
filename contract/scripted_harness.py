"""A complete harness for the scripted adapter: the worked example for adapter authors."""

from __future__ import annotations

import itertools
from typing import Any

from adapters.scripted import ScriptedAdapter
from orchestrator.core.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle

from .harness import RecordedCall

__all__ = ["ScriptedFrames", "ScriptedHarness"]


class ScriptedFrames:
    """Native frames of the scripted adapter for each abstract event."""

    def delta(self, text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}

    def tool_call(self, name: str, input: Any, call_id: str) -> dict[str, Any]:
        return {"type": "tool-call", "id": call_id, "name": name, "input": input}

    def tool_result(
        self, call_id: str, name: str, output: str, *, is_error: bool = False
    ) -> dict[str, Any]:
        return {
            "type": "tool-result",
            "id": call_id,
            "name": name,
            "output": output,
            "isError": is_error,
        }

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> dict[str, Any]:
        return {
            "type": "usage",
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "costUsd": cost_usd,
        }

    def final(self, summary: str) -> dict[str, Any]:
        return {"type": "result", "ok": True, "summary": summary}

    def aborted(self) -> dict[str, Any]:
        return {"type": "result", "ok": False, "aborted": True}

    def error(self, message: str) -> dict[str, Any]:
        return {"type": "result", "ok": False, "errorMessage": message}

    def unknown(self) -> dict[str, Any]:
        return {"type": "contract-unknown-frame", "payload": {"x": 1}}


class ScriptedHarness:
    """Drives :class:`~adapters.scripted.ScriptedAdapter` through injected frames."""

    label = "scripted"

    def __init__(self) -> None:
        self.frames = ScriptedFrames()
        self._adapter: ScriptedAdapter | None = None
        self._keys = itertools.count(1)

    def make_adapter(self) -> RuntimeAdapter:
        self._adapter = ScriptedAdapter()
        return self._adapter

    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle:
        key = session_key or f"agent:scripted-{next(self._keys)}:main"
        return await adapter.start(
            TaskHandle(), StartOpts(agent_id="scripted-1", session_key=key, message="hi")
        )

    async def emit(self, frame: Any, run: RunHandle | None = None) -> None:
        assert self._adapter is not None, "make_adapter() first"
        await self._adapter.inject(frame, run.session_key if run else None)

    def recorded_calls(self) -> list[RecordedCall]:
        assert self._adapter is not None
        return [RecordedCall(c.method, c.params) for c in self._adapter.calls]

    def make_hung_adapter(self) -> None:
        """The scripted runtime lives in memory: there is nothing that could hang."""
        return None
