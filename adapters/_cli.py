"""The one run loop every child-process runtime shares: spawn, read lines, decode, normalize,
publish, synthesize the terminal on exit, and the exit-error rules.

A runtime supplies only what is its own — a :class:`CliDialect` (decode one line, normalize one
frame, with the run's state) and the child's :class:`ChildSpec` (argv, environment, directory)
— and :class:`CliRun` does the rest. The smallest child-process adapter::

    import json
    from adapters import AdapterBase, ChildSpec, CliDialect, CliRun
    from adapters._process import child_env
    from orchestrator.core.errors import ProtocolError

    class EchoDialect(CliDialect):
        name = "echo"

        def __init__(self) -> None:
            self.text: list[str] = []

        @property
        def summary(self) -> str:                      # done.summary
            return "".join(self.text)

        def decode(self, line: bytes) -> object:       # an unreadable line: ProtocolError
            try:
                return json.loads(line)
            except ValueError:
                raise ProtocolError("not JSON", line=line) from None

        def normalize(self, frame, make):              # None: an unknown frame
            if frame.get("type") == "text":
                self.text.append(frame["text"])
                return [make.text_delta(frame["text"])]
            if frame.get("type") == "result":          # the terminal group
                return make.finish("success", self.summary)
            return None

    class EchoAdapter(AdapterBase):
        id = "echo"

        def __init__(self, argv: list[str]) -> None:   # the CLI, e.g. ["echo-cli", "--json"]
            super().__init__()
            self.argv = argv
            self.live: dict[str, CliRun] = {}

        async def start(self, task, opts):
            run = CliRun(self.new_run(opts.session_key), EchoDialect())
            self.live[opts.session_key] = run
            prompt = opts.full_message().encode()      # on stdin: argv caps a string at 128 KiB
            spec = ChildSpec(self.argv, env=child_env(), input=prompt)
            await run.launch(self.nursery, spec, adapter=self.id)  # the last await of start()
            return run.handle

        async def abort(self, run):
            await self.live[run.session_key].abort()

        # capabilities, set_model, write_context: the adapter's own

What the loop guarantees, for every runtime on it:

* **Spawn errors** (binary missing, bad directory) are raised from ``launch`` — so from
  ``start()`` — *and* reported in the stream (``error{fatal}`` + ``done{error}``).
* **Late run id**: nothing is normalized before ``start()`` has returned; the runtime's own id
  (:meth:`CliDialect.runtime_id`) is bound when a frame carries it, else a generated one.
* **Every line accounted for**: an over-cap line gives a non-fatal ``error{line_too_long}``; a
  line that is not JSON is counted and surfaced once (``status``); an unknown frame likewise.
* **The terminal group** (``done``, with ``error`` before it) is held until the process group is
  gone, so a host that sees ``done`` never has a live child behind it. After the runtime's
  terminal frame the child gets :attr:`ChildSpec.exit_wait` seconds to exit, then it is
  terminated (SIGINT → SIGTERM → SIGKILL).
* **Exit rules**, in order: our abort → ``done{aborted}`` (it wins over a turn that completed
  while the process was exiting); a failure the adapter recorded (:attr:`CliRun.failure`, e.g. a
  failed handshake) → that error; the runtime said its turn completed without a terminal frame
  (:attr:`CliDialect.completed`) → ``done{success}``; terminated by us → ``done{aborted}``; exit 0
  without a result → ``ProtocolError`` (naming the first unreadable line, if any); any other
  exit → :meth:`CliDialect.exit_error` (a ``RuntimeExitedError`` with the stderr tail by default).
* **A lost answer is an error, not a success**: when a line was discarded (over the cap) and no
  assistant text followed it, a ``done{success}`` becomes ``error{line_too_long}`` +
  ``done{error}`` — unless the runtime's terminal frame restates the answer itself
  (:attr:`CliDialect.terminal_has_answer`, Claude Code's ``result``).
* **Long prompts** go on stdin (:attr:`ChildSpec.input`), not argv (the kernel caps one argument
  at 128 KiB).

Protocols that talk back on stdin (JSON-RPC, control requests) give the dialect a
:meth:`CliDialect.route`: frames it consumes (responses, server requests) are handled as they
arrive, even before ``start()`` returns; the rest are normalized in order once it has. A
``conversation`` (the handshake) runs beside the reader; ``launch`` returns when it has set
:attr:`CliRun.ready`.
"""

from __future__ import annotations

