"""Any ringleader runtime served as an Agent Client Protocol agent over stdio (``ringleader acp``).

An editor that speaks ACP (Zed and others) starts ``ringleader acp --runtime claude-code`` and
drives Claude Code, Codex, OpenClaw, Hermes or the native runtime through ringleader — with its
normalization, redaction, cost accounting and event log. JSON-RPC 2.0, one message per line:

* ``initialize`` → protocol version 1, ``loadSession: true``, no authentication methods.
* ``session/new {cwd}`` → a session id (``acp-<hex>``); the runtime starts on the first prompt.
* ``session/prompt {sessionId, prompt}`` → one task run through :class:`~orchestrator.engine.runner.
  Runner` (recorded in the event log first), its events streamed back as ``session/update``s:
  ``text-delta`` → ``agent_message_chunk`` (reasoning → ``agent_thought_chunk``), ``tool-call`` →
  ``tool_call``, ``tool-result`` → ``tool_call_update{completed|failed}``, ``cost`` →
  ``usage_update`` (occupancy = the run's input tokens, ``cost`` when the USD is known); the
  ``done`` answers the prompt: success → ``end_turn``, max_turns → ``max_turn_requests``,
  aborted → ``cancelled``, an error → a JSON-RPC error (code -32000, ``data.code`` = ours).
  A later prompt in the same session (also after ``session/load`` in another process) continues
  the runtime's session of the session's last run, as the event log recorded it (its codec blob
  or native session id); a run that recorded none is followed by a fresh runtime session.
* ``session/cancel {sessionId}`` → the running prompt is aborted (its answer is ``cancelled``).
* **Session modes** (``modes`` in the ``session/new`` and ``session/load`` answers):
  ``default`` (the runtime's configured policy) and ``plan``; ``session/set_mode {sessionId,
  modeId}`` switches (and says so in a ``current_mode_update``). A prompt in ``plan`` mode runs
  the runtime in its planning mode (read-only: Claude Code ``--permission-mode plan``, Codex's
  read-only sandbox, the native read-only policy; ``StartOpts.plan``) and answers with the plan;
  the client switches back to ``default`` to have it carried out on the same session.
* ``session/load {sessionId, cwd}`` → a session served earlier (kept in the event log's runs):
  its history is replayed as updates before the answer — each prompt as a
  ``user_message_chunk``, then that run's text, thoughts and tool calls with their results —
  and later prompts continue it.

* ``status{waiting_approval}`` (``ringleader acp``; ``--approvals deny`` turns it off) →
  ``tool_call_update{pending}`` naming the ``ringleader approve`` command that decides it, and
  the call is **forwarded to the client** as ``session/request_permission`` (allow once /
  reject once): the client's choice decides it in the approval book
  (:mod:`orchestrator.core.approvals`), where the CLI and the board can decide it too — the first
  decision wins. A client that cancels or cannot answer leaves the call waiting for them.

Not offered: client file-system and terminal methods, MCP servers passed by the client.
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from typing import Any, Final, cast

import attrs
import trio

from orchestrator.core.approvals import ApprovalBook, approve, reject
from orchestrator.core.errors import ConfigError, RingleaderError, redact_secrets
from orchestrator.core.events import ApprovalCall, RuntimeEvent, Status
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.actor import RunActor
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import RecordingSink
from orchestrator.engine.runner import Runner, TaskOutcome, TaskSpec, resumable_task

__all__ = ["AcpServer", "event_to_update", "serve_acp_stdio"]

PROTOCOL_VERSION: Final = 1
_VERSION: Final = "0.1.0"
_MAX_LINE: Final = 8 * 1024 * 1024
_STOP: Final[Mapping[str, str]] = {
    "success": "end_turn",
    "max_turns": "max_turn_requests",
    "aborted": "cancelled",
}

_PERMISSION_OPTIONS: Final = (
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow here", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
)
_REJECTED_BY_CLIENT: Final = "The user rejected this tool call in their editor."
_MODES: Final = (
    {"id": "default", "name": "Default", "description": "The runtime's configured policy."},
    {
        "id": "plan",
        "name": "Plan",
        "description": "Read-only: the runtime plans and answers with the plan.",
    },
)

Write = Callable[[dict[str, Any]], Awaitable[None]]


def event_to_update(event: RuntimeEvent, context_window: int | None) -> dict[str, Any] | None:
    """The ACP ``update`` object for one of our events (``None``: nothing to send)."""
    match event.kind:
        case "text-delta":
            kind = "agent_thought_chunk" if event.channel == "reasoning" else "agent_message_chunk"
            return {"sessionUpdate": kind, "content": {"type": "text", "text": event.text}}
        case "tool-call":
            return {
                "sessionUpdate": "tool_call",
                "toolCallId": event.tool_call_id,
                "title": event.name,
                "kind": "other",
                "status": "in_progress",
                "rawInput": event.input,
            }
        case "tool-result":
            return {
                "sessionUpdate": "tool_call_update",
                "toolCallId": event.tool_call_id,
                "status": "failed" if event.is_error else "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": event.output}}],
            }
        case "cost":
            if not context_window:
                return None
            update: dict[str, Any] = {
                "sessionUpdate": "usage_update",
                "size": context_window,
                "used": event.usage.input_tokens,
            }
            if event.cost_usd is not None:
                update["cost"] = {"amount": event.cost_usd, "currency": "USD"}
            return update
        case "status":
            call = event.approval
            if event.phase != "waiting_approval" or call is None:
                return None
            note = f"waiting for approval: ringleader approve {call.id} --allow (or --deny)"
            return {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call.tool_call_id,
                "status": "pending",
                "content": [{"type": "content", "content": {"type": "text", "text": note}}],
            }
        case "done" | "error":
            return None


@attrs.define(eq=False)
class _Session:
    session_id: str
    cwd: str
    prompts: int = 0
    resume_blob: str | None = None
    """The runtime's session after the last prompt (its codec blob), to continue it."""
    last_run_key: str | None = None
    """The event log's key of the session's last run: the next prompt continues its session."""
    runtime: str = ""
    mode: str = "default"
    """The session mode (``default`` or ``plan``: see the module docstring)."""
    actor: RunActor | None = None
    running: trio.CancelScope | None = None
    cancelled: bool = False


