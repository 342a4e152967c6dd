"""The OpenClaw adapter: ``RuntimeAdapter`` (id ``openclaw``) over the Gateway WebSocket.

OpenClaw is a *connected substrate*: one gateway (started by the adapter on first use, or a
running one it attaches to; :mod:`adapters.openclaw.gateway`) serves every session, and one
WebSocket connection (:mod:`adapters.openclaw.client`) carries every run.

* **A run** is one ``agent`` request on the OpenClaw session
  ``agent:<agent_id>:<host session key>`` (or the session named by ``resume_session_id``): the
  same key continues the same transcript, also after a gateway restart (OpenClaw keeps sessions in
  its SQLite store). The run id is the request's idempotency key; it binds on the run's first
  frame. ``StartOpts.model`` goes in the request (``provider/model`` or a bare id of the
  configured provider). The gateway refuses a per-run ``cwd`` (reserved for its plugins): the
  agent works in the gateway's workspace, which a managed gateway takes from the first run's
  ``StartOpts.cwd`` when none is configured.
* **Events** are normalized by :mod:`adapters.openclaw.normalize`; the run ends on the final
  ``agent`` answer (which carries usage), or — if it does not come within ``final_grace`` after
  the lifecycle said the run ended — from the lifecycle outcome.
* **Abort** sends ``chat.abort`` and ``sessions.abort`` together (errors swallowed) and ends in
  exactly one ``done{aborted}`` (OpenClaw's ``end`` + ``error`` + ``status:"timeout"`` are one
  abort); if the gateway does not confirm within ``abort_grace`` the run ends anyway.
* **Fail fast**: with ``retry_limit`` set, the run is stopped in the gateway after that many
  OpenClaw-internal model retries and ends in ``error`` + ``done{error}`` (code
  ``server_error`` / ``rate_limited`` …) instead of waiting out OpenClaw's backoff.
* **Connection loss**: the client reconnects; the run waits up to ``reconnect_grace`` and asks
  ``agent.wait`` for the outcome. If the gateway restarted meanwhile, the run is lost and ends in
  ``runtime_exited``.
* **Resume after a crash**: a gateway starting on a session whose turn its predecessor's death
  cut off continues that turn by itself (OpenClaw's restart recovery). A resume waits for that
  and takes the continuation as its turn instead of racing it with a second one
  (:meth:`OpenClawAdapter._continued`); a resume on a gateway that could not take the shared
  state directory (its sessions) is refused.
* ``set_model`` → ``sessions.patch {model}``; ``write_context`` → ``agents.files.set`` for the
  agent files OpenClaw knows (``AGENTS.md``, ``SOUL.md`` …), else a file in the agent's workspace
  (known when the adapter manages the gateway, or given as ``workspace``), confined to it.
* **Approvals**: with :attr:`OpenClawConfig.approve` set the adapter connects as an exec approval
  client (``caps`` ``exec-approvals``); a managed gateway started with
  ``GatewaySettings.exec_ask`` asks before every host command. The gateway's
  ``exec.approval.requested`` (routed to the run by its request's run id) is answered by the
  policy, and a policy's ``"ask"`` puts the command in the run's approval book
  (:class:`~orchestrator.core.asking.ToolAsker`: ``status{waiting_approval}``, decided from
  ``ringleader approve``, the board or an ACP editor); the decision goes back as
  ``exec.approval.resolve`` (``allow-once`` / ``deny``). OpenClaw's answer carries no message
  and no edited command: a denial reaches the model as OpenClaw's ``Exec denied (…
  user-denied)`` result, and an edit is a denial. Scoped grants ("this run", "always here") live
  in the book, which answers later asks without a person.
* Tool blocklist: OpenClaw has no per-run tool policy in ``agent``; the blocklist is applied
  gateway-wide (``tools.deny``) when the adapter starts the gateway with it
  (``GatewaySettings.tool_deny``). A run whose blocklist the gateway does not already enforce is
  refused with :class:`~orchestrator.core.errors.ConfigError` rather than run with tools it must not
  have.
"""