import collections
import json
import math
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, suppress
from pathlib import Path
from typing import Any, ClassVar, Final, Generic, Protocol, TypeVar, cast

import attrs
import trio

from orchestrator.core.adapter import HealthResult, RunHandle, StartOpts
from orchestrator.core.errors import (
    LineTooLongError,
    ProtocolError,
    RingleaderError,
    RuntimeExitedError,
    RuntimeReportedError,
    redact_secrets,
)
from orchestrator.core.events import Done, EventFactory, RuntimeEvent, TextDelta, now_ms

from ._base import AdapterBase, validate_context_key, write_context_file
from ._jsonl import Frame
from ._jsonrpc import METHOD_NOT_FOUND, JsonRpcClient, RpcErrorReply, answer_request, rpc_kind
from ._process import (
    DEFAULT_SIGINT_GRACE,
    DEFAULT_SIGTERM_GRACE,
    ChildProcess,
    child_env,
    open_child,
)
from ._runs import RunEmitter
from ._runtimes import install_hint, runtime_binary
from .scripted import RecordedCall

__all__ = [
    "DEFAULT_EXIT_WAIT",
    "PROMPT_STDIN_BYTES",
    "Answers",
    "ChildSpec",
    "CliAdapterBase",
    "CliConfig",
    "CliDialect",
    "CliRun",
    "CliSession",
    "OriginCodec",
    "make_run_dirs",
    "probe_version",
    "prompt_input",
]

_MAX_CALLS: Final = 1000

DEFAULT_EXIT_WAIT: Final = 5.0
"""How long a child may take to exit after its terminal frame before it is terminated."""

PROMPT_STDIN_BYTES: Final = 32 * 1024
"""Prompts longer than this (UTF-8 bytes) go on stdin: Linux caps one argv string at 128 KiB and
argv plus environment at ``ARG_MAX``."""

_PIPE_ERRORS: Final = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class CliDialect:
    """A runtime's own part of the run loop; one instance per run (it keeps the run's state).

    Override :meth:`decode` and :meth:`normalize`; the rest have working defaults.
    """

    name: ClassVar[str] = "runtime"
    """How messages name the runtime (``"claude"``, ``"codex"``)."""
    terminal_has_answer: ClassVar[bool] = False
    """The runtime's terminal frame restates the final answer (so a lost line cannot lose it)."""
    resume: str | None = None
    """The session this run resumes, if any."""
    missing_session: ClassVar[str] = ""
    """What the runtime writes to stderr when the session to resume does not exist."""

    @property
    def completed(self) -> bool:
        """The runtime said its turn completed without a terminal frame (Codex
        ``turn.completed``): the loop ends the run in ``done{success}`` at exit."""
        return False

    @property
    def summary(self) -> str:
        """The run's answer so far (``done.summary`` when the loop makes the terminal)."""
        return ""

    @property
    def last_error(self) -> str | None:
        """The runtime's last error text (the message of :meth:`exit_error`)."""
        return None

    def decode(self, line: bytes) -> Any:
        """One stdout line as a frame; raise :class:`ProtocolError` for an unreadable line."""
        raise NotImplementedError

    def normalize(self, frame: Any, make: EventFactory) -> list[RuntimeEvent] | None:
        """Events for one frame (``make.finish``/``make.fail`` for the terminal group); ``None``
        for a frame of an unknown kind."""
        raise NotImplementedError

    def end(self) -> None:
        """The child's output ended (e.g. fail the requests still waiting for an answer)."""

    def runtime_id(self, frame: Any) -> str | None:
        """The runtime's own id for the run, if this frame carries it (bound on first sight)."""
        return None

    def label(self, frame: Any) -> str:
        """A name for an unknown frame (surfaced once per name)."""
        kind: object = cast(dict[str, Any], frame).get("type") if isinstance(frame, dict) else None
        return kind if isinstance(kind, str) else type(cast(object, frame)).__name__

    def flush(self, make: EventFactory) -> list[RuntimeEvent]:
        """Events the dialect holds back (batched text), released at the end of each batch and
        before any event the loop makes itself."""
        return []

    def opening(self, emitter: RunEmitter) -> list[RuntimeEvent]:
        """Events to publish when the run starts reading (after ``start()`` has returned)."""
        return []

    async def route(self, frame: Any) -> bool:
        """Consume a transport frame (a response, a server request) as it arrives; ``True`` if
        consumed. Only called when :attr:`routes` is set."""
        await trio.lowlevel.checkpoint()
        return False

    routes: ClassVar[bool] = False
    """The protocol talks back on stdin: frames are read (and routed) before ``start()``
    returns, and the rest buffered until it has."""

    def exit_error(self, child: ChildProcess, code: int, run: CliRun) -> RingleaderError:
        """The error for a non-zero exit before the run's result (override to recognize the
        runtime's own failures, e.g. a stale resume pointer)."""
        tail = child.stderr_tail
        if self.resume and self.missing_session and self.missing_session in tail:
            # A stale resume pointer: permanent, never retried into a loop (the original executor leaves this case open; see docs/architecture.md, Lineage).
            return RuntimeReportedError(
                f"{self.name} has no session {self.resume} in its home ({self.missing_session})",
                code="session_not_found",
                adapter=child.adapter,
                session_key=child.session_key,
            )
        message = self.last_error or f"{self.name} exited with status {code} before its result"
        lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
        detail = next((ln for ln in lines if ln.startswith("Error")), lines[-1] if lines else "")
        if detail and detail not in message:
            message = f"{message}: {detail[:300]}"
        return RuntimeExitedError(
            redact_secrets(message),
            exit_code=code,
            stderr_tail=tail,
            adapter=child.adapter,
            session_key=child.session_key,
        )


