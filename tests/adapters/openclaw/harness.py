"""Contract harness for the OpenClaw adapter: the real adapter, client and normalizer, attached
to a fake gateway (:mod:`.fake_gateway`) — a real WebSocket server in the test's trio run.

The frame builders return small intents (``{"kind": "delta", "text": …}``); :meth:`emit` turns
each into the gateway frames OpenClaw 2026.9.6 sends for it (as recorded): an ``assistant`` frame
with the cumulative ``text`` and the ``delta``, **plus** the ``chat`` frame that repeats it (so a
test passing through the harness also proves the text is not doubled); tool ``start`` / ``update``
/ ``result`` with ``item`` frames around them; ``lifecycle`` ``end`` + ``chat final`` + the final
``agent`` answer with its usage; and so on.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import attrs
import trio

from adapters.openclaw import OpenClawAdapter, OpenClawConfig
from contract import RecordedCall
from orchestrator.core.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle

from .fake_gateway import FakeGateway

Intent = dict[str, Any]


class OpenClawFrames:
    def delta(self, text: str) -> Intent:
        return {"kind": "delta", "text": text}

    def tool_call(self, name: str, input: Any, call_id: str) -> Intent:
        return {"kind": "tool_call", "name": name, "input": input, "id": call_id}

    def tool_result(
        self, call_id: str, name: str, output: str, *, is_error: bool = False
    ) -> Intent:
        return {"kind": "tool_result", "id": call_id, "name": name, "output": output,
                "is_error": is_error}  # fmt: skip

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Intent:
        return {"kind": "cost", "input": input_tokens, "output": output_tokens}

    def final(self, summary: str) -> Intent:
        return {"kind": "final", "summary": summary}

    def aborted(self) -> Intent:
        return {"kind": "aborted"}

    def error(self, message: str) -> Intent:
        return {"kind": "error", "message": message}

    def unknown(self) -> Intent:
        return {"kind": "unknown"}


@attrs.define(eq=False)
class _RunFrames:
    """What the fake gateway has sent for one run (to build the next frames like OpenClaw)."""

    run_id: str
    key: str
    item: str = attrs.field(factory=lambda: f"{uuid.uuid4()}:1")
    text: str = ""
    seq: int = 0
    usage: tuple[int, int] = (0, 0)


class _HarnessAdapter(OpenClawAdapter):
    """The real adapter; entering it also starts its fake gateway (in the adapter's nursery)."""

    fake: FakeGateway

    _serving: trio.CancelScope | None = None

    async def __aenter__(self) -> _HarnessAdapter:
        await super().__aenter__()
        await self.nursery.start(self._serve_fake)
        return self

    async def _serve_fake(self, *, task_status: trio.TaskStatus[None]) -> None:
        with trio.CancelScope() as scope:
            self._serving = scope
            await self.fake.serve(task_status=task_status)

    async def _shutdown(self) -> None:
        await super()._shutdown()
        if self._serving is not None:
            self._serving.cancel()


class OpenClawHarness:
    label = "openclaw (fake gateway)"

    def __init__(self, *, hang: bool = False, **config: Any) -> None:
        self.frames = OpenClawFrames()
        self._config = config
        self._hang = hang
        self.adapter: _HarnessAdapter | None = None
        self.fake: FakeGateway | None = None
        self.workspace = Path(tempfile.mkdtemp(prefix="oc-contract-ws-"))
        self._runs: dict[str, _RunFrames] = {}

    def make_adapter(self) -> RuntimeAdapter:
        fake = FakeGateway(hang=self._hang)
        config = OpenClawConfig(
            url=fake.url,
            token=fake.token,
            workspace=self.workspace,
            final_grace=2.0,
            abort_grace=3.0,
            **self._config,
        )
        adapter = _HarnessAdapter(config)
        adapter.fake = fake
        self.adapter, self.fake = adapter, fake
        return adapter

    def make_hung_adapter(self) -> RuntimeAdapter:
        """An adapter attached to a gateway that accepts the socket and never answers."""
        return OpenClawHarness(hang=True, client_options={"connect_timeout": 30.0}).make_adapter()

    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle:
        key = session_key or f"contract:{uuid.uuid4().hex[:8]}"
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="contract", session_key=key, message="hi")
        )
        assert isinstance(adapter, _HarnessAdapter)
        started = [c.params for c in adapter.calls if c.method == "start"][-1]
        self._runs[key] = _RunFrames(run_id=started["runId"], key=started["sessionKey"])
        return run

    def recorded_calls(self) -> list[RecordedCall]:
        calls: list[RecordedCall] = []
        if self.adapter is not None:
            calls += [RecordedCall(c.method, c.params) for c in self.adapter.calls]
        if self.fake is not None:
            calls += [
                RecordedCall(str(r.get("method")), r.get("params")) for r in self.fake.requests
            ]
        return calls

    async def emit(self, frame: Any, run: RunHandle | None = None) -> None:
        assert self.fake is not None
        state = self._runs[run.session_key] if run else list(self._runs.values())[-1]
        for msg in self._gateway_frames(frame, state):
            await self.fake.push(msg)
        await trio.sleep(0.01)

    # -- intents → gateway frames ----------------------------------------------------------------

    def _agent(self, s: _RunFrames, stream: str, data: dict[str, Any]) -> dict[str, Any]:
        s.seq += 1
        return {"type": "event", "event": "agent", "payload": {
            "runId": s.run_id, "sessionKey": s.key, "agentId": "main", "stream": stream,
            "data": data, "seq": s.seq, "ts": 0,
        }}  # fmt: skip

    def _chat(self, s: _RunFrames, state: str, **extra: Any) -> dict[str, Any]:
        return {"type": "event", "event": "chat", "payload": {
            "runId": s.run_id, "sessionKey": s.key, "agentId": "main", "seq": s.seq,
            "state": state, **extra,
        }}  # fmt: skip

    def _gateway_frames(self, intent: Intent, s: _RunFrames) -> list[dict[str, Any]]:
        kind = intent["kind"]
        if kind == "delta":
            s.text += intent["text"]
            message = {"role": "assistant", "content": [{"type": "text", "text": s.text}]}
            return [
                self._agent(s, "assistant", {"text": s.text, "delta": intent["text"],
                                              "itemId": s.item}),
                self._chat(s, "delta", deltaText=intent["text"], message=message),
            ]  # fmt: skip
        if kind == "tool_call":
            cid, name = intent["id"], intent["name"]
            return [
                self._agent(s, "item", {"itemId": f"tool:{cid}", "toolCallId": cid, "name": name,
                                         "kind": "tool", "phase": "start", "status": "running"}),
                self._agent(s, "tool", {"phase": "start", "name": name, "toolCallId": cid,
                                         "args": intent["input"]}),
            ]  # fmt: skip
        if kind == "tool_result":
            cid, name = intent["id"], intent["name"]
            content = [{"type": "text", "text": intent["output"]}]
            return [
                self._agent(s, "tool", {"phase": "update", "name": name, "toolCallId": cid,
                                         "partialResult": {"content": content}}),
                self._agent(s, "tool", {"phase": "result", "name": name, "toolCallId": cid,
                                         "isError": intent["is_error"],
                                         "result": {"content": content}}),
                self._agent(s, "item", {"itemId": f"tool:{cid}", "toolCallId": cid, "name": name,
                                         "kind": "tool", "phase": "end", "status": "completed"}),
            ]  # fmt: skip
        if kind == "cost":
            s.usage = (intent["input"], intent["output"])
            # as OpenClaw 2026.9.6: the usage stream carries only the run's output tokens
            return [self._agent(s, "usage", {"outputTokens": intent["output"]})]
        if kind == "final":
            inp, out = s.usage
            message = {"role": "assistant", "content": [{"type": "text", "text": s.text}]}
            usage = {"input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0,
                     "total": inp + out, "cost": {"total": 0}} if inp or out else None  # fmt: skip
            return [
                self._agent(s, "lifecycle", {"phase": "end", "aborted": False,
                                              "stopReason": "stop", "executionSettled": True}),
                self._chat(s, "final", stopReason="stop", message=message),
                {"type": "res", "id": s.run_id, "ok": True, "payload": {
                    "runId": s.run_id, "status": "ok", "summary": "completed",
                    "result": {"payloads": [{"text": intent["summary"], "mediaUrl": None}],
                               "meta": {"agentMeta": {"usage": usage} if usage else {},
                                        "aborted": False}},
                }},
            ]  # fmt: skip
        if kind == "aborted":
            s.seq = 0  # OpenClaw restarts the per-run seq on the late error
            return [
                self._agent(s, "lifecycle", {"phase": "error", "aborted": True,
                                              "error": "This operation was aborted",
                                              "stopReason": "aborted"}),
                {"type": "res", "id": s.run_id, "ok": True, "payload": {
                    "runId": s.run_id, "status": "timeout", "summary": "aborted",
                    "stopReason": "rpc"}},
            ]  # fmt: skip
        if kind == "error":
            message = intent["message"]
            return [
                self._agent(s, "lifecycle", {"phase": "error", "error": message,
                                              "errorObservation": {"failoverReason": "server_error"},
                                              "executionSettled": True}),
                self._chat(s, "error", errorMessage=message),
                {"type": "res", "id": s.run_id, "ok": False,
                 "payload": {"runId": s.run_id, "status": "error", "summary": message},
                 "error": {"code": "UNAVAILABLE", "message": message}},
            ]  # fmt: skip
        if kind == "unknown":
            return [self._agent(s, "mystery-stream", {"phase": "whatever"})]
        raise AssertionError(f"unknown intent {intent!r}")