from __future__ import annotations

import collections
import json
import re
import uuid
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import attrs
import trio

from orchestrator.core.adapter import Capabilities, HealthResult, RunHandle, StartOpts, TaskHandle
from orchestrator.core.asking import ToolAsker
from orchestrator.core.errors import (
    ConfigError,
    RingleaderError,
    RuntimeExitedError,
    RuntimeReportedError,
    RuntimeStartError,
)
from orchestrator.core.events import now_ms

from .._base import AdapterBase, validate_context_key
from .._confine import EscapeError, write_beneath
from .._runs import RunEmitter
from .._runtimes import runtime_binary
from ..scripted import RecordedCall
from .client import Disconnected, Reconnected, RouteItem, Subscription
from .dialect import (
    AgentFrame,
    EventFrame,
    Frame,
    ResFrame,
    UnknownFrame,
    as_dict,
    as_list,
    as_str,
)
from .gateway import PROVIDER_ID, GatewayManager, GatewaySettings, ModelProvider
from .normalize import (
    RunState,
    continuation_events,
    finish_from_lifecycle,
    normalize,
    restart_continuation,
)

__all__ = [
    "AGENT_FILES",
    "ExecDecision",
    "ExecPolicy",
    "OpenClawAdapter",
    "OpenClawCodec",
    "OpenClawConfig",
    "ask_person",
]

ExecDecision: TypeAlias = Literal["allow", "deny", "ask"]
ExecPolicy: TypeAlias = Callable[[Mapping[str, Any]], ExecDecision]
"""How an exec approval the gateway asks for is answered: a function of its request
(``command``, ``cwd``, ``agentId``, ``sessionKey`` …) giving ``allow``, ``deny`` or ``ask`` (a
person, through the run's approval book)."""


def ask_person(request: Mapping[str, Any]) -> ExecDecision:
    """Ask a person about every command the gateway asks about."""
    return "ask"


AGENT_FILES: Final = frozenset(
    {"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md", "MEMORY.md"}
)
"""The agent files OpenClaw's ``agents.files.set`` accepts (its workspace bootstrap files)."""

_MAX_CALLS: Final = 1000
_TAIL_MESSAGES: Final = 50
_KEY_CHARS: Final = re.compile(r"[^A-Za-z0-9_.:-]+")


@attrs.frozen
class OpenClawConfig:
    """How the adapter reaches a gateway and drives runs."""

    gateway: GatewaySettings = attrs.field(factory=GatewaySettings)
    """How to start the managed gateway (ignored when ``url`` is set)."""
    url: str | None = None
    """Attach to this running gateway (``ws://127.0.0.1:18789``) instead of starting one."""
    token: str | None = attrs.field(default=None, repr=False)
    """The attached gateway's token."""
    workspace: Path | None = None
    """The attached gateway's agent workspace, if local (for ``write_context`` of other files)."""
    agent_id: str = "main"
    retry_limit: int | None = None
    """Fail fast after this many OpenClaw-internal model retries (``None``: OpenClaw decides)."""
    final_grace: float = 5.0
    """After the lifecycle says the run ended: how long to wait for the final answer."""
    abort_grace: float = 10.0
    reconnect_grace: float = 60.0
    request_timeout: float = 60.0
    client_options: dict[str, Any] = attrs.field(factory=dict[str, Any])
    restart_wait: float = 600.0
    """Resuming a session whose turn is still running (OpenClaw's own restart recovery
    continuing it): how long to wait for that turn before sending the resume anyway."""
    restart_poll: float = 1.0
    """How often the session's status is read meanwhile."""
    approve: ExecPolicy | None = None
    """Answer the gateway's exec approvals with this policy (:func:`ask_person`: a person, from
    the approval book); ``None``: the adapter is no approval client (a gateway that asks then
    denies at once, having nobody to ask)."""