class RpcDialect(CliDialect):
    """A JSON-RPC runtime's dialect (ACP, Codex's app-server): responses resolve the requests
    waiting on :attr:`rpc` and the peer's requests are answered (:meth:`answer`) as they arrive;
    notifications are normalized in order. :attr:`rpc` is set once the process is up and closed
    when its output ends."""

    routes = True
    rpc: JsonRpcClient | None = None
    spawn: Callable[..., None] | None = None
    """Where the peer's requests are answered, each in its own task (the adapter's nursery): an
    answer that waits for a person must not hold up the reader. ``None``: answered inline."""

    async def route(self, frame: Any) -> bool:
        kind = rpc_kind(frame)
        if kind == "response" and self.rpc is not None:
            self.rpc.resolve(frame)
            return True
        if kind == "request" and self.rpc is not None:
            if self.spawn is not None:
                self.spawn(answer_request, self.rpc, frame, self.answer)
                await trio.lowlevel.checkpoint()
            else:
                await answer_request(self.rpc, frame, self.answer)
            return True
        await trio.lowlevel.checkpoint()
        return False

    async def answer(self, method: str, params: dict[str, Any]) -> Any:
        """The result (or :class:`~adapters._jsonrpc.RpcErrorReply`) for a request of the peer."""
        await trio.lowlevel.checkpoint()
        return RpcErrorReply(METHOD_NOT_FOUND, f"ringleader does not handle {method}")

    def end(self) -> None:
        if self.rpc is not None:
            self.rpc.close()


@attrs.frozen
class ChildSpec:
    """How to start one run's child process (see :func:`adapters._process.open_child`)."""

    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: str | Path | None = None
    stdin: bool = False
    """Keep a stdin pipe open for the run (a protocol that talks back, or a test's fake CLI)."""
    input: bytes | None = None
    """Written to stdin at start (a long prompt); stdin is then closed unless :attr:`stdin`."""
    sigint_grace: float = DEFAULT_SIGINT_GRACE
    sigterm_grace: float = DEFAULT_SIGTERM_GRACE
    install_hint: str | None = None
    exit_wait: float = DEFAULT_EXIT_WAIT

    def open(
        self, *, adapter: str, session_key: str | None = None
    ) -> AbstractAsyncContextManager[ChildProcess]:
        """Spawn the child (:func:`~adapters._process.open_child`); stdin is a pipe when
        :attr:`stdin` or :attr:`input` asks for one."""
        return open_child(
            self.argv,
            env=self.env,
            cwd=self.cwd,
            stdin=self.stdin or self.input is not None,
            sigint_grace=self.sigint_grace,
            sigterm_grace=self.sigterm_grace,
            adapter=adapter,
            session_key=session_key,
            install_hint=self.install_hint,
        )


Conversation = Callable[["CliRun", ChildProcess], Awaitable[None]]
"""Runs beside the reader once the child is up (a handshake); must set :attr:`CliRun.ready`."""


