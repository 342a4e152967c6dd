"""The Claude Code adapter: ``RuntimeAdapter`` (id ``claude-code``) over the real Claude Code CLI.

Two modes (:attr:`ClaudeCodeConfig.mode`):

* ``one-shot`` — one ``claude -p <prompt> --output-format stream-json --verbose
  --include-partial-messages`` process per run (``--resume <session>`` to resume), stdin on the
  null device. Abort terminates the process group starting with SIGINT, on which the CLI writes
  its ``result`` (``terminal_reason: aborted_streaming``) and exits 0; the run ends in
  ``done{aborted}``. A run's terminal group is published once the process is gone, so when a
  host sees ``done`` no child of the run is left.
* ``long-lived`` — one ``claude -p --input-format stream-json`` process per session key, kept
  between runs: each run is one turn (a user message in, events until its ``result``). A run
  continues the live process only when it asks to resume that process's session
  (``StartOpts.resume_session_id``); otherwise a new process (a new session) replaces it. Abort
  sends the ``interrupt`` control request, so the process and its prompt cache survive (it is
  terminated only if the interrupt is not honoured within ``interrupt_grace``). Permission prompts
  (``--permission-prompt-tool stdio``) are answered by :attr:`ClaudeCodeConfig.permission_policy`.
  ``write_context`` steers text into the running turn (the CLI hands it to the model with the
  next tool result), so the mode is ``steerable``; ``set_model`` switches the live process's
  model at its next request. Idle processes close after ``idle_timeout``; all close with the
  adapter.

Every run gets an allow-listed environment, no non-essential traffic, a retry cap, and its own
``CLAUDE_CONFIG_DIR`` (the host's ``home_dir``, else an adapter-made directory under
:attr:`ClaudeCodeConfig.state_root`, deleted when the adapter closes) with ``HOME`` inside it.
Its working directory is ``StartOpts.cwd``; a resumed session runs in the directory it started
in (Claude Code files its transcripts by working directory), whatever the host's own directory.

:meth:`ClaudeCodeAdapter.child_for` exposes a run's child process (tests check that none outlives
its run). Side effects the adapter issues are recorded in :attr:`ClaudeCodeAdapter.calls`.
"""

from __future__ import annotations

import collections
import json
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from orchestrator.actor import STEER_KEY
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
from .dialect import (
    CanUseToolRequest,
    ControlResponse,
    as_dict,
    as_str,
    decode_line,
)
from .driver import (
    ClaudeCodeConfig,
    ControlClient,
    claude_args,
    permission_answer,
    prepare_home,
    run_env,
    user_message,
)
from .normalize import ClaudeState, flush_text, frame_label, normalize_line

__all__ = ["ClaudeCodeAdapter", "ClaudeCodeCodec", "ClaudeCodeSession"]

ALIASES: Final = ("sonnet", "opus", "haiku")
_MAX_CALLS: Final = 1000
_EXIT_WAIT: Final = 5.0
"""One-shot: how long Claude Code may take to exit after its result before it is terminated."""
_NO_SESSION: Final = "No conversation found"


@attrs.frozen
class ClaudeCodeSession:
    """What resumes a Claude Code session: its id and the directory it started in."""

    session_key: str
    session_id: str | None
    cwd: str | None


