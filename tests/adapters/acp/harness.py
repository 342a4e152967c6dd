"""Contract harnesses for the ACP adapter: the real adapter and process driver, with a fake ACP
agent (``contract/fake_cli.py`` with stdin rules) as the child.

The fake answers ``initialize`` and ``session/new`` like Hermes did (recorded), answers
``session/cancel`` with the prompt's ``cancelled`` response, and writes whatever the harness feeds
it (``{"emit": <message>}``) as its own stdout — so every frame crosses a real pipe, the line
framer, the JSON-RPC router and the normalizer. The client numbers its requests from 1:
``initialize`` = 1, ``session/new`` = 2, ``session/prompt`` = 3 (no model is set, so no
``session/set_model`` comes between).
"""

from __future__ import annotations

import itertools
import json
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from adapters.acp import AcpAdapter, AcpConfig
from contract import RecordedCall
from contract.fake_cli import fake_cli_argv
from orchestrator.core.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle

from .conftest import conversation

PROMPT_ID = 3
Frame = list[dict[str, Any]]


def _recorded_result(method: str) -> dict[str, Any]:
    pairs = conversation("tool")
    request_id = next(m["id"] for d, m in pairs if d == "in" and m.get("method") == method)
    return next(
        m["result"] for d, m in pairs if d == "out" and m.get("id") == request_id and "result" in m
    )


def agent_rules(session_id: str) -> list[dict[str, Any]]:
    """A fake ACP agent: the recorded handshake answers (with a fresh session id) and cancel."""
    init = json.dumps(_recorded_result("initialize"))
    new = json.dumps(_recorded_result("session/new"))
    recorded_id = _recorded_result("session/new")["sessionId"]
    new = new.replace(recorded_id, session_id)
    cancelled = json.dumps(
        {"jsonrpc": "2.0", "id": PROMPT_ID, "result": {"stopReason": "cancelled"}}
    )
    return [
        {"match": {"method": "initialize"},
         "reply": ['{"jsonrpc": "2.0", "id": {{id}}, "result": ' + init + "}"]},
        {"match": {"method": "session/new"},
         "reply": ['{"jsonrpc": "2.0", "id": {{id}}, "result": ' + new + "}"]},
        {"match": {"method": "session/load"},
         "reply": ['{"jsonrpc": "2.0", "id": {{id}}, "result": ' + new + "}"]},
        {"match": {"method": "session/set_model"},
         "reply": ['{"jsonrpc": "2.0", "id": {{id}}, "result": {}}']},
        {"match": {"method": "session/cancel"}, "reply": [cancelled]},
        {"match": {"emit": {}}, "reply": ["{{emit}}"]},
    ]  # fmt: skip


class AcpFrames:
    """ACP messages for the contract's abstract events (stdin messages for the fake, each)."""

    def __init__(self) -> None:
        self._usage: tuple[int, int] | None = None

    @staticmethod
    def _update(update: dict[str, Any]) -> Frame:
        note = {"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "{{session}}", "update": update}}  # fmt: skip
        return [{"emit": note}]

    def delta(self, text: str) -> Frame:
        return self._update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        )

    def tool_call(self, name: str, input: Any, call_id: str) -> Frame:
        return self._update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": f"{name}: run",
                "kind": "other",
                "status": "pending",
                "rawInput": input,
            }
        )

    def tool_result(self, call_id: str, name: str, output: str, *, is_error: bool = False) -> Frame:
        return self._update(
            {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
             "status": "failed" if is_error else "completed",
             "content": [{"type": "content", "content": {"type": "text", "text": output}}]}
        )  # fmt: skip

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Frame:
        # ACP reports a turn's tokens only in the prompt's response: keep them for final().
        self._usage = (input_tokens, output_tokens)
        return (
            []
            if cost_usd is None
            else self._update(
                {
                    "sessionUpdate": "usage_update",
                    "size": 200_000,
                    "used": input_tokens,
                    "cost": {"amount": cost_usd, "currency": "USD"},
                }
            )
        )

    def final(self, summary: str) -> Frame:
        result: dict[str, Any] = {"stopReason": "end_turn"}
        if self._usage is not None:
            result["usage"] = {"inputTokens": self._usage[0], "outputTokens": self._usage[1]}
        return [{"emit": {"jsonrpc": "2.0", "id": PROMPT_ID, "result": result}}]

    def aborted(self) -> Frame:
        return []  # the fake answers session/cancel with stopReason "cancelled"

    def error(self, message: str) -> Frame:
        error = {"code": -32603, "message": message}
        return [{"emit": {"jsonrpc": "2.0", "id": PROMPT_ID, "error": error}}]

    def unknown(self) -> Frame:
        return self._update({"sessionUpdate": "contract_unknown", "x": 1})