@attrs.define(eq=False)
class CliRun:
    """One run of a child-process runtime, driven by the shared loop (see the module docstring)."""

    emitter: RunEmitter
    dialect: CliDialect
    on_runtime_id: Callable[[str], None] | None = None
    """Called with every runtime id a frame carries (e.g. to remember a session's directory)."""
    cleanup: Callable[[], Awaitable[None]] | None = None
    """Runs (shielded) after the run's ``done`` (e.g. removing a per-run home)."""
    child: ChildProcess | None = None
    aborting: bool = False
    """Our abort is under way: the run ends in ``done{aborted}`` whatever the exit."""
    failure: RingleaderError | None = None
    """A failure the adapter found (a failed handshake): the run ends with it at exit."""
    spawned: trio.Event = attrs.field(factory=trio.Event)
    ready: trio.Event = attrs.field(factory=trio.Event)
    go: trio.Event = attrs.field(factory=trio.Event)
    """Set when ``start()`` returns: frames are normalized only from then on."""
    ended: trio.Event = attrs.field(factory=trio.Event)
    """The turn is over: a terminal frame, a completion, a failure, or the end of output."""
    spawn_error: RingleaderError | None = None
    bad_line: ProtocolError | None = None
    """The first line that was not JSON (named by the exit-0-without-a-result error)."""
    lost: LineTooLongError | None = None
    """A discarded (over-cap) line that no assistant text has followed yet."""
    held: list[RuntimeEvent] = attrs.field(factory=list[RuntimeEvent])
    """The terminal group, published once the process group is gone."""

    @property
    def handle(self) -> RunHandle:
        return self.emitter.handle

    @property
    def session_key(self) -> str:
        return self.emitter.handle.session_key

    # -- launching ---------------------------------------------------------------------------

    async def launch(
        self,
        nursery: trio.Nursery,
        spec: ChildSpec,
        *,
        adapter: str,
        conversation: Conversation | None = None,
    ) -> None:
        """Start the child and the loop in ``nursery``; return once it runs (and ``conversation``
        has set :attr:`ready`). Spawn errors are raised (and reported in the stream). Make this
        the last await of ``start()``: the loop begins normalizing as soon as it returns."""
        nursery.start_soon(self._drive, spec, adapter, conversation)
        await self.spawned.wait()
        if self.spawn_error is not None:
            raise self.spawn_error
        if conversation is None:
            self.ready.set()
        await self.ready.wait()
        self.go.set()

    async def _drive(
        self, spec: ChildSpec, adapter: str, conversation: Conversation | None
    ) -> None:
        emitter = self.emitter
        try:
            try:
                async with spec.open(adapter=adapter, session_key=self.session_key) as child:
                    self.child = child
                    self.spawned.set()
                    code = await self._serve(child, spec, conversation)
                    # The terminal group goes out only now: once done is seen, the process is gone.
                    if self.held:
                        await emitter.publish(self._checked(self.held))
                    await self._finish(child, code)
            except RingleaderError as exc:
                if self.spawned.is_set():
                    raise
                self.spawn_error = exc
                self.spawned.set()
                await emitter.fail_with(exc)
        except Exception as exc:
            await emitter.fail_from(exc, adapter)
        finally:
            self.spawned.set()
            self.ready.set()
            with trio.CancelScope(shield=True):
                if not emitter.done:
                    if self.aborting:
                        await emitter.finish("aborted", self.dialect.summary)
                    else:
                        await emitter.fail(
                            f"{adapter} run ended without a result", code="adapter_error"
                        )
                if self.cleanup is not None:
                    await self.cleanup()

    async def _serve(
        self, child: ChildProcess, spec: ChildSpec, conversation: Conversation | None
    ) -> int:
        """Read until the turn is over, let the child exit (or terminate it); its exit code."""
        read_done = trio.Event()
        async with trio.open_nursery() as nursery:
            if spec.input is not None:
                nursery.start_soon(self._write_input, child, spec.input, not spec.stdin)
            nursery.start_soon(self._read, child, read_done)
            if conversation is not None:
                await conversation(self, child)
            await self.ended.wait()
            # The turn is over (or the output ended): let the child finish, then reap the group.
            with trio.move_on_after(spec.exit_wait):
                if conversation is not None:
                    with suppress(*_PIPE_ERRORS):
                        await child.close_stdin()
                await read_done.wait()
                await child.wait()
            code = await child.terminate()  # a no-op when it has exited; reaps the group
            nursery.cancel_scope.cancel()
        return -1 if code is None else code

    @staticmethod
    async def _write_input(child: ChildProcess, data: bytes, close: bool) -> None:
        with suppress(*_PIPE_ERRORS):  # a child that died early: its exit says why
            await child.send_line(data)
            if close:
                await child.close_stdin()

    # -- reading -----------------------------------------------------------------------------

    async def _read(self, child: ChildProcess, done: trio.Event) -> None:
        try:
            if self.dialect.routes:
                await self._read_routed(child)
            else:
                await self.go.wait()
                await self._start_reading()
                async for batch in child.batches():
                    await self._take(batch)
        finally:
            self.dialect.end()
            done.set()
            self.ended.set()

    async def _start_reading(self) -> None:
        opening = self.dialect.opening(self.emitter)
        if opening:
            await self.emitter.publish(opening)

    async def _take(self, items: Sequence[Any]) -> None:
        held = await self.normalize(items)
        if held:
            self.held = held
        if held or self.dialect.completed:
            self.ended.set()

    async def _read_routed(self, child: ChildProcess) -> None:
        """Route transport frames as they arrive; hand the rest, in order, to a task that
        normalizes them once ``start()`` has returned."""
        send, receive = trio.open_memory_channel[list[Any]](math.inf)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._normalize_routed, receive)
            async with send:
                async for batch in child.batches():
                    items: list[Any] = []
                    for line in batch:
                        item = self._decode(line)
                        if item is None:
                            continue
                        if isinstance(item, ProtocolError) or not await self.dialect.route(item):
                            items.append(item)
                    if items:
                        send.send_nowait(items)

    async def _normalize_routed(self, receive: trio.MemoryReceiveChannel[list[Any]]) -> None:
        await self.go.wait()
        await self._start_reading()
        async with receive:
            async for first in receive:
                items = list(first)
                while True:
                    try:
                        items += receive.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                await self._take(items)

    def _decode(self, line: Frame) -> Any:
        """A frame, a :class:`ProtocolError` (over-cap or unreadable line), or ``None`` (blank)."""
        if isinstance(line, LineTooLongError):
            return line
        if not line:
            return None
        try:
            return self.dialect.decode(line)
        except ProtocolError as exc:
            return exc

    async def normalize(self, batch: Sequence[Any]) -> list[RuntimeEvent]:
        """Normalize one batch (raw lines, or frames already decoded) and publish the events;
        return the terminal group, unpublished (the caller decides when it goes out)."""
        emitter = self.emitter
        make = emitter.factory
        dialect = self.dialect
        out: list[RuntimeEvent] = []
        for line in batch:
            if make.finished:
                break
            frame = self._decode(line) if isinstance(line, bytes) else line
            if frame is None:
                continue
            if isinstance(frame, ProtocolError):
                emitter.ensure_run_id()
                out += dialect.flush(make)
                if isinstance(frame, LineTooLongError):
                    self.lost = frame
                    out.append(make.error(str(frame), code=frame.event_code, fatal=False))
                else:
                    if self.bad_line is None:
                        self.bad_line = frame
                    out += emitter.note_unknown("non-JSON line")
                continue
            runtime_id = dialect.runtime_id(frame)
            if runtime_id:
                emitter.bind_run_id(runtime_id)
                if self.on_runtime_id is not None:
                    self.on_runtime_id(runtime_id)
            if not make.run_id:
                emitter.ensure_run_id()
            events = dialect.normalize(frame, make)
            if events is None:
                out += dialect.flush(make)
                out += emitter.note_unknown(dialect.label(frame))
            elif make.finished:
                if out:
                    await self._publish(out)
                return events
            elif events:
                out += events
        out += dialect.flush(make)
        if out:
            await self._publish(out)
        return []

    async def _publish(self, events: list[RuntimeEvent]) -> None:
        if self.lost is not None and any(
            type(e) is TextDelta and e.channel == "assistant" for e in events
        ):
            self.lost = None  # answer text came after the lost line
        await self.emitter.publish(events)

    # -- the end -----------------------------------------------------------------------------

    def _answer_lost(self) -> RingleaderError | None:
        lost = self.lost
        if lost is None or self.dialect.terminal_has_answer:
            return None
        return LineTooLongError(
            f"the answer was lost: {lost} (no answer text followed it)",
            limit=lost.limit,
            line=lost.line,
            adapter=lost.adapter,
            session_key=lost.session_key,
        )

    def _checked(self, held: list[RuntimeEvent]) -> list[RuntimeEvent]:
        """The held terminal group, with a success that lost its answer turned into a failure."""
        done = held[-1]
        lost = self._answer_lost()
        if lost is None or not (isinstance(done, Done) and done.reason == "success"):
            return held
        error = self.emitter.factory.error(str(lost), code=lost.event_code)
        error = error.model_copy(update={"seq": done.seq})
        failed = done.model_copy(
            update={"seq": done.seq + 1, "reason": "error", "summary": str(lost)}
        )
        return [*held[:-1], error, failed]

    async def _finish(self, child: ChildProcess, code: int) -> None:
        """The exit rules (see the module docstring)."""
        emitter = self.emitter
        dialect = self.dialect
        if emitter.done:
            return
        if self.aborting:
            await emitter.finish("aborted", dialect.summary)
        elif self.failure is not None:
            await emitter.fail_with(self.failure)
        elif dialect.completed:
            lost = self._answer_lost()
            if lost is not None:
                await emitter.fail_with(lost)
            else:
                await emitter.finish("success", dialect.summary)
        elif child.terminated_by_us:
            await emitter.finish("aborted", dialect.summary)
        elif code == 0:
            message = f"{dialect.name} exited without a result"
            bad = self.bad_line
            await emitter.fail_with(
                ProtocolError(
                    f"{message} (unreadable line: {bad.line[:80]!r})" if bad else message,
                    line=bad.line if bad else "",
                    adapter=child.adapter,
                    session_key=child.session_key,
                )
            )
        else:
            await emitter.fail_with(dialect.exit_error(child, code, self))

    # -- controls ----------------------------------------------------------------------------

    async def abort(self, deadline: float = 12.0) -> None:
        """Our abort: terminate the child (unless its turn is over and it is exiting), wait up to
        ``deadline`` seconds for ``done``, else publish ``done{aborted}``. Idempotent."""
        emitter = self.emitter
        if emitter.done:
            await trio.lowlevel.checkpoint()
            return
        self.aborting = True
        child = self.child
        if child is not None and not self.ended.is_set():
            await child.terminate()
        with trio.move_on_after(deadline):
            await emitter.finished.wait()
        if not emitter.done:
            await emitter.finish("aborted", self.dialect.summary)


