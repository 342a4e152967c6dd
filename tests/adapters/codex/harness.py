"""Contract harnesses for the Codex adapter: the real adapter and process driver, with a fake
Codex (``contract/fake_cli.py``) as the child.

Exec mode: the fake prints the transcript's opening lines (``thread.started``, ``turn.started``),
then echoes what the harness feeds it on stdin (``{"emit": <line>}``) as Codex stdout lines, and
exits on ``{"ctl": "exit"}`` — so every frame goes through a real pipe, the line framer, the
dialect and the normalizer.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

import trio

from adapters.codex import CodexAdapter, CodexConfig
from contract import RecordedCall
from contract.fake_cli import fake_cli_argv
from orchestrator.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle

from .conftest import app_messages, fixture_lines

EXEC_RULES: list[dict[str, Any]] = [
    {"match": {"emit": {}}, "reply": ["{{emit}}"]},
    {"match": {"ctl": "exit", "code": 0}, "exit": 0},
    {"match": {"ctl": "exit", "code": 1}, "exit": 1},
]

Frame = list[dict[str, Any]]


class ExecFrames:
    """Codex exec lines for the contract's abstract events (a list of stdin messages each)."""

    def __init__(self) -> None:
        self._n = itertools.count()
        self._usage: dict[int, tuple[int, int]] = {}

    @staticmethod
    def _emit(line: dict[str, Any]) -> dict[str, Any]:
        return {"emit": line}

    def delta(self, text: str) -> Frame:
        item = {"id": f"item_{next(self._n)}", "type": "agent_message", "text": text}
        return [self._emit({"type": "item.completed", "item": item})]

    def tool_call(self, name: str, input: Any, call_id: str) -> Frame:
        # An MCP tool call is the only Codex item with a free name and input; no server → the
        # bare tool name.
        item = {"id": call_id, "type": "mcp_tool_call", "server": "", "tool": name,
                "arguments": input, "status": "in_progress"}  # fmt: skip
        return [self._emit({"type": "item.started", "item": item})]

    def tool_result(self, call_id: str, name: str, output: str, *, is_error: bool = False) -> Frame:
        item: dict[str, Any] = {
            "id": call_id, "type": "mcp_tool_call", "server": "", "tool": name, "arguments": {},
            "status": "failed" if is_error else "completed",
            "result": None if is_error else {"content": [{"type": "text", "text": output}]},
            "error": {"message": output} if is_error else None,
        }  # fmt: skip
        return [self._emit({"type": "item.completed", "item": item})]

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Frame:
        # Codex reports the thread's cumulative usage on turn.completed.
        usage = {"input_tokens": input_tokens, "cached_input_tokens": 0,
                 "output_tokens": output_tokens, "reasoning_output_tokens": 0}  # fmt: skip
        return [self._emit({"type": "turn.completed", "usage": usage})]

    def final(self, summary: str) -> Frame:
        return [self._emit({"type": "turn.completed", "usage": {}}), {"ctl": "exit", "code": 0}]

    def aborted(self) -> Frame:
        return []  # Codex prints nothing when interrupted

    def error(self, message: str) -> Frame:
        return [
            self._emit({"type": "error", "message": message}),
            self._emit({"type": "turn.failed", "error": {"message": message}}),
            {"ctl": "exit", "code": 1},
        ]

    def unknown(self) -> Frame:
        return [self._emit({"type": "contract.unknown", "payload": {"x": 1}})]


def state_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="ringleader-codex-test-"))


