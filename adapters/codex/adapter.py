"""The Codex adapter: ``RuntimeAdapter`` (id ``codex``) over the real Codex CLI.

Two modes (:attr:`CodexConfig.mode`):

* ``exec`` — one ``codex exec --json`` process per run (``codex exec resume <thread>`` to
  resume), stdin on the null device. Codex has no token deltas here: each agent message arrives
  whole. Abort terminates the process group (SIGINT → SIGTERM → SIGKILL); Codex then exits with no
  final line and the run ends in ``done{aborted}``. The ``done{success}`` of a run is published
  when the process has exited after ``turn.completed``.
* ``app-server`` — one ``codex app-server`` process per run speaking JSON-RPC on stdio:
  ``initialize`` → ``thread/start`` (or ``thread/resume``) → ``turn/start``; streamed text;
  ``turn/interrupt`` for abort (the process is terminated if the interrupt is not honoured within
  ``interrupt_grace``); approval requests answered by :attr:`CodexConfig.approve`.

Every run gets its own ``CODEX_HOME`` (the host's ``home_dir``, else a fresh directory under
:attr:`CodexConfig.state_root`, deleted after the run) and ``HOME`` inside it, an allow-listed
environment, and its working directory (``StartOpts.cwd``; for a resumed thread without one, the
thread's origin directory; else a ``workspace`` directory in the home).

In both modes the terminal group (``done``, and ``error`` before it) is published only once the
process group is gone, so a host that sees ``done`` never sees a live Codex behind it; an abort
wins over a turn that completed while the process was exiting. Exec failures carry codes derived
from Codex's message (``rate_limited``, ``server_error``, ``stream_connection_error``,
``runtime_reported``); resuming a thread the home does not hold fails once with
``session_not_found`` (never a retry loop).

Runs are tracked by session key like every adapter. :meth:`CodexAdapter.child_for` exposes a
run's child process (tests check that none outlives its run). Side effects the adapter issues
(``abort``, ``setModel``, ``writeContext``, JSON-RPC calls) are recorded in
:attr:`CodexAdapter.calls`.
"""

from __future__ import annotations

import collections
import json
import math
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from orchestrator.adapter import (
    Capabilities,
    HealthResult,
    NativeHomeClaim,
    RunHandle,
    StartOpts,
    TaskHandle,
)
from orchestrator.errors import (
    LineTooLongError,
    ProtocolError,
    RingleaderError,
    RuntimeExitedError,
    RuntimeReportedError,
    RuntimeStartError,
    redact_secrets,
)
from orchestrator.events import RuntimeEvent, now_ms

from .._base import AdapterBase, validate_context_key, write_context_file
from .._jsonl import Frame
from .._process import ChildProcess, child_env, open_child
from .._runs import RunEmitter
from .._runtimes import install_hint, runtime_binary
from ..scripted import RecordedCall
from .dialect import RpcMessage, as_dict, as_str, decode_exec_line, decode_rpc_line, rpc_kind
from .driver import (
    CodexConfig,
    CodexProvider,
    JsonRpcClient,
    app_server_argv,
    exec_argv,
    prepare_home,
    provider_for,
    run_env,
    thread_total_usage,
)
from .normalize import AppState, ExecState, exec_frame_label, normalize_app, normalize_exec

__all__ = ["CodexAdapter", "CodexCodec", "CodexSession"]

CONTEXT_WINDOWS: Final[Mapping[str, int]] = {"gpt-5.5": 258_400}
"""Context windows Codex reported (app-server ``modelContextWindow``) for models it knows."""

_MAX_CALLS: Final = 1000
_VERSION: Final = "0.1.0"
_LINE_TOO_LONG: Final = "ringleader/lineTooLong"
_NON_JSON: Final = "ringleader/nonJson"
_APPROVALS: Final = frozenset(
    {"item/commandExecution/requestApproval", "item/fileChange/requestApproval"}
)
_LEGACY_APPROVALS: Final = frozenset({"applyPatchApproval", "execCommandApproval"})
_EXIT_WAIT: Final = 5.0
"""Exec: how long Codex may take to exit after its final line before it is terminated."""


@attrs.frozen
class CodexSession:
    """What resumes a Codex session: the thread id and the directory it started in."""

    session_key: str
    thread_id: str | None
    cwd: str | None