def prompt_input(prompt: str, limit: int = PROMPT_STDIN_BYTES) -> bytes | None:
    """``prompt`` as stdin bytes when it is too long for argv, else ``None`` (keep it on argv)."""
    data = prompt.encode("utf-8")
    return data if len(data) > limit else None


HomeMaker = Callable[[str | None, Path | None, str], tuple[Path, bool]]
"""A runtime's ``prepare_home(home_dir, state_root, run_name) -> (home, owned)`` (blocking)."""


async def make_run_dirs(
    prepare_home: HomeMaker, home_dir: str | None, state_root: Path | None, cwd: str | None
) -> tuple[Path, bool, Path]:
    """The run's home (``prepare_home`` under a fresh ``run-<id>`` name: the directory and
    whether the adapter owns it) and its working directory (``cwd``, else ``<home>/workspace``),
    made in one worker-thread hop (each hop is a thread wake-up on the way to the first event)."""

    def make() -> tuple[Path, bool, Path]:
        home, owned = prepare_home(home_dir, state_root, f"run-{uuid.uuid4().hex[:16]}")
        where = Path(cwd) if cwd else home / "workspace"
        where.mkdir(parents=True, exist_ok=True)
        return home, owned, where

    return await trio.to_thread.run_sync(make)


async def probe_version(
    argv: Sequence[str], env: Mapping[str, str], *, adapter: str
) -> HealthResult:
    """Health from ``<binary> --version``: ok with the version text, or the exit status."""
    async with open_child(
        argv, env=env, sigint_grace=0.1, sigterm_grace=0.1, adapter=adapter
    ) as child:
        out = b"".join(
            line
            for batch in [b async for b in child.batches()]
            for line in batch
            if isinstance(line, bytes)
        )
        code = await child.wait()
    if code != 0:
        name = Path(argv[0]).name if argv else adapter
        return HealthResult(
            ok=False, message=f"{name} {' '.join(argv[1:])} exited with status {code}"
        )
    return HealthResult(ok=True, message=out.decode("utf-8", "replace").strip())