class ClaudeCodeCodec:
    """``{"sessionKey", "sessionId", "cwd"}`` JSON: the native session id and its origin directory.

    ``restore`` remembers the origin, so a run resumed with ``resume_session_id`` runs there.
    """

    def __init__(self, adapter: ClaudeCodeAdapter) -> None:
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
    def parse(blob: str) -> ClaudeCodeSession:
        raw: Any = json.loads(blob)
        data = as_dict(raw)
        session_id = as_str(data.get("sessionId")) or None
        cwd = as_str(data.get("cwd")) or None
        return ClaudeCodeSession(
            session_key=as_str(data.get("sessionKey")), session_id=session_id, cwd=cwd
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
    resume: str | None
    state: ClaudeState
    child: ChildProcess | None = None
    live: _Live | None = None
    aborting: bool = False
    spawned: trio.Event = attrs.field(factory=trio.Event)
    go: trio.Event = attrs.field(factory=trio.Event)
    spawn_error: BaseException | None = None
    bad_line: ProtocolError | None = None
    terminal: list[RuntimeEvent] = attrs.field(factory=list[RuntimeEvent])
    """One-shot: the terminal group, held until the process is gone."""


@attrs.define(eq=False)
class _Live:
    """One long-lived Claude Code process (a session) and the run it is serving."""

    key: str
    cwd: Path
    model: str | None
    home: Path
    resume: str | None
    env: Mapping[str, str]
    child: ChildProcess | None = None
    control: ControlClient | None = None
    cost_usd: float = 0.0
    """The process's cumulative USD (the CLI's ``total_cost_usd`` counts every turn)."""
    session_id: str | None = None
    run: _Run | None = None
    ready: trio.Event = attrs.field(factory=trio.Event)
    error: RingleaderError | None = None
    gone: trio.Event = attrs.field(factory=trio.Event)
    wake: trio.Event = attrs.field(factory=trio.Event)
    closing: bool = False


class ClaudeCodeAdapter(AdapterBase):
    """Claude Code behind the trait (see the module docstring).
    Use as ``async with ClaudeCodeAdapter(…)``."""

    id = "claude-code"

    def __init__(
        self, config: ClaudeCodeConfig | None = None, *, clock: Callable[[], int] = now_ms
    ) -> None:
        super().__init__(clock=clock)
        self.config = config or ClaudeCodeConfig()
        self.calls: collections.deque[RecordedCall] = collections.deque(maxlen=_MAX_CALLS)
        """Side effects issued (``abort``, ``setModel``, ``writeContext``, control requests)."""
        self._live: dict[str, _Run] = {}
        self._lives: dict[str, _Live] = {}
        self._origins: dict[str, str] = {}
        self._homes: dict[str, Path] = {}
        """Adapter-made homes by session id (a resume without ``home_dir`` reuses its home)."""
        self._owned: set[Path] = set()
        self._next_models: dict[str, str] = {}
        self._codec = ClaudeCodeCodec(self)

    # -- trait: static parts -------------------------------------------------------------------

    @property
    def session_codec(self) -> ClaudeCodeCodec:
        return self._codec

    def capabilities(self) -> Capabilities:
        config = self.config
        first: list[str] = [config.model] if config.model else []
        models = tuple(dict.fromkeys([*first, *ALIASES]))
        return Capabilities(
            streaming=config.partial_messages,
            mcp=True,
            worktrees=False,
            resume=True,
            tool_approval=True,
            models=models,
            steerable=config.mode == "long-lived",
            context_window_tokens=config.context_window_tokens,
            runtime_class="wrapped-oneshot",
            native_home=NativeHomeClaim(scope="per-identity", persist=True),
            native_skills="none",
            native_memory="none",
            native_channels="none",
            native_scheduler=False,
        )

    async def probe_health(self) -> HealthResult:
        if self.config.launcher is not None:
            await trio.lowlevel.checkpoint()
            return HealthResult(ok=True, message="custom launcher")
        async with open_child(
            [self._binary(), "--version"],
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
            return HealthResult(ok=False, message=f"claude --version exited with status {code}")
        return HealthResult(ok=True, message=version)

    def _binary(self) -> str:
        if self.config.binary:
            return self.config.binary
        return str(runtime_binary("claude-code"))

    def _argv(self, args: list[str]) -> list[str]:
        launcher = self.config.launcher
        if launcher is not None:
            return list(launcher(args))
        return [self._binary(), *args]

    # -- runs ----------------------------------------------------------------------------------

    def child_for(self, run: RunHandle) -> ChildProcess | None:
        """The run's child process (``None`` before it is spawned or for an unknown run)."""
        live = self._live.get(run.session_key)
        if live is None:
            return None
        if live.live is not None:
            return live.live.child
        return live.child

    def session_of(self, run: RunHandle) -> ClaudeCodeSession:
        live = self._live.get(run.session_key)
        session_id = run.run_id
        cwd = self._origins.get(session_id) if session_id else None
        if live is not None:
            session_id = live.state.session_id or session_id
            cwd = str(live.cwd)
        return ClaudeCodeSession(session_key=run.session_key, session_id=session_id, cwd=cwd)

    def remember_origin(self, session_id: str, cwd: str) -> None:
        """Record where a session started (its resumes run there)."""
        self._origins[session_id] = cwd

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        config = self.config
        if config.launcher is None:
            self._binary()  # raises RuntimeNotFoundError with the install command
        self.nursery  # noqa: B018 - raises if the adapter was not entered
        resume = opts.resume_session_id or None
        model = opts.model or (self._next_models.pop(resume, None) if resume else None)
        model = model or config.model
        home_dir = opts.home_dir
        if not home_dir and resume and resume in self._homes:
            home_dir = str(self._homes[resume])
        home, owned = await trio.to_thread.run_sync(
            prepare_home, home_dir, config.state_root, f"run-{uuid.uuid4().hex[:16]}"
        )
        if owned:
            self._owned.add(home)
        origin = self._origins.get(resume) if resume else None
        cwd = Path(origin or opts.cwd or home / "workspace")
        await trio.Path(cwd).mkdir(parents=True, exist_ok=True)
        emitter = self.new_run(opts.session_key)
        run = _Run(
            emitter=emitter,
            opts=opts,
            cwd=cwd,
            model=model,
            home=home,
            resume=resume,
            state=ClaudeState(model=model),
        )
        self._live[opts.session_key] = run
        self.calls.append(
            RecordedCall(
                "start",
                {
                    "sessionKey": opts.session_key,
                    "model": model,
                    "resume": resume,
                    "mode": config.mode,
                },
            )
        )
        if config.mode == "long-lived":
            await self._start_turn(run)
        else:
            self.spawn(self._drive_one_shot, run)
            await run.spawned.wait()
            if run.spawn_error is not None:
                raise run.spawn_error
        # Nothing is normalized before start() has returned: the run id binds late.
        run.go.set()
        return emitter.handle

    # -- reading -------------------------------------------------------------------------------

    async def _batch(self, run: _Run, batch: Sequence[Frame]) -> list[RuntimeEvent]:
        """Normalize and publish one batch of lines; return the terminal group unpublished."""
        emitter = run.emitter
        make = emitter.factory
        state = run.state
        out: list[RuntimeEvent] = []
        for line in batch:
            if make.finished:
                break
            if isinstance(line, LineTooLongError):
                emitter.ensure_run_id()
                out += flush_text(make, state)
                out.append(make.error(str(line), code=line.event_code, fatal=False))
                continue
            if not line:
                continue
            try:
                frame = decode_line(line)
            except ProtocolError as exc:
                if run.bad_line is None:
                    run.bad_line = exc
                emitter.ensure_run_id()
                out += flush_text(make, state)
                out += emitter.note_unknown("non-JSON line")
                continue
            if not make.run_id:
                if type(frame) is dict and frame.get("subtype") == "init":
                    session_id = as_str(frame.get("session_id"))
                    if session_id:
                        emitter.bind_run_id(session_id)
                emitter.ensure_run_id()
            if type(frame) is dict and frame.get("subtype") == "init":
                session_id = as_str(frame.get("session_id"))
                if session_id:
                    self._origins[session_id] = str(run.cwd)
                    if run.home in self._owned:
                        self._homes[session_id] = run.home
            events = normalize_line(frame, make, state)
            if events is None:
                out += flush_text(make, state)
                out += emitter.note_unknown(frame_label(frame))
            elif make.finished:
                if out:
                    await emitter.publish(out)
                return events
            elif events:
                out += events
        out += flush_text(make, state)
        if out:
            await emitter.publish(out)
        return []

    # -- one-shot ------------------------------------------------------------------------------

    async def _drive_one_shot(self, run: _Run) -> None:
        config = self.config
        emitter = run.emitter
        try:
            args = claude_args(
                config,
                prompt=run.opts.full_message(),
                model=run.model,
                resume=run.resume,
                max_turns=run.opts.max_turns,
                blocklist=run.opts.child_tool_blocklist,
            )
            env = run_env(config, home=run.home, extra=run.opts.env)
            try:
                async with open_child(
                    self._argv(args),
                    env=env,
                    cwd=run.cwd,
                    stdin=config.launcher is not None and config.launcher_stdin,
                    sigint_grace=config.sigint_grace,
                    sigterm_grace=config.sigterm_grace,
                    adapter=self.id,
                    session_key=run.opts.session_key,
                    install_hint=install_hint("claude-code"),
                ) as child:
                    run.child = child
                    run.spawned.set()
                    await run.go.wait()
                    held = await self._read_one_shot(run, child)
                    with trio.move_on_after(_EXIT_WAIT):
                        await child.wait()
                    code = await child.terminate()  # no-op when it has exited; reaps the group
                    # The terminal group goes out only now: once done is seen, the process is gone.
                    if held:
                        await emitter.publish(held)
                    await self._finish_one_shot(run, child, -1 if code is None else code)
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
                f"claude-code adapter failed: {type(exc).__name__}: {exc}", code="adapter_error"
            )
        finally:
            run.spawned.set()
            with trio.CancelScope(shield=True):
                if not emitter.done:
                    if run.aborting:
                        await emitter.finish("aborted", run.state.summary)
                    else:
                        await emitter.fail(
                            "claude-code run ended without a result", code="adapter_error"
                        )

    async def _read_one_shot(self, run: _Run, child: ChildProcess) -> list[RuntimeEvent]:
        """Publish the events of every line; return the terminal group unpublished. After the
        ``result`` line the rest of the output is drained for at most ``_EXIT_WAIT``."""
        held: list[RuntimeEvent] = []
        with trio.CancelScope() as scope:
            async for batch in child.batches():
                held += await self._batch(run, batch)
                if held and scope.deadline == float("inf"):
                    scope.deadline = trio.current_time() + _EXIT_WAIT
        return held

    async def _finish_one_shot(self, run: _Run, child: ChildProcess, code: int) -> None:
        emitter = run.emitter
        if emitter.done:
            return
        if run.aborting or child.terminated_by_us:
            await emitter.finish("aborted", run.state.summary)
        elif code == 0:
            message = "claude exited without a result"
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
        if run.resume and _NO_SESSION in tail:
            # A stale resume pointer: permanent, never retried into a loop (executor-spec §14.2 #9).
            return RuntimeReportedError(
                f"claude has no session {run.resume} in {run.home} (no conversation found)",
                code="session_not_found",
                adapter=self.id,
                session_key=run.opts.session_key,
            )
        message = f"claude exited with status {code} before its result"
        last = next((ln.strip() for ln in reversed(tail.splitlines()) if ln.strip()), "")
        if last:
            message = f"{message}: {last[:300]}"
        return RuntimeExitedError(
            redact_secrets(message),
            exit_code=code,
            stderr_tail=tail,
            adapter=self.id,
            session_key=run.opts.session_key,
        )

    # -- long-lived ----------------------------------------------------------------------------

    async def _start_turn(self, run: _Run) -> None:
        """Find or start the session's process and send the run's prompt as a new turn."""
        key = run.opts.session_key
        live = self._lives.get(key)
        reusable = (
            live is not None
            and not live.closing
            and not live.gone.is_set()
            and live.run is None
            and live.error is None
            and run.resume is not None
            and run.resume == live.session_id
            and live.cwd == run.cwd
        )
        if live is not None and not reusable:
            await self._close_live(live)
            live = None
        if live is None:
            live = _Live(
                key=key,
                cwd=run.cwd,
                model=run.model,
                home=run.home,
                resume=run.resume,
                env=run.opts.env,
            )
            self._lives[key] = live
            self.spawn(self._drive_live, live)
            await live.ready.wait()
            if live.error is not None:
                self._lives.pop(key, None)
                await _fail(run.emitter, live.error)
                if live.child is None:
                    raise live.error  # nothing was spawned (e.g. the binary is missing)
                return
        run.live = live
        run.state.base_cost_usd = live.cost_usd
        live.run = run
        live.wake.set()
        if run.model and run.model != live.model and live.control is not None:
            await self._set_live_model(live, run.model)
        child = live.child
        assert child is not None
        # A process that is gone already: its reader sees the end of output and reports it.
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await child.send_line(user_message(run.opts.full_message()))

    async def _drive_live(self, live: _Live) -> None:
        config = self.config
        args = claude_args(config, prompt=None, model=live.model, resume=live.resume)
        try:
            async with open_child(
                self._argv(args),
                env=run_env(config, home=live.home, extra=live.env),
                cwd=live.cwd,
                stdin=True,
                sigint_grace=config.sigint_grace,
                sigterm_grace=config.sigterm_grace,
                adapter=self.id,
                session_key=live.key,
                install_hint=install_hint("claude-code"),
            ) as child:
                live.child = child
                live.control = ControlClient(child.send_line, adapter=self.id)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._read_live, live, child)
                    await self._handshake(live)
                    live.ready.set()
                    if live.error is None:
                        await self._serve_live(live)
                    live.closing = True
                    with trio.move_on_after(_EXIT_WAIT):
                        with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                            await child.close_stdin()
                        await child.wait()
                    await child.terminate()
                    nursery.cancel_scope.cancel()
        except RingleaderError as exc:
            live.error = exc
        except Exception as exc:
            live.error = RuntimeStartError(
                f"claude-code session failed: {type(exc).__name__}: {exc}", adapter=self.id
            )
        finally:
            live.closing = True
            live.ready.set()
            live.gone.set()
            if self._lives.get(live.key) is live:
                del self._lives[live.key]
            with trio.CancelScope(shield=True):
                run = live.run
                if run is not None and not run.emitter.done:
                    await self._live_ended(live, run)

    async def _handshake(self, live: _Live) -> None:
        control = live.control
        assert control is not None
        with trio.move_on_after(self.config.handshake_timeout) as scope:
            try:
                await control.request("initialize")
                self.calls.append(RecordedCall("initialize", {"sessionKey": live.key}))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                child = live.child
                tail = child.stderr_tail if child is not None else ""
                live.error = RuntimeStartError(
                    redact_secrets(f"claude exited during initialize: {tail.strip()[-300:]}"),
                    adapter=self.id,
                    session_key=live.key,
                )
            except RingleaderError as exc:
                live.error = exc
        if scope.cancelled_caught:
            live.error = RuntimeStartError(
                f"claude did not answer initialize within {self.config.handshake_timeout} s",
                adapter=self.id,
                session_key=live.key,
            )

    async def _serve_live(self, live: _Live) -> None:
        """Keep the process until it is closed, it exits, or it stays idle too long."""
        while not live.closing and not live.gone.is_set():
            live.wake = trio.Event()
            if live.run is None:
                with trio.move_on_after(self.config.idle_timeout) as idle:
                    await live.wake.wait()
                if idle.cancelled_caught and live.run is None:
                    return
            else:
                await live.wake.wait()

    async def _read_live(self, live: _Live, child: ChildProcess) -> None:
        control = live.control
        assert control is not None
        try:
            async for batch in child.batches():
                lines: list[Frame] = []
                for line in batch:
                    if isinstance(line, bytes) and line.startswith(b'{"type":"control_'):
                        await self._control_line(live, line)
                    else:
                        lines.append(line)
                run = live.run
                if run is None or not lines:
                    continue
                await run.go.wait()
                terminal = await self._batch(run, lines)
                live.session_id = run.state.session_id or live.session_id
                if terminal:
                    live.run = None
                    live.cost_usd = run.state.base_cost_usd
                    live.wake.set()
                    await run.emitter.publish(terminal)
        finally:
            control.close()
            live.closing = True
            live.wake.set()

    async def _control_line(self, live: _Live, line: bytes) -> None:
        control = live.control
        assert control is not None
        try:
            frame = decode_line(line)
        except ProtocolError:
            return
        if type(frame) is not dict:
            return
        kind = frame.get("type")
        if kind == "control_response":
            control.resolve(ControlResponse.model_validate(as_dict(frame.get("response"))))
            return
        if kind != "control_request":
            return
        request_id = as_str(frame.get("request_id"))
        request = as_dict(frame.get("request"))
        subtype = request.get("subtype")
        try:
            if subtype == "can_use_tool":
                ask = CanUseToolRequest.model_validate(request)
                decision = self.config.permission_policy(ask.tool_name, ask.input)
                self.calls.append(
                    RecordedCall(
                        "permission",
                        {"sessionKey": live.key, "tool": ask.tool_name, "allow": decision.allow},
                    )
                )
                await control.respond(request_id, permission_answer(decision, ask.input))
            else:
                await control.respond_error(request_id, f"ringleader does not handle {subtype}")
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except Exception as exc:  # a policy that raised: deny, and say why
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await control.respond(
                    request_id,
                    {
                        "behavior": "deny",
                        "message": f"permission policy failed: {type(exc).__name__}",
                    },
                )

    async def _live_ended(self, live: _Live, run: _Run) -> None:
        """The process ended while serving ``run`` (no result): aborted, or a failure."""
        emitter = run.emitter
        child = live.child
        if run.aborting:
            await emitter.finish("aborted", run.state.summary)
        elif live.error is not None:
            await _fail(emitter, live.error)
        elif child is None:
            await emitter.fail("claude-code session ended before the turn", code="adapter_error")
        else:
            code = child.returncode
            await _fail(emitter, self._exit_error(run, child, -1 if code is None else code))

    async def _close_live(self, live: _Live) -> None:
        live.closing = True
        live.wake.set()
        child = live.child
        if child is not None:
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await child.close_stdin()
        with trio.move_on_after(
            _EXIT_WAIT + self.config.sigint_grace + self.config.sigterm_grace + 6
        ):
            await live.gone.wait()

    async def _set_live_model(self, live: _Live, model: str) -> None:
        control = live.control
        if control is None:
            return
        with trio.move_on_after(self.config.handshake_timeout):
            try:
                await control.request("set_model", model=model)
                live.model = model
            except (RingleaderError, trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    async def _shutdown(self) -> None:
        await super()._shutdown()
        with trio.CancelScope(shield=True):
            for live in list(self._lives.values()):
                await self._close_live(live)
            if not self.config.keep_homes:
                for home in list(self._owned):
                    await trio.to_thread.run_sync(shutil.rmtree, home, True)
                self._owned.clear()

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
        live.state.aborting = True
        config = self.config
        session = live.live
        if session is not None:
            # Long-lived: interrupt the turn (the process and its cache survive), else terminate.
            with trio.move_on_after(config.interrupt_grace):
                control = session.control
                try:
                    if control is not None and not session.gone.is_set():
                        await control.request("interrupt")
                        self.calls.append(
                            RecordedCall("interrupt", {"sessionKey": run.session_key})
                        )
                    await live.emitter.finished.wait()
                except (RingleaderError, trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
            if not live.emitter.done and session.child is not None:
                await session.child.terminate()
        elif live.child is not None:
            await live.child.terminate()
        with trio.move_on_after(config.sigint_grace + config.sigterm_grace + 6):
            await live.emitter.finished.wait()
        if not live.emitter.done:
            await live.emitter.finish("aborted", live.state.summary)

    async def set_model(self, run: RunHandle, model: str) -> None:
        """Long-lived: the session's process switches at its next model request (also mid-run).
        One-shot: the model is fixed per process, so it applies to the next run that resumes
        this session through this adapter."""
        self.calls.append(RecordedCall("setModel", {"sessionKey": run.session_key, "model": model}))
        live = self._live.get(run.session_key)
        session_id = (live.state.session_id if live else None) or run.run_id
        if session_id:
            self._next_models[session_id] = model
        if live is not None:
            live.model = model
            if live.live is not None and not live.live.gone.is_set():
                await self._set_live_model(live.live, model)
                return
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        """Write ``value`` to ``key`` under the run's working directory (confined to it). In
        long-lived mode, while the run is going, the text is also steered into the turn (the
        steer key ``.ringleader/signal`` is steered only, not written)."""
        validate_context_key(key)
        live = self._live.get(run.session_key)
        steered = False
        if live is not None and key != STEER_KEY:
            await write_context_file(live.cwd, key, value)
        session = live.live if live is not None else None
        if (
            live is not None
            and session is not None
            and session.child is not None
            and not live.emitter.done
            and not session.gone.is_set()
        ):
            text = value if key == STEER_KEY else f"[context update: {key}]\n{value}"
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await session.child.send_line(user_message(text))
                steered = True
        self.calls.append(
            RecordedCall(
                "writeContext",
                {"sessionKey": run.session_key, "key": key, "value": value, "steered": steered},
            )
        )
        await trio.lowlevel.checkpoint()
