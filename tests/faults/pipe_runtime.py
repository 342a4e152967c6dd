"""A fake runtime on real pipes for the fault suite: a child process (started through the shared
driver, :mod:`adapters._process`) that prints scripted JSON frames, one per line, normalized by
the scripted dialect. ``argv_for(opts)`` decides what runs, so a test can use ``contract``'s
fake CLI or a script of its own (one that spawns grandchildren, prints keys, …)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import trio

from adapters import AdapterBase
from adapters._process import ChildProcess, child_env, open_child
from adapters._runs import RunEmitter
from adapters.scripted import InitFrame, ScriptedCodec, normalize_frame, parse_frame
from orchestrator.core import (
    Capabilities,
    LineTooLongError,
    ProtocolError,
    RunHandle,
    StartOpts,
    TaskHandle,
)

ArgvFor = Callable[[StartOpts], Sequence[str]]


def python_argv(source: str, *args: str) -> list[str]:
    """Run ``source`` with this interpreter (the fake runtime's program)."""
    return [sys.executable, "-c", source, *args]


def frames(*items: Mapping[str, Any]) -> str:
    """JSON lines for a fake runtime to print."""
    return "".join(json.dumps(dict(item)) + "\n" for item in items)


class PipeRuntime(AdapterBase):
    """Runs ``argv_for(opts)`` per run; stdout lines are scripted frames."""

    id = "pipe"

    def __init__(self, argv_for: ArgvFor, *, env: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._argv_for = argv_for
        self._env = dict(env or {})
        self.children: dict[str, ChildProcess] = {}
        self._codec = ScriptedCodec(self)

    @property
    def session_codec(self) -> ScriptedCodec:
        return self._codec

    def capabilities(self) -> Capabilities:
        return Capabilities(
            streaming=True, mcp=False, worktrees=False, resume=True, tool_approval=False
        )

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        emitter = self.new_run(opts.session_key)
        argv = list(self._argv_for(opts))
        env = child_env(extra={**self._env, **opts.env})
        # spawn before returning, as the real CLI adapters do: a start failure raises here
        started = trio.Event()
        failed: list[BaseException] = []
        self.spawn(self._drive, emitter.handle, argv, env, started, failed)
        await started.wait()
        if failed:
            raise failed[0]
        return emitter.handle

    async def _drive(
        self,
        run: RunHandle,
        argv: list[str],
        env: dict[str, str],
        started: trio.Event,
        failed: list[BaseException],
    ) -> None:
        emitter = self.emitter_for(run)
        assert emitter is not None
        try:
            async with open_child(
                argv, env=env, adapter=self.id, sigint_grace=0.5, sigterm_grace=0.5
            ) as child:
                self.children[run.session_key] = child
                started.set()
                await self._pump(emitter, child)
        except Exception as exc:
            if started.is_set():
                raise
            failed.append(exc)
            started.set()

    async def _pump(self, emitter: RunEmitter, child: ChildProcess) -> None:
        text: list[str] = []
        async for batch in child.batches():
            for line in batch:
                if emitter.done or isinstance(line, LineTooLongError):
                    continue
                try:
                    raw: Any = json.loads(line)
                except ValueError:
                    await emitter.fail_with(ProtocolError("unreadable line", line=line))
                    continue
                frame = parse_frame(raw)
                if isinstance(frame, str):
                    continue
                if isinstance(frame, InitFrame):
                    emitter.bind_run_id(frame.session_id)
                emitter.ensure_run_id()
                await emitter.publish(normalize_frame(frame, emitter.factory, "".join(text)))
        code = await child.wait()
        if not emitter.done:
            if child.terminated_by_us:
                await emitter.finish("aborted", "".join(text))
            elif code != 0:
                await emitter.fail_with(child.exit_error())
            else:
                await emitter.fail_with(ProtocolError("exited without a result"))

    async def abort(self, run: RunHandle) -> None:
        child = self.children.get(run.session_key)
        if child is not None:
            await child.terminate()
        await trio.lowlevel.checkpoint()

    async def set_model(self, run: RunHandle, model: str) -> None:
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        await trio.lowlevel.checkpoint()