# ---------------------------------------------------------------------------------- requests

A = TypeVar("A")


class Answers(Generic[A]):
    """Our requests over a child's stdin waiting for their answers (JSON-RPC ids, control request
    ids): the reader hands each answer to :meth:`resolve`; when the child's output ends,
    :meth:`close` fails every request still waiting with ``trio.BrokenResourceError``."""

    def __init__(self, peer: str) -> None:
        self._peer = peer
        self._waiting: dict[object, tuple[trio.Event, list[A]]] = {}
        self.closed = False

    async def ask(self, key: object, send: Callable[[], Awaitable[object]], what: str) -> A:
        """Register ``key``, ``send()`` the request, and wait for its answer."""
        if self.closed:
            raise trio.ClosedResourceError(f"{self._peer} is gone")
        done, answer = self._waiting[key] = (trio.Event(), [])
        try:
            await send()
            await done.wait()
        finally:
            self._waiting.pop(key, None)
        if not answer:
            raise trio.BrokenResourceError(f"{self._peer} ended before answering {what}")
        return answer[0]

    def resolve(self, key: object, answer: A) -> bool:
        """Route an answer to its request; ``False`` if nobody waits for it."""
        waiting = self._waiting.get(key)
        if waiting is None:
            return False
        waiting[1].append(answer)
        waiting[0].set()
        return True

    def close(self) -> None:
        self.closed = True
        for done, _ in self._waiting.values():
            done.set()


