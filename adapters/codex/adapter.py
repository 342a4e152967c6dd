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
  ``interrupt_grace``); approval requests answered by :attr:`CodexConfig.approve`, each in its own
  task (``"ask"``: a person decides through the run's approval book,
  :mod:`orchestrator.core.asking`); ``write_context`` steers text into the running turn
  (``turn/steer``), so the mode is ``steerable``. The default mode.

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

import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

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
from orchestrator.core.errors import (
    ProtocolError,
    RingleaderError,
    RuntimeReportedError,
    RuntimeStartError,
)
from orchestrator.core.events import EventFactory, RuntimeEvent, now_ms

from .._cli import (
    CliAdapterBase,
    CliDialect,
    CliRun,
    CliSession,
    OriginCodec,
    RpcDialect,
    make_run_dirs,
    prompt_input,
)
from .._jsonrpc import METHOD_NOT_FOUND, RpcErrorReply
from .._process import ChildProcess
from .._runs import RunEmitter
from .dialect import as_dict, as_str, decode_exec_line, decode_rpc_line
from .driver import (
    ApprovalDecision,
    CodexConfig,
    CodexProvider,
    JsonRpcClient,
    app_server_argv,
    common_overrides,
    exec_argv,
    mcp_overrides,
    prepare_home,
    provider_for,
    run_env,
    thread_total_usage,
    with_sandbox_helper,
)
from .normalize import AppState, ExecState, exec_frame_label, normalize_app, normalize_exec

__all__ = ["CodexAdapter", "CodexCodec", "CodexSession"]

CONTEXT_WINDOWS: Final[Mapping[str, int]] = {"gpt-5.5": 258_400}
"""Context windows Codex reported (app-server ``modelContextWindow``) for models it knows."""

_VERSION: Final = "0.1.0"
_APPROVALS: Final = frozenset(
    {"item/commandExecution/requestApproval", "item/fileChange/requestApproval"}
)
_LEGACY_APPROVALS: Final = {
    "accept": "approved",
    "acceptForSession": "approved_for_session",
    "decline": "denied",
    "cancel": "abort",
}
"""The decisions of ``applyPatchApproval`` / ``execCommandApproval`` (the older requests)."""
_APPROVAL_TOOLS: Final = {
    "item/commandExecution/requestApproval": "command",
    "item/fileChange/requestApproval": "file_change",
    "execCommandApproval": "command",
    "applyPatchApproval": "file_change",
}
"""The tool an approval request is about, as the book shows it."""
_SANDBOX_POLICY: Final = {
    "read-only": "readOnly",
    "workspace-write": "workspaceWrite",
    "danger-full-access": "dangerFullAccess",
}
"""``thread/start``'s sandbox mode → ``turn/start``'s ``sandboxPolicy`` type."""
_APPROVAL_NOISE: Final = frozenset(
    {"threadId", "turnId", "itemId", "approvalId", "startedAtMs", "environmentId"}
)
"""Request fields that are not the call a person judges: left out of the book's input (the key
a call is known by: a session resumed after its orchestrator died asks again for the same call
with new ids, and the decision made meanwhile must answer it)."""


@attrs.define(eq=False)
class ExecDialect(CliDialect):
    """``codex exec --json`` lines in the shared run loop (state: :class:`ExecState`)."""

    name = "codex"
    missing_session = "no rollout found"
    state: ExecState
    resume: str | None = None

    def normalize(self, frame: Any, make: EventFactory) -> list[RuntimeEvent] | None:
        return normalize_exec(frame, make, self.state)

    def decode(self, line: bytes) -> Any:
        return decode_exec_line(line)

    def runtime_id(self, frame: Any) -> str | None:
        if frame.get("type") != "thread.started":
            return None
        thread_id = frame.get("thread_id")
        return thread_id if isinstance(thread_id, str) else None

    def label(self, frame: Any) -> str:
        return exec_frame_label(frame)

    @property
    def completed(self) -> bool:
        return self.state.turn_completed

    @property
    def last_error(self) -> str | None:
        return self.state.last_error

    @property
    def summary(self) -> str:
        return self.state.summary


