"""The process fault group, run against a minimal JSONL child-process adapter.

``JsonlCliAdapter`` runs ``contract/fake_cli.py`` through the shared run loop
(:class:`adapters.CliRun`) and reads scripted frames from it: the smallest correct CLI adapter.
It passes :class:`ProcessFaultContract`; a variant that forgets to terminate its child on abort
is caught by the ``no-orphans`` / abort checks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from adapters import AdapterBase, ChildSpec, CliDialect, CliRun
from adapters._process import child_env
from adapters.scripted import ResultFrame, normalize_frame, parse_frame
from contract import ContractViolation, ProcessFaultContract
from contract.fake_cli import fake_cli_argv
from orchestrator.core import (
    Capabilities,
    EventFactory,
    ProtocolError,
    RunHandle,
    RuntimeAdapter,
    RuntimeEvent,
    StartOpts,
    TaskHandle,
)

TRANSCRIPT = [
    json.dumps({"type": "init", "sessionId": "cli-session"}),
    json.dumps({"type": "text", "text": "one "}),
    json.dumps({"type": "text", "text": "two "}),
    json.dumps({"type": "text", "text": "three"}),
    json.dumps({"type": "result", "ok": True, "summary": "one two three"}),
]


class JsonlDialect(CliDialect):
    """The scripted frames (``adapters.scripted``) as a child's JSON lines."""

    name = "jsonl-cli"

    def __init__(self) -> None:
        self.text: list[str] = []

    @property
    def summary(self) -> str:
        return "".join(self.text)

    def decode(self, line: bytes) -> Any:
        try:
            return json.loads(line)
        except ValueError:
            raise ProtocolError("unreadable line", line=line, adapter="jsonl-cli") from None

    def normalize(self, frame: Any, make: EventFactory) -> list[RuntimeEvent] | None:
        parsed = parse_frame(frame)
        if isinstance(parsed, str):
            return None
        events = normalize_frame(parsed, make, self.summary)
        if not isinstance(parsed, ResultFrame) and getattr(parsed, "type", "") == "text":
            self.text.append(str(getattr(parsed, "text", "")))
        return events

    def label(self, frame: Any) -> str:
        parsed = parse_frame(frame)
        return parsed if isinstance(parsed, str) else "?"


class JsonlCliAdapter(AdapterBase):
    """The smallest correct CLI adapter: the shared run loop (:class:`adapters.CliRun`) with
    its own dialect."""

    id = "jsonl-cli"
    terminate_on_abort = True

    def __init__(self, argv: list[str]) -> None:
        super().__init__()
        self._argv = argv
        self._live: dict[str, CliRun] = {}
        self.pids: list[int] = []

    def capabilities(self) -> Capabilities:
        return Capabilities(
            streaming=True, mcp=False, worktrees=False, resume=False, tool_approval=False
        )

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        run = CliRun(self.new_run(opts.session_key), JsonlDialect())
        self._live[opts.session_key] = run
        spec = ChildSpec(self._argv, child_env(), sigint_grace=0.5, sigterm_grace=0.5)
        await run.launch(self.nursery, spec, adapter=self.id)
        assert run.child is not None
        self.pids.append(run.child.pid)
        return run.handle

    async def abort(self, run: RunHandle) -> None:
        live = self._live.get(run.session_key)
        if live is None:
            return
        if self.terminate_on_abort:
            await live.abort(deadline=5)
        else:
            with trio.fail_after(5):
                await live.emitter.finished.wait()

    async def set_model(self, run: RunHandle, model: str) -> None:
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        await trio.lowlevel.checkpoint()


class FaultHarness:
    label = "jsonl-cli"

    def __init__(self, adapter_cls: type[JsonlCliAdapter] = JsonlCliAdapter) -> None:
        self._cls = adapter_cls
        self._adapters: list[JsonlCliAdapter] = []

    def make_adapter(self) -> RuntimeAdapter:
        adapter = self._cls([])
        self._adapters.append(adapter)
        return adapter

    async def start_faulty(self, adapter: RuntimeAdapter, fault: str) -> RunHandle:
        assert isinstance(adapter, JsonlCliAdapter)
        adapter._argv = fake_cli_argv(TRANSCRIPT, fault=fault, overlong_bytes=9 * 1024 * 1024)  # pyright: ignore[reportPrivateUsage]
        return await adapter.start(
            TaskHandle(), StartOpts(agent_id="cli", session_key="cli:main", message="go")
        )

    def spawned_pids(self) -> list[int]:
        return [pid for a in self._adapters for pid in a.pids]


class TestJsonlCliFaults(ProcessFaultContract):
    @pytest.fixture
    def fault_harness(self) -> FaultHarness:
        return FaultHarness()


class NeverTerminates(JsonlCliAdapter):
    terminate_on_abort = False


def test_fault_group_catches_an_adapter_that_never_stops_its_child() -> None:
    class Quick(ProcessFaultContract):
        abort_deadline_s = 2.0

    with pytest.raises(BaseException) as caught:  # noqa: PT011 - the leaves are checked below
        Quick().test_stall_then_abort(FaultHarness(NeverTerminates))
    assert any(
        isinstance(leaf, ContractViolation | trio.TooSlowError) for leaf in _leaves(caught.value)
    )


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]
