"""Deliberately broken *child-process* adapters, each breaking one process rule of the contract.

:class:`RawCli` drives ``contract/fake_cli.py`` on raw trio processes (not the shared driver,
which would make every one of these bugs impossible), with one switch per rule it can break.
With every switch at its default it keeps the rules the mutants break, so the targeted checks
pass on it (see ``test_broken_cli_adapters.py``). Frames are the scripted adapter's: the harness
writes ``{"emit": frame}`` to the fake CLI's stdin and the fake writes ``frame`` back on stdout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from adapters import AdapterBase
from adapters._jsonl import LineFramer
from adapters._process import child_env, open_child
from adapters._runs import RunEmitter
from adapters.scripted import ScriptedFrame, TextFrame, normalize_frame, parse_frame
from contract import RecordedCall, ScriptedFrames
from contract.fake_cli import fake_cli_argv
from orchestrator.core import (
    Capabilities,
    HealthResult,
    LineTooLongError,
    ProtocolError,
    RunHandle,
    RuntimeAdapter,
    RuntimeExitedError,
    StartOpts,
    TaskHandle,
)

ECHO_RULES: list[dict[str, Any]] = [
    {"match": {"emit": {}}, "reply": ["{{emit}}"]},
    {"match": {"ctl": "exit", "code": 0}, "exit": 0},
    {"match": {"ctl": "exit", "code": 1}, "exit": 1},
]

TRANSCRIPT = [
    json.dumps({"type": "text", "text": "one "}),
    json.dumps({"type": "text", "text": "two "}),
    json.dumps({"type": "text", "text": "three"}),
    json.dumps({"type": "result", "ok": True, "summary": "one two three"}),
]

GRACE = 0.5


@attrs.define(eq=False)
class _Run:
    emitter: RunEmitter
    proc: trio.Process
    text: list[str] = attrs.field(factory=list[str])
    bad_line: bytes | None = None
    aborting: bool = False


class RawCli(AdapterBase):
    """A small CLI adapter on raw processes; each class attribute is a rule it can break."""

    id = "raw-cli"
    own_group = True
    """Start the child in its own process group and signal the group (else: only its pid)."""
    reap = True
    """Wait for the child at the end of its output (else: leave it a zombie until close)."""
    stop_on_abort = True
    """abort() terminates the child before ``done{aborted}`` (else: only publishes it)."""
    strict = True
    """A line that is not JSON, or exit 0 without a result, fails the run (else: skipped)."""

    def __init__(self) -> None:
        super().__init__()
        self.argv: list[str] = fake_cli_argv([], rules=ECHO_RULES)
        self.calls: list[RecordedCall] = []
        self.pids: dict[str, list[int]] = {}
        self._live: dict[str, _Run] = {}
        self._procs: list[trio.Process] = []

    def capabilities(self) -> Capabilities:
        return Capabilities(
            streaming=True, mcp=False, worktrees=False, resume=False, tool_approval=False
        )

    async def probe_health(self) -> HealthResult:
        async with open_child([*self.argv, "--version"], env=child_env(), adapter=self.id) as child:
            out = [line async for line in child.lines() if isinstance(line, bytes)]
            code = await child.wait()
        return HealthResult(ok=code == 0, message=b"".join(out).decode())

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        emitter = self.new_run(opts.session_key)
        proc = await trio.lowlevel.open_process(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=child_env(),
            start_new_session=self.own_group,
        )
        self._procs.append(proc)
        self.pids.setdefault(opts.session_key, []).append(proc.pid)
        run = _Run(emitter, proc)
        self._live[opts.session_key] = run
        self.spawn(self._read, run)
        return emitter.handle

    async def _read(self, run: _Run) -> None:
        stdout = run.proc.stdout
        assert stdout is not None
        framer = LineFramer(adapter=self.id)
        while data := await stdout.receive_some(65536):
            for line in framer.feed(bytes(data)):
                await self._line(run, line)
        for line in framer.close():
            await self._line(run, line)
        code = await run.proc.wait() if self.reap else 0
        await self._end(run, code)

    async def _line(self, run: _Run, line: bytes | LineTooLongError) -> None:
        emitter = run.emitter
        if emitter.done or not line:
            return
        emitter.ensure_run_id()
        if isinstance(line, LineTooLongError):
            await emitter.publish([emitter.factory.error(str(line), code=line.event_code)])
            return
        try:
            raw = json.loads(line)
        except ValueError:
            if self.strict and run.bad_line is None:
                run.bad_line = line
            return
        frame = parse_frame(raw)
        if isinstance(frame, str):
            await emitter.publish(emitter.note_unknown(frame))
            return
        await self._frame(run, frame)

    async def _frame(self, run: _Run, frame: ScriptedFrame) -> None:
        emitter = run.emitter
        await emitter.publish(normalize_frame(frame, emitter.factory, "".join(run.text)))
        if isinstance(frame, TextFrame):
            run.text.append(frame.text)

    async def _end(self, run: _Run, code: int) -> None:
        emitter = run.emitter
        if emitter.done:
            return
        if run.aborting:
            await emitter.finish("aborted", "".join(run.text))
        elif code != 0:
            await emitter.fail_with(RuntimeExitedError(f"exited with {code}", exit_code=code))
        elif self.strict:
            await emitter.fail_with(
                ProtocolError("exited without a result", line=run.bad_line or b"", adapter=self.id)
            )
        else:
            await emitter.finish("success", "".join(run.text))

    def _signal(self, proc: trio.Process, sig: int) -> None:
        try:
            if self.own_group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    async def _terminate(self, proc: trio.Process) -> None:
        with trio.CancelScope(shield=True):
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
                if proc.returncode is not None:
                    return
                self._signal(proc, sig)
                with trio.move_on_after(GRACE):
                    await proc.wait()

    async def abort(self, run: RunHandle) -> None:
        self.calls.append(RecordedCall("abort", {"sessionKey": run.session_key}))
        live = self._live.get(run.session_key)
        if live is None or live.emitter.done:
            await trio.lowlevel.checkpoint()
            return
        live.aborting = True
        if not self.stop_on_abort:
            await live.emitter.finish("aborted", "".join(live.text))
            return
        await self._terminate(live.proc)
        with trio.fail_after(5):
            await live.emitter.finished.wait()

    async def set_model(self, run: RunHandle, model: str) -> None:
        self.calls.append(RecordedCall("setModel", {"model": model}))
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        self.calls.append(RecordedCall("writeContext", {"key": key, "value": value}))
        await trio.lowlevel.checkpoint()

    async def _shutdown(self) -> None:
        await super()._shutdown()
        with trio.CancelScope(shield=True):  # what a mutant left behind goes now
            for proc in self._procs:
                self._signal(proc, signal.SIGKILL)
                await proc.wait()
                for stream in (proc.stdin, proc.stdout):
                    if stream is not None:
                        await stream.aclose()


class ZombieAfterDone(RawCli):
    """Publishes done from the output and never waits for the child."""

    reap = False


class RunningAfterAbort(RawCli):
    """abort() publishes ``done{aborted}`` but leaves the child running."""

    stop_on_abort = False


class SignalsOnlyThePid(RawCli):
    """Runs the child in our process group and signals only its pid: grandchildren survive."""

    own_group = False


class TruncatedExit0IsSuccess(RawCli):
    """Skips a line it cannot read and takes exit 0 as success."""

    strict = False


class UnboundedHealth(RawCli):
    """health() waits for the runtime's answer, however long it takes."""

    async def health(self) -> HealthResult:
        return await self.probe_health()


