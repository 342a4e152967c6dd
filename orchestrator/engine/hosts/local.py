"""``LocalHost``: run many tasks side by side in this process, under one nursery.

::

    async with LocalHost(runner) as host:
        a = host.submit("claude-code", TaskSpec(task_id="1", title="fix the parser"))
        b = host.submit("codex", TaskSpec(task_id="2", title="write the tests"))
        print(await a.outcome(), await b.outcome())

Each submitted task runs :meth:`Runner.run_task` in the host's nursery; its live actor is reachable
through :class:`TaskRef` (abort, steer). Leaving the host aborts whatever is still running and
waits for it: nothing outlives the host. A task that raises keeps its error in its ref (raised
again by :meth:`TaskRef.outcome`) and does not take its siblings down.
"""

from __future__ import annotations

import contextlib
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Self

import attrs
import trio

from orchestrator.core.adapter import RESUME_PROMPT
from orchestrator.core.errors import ConfigError, MailboxClosedError
from orchestrator.engine.actor import RunActor
from orchestrator.engine.runner import (
    Runner,
    TaskOutcome,
    TaskSpec,
    recoverable_tasks,
)

__all__ = ["LocalHost", "TaskRef"]


@attrs.define(eq=False)
class TaskRef:
    """A submitted task: its live actor, and its outcome once finished."""

    runtime_id: str
    task: TaskSpec
    actor: RunActor | None = None
    _done: trio.Event = attrs.field(factory=trio.Event)
    _outcome: TaskOutcome | None = None
    _error: BaseException | None = None
    _cancel: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    _aborted: bool = False
    _started: trio.Event = attrs.field(factory=trio.Event)

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    async def outcome(self) -> TaskOutcome:
        """Wait for the task; its final outcome (or the error it raised)."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._outcome is not None
        return self._outcome

    def abort(self) -> None:
        """Abort the task's live run; it ends as ``aborted``."""
        self._aborted = True
        if self.actor is not None:
            with contextlib.suppress(MailboxClosedError):
                self.actor.abort()

    async def started(self) -> None:
        """Wait until the task's first run has a live actor (or the task has finished)."""
        await self._started.wait()

    def attach(self, actor: RunActor) -> None:
        """The task's run has a (new) live actor: abort it at once if the task was aborted."""
        self.actor = actor
        self._started.set()
        if self._aborted:
            actor.abort()

    def steer(self, text: str) -> None:
        """Steer the live run (steerable runtimes only; else ``CapabilityError``)."""
        if self.actor is None:
            raise MailboxClosedError("the task has no live run", actor_id=self.task.task_id)
        self.actor.steer(text)


@attrs.define(eq=False)
class LocalHost:
    """Runs tasks concurrently in one nursery (see the module docstring)."""

    runner: Runner
    tasks: list[TaskRef] = attrs.field(init=False, factory=list[TaskRef])
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    _stack: AsyncExitStack | None = attrs.field(init=False, default=None)

    async def __aenter__(self) -> Self:
        stack = AsyncExitStack()
        self._nursery = await stack.enter_async_context(trio.open_nursery())
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for ref in self.tasks:
            if not ref.finished:
                ref.abort()
        stack, self._stack, self._nursery = self._stack, None, None
        if stack is not None:
            await stack.__aexit__(exc_type, exc, tb)

    def submit(self, runtime_id: str, task: TaskSpec) -> TaskRef:
        """Start ``task`` on ``runtime_id`` now; returns its ref."""
        if self._nursery is None:
            raise RuntimeError("use `async with LocalHost(...)` before submitting")
        ref = TaskRef(runtime_id=runtime_id, task=task)
        self.tasks.append(ref)
        self._nursery.start_soon(self._run, ref)
        return ref

    async def recover(self, prompt: str = RESUME_PROMPT) -> list[TaskRef]:
        """Resume, on this host, every task whose run was left ``interrupted`` by a dead
        orchestrator and recorded a resumable session (not yet resumed): each continues its
        session with ``prompt`` from its origin directory, logged as a new run linked to the
        interrupted one (``resumedFrom``). Returns their refs (empty: nothing to recover).

        Raises:
            ConfigError: the host's runner has no event log.
        """
        log = self.runner.event_log
        if log is None:
            raise ConfigError("recovering interrupted runs needs the runner's event log")
        return [self.submit(rid, task) for rid, task in await recoverable_tasks(log, prompt)]

    async def _run(self, ref: TaskRef) -> None:
        runner = attrs.evolve(self.runner, on_actor=ref.attach)
        try:
            ref._outcome = await runner.run_task(ref.runtime_id, ref.task)  # pyright: ignore[reportPrivateUsage]
        except Exception as exc:
            ref._error = exc  # pyright: ignore[reportPrivateUsage]
        finally:
            ref._done.set()  # pyright: ignore[reportPrivateUsage]
            ref._started.set()  # pyright: ignore[reportPrivateUsage]