class OpenClawCodec:
    """``{"sessionKey", "sessionId"}`` JSON where ``sessionId`` is the OpenClaw session key
    (``restore`` gives a handle whose ``run_id`` is that key; pass it as ``resume_session_id``)."""

    def __init__(self, adapter: OpenClawAdapter) -> None:
        self._adapter = adapter

    async def serialize(self, run: RunHandle) -> str:
        await trio.lowlevel.checkpoint()
        return json.dumps(
            {"sessionKey": run.session_key, "sessionId": self._adapter.gateway_key_of(run)}
        )

    async def restore(self, blob: str) -> RunHandle:
        await trio.lowlevel.checkpoint()
        data: Any = json.loads(blob)
        if not isinstance(data, dict):
            data = {}
        key = data.get("sessionId")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return RunHandle(
            adapter_id=self._adapter.id,
            session_key=str(data.get("sessionKey") or ""),  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            run_id=key if isinstance(key, str) and key else None,
        )


@attrs.define(eq=False)
class _Run:
    emitter: RunEmitter
    state: RunState
    gateway_key: str
    run_id: str
    sub: Subscription
    go: trio.Event = attrs.field(factory=trio.Event)
    deadline: float = float("inf")
    disconnected: bool = False
    """The connection dropped and has not come back yet."""
    asker: ToolAsker | None = None