class CodexExecHarness:
    """The contract harness for exec mode."""

    label = "codex-exec"

    def __init__(self) -> None:
        self.frames = ExecFrames()
        self.adapters: list[CodexAdapter] = []
        self._keys = itertools.count(1)
        self._root = state_root()
        self.pids: list[int] = []
        self.run_pids: dict[str, list[int]] = {}

    def config(self) -> CodexConfig:
        return CodexConfig(
            launcher=lambda args: fake_cli_argv(self._opening(), rules=EXEC_RULES),
            launcher_stdin=True,
            state_root=self._root,
            model="gpt-5.5",
            sigint_grace=0.5,
            sigterm_grace=0.5,
        )

    @staticmethod
    def _opening() -> list[str]:
        """Codex's first two lines, with a fresh thread id per run."""
        first, second = (line.decode() for line in fixture_lines("exec-text")[:2])
        thread = json.loads(first)["thread_id"]
        return [first.replace(thread, str(uuid.uuid4())), second]

    def make_adapter(self) -> RuntimeAdapter:
        adapter = CodexAdapter(self.config())
        self.adapters.append(adapter)
        return adapter

    def make_hung_adapter(self) -> RuntimeAdapter:
        """An adapter whose ``codex --version`` never answers."""
        hang = self._root / "hung-codex"
        hang.write_text("#!/bin/sh\nsleep 30\n")
        hang.chmod(0o755)
        return CodexAdapter(CodexConfig(binary=str(hang), state_root=self._root))

    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle:
        key = session_key or f"agent:codex-{next(self._keys)}:main"
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="codex", session_key=key, message="hi")
        )
        assert isinstance(adapter, CodexAdapter)
        child = adapter.child_for(run)
        assert child is not None
        self.pids.append(child.pid)
        self.run_pids.setdefault(key, []).append(child.pid)
        return run

    def child_pids(self, run: RunHandle) -> list[int]:
        """The processes of ``run`` (one per run): the contract checks they are gone at done."""
        return self.run_pids.get(run.session_key, [])

    async def emit(self, frame: Any, run: RunHandle | None = None) -> None:
        adapter = self.adapters[-1]
        if run is None:
            run = next(reversed(adapter._live.values())).emitter.handle  # pyright: ignore[reportPrivateUsage]
        child = adapter.child_for(run)
        if child is None:
            return
        for message in frame:
            try:
                await child.send_line(json.dumps(message).encode())
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return  # the fake (like Codex) is gone: an aborted or finished run
        # let the fake echo before the next frame of another run is sent
        await trio.sleep(0.01)

    def recorded_calls(self) -> list[RecordedCall]:
        return [RecordedCall(c.method, c.params) for a in self.adapters for c in a.calls]


class CodexExecFaultHarness:
    """Exec runs whose fake Codex replays a recorded transcript with a fault."""

    label = "codex-exec-faults"

    def __init__(self) -> None:
        self.fault = "stall"
        self._root = state_root()
        self._pids: list[int] = []
        self._transcript = [line.decode() for line in fixture_lines("exec-tool")]

    def make_adapter(self) -> RuntimeAdapter:
        return CodexAdapter(
            CodexConfig(
                launcher=lambda args: fake_cli_argv(self._transcript, fault=self.fault),
                state_root=self._root,
                sigint_grace=0.5,
                sigterm_grace=0.5,
            )
        )

    async def start_faulty(self, adapter: RuntimeAdapter, fault: str) -> RunHandle:
        self.fault = fault
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="codex", session_key="codex:fault", message="go")
        )
        assert isinstance(adapter, CodexAdapter)
        child = adapter.child_for(run)
        assert child is not None
        self._pids.append(child.pid)
        return run

    def spawned_pids(self) -> list[int]:
        return list(self._pids)


# ------------------------------------------------------------------------------ app-server


def app_rules(thread_id: str) -> list[dict[str, Any]]:
    """A fake app-server: answers the handshake, interrupts, echoes ``{"emit": …}``."""
    thread = json.dumps({"id": thread_id, "modelProvider": "ringleader"})
    turn = json.dumps({"id": "turn-1", "status": "inProgress", "items": []})
    started = json.dumps(
        {"method": "turn/started", "params": {"threadId": thread_id, "turn": json.loads(turn)}}
    )
    interrupted = json.dumps(
        {"method": "turn/completed", "params": {"threadId": thread_id,
         "turn": {"id": "turn-1", "status": "interrupted", "error": None, "items": []}}}
    )  # fmt: skip
    return [
        {"match": {"method": "initialize"},
         "reply": ['{"id": {{id}}, "result": {"userAgent": "fake/0.169.0"}}']},
        {"match": {"method": "thread/start"},
         "reply": ['{"id": {{id}}, "result": {"thread": ' + thread + "}}"]},
        {"match": {"method": "thread/resume"},
         "reply": ['{"id": {{id}}, "result": {"thread": ' + thread + "}}"]},
        {"match": {"method": "turn/start"},
         "reply": ['{"id": {{id}}, "result": {"turn": ' + turn + "}}", started]},
        {"match": {"method": "turn/interrupt"}, "reply": ['{"id": {{id}}, "result": {}}', interrupted]},
        {"match": {"emit": {}}, "reply": ["{{emit}}"]},
        {"match": {"ctl": "exit", "code": 1}, "exit": 1},
    ]  # fmt: skip


