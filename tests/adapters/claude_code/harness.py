"""Contract harnesses for the Claude Code adapter: the real adapter and process driver, with a
fake Claude Code (``contract/fake_cli.py``) as the child.

One-shot: the fake prints a recorded ``system/init`` line (with a fresh session id), then echoes
what the harness feeds it on stdin (``{"emit": <line>}``) as Claude Code stdout lines, exits on
``{"ctl": "exit"}``, and on SIGINT writes an ``aborted_streaming`` result and exits 0, as the real
CLI does. Long-lived: the fake also answers ``initialize`` and ``interrupt`` control requests and
starts each turn (a ``user`` line) with an init line. Every frame goes through a real pipe, the
line framer, the dialect and the normalizer.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

import trio

from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig
from contract import RecordedCall
from contract.fake_cli import fake_cli_argv
from orchestrator.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle

from .conftest import fixture_lines

Frame = list[dict[str, Any]]


def init_line(session_id: str) -> str:
    """The recorded init line with ``session_id``."""
    first = fixture_lines("text")[0].decode()
    return first.replace(json.loads(first)["session_id"], session_id)


def result_line(
    session_id: str,
    *,
    subtype: str = "success",
    is_error: bool = False,
    result: str | None = None,
    terminal_reason: str = "completed",
    api_error_status: int | None = None,
) -> dict[str, Any]:
    return {
        "type": "result", "subtype": subtype, "is_error": is_error, "result": result,
        "session_id": session_id, "terminal_reason": terminal_reason,
        "api_error_status": api_error_status,
    }  # fmt: skip


def aborted_line(session_id: str) -> str:
    return json.dumps(
        result_line(
            session_id, subtype="error_during_execution", is_error=True,
            terminal_reason="aborted_streaming",
        )
    )  # fmt: skip


ONE_SHOT_RULES: list[dict[str, Any]] = [
    {"match": {"emit": {}}, "reply": ["{{emit}}"]},
    {"match": {"ctl": "exit", "code": 0}, "exit": 0},
    {"match": {"ctl": "exit", "code": 1}, "exit": 1},
]


def live_rules(session_id: str) -> list[dict[str, Any]]:
    """A fake long-lived Claude Code: handshake, turns, interrupts, echoes ``{"emit": …}``."""
    ok = ('{"type":"control_response","response":{"subtype":"success","request_id":'
          '{{request_id}},"response":{}}}')  # fmt: skip
    return [
        {"match": {"type": "control_request", "request": {"subtype": "initialize"}}, "reply": [ok]},
        {"match": {"type": "control_request", "request": {"subtype": "interrupt"}},
         "reply": [ok, aborted_line(session_id)]},
        {"match": {"type": "control_request", "request": {"subtype": "set_model"}}, "reply": [ok]},
        {"match": {"type": "user"}, "reply": [init_line(session_id)]},
        {"match": {"emit": {}}, "reply": ["{{emit}}"]},
        {"match": {"ctl": "exit", "code": 1}, "exit": 1},
    ]  # fmt: skip


class ClaudeFrames:
    """Claude Code stdout lines for the contract's abstract events (stdin messages for the fake).

    ``cost`` gives a marker that the harness turns into ``message_start`` / ``message_delta``
    stream events carrying the difference to the run's previous figures (the stream reports
    each model request's usage; the adapter adds them up)."""

    def __init__(self) -> None:
        self._n = itertools.count()

    @staticmethod
    def _emit(line: dict[str, Any]) -> dict[str, Any]:
        return {"emit": line}

    def delta(self, text: str) -> Frame:
        event = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": text}}  # fmt: skip
        return [self._emit({"type": "stream_event", "event": event, "parent_tool_use_id": None})]

    def tool_call(self, name: str, input: Any, call_id: str) -> Frame:
        message = {"id": f"msg_{next(self._n)}", "role": "assistant", "model": "fake",
                   "content": [{"type": "tool_use", "id": call_id, "name": name, "input": input}]}  # fmt: skip
        return [self._emit({"type": "assistant", "message": message, "parent_tool_use_id": None})]

    def tool_result(self, call_id: str, name: str, output: str, *, is_error: bool = False) -> Frame:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": output,
                 "is_error": is_error}  # fmt: skip
        message = {"role": "user", "content": [block]}
        return [self._emit({"type": "user", "message": message, "parent_tool_use_id": None})]

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Frame:
        return [{"cost": [input_tokens, output_tokens]}]

    def final(self, summary: str) -> Frame:
        return [self._emit(result_line("", result=summary)), {"ctl": "exit", "code": 0}]

    def aborted(self) -> Frame:
        return []  # the abort itself makes Claude Code write its aborted result

    def error(self, message: str) -> Frame:
        line = result_line("", is_error=True, result=message, terminal_reason="api_error",
                           api_error_status=500)  # fmt: skip
        return [self._emit(line), {"ctl": "exit", "code": 1}]

    def unknown(self) -> Frame:
        return [self._emit({"type": "contract_unknown", "payload": {"x": 1}})]


def state_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="ringleader-claude-test-"))