class AppDialect(RpcDialect):
    """``codex app-server`` JSON-RPC in the shared run loop: responses and server requests are
    routed as they arrive; notifications of the run's thread are normalized."""

    name = "codex app-server"

    def __init__(self, adapter: CodexAdapter, run: _Run, state: AppState) -> None:
        self.adapter = adapter
        self.run = run
        self.state = state

    @property
    def summary(self) -> str:
        return "".join(self.state.text)

    @property
    def last_error(self) -> str | None:
        return self.state.last_error

    def decode(self, line: bytes) -> Any:
        return decode_rpc_line(line)

    async def answer(self, method: str, params: dict[str, Any]) -> Any:
        return await self.adapter.answer(self.run, method, params)

    def runtime_id(self, frame: Any) -> str | None:
        return as_str(as_dict(frame.get("params")).get("threadId")) or None

    def opening(self, emitter: RunEmitter) -> list[RuntimeEvent]:
        thread = self.run.thread_id
        if not thread:
            return []
        emitter.bind_run_id(thread)
        self.state.thread_id = thread
        return [emitter.factory.status("init", model=self.run.model)]

    def normalize(self, frame: Any, make: EventFactory) -> list[RuntimeEvent] | None:
        params = frame.get("params")
        thread = as_str(as_dict(params).get("threadId"))
        if thread and self.run.thread_id and thread != self.run.thread_id:
            return []  # another thread's notification (one thread per process: not expected)
        return normalize_app(as_str(frame.get("method")), params, make, self.state)

    def label(self, frame: Any) -> str:
        return as_str(frame.get("method"), "?")


@attrs.define(eq=False)
class _Run:
    opts: StartOpts
    cwd: Path
    model: str | None
    home: Path
    owned_home: bool
    provider: CodexProvider | None
    resume_thread: str | None
    exec_state: ExecState
    cli: CliRun = attrs.field(init=False)
    asker: ToolAsker | None = None
    next_model: str | None = None
    # app-server
    thread_id: str | None = None
    turn_id: str | None = None

    @property
    def session_id(self) -> str | None:
        """The thread this run continues or started (what a resume continues)."""
        return self.thread_id or self.exec_state.thread_id


