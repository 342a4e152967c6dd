"""The generic ACP adapter: ``RuntimeAdapter`` (id ``acp``) over any Agent Client Protocol agent.

One agent process per run, started from :attr:`AcpConfig.command` with an allow-listed
environment, speaking JSON-RPC 2.0 on stdio: ``initialize`` → ``session/new`` (or
``session/load`` to resume; ``session/resume`` where the agent offers only that) →
``session/prompt``. ``session/update`` notifications are normalized as they arrive
(:mod:`adapters.acp.normalize`); the prompt's response ends the run. Abort notifies
``session/cancel`` and waits :attr:`AcpConfig.cancel_grace` for the ``cancelled`` answer, then
ends the process either way — some agents (Hermes) keep streaming from the model after a cancel,
and only ending the process stops that spend.

As in every child-process adapter here, the terminal group (``done``, and ``error`` before it)
is published once the agent's process group is gone. The run id is the agent's session id, so
:class:`AcpCodec` (``{sessionKey, sessionId, cwd}``) resumes a session in its origin directory.

Subclasses adapt one agent (see :mod:`adapters.hermes`): :meth:`AcpAdapter.agent_argv`,
:meth:`AcpAdapter.prepare_run` (homes, config files, environment) and
:meth:`AcpAdapter.judge_end` (an agent that reports failures as ordinary text).
"""

from __future__ import annotations

import collections
import json
import math
import shutil
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from orchestrator.adapter import Capabilities, HealthResult, RunHandle, StartOpts, TaskHandle
from orchestrator.errors import (
    ConfigError,
    LineTooLongError,
    ProtocolError,
    RingleaderError,
    RuntimeExitedError,
    RuntimeReportedError,
    RuntimeStartError,
    redact_secrets,
)
from orchestrator.events import RuntimeEvent, now_ms

from .._base import AdapterBase, confined_path, validate_context_key
from .._jsonrpc import JsonRpcClient, RpcMessage, as_dict, as_str, decode_rpc_line, rpc_kind
from .._process import ChildProcess, child_env, open_child
from .._runs import RunEmitter
from ..scripted import RecordedCall
from .driver import AcpConfig, fs_request, initialize_params, permission_outcome
from .normalize import AcpState, normalize_prompt_end, normalize_update

__all__ = ["AcpAdapter", "AcpCodec", "AcpSession"]

_MAX_CALLS: Final = 1000
_FS_METHODS: Final = frozenset({"fs/read_text_file", "fs/write_text_file"})


@attrs.frozen
class AcpSession:
    """What resumes an ACP session: the agent's session id and the directory it started in."""

    session_key: str
    session_id: str | None
    cwd: str | None


class AcpCodec:
    """``{sessionKey, sessionId, cwd}`` as JSON."""

    def __init__(self, adapter: AcpAdapter) -> None:
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
        return RunHandle(self._adapter.id, session.session_key, session.session_id)

    @staticmethod
    def parse(blob: str) -> AcpSession:
        try:
            data = as_dict(json.loads(blob))
        except ValueError:
            raise ConfigError("not an ACP session blob (not JSON)") from None
        key = as_str(data.get("sessionKey"))
        if not key:
            raise ConfigError("not an ACP session blob (no sessionKey)")
        return AcpSession(
            session_key=key,
            session_id=as_str(data.get("sessionId")) or None,
            cwd=as_str(data.get("cwd")) or None,
        )


@attrs.define(eq=False)
class AcpRun:
    """One run's state (subclasses read it in their hooks)."""

    emitter: RunEmitter
    opts: StartOpts
    cwd: Path
    env: dict[str, str]
    state: AcpState
    home: Path | None = None
    owned_home: bool = False
    resume: str | None = None
    child: ChildProcess | None = None
    rpc: JsonRpcClient | None = None
    session_id: str | None = None
    agent_capabilities: dict[str, Any] = attrs.field(factory=dict[str, Any])
    aborting: bool = False
    live: bool = False
    """Set when ``start()`` returns; notifications read before are the agent replaying history."""
    spawned: trio.Event = attrs.field(factory=trio.Event)
    ready: trio.Event = attrs.field(factory=trio.Event)
    go: trio.Event = attrs.field(factory=trio.Event)
    spawn_error: BaseException | None = None
    handshake_error: RingleaderError | None = None
    terminal: list[RuntimeEvent] = attrs.field(factory=list[RuntimeEvent])
    terminal_seen: trio.Event = attrs.field(factory=trio.Event)
    """The prompt answered, or the agent's output ended: the run is over."""
    extra: dict[str, Any] = attrs.field(factory=dict[str, Any])
    """Subclass state."""