class OpenClawAdapter(AdapterBase):
    """OpenClaw behind the trait (see the module docstring). Use as ``async with``."""

    id = "openclaw"

    def __init__(
        self,
        config: OpenClawConfig | None = None,
        *,
        manager: GatewayManager | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        super().__init__(clock=clock)
        self.config = config = config or OpenClawConfig()
        if manager is None:
            options = {
                "request_timeout": config.request_timeout,
                "exec_approvals": config.approve is not None,
                **config.client_options,
            }
            if config.url is not None:
                if config.token is None:
                    raise ConfigError("attaching to an OpenClaw gateway needs its token")
                manager = GatewayManager.attach(config.url, config.token, client_options=options)
            else:
                manager = GatewayManager(config.gateway, client_options=options)
        self.manager = manager
        self.calls: collections.deque[RecordedCall] = collections.deque(maxlen=_MAX_CALLS)
        """Side effects issued (``start``, ``abort``, ``setModel``, ``writeContext``)."""
        self._live: dict[str, _Run] = {}
        self._keys: dict[str, str] = {}
        self._codec = OpenClawCodec(self)
        self._adopted: set[str] = set()
        """Run ids of the gateway's own continuations a resumed run already reported."""

    # -- lifecycle -----------------------------------------------------------------------------

    async def __aenter__(self) -> OpenClawAdapter:
        await super().__aenter__()
        self.manager.bind(self.nursery)
        return self

    async def _shutdown(self) -> None:
        already = self._closed
        await super()._shutdown()
        if not already:
            await self.manager.aclose()

    # -- trait: static parts -------------------------------------------------------------------

    @property
    def session_codec(self) -> OpenClawCodec:
        return self._codec

    def capabilities(self) -> Capabilities:
        provider = self.manager.provider
        models = tuple(f"{PROVIDER_ID}/{m}" for m in provider.models) if provider else ()
        return Capabilities(
            streaming=True,
            mcp=False,
            worktrees=False,
            resume=True,
            tool_approval=self.config.approve is not None,
            models=models,
            steerable=False,
            context_window_tokens=provider.context_window if provider else None,
            runtime_class="connected-substrate",
            native_home=None,
            native_skills="preserve",
            native_memory="preserve",
            native_channels="gateway",
            native_scheduler=True,
        )

    async def probe_health(self) -> HealthResult:
        """A connected gateway answers ``health``; an attached one is connected to first. A
        managed gateway that has not started is not started for a health check (it is heavy):
        the installation is checked instead."""
        manager = self.manager
        if manager.client is None and manager.attached:
            await manager.ensure()
        client = manager.client
        if client is not None and client.connected:
            await client.request("health", {}, timeout_s=1.5)
            return HealthResult(ok=True, message=f"gateway {client.server_version} at {client.url}")
        if client is not None:
            return HealthResult(ok=False, message=f"gateway disconnected: {client.last_error}")
        await trio.lowlevel.checkpoint()
        if manager.settings.binary is None:
            runtime_binary("openclaw")  # raises RuntimeNotFoundError with the install command
        return HealthResult(ok=True, message="openclaw installed; the gateway starts on first run")

    # -- runs ----------------------------------------------------------------------------------

    def gateway_key_of(self, run: RunHandle) -> str:
        """The OpenClaw session key a run used (or would use)."""
        return self._keys.get(run.session_key) or self._gateway_key(run.session_key, None)

    def _gateway_key(self, session_key: str, resume: str | None) -> str:
        if resume:
            return (
                resume if resume.startswith("agent:") else f"agent:{self.config.agent_id}:{resume}"
            )
        cleaned = _KEY_CHARS.sub("-", session_key).strip("-") or "session"
        return f"agent:{self.config.agent_id}:{cleaned}"

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        self.nursery  # noqa: B018 - raises if the adapter was not entered
        config = self.config
        enforced = () if self.manager.attached else self.manager.settings.tool_deny
        deny = set(opts.child_tool_blocklist) - set(enforced)
        if deny:
            raise ConfigError(
                "openclaw cannot block tools per run; start the gateway with "
                f"GatewaySettings(tool_deny=…) covering {sorted(deny)}"
            )
        self.manager.configure(
            ModelProvider.from_env(opts.env, opts.model), workspace=opts.cwd or None
        )
        client = await self.manager.ensure()
        gateway_key = self._gateway_key(opts.session_key, opts.resume_session_id)
        if opts.resume_session_id and self.manager.without_shared_state:
            raise RuntimeStartError(
                f"openclaw cannot resume {gateway_key}: its session is in "
                f"{self.manager.settings.shared_state_dir}, which another gateway holds (a "
                "ringleader run with OpenClaw is going); resume it once that run ended",
                adapter=self.id,
                session_key=opts.session_key,
            )
        # a resumed session may have been continued by the gateway itself meanwhile
        continued = await self._continued(gateway_key) if opts.resume_session_id else None
        run_id = uuid.uuid4().hex
        provider = self.manager.provider
        emitter = self.new_run(opts.session_key)
        state = RunState(
            model=self._qualified(opts.model)
            or (f"{PROVIDER_ID}/{provider.models[0]}" if provider else None),
            prices_configured=bool(provider and provider.prices),
            retry_limit=config.retry_limit,
        )
        if continued is not None:
            return await self._adopt(emitter, state, gateway_key, continued)
        sub = client.subscribe(run_id=run_id, session_key=gateway_key)
        run = _Run(emitter=emitter, state=state, gateway_key=gateway_key, run_id=run_id, sub=sub)
        if config.approve is not None:
            workspace = self.config.workspace if self.manager.attached else self.manager.workspace
            run.asker = self.asker(emitter, opts, opts.cwd or str(workspace or ""))
        self._live[opts.session_key] = run
        self._keys[opts.session_key] = gateway_key
        params: dict[str, Any] = {
            "message": opts.full_message(),
            "sessionKey": gateway_key,
            "idempotencyKey": run_id,
        }
        if opts.model:
            provider_id, _, model = opts.model.rpartition("/")
            params["model"] = model
            if provider_id:
                params["provider"] = provider_id
            elif provider is not None:
                params["provider"] = PROVIDER_ID
        self.calls.append(
            RecordedCall(
                "start",
                {"sessionKey": gateway_key, "runId": run_id, "model": params.get("model")},
            )
        )
        try:
            await client.start_agent(params, sub)
        except BaseException as exc:
            sub.close()
            self._live.pop(opts.session_key, None)
            with trio.CancelScope(shield=True):
                if isinstance(exc, RingleaderError):
                    await emitter.fail_with(exc)
                else:
                    await emitter.fail(f"openclaw start failed: {type(exc).__name__}")
            raise
        self.spawn(self._drive, run)
        run.go.set()
        return emitter.handle

    async def _continued(self, key: str) -> list[dict[str, Any]] | None:
        """The messages of the turn OpenClaw's *restart recovery* added to session ``key``, if
        that is how the session ends; ``None`` otherwise.

        A gateway that starts on a state directory whose session was mid-turn when its previous
        gateway died (a SIGKILLed ``ringleader run``) continues that turn by itself, about half a
        second after it is ready: it adds a system prompt ("Your previous turn was interrupted by
        a gateway restart …") and runs the model. A resume sent meanwhile raced it: it was refused
        (``SESSION_WORK_START_CHANGED``) or ran a second continuation after the first, whose
        answer never reached the run. So a resume first waits (up to
        :attr:`OpenClawConfig.restart_wait`) while the session's status is ``running``, then
        takes the gateway's continuation as the resumed turn if the transcript ends with it —
        one this gateway wrote (since :attr:`GatewayManager.started_ms
        <adapters.openclaw.gateway.GatewayManager.started_ms>`) and no run reported yet; a
        later resume of the session sends its own prompt. Gateways without
        ``sessions.describe`` / ``sessions.get`` resume as before."""
        config = self.config
        deadline = trio.current_time() + config.restart_wait
        try:
            while True:
                client = await self.manager.ensure()
                described = await client.request("sessions.describe", {"key": key})
                status = as_str(as_dict(described.get("session")).get("status"))
                if status != "running" or trio.current_time() >= deadline:
                    break
                await trio.sleep(config.restart_poll)
            got = await client.request("sessions.get", {"key": key, "limit": _TAIL_MESSAGES})
        except (RuntimeReportedError, trio.TooSlowError):
            return None  # a gateway without these methods (or too busy to say): resume as before
        messages = [as_dict(m) for m in as_list(got.get("messages"))]
        found = restart_continuation(messages, since_ms=self.manager.started_ms or 0)
        if found is None or _run_of(found) in self._adopted:
            return None  # an earlier gateway's continuation, or one a run already reported
        return found

    async def _adopt(
        self, emitter: RunEmitter, state: RunState, key: str, messages: list[dict[str, Any]]
    ) -> RunHandle:
        """End the resumed run with the gateway's own continuation (no model call of ours)."""
        run_id = _run_of(messages)
        self._adopted.add(run_id)
        self._keys[emitter.handle.session_key] = key
        self.calls.append(RecordedCall("adoptContinuation", {"sessionKey": key, "runId": run_id}))
        emitter.bind_run_id(run_id)
        emitter.ensure_run_id()
        await emitter.publish(continuation_events(messages, state, emitter.factory))
        return emitter.handle

    async def _drive(self, run: _Run) -> None:
        emitter = run.emitter
        receive = run.sub.receive
        try:
            await run.go.wait()
            while not emitter.done:
                item: RouteItem | None = None
                with trio.move_on_at(run.deadline):
                    try:
                        item = await receive.receive()
                    except trio.EndOfChannel:
                        break
                if item is None:  # a deadline passed
                    if run.disconnected and run.state.intent is None:
                        await emitter.fail_with(
                            RuntimeExitedError(
                                "openclaw gateway connection lost and not back within "
                                f"{self.config.reconnect_grace:g} s",
                                exit_code=None,
                                adapter=self.id,
                                session_key=emitter.handle.session_key,
                            )
                        )
                    else:
                        await emitter.publish(finish_from_lifecycle(run.state, emitter.factory))
                    break
                await self._handle(run, item)
        except Exception as exc:
            await emitter.fail_from(exc, "openclaw")
        finally:
            with trio.CancelScope(shield=True):
                run.sub.close()
                if not emitter.done:
                    if run.state.intent == "abort":
                        await emitter.finish("aborted", run.state.summary)
                    else:
                        await emitter.fail_with(
                            RuntimeExitedError(
                                "openclaw gateway connection closed before the run ended",
                                exit_code=None,
                                adapter=self.id,
                                session_key=emitter.handle.session_key,
                            )
                        )
                if self._live.get(emitter.handle.session_key) is run:
                    del self._live[emitter.handle.session_key]

    async def _handle(self, run: _Run, item: RouteItem) -> None:
        emitter = run.emitter
        now = trio.current_time()
        if isinstance(item, Disconnected):
            run.disconnected = True
            run.deadline = min(run.deadline, now + self.config.reconnect_grace)
            return
        if isinstance(item, Reconnected):
            # The final answer was bound to the old connection: ask for the outcome instead.
            run.disconnected = False
            run.deadline = float("inf")
            self.spawn(self._await_outcome, run)
            return
        emitter.bind_run_id(run.run_id)
        if isinstance(item, EventFrame) and item.event.startswith("exec.approval."):
            if item.event == "exec.approval.requested":
                self.spawn(self._answer_approval, run, item.payload)  # a person may take long
            return
        events = normalize(item, run.state, emitter.factory)
        if events is None:
            events = emitter.note_unknown(_label(item))
        if events:
            await emitter.publish(events)
        state = run.state
        if state.wants_stop:
            state.wants_stop = False
            run.deadline = min(run.deadline, now + self.config.abort_grace)
            self.spawn(self._stop_in_gateway, run)
        elif state.outcome is not None and not emitter.done:
            run.deadline = min(run.deadline, now + self.config.final_grace)

    async def _await_outcome(self, run: _Run) -> None:
        """After a reconnect: the final answer was bound to the old connection; ask for it."""
        client = self.manager.client
        if client is None or run.emitter.done:
            return
        try:
            result = await client.request(
                "agent.wait", {"runId": run.run_id, "timeoutMs": 600_000}, timeout_s=610
            )
        except RuntimeReportedError as exc:
            lost = f"the run was lost with the gateway connection ({exc})"
            frame: Frame = ResFrame(
                id=run.run_id, ok=False, payload={"status": "error", "summary": lost}
            )
            run.state.last_error_code = "runtime_exited"
        except (RingleaderError, trio.TooSlowError):
            return
        else:
            status = as_str(result.get("status"))
            frame = ResFrame(id=run.run_id, ok=status in ("ok", ""), payload=result)
        if not run.emitter.done:
            run.sub.send.send_nowait(frame)

    async def _answer_approval(self, run: _Run, payload: Mapping[str, Any]) -> None:
        """Answer one ``exec.approval.requested`` of ``run`` (see the module docstring)."""
        approval_id = as_str(payload.get("id"))
        request = as_dict(payload.get("request"))
        policy = self.config.approve
        if not approval_id or policy is None:
            await trio.lowlevel.checkpoint()
            return
        command = as_str(request.get("command"))
        shown: dict[str, Any] = {"command": command}
        if as_str(request.get("cwd")):
            shown["cwd"] = as_str(request.get("cwd"))
        decision = "deny"
        try:
            verdict = policy(request)
            if verdict == "ask" and run.asker is not None:
                call_id = as_str(request.get("toolCallId")) or approval_id
                reason = as_str(request.get("warningText")) or None
                made = await run.asker.ask("exec", shown, call_id, reason=reason)
                verdict = "allow" if made.approved and made.input is None else "deny"
            decision = "allow-once" if verdict == "allow" else "deny"
        except Exception as exc:  # a policy (or the book) that failed: deny, and say why
            self.calls.append(RecordedCall("approvalFailed", {"error": type(exc).__name__}))
        self.calls.append(
            RecordedCall(
                "approval",
                {"sessionKey": run.gateway_key, "id": approval_id, "decision": decision},
            )
        )
        client = self.manager.client
        if client is None:
            return
        with suppress(RingleaderError, trio.TooSlowError):
            await client.request("exec.approval.resolve", {"id": approval_id, "decision": decision})

    async def _stop_in_gateway(self, run: _Run) -> None:
        client = self.manager.client
        if client is None:
            await trio.lowlevel.checkpoint()
            return
        key = run.gateway_key

        async def call(method: str, params: dict[str, Any]) -> None:
            with suppress(RingleaderError, trio.TooSlowError):
                await client.request(method, params, timeout_s=self.config.abort_grace)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "chat.abort", {"sessionKey": key, "runId": run.run_id})
            nursery.start_soon(call, "sessions.abort", {"key": key, "runId": run.run_id})

    # -- controls ------------------------------------------------------------------------------

    async def abort(self, run: RunHandle) -> None:
        live = self._live.get(run.session_key)
        self.calls.append(
            RecordedCall(
                "abort",
                {
                    "sessionKey": live.gateway_key if live else run.session_key,
                    "runId": live.run_id if live else run.run_id,
                },
            )
        )
        if live is None or live.emitter.done:
            await trio.lowlevel.checkpoint()
            return
        if live.state.intent is None:
            live.state.intent = "abort"
        live.deadline = min(live.deadline, trio.current_time() + self.config.abort_grace)
        await self._stop_in_gateway(live)
        with trio.move_on_after(self.config.abort_grace):
            await live.emitter.finished.wait()
        if not live.emitter.done:
            await live.emitter.publish(finish_from_lifecycle(live.state, live.emitter.factory))

    async def set_model(self, run: RunHandle, model: str) -> None:
        """``sessions.patch {key, model}``: the session's next turns use ``model``."""
        key = self.gateway_key_of(run)
        self.calls.append(RecordedCall("setModel", {"sessionKey": key, "model": model}))
        client = await self.manager.ensure()
        await client.request("sessions.patch", {"key": key, "model": self._qualified(model)})

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        """Set an agent file (``agents.files.set``) or write a file in the agent's workspace."""
        pure = validate_context_key(key)
        self.calls.append(
            RecordedCall(
                "writeContext", {"sessionKey": run.session_key, "key": key, "value": value}
            )
        )
        name = str(pure)
        if name in AGENT_FILES:
            client = await self.manager.ensure()
            await client.request(
                "agents.files.set",
                {"agentId": self._agent_of(run), "name": name, "content": value},
            )
            return
        workspace = self.config.workspace if self.manager.attached else self.manager.workspace
        if workspace is None:
            raise ConfigError(
                f"openclaw sets only its agent files ({', '.join(sorted(AGENT_FILES))}) "
                "without a known workspace"
            )
        try:
            await trio.to_thread.run_sync(
                write_beneath, workspace, str(pure), value.encode("utf-8")
            )
        except EscapeError as exc:
            raise ConfigError(f"context key {key!r} escapes the agent's workspace") from exc

    def _qualified(self, model: str | None) -> str | None:
        """``provider/model``: a bare id names a model of the managed provider."""
        if not model or "/" in model or self.manager.provider is None:
            return model
        return f"{PROVIDER_ID}/{model}"

    def _agent_of(self, run: RunHandle) -> str:
        key = self.gateway_key_of(run)
        parts = key.split(":")
        return (
            parts[1]
            if len(parts) > 2 and parts[0] == "agent" and parts[1]
            else self.config.agent_id
        )


def _run_of(messages: list[dict[str, Any]]) -> str:
    """The OpenClaw run id the last of ``messages`` names (``""`` if none)."""
    return next((as_str(as_dict(m.get("__openclaw")).get("runId")) for m in reversed(messages)), "")


def _label(item: Frame) -> str:
    if isinstance(item, AgentFrame):
        return f"agent/{item.stream or '<none>'}"
    if isinstance(item, EventFrame):
        return item.event or "<event>"
    if isinstance(item, UnknownFrame):
        return item.type
    return "res"