class AcpHarness:
    """The contract harness for the generic ACP adapter."""

    label = "acp"

    def __init__(self) -> None:
        self.frames = AcpFrames()
        self.adapters: list[AcpAdapter] = []
        self._keys = itertools.count(1)
        self._root = Path(tempfile.mkdtemp(prefix="ringleader-acp-test-"))
        self.pids: list[int] = []
        self.run_pids: dict[str, list[int]] = {}
        self._sessions: dict[str, str] = {}

    def config(self) -> AcpConfig:
        session = str(uuid.uuid4())
        self._next_session = session
        return AcpConfig(
            command=fake_cli_argv([], rules=agent_rules(session)),
            sigint_grace=0.5,
            sigterm_grace=0.5,
            cancel_grace=2.0,
            exit_wait=1.0,
        )

    def make_adapter(self) -> RuntimeAdapter:
        adapter = _PerRunAgent(self)
        self.adapters.append(adapter)
        return adapter

    def make_hung_adapter(self) -> RuntimeAdapter:
        """An adapter whose agent never answers ``initialize``."""
        return AcpAdapter(AcpConfig(command=fake_cli_argv([], rules=[])))

    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle:
        key = session_key or f"agent:acp-{next(self._keys)}:main"
        workdir = self._root / key.replace(":", "_")
        run = await adapter.start(
            TaskHandle(),
            StartOpts(agent_id="acp", session_key=key, message="hi", cwd=str(workdir)),
        )
        assert isinstance(adapter, AcpAdapter)
        child = adapter.child_for(run)
        assert child is not None
        self.pids.append(child.pid)
        self.run_pids[key] = [child.pid]
        self.last_run = run
        return run

    def child_pids(self, run: RunHandle) -> list[int]:
        """The agent process of ``run`` (one per run): the contract checks it is gone at done."""
        return self.run_pids.get(run.session_key, [])

    async def emit(self, frame: Any, run: RunHandle | None = None) -> None:
        run = run or self.last_run
        adapter = self.adapters[-1]
        child = adapter.child_for(run)
        if child is None:
            return
        session = adapter.session_of(run).session_id or ""
        for message in frame:
            line = json.dumps(message).replace("{{session}}", session)
            try:
                await child.send_line(line.encode())
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return  # the agent is gone: an aborted or finished run
        await trio.sleep(0.01)  # let the fake echo before a frame of another run is sent

    def recorded_calls(self) -> list[RecordedCall]:
        return [RecordedCall(c.method, c.params) for a in self.adapters for c in a.calls]


class _PerRunAgent(AcpAdapter):
    """Each run's fake agent gets a fresh session id (one argv per run)."""

    def __init__(self, harness: AcpHarness) -> None:
        super().__init__(harness.config())
        self._harness = harness

    def argv(self, args: Sequence[str]) -> list[str]:
        return fake_cli_argv([], rules=agent_rules(str(uuid.uuid4())))


class AcpFaultHarness:
    """Runs whose fake agent replays Hermes' recorded tool turn, with a fault, once the prompt
    has arrived (``start_on``)."""

    label = "acp-faults"

    def __init__(self) -> None:
        self.fault = "stall"
        self._pids: list[int] = []

    def _transcript(self, session_id: str) -> list[str]:
        pairs = conversation("tool")
        recorded = _recorded_result("session/new")["sessionId"]
        start = next(
            i for i, (d, m) in enumerate(pairs) if d == "in" and m.get("method") == "session/prompt"
        )
        lines = [json.dumps(m) for d, m in pairs[start + 1 :] if d == "out"]
        return [line.replace(recorded, session_id) for line in lines]

    def make_adapter(self) -> RuntimeAdapter:
        harness = self

        class Faulty(AcpAdapter):
            def argv(self, args: Sequence[str]) -> list[str]:
                session = str(uuid.uuid4())
                return fake_cli_argv(
                    harness._transcript(session),  # pyright: ignore[reportPrivateUsage]
                    fault=harness.fault,
                    rules=agent_rules(session),
                    start_on={"method": "session/prompt"},
                    delay=0.02,
                )

        return Faulty(
            AcpConfig(sigint_grace=0.5, sigterm_grace=0.5, cancel_grace=1.0, exit_wait=1.0)
        )

    async def start_faulty(self, adapter: RuntimeAdapter, fault: str) -> RunHandle:
        self.fault = fault
        run = await adapter.start(
            TaskHandle(),
            StartOpts(
                agent_id="acp",
                session_key="acp:fault",
                message="go",
                cwd=tempfile.mkdtemp(prefix="ringleader-acp-fault-"),
            ),
        )
        assert isinstance(adapter, AcpAdapter)
        child = adapter.child_for(run)
        assert child is not None
        self._pids.append(child.pid)
        return run

    def spawned_pids(self) -> list[int]:
        return list(self._pids)
