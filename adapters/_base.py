"""What every adapter shares: its task scope, its run table, health with a deadline, safe paths.

An adapter is an async context manager: ``async with adapter:`` opens the nursery its runs live
in (child processes, sockets, the native loop), and leaving it (or :meth:`aclose`) aborts every
run still going and waits until they are gone — no run, and no child process, outlives its
adapter. ``start()`` before entering raises :class:`RuntimeError`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, ClassVar, Self

import trio

from orchestrator.core.adapter import (
    HEALTH_TIMEOUT_S,
    HealthResult,
    ParticipantKind,
    RunHandle,
    SessionCodec,
    StartOpts,
)
from orchestrator.core.asking import EventSink, ToolAsker
from orchestrator.core.errors import ConfigError, exception_leaves, redact_secrets
from orchestrator.core.events import now_ms
from orchestrator.core.queue import EventQueue, QueueEventStream

from ._confine import EscapeError, write_beneath
from ._runs import RunEmitter, RunTable

__all__ = [
    "AdapterBase",
    "JsonSessionCodec",
    "closed_stream",
    "confined_path",
    "make_private_dir",
    "validate_context_key",
    "write_context_file",
    "write_private",
]

_log = logging.getLogger(__name__)


def make_private_dir(path: Path) -> None:
    """``path`` (and missing parents) made, mode 0700 (narrowed if it was there)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)