class CodexAdapter(CliAdapterBase[CodexConfig, "_Run"]):
    """Codex behind the trait (see the module docstring). Use as ``async with CodexAdapter(…)``."""

    id = "codex"

    def __init__(
        self, config: CodexConfig | None = None, *, clock: Callable[[], int] = now_ms
    ) -> None:
        super().__init__(config or CodexConfig(), clock=clock)

    def interactive_command(
        self, session_id: str, *, cwd: str, home_dir: str | None
    ) -> tuple[list[str], dict[str, str]]:
        """``codex resume ID`` with the runs' ``CODEX_HOME`` and provider overrides
        (``ringleader open``; see :class:`~orchestrator.core.adapter.InteractiveRuntime`)."""
        config = self.config
        home, _ = prepare_home(home_dir, config.state_root, f"open-{session_id}")
        provider = provider_for(config, {})
        args = ["resume", *common_overrides(config, provider)]
        if config.model:
            args += ["-m", config.model]
        args += ["--", session_id]
        return self.argv(args), run_env(config, provider, codex_home=home, extra={})

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
            steerable=app,
            plan_mode=True,
            context_window_tokens=CONTEXT_WINDOWS.get(model) if model else None,
            runtime_class="wrapped-oneshot",
            native_home=NativeHomeClaim(scope="per-identity", persist=True),
            prompt_images=app,
            run_mcp_servers=True,
            run_mcp_http=True,
        )

    # -- runs ----------------------------------------------------------------------------------

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        config = self.config
        resume, model = self.begin_start(opts, config.model)
        home, owned, cwd = await make_run_dirs(
            prepare_home, opts.home_dir, config.state_root, opts.cwd or self.origin(resume)
        )
        state = ExecState(model=model, prices=config.prices)
        if resume:
            state.base_usage = await trio.to_thread.run_sync(thread_total_usage, home, resume)
        provider = provider_for(config, opts.env)
        run = _Run(opts, cwd, model, home, owned, provider, resume, state)
        emitter = self.new_run(opts.session_key)
        if config.mode == "app-server":
            app = AppState(model=model, prices=config.prices, base_usage=state.base_usage)
            dialect: CliDialect = AppDialect(self, run, app)
        else:
            dialect = ExecDialect(state, resume)

        async def cleanup() -> None:
            if owned and not config.keep_homes:
                await trio.to_thread.run_sync(shutil.rmtree, home, True)

        run.cli = CliRun(
            emitter,
            dialect,
            on_runtime_id=lambda thread: self.remember_origin(thread, str(cwd)),
            cleanup=cleanup,
        )
        if isinstance(dialect, AppDialect):
            dialect.spawn = self.spawn  # approvals may wait for a person: off the reader
            run.asker = self.asker(emitter, opts, str(cwd))
        self._live[opts.session_key] = run
        self.record("start", sessionKey=opts.session_key, model=model, resume=resume)
        mcp, mcp_env = mcp_overrides(opts.mcp_servers)
        env = run_env(config, provider, codex_home=home, extra={**mcp_env, **opts.env})
        if config.launcher is None:  # its shell sandbox finds its helper even under /tmp
            env = with_sandbox_helper(env, home, Path(self.binary()))
        if config.mode == "app-server":
            spec = self.spec(app_server_argv(config, provider, mcp), env, cwd=cwd, stdin=True)
            await run.cli.launch(self.nursery, spec, adapter=self.id, conversation=self._converse)
        else:
            prompt = opts.full_message()
            stdin = prompt_input(prompt)  # a long prompt goes on stdin (argv caps one at 128 KiB)
            args = exec_argv(
                attrs.evolve(config, sandbox="read-only") if opts.plan else config,
                provider,
                "-" if stdin is not None else prompt,
                model=model,
                resume_thread=resume,
                mcp=mcp,
            )
            launcher_stdin = config.launcher is not None and config.launcher_stdin
            spec = self.spec(args, env, cwd=cwd, stdin=launcher_stdin, input=stdin)
            await run.cli.launch(self.nursery, spec, adapter=self.id)
        return emitter.handle

    # -- app-server ----------------------------------------------------------------------------

    async def _rpc(self, run: _Run, method: str, params: Mapping[str, Any]) -> Any:
        dialect = run.cli.dialect
        assert isinstance(dialect, AppDialect) and dialect.rpc is not None
        self.record(method, sessionKey=run.opts.session_key, **params)
        return await dialect.rpc.request(method, params)

    async def _converse(self, cli: CliRun, child: ChildProcess) -> None:
        """initialize → initialized → thread/start | thread/resume → turn/start. A failure ends
        the run (reported once the host listens)."""
        dialect = cli.dialect
        assert isinstance(dialect, AppDialect)
        dialect.rpc = JsonRpcClient(child.send_line, adapter=self.id, version=False)
        run = dialect.run
        timeout = self.config.handshake_timeout
        with trio.move_on_after(timeout) as scope:
            await self._handshake(run, dialect.rpc)
        if scope.cancelled_caught:
            cli.failure = RuntimeStartError(
                f"codex app-server did not start the turn within {timeout} s",
                adapter=self.id,
                session_key=run.opts.session_key,
            )
            cli.ended.set()
        cli.ready.set()

    async def _handshake(self, run: _Run, rpc: JsonRpcClient) -> None:
        config = self.config
        cli = run.cli
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
            if run.opts.plan:  # plan mode: read-only, nothing to approve
                params |= {"sandbox": "read-only", "approvalPolicy": "never"}
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
            self.remember_origin(thread, str(run.cwd))
            turn: dict[str, Any] = {
                "threadId": thread,
                "input": [
                    {"type": "text", "text": run.opts.full_message()},
                    *(
                        {"type": "image", "url": f"data:{i.mime_type};base64,{i.data}"}
                        for i in run.opts.images
                    ),
                ],
            }
            model = run.next_model or run.model
            if model:
                turn["model"] = model
            # the turn's own sandbox and approvals (a resumed thread keeps its last ones: a
            # plan turn's read-only sandbox must not outlive it)
            turn["sandboxPolicy"] = {"type": _SANDBOX_POLICY[params["sandbox"]]}
            turn["approvalPolicy"] = params["approvalPolicy"]
            if cli.aborting:
                cli.ended.set()
                return
            result = await self._rpc(run, "turn/start", turn)
            run.turn_id = as_str(as_dict(as_dict(result).get("turn")).get("id")) or None
        except RuntimeReportedError as exc:
            if run.resume_thread and "no rollout found" in str(exc):
                exc = RuntimeReportedError(
                    f"codex has no session {run.resume_thread} in its home (no rollout found)",
                    code="session_not_found",
                    adapter=self.id,
                    session_key=run.opts.session_key,
                )
            cli.failure = exc
            cli.ended.set()
        except (trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError) as exc:
            cli.failure = exc if isinstance(exc, ProtocolError) else None
            cli.ended.set()

    async def answer(self, run: _Run, method: str, params: dict[str, Any]) -> Any:
        """The answer to one of the app-server's requests (approvals, by
        :attr:`CodexConfig.approve`; ``"ask"`` asks a person through the run's approval book)."""
        await trio.lowlevel.checkpoint()
        legacy = method in ("applyPatchApproval", "execCommandApproval")
        if method not in _APPROVALS and not legacy:
            return RpcErrorReply(METHOD_NOT_FOUND, f"ringleader does not handle {method}")
        try:
            decision = self.config.approve(method, params)
            if decision == "ask":
                decision = await self._ask(run, method, params)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            decision = "decline"
        except Exception as exc:  # a policy (or the book) that failed: decline, and say why
            self.record("approvalFailed", sessionKey=run.opts.session_key, error=type(exc).__name__)
            decision = "decline"
        self.record("approval", sessionKey=run.opts.session_key, method=method, decision=decision)
        return {"decision": _LEGACY_APPROVALS[decision] if legacy else decision}

    async def _ask(self, run: _Run, method: str, params: Mapping[str, Any]) -> ApprovalDecision:
        """A person's decision on one approval request. Codex takes no message with a decline
        and no edited command: the person's message (or, for an edit, what they asked for
        instead) is steered into the turn (``turn/steer``) before the decline, so the model
        reads it with the declined call."""
        asker = run.asker
        if asker is None or asker.handler is None:  # nobody to ask: its result says so
            dialect = run.cli.dialect
            item_id = as_str(params.get("itemId"))
            if isinstance(dialect, AppDialect) and item_id:
                dialect.state.needs_approval.add(item_id)
        if asker is None:
            return "decline"
        tool = _APPROVAL_TOOLS.get(method, method)
        shown = {k: v for k, v in params.items() if k not in _APPROVAL_NOISE}
        call_id = as_str(params.get("itemId")) or as_str(params.get("approvalId")) or method
        made = await asker.ask(tool, shown, call_id, reason=as_str(params.get("reason")) or None)
        if made.approved and made.input is None:
            return "accept"
        if made.approved:
            text = (
                f"The person reviewing your {tool} did not approve it as proposed; they asked "
                f"for this instead: {json.dumps(dict(made.input or {}))}"
            )
        else:
            text = f"The person reviewing your {tool} denied it: {made.rejection_text()}"
        await self._steer(run, text)
        return "decline"

    async def _steer(self, run: _Run, text: str) -> bool:
        """Steer ``text`` into the running turn (``turn/steer``); False if there is none."""
        dialect = run.cli.dialect
        if (
            not isinstance(dialect, AppDialect)
            or dialect.rpc is None
            or run.thread_id is None
            or run.turn_id is None
            or run.cli.ended.is_set()
        ):
            await trio.lowlevel.checkpoint()
            return False
        params = {
            "threadId": run.thread_id,
            "expectedTurnId": run.turn_id,
            "input": [{"type": "text", "text": text}],
        }
        try:
            with trio.move_on_after(self.config.handshake_timeout):
                await self._rpc(run, "turn/steer", params)
                return True
        except (RingleaderError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        return False

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        """Write ``value`` to ``key`` under the run's working directory (confined to it). In
        app-server mode, while the turn goes on, the text is also steered into it
        (``turn/steer``; the steer key ``.ringleader/signal`` is steered only, not written)."""
        live = self._live.get(run.session_key)
        await self.write_file(
            live.cwd if live is not None and key != STEER_KEY else None, key, value
        )
        steered = False
        if live is not None and self.config.mode == "app-server":
            text = value if key == STEER_KEY else f"[context update: {key}]\n{value}"
            steered = await self._steer(live, text)
        self.record(
            "writeContext", sessionKey=run.session_key, key=key, value=value, steered=steered
        )

    # -- controls ------------------------------------------------------------------------------

    async def interrupt(self, run: RunHandle, live: _Run) -> None:
        """App-server: a clean ``turn/interrupt`` first (``turn/completed{interrupted}``)."""
        if live.turn_id is None or live.thread_id is None:
            await trio.lowlevel.checkpoint()
            return
        with trio.move_on_after(self.config.interrupt_grace):
            try:
                await self._rpc(
                    live, "turn/interrupt", {"threadId": live.thread_id, "turnId": live.turn_id}
                )
                await live.cli.ended.wait()
            except (RingleaderError, trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    async def set_model(self, run: RunHandle, model: str) -> None:
        """Codex fixes the model per process (exec) or per turn (app-server): the model applies
        from the next turn of this thread — a run that resumes it through this adapter."""
        self.record("setModel", sessionKey=run.session_key, model=model)
        live = self._live.get(run.session_key)
        thread = (live.exec_state.thread_id if live else None) or run.run_id
        if live is not None:
            live.next_model = model
        if thread:
            self._next_models[thread] = model
        await trio.lowlevel.checkpoint()


CodexSession = CliSession
"""What resumes a Codex session: the thread id and the directory it started in."""
CodexCodec = OriginCodec
"""``{"sessionKey", "sessionId", "cwd"}`` JSON: the thread id and its origin directory."""
