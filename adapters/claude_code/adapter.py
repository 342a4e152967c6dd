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
  (``--permission-prompt-tool stdio``) are answered by :attr:`ClaudeCodeConfig.permission_policy`,
  each in its own task; a decision that says *ask* goes to a person through the run's approval
  book (:mod:`orchestrator.core.asking`) and comes back as allow, deny with the person's message,
  or allow with the edited input.
  ``write_context`` steers text into the running turn (the CLI hands it to the model with the
  next tool result), so the mode is ``steerable``; ``set_model`` switches the live process's
  model at its next request. Idle processes close after ``idle_timeout``; all close with the
  adapter.

Every run gets an allow-listed environment, no non-essential traffic, a retry cap, and its own
``CLAUDE_CONFIG_DIR`` (the host's ``home_dir``, else an adapter-made directory under
:attr:`ClaudeCodeConfig.state_root`, deleted when the adapter closes) with ``HOME`` inside it.
Its working directory is ``StartOpts.cwd``; a resumed session runs in the directory it started
in (Claude Code files its transcripts by working directory), whatever the host's own directory.
A working directory that is not trusted (``ringleader trust DIR``) keeps its project settings
out: ``--setting-sources user --strict-mcp-config``, so a cloned repository's
``.claude/settings.json`` hooks and ``.mcp.json`` servers never run (``-p`` skips Claude Code's
own workspace trust dialog).

:meth:`ClaudeCodeAdapter.child_for` exposes a run's child process (tests check that none outlives
its run). Side effects the adapter issues are recorded in :attr:`ClaudeCodeAdapter.calls`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Final, cast

import attrs
import trio

from orchestrator.core.adapter import (
    STEER_KEY,
    Capabilities,
    NativeHomeClaim,
    RunHandle,
    StartOpts,
    TaskHandle,
)
from orchestrator.core.asking import ToolAsker
from orchestrator.core.config import is_trusted
from orchestrator.core.errors import (
    ProtocolError,
    RingleaderError,
    RuntimeStartError,
    redact_secrets,
)
from orchestrator.core.events import EventFactory, RuntimeEvent, now_ms

from .._cli import (
    DEFAULT_EXIT_WAIT,
    CliAdapterBase,
    CliDialect,
    CliRun,
    CliSession,
    OriginCodec,
    make_run_dirs,
    prompt_input,
)
from .._jsonl import Frame
from .._process import ChildProcess
from .dialect import CanUseToolRequest, ControlResponse, as_dict, as_str, decode_line
from .driver import (
    ClaudeCodeConfig,
    ControlClient,
    PermissionDecision,
    claude_args,
    mcp_config_file,
    permission_answer,
    prepare_home,
    run_env,
    turn_end_uuid,
    user_message,
)
from .normalize import ClaudeState, flush_text, frame_label, normalize_line

__all__ = ["ClaudeCodeAdapter", "ClaudeCodeCodec", "ClaudeCodeSession", "ClaudeDialect"]

ALIASES: Final = ("sonnet", "opus", "haiku")

_PLAN_REVIEWED: Final = (
    "Plan mode is read-only and you do not leave it yourself: a person reviews your plan once "
    "this turn ends. End your turn with the plan as your answer."
)

ClaudeCodeSession = CliSession
"""What resumes a Claude Code session: its id and the directory it started in."""
ClaudeCodeCodec = OriginCodec
"""``{"sessionKey", "sessionId", "cwd"}`` JSON: the native session id and its origin directory."""


@attrs.define(eq=False)
class ClaudeDialect(CliDialect):
    """Claude Code's stream-json lines in the shared run loop (state: :class:`ClaudeState`)."""

    state: ClaudeState
    resume: str | None = None
    name = "claude"
    terminal_has_answer = True  # the ``result`` line restates the answer
    missing_session = "No conversation found"

    def decode(self, line: bytes) -> Any:
        return decode_line(line)

    def normalize(self, frame: Any, make: EventFactory) -> list[RuntimeEvent] | None:
        return normalize_line(frame, make, self.state)

    def flush(self, make: EventFactory) -> list[RuntimeEvent]:
        return flush_text(make, self.state)

    def runtime_id(self, frame: Any) -> str | None:
        if type(frame) is dict:
            line = cast(dict[str, Any], frame)
            if line.get("subtype") == "init":
                return as_str(line.get("session_id")) or None
        return None

    def label(self, frame: Any) -> str:
        return frame_label(frame)

    @property
    def summary(self) -> str:
        return self.state.summary