# ---------------------------------------------------------------------------------- adapters


class CliConfig(Protocol):
    """The settings every child-process adapter's configuration has."""

    @property
    def binary(self) -> str | None: ...
    @property
    def launcher(self) -> Callable[[Sequence[str]], Sequence[str]] | None: ...
    @property
    def env_allow(self) -> Sequence[str]: ...
    @property
    def sigint_grace(self) -> float: ...
    @property
    def sigterm_grace(self) -> float: ...


C = TypeVar("C", bound=CliConfig)


class LiveRun(Protocol):
    """What the shared adapter base reads of an adapter's own per-run record."""

    @property
    def cli(self) -> CliRun: ...
    @property
    def cwd(self) -> Path: ...
    @property
    def session_id(self) -> str | None:
        """The runtime's session (thread) id once known: what a resume continues."""
        ...


R = TypeVar("R", bound=LiveRun)


@attrs.frozen
class CliSession:
    """What resumes a CLI runtime's session: its native id and the directory it started in."""

    session_key: str
    session_id: str | None
    cwd: str | None


class OriginCodec:
    """``{"sessionKey", "sessionId", "cwd"}`` JSON: the runtime's session id and the directory the
    session started in. ``restore`` remembers the directory, so a run resumed with
    ``resume_session_id`` works where the session started."""

    def __init__(self, adapter: CliAdapterBase[Any, Any]) -> None:
        self._adapter = adapter

    async def serialize(self, run: RunHandle) -> str:
        await trio.lowlevel.checkpoint()
        session = self._adapter.session_of(run)
        return json.dumps(
            {"sessionKey": session.session_key, "sessionId": session.session_id, "cwd": session.cwd}
        )

    async def restore(self, blob: str) -> RunHandle:
        await trio.lowlevel.checkpoint()
        session = self.parse(blob)
        if session.session_id and session.cwd:
            self._adapter.remember_origin(session.session_id, session.cwd)
        return RunHandle(
            adapter_id=self._adapter.id, session_key=session.session_key, run_id=session.session_id
        )

    @staticmethod
    def parse(blob: str) -> CliSession:
        raw: Any = json.loads(blob)
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        key, session_id, cwd = (data.get(k) for k in ("sessionKey", "sessionId", "cwd"))
        return CliSession(
            session_key=key if isinstance(key, str) else "",
            session_id=session_id if isinstance(session_id, str) and session_id else None,
            cwd=cwd if isinstance(cwd, str) and cwd else None,
        )