class CodexCodec:
    """``{"sessionKey", "sessionId", "cwd"}`` JSON: the thread id and its origin directory.

    ``restore`` remembers the origin directory, so a run resumed with ``resume_session_id`` and
    no ``cwd`` works where the thread started.
    """

    def __init__(self, adapter: CodexAdapter) -> None:
        self._adapter = adapter

    async def serialize(self, run: RunHandle) -> str:
        await trio.lowlevel.checkpoint()
        session = self._adapter.session_of(run)
        return json.dumps(
            {"sessionKey": session.session_key, "sessionId": session.thread_id, "cwd": session.cwd}
        )

    async def restore(self, blob: str) -> RunHandle:
        await trio.lowlevel.checkpoint()
        session = self.parse(blob)
        if session.thread_id and session.cwd:
            self._adapter.remember_origin(session.thread_id, session.cwd)
        return RunHandle(
            adapter_id=self._adapter.id, session_key=session.session_key, run_id=session.thread_id
        )

    @staticmethod
    def parse(blob: str) -> CodexSession:
        data: Any = json.loads(blob)
        if not isinstance(data, dict):
            data = {}
        thread = data.get("sessionId")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        cwd = data.get("cwd")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return CodexSession(
            session_key=str(data.get("sessionKey") or ""),  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            thread_id=thread if isinstance(thread, str) and thread else None,
            cwd=cwd if isinstance(cwd, str) and cwd else None,
        )


async def _fail(emitter: RunEmitter, error: RingleaderError) -> None:
    """Like ``RunEmitter.fail_with``, but a runtime-reported error keeps its own code."""
    code = error.event_code
    if isinstance(error, RuntimeReportedError) and error.code:
        code = error.code
    await emitter.fail(str(error), code=code)


@attrs.define(eq=False)
class _Run:
    emitter: RunEmitter
    opts: StartOpts
    cwd: Path
    model: str | None
    home: Path
    owned_home: bool
    provider: CodexProvider | None
    resume_thread: str | None
    exec_state: ExecState
    child: ChildProcess | None = None
    aborting: bool = False
    spawned: trio.Event = attrs.field(factory=trio.Event)
    go: trio.Event = attrs.field(factory=trio.Event)
    spawn_error: BaseException | None = None
    bad_line: ProtocolError | None = None
    next_model: str | None = None
    # app-server
    app_state: AppState | None = None
    rpc: JsonRpcClient | None = None
    thread_id: str | None = None
    turn_id: str | None = None
    ready: trio.Event = attrs.field(factory=trio.Event)
    """App-server: the handshake ended (the turn started, or it failed)."""
    handshake_error: RingleaderError | None = None
    terminal: list[RuntimeEvent] = attrs.field(factory=list[RuntimeEvent])
    """App-server: the terminal group, held until the process is gone."""
    terminal_seen: trio.Event = attrs.field(factory=trio.Event)

    @property
    def summary(self) -> str:
        if self.app_state is not None:
            return "".join(self.app_state.text)
        return self.exec_state.summary