@attrs.define(eq=False)
class _Answer:
    """The client's answer to one of our requests (``None``: an error, or no answer)."""

    arrived: trio.Event = attrs.field(factory=trio.Event)
    result: dict[str, Any] | None = None


@attrs.define(eq=False)
class AcpServer:
    """The protocol side, independent of the transport: feed it messages, it writes answers."""

    registry: RuntimeRegistry
    runtime_id: str
    write: Write
    event_log: EventLog | None = None
    model: str | None = None
    runner_factory: Callable[..., Runner] = Runner
    approvals: bool = False
    """Tool calls that need approval wait in the approval book (``ringleader approve``, the
    board); the client sees the call ``pending`` with the command that decides it."""
    _sessions: dict[str, _Session] = attrs.field(init=False, factory=dict[str, _Session])
    _write_lock: trio.Lock = attrs.field(init=False, factory=trio.Lock)
    _asked: dict[str, _Answer] = attrs.field(init=False, factory=dict[str, _Answer])
    _ids: itertools.count[int] = attrs.field(init=False, factory=lambda: itertools.count(1))

    async def send(self, message: dict[str, Any]) -> None:
        async with self._write_lock:
            await self.write({"jsonrpc": "2.0", **message})

    async def handle(self, message: dict[str, Any], nursery: trio.Nursery) -> None:
        """One incoming message; requests are answered (prompts in their own task)."""
        method = message.get("method")
        request_id = message.get("id")
        raw = message.get("params")
        params: dict[str, Any] = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
        if not isinstance(method, str):
            if isinstance(request_id, str) and (answer := self._asked.get(request_id)):
                result = message.get("result")
                answer.result = cast(dict[str, Any], result) if isinstance(result, dict) else None
                answer.arrived.set()
            return  # else a response to nothing we asked, or garbage
        try:
            match method:
                case "initialize":
                    await self._result(request_id, self._initialize())
                case "session/new":
                    await self._result(request_id, self._new(params))
                case "session/load":
                    await self._result(request_id, await self._load(params))
                case "session/prompt":
                    nursery.start_soon(self._prompt, request_id, params)
                case "session/cancel":
                    self._cancel(params)
                case "session/set_mode":
                    await self._result(request_id, await self._set_mode(params))
                case _:
                    if request_id is not None:
                        await self._error(request_id, -32601, f"method not found: {method}")
        except _InvalidParams as exc:
            if request_id is not None:
                await self._error(request_id, -32602, str(exc))

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Send the client a request and wait for its result (``None`` if it answered with an
        error)."""
        request_id = f"ringleader-{next(self._ids)}"
        answer = self._asked[request_id] = _Answer()
        try:
            await self.send({"id": request_id, "method": method, "params": params})
            await answer.arrived.wait()
        finally:
            del self._asked[request_id]
        return answer.result

    async def _ask_permission(
        self, session: _Session, call: ApprovalCall, book: ApprovalBook
    ) -> None:
        """Forward a waiting call to the client; its choice decides the call in the book."""
        answer = await self.ask(
            "session/request_permission",
            {
                "sessionId": session.session_id,
                "toolCall": {
                    "toolCallId": call.tool_call_id,
                    "title": call.name,
                    "status": "pending",
                    "rawInput": call.input,
                },
                "options": list(_PERMISSION_OPTIONS),
            },
        )
        raw = (answer or {}).get("outcome")
        outcome: dict[str, Any] = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
        if outcome.get("outcome") != "selected":
            return  # cancelled, or no answer: the call waits for the CLI or the board
        choice = outcome.get("optionId")  # any other choice rejects (fail closed)
        if choice == "allow":
            decision = approve()
        elif choice == "allow-always":  # this tool, on this runtime, in this directory
            decision = approve(scope="always")
        else:
            decision = reject(_REJECTED_BY_CLIENT)
        with suppress(ConfigError):  # decided first from the CLI or the board, or aborted
            await book.decide(call.id, decision)

    async def _result(self, request_id: Any, result: Any) -> None:
        await self.send({"id": request_id, "result": result})

    async def _error(
        self, request_id: Any, code: int, message: str, data: dict[str, Any] | None = None
    ) -> None:
        error: dict[str, Any] = {"code": code, "message": redact_secrets(message)}
        if data:
            error["data"] = data
        await self.send({"id": request_id, "error": error})

    def _initialize(self) -> dict[str, Any]:
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
            },
            "agentInfo": {"name": f"ringleader ({self.runtime_id})", "version": _VERSION},
            "authMethods": [],
        }

    def _new(self, params: Mapping[str, Any]) -> dict[str, Any]:
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            raise _InvalidParams("session/new needs a cwd")
        session = _Session(session_id=f"acp-{uuid.uuid4().hex[:16]}", cwd=cwd)
        self._sessions[session.session_id] = session
        return {"sessionId": session.session_id, "modes": _modes(session)}

    def _session(self, params: Mapping[str, Any]) -> _Session:
        session_id = params.get("sessionId")
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise _InvalidParams(f"unknown session {session_id!r}")
        return session

    async def _load(self, params: Mapping[str, Any]) -> dict[str, Any]:
        session_id = params.get("sessionId")
        cwd = params.get("cwd")
        if not isinstance(session_id, str) or not isinstance(cwd, str):
            raise _InvalidParams("session/load needs a sessionId and a cwd")
        log = self.event_log
        if log is None:
            raise _InvalidParams("this server keeps no event log: sessions cannot be loaded")
        marker = f":task:{session_id}:"
        runs = [r for r in await log.runs() if marker in r.session_key]
        if not runs:
            raise _InvalidParams(f"no session {session_id} in the event log")
        session = _Session(session_id=session_id, cwd=cwd, prompts=len(runs))
        for run in runs:
            prompt = (run.outcome or {}).get("title")
            if isinstance(prompt, str) and prompt:  # the user's turn first, as it was sent
                await self._notify(
                    session,
                    {
                        "sessionUpdate": "user_message_chunk",
                        "content": {"type": "text", "text": prompt},
                    },
                )
            for event in await log.read(run.run_key):
                update = event_to_update(event, None)
                if update is not None:
                    await self._notify(session, update)
        last = runs[-1]
        session.runtime = last.runtime_id
        session.last_run_key = last.run_key
        row = await log.get_session(last.session_key)
        session.resume_blob = row.codec_blob if row is not None else None
        self._sessions[session_id] = session
        return {"modes": _modes(session)}

    async def _set_mode(self, params: Mapping[str, Any]) -> dict[str, Any]:
        session = self._session(params)
        mode = params.get("modeId")
        if mode not in [m["id"] for m in _MODES]:
            raise _InvalidParams(f"unknown mode {mode!r} (modes: default, plan)")
        session.mode = str(mode)
        await self._notify(
            session, {"sessionUpdate": "current_mode_update", "currentModeId": session.mode}
        )
        return {}

    def _cancel(self, params: Mapping[str, Any]) -> None:
        try:
            session = self._session(params)
        except _InvalidParams:
            return  # a notification: nobody to tell
        session.cancelled = True
        if session.actor is not None:
            session.actor.abort()

    async def _notify(self, session: _Session, update: dict[str, Any]) -> None:
        await self.send(
            {
                "method": "session/update",
                "params": {"sessionId": session.session_id, "update": update},
            }
        )

    async def _prompt(self, request_id: Any, params: Mapping[str, Any]) -> None:
        try:
            session = self._session(params)
            text = _prompt_text(params.get("prompt"))
        except _InvalidParams as exc:
            await self._error(request_id, -32602, str(exc))
            return
        if session.running is not None:
            await self._error(request_id, -32602, "a prompt is already running in this session")
            return
        session.prompts += 1
        session.cancelled = False
        context_window: list[int | None] = [None]
        ask_nursery: list[trio.Nursery] = []

        class Sink:
            async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
                for event in events:
                    update = event_to_update(event, context_window[0])
                    if update is not None:
                        await server._notify(session, update)
                    if (
                        isinstance(event, Status)
                        and event.phase == "waiting_approval"
                        and event.approval is not None
                        and ask_nursery
                    ):
                        call = event.approval
                        book = ApprovalBook.in_state_dir(runner.state_dir)
                        ask_nursery[0].start_soon(server._ask_permission, session, call, book)

        server = self

        def on_actor(actor: RunActor) -> None:
            session.actor = actor
            if session.cancelled:
                actor.abort()

        # the event log first (what `replay`, the board and session/load read), then the client
        sink = Sink() if self.event_log is None else RecordingSink(self.event_log, extra=(Sink(),))
        runner = self.runner_factory(
            registry=self.registry,
            sink=sink,
            event_log=self.event_log,
            on_actor=on_actor,
            approvals=self.approvals,
            review_plans=False,  # in plan mode the plan answers the prompt: the client decides
        )
        try:
            probe = self.registry.create(self.runtime_id)
            context_window[0] = probe.capabilities().context_window_tokens
        except RingleaderError:
            pass
        task = await self._task(session, text)
        session.running = trio.CancelScope()
        outcome: TaskOutcome | RingleaderError
        try:
            async with trio.open_nursery() as nursery:
                ask_nursery.append(nursery)  # the client's permission answers, during the run
                try:
                    outcome = await runner.run_task(self.runtime_id, task)
                except RingleaderError as exc:
                    outcome = exc
                nursery.cancel_scope.cancel()  # a question the run no longer waits on
        finally:
            session.running = None
            session.actor = None
        if not isinstance(outcome, RingleaderError) and outcome.runs:
            session.last_run_key = outcome.runs[-1].outcome.run_key or session.last_run_key
        if isinstance(outcome, RingleaderError):
            await self._error(request_id, -32000, str(outcome), {"code": outcome.event_code})
            return
        await self._answer_prompt(request_id, outcome)

    async def _task(self, session: _Session, text: str) -> TaskSpec:
        """The prompt's task: it continues the runtime's session of the session's last run
        (recorded in the event log) when there is one, else starts a new one."""
        fields: dict[str, Any] = {
            "task_id": f"{session.session_id}:{session.prompts}",
            "agent_id": f"acp-{session.session_id}",
            "model": self.model,
            "plan": session.mode == "plan",
        }
        log = self.event_log
        if log is not None and session.last_run_key:
            with suppress(ConfigError):  # it recorded no resumable session: a new one
                _, task = await resumable_task(log, session.last_run_key, text, **fields)
                return task
        return TaskSpec(title=text, cwd=session.cwd, **fields)

    async def _answer_prompt(self, request_id: Any, outcome: TaskOutcome) -> None:
        stop = _STOP.get(outcome.status)
        if stop is None:
            message = outcome.error_message or outcome.summary or "the run failed"
            await self._error(request_id, -32000, message, {"code": outcome.error_code or "error"})
            return
        usage = outcome.usage
        await self._result(
            request_id,
            {
                "stopReason": stop,
                "usage": {
                    "inputTokens": usage.input_tokens,
                    "outputTokens": usage.output_tokens,
                    "cachedReadTokens": usage.cached_input_tokens or 0,
                    "totalTokens": usage.input_tokens + usage.output_tokens,
                },
            },
        )


class _InvalidParams(Exception):
    pass


def _modes(session: _Session) -> dict[str, Any]:
    return {"currentModeId": session.mode, "availableModes": [dict(m) for m in _MODES]}


def _prompt_text(prompt: object) -> str:
    if not isinstance(prompt, list):
        raise _InvalidParams("prompt must be a list of content blocks")
    parts: list[str] = []
    for block in prompt:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):  # pyright: ignore[reportUnknownMemberType]
            parts.append(block["text"])  # pyright: ignore[reportUnknownArgumentType]
        elif block.get("type") == "resource":  # pyright: ignore[reportUnknownMemberType]
            resource = block.get("resource")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(resource, dict) and isinstance(resource.get("text"), str):  # pyright: ignore[reportUnknownMemberType]
                parts.append(resource["text"])  # pyright: ignore[reportUnknownArgumentType]
    text = "\n\n".join(parts).strip()
    if not text:
        raise _InvalidParams("the prompt has no text")
    return text


async def serve_acp_stdio(
    registry: RuntimeRegistry,
    runtime_id: str,
    *,
    event_log: EventLog | None = None,
    model: str | None = None,
    approvals: bool = False,
) -> None:
    """Serve ``runtime_id`` as an ACP agent on this process's stdin/stdout until stdin ends."""
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))

    async def write(message: dict[str, Any]) -> None:
        await stdout.send_all(json.dumps(message).encode() + b"\n")

    server = AcpServer(
        registry, runtime_id, write, event_log=event_log, model=model, approvals=approvals
    )
    async with stdin, stdout, trio.open_nursery() as nursery:
        buffer = b""
        while chunk := await stdin.receive_some(65536):
            buffer += chunk
            if len(buffer) > _MAX_LINE and b"\n" not in buffer:
                buffer = b""  # an over-long line: dropped (no id to answer)
                continue
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                try:
                    message: Any = json.loads(line)
                except ValueError:
                    await server.send(
                        {"id": None, "error": {"code": -32700, "message": "parse error"}}
                    )
                    continue
                if isinstance(message, dict):
                    await server.handle(message, nursery)  # pyright: ignore[reportUnknownArgumentType]
        nursery.cancel_scope.cancel()
