"""The generic ACP adapter: ``RuntimeAdapter`` (id ``acp``) over any Agent Client Protocol agent.

One agent process per run, on the shared child-process run loop (:mod:`adapters._cli`), started
from :attr:`AcpConfig.command` with an allow-listed environment and speaking JSON-RPC 2.0 on
stdio: ``initialize`` → ``session/new`` (or ``session/load`` to resume; ``session/resume``
where the agent offers only that) → ``session/prompt``. Responses and the agent's requests are
routed as they arrive; ``session/update`` notifications are normalized in order
(:mod:`adapters.acp.normalize`), and so is the prompt's response, which ends the run — so the
terminal always comes after every update the agent sent before it. Notifications read before
``start()`` returns are the agent replaying an old session's history (``session/load``) and are
never reported as new output.

Abort notifies ``session/cancel`` and waits :attr:`AcpConfig.cancel_grace` for the
``cancelled`` answer, then the process ends either way — some agents (Hermes) keep streaming
from the model after a cancel, and only ending the process stops that spend.

**Plan mode** (``StartOpts.plan``, ``run --plan``): the agent's session modes (``modes`` in
the ``session/new`` / ``session/load`` answer) are searched for a planning mode (its id or name
says "plan"); the session is switched to it (``session/set_mode``) before the prompt, and a later
turn without ``plan`` switches a session left in it back (to ``default``, else the first other
mode). An agent that offers no planning mode (Hermes' modes are approval policies) is refused:
the run ends in ``error{capability_error}`` naming its modes, before any prompt is sent.

The run id is the agent's session id; the session codec (``{sessionKey, sessionId, cwd}``)
resumes a session in its origin directory. Subclasses adapt one agent (see
:mod:`adapters.hermes`): :meth:`AcpAdapter.argv`, :meth:`AcpAdapter.prepare_run` (homes, config
files, environment), :meth:`AcpAdapter.check_loaded` and :meth:`AcpAdapter.judge_end` (an agent
that reports failures as ordinary text).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from orchestrator.core.adapter import Capabilities, HealthResult, RunHandle, StartOpts, TaskHandle
from orchestrator.core.asking import ToolAsker
from orchestrator.core.errors import (
    CapabilityError,
    ConfigError,
    ProtocolError,
    RingleaderError,
    RuntimeReportedError,
    RuntimeStartError,
    redact_secrets,
)
from orchestrator.core.events import EventFactory, RuntimeEvent, now_ms
from orchestrator.core.refusals import DECLINED_MARK, NEEDS_APPROVAL_MARK

from .._cli import CliAdapterBase, CliRun, RpcDialect
from .._jsonrpc import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    JsonRpcClient,
    RpcErrorReply,
    as_dict,
    as_list,
    as_str,
    decode_rpc_line,
    rpc_kind,
)
from .._process import ChildProcess, child_env, open_child
from .._runs import RunEmitter
from .driver import AcpConfig, fs_request, initialize_params, permission_outcome, pick_option
from .normalize import AcpState, normalize_prompt_end, normalize_update, note_permission

__all__ = ["AcpAdapter", "AcpDialect", "AcpRun", "agent_state_root"]

_FS_METHODS: Final = frozenset({"fs/read_text_file", "fs/write_text_file"})
_REPLAY: Final = "ringleader/replay"
_JUDGED: Final = "ringleader/judged"
_SAFE_ID: Final = re.compile(r"[^A-Za-z0-9._-]+")


def agent_state_root(name: str) -> Path:
    """``$RINGLEADER_STATE_DIR/NAME`` (default ``~/.local/state/ringleader/NAME``): where an
    agent's per-identity homes go when its configuration names no ``state_root``."""
    base = os.environ.get("RINGLEADER_STATE_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".local" / "state" / "ringleader"
    return root / name


@attrs.define(eq=False)
class AcpRun:
    """One run's state (subclasses read it in their hooks)."""

    opts: StartOpts
    cwd: Path
    env: dict[str, str]
    state: AcpState
    resume: str | None = None
    home: Path | None = None
    owned_home: bool = False
    session_id: str | None = None
    cli: CliRun = attrs.field(init=False)
    asker: ToolAsker | None = None
    extra: dict[str, Any] = attrs.field(factory=dict[str, Any])
    """Subclass state (e.g. a note for the opening status)."""


class AcpDialect(RpcDialect):
    """ACP in the shared run loop: responses and the agent's requests are routed as they arrive;
    updates and the prompt's response are normalized in order."""

    name = "ACP agent"

    def __init__(self, adapter: AcpAdapter, run: AcpRun) -> None:
        self.adapter = adapter
        self.run = run
        self.live = False
        """Set when ``start()`` returns: notifications read before are replayed history."""

    @property
    def summary(self) -> str:
        return self.run.state.summary

    def decode(self, line: bytes) -> Any:
        return decode_rpc_line(line, adapter=self.adapter.id)

    async def route(self, frame: Any) -> bool:
        rpc = self.rpc
        if rpc is not None and rpc_kind(frame) == "response" and frame.get("id") in rpc.unawaited:
            # the prompt's answer: normalized in order, after the updates before it
            frame[_JUDGED] = await self.adapter.judge_end(self.run, frame.get("result"))
            return False
        if rpc_kind(frame) == "request" and frame.get("method") == "session/request_permission":
            note_permission(as_dict(frame.get("params")), self.run.state)
        if await super().route(frame):
            return True
        if not self.live:
            frame[_REPLAY] = True
        return False

    async def answer(self, method: str, params: dict[str, Any]) -> Any:
        return await self.adapter.answer(self.run, method, params)

    def opening(self, emitter: RunEmitter) -> list[RuntimeEvent]:
        session = self.run.session_id
        if not session:
            return []
        emitter.bind_run_id(session)
        note = self.run.extra.get("model_note")
        return [emitter.factory.status("init", model=self.run.state.model, detail=note)]

    def normalize(self, frame: Any, make: EventFactory) -> list[RuntimeEvent] | None:
        method = frame.get("method")
        if method is None:  # the prompt's response
            return self._prompt_end(frame, make)
        if method != "session/update":
            return None
        params = as_dict(frame.get("params"))
        if self.run.session_id and as_str(params.get("sessionId")) not in ("", self.run.session_id):
            return []  # another session's update (one session per process: not expected)
        update = as_dict(params.get("update"))
        return normalize_update(update, make, self.run.state, replay=bool(frame.get(_REPLAY)))

    def _prompt_end(self, frame: Any, make: EventFactory) -> list[RuntimeEvent]:
        state = self.run.state
        judged = frame.get(_JUDGED)
        error = as_dict(frame.get("error"))
        if self.run.cli.aborting:
            return make.finish("aborted", state.summary)
        if judged is True:
            # the agent reported a failure as its answer text (normalized by now, in order)
            text = redact_secrets(state.summary.strip()) or "ended the turn without an answer"
            code = self.adapter.failure_code(text)
            return make.fail(f"{self.adapter.id}: {text}", code=code, summary=state.summary)
        if error:
            data = as_dict(error.get("data"))
            code = as_str(data.get("code")) or "runtime_reported"
            message = redact_secrets(as_str(error.get("message")) or "the agent failed the prompt")
            return make.fail(f"{self.adapter.id}: {message}", code=code, summary=state.summary)
        return normalize_prompt_end(frame.get("result"), make, state)

    def label(self, frame: Any) -> str:
        method = as_str(frame.get("method"), "?")
        if method == "session/update":
            kind = as_str(as_dict(as_dict(frame.get("params")).get("update")).get("sessionUpdate"))
            return kind or "session/update without a kind"
        return method


class AcpAdapter(CliAdapterBase[AcpConfig, AcpRun]):
    """Any ACP agent behind the trait (see the module docstring)."""

    id = "acp"

    def __init__(
        self, config: AcpConfig | None = None, *, clock: Callable[[], int] = now_ms
    ) -> None:
        super().__init__(config or AcpConfig(), clock=clock)

    # -- hooks for subclasses ------------------------------------------------------------------

    def argv(self, args: Sequence[str]) -> list[str]:
        """The agent's argv: the configured command (through the launcher, if any)."""
        if self.config.launcher is not None:
            return list(self.config.launcher(args))
        if not self.config.command:
            raise ConfigError(
                "the acp runtime needs the agent's command line (runtimes.acp.binary and "
                "extra_args, or --acp-command 'gemini --acp')"
            )
        return [*self.config.command, *args]

    async def prepare_run(self, run: AcpRun) -> None:
        """Set up what the run needs before the agent starts (homes, config files, env)."""
        await trio.lowlevel.checkpoint()

    def session_meta(self, run: AcpRun) -> dict[str, Any] | None:
        """``_meta`` for ``session/new`` / ``session/load`` (agent-specific; ``None``: none)."""
        return None

    async def check_loaded(self, run: AcpRun, result: object) -> None:
        """Raise if a ``session/load`` answer did not load the session (agent-specific)."""
        await trio.lowlevel.checkpoint()

    async def judge_end(self, run: AcpRun, result: object) -> bool:
        """Whether a prompt that ended normally in fact failed (an agent that reports failures
        as ordinary text). Called as the answer arrives; the error's message is the answer
        text, taken once every earlier update is normalized (see :meth:`failure_code`)."""
        await trio.lowlevel.checkpoint()
        return False

    def failure_code(self, text: str) -> str:
        """The ``error{code}`` for a failure :meth:`judge_end` found, from the agent's text."""
        return "runtime_reported"

    def model_by_session(self) -> bool:
        """Whether a run's model is applied with ``session/set_model`` (``False``: the agent
        was given it in its configuration by :meth:`prepare_run`)."""
        return True

    def identity_home(self, run: AcpRun, root: Path) -> Path:
        """The run's home: the host's for its identity, else ``root/<agent id>``."""
        if run.opts.home_dir:
            return Path(run.opts.home_dir)
        return root / (_SAFE_ID.sub("_", run.opts.agent_id) or "default")

    async def probe_installed(self) -> HealthResult:
        """Health without starting the agent: its executable is there (an agent whose start is
        slow or has side effects uses it as its :meth:`probe_health`)."""
        try:
            binary = self.binary()
        except RingleaderError as exc:
            await trio.lowlevel.checkpoint()
            return HealthResult(ok=False, message=str(exc))
        exists = await trio.Path(binary).exists()
        return HealthResult(ok=exists, message=binary if exists else f"{binary} is missing")

    async def finish_run(self, run: AcpRun) -> None:
        """Clean up after the run's ``done`` (e.g. delete an owned home)."""
        await trio.lowlevel.checkpoint()

    # -- trait: static parts -------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        model = self.config.model
        return Capabilities(
            streaming=True,
            mcp=bool(self.config.mcp_servers),
            worktrees=False,
            resume=True,
            tool_approval=True,
            models=(model,) if model else (),
            steerable=False,
            plan_mode=True,  # when the agent offers a planning session mode (else refused)
            runtime_class="wrapped-oneshot",
        )

    async def probe_health(self) -> HealthResult:
        """Start the agent and complete ``initialize`` (then end it)."""
        try:
            argv = self.argv([])
        except ConfigError as exc:
            await trio.lowlevel.checkpoint()
            return HealthResult(ok=False, message=str(exc))
        env = child_env(self.config.env_allow, extra=dict(self.config.env))
        async with open_child(
            argv, env=env, stdin=True, sigint_grace=0.1, sigterm_grace=0.1, adapter=self.id
        ) as child:
            rpc = JsonRpcClient(child.send_line, adapter=self.id)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._route_responses, child, rpc)
                result = as_dict(await rpc.request("initialize", initialize_params(self.config)))
                nursery.cancel_scope.cancel()
        info = as_dict(result.get("agentInfo"))
        name = as_str(info.get("name"), "ACP agent")
        return HealthResult(ok=True, message=f"{name} {as_str(info.get('version'))}".strip())

    async def _route_responses(self, child: ChildProcess, rpc: JsonRpcClient) -> None:
        try:
            async for batch in child.batches():
                for line in batch:
                    if isinstance(line, bytes) and line.strip():
                        with suppress(ProtocolError):
                            message = decode_rpc_line(line, adapter=self.id)
                            if rpc_kind(message) == "response":
                                rpc.resolve(message)
        finally:
            rpc.close()

    # -- runs ----------------------------------------------------------------------------------

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        self.nursery  # noqa: B018 - raises if the adapter was not entered
        resume = opts.resume_session_id or None
        model = opts.model or (self._next_models.pop(resume, None) if resume else None)
        model = model or self.config.model
        cwd = Path(opts.cwd or self.origin(resume) or Path.cwd())
        run = AcpRun(
            opts=opts,
            cwd=cwd,
            env={**self.config.env, **opts.env},
            state=AcpState(model=model, resumed=resume is not None),
            resume=resume,
        )
        emitter = self.new_run(opts.session_key)
        try:
            await trio.Path(cwd).mkdir(parents=True, exist_ok=True)
            await self.prepare_run(run)
            spec = self.spec(
                [], child_env(self.config.env_allow, extra=run.env), cwd=cwd, stdin=True
            )
        except (RingleaderError, OSError) as exc:
            await emitter.fail(redact_secrets(str(exc)), code=_code(exc))
            raise

        async def cleanup() -> None:
            await self.finish_run(run)

        dialect = AcpDialect(self, run)
        dialect.spawn = self.spawn  # a permission may wait for a person: off the reader
        run.cli = CliRun(emitter, dialect, cleanup=cleanup)
        run.asker = self.asker(emitter, opts, str(cwd))
        self._live[opts.session_key] = run
        self.record("start", sessionKey=opts.session_key, model=model, resume=resume)
        await run.cli.launch(self.nursery, spec, adapter=self.id, conversation=self._converse)
        dialect.live = True  # no checkpoint since go was set: later notifications are output
        return emitter.handle

    async def _converse(self, cli: CliRun, child: ChildProcess) -> None:
        """The handshake, then (once ``start()`` has returned) the prompt."""
        dialect = cli.dialect
        assert isinstance(dialect, AcpDialect)
        run = dialect.run
        rpc = dialect.rpc = JsonRpcClient(child.send_line, adapter=self.id)
        timeout = self.config.handshake_timeout
        with trio.move_on_after(timeout) as scope:
            try:
                await self._handshake(run, rpc)
            except RingleaderError as exc:
                cli.failure = exc
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the agent ended: reported from its exit
        if scope.cancelled_caught:
            cli.failure = RuntimeStartError(
                f"{self.id} agent did not open a session within {timeout} s",
                adapter=self.id,
                session_key=run.opts.session_key,
            )
        if cli.failure is not None or run.session_id is None:
            cli.ended.set()
        cli.ready.set()
        if cli.ended.is_set():
            return
        await cli.go.wait()
        if cli.aborting:
            cli.ended.set()
            return
        prompt = [{"type": "text", "text": run.opts.full_message()}]
        self.record("session/prompt", sessionKey=run.opts.session_key)
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await rpc.send_request(
                "session/prompt", {"sessionId": run.session_id, "prompt": prompt}
            )

    async def _handshake(self, run: AcpRun, rpc: JsonRpcClient) -> None:
        """initialize → session/new | session/load (| session/resume) → optional set_model."""
        init = as_dict(await self._request(run, rpc, "initialize", initialize_params(self.config)))
        caps = as_dict(init.get("agentCapabilities"))
        base: dict[str, Any] = {"cwd": str(run.cwd), "mcpServers": list(self.config.mcp_servers)}
        meta = self.session_meta(run)
        if meta is not None:
            base["_meta"] = meta
        if run.resume:
            if caps.get("loadSession"):
                method = "session/load"
            elif "resume" in as_dict(caps.get("sessionCapabilities")):
                method = "session/resume"
            else:
                raise RuntimeStartError(
                    f"{self.id} agent cannot resume sessions (no loadSession capability)",
                    adapter=self.id,
                    session_key=run.opts.session_key,
                )
            result = await self._request(run, rpc, method, {"sessionId": run.resume, **base})
            await self.check_loaded(run, result)
            run.session_id = run.resume
        else:
            result = await self._request(run, rpc, "session/new", base)
            session_id = as_str(as_dict(result).get("sessionId"))
            if not session_id:
                raise ProtocolError("session/new gave no sessionId", adapter=self.id)
            run.session_id = session_id
        self.remember_origin(run.session_id, str(run.cwd))
        await self._apply_mode(run, rpc, as_dict(as_dict(result).get("modes")))
        model = run.state.model
        if model and self.model_by_session() and model not in _current_models(result):
            try:
                params = {"sessionId": run.session_id, "modelId": model}
                await self._request(run, rpc, "session/set_model", params)
            except RuntimeReportedError as exc:
                run.extra["model_note"] = f"model {model!r} not applied: {exc}"

    async def _apply_mode(self, run: AcpRun, rpc: JsonRpcClient, modes: Mapping[str, Any]) -> None:
        """Plan mode on (or a session left in it off): see the module docstring."""
        available = [as_dict(m) for m in as_list(modes.get("availableModes"))]
        ids = [as_str(m.get("id")) for m in available if as_str(m.get("id"))]
        planning = [as_str(m.get("id")) for m in available if _plans(m) and as_str(m.get("id"))]
        current = as_str(modes.get("currentModeId"))
        if run.opts.plan:
            if not planning:
                raise CapabilityError(
                    f"{self.id} agent offers no plan mode (its session modes: "
                    f"{', '.join(ids) or 'none'}); run it without --plan",
                    actor_id=run.opts.session_key,
                )
            wanted = planning[0]
        elif current in planning:
            others = [i for i in ids if i not in planning]
            wanted = "default" if "default" in others else (others[0] if others else current)
        else:
            return
        if wanted != current:
            params = {"sessionId": run.session_id, "modeId": wanted}
            await self._request(run, rpc, "session/set_mode", params)
        run.extra["mode"] = wanted

    async def _request(
        self, run: AcpRun, rpc: JsonRpcClient, method: str, params: Mapping[str, Any]
    ) -> Any:
        self.record(method, sessionKey=run.opts.session_key)
        return await rpc.request(method, params)

    async def answer(self, run: AcpRun, method: str, params: dict[str, Any]) -> Any:
        """The answer to one of the agent's requests (permissions by policy; fs only when
        enabled)."""
        if method == "session/request_permission":
            try:
                if self.config.permission == "ask":
                    outcome = await self._ask(run, params)
                else:
                    outcome = permission_outcome(self.config.permission, params)
            except Exception as exc:  # a policy (or the book) that failed: reject
                self.record("permissionFailed", error=type(exc).__name__)
                outcome = pick_option(params, False)
            self.record("permission", sessionKey=run.opts.session_key, **outcome)
            if not _allowed(params, outcome):
                run.state.refused += 1
                call_id = as_str(as_dict(params.get("toolCall")).get("toolCallId"))
                if call_id:  # its failed result says why it never ran
                    asker = run.asker
                    nobody = self.config.permission == "ask" and (
                        asker is None or asker.handler is None
                    )
                    mark = NEEDS_APPROVAL_MARK if nobody else DECLINED_MARK
                    run.state.refused_calls[call_id] = mark
            await trio.lowlevel.checkpoint()
            return outcome
        if method in _FS_METHODS and self.config.allow_fs:
            try:
                return await trio.to_thread.run_sync(fs_request, method, params, run.cwd)
            except (ValueError, OSError) as exc:
                return RpcErrorReply(INVALID_PARAMS, redact_secrets(str(exc)))
        await trio.lowlevel.checkpoint()
        return RpcErrorReply(METHOD_NOT_FOUND, f"ringleader does not offer {method}")

    async def _ask(self, run: AcpRun, params: Mapping[str, Any]) -> dict[str, Any]:
        """A person's decision on one permission request (an edited input is refused: ACP's
        answer cannot carry one)."""
        asker = run.asker
        call = as_dict(params.get("toolCall"))
        if asker is None:
            return pick_option(params, False)
        tool = as_str(call.get("kind")) or "tool"
        shown: dict[str, Any] = {"title": as_str(call.get("title"))}
        raw = call.get("rawInput")
        if raw is not None:
            shown["input"] = raw
        call_id = as_str(call.get("toolCallId")) or "permission"
        made = await asker.ask(tool, shown, call_id)
        allow = made.approved and made.input is None
        return pick_option(
            params, allow, always=allow and made.scope == "always", session=made.scope == "run"
        )

    # -- controls ------------------------------------------------------------------------------

    async def interrupt(self, run: RunHandle, live: AcpRun) -> None:
        """``session/cancel`` first: the prompt then answers ``cancelled``."""
        dialect = live.cli.dialect
        assert isinstance(dialect, AcpDialect)
        rpc = dialect.rpc
        if rpc is None or live.session_id is None or not rpc.unawaited:
            await trio.lowlevel.checkpoint()
            return
        with trio.move_on_after(self.config.cancel_grace):
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await rpc.notify("session/cancel", {"sessionId": live.session_id})
                await live.cli.ended.wait()

    async def set_model(self, run: RunHandle, model: str) -> None:
        """Applies to the live session (``session/set_model``) when the agent accepts it, and to
        the session's next run through this adapter."""
        self.record("setModel", sessionKey=run.session_key, model=model)
        live = self._live.get(run.session_key)
        session = (live.session_id if live else None) or run.run_id
        if session:
            self._next_models[session] = model
        dialect = live.cli.dialect if live is not None else None
        if (
            live is not None
            and isinstance(dialect, AcpDialect)
            and dialect.rpc is not None
            and not live.cli.emitter.done
        ):
            with suppress(RingleaderError, trio.BrokenResourceError, trio.ClosedResourceError):
                await dialect.rpc.request(
                    "session/set_model", {"sessionId": live.session_id, "modelId": model}
                )
        await trio.lowlevel.checkpoint()


def _plans(mode: Mapping[str, Any]) -> bool:
    """Whether a session mode is a planning mode (its id or name says so)."""
    return "plan" in f"{as_str(mode.get('id'))} {as_str(mode.get('name'))}".lower()


def _allowed(params: Mapping[str, Any], outcome: Mapping[str, Any]) -> bool:
    """Whether a ``session/request_permission`` answer picked one of the allow options."""
    chosen = as_str(as_dict(outcome.get("outcome")).get("optionId"))
    options = [as_dict(o) for o in as_list(params.get("options"))]
    return any(
        o.get("optionId") == chosen and as_str(o.get("kind")).startswith("allow") for o in options
    )


def _current_models(session_result: object) -> set[str]:
    """Model ids the new session already uses (no ``session/set_model`` needed)."""
    models = as_dict(as_dict(session_result).get("models"))
    current = as_str(models.get("currentModelId"))
    return {current, current.partition(":")[2]} if current else set()


def _code(error: BaseException) -> str | None:
    if not isinstance(error, RingleaderError):
        return "runtime_start_failed"
    if isinstance(error, RuntimeReportedError) and error.code:
        return error.code
    return error.event_code
