"""Contract harnesses for the Codex adapter: the real adapter and process driver, with a fake
Codex (``contract/fake_cli.py``) as the child.

Exec mode: the fake prints the transcript's opening lines (``thread.started``, ``turn.started``),
then echoes what the harness feeds it on stdin (``{"emit": <line>}``) as Codex stdout lines, and
exits on ``{"ctl": "exit"}`` — so every frame goes through a real pipe, the line framer, the
dialect and the normalizer.
"""

from __future__ import annotations

import functools
import itertools
import json
import uuid
from typing import Any

from adapters.codex import CodexAdapter, CodexConfig
from contract.fake_cli import fake_cli_argv
from orchestrator.core.adapter import RuntimeAdapter

from ..cli_harness import EMIT_RULES, FakeCliFaultHarness, FakeCliHarness, Frame, emit
from .conftest import app_messages, fixture_lines


class ExecFrames:
    """Codex exec lines for the contract's abstract events (a list of stdin messages each)."""

    def __init__(self) -> None:
        self._n = itertools.count()
        self._usage: dict[int, tuple[int, int]] = {}

    def delta(self, text: str) -> Frame:
        item = {"id": f"item_{next(self._n)}", "type": "agent_message", "text": text}
        return [emit({"type": "item.completed", "item": item})]

    def tool_call(self, name: str, input: Any, call_id: str) -> Frame:
        # An MCP tool call is the only Codex item with a free name and input; no server → the
        # bare tool name.
        item = {"id": call_id, "type": "mcp_tool_call", "server": "", "tool": name,
                "arguments": input, "status": "in_progress"}  # fmt: skip
        return [emit({"type": "item.started", "item": item})]

    def tool_result(self, call_id: str, name: str, output: str, *, is_error: bool = False) -> Frame:
        item: dict[str, Any] = {
            "id": call_id, "type": "mcp_tool_call", "server": "", "tool": name, "arguments": {},
            "status": "failed" if is_error else "completed",
            "result": None if is_error else {"content": [{"type": "text", "text": output}]},
            "error": {"message": output} if is_error else None,
        }  # fmt: skip
        return [emit({"type": "item.completed", "item": item})]

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Frame:
        # Codex reports the thread's cumulative usage on turn.completed.
        usage = {"input_tokens": input_tokens, "cached_input_tokens": 0,
                 "output_tokens": output_tokens, "reasoning_output_tokens": 0}  # fmt: skip
        return [emit({"type": "turn.completed", "usage": usage})]

    def final(self, summary: str) -> Frame:
        return [emit({"type": "turn.completed", "usage": {}}), {"ctl": "exit", "code": 0}]

    def aborted(self) -> Frame:
        return []  # Codex prints nothing when interrupted

    def error(self, message: str) -> Frame:
        return [
            emit({"type": "error", "message": message}),
            emit({"type": "turn.failed", "error": {"message": message}}),
            {"ctl": "exit", "code": 1},
        ]

    def unknown(self) -> Frame:
        return [emit({"type": "contract.unknown", "payload": {"x": 1}})]


class CodexExecHarness(FakeCliHarness):
    """The contract harness for exec mode."""

    label = "codex-exec"
    adapter_cls = CodexAdapter
    config_cls = CodexConfig

    def __init__(self) -> None:
        super().__init__(self.make_frames())

    @staticmethod
    def make_frames() -> Any:
        return ExecFrames()

    def config(self) -> CodexConfig:
        return CodexConfig(
            mode="exec",
            launcher=lambda args: fake_cli_argv(self._opening(), rules=EMIT_RULES),
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


class CodexExecFaultHarness(FakeCliFaultHarness):
    """Exec runs whose fake Codex replays a recorded transcript with a fault."""

    label = "codex-exec-faults"
    adapter_cls = CodexAdapter
    config_cls = staticmethod(functools.partial(CodexConfig, mode="exec"))

    def __init__(self) -> None:
        super().__init__(fixture_lines("exec-tool"))


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

    @staticmethod
    def make_frames() -> Any:
        return AppFrames()

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