def write_private(path: Path, text: str) -> None:
    """``path`` written with ``text``, mode 0600 when made (a home's configuration)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def closed_stream() -> QueueEventStream:
    """An empty stream (for ``events()`` on a run this adapter does not know)."""
    queue = EventQueue(1)
    queue.close()
    return QueueEventStream(queue)


def validate_context_key(key: str) -> PurePosixPath:
    """A ``write_context`` key as a relative path; absolute paths and ``..`` are refused."""
    if not key or "\x00" in key:
        raise ConfigError("context key must be a non-empty relative path")
    pure = PurePosixPath(key.replace("\\", "/"))
    if pure.is_absolute() or any(part == ".." for part in pure.parts):
        raise ConfigError(f"context key {key!r} escapes the run's workspace")
    return pure


def confined_path(root: str | os.PathLike[str], key: str) -> Path:
    """``root / key`` for a context key, refusing absolute paths, ``..`` and symlink escapes."""
    pure = validate_context_key(key)
    base = Path(root).resolve()
    target = (base / pure).resolve()
    if target != base and base not in target.parents:
        raise ConfigError(f"context key {key!r} escapes the run's workspace")
    return target


def _write_context_file_sync(root: str | os.PathLike[str], key: str, value: str) -> None:
    try:
        write_beneath(root, str(validate_context_key(key)), value.encode("utf-8"), mkdirs=True)
    except EscapeError as exc:
        raise ConfigError(
            f"context key {key!r} escapes the run's workspace ({exc.reason})"
        ) from None


async def write_context_file(root: str | os.PathLike[str], key: str, value: str) -> None:
    """Write ``value`` to context key ``key`` beneath ``root`` with no check-then-write race:
    every component is opened relative to its parent's handle with ``O_NOFOLLOW``
    (:func:`adapters._confine.write_beneath`); an escape raises :class:`ConfigError`."""
    await trio.to_thread.run_sync(_write_context_file_sync, root, key, value)


class AdapterBase:
    """Base class for adapters: nursery, run table, health deadline, event subscription."""

    id: str = ""
    participant_kind: ParticipantKind = "agent"
    one_shot: ClassVar[bool] = True

    def __init__(self, *, clock: Callable[[], int] = now_ms) -> None:
        self._clock = clock
        self._runs = RunTable(on_forget=self.forget_run)
        self._stack: AsyncExitStack | None = None
        self._nursery: trio.Nursery | None = None
        self._closed = False

    def asker(self, sink: EventSink, opts: StartOpts, cwd: str) -> ToolAsker:
        """How a run started with ``opts`` in ``cwd`` asks a person about its tool calls (in
        its approval book; with none, every ask is denied)."""
        return ToolAsker.for_run(
            sink,
            approvals_db=opts.approvals_db,
            runtime_id=self.id,
            agent_id=opts.agent_id,
            session_key=opts.session_key,
            cwd=cwd,
        )

    # -- lifecycle -----------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError(f"{self.id} adapter entered twice")
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
        await self._shutdown()
        stack, self._stack = self._stack, None
        self._nursery = None
        if stack is None:
            return
        try:
            await stack.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            # The nursery wraps the body's own exception; give it back to the caller unwrapped.
            if exc is not None and all(e is exc for e in exception_leaves(group)):
                raise exc from None
            raise

    async def aclose(self) -> None:
        """Abort every live run and release resources (the nursery closes on ``__aexit__``)."""
        await self._shutdown()

    async def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            for emitter in list(self._runs.runs.values()):
                if not emitter.done:
                    try:
                        await self.abort(emitter.handle)
                    except Exception:
                        _log.warning("%s: abort during shutdown failed", self.id, exc_info=True)

    @property
    def nursery(self) -> trio.Nursery:
        if self._nursery is None:
            raise RuntimeError(f"use `async with` on the {self.id} adapter before starting runs")
        return self._nursery

    # -- trait pieces ------------------------------------------------------------------------

    @property
    def session_codec(self) -> SessionCodec | None:
        return None

    async def health(self) -> HealthResult:
        """Runs :meth:`probe_health` within the 2 s the trait allows; never raises. The probe
        itself gets 1.5 s: the rest is for ending what it started (a probe's child is asked to
        stop, then killed), which took over 0.2 s on a loaded machine (a contract run failed
        when the probe had 1.9 s)."""
        try:
            with trio.fail_after(HEALTH_TIMEOUT_S - 0.5):
                return await self.probe_health()
        except trio.TooSlowError:
            return HealthResult(ok=False, message="health check timed out")
        except Exception as exc:
            return HealthResult(ok=False, message=redact_secrets(f"{type(exc).__name__}: {exc}"))

    async def probe_health(self) -> HealthResult:
        """Override: the real check (may be slow or raise; :meth:`health` bounds it)."""
        await trio.lowlevel.checkpoint()
        return HealthResult(ok=True)

    def forget_run(self, session_key: str) -> None:
        """Override: drop the adapter's own record of a finished run the run table forgot
        (see :data:`~adapters._runs.KEEP_FINISHED`)."""

    def new_run(self, session_key: str) -> RunEmitter:
        """Register a new run's emitter (replacing any earlier run with the same key)."""
        if self._closed:
            raise RuntimeError(f"{self.id} adapter is closed")
        handle = RunHandle(adapter_id=self.id, session_key=session_key, run_id=None)
        emitter = RunEmitter(handle=handle, clock=self._clock, one_shot=self.one_shot)
        self._runs.add(emitter)
        return emitter

    async def abort(self, run: RunHandle) -> None:
        """Override: cancel the live run so its stream ends in ``done{aborted}``. Idempotent."""
        raise NotImplementedError

    def emitter_for(self, run: RunHandle) -> RunEmitter | None:
        return self._runs.get(run)

    def events(self, run: RunHandle) -> QueueEventStream:
        emitter = self._runs.get(run)
        if emitter is None:
            return closed_stream()
        return emitter.subscribe()

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in the adapter's nursery."""
        self.nursery.start_soon(fn, *args)


class JsonSessionCodec:
    """The original executor's session blob: ``{"sessionKey", "sessionId"}`` JSON, where ``sessionId``
    is the runtime's own id for the session (the bound run id)."""

    def __init__(self, adapter: AdapterBase) -> None:
        self._adapter = adapter

    async def serialize(self, run: RunHandle) -> str:
        await trio.lowlevel.checkpoint()
        return json.dumps({"sessionKey": run.session_key, "sessionId": run.run_id})

    async def restore(self, blob: str) -> RunHandle:
        await trio.lowlevel.checkpoint()
        data = json.loads(blob)
        return RunHandle(
            adapter_id=self._adapter.id,
            session_key=str(data.get("sessionKey") or ""),
            run_id=data.get("sessionId"),
        )