class CodexAdapter(AdapterBase):
    """Codex behind the trait (see the module docstring). Use as ``async with CodexAdapter(…)``."""

    id = "codex"

    def __init__(
        self, config: CodexConfig | None = None, *, clock: Callable[[], int] = now_ms
    ) -> None:
        super().__init__(clock=clock)
        self.config = config or CodexConfig()
        self.calls: collections.deque[RecordedCall] = collections.deque(maxlen=_MAX_CALLS)
        """Side effects issued (``abort``, ``setModel``, ``writeContext``, RPC methods)."""
        self._live: dict[str, _Run] = {}
        self._origins: dict[str, str] = {}
        self._next_models: dict[str, str] = {}
        self._codec = CodexCodec(self)

    # -- trait: static parts -------------------------------------------------------------------

    @property
    def session_codec(self) -> CodexCodec:
        return self._codec

    def capabilities(self) -> Capabilities:
        config = self.config
        app = config.mode == "app-server"
        model = config.model
        return Capabilities(
            streaming=app,
            mcp=True,
            worktrees=False,
            resume=True,
            tool_approval=app,
            models=(model,) if model else (),
            steerable=False,
            context_window_tokens=CONTEXT_WINDOWS.get(model) if model else None,
            runtime_class="wrapped-oneshot",
            native_home=NativeHomeClaim(scope="per-identity", persist=True),
        )

    async def probe_health(self) -> HealthResult:
        if self.config.launcher is not None:
            await trio.lowlevel.checkpoint()
            return HealthResult(ok=True, message="custom launcher")
        binary = self._binary()
        async with open_child(
            [binary, "--version"],
            env=child_env(self.config.env_allow),
            sigint_grace=0.1,
            sigterm_grace=0.1,
            adapter=self.id,
        ) as child:
            out = b"".join(
                line
                for batch in [b async for b in child.batches()]
                for line in batch
                if isinstance(line, bytes)
            )
            code = await child.wait()
        version = out.decode("utf-8", "replace").strip()
        if code != 0:
            return HealthResult(ok=False, message=f"codex --version exited with status {code}")
        return HealthResult(ok=True, message=version)

    def _binary(self) -> str:
        if self.config.binary:
            return self.config.binary
        return str(runtime_binary("codex"))

    # -- runs ----------------------------------------------------------------------------------

    def child_for(self, run: RunHandle) -> ChildProcess | None:
        """The run's child process (``None`` before it is spawned or for an unknown run)."""
        live = self._live.get(run.session_key)
        return live.child if live is not None else None

    def session_of(self, run: RunHandle) -> CodexSession:
        live = self._live.get(run.session_key)
        thread = run.run_id
        cwd = self._origins.get(thread) if thread else None
        if live is not None:
            thread = live.thread_id or live.exec_state.thread_id or thread
            cwd = str(live.cwd)
        return CodexSession(session_key=run.session_key, thread_id=thread, cwd=cwd)

    def remember_origin(self, thread_id: str, cwd: str) -> None:
        """Record where a thread started (resumes without a ``cwd`` go there)."""
        self._origins[thread_id] = cwd

    def _argv(self, args: list[str]) -> list[str]:
        launcher = self.config.launcher
        if launcher is not None:
            return list(launcher(args))
        return [self._binary(), *args]

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        config = self.config
        if config.launcher is None:
            self._binary()  # raises RuntimeNotFoundError with the install command
        self.nursery  # noqa: B018 - raises if the adapter was not entered
        resume = opts.resume_session_id or None
        model = opts.model or (self._next_models.pop(resume, None) if resume else None)
        model = model or config.model
        run_name = f"run-{uuid.uuid4().hex[:16]}"
        home, owned = await trio.to_thread.run_sync(
            prepare_home, opts.home_dir, config.state_root, run_name
        )
        origin = self._origins.get(resume) if resume else None
        cwd = Path(opts.cwd or origin or home / "workspace")
        await trio.Path(cwd).mkdir(parents=True, exist_ok=True)
        emitter = self.new_run(opts.session_key)
        run = _Run(
            emitter=emitter,
            opts=opts,
            cwd=cwd,
            model=model,
            home=home,
            owned_home=owned,
            provider=provider_for(config, opts.env),
            resume_thread=resume,
            exec_state=ExecState(model=model, prices=config.prices),
        )
        if config.mode == "exec":
            run.ready.set()
        if resume:
            run.exec_state.base_usage = await trio.to_thread.run_sync(
                thread_total_usage, home, resume
            )
        self._live[opts.session_key] = run
        self.calls.append(
            RecordedCall(
                "start", {"sessionKey": opts.session_key, "model": model, "resume": resume}
            )
        )
        if config.mode == "app-server":
            run.app_state = AppState(
                model=model, prices=config.prices, base_usage=run.exec_state.base_usage
            )
            self.spawn(self._drive_app, run)
        else:
            self.spawn(self._drive_exec, run)
        await run.spawned.wait()
        if run.spawn_error is not None:
            raise run.spawn_error
        await run.ready.wait()
        # The driver reads nothing before start() has returned: the run id binds late.
        run.go.set()
        return emitter.handle

    # -- exec ----------------------------------------------------------------------------------

    async def _drive_exec(self, run: _Run) -> None:
        config = self.config
        emitter = run.emitter
        try:
            argv = self._argv(
                exec_argv(
                    config,
                    run.provider,
                    run.opts.full_message(),
                    model=run.model,
                    resume_thread=run.resume_thread,
                )
            )
            env = run_env(config, run.provider, codex_home=run.home, extra=run.opts.env)
            try:
                async with open_child(
                    argv,
                    env=env,
                    cwd=run.cwd,
                    stdin=config.launcher is not None and config.launcher_stdin,
                    sigint_grace=config.sigint_grace,
                    sigterm_grace=config.sigterm_grace,
                    adapter=self.id,
                    session_key=run.opts.session_key,
                    install_hint=install_hint("codex"),
                ) as child:
                    run.child = child
                    run.spawned.set()
                    await run.go.wait()
                    held = await self._read_exec(run, child)
                    with trio.move_on_after(_EXIT_WAIT):
                        await child.wait()
                    code = await child.terminate()  # no-op when it has exited; reaps the group
                    # The terminal group goes out only now: once done is seen, the process is gone.
                    if held:
                        await emitter.publish(held)
                    await self._finish_exec(run, child, -1 if code is None else code)
            except RingleaderError as exc:
                if not run.spawned.is_set():
                    run.spawn_error = exc
                    run.spawned.set()
                    await _fail(emitter, exc)
                    return
                raise
        except RingleaderError as exc:
            await _fail(emitter, exc)
        except Exception as exc:
            await emitter.fail(
                f"codex adapter failed: {type(exc).__name__}: {exc}", code="adapter_error"
            )
        finally:
            run.spawned.set()
            with trio.CancelScope(shield=True):
                if not emitter.done:
                    if run.aborting:
                        await emitter.finish("aborted", run.summary)
                    else:
                        await emitter.fail("codex run ended without a result", code="adapter_error")
                await self._cleanup_home(run)

    async def _read_exec(self, run: _Run, child: ChildProcess) -> list[RuntimeEvent]:
        """Publish the events of every line; return the terminal group (``turn.failed``) unpublished.

        After the terminal line the rest of the output is drained for at most ``_EXIT_WAIT``.
        """
        held: list[RuntimeEvent] = []
        with trio.CancelScope() as scope:
            async for batch in child.batches():
                held += await self._exec_batch(run, batch)
                final = held or run.exec_state.turn_completed
                if final and scope.deadline == math.inf:
                    scope.deadline = trio.current_time() + _EXIT_WAIT
        return held

    async def _exec_batch(self, run: _Run, batch: Sequence[Frame]) -> list[RuntimeEvent]:
        emitter = run.emitter
        make = emitter.factory
        state = run.exec_state
        out: list[RuntimeEvent] = []
        for line in batch:
            if make.finished:
                break
            if isinstance(line, LineTooLongError):
                emitter.ensure_run_id()
                out.append(make.error(str(line), code=line.event_code, fatal=False))
                continue
            if not line:
                continue
            try:
                event = decode_exec_line(line)
            except ProtocolError as exc:
                if run.bad_line is None:
                    run.bad_line = exc
                out += emitter.note_unknown("non-JSON line")
                continue
            if event.get("type") == "thread.started":
                thread_id = event.get("thread_id")
                if isinstance(thread_id, str) and thread_id:
                    emitter.bind_run_id(thread_id)
                    self._origins[thread_id] = str(run.cwd)
            emitter.ensure_run_id()
            events = normalize_exec(event, make, state)
            if events is None:
                out += emitter.note_unknown(exec_frame_label(event))
            elif make.finished:
                if out:
                    await emitter.publish(out)
                return events
            else:
                out += events
        if out:
            await emitter.publish(out)
        return []

    async def _finish_exec(self, run: _Run, child: ChildProcess, code: int) -> None:
        emitter = run.emitter
        state = run.exec_state
        if emitter.done:
            return
        if run.aborting:
            # Our abort wins, even over a turn that completed while the process was exiting.
            await emitter.finish("aborted", state.summary)
        elif state.turn_completed:
            await emitter.finish("success", state.summary)
        elif child.terminated_by_us:
            await emitter.finish("aborted", state.summary)
        elif code == 0:
            message = "codex exited without finishing its turn"
            bad = run.bad_line
            await emitter.fail_with(
                ProtocolError(
                    f"{message} (unreadable line: {bad.line[:80]!r})" if bad else message,
                    line=bad.line if bad else "",
                    adapter=self.id,
                    session_key=run.opts.session_key,
                )
            )
        else:
            await _fail(emitter, self._exit_error(run, child, code))

    def _exit_error(self, run: _Run, child: ChildProcess, code: int) -> RingleaderError:
        tail = child.stderr_tail
        last = next((ln.strip() for ln in reversed(tail.splitlines()) if ln.strip()), "")
        if run.resume_thread and "no rollout found" in tail:
            # A stale resume pointer: permanent, never retried into a loop (executor-spec §14.2 #9).
            return RuntimeReportedError(
                f"codex has no session {run.resume_thread} in its home (no rollout found)",
                code="session_not_found",
                adapter=self.id,
                session_key=run.opts.session_key,
            )
        message = run.exec_state.last_error or f"codex exited with status {code}"
        error_line = next(
            (ln.strip() for ln in tail.splitlines() if ln.strip().startswith("Error")), ""
        )
        detail = error_line or last
        if detail and detail not in message:
            message = f"{message}: {detail[:300]}"
        return RuntimeExitedError(
            redact_secrets(message),
            exit_code=code,
            stderr_tail=tail,
            adapter=self.id,
            session_key=run.opts.session_key,
        )

    async def _cleanup_home(self, run: _Run) -> None:
        if run.owned_home and not self.config.keep_homes:
            await trio.to_thread.run_sync(shutil.rmtree, run.home, True)

    # -- app-server ----------------------------------------------------------------------------

    async def _rpc(self, run: _Run, method: str, params: Mapping[str, Any]) -> Any:
        assert run.rpc is not None
        self.calls.append(RecordedCall(method, {"sessionKey": run.opts.session_key, **params}))
        return await run.rpc.request(method, params)

    async def _drive_app(self, run: _Run) -> None:
        config = self.config
        emitter = run.emitter
        try:
            argv = self._argv(app_server_argv(config, run.provider))
            env = run_env(config, run.provider, codex_home=run.home, extra=run.opts.env)
            try:
                async with open_child(
                    argv,
                    env=env,
                    cwd=run.cwd,
                    stdin=True,
                    sigint_grace=config.sigint_grace,
                    sigterm_grace=config.sigterm_grace,
                    adapter=self.id,
                    session_key=run.opts.session_key,
                    install_hint=install_hint("codex"),
                ) as child:
                    run.child = child
                    run.rpc = JsonRpcClient(child.send_line, adapter=self.id)
                    run.spawned.set()
                    send, receive = trio.open_memory_channel[RpcMessage](math.inf)
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._read_app, run, child, send)
                        nursery.start_soon(self._process_app, run, receive)
                        await self._app_handshake(run)
                        run.ready.set()
                        await run.terminal_seen.wait()
                        # The turn is over (or the app-server ended): let it exit, then reap it.
                        with trio.move_on_after(_EXIT_WAIT):
                            with suppress(
                                trio.BrokenResourceError, trio.ClosedResourceError, OSError
                            ):
                                await child.close_stdin()
                            await child.wait()
                        code = await child.terminate()
                        nursery.cancel_scope.cancel()
                    if run.terminal:
                        await emitter.publish(run.terminal)
                    if not emitter.done:
                        await self._finish_app(run, child, -1 if code is None else code)
            except RingleaderError as exc:
                if not run.spawned.is_set():
                    run.spawn_error = exc
                    run.spawned.set()
                    await _fail(emitter, exc)
                    return
                raise
        except RingleaderError as exc:
            await _fail(emitter, exc)
        except Exception as exc:
            await emitter.fail(
                f"codex adapter failed: {type(exc).__name__}: {exc}", code="adapter_error"
            )
        finally:
            run.spawned.set()
            run.ready.set()
            with trio.CancelScope(shield=True):
                if not emitter.done:
                    if run.aborting:
                        await emitter.finish("aborted", run.summary)
                    else:
                        await emitter.fail("codex run ended without a result", code="adapter_error")
                await self._cleanup_home(run)

    async def _app_handshake(self, run: _Run) -> None:
        """initialize → initialized → thread/start | thread/resume → turn/start. A failure is kept
        in ``handshake_error`` and ends the run (reported once the host listens)."""
        config = self.config
        rpc = run.rpc
        assert rpc is not None
        with trio.move_on_after(config.handshake_timeout) as scope:
            await self._app_handshake_steps(run, rpc)
        if scope.cancelled_caught:
            run.handshake_error = RuntimeStartError(
                f"codex app-server did not start the turn within {config.handshake_timeout} s",
                adapter=self.id,
                session_key=run.opts.session_key,
            )
            run.terminal_seen.set()

    async def _app_handshake_steps(self, run: _Run, rpc: JsonRpcClient) -> None:
        config = self.config
        try:
            await rpc.request(
                "initialize", {"clientInfo": {"name": config.client_name, "version": _VERSION}}
            )
            await rpc.notify("initialized")
            params: dict[str, Any] = {"cwd": str(run.cwd), "approvalPolicy": config.approval_policy}
            params["sandbox"] = (
                "danger-full-access" if config.sandbox == "bypass" else config.sandbox
            )
            if config.sandbox == "bypass":
                params["approvalPolicy"] = "never"
            if run.model:
                params["model"] = run.model
            if run.resume_thread:
                result = await self._rpc(
                    run, "thread/resume", {"threadId": run.resume_thread, **params}
                )
            else:
                result = await self._rpc(run, "thread/start", params)
            thread = as_str(as_dict(as_dict(result).get("thread")).get("id"))
            if not thread:
                raise ProtocolError("thread/start gave no thread id", adapter=self.id)
            run.thread_id = thread
            self._origins[thread] = str(run.cwd)
            turn: dict[str, Any] = {
                "threadId": thread,
                "input": [{"type": "text", "text": run.opts.full_message()}],
            }
            model = run.next_model or run.model
            if model:
                turn["model"] = model
            if run.aborting:
                run.terminal_seen.set()
                return
            result = await self._rpc(run, "turn/start", turn)
            run.turn_id = as_str(as_dict(as_dict(result).get("turn")).get("id")) or None
        except RuntimeReportedError as exc:
            message = str(exc)
            if run.resume_thread and "no rollout found" in message:
                exc = RuntimeReportedError(
                    f"codex has no session {run.resume_thread} in its home (no rollout found)",
                    code="session_not_found",
                    adapter=self.id,
                    session_key=run.opts.session_key,
                )
            run.handshake_error = exc
            run.terminal_seen.set()
        except (trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError) as exc:
            run.handshake_error = exc if isinstance(exc, ProtocolError) else None
            run.terminal_seen.set()

    async def _read_app(
        self, run: _Run, child: ChildProcess, send: trio.MemorySendChannel[RpcMessage]
    ) -> None:
        """Route responses to their callers, answer server requests, pass notifications on."""
        rpc = run.rpc
        assert rpc is not None
        try:
            async for batch in child.batches():
                for line in batch:
                    if isinstance(line, LineTooLongError):
                        send.send_nowait({"method": _LINE_TOO_LONG, "params": {"error": str(line)}})
                        continue
                    if not line:
                        continue
                    try:
                        message = decode_rpc_line(line)
                    except ProtocolError:
                        send.send_nowait({"method": _NON_JSON})
                        continue
                    kind = rpc_kind(message)
                    if kind == "response":
                        rpc.resolve(message)
                    elif kind == "request":
                        await self._answer(run, message)
                    else:
                        send.send_nowait(message)
        finally:
            rpc.close()
            send.close()

    async def _answer(self, run: _Run, message: RpcMessage) -> None:
        rpc = run.rpc
        assert rpc is not None
        method = as_str(message.get("method"))
        params = as_dict(message.get("params"))
        request_id = message.get("id")
        try:
            if method in _APPROVALS:
                decision = self.config.approve(method, params)
                self.calls.append(
                    RecordedCall(
                        "approval",
                        {
                            "sessionKey": run.opts.session_key,
                            "method": method,
                            "decision": decision,
                        },
                    )
                )
                await rpc.respond(request_id, {"decision": decision})
            elif method in _LEGACY_APPROVALS:
                decision = self.config.approve(method, params)
                legacy = {
                    "accept": "approved",
                    "acceptForSession": "approved_for_session",
                    "decline": "denied",
                    "cancel": "abort",
                }[decision]
                await rpc.respond(request_id, {"decision": legacy})
            else:
                await rpc.respond_error(request_id, -32601, f"ringleader does not handle {method}")
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    async def _process_app(self, run: _Run, receive: trio.MemoryReceiveChannel[RpcMessage]) -> None:
        """Normalize notifications once ``start()`` has returned (the run id binds late)."""
        try:
            await self._process_app_notes(run, receive)
        finally:
            run.terminal_seen.set()  # the app-server's output ended: the run is over

    async def _process_app_notes(
        self, run: _Run, receive: trio.MemoryReceiveChannel[RpcMessage]
    ) -> None:
        await run.go.wait()
        emitter = run.emitter
        make = emitter.factory
        state = run.app_state
        assert state is not None
        if run.thread_id:
            emitter.bind_run_id(run.thread_id)
            state.thread_id = run.thread_id
            await emitter.publish([make.status("init", model=run.model)])
        async with receive:
            async for first in receive:
                batch = [first]
                while True:
                    try:
                        batch.append(receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                out: list[RuntimeEvent] = []
                for message in batch:
                    if make.finished:
                        break
                    out += self._app_events(run, state, message)
                    if make.finished:
                        run.terminal = out
                        out = []
                        run.terminal_seen.set()
                if out:
                    await emitter.publish(out)

    def _app_events(self, run: _Run, state: AppState, message: RpcMessage) -> list[RuntimeEvent]:
        emitter = run.emitter
        make = emitter.factory
        method = as_str(message.get("method"))
        params = message.get("params")
        thread = as_str(as_dict(params).get("threadId"))
        if thread and run.thread_id and thread != run.thread_id:
            return []  # another thread's notification (one thread per process: not expected)
        if thread:
            emitter.bind_run_id(thread)
        emitter.ensure_run_id()
        if method == _LINE_TOO_LONG:
            return [
                make.error(as_str(as_dict(params).get("error")), code="line_too_long", fatal=False)
            ]
        if method == _NON_JSON:
            return emitter.note_unknown("non-JSON line")
        events = normalize_app(method, params, make, state)
        if events is None:
            return emitter.note_unknown(method)
        return events

    async def _finish_app(self, run: _Run, child: ChildProcess, code: int) -> None:
        emitter = run.emitter
        if run.aborting:
            await emitter.finish("aborted", run.summary)
        elif run.handshake_error is not None:
            await _fail(emitter, run.handshake_error)
        elif child.terminated_by_us:
            await emitter.finish("aborted", run.summary)
        else:
            state = run.app_state
            error = RuntimeExitedError(
                redact_secrets(
                    (state.last_error if state else None)
                    or f"codex app-server exited with status {code} before the turn completed"
                ),
                exit_code=code,
                stderr_tail=child.stderr_tail,
                adapter=self.id,
                session_key=run.opts.session_key,
            )
            await _fail(emitter, error)

    # -- controls ------------------------------------------------------------------------------

    async def abort(self, run: RunHandle) -> None:
        self.calls.append(
            RecordedCall("abort", {"sessionKey": run.session_key, "runId": run.run_id})
        )
        live = self._live.get(run.session_key)
        if live is None or live.emitter.done:
            await trio.lowlevel.checkpoint()
            return
        live.aborting = True
        child = live.child
        if live.rpc is not None and live.turn_id is not None and live.thread_id is not None:
            # App-server: a clean interrupt first (turn/completed{interrupted}), else terminate.
            with trio.move_on_after(self.config.interrupt_grace):
                try:
                    await self._rpc(
                        live, "turn/interrupt", {"threadId": live.thread_id, "turnId": live.turn_id}
                    )
                    await live.terminal_seen.wait()
                except (RingleaderError, trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
        if child is not None and not live.terminal_seen.is_set():
            await child.terminate()
        with trio.move_on_after(self.config.sigint_grace + self.config.sigterm_grace + 6):
            await live.emitter.finished.wait()
        if not live.emitter.done:
            await live.emitter.finish("aborted", live.summary)

    async def set_model(self, run: RunHandle, model: str) -> None:
        """Codex fixes the model per process (exec) or per turn (app-server): the model applies
        from the next turn of this thread — a run that resumes it through this adapter."""
        self.calls.append(RecordedCall("setModel", {"sessionKey": run.session_key, "model": model}))
        live = self._live.get(run.session_key)
        thread = (live.exec_state.thread_id if live else None) or run.run_id
        if live is not None:
            live.next_model = model
        if thread:
            self._next_models[thread] = model
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        """Write ``value`` to ``key`` under the run's working directory (confined to it)."""
        validate_context_key(key)
        live = self._live.get(run.session_key)
        if live is not None:
            await write_context_file(live.cwd, key, value)
        self.calls.append(
            RecordedCall(
                "writeContext", {"sessionKey": run.session_key, "key": key, "value": value}
            )
        )
        await trio.lowlevel.checkpoint()