@attrs.define(eq=False)
class _Run:
    cli: CliRun
    """The shared loop's state (one-shot: it drives the process; long-lived: the turn's lines)."""
    opts: StartOpts
    cwd: Path
    model: str | None
    home: Path
    resume: str | None
    state: ClaudeState
    asker: ToolAsker
    live: _Live | None = None

    @property
    def session_id(self) -> str | None:
        """The Claude Code session this run continues or started."""
        return self.state.session_id


@attrs.define(eq=False)
class _Live:
    """One long-lived Claude Code process (a session) and the run it is serving."""

    key: str
    cwd: Path
    model: str | None
    home: Path
    resume: str | None
    env: Mapping[str, str]
    fork_at: str | None = None
    plan: bool = False
    """Started in plan mode (a turn out of plan mode needs a process started without it)."""
    fork: bool = False
    """Started with ``--fork-session`` (the resumed session goes on as a new one)."""
    mcp_config: str | None = None
    """The ``--mcp-config`` file of the run's own MCP servers."""
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


class ClaudeCodeAdapter(CliAdapterBase[ClaudeCodeConfig, "_Run"]):
    """Claude Code behind the trait (see the module docstring).
    Use as ``async with ClaudeCodeAdapter(…)``."""

    id = "claude-code"

    def __init__(
        self, config: ClaudeCodeConfig | None = None, *, clock: Callable[[], int] = now_ms
    ) -> None:
        """``config``: mode, binary, model, permissions, … (:class:`ClaudeCodeConfig`)."""
        super().__init__(config or ClaudeCodeConfig(), clock=clock)
        self._lives: dict[str, _Live] = {}
        self._homes: dict[str, Path] = {}
        """Adapter-made homes by session id (a resume without ``home_dir`` reuses its home)."""
        self._owned: set[Path] = set()

    def resume_point(
        self, session_id: str, turn: int, *, home_dir: str | None, prompt_index: int = 0
    ) -> str | None:
        """The transcript entry ending turn ``turn`` of a run of ``session_id`` (see
        :class:`~orchestrator.core.adapter.TurnResumable`; :func:`turn_end_uuid`)."""
        roots = [Path(home_dir)] if home_dir else []
        if session_id in self._homes:
            roots.append(self._homes[session_id])
        for root in roots:
            for transcript in sorted(root.glob(f"projects/*/{session_id}.jsonl")):
                found = turn_end_uuid(transcript, turn, prompt_index)
                if found is not None:
                    return found
        return None

    def interactive_command(
        self, session_id: str, *, cwd: str, home_dir: str | None
    ) -> tuple[list[str], dict[str, str]]:
        """``claude --resume ID`` in the run's home (``ringleader open``; see
        :class:`~orchestrator.core.adapter.InteractiveRuntime`)."""
        config = self.config
        home, _ = prepare_home(home_dir, config.state_root, f"open-{session_id}")
        args = ["--resume", session_id]
        if config.model:
            args += ["--model", config.model]
        if config.permission_mode:
            args += ["--permission-mode", config.permission_mode]
        args += list(config.extra_args)
        return self.argv(args), run_env(config, home=home, extra={})

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
            reports_cost_usd=True,
            native_home=NativeHomeClaim(scope="per-identity", persist=True),
            native_scheduler=False,
            native_channels="none",
            native_skills="none",
            native_memory="none",
            prompt_images=True,
            plan_mode=True,
            session_fork=True,
            run_mcp_servers=True,
            run_mcp_http=True,
        )

    # -- runs ----------------------------------------------------------------------------------

    def child_for(self, run: RunHandle) -> ChildProcess | None:
        """The run's child process (``None`` before it is spawned or for an unknown run)."""
        live = self._live.get(run.session_key)
        if live is None:
            return None
        if live.live is not None:
            return live.live.child
        return live.cli.child

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        config = self.config
        resume, model = self.begin_start(opts, config.model)
        home_dir = opts.home_dir
        if not home_dir and resume and resume in self._homes:
            home_dir = str(self._homes[resume])
        home, owned, cwd = await make_run_dirs(
            prepare_home, home_dir, config.state_root, self.origin(resume) or opts.cwd
        )
        if owned:
            self._owned.add(home)
        state = ClaudeState(model=model)
        cli = CliRun(self.new_run(opts.session_key), ClaudeDialect(state, resume))
        asker = self.asker(cli.emitter, opts, str(cwd))
        run = _Run(cli, opts, cwd, model, home, resume, state, asker)

        def seen(session_id: str) -> None:  # a session files its transcripts by directory
            self.remember_origin(session_id, str(cwd))
            if home in self._owned:
                self._homes[session_id] = home

        cli.on_runtime_id = seen
        self._live[opts.session_key] = run
        self.record(
            "start", sessionKey=opts.session_key, model=model, resume=resume, mode=config.mode
        )
        if config.mode == "long-lived":
            await self._start_turn(run)
            cli.go.set()  # nothing is normalized before start() has returned: the id binds late
        else:
            await cli.launch(self.nursery, self._one_shot_spec(run), adapter=self.id)
        return cli.handle

    def _one_shot_spec(self, run: _Run) -> Any:
        config = self.config
        prompt = run.opts.full_message()
        images = run.opts.images
        # a long prompt goes on stdin (argv caps one at 128 KiB); one with images as stream-json
        stdin = user_message(prompt, images) if images else prompt_input(prompt)
        args = claude_args(
            config,
            prompt=prompt if stdin is None else None,
            model=run.model,
            resume=run.resume,
            max_turns=run.opts.max_turns,
            blocklist=run.opts.child_tool_blocklist,
            fork_at=run.opts.resume_at,
            plan=run.opts.plan,
            fork=run.opts.fork,
            mcp_config=mcp_config_file(run.home, run.opts.mcp_servers),
            stream_input=bool(images),
            project_settings=is_trusted(run.cwd),
        )
        return self.spec(
            args,
            run_env(config, home=run.home, extra=run.opts.env),
            cwd=run.cwd,
            stdin=config.launcher is not None and config.launcher_stdin,
            input=stdin,
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
            and run.opts.resume_at is None  # a fork needs a process of its own
            and not run.opts.fork
            and not run.opts.mcp_servers  # the run's own servers: a process started with them
            and live.plan == run.opts.plan
        )
        if live is not None and not reusable:
            await self._close_live(live)
            live = None
        if live is None:
            live = _Live(
                key,
                run.cwd,
                run.model,
                run.home,
                run.resume,
                run.opts.env,
                fork_at=run.opts.resume_at if run.resume else None,
                plan=run.opts.plan,
                fork=run.opts.fork and run.resume is not None,
                mcp_config=mcp_config_file(run.home, run.opts.mcp_servers),
            )
            self._lives[key] = live
            self.spawn(self._drive_live, live)
            await live.ready.wait()
            if live.error is not None:
                self._lives.pop(key, None)
                await run.cli.emitter.fail_with(live.error)
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
            await child.send_line(user_message(run.opts.full_message(), run.opts.images))

    async def _drive_live(self, live: _Live) -> None:
        config = self.config
        args = claude_args(
            config,
            prompt=None,
            model=live.model,
            resume=live.resume,
            fork_at=live.fork_at,
            plan=live.plan,
            fork=live.fork,
            mcp_config=live.mcp_config,
            project_settings=is_trusted(live.cwd),
        )
        env = run_env(config, home=live.home, extra=live.env)
        spec = self.spec(args, env, cwd=live.cwd, stdin=True)
        try:
            async with spec.open(adapter=self.id, session_key=live.key) as child:
                live.child = child
                live.control = ControlClient(child.send_line, adapter=self.id)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._read_live, live, child)
                    await self._handshake(live)
                    live.ready.set()
                    if live.error is None:
                        await self._serve_live(live)
                    live.closing = True
                    with trio.move_on_after(DEFAULT_EXIT_WAIT):
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
                if run is not None and not run.cli.emitter.done:
                    await self._live_ended(live, run)

    async def _handshake(self, live: _Live) -> None:
        control = live.control
        assert control is not None
        with trio.move_on_after(self.config.handshake_timeout) as scope:
            try:
                await control.request("initialize")
                self.record("initialize", sessionKey=live.key)
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
                await run.cli.go.wait()
                terminal = await run.cli.normalize(lines)
                live.session_id = run.state.session_id or live.session_id
                if terminal:
                    live.run = None
                    live.cost_usd = run.state.base_cost_usd
                    live.wake.set()
                    await run.cli.emitter.publish(terminal)
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
        if request.get("subtype") == "can_use_tool":
            # answered in its own task: a person may take long, and the reader must go on
            # (an interrupt's answer comes through it)
            self.spawn(self._can_use_tool, live, live.run, request_id, request)
            return
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await control.respond_error(
                request_id, f"ringleader does not handle {request.get('subtype')}"
            )

    async def _can_use_tool(
        self, live: _Live, run: _Run | None, request_id: str, request: dict[str, Any]
    ) -> None:
        """Answer one ``can_use_tool`` prompt: by the policy, or by a person when it says ask."""
        control = live.control
        assert control is not None
        try:
            ask = CanUseToolRequest.model_validate(request)
            decision = self.config.permission_policy(ask.tool_name, ask.input)
            refused = not decision.allow and not decision.ask  # the policy itself said no
            if live.plan:  # plan mode is read-only; the host has a person review the plan
                decision = PermissionDecision(allow=False, message=_PLAN_REVIEWED)
            elif decision.ask:
                if run is None:
                    decision = PermissionDecision(allow=False, message="no turn is running")
                else:
                    made = await run.asker.ask(
                        ask.tool_name,
                        ask.input,
                        ask.tool_use_id or request_id,
                        reason=ask.decision_reason or ask.description,
                    )
                    decision = PermissionDecision(
                        allow=made.approved,
                        message=made.rejection_text(),
                        updated_input=made.input,
                    )
            if refused and not live.plan and run is not None:  # a person's "no" says itself
                run.state.declined.add(ask.tool_use_id or request_id)
            self.record("permission", sessionKey=live.key, tool=ask.tool_name, allow=decision.allow)
            await control.respond(request_id, permission_answer(decision, ask.input))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except Exception as exc:  # a policy that raised: deny, and say why
            if run is not None:
                run.state.declined.add(as_str(request.get("tool_use_id")) or request_id)
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
        cli = run.cli
        emitter = cli.emitter
        child = live.child
        if cli.aborting:
            await emitter.finish("aborted", run.state.summary)
        elif live.error is not None:
            await emitter.fail_with(live.error)
        elif child is None:
            await emitter.fail("claude-code session ended before the turn", code="adapter_error")
        else:
            code = -1 if child.returncode is None else child.returncode
            await emitter.fail_with(cli.dialect.exit_error(child, code, cli))

    async def _close_live(self, live: _Live) -> None:
        live.closing = True
        live.wake.set()
        child = live.child
        if child is not None:
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await child.close_stdin()
        with trio.move_on_after(
            DEFAULT_EXIT_WAIT + self.config.sigint_grace + self.config.sigterm_grace + 6
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

    async def interrupt(self, run: RunHandle, live: _Run) -> None:
        """Long-lived: interrupt the turn (the process and its cache survive), else terminate."""
        live.state.aborting = True
        session = live.live
        if session is None:
            await trio.lowlevel.checkpoint()
            return
        emitter = live.cli.emitter
        with trio.move_on_after(self.config.interrupt_grace):
            control = session.control
            try:
                if control is not None and not session.gone.is_set():
                    await control.request("interrupt")
                    self.record("interrupt", sessionKey=run.session_key)
                await emitter.finished.wait()
            except (RingleaderError, trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        if not emitter.done and session.child is not None:
            await session.child.terminate()

    async def set_model(self, run: RunHandle, model: str) -> None:
        """Long-lived: the session's process switches at its next model request (also mid-run).
        One-shot: the model is fixed per process, so it applies to the next run that resumes
        this session through this adapter."""
        self.record("setModel", sessionKey=run.session_key, model=model)
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
        live = self._live.get(run.session_key)
        steered = False
        await self.write_file(
            live.cwd if live is not None and key != STEER_KEY else None, key, value
        )
        session = live.live if live is not None else None
        if (
            live is not None
            and session is not None
            and session.child is not None
            and not live.cli.emitter.done
            and not session.gone.is_set()
        ):
            text = value if key == STEER_KEY else f"[context update: {key}]\n{value}"
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await session.child.send_line(user_message(text))
                steered = True
        self.record(
            "writeContext", sessionKey=run.session_key, key=key, value=value, steered=steered
        )
        await trio.lowlevel.checkpoint()