class ClaudeOneShotHarness:
    """The contract harness for one-shot mode."""

    label = "claude-code-one-shot"
    mode = "one-shot"

    def __init__(self) -> None:
        self.frames = ClaudeFrames()
        self.adapters: list[ClaudeCodeAdapter] = []
        self._keys = itertools.count(1)
        self._root = state_root()
        self.pids: list[int] = []
        self.run_pids: dict[str, list[int]] = {}
        self._usage: dict[str, tuple[int, int]] = {}

    def config(self) -> ClaudeCodeConfig:
        def launch(args: Any) -> list[str]:
            session = str(uuid.uuid4())
            return fake_cli_argv(
                [init_line(session)], rules=ONE_SHOT_RULES, on_sigint=aborted_line(session)
            )

        return ClaudeCodeConfig(
            launcher=launch,
            launcher_stdin=True,
            state_root=self._root,
            model="claude-sonnet-4-6",
            sigint_grace=0.5,
            sigterm_grace=0.5,
        )

    def make_adapter(self) -> RuntimeAdapter:
        adapter = ClaudeCodeAdapter(self.config())
        self.adapters.append(adapter)
        return adapter

    def make_hung_adapter(self) -> RuntimeAdapter:
        """An adapter whose ``claude --version`` never answers."""
        hang = self._root / "hung-claude"
        hang.write_text("#!/bin/sh\nsleep 30\n")
        hang.chmod(0o755)
        return ClaudeCodeAdapter(ClaudeCodeConfig(binary=str(hang), state_root=self._root))

    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle:
        key = session_key or f"agent:claude-{next(self._keys)}:main"
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="claude", session_key=key, message="hi")
        )
        assert isinstance(adapter, ClaudeCodeAdapter)
        child = adapter.child_for(run)
        assert child is not None
        self.pids.append(child.pid)
        self.run_pids.setdefault(key, []).append(child.pid)
        return run

    def child_pids(self, run: RunHandle) -> list[int]:
        """The processes of ``run`` (one per run): the contract checks they are gone at done."""
        return self.run_pids.get(run.session_key, [])

    def _run(self, adapter: ClaudeCodeAdapter, run: RunHandle | None) -> RunHandle:
        if run is not None:
            return run
        return next(reversed(adapter._live.values())).emitter.handle  # pyright: ignore[reportPrivateUsage]

    async def emit(self, frame: Any, run: RunHandle | None = None) -> None:
        adapter = self.adapters[-1]
        run = self._run(adapter, run)
        child = adapter.child_for(run)
        if child is None:
            return
        for message in frame:
            for line in self._lines(run, message):
                try:
                    await child.send_line(json.dumps(line).encode())
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    return  # the fake (like Claude Code) is gone: an aborted or finished run
        await trio.sleep(0.01)  # let the fake echo before the next frame of another run is sent

    def _lines(self, run: RunHandle, message: dict[str, Any]) -> list[dict[str, Any]]:
        if "cost" not in message:
            return [message]
        total_in, total_out = message["cost"]
        prev_in, prev_out = self._usage.get(run.session_key, (0, 0))
        self._usage[run.session_key] = (total_in, total_out)
        start = {"type": "message_start", "message": {"id": f"msg_{uuid.uuid4().hex[:8]}",
                 "usage": {"input_tokens": total_in - prev_in, "output_tokens": 1}}}  # fmt: skip
        delta = {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                 "usage": {"output_tokens": total_out - prev_out}}  # fmt: skip
        return [
            {"emit": {"type": "stream_event", "event": start, "parent_tool_use_id": None}},
            {"emit": {"type": "stream_event", "event": delta, "parent_tool_use_id": None}},
        ]

    def recorded_calls(self) -> list[RecordedCall]:
        return [RecordedCall(c.method, c.params) for a in self.adapters for c in a.calls]


class ClaudeLiveHarness(ClaudeOneShotHarness):
    """The contract harness for long-lived mode (a fake stream-json process on real pipes)."""

    label = "claude-code-long-lived"
    mode = "long-lived"

    def child_pids(self, run: RunHandle) -> list[int]:
        """None: the long-lived process outlives each turn by design (it serves the next)."""
        return []

    def config(self) -> ClaudeCodeConfig:
        return ClaudeCodeConfig(
            mode="long-lived",
            launcher=lambda args: fake_cli_argv([], rules=live_rules(str(uuid.uuid4()))),
            state_root=self._root,
            model="claude-sonnet-4-6",
            sigint_grace=0.5,
            sigterm_grace=0.5,
            interrupt_grace=2.0,
            handshake_timeout=5.0,
        )


class ClaudeFaultHarness:
    """One-shot runs whose fake Claude Code replays a recorded transcript with a fault."""

    label = "claude-code-faults"

    def __init__(self) -> None:
        self.fault = "stall"
        self._root = state_root()
        self._pids: list[int] = []
        self._transcript = [line.decode() for line in fixture_lines("tool")]

    def make_adapter(self) -> RuntimeAdapter:
        return ClaudeCodeAdapter(
            ClaudeCodeConfig(
                launcher=lambda args: fake_cli_argv(self._transcript, fault=self.fault),
                state_root=self._root,
                sigint_grace=0.5,
                sigterm_grace=0.5,
            )
        )

    async def start_faulty(self, adapter: RuntimeAdapter, fault: str) -> RunHandle:
        self.fault = fault
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="claude", session_key="claude:fault", message="go")
        )
        assert isinstance(adapter, ClaudeCodeAdapter)
        child = adapter.child_for(run)
        assert child is not None
        self._pids.append(child.pid)
        return run

    def spawned_pids(self) -> list[int]:
        return list(self._pids)
