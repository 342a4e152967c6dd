"""The process fault group, run against a minimal JSONL child-process adapter.

``JsonlCliAdapter`` runs ``contract/fake_cli.py`` through the shared driver
(:mod:`adapters._process`) and reads scripted frames from it: the smallest correct CLI adapter.
It passes :class:`ProcessFaultContract`; a variant that forgets to terminate its child on abort
is caught by the ``no-orphans`` / abort checks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from adapters import AdapterBase
from adapters._process import ChildProcess, child_env, open_child
from adapters.scripted import ResultFrame, normalize_frame, parse_frame
from contract import ContractViolation, ProcessFaultContract
from contract.fake_cli import fake_cli_argv
from orchestrator import (
    Capabilities,
    LineTooLongError,
    ProtocolError,
    RunHandle,
    RuntimeAdapter,
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


class JsonlCliAdapter(AdapterBase):
    id = "jsonl-cli"
    terminate_on_abort = True

    def __init__(self, argv: list[str]) -> None:
        super().__init__()
        self._argv = argv
        self._children: dict[str, ChildProcess] = {}
        self.pids: list[int] = []

    def capabilities(self) -> Capabilities:
        return Capabilities(
            streaming=True, mcp=False, worktrees=False, resume=False, tool_approval=False
        )

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        emitter = self.new_run(opts.session_key)
        ready = trio.Event()
        self.spawn(self._drive, emitter.handle, ready)
        await ready.wait()
        return emitter.handle

    async def _drive(self, run: RunHandle, ready: trio.Event) -> None:
        emitter = self.emitter_for(run)
        assert emitter is not None
        text: list[str] = []
        async with open_child(
            self._argv, env=child_env(), sigint_grace=0.5, sigterm_grace=0.5, adapter=self.id
        ) as child:
            self._children[run.session_key] = child
            self.pids.append(child.pid)
            ready.set()
            async for batch in child.batches():
                for line in batch:
                    if emitter.done:
                        continue
                    if isinstance(line, LineTooLongError):
                        emitter.ensure_run_id()
                        await emitter.publish(
                            [emitter.factory.error(str(line), code=line.event_code, fatal=False)]
                        )
                        continue
                    try:
                        raw: Any = json.loads(line)
                    except ValueError:
                        await emitter.fail_with(
                            ProtocolError("unreadable line", line=line, adapter=self.id)
                        )
                        continue
                    frame = parse_frame(raw)
                    if isinstance(frame, str):
                        await emitter.publish(emitter.note_unknown(frame))
                        continue
                    emitter.ensure_run_id()
                    events = normalize_frame(frame, emitter.factory, "".join(text))
                    await emitter.publish(events)
                    if not isinstance(frame, ResultFrame) and getattr(frame, "type", "") == "text":
                        text.append(str(getattr(frame, "text", "")))
            code = await child.wait()
            if not emitter.done:
                if child.terminated_by_us:
                    await emitter.finish("aborted", "".join(text))
                elif code != 0:
                    await emitter.fail_with(child.exit_error())
                else:
                    await emitter.fail_with(
                        ProtocolError("the runtime exited without a result", adapter=self.id)
                    )

    async def abort(self, run: RunHandle) -> None:
        child = self._children.get(run.session_key)
        if child is not None and self.terminate_on_abort:
            await child.terminate()
        emitter = self.emitter_for(run)
        if emitter is not None:
            with trio.fail_after(5):
                await emitter.finished.wait()

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