class CliAdapterBase(AdapterBase, Generic[C, R]):
    """What the child-process adapters share besides the run loop: the binary or a launcher,
    ``--version`` health, the calls record, the live runs by session key (``R``: the adapter's
    own run record), session origins (a resumed session runs where it started) and models set
    for a session's next run, aborts (the runtime's clean stop, then the process) and confined
    context files."""

    def __init__(self, config: C, *, clock: Callable[[], int] = now_ms) -> None:
        super().__init__(clock=clock)
        self.config: C = config
        self.calls: collections.deque[RecordedCall] = collections.deque(maxlen=_MAX_CALLS)
        """Side effects the adapter issued (``abort``, ``setModel``, ``writeContext``, …)."""
        self._origins: dict[str, str] = {}
        self._next_models: dict[str, str] = {}
        self._codec = OriginCodec(self)
        self._live: dict[str, R] = {}

    @property
    def session_codec(self) -> OriginCodec:
        return self._codec

    def forget_run(self, session_key: str) -> None:
        self._live.pop(session_key, None)

    def record(self, call: str, /, **params: Any) -> None:
        """Record a side effect the adapter issued (in :attr:`calls`)."""
        self.calls.append(RecordedCall(call, params))

    def binary(self) -> str:
        """The runtime's executable (raises ``RuntimeNotFoundError`` with the install command)."""
        return self.config.binary or str(runtime_binary(self.id))

    def argv(self, args: Sequence[str]) -> list[str]:
        launcher = self.config.launcher
        if launcher is not None:
            return list(launcher(args))
        return [self.binary(), *args]

    def spec(self, args: Sequence[str], env: Mapping[str, str], **kw: Any) -> ChildSpec:
        """The child for ``args`` (through the launcher, if any) with the configured graces."""
        config = self.config
        return ChildSpec(
            self.argv(args),
            env,
            sigint_grace=config.sigint_grace,
            sigterm_grace=config.sigterm_grace,
            install_hint=install_hint(self.id),
            **kw,
        )

    async def probe_health(self) -> HealthResult:
        # Through the launcher too: a launched runtime that hangs must not be reported healthy.
        env = child_env(self.config.env_allow)
        return await probe_version(self.argv(["--version"]), env, adapter=self.id)

    def begin_start(
        self, opts: StartOpts, default_model: str | None
    ) -> tuple[str | None, str | None]:
        """Check that a run can start (the binary exists, the adapter was entered), then the
        session it resumes and its model: the run's own, else one set for the resumed session,
        else ``default_model``."""
        if self.config.launcher is None:
            self.binary()
        self.nursery  # noqa: B018 - raises if the adapter was not entered
        resume = opts.resume_session_id or None
        model = opts.model or (self._next_models.pop(resume, None) if resume else None)
        return resume, model or default_model

    async def begin_abort(self, run: RunHandle, cli: CliRun | None) -> bool:
        """Record the abort and mark ``cli`` aborting; ``False`` if there is nothing to abort."""
        self.record("abort", sessionKey=run.session_key, runId=run.run_id)
        if cli is None or cli.emitter.done:
            await trio.lowlevel.checkpoint()
            return False
        cli.aborting = True
        return True

    def remember_origin(self, session_id: str, cwd: str) -> None:
        """Record where a session started (its resumes run there)."""
        self._origins[session_id] = cwd

    def origin(self, session_id: str | None) -> str | None:
        return self._origins.get(session_id) if session_id else None

    def child_for(self, run: RunHandle) -> ChildProcess | None:
        """The run's child process (``None`` before it is spawned or for an unknown run)."""
        live = self._live.get(run.session_key)
        return live.cli.child if live is not None else None

    def session_of(self, run: RunHandle) -> CliSession:
        """The run's session: the live run's id and directory, else the recorded origin."""
        live = self._live.get(run.session_key)
        if live is None:
            return CliSession(run.session_key, run.run_id, self.origin(run.run_id))
        return CliSession(run.session_key, live.session_id or run.run_id, str(live.cwd))

    async def abort(self, run: RunHandle) -> None:
        """Record the abort, ask the runtime for its clean stop (:meth:`interrupt`), then end
        the process (SIGINT, SIGTERM, SIGKILL with the configured graces)."""
        live = self._live.get(run.session_key)
        if live is None or not await self.begin_abort(run, live.cli):
            return
        await self.interrupt(run, live)
        config = self.config
        await live.cli.abort(config.sigint_grace + config.sigterm_grace + 6)

    async def interrupt(self, run: RunHandle, live: R) -> None:
        """The runtime's own clean stop before its process is ended (default: none)."""
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        """Write ``value`` to ``key`` under the run's working directory (confined to it)."""
        live = self._live.get(run.session_key)
        await self.write_file(live.cwd if live is not None else None, key, value)
        self.record("writeContext", sessionKey=run.session_key, key=key, value=value)

    async def write_file(self, cwd: Path | None, key: str, value: str) -> None:
        """Write a context file under ``cwd`` (confined to it); ``None``: only validate ``key``."""
        validate_context_key(key)
        if cwd is not None:
            await write_context_file(cwd, key, value)  # race-free (adapters._confine)