_END: Final = "ringleader/promptEnd"
_BAD_LINE: Final = "ringleader/badLine"
_REPLAY: Final = "ringleader/replay"


class AcpAdapter(AdapterBase):
    """Any ACP agent behind the trait (see the module docstring)."""

    id = "acp"

    def __init__(
        self, config: AcpConfig | None = None, *, clock: Callable[[], int] = now_ms
    ) -> None:
        super().__init__(clock=clock)
        self.config = config or AcpConfig()
        self.calls: collections.deque[RecordedCall] = collections.deque(maxlen=_MAX_CALLS)
        """Side effects issued (``abort``, ``setModel``, ``writeContext``, requests answered)."""
        self._live: dict[str, AcpRun] = {}
        self._origins: dict[str, str] = {}
        self._codec = AcpCodec(self)

    # -- hooks for subclasses ------------------------------------------------------------------

    def agent_argv(self) -> list[str]:
        """The agent's argv (the configured command)."""
        if not self.config.command:
            raise ConfigError(
                "the acp runtime needs the agent's command line (AcpConfig.command, "
                "e.g. --acp-command 'gemini --experimental-acp')"
            )
        return list(self.config.command)

    async def prepare_run(self, run: AcpRun) -> None:
        """Set up what the run needs before the agent starts (homes, config files, env)."""
        await trio.lowlevel.checkpoint()

    async def judge_end(self, run: AcpRun, result: object) -> RingleaderError | None:
        """An error to report instead of the prompt's stop reason, or ``None``."""
        await trio.lowlevel.checkpoint()
        return None

    async def finish_run(self, run: AcpRun) -> None:
        """Clean up after the agent is gone (delete an owned home, …)."""
        if run.owned_home and run.home is not None:
            await trio.to_thread.run_sync(shutil.rmtree, run.home, True)

    # -- trait: static parts -------------------------------------------------------------------

    @property
    def session_codec(self) -> AcpCodec:
        return self._codec

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
            runtime_class="wrapped-oneshot",
        )

    async def probe_health(self) -> HealthResult:
        """Start the agent and complete ``initialize`` (then end it)."""
        try:
            argv = self.agent_argv()
        except ConfigError as exc:
            await trio.lowlevel.checkpoint()
            return HealthResult(ok=False, message=str(exc))
        env = child_env(self.config.env_allow, extra=dict(self.config.env))
        async with open_child(
            argv, env=env, stdin=True, sigint_grace=0.2, sigterm_grace=0.2, adapter=self.id
        ) as child:
            rpc = JsonRpcClient(child.send_line, adapter=self.id)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._route_only, child, rpc)
                result = as_dict(await rpc.request("initialize", initialize_params(self.config)))
                nursery.cancel_scope.cancel()
        info = as_dict(result.get("agentInfo"))
        name = as_str(info.get("name"), "ACP agent")
        return HealthResult(ok=True, message=f"{name} {as_str(info.get('version'))}".strip())

    async def _route_only(self, child: ChildProcess, rpc: JsonRpcClient) -> None:
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

    def child_for(self, run: RunHandle) -> ChildProcess | None:
        """The run's agent process (``None`` before it is spawned or for an unknown run)."""
        live = self._live.get(run.session_key)
        return live.child if live is not None else None

    def session_of(self, run: RunHandle) -> AcpSession:
        live = self._live.get(run.session_key)
        session = run.run_id
        cwd = self._origins.get(session) if session else None
        if live is not None:
            session = live.session_id or session
            cwd = str(live.cwd)
        return AcpSession(session_key=run.session_key, session_id=session, cwd=cwd)

    def remember_origin(self, session_id: str, cwd: str) -> None:
        """Record where a session started (resumes without a ``cwd`` go there)."""
        self._origins[session_id] = cwd

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        self.nursery  # noqa: B018 - raises if the adapter was not entered
        resume = opts.resume_session_id or None
        origin = self._origins.get(resume) if resume else None
        cwd = Path(opts.cwd or origin or Path.cwd())
        emitter = self.new_run(opts.session_key)
        run = AcpRun(
            emitter=emitter,
            opts=opts,
            cwd=cwd,
            env={**self.config.env, **opts.env},
            state=AcpState(model=opts.model or self.config.model, resumed=resume is not None),
            resume=resume,
        )
        try:
            await trio.Path(cwd).mkdir(parents=True, exist_ok=True)
            await self.prepare_run(run)
        except (RingleaderError, OSError) as exc:
            await emitter.fail(redact_secrets(str(exc)), code=_code(exc))
            raise
        self._live[opts.session_key] = run
        self.calls.append(RecordedCall("start", {"sessionKey": opts.session_key, "resume": resume}))
        self.spawn(self._drive, run)
        await run.spawned.wait()
        if run.spawn_error is not None:
            raise run.spawn_error
        await run.ready.wait()
        run.live = True  # updates read from now on are this run's output, not replayed history
        run.go.set()  # the driver publishes nothing before start() has returned
        return emitter.handle

    async def _drive(self, run: AcpRun) -> None:
        config = self.config
        emitter = run.emitter
        try:
            argv = self.agent_argv()
            env = child_env(config.env_allow, extra=run.env)
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
                ) as child:
                    run.child = child
                    run.rpc = JsonRpcClient(child.send_line, adapter=self.id)
                    run.spawned.set()
                    code = await self._converse(run, child)
                if run.terminal:
                    await emitter.publish(run.terminal)
                if not emitter.done:
                    await self._finish_early(run, child, code)
            except RingleaderError as exc:
                if not run.spawned.is_set():
                    run.spawn_error = exc
                    run.spawned.set()
                    await emitter.fail_with(exc)
                    return
                raise
        except RingleaderError as exc:
            await emitter.fail_with(exc)
        except Exception as exc:
            await emitter.fail(
                f"{self.id} adapter failed: {type(exc).__name__}: {exc}", code="adapter_error"
            )
        finally:
            run.spawned.set()
            run.ready.set()
            with trio.CancelScope(shield=True):
                if not emitter.done:
                    if run.aborting:
                        await emitter.finish("aborted", run.state.summary)
                    else:
                        await emitter.fail(
                            f"{self.id} run ended without a result", code="adapter_error"
                        )
                await self.finish_run(run)

    async def _converse(self, run: AcpRun, child: ChildProcess) -> int:
        """Handshake, prompt, and the agent's exit; returns its exit code."""
        send, receive = trio.open_memory_channel[RpcMessage](math.inf)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read, run, child, send)
            nursery.start_soon(self._process, run, receive)
            await self._handshake(run)
            run.ready.set()
            if run.handshake_error is None and not run.aborting:
                nursery.start_soon(self._prompt, run, send.clone())
            await run.terminal_seen.wait()
            with trio.move_on_after(self.config.exit_wait):
                with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    await child.close_stdin()
                await child.wait()
            code = await child.terminate()
            nursery.cancel_scope.cancel()
        return -1 if code is None else code

    async def _handshake(self, run: AcpRun) -> None:
        """initialize → session/new | session/load (| session/resume) → optional set_model."""
        rpc = run.rpc
        assert rpc is not None
        with trio.move_on_after(self.config.handshake_timeout) as scope:
            try:
                await self._handshake_steps(run, rpc)
            except RingleaderError as exc:
                run.handshake_error = exc
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the agent ended: reported from its exit
        if scope.cancelled_caught:
            run.handshake_error = RuntimeStartError(
                f"{self.id} agent did not open a session within {self.config.handshake_timeout} s",
                adapter=self.id,
                session_key=run.opts.session_key,
            )
        if run.handshake_error is not None or run.session_id is None:
            run.terminal_seen.set()

    async def _handshake_steps(self, run: AcpRun, rpc: JsonRpcClient) -> None:
        init = as_dict(await self._request(run, "initialize", initialize_params(self.config)))
        run.agent_capabilities = as_dict(init.get("agentCapabilities"))
        base: dict[str, Any] = {"cwd": str(run.cwd), "mcpServers": list(self.config.mcp_servers)}
        if run.resume:
            session_caps = as_dict(run.agent_capabilities.get("sessionCapabilities"))
            if run.agent_capabilities.get("loadSession"):
                method = "session/load"
            elif "resume" in session_caps:
                method = "session/resume"
            else:
                raise RuntimeStartError(
                    f"{self.id} agent cannot resume sessions (no loadSession capability)",
                    adapter=self.id,
                    session_key=run.opts.session_key,
                )
            result = await self._request(run, method, {"sessionId": run.resume, **base})
            await self.check_loaded(run, result)
            run.session_id = run.resume
        else:
            result = await self._request(run, "session/new", base)
            session_id = as_str(as_dict(result).get("sessionId"))
            if not session_id:
                raise ProtocolError("session/new gave no sessionId", adapter=self.id)
            run.session_id = session_id
        self._origins[run.session_id] = str(run.cwd)
        model = run.opts.model or self.config.model
        if model and model not in self.model_aliases(result):
            try:
                await self._request(
                    run, "session/set_model", {"sessionId": run.session_id, "modelId": model}
                )
            except RuntimeReportedError as exc:
                run.extra["model_note"] = f"model {model!r} not applied: {exc}"

    def model_aliases(self, session_result: object) -> set[str]:
        """Model ids the new session already uses (no ``session/set_model`` needed)."""
        models = as_dict(as_dict(session_result).get("models"))
        current = as_str(models.get("currentModelId"))
        return {current, current.partition(":")[2]} if current else set()

    async def check_loaded(self, run: AcpRun, result: object) -> None:
        """Refuse a ``session/load`` answer that did not load the session (agent-specific)."""
        await trio.lowlevel.checkpoint()

    async def _request(self, run: AcpRun, method: str, params: Mapping[str, Any]) -> Any:
        rpc = run.rpc
        assert rpc is not None
        self.calls.append(RecordedCall(method, {"sessionKey": run.opts.session_key}))
        return await rpc.request(method, params)

    async def _prompt(self, run: AcpRun, send: trio.MemorySendChannel[RpcMessage]) -> None:
        """Send the prompt; its answer goes through the same channel as the updates, after them."""
        assert run.session_id is not None
        await run.go.wait()
        prompt = [{"type": "text", "text": run.opts.full_message()}]
        async with send:
            try:
                result = await self._request(
                    run, "session/prompt", {"sessionId": run.session_id, "prompt": prompt}
                )
            except RuntimeReportedError as exc:
                send.send_nowait({"method": _END, "error": exc})
                return
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the agent ended: reported from its exit
            send.send_nowait({"method": _END, "result": result})

    async def _read(
        self, run: AcpRun, child: ChildProcess, send: trio.MemorySendChannel[RpcMessage]
    ) -> None:
        """Route responses to their callers, answer the agent's requests, pass updates on."""
        rpc = run.rpc
        assert rpc is not None
        async with send:
            try:
                async for batch in child.batches():
                    for line in batch:
                        if isinstance(line, LineTooLongError):
                            send.send_nowait({"method": _BAD_LINE, "error": line})
                            continue
                        if not line.strip():
                            continue
                        try:
                            message = decode_rpc_line(line, adapter=self.id)
                        except ProtocolError as exc:
                            send.send_nowait({"method": _BAD_LINE, "error": exc})
                            continue
                        kind = rpc_kind(message)
                        if kind == "response":
                            rpc.resolve(message)
                        elif kind == "request":
                            await self._answer(run, message)
                        elif kind == "notification":
                            if not run.live:
                                message[_REPLAY] = True
                            send.send_nowait(message)
            finally:
                rpc.close()

    async def _answer(self, run: AcpRun, message: RpcMessage) -> None:
        rpc = run.rpc
        assert rpc is not None
        method = as_str(message.get("method"))
        params = as_dict(message.get("params"))
        request_id = message.get("id")
        try:
            if method == "session/request_permission":
                outcome = permission_outcome(self.config.permission, params)
                self.calls.append(
                    RecordedCall(
                        "permission",
                        {"sessionKey": run.opts.session_key, "outcome": outcome["outcome"]},
                    )
                )
                await rpc.respond(request_id, outcome)
            elif method in _FS_METHODS and self.config.allow_fs:
                try:
                    result = await trio.to_thread.run_sync(fs_request, method, params, run.cwd)
                except (ValueError, OSError) as exc:
                    await rpc.respond_error(request_id, -32602, redact_secrets(str(exc)))
                else:
                    await rpc.respond(request_id, result)
            else:
                await rpc.respond_error(request_id, -32601, f"ringleader does not offer {method}")
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    async def _process(self, run: AcpRun, receive: trio.MemoryReceiveChannel[RpcMessage]) -> None:
        """Normalize updates in arrival order; the prompt's answer builds the terminal group."""
        try:
            await run.go.wait()
            emitter = run.emitter
            make = emitter.factory
            if run.session_id:
                emitter.bind_run_id(run.session_id)
                note = run.extra.get("model_note")
                await emitter.publish([make.status("init", model=run.state.model, detail=note)])
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
                        out += await self._events(run, message)
                        if make.finished:
                            run.terminal = out
                            out = []
                            run.terminal_seen.set()
                    if out:
                        await emitter.publish(out)
        finally:
            run.terminal_seen.set()  # the agent's output ended: the run is over

    async def _events(self, run: AcpRun, message: RpcMessage) -> list[RuntimeEvent]:
        emitter = run.emitter
        make = emitter.factory
        emitter.ensure_run_id()
        method = as_str(message.get("method"))
        if method == _END:
            error = message.get("error")
            if isinstance(error, RingleaderError):
                return make.fail(str(error), code=_code(error), summary=run.state.summary)
            result = message.get("result")
            judged = await self.judge_end(run, result)
            if judged is not None:
                return make.fail(str(judged), code=_code(judged), summary=run.state.summary)
            if run.aborting:
                return make.finish("aborted", run.state.summary)
            return normalize_prompt_end(result, make, run.state)
        if method == _BAD_LINE:
            error = message.get("error")
            code = error.event_code if isinstance(error, RingleaderError) else "protocol_error"
            return [make.error(str(error), code=code, fatal=False)]
        if method != "session/update":
            return emitter.note_unknown(method or "message without method")
        params = as_dict(message.get("params"))
        if run.session_id and as_str(params.get("sessionId")) not in ("", run.session_id):
            return []  # another session's update (one session per process: not expected)
        update = as_dict(params.get("update"))
        events = normalize_update(update, make, run.state, replay=bool(message.get(_REPLAY)))
        if events is None:
            return emitter.note_unknown(as_str(update.get("sessionUpdate")) or "update")
        return events

    async def _finish_early(self, run: AcpRun, child: ChildProcess, code: int) -> None:
        """The agent's process ended without answering the prompt."""
        emitter = run.emitter
        if run.aborting or (child.terminated_by_us and run.handshake_error is None):
            await emitter.finish("aborted", run.state.summary)
        elif run.handshake_error is not None:
            error = run.handshake_error
            await emitter.fail(str(error), code=_code(error))
        else:
            await emitter.fail_with(
                RuntimeExitedError(
                    f"{self.id} agent exited with status {code} before answering the prompt",
                    exit_code=code,
                    stderr_tail=child.stderr_tail,
                    adapter=self.id,
                    session_key=run.opts.session_key,
                )
            )

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
        rpc = live.rpc
        if rpc is not None and live.session_id is not None and not live.terminal_seen.is_set():
            with trio.move_on_after(self.config.cancel_grace):
                with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    await rpc.notify("session/cancel", {"sessionId": live.session_id})
                    await live.terminal_seen.wait()
        if live.child is not None and not live.terminal_seen.is_set():
            await live.child.terminate()
        with trio.move_on_after(self.config.sigint_grace + self.config.sigterm_grace + 6):
            await live.emitter.finished.wait()
        if not live.emitter.done:
            await live.emitter.finish("aborted", live.state.summary)

    async def set_model(self, run: RunHandle, model: str) -> None:
        """Applies to the live session (``session/set_model``) when the agent accepts it, and to
        every later run of this adapter."""
        self.calls.append(RecordedCall("setModel", {"sessionKey": run.session_key, "model": model}))
        self.config.model = model
        live = self._live.get(run.session_key)
        if live is not None and live.rpc is not None and live.session_id and not live.emitter.done:
            with suppress(RingleaderError, trio.BrokenResourceError, trio.ClosedResourceError):
                await live.rpc.request(
                    "session/set_model", {"sessionId": live.session_id, "modelId": model}
                )
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        """Write ``value`` to ``key`` under the run's working directory (confined to it)."""
        validate_context_key(key)
        live = self._live.get(run.session_key)
        if live is not None:
            path = confined_path(live.cwd, key)
            await trio.Path(path).parent.mkdir(parents=True, exist_ok=True)
            await trio.Path(path).write_text(value, encoding="utf-8")
        self.calls.append(
            RecordedCall(
                "writeContext", {"sessionKey": run.session_key, "key": key, "value": value}
            )
        )
        await trio.lowlevel.checkpoint()


def _code(error: BaseException) -> str | None:
    if not isinstance(error, RingleaderError):
        return "runtime_start_failed"
    if isinstance(error, RuntimeReportedError) and error.code:
        return error.code
    return error.event_code
