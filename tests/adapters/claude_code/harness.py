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
import uuid
from typing import Any

from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig
from contract.fake_cli import fake_cli_argv
from orchestrator.core.adapter import RunHandle

from ..cli_harness import EMIT_RULES, FakeCliFaultHarness, FakeCliHarness, Frame, emit
from .conftest import fixture_lines


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

    def delta(self, text: str) -> Frame:
        event = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": text}}  # fmt: skip
        return [emit({"type": "stream_event", "event": event, "parent_tool_use_id": None})]

    def tool_call(self, name: str, input: Any, call_id: str) -> Frame:
        message = {"id": f"msg_{next(self._n)}", "role": "assistant", "model": "fake",
                   "content": [{"type": "tool_use", "id": call_id, "name": name, "input": input}]}  # fmt: skip
        return [emit({"type": "assistant", "message": message, "parent_tool_use_id": None})]

    def tool_result(self, call_id: str, name: str, output: str, *, is_error: bool = False) -> Frame:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": output,
                 "is_error": is_error}  # fmt: skip
        message = {"role": "user", "content": [block]}
        return [emit({"type": "user", "message": message, "parent_tool_use_id": None})]

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Frame:
        return [{"cost": [input_tokens, output_tokens]}]

    def final(self, summary: str) -> Frame:
        return [emit(result_line("", result=summary)), {"ctl": "exit", "code": 0}]

    def aborted(self) -> Frame:
        return []  # the abort itself makes Claude Code write its aborted result

    def error(self, message: str) -> Frame:
        line = result_line("", is_error=True, result=message, terminal_reason="api_error",
                           api_error_status=500)  # fmt: skip
        return [emit(line), {"ctl": "exit", "code": 1}]

    def unknown(self) -> Frame:
        return [emit({"type": "contract_unknown", "payload": {"x": 1}})]


class ClaudeOneShotHarness(FakeCliHarness):
    """The contract harness for one-shot mode."""

    label = "claude-code-one-shot"
    adapter_cls = ClaudeCodeAdapter
    config_cls = ClaudeCodeConfig

    def __init__(self) -> None:
        super().__init__(ClaudeFrames())
        self._usage: dict[str, tuple[int, int]] = {}

    def config(self) -> ClaudeCodeConfig:
        def launch(args: Any) -> list[str]:
            session = str(uuid.uuid4())
            return fake_cli_argv(
                [init_line(session)], rules=EMIT_RULES, on_sigint=aborted_line(session)
            )

        return ClaudeCodeConfig(
            launcher=launch,
            launcher_stdin=True,
            state_root=self._root,
            model="claude-sonnet-4-6",
            sigint_grace=0.5,
            sigterm_grace=0.5,
        )

    def lines(self, run: RunHandle, message: dict[str, Any]) -> list[dict[str, Any]]:
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


class ClaudeFaultHarness(FakeCliFaultHarness):
    """One-shot runs whose fake Claude Code replays a recorded transcript with a fault."""

    label = "claude-code-faults"
    adapter_cls = ClaudeCodeAdapter
    config_cls = ClaudeCodeConfig

    def __init__(self) -> None:
        super().__init__(fixture_lines("tool"))