class AppFrames:
    """App-server notifications for the contract's abstract events."""

    def __init__(self) -> None:
        self._n = itertools.count()

    @staticmethod
    def _note(method: str, params: dict[str, Any]) -> Frame:
        return [{"emit": {"method": method, "params": params}}]

    def delta(self, text: str) -> Frame:
        return self._note(
            "item/agentMessage/delta", {"itemId": f"msg_{next(self._n)}", "delta": text}
        )

    def tool_call(self, name: str, input: Any, call_id: str) -> Frame:
        item = {"type": "mcpToolCall", "id": call_id, "server": "", "tool": name,
                "arguments": input, "status": "inProgress"}  # fmt: skip
        return self._note("item/started", {"item": item})

    def tool_result(self, call_id: str, name: str, output: str, *, is_error: bool = False) -> Frame:
        item: dict[str, Any] = {
            "type": "mcpToolCall", "id": call_id, "server": "", "tool": name, "arguments": {},
            "status": "failed" if is_error else "completed",
            "result": None if is_error else {"content": [{"type": "text", "text": output}]},
            "error": {"message": output} if is_error else None,
        }  # fmt: skip
        return self._note("item/completed", {"item": item})

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Frame:
        total = {"inputTokens": input_tokens, "outputTokens": output_tokens,
                 "cachedInputTokens": 0, "totalTokens": input_tokens + output_tokens}  # fmt: skip
        return self._note(
            "thread/tokenUsage/updated", {"tokenUsage": {"total": total, "last": total}}
        )

    def final(self, summary: str) -> Frame:
        turn = {"id": "turn-1", "status": "completed", "error": None, "items": []}
        return self._note("turn/completed", {"turn": turn})

    def aborted(self) -> Frame:
        return []  # the interrupt itself produces turn/completed{interrupted}

    def error(self, message: str) -> Frame:
        turn = {"id": "turn-1", "status": "failed", "items": [],
                "error": {"message": message, "codexErrorInfo": "other"}}  # fmt: skip
        return [
            *self._note("error", {"error": {"message": message}, "willRetry": False}),
            *self._note("turn/completed", {"turn": turn}),
        ]

    def unknown(self) -> Frame:
        return self._note("contract/unknown", {"x": 1})


class CodexAppHarness(CodexExecHarness):
    """The contract harness for app-server mode (a fake app-server on real pipes)."""

    label = "codex-app-server"

    def __init__(self) -> None:
        super().__init__()
        self.frames = AppFrames()  # type: ignore[assignment]

    def config(self) -> CodexConfig:
        return CodexConfig(
            mode="app-server",
            launcher=lambda args: fake_cli_argv([], rules=app_rules(str(uuid.uuid4()))),
            state_root=self._root,
            model="gpt-5.5",
            sigint_grace=0.5,
            sigterm_grace=0.5,
            interrupt_grace=2.0,
        )

    def recorded_calls(self) -> list[RecordedCall]:
        return [RecordedCall(c.method, c.params) for a in self.adapters for c in a.calls]


class CodexAppFaultHarness(CodexExecFaultHarness):
    """App-server runs whose fake replays recorded notifications with a fault (after the
    handshake, which the rules answer)."""

    label = "codex-app-server-faults"

    def make_adapter(self) -> RuntimeAdapter:
        def launch(args: Any) -> list[str]:
            thread = str(uuid.uuid4())
            recorded = app_messages("text")
            old_thread = next(m for m in recorded if m.get("id") == 2)["result"]["thread"]["id"]
            notes = [
                json.dumps(m).replace(old_thread, thread)
                for m in recorded
                if "method" in m and "id" not in m and m["method"] != "configWarning"
            ]
            return fake_cli_argv(notes, fault=self.fault, rules=app_rules(thread), delay=0.05)

        return CodexAdapter(
            CodexConfig(
                mode="app-server",
                launcher=launch,
                state_root=self._root,
                sigint_grace=0.5,
                sigterm_grace=0.5,
                interrupt_grace=1.0,
                handshake_timeout=5.0,
            )
        )