class HealthRaisesWhenHung(RawCli):
    """health() gives up after a second by raising."""

    async def health(self) -> HealthResult:
        with trio.fail_after(1.0):
            return await self.probe_health()


class RawCliFrames(ScriptedFrames):
    """The scripted adapter's frames; an abort needs no frame (the child is stopped)."""

    def aborted(self) -> dict[str, Any]:
        return {}


class RawCliHarness:
    """An :class:`~contract.ChildProcessHarness` for :class:`RawCli` (no ``make_hung_adapter``:
    the suite's default hangs the fake CLI)."""

    def __init__(self, cls: type[RawCli] = RawCli) -> None:
        self.label = cls.__name__
        self.frames = RawCliFrames()
        self._cls = cls
        self.adapter: RawCli | None = None
        self._n = 0

    def make_adapter(self) -> RuntimeAdapter:
        self.adapter = self._cls()
        return self.adapter

    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle:
        self._n += 1
        key = session_key or f"raw:{self._n}"
        self.last = await adapter.start(
            TaskHandle(), StartOpts(agent_id="raw", session_key=key, message="go")
        )
        return self.last

    async def emit(self, frame: Any, run: RunHandle | None = None) -> None:
        assert self.adapter is not None
        live = self.adapter._live.get((run or self.last).session_key)  # pyright: ignore[reportPrivateUsage]
        if live is None or not frame:
            return
        messages: list[dict[str, Any]] = [{"emit": frame}]
        if frame.get("type") == "result":
            messages.append({"ctl": "exit", "code": 0})
        stdin = live.proc.stdin
        assert stdin is not None
        for message in messages:
            try:
                await stdin.send_all(json.dumps(message).encode() + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
        await trio.sleep(0.01)  # let the fake echo before the next run's frame

    def recorded_calls(self) -> list[RecordedCall]:
        assert self.adapter is not None
        return list(self.adapter.calls)

    def child_pids(self, run: RunHandle) -> Sequence[int]:
        assert self.adapter is not None
        return self.adapter.pids.get(run.session_key, [])


class RawCliFaultHarness:
    """A :class:`~contract.ProcessFaultHarness` for :class:`RawCli`: the fake replays
    :data:`TRANSCRIPT` with the fault."""

    def __init__(self, cls: type[RawCli] = RawCli) -> None:
        self.label = f"{cls.__name__}-faults"
        self._cls = cls
        self._adapters: list[RawCli] = []

    def make_adapter(self) -> RuntimeAdapter:
        adapter = self._cls()
        self._adapters.append(adapter)
        return adapter

    async def start_faulty(self, adapter: RuntimeAdapter, fault: str) -> RunHandle:
        assert isinstance(adapter, RawCli)
        adapter.argv = fake_cli_argv(TRANSCRIPT, fault=fault)
        return await adapter.start(
            TaskHandle(), StartOpts(agent_id="raw", session_key="raw:fault", message="go")
        )

    def spawned_pids(self) -> list[int]:
        return [pid for a in self._adapters for pids in a.pids.values() for pid in pids]
