"""Any ringleader runtime served as an Agent Client Protocol agent (``ringleader acp``).

An editor that speaks ACP (Zed and others) starts ``ringleader acp --runtime claude-code`` and
drives Claude Code, Codex, OpenClaw, Hermes or the native runtime through ringleader — with its
normalization, redaction, cost accounting and event log. JSON-RPC 2.0; this module is the
protocol side, independent of the transport: :func:`serve_acp_stdio` (one message per line on
stdin/stdout) and :mod:`orchestrator.acp.remote` (WebSocket, ``ringleader acp --listen``) feed it
lines. The methods (ACP schema v1, docs/acp.md):

* ``initialize`` → protocol version 1 and what this runtime can do, truthfully: ``loadSession``;
  ``sessionCapabilities`` ``list``, ``resume``, and ``fork`` only when the runtime can fork a
  session (``Capabilities.session_fork``: native, Claude Code); ``promptCapabilities.image`` when
  it takes images (``prompt_images``: native, Claude Code, Codex in app-server mode);
  ``mcpCapabilities.http`` when it connects to HTTP MCP servers (``run_mcp_http``); ``close``.
  No authentication methods.
* ``session/new {cwd, mcpServers}`` → a session id (``acp-<hex>``); the runtime starts on the
  first prompt, with the client's MCP servers (``StartOpts.mcp_servers``: the native runtime
  through its MCP client, Claude Code through ``--mcp-config``, Codex through ``-c
  mcp_servers…``). A runtime that takes none refuses them (``-32602``), never drops them.
* ``session/prompt {sessionId, prompt}`` → one task run through :class:`~orchestrator.engine.
  runner.Runner` (recorded in the event log first), its events streamed back as
  ``session/update``s: ``text-delta`` → ``agent_message_chunk`` (reasoning →
  ``agent_thought_chunk``), ``tool-call`` → ``tool_call``, ``tool-result`` →
  ``tool_call_update{completed|failed}``, ``cost`` → ``usage_update`` (``used`` = the run's input
  tokens, ``size`` = the context window, ``cost`` = the session's cumulative USD when known); the
  ``done`` answers the prompt: success → ``end_turn``, max_turns → ``max_turn_requests``,
  aborted → ``cancelled``, an error → a JSON-RPC error (code -32000, ``data.code`` = ours).
  Text, resource links and embedded text resources become the prompt's text; image blocks go to
  the runtime as images (``StartOpts.images``) or are refused (``-32602``) by one that takes none.
  A later prompt continues the runtime's session (the session the previous prompt recorded in
  the event log) when the runtime can resume one. After a session's first prompt a
  ``session_info_update`` gives its title (the prompt, as ``session/list`` shows it).
* ``session/cancel {sessionId}`` → the running prompt is aborted (its answer is ``cancelled``).
* ``session/load {sessionId, cwd, mcpServers}`` → a session served earlier (kept in the event
  log's runs): its history is replayed as updates before the answer — each prompt as a
  ``user_message_chunk``, then that run's text, thoughts and tool calls with their results (a
  fork's replay starts with its origin's history up to the fork; the title's
  ``session_info_update`` is not part of the conversation) — and later prompts continue it.
* ``session/resume {sessionId, cwd, mcpServers}`` → the same without the replay.
* ``session/list {cwd?, cursor?}`` → the sessions in the event log, newest first, 50 a page
  (``nextCursor`` while more remain), filtered by working directory.
* ``session/close {sessionId}`` → its running prompt cancelled, the session forgotten by this
  connection (the event log keeps it: it can be loaded or resumed again).
* ``session/fork {sessionId, cwd, mcpServers}`` → a new session that continues a copy of the
  runtime's session (native: the conversation copied to a new session id; Claude Code:
  ``--resume ID --fork-session``); the original goes on unchanged. A runtime that cannot fork
  answers ``-32602`` saying so.

* ``status{waiting_approval}`` (``ringleader acp``; ``--approvals deny`` turns it off) →
  ``tool_call_update{pending}`` naming the ``ringleader approve`` command that decides it, and
  the call is **forwarded to the client** as ``session/request_permission`` (allow once /
  reject once): the client's choice decides it in the approval book
  (:mod:`orchestrator.core.approvals`), where the CLI and the board can decide it too — the first
  decision wins. A client that cancels or cannot answer leaves the call waiting for them.

Robustness: a line that is not JSON is answered with ``-32700`` (id null), a message that is not
a JSON-RPC object with ``-32600``, an unknown method with ``-32601``, bad parameters with
``-32602``; none of them ends the connection.

* **Session modes** (``modes`` in the ``session/new``, ``session/load`` and ``session/resume``
  answers): ``default`` (the runtime's configured policy) and ``plan``; ``session/set_mode
  {sessionId, modeId}`` switches (and says so in a ``current_mode_update``). A prompt in ``plan``
  mode runs the runtime in its planning mode (read-only: Claude Code ``--permission-mode plan``,
  Codex's read-only sandbox, the native read-only policy; ``StartOpts.plan``) and answers with
  the plan; the client switches back to ``default`` to have it carried out on the same session.

Not offered: client file-system and terminal methods, ``session/delete``.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import itertools
import json
import os
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any, Final, cast

import attrs
import trio

from orchestrator.core.adapter import Capabilities, PromptImage, RunMcpServer
from orchestrator.core.approvals import ApprovalBook, approve, reject
from orchestrator.core.errors import ConfigError, RingleaderError, redact_secrets
from orchestrator.core.events import ApprovalCall, RuntimeEvent, Status, now_ms
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.actor import RunActor
from orchestrator.engine.eventlog import EventLog, RunRow
from orchestrator.engine.feed import RecordingSink
from orchestrator.engine.runner import ResumeFrom, Runner, TaskOutcome, TaskSpec

__all__ = ["MAX_LINE", "AcpServer", "event_to_update", "serve_acp_stdio"]

PROTOCOL_VERSION: Final = 1
_VERSION: Final = "0.1.0"
MAX_LINE: Final = 8 * 1024 * 1024
"""The longest message accepted (a longer line is dropped: it has no id to answer)."""
PAGE: Final = 50
"""Sessions per ``session/list`` page."""
_STOP: Final[Mapping[str, str]] = {
    "success": "end_turn",
    "max_turns": "max_turn_requests",
    "aborted": "cancelled",
}
_SESSION_KEY: Final = re.compile(r":task:(acp-[0-9a-f]+):(\d+)")
"""An ACP session's run: its task id is ``<session id>:<prompt number>``."""

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


def event_to_update(
    event: RuntimeEvent, context_window: int | None, cost_usd: float | None = None
) -> dict[str, Any] | None:
    """The ACP ``update`` object for one of our events (``None``: nothing to send).
    ``cost_usd``: the session's cumulative USD with this event counted (a ``cost`` event's own
    when not given)."""
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
            amount = cost_usd if cost_usd is not None else event.cost_usd
            if event.cost_usd is not None and amount is not None:
                update["cost"] = {"amount": amount, "currency": "USD"}
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
    agent_id: str
    """The identity its runs run as (its per-identity home): a fork keeps its origin's, where
    the runtime keeps the session it copies."""
    mcp_servers: tuple[RunMcpServer, ...] = ()
    prompts: int = 0
    resume: ResumeFrom | None = None
    """The runtime's session after the last prompt, to continue it."""
    fork_next: bool = False
    """The next prompt continues ``resume`` as a new runtime session (a fork's first prompt)."""
    forked_from: str | None = None
    fork_runs: int = 0
    """How many of ``forked_from``'s runs the fork's history starts with."""
    cost_usd: float | None = None
    """USD of the prompts answered so far (None: none known)."""
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


class _InvalidParams(Exception):
    pass


@attrs.define(eq=False)
class AcpServer:
    """The protocol side, independent of the transport: feed it lines (:meth:`handle_line`) or
    parsed messages (:meth:`handle`); it writes answers and updates with ``write``."""

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
    _caps: Capabilities | None = attrs.field(init=False, default=None)
    _busy: int = attrs.field(init=False, default=0)
    _idle: trio.Event = attrs.field(init=False, factory=trio.Event)

    def abort_all(self) -> None:
        """Abort every running prompt (the connection is gone): each run ends aborted."""
        for session in self._sessions.values():
            session.cancelled = True
            if session.actor is not None:
                session.actor.abort()

    async def idle(self) -> None:
        """Return once no prompt is running."""
        while self._busy:
            await self._idle.wait()

    async def send(self, message: dict[str, Any]) -> None:
        async with self._write_lock:
            await self.write({"jsonrpc": "2.0", **message})

    async def handle_line(self, line: bytes | str, nursery: trio.Nursery) -> None:
        """One incoming line (a JSON-RPC message), whatever it holds."""
        if not line.strip():
            return
        try:
            message: Any = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: valid JSON nested too deeply
            await self.send({"id": None, "error": {"code": -32700, "message": "parse error"}})
            return
        if not isinstance(message, dict):  # a batch, or a bare value
            await self.send(
                {"id": None, "error": {"code": -32600, "message": "not a JSON-RPC object"}}
            )
            return
        await self.handle(cast(dict[str, Any], message), nursery)

    async def handle(self, message: dict[str, Any], nursery: trio.Nursery) -> None:
        """One incoming message; requests are answered (prompts in their own task)."""
        method = message.get("method")
        request_id = message.get("id")
        raw = message.get("params")
        if not isinstance(method, str):
            if "result" in message or "error" in message:
                answer = self._asked.get(request_id) if isinstance(request_id, str) else None
                if answer is not None:
                    result = message.get("result")
                    answer.result = (
                        cast(dict[str, Any], result) if isinstance(result, dict) else None
                    )
                    answer.arrived.set()
                return  # else a response to nothing we asked
            await self._error(request_id, -32600, "invalid request: no method")
            return
        if raw is not None and not isinstance(raw, dict):
            if request_id is not None:
                await self._error(request_id, -32602, f"{method}: params must be an object")
            return
        params: dict[str, Any] = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
        try:
            match method:
                case "initialize":
                    await self._result(request_id, self._initialize())
                case "session/new":
                    await self._result(request_id, self._new(params))
                case "session/load":
                    await self._result(request_id, await self._load(params, replay=True))
                case "session/resume":
                    await self._result(request_id, await self._load(params, replay=False))
                case "session/list":
                    await self._result(request_id, await self._list(params))
                case "session/fork":
                    await self._result(request_id, await self._fork(params))
                case "session/prompt":
                    nursery.start_soon(self._prompt, request_id, params)
                case "session/cancel":
                    self._cancel(params)
                case "session/set_mode":
                    await self._result(request_id, await self._set_mode(params))
                case "session/close":
                    self._close(params)
                    await self._result(request_id, {})
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

    # -- capabilities -----------------------------------------------------------------------

    def capabilities(self) -> Capabilities | None:
        """The runtime's capabilities (``None`` when it cannot be created: every prompt then
        fails with the reason)."""
        if self._caps is None:
            with suppress(RingleaderError):
                self._caps = self.registry.create(self.runtime_id).capabilities()
        return self._caps

    def _initialize(self) -> dict[str, Any]:
        caps = self.capabilities()
        sessions: dict[str, Any] = {}
        if self.event_log is not None:
            sessions = {"list": {}, "resume": {}, "close": {}}
            if caps is not None and caps.session_fork:
                sessions["fork"] = {}
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": self.event_log is not None,
                "promptCapabilities": {
                    "image": bool(caps and caps.prompt_images),
                    "audio": False,
                    "embeddedContext": True,
                },
                "mcpCapabilities": {"http": bool(caps and caps.run_mcp_http), "sse": False},
                "sessionCapabilities": sessions,
            },
            "agentInfo": {"name": f"ringleader ({self.runtime_id})", "version": _VERSION},
            "authMethods": [],
        }

    # -- sessions ---------------------------------------------------------------------------

    def _mcp_servers(self, params: Mapping[str, Any]) -> tuple[RunMcpServer, ...]:
        servers = _mcp_servers(params.get("mcpServers"))
        if not servers:
            return ()
        caps = self.capabilities()
        if caps is None or not caps.run_mcp_servers:
            raise _InvalidParams(
                f"runtime {self.runtime_id!r} cannot connect to MCP servers a client names; "
                "send mcpServers: [] (or use the native, claude-code or codex runtime)"
            )
        if not caps.run_mcp_http and any(s.url is not None for s in servers):
            raise _InvalidParams(f"runtime {self.runtime_id!r} takes stdio MCP servers only")
        return servers

    def _new(self, params: Mapping[str, Any]) -> dict[str, Any]:
        cwd = _cwd(params, "session/new")
        servers = self._mcp_servers(params)
        session_id = f"acp-{uuid.uuid4().hex[:16]}"
        session = _Session(session_id, cwd, f"acp-{session_id}", mcp_servers=servers)
        self._sessions[session_id] = session
        return {"sessionId": session_id, "modes": _modes(session)}

    def _session(self, params: Mapping[str, Any]) -> _Session:
        session_id = params.get("sessionId")
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise _InvalidParams(f"unknown session {session_id!r}")
        return session

    def _log(self, method: str) -> EventLog:
        if self.event_log is None:
            raise _InvalidParams(f"{method}: this server keeps no event log")
        return self.event_log

    async def _runs_of(self, session_id: str) -> list[RunRow]:
        """The runs of session ``session_id`` in the event log, oldest first."""
        marker = f":task:{session_id}:"
        return [r for r in await self._log("session").runs() if marker in r.session_key]

    async def _restore(
        self, session_id: str, cwd: str, method: str
    ) -> tuple[_Session, list[RunRow]]:
        """Session ``session_id`` as the event log (or this process) knows it, and its runs."""
        log = self._log(method)
        runs = await self._runs_of(session_id)
        live = self._sessions.get(session_id)
        if not runs:
            if live is not None:  # served here, no prompt yet
                return live, runs
            raise _InvalidParams(f"no session {session_id} in the event log")
        last = runs[-1]
        if last.runtime_id != self.runtime_id:
            raise _InvalidParams(
                f"session {session_id} ran on runtime {last.runtime_id!r}; this server serves "
                f"{self.runtime_id!r} (start `ringleader acp --runtime {last.runtime_id}`)"
            )
        first = runs[0].outcome or {}
        origin = first.get("acpForkedFrom")
        row = await log.get_session(last.session_key)
        agent = (row.agent_id if row is not None else None) or f"acp-{session_id}"
        session = _Session(session_id, cwd, agent, prompts=_prompt_number(last) or len(runs))
        if isinstance(origin, str):
            session.forked_from = origin
            count = first.get("acpForkRuns")
            session.fork_runs = count if isinstance(count, int) else 0
        if row is not None and (row.codec_blob or row.native_session_id):
            session.resume = ResumeFrom(
                row.run_key or last.run_key, row.codec_blob, row.native_session_id
            )
        session.cost_usd = _cost_of(runs)
        return session, runs

    async def _load(self, params: Mapping[str, Any], *, replay: bool) -> dict[str, Any] | None:
        method = "session/load" if replay else "session/resume"
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise _InvalidParams(f"{method} needs a sessionId")
        cwd = _cwd(params, method)
        servers = self._mcp_servers(params)
        live = self._sessions.get(session_id)
        if live is not None and live.running is not None:
            raise _InvalidParams(f"session {session_id} is running a prompt")
        session, runs = await self._restore(session_id, cwd, method)
        session.mcp_servers = servers
        if live is not None and live.fork_next:  # a fork with no prompt yet: keep what it forks
            session = attrs.evolve(live, cwd=cwd, mcp_servers=servers)
        if replay:
            await self._replay(session, runs)
        self._sessions[session_id] = session
        return {"modes": _modes(session)}

    async def _replay(self, session: _Session, runs: Sequence[RunRow]) -> None:
        """The session's history as updates: a fork's origin first (up to the fork)."""
        log = self._log("session/load")
        history: list[RunRow] = []
        origin, count, seen = session.forked_from, session.fork_runs, {session.session_id}
        while origin is not None and origin not in seen:
            seen.add(origin)
            earlier = (await self._runs_of(origin))[:count]
            history[:0] = earlier
            first = (earlier[0].outcome or {}) if earlier else {}
            parent, parent_count = first.get("acpForkedFrom"), first.get("acpForkRuns")
            origin = parent if isinstance(parent, str) else None
            count = parent_count if isinstance(parent_count, int) else 0
        for run in [*history, *runs]:
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

    async def _list(self, params: Mapping[str, Any]) -> dict[str, Any]:
        cwd = params.get("cwd")
        if cwd is not None and (not isinstance(cwd, str) or not os.path.isabs(cwd)):
            raise _InvalidParams("session/list: cwd must be an absolute path")
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            start = _cursor_offset(cursor)
        found: dict[str, dict[str, Any]] = {}
        log = self._log("session/list")
        for run in await log.runs():
            match = _SESSION_KEY.search(run.session_key)
            if match is None or run.runtime_id != self.runtime_id:
                continue
            session_id = match.group(1)
            outcome = run.outcome or {}
            info = found.get(session_id)
            if info is None:
                origin = outcome.get("acpCwd")
                if not isinstance(origin, str):
                    row = await log.get_session(run.session_key)
                    origin = row.origin_cwd if row is not None else None
                live = self._sessions.get(session_id)
                info = found[session_id] = {
                    "sessionId": session_id,
                    "cwd": origin or (live.cwd if live is not None else ""),
                    "_meta": {"runtime": run.runtime_id, "prompts": 0},
                }
                title = outcome.get("title")
                if isinstance(title, str) and title:
                    info["title"] = title[:200]
            info["updatedAt"] = _iso(run.ended_ms or run.started_ms)
            info["_meta"]["prompts"] += 1
        sessions = [s for s in found.values() if s["cwd"] and (cwd is None or s["cwd"] == cwd)]
        sessions.sort(key=lambda s: s["updatedAt"], reverse=True)
        page = sessions[start : start + PAGE]
        answer: dict[str, Any] = {"sessions": page}
        if start + PAGE < len(sessions):
            answer["nextCursor"] = _cursor(start + PAGE)
        return answer

    async def _fork(self, params: Mapping[str, Any]) -> dict[str, Any]:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise _InvalidParams("session/fork needs a sessionId")
        cwd = _cwd(params, "session/fork")
        caps = self.capabilities()
        if caps is None or not caps.session_fork:
            raise _InvalidParams(
                f"runtime {self.runtime_id!r} cannot fork a session (the native and claude-code "
                "runtimes can)"
            )
        servers = self._mcp_servers(params)
        live = self._sessions.get(session_id)
        if live is not None and live.running is None and (live.resume or live.fork_next):
            source = live
            runs = len(await self._runs_of(session_id))
        else:
            source, rows = await self._restore(session_id, cwd, "session/fork")
            runs = len(rows)
        if source.resume is None:
            raise _InvalidParams(f"session {session_id} has no conversation to fork yet")
        fork_id = f"acp-{uuid.uuid4().hex[:16]}"
        self._sessions[fork_id] = _Session(
            fork_id,
            cwd,
            source.agent_id,
            mcp_servers=servers,
            resume=source.resume,
            fork_next=True,
            forked_from=session_id,
            fork_runs=runs,
            cost_usd=None,
        )
        return {"sessionId": fork_id}

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

    def _close(self, params: Mapping[str, Any]) -> None:
        """Cancel the session's prompt and forget it here (the event log keeps its history:
        it can be loaded or resumed again)."""
        session = self._session(params)
        self._cancel(params)
        del self._sessions[session.session_id]

    def _cancel(self, params: Mapping[str, Any]) -> None:
        try:
            session = self._session(params)
        except _InvalidParams:
            return  # a notification: nobody to tell
        session.cancelled = True
        if session.actor is not None:
            session.actor.abort()

    # -- prompts ----------------------------------------------------------------------------

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
            text, images = _prompt_content(params.get("prompt"))
            caps = self.capabilities()
            if images and not (caps and caps.prompt_images):
                raise _InvalidParams(
                    f"runtime {self.runtime_id!r} takes no images (promptCapabilities.image is "
                    "false); send text only"
                )
        except _InvalidParams as exc:
            await self._error(request_id, -32602, str(exc))
            return
        if session.running is not None:
            await self._error(request_id, -32602, "a prompt is already running in this session")
            return
        session.prompts += 1
        session.cancelled = False
        context_window = caps.context_window_tokens if caps is not None else None
        run_costs: dict[str, float] = {}
        ask_nursery: list[trio.Nursery] = []
        server = self

        class Sink:
            async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
                for event in events:
                    total: float | None = None
                    if event.kind == "cost" and event.cost_usd is not None:
                        run_costs[run_key] = event.cost_usd
                        total = (session.cost_usd or 0.0) + sum(run_costs.values())
                    update = event_to_update(event, context_window, total)
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
        fields: dict[str, Any] = {"acpSession": session.session_id, "acpCwd": session.cwd}
        if session.forked_from is not None:
            fields |= {"acpForkedFrom": session.forked_from, "acpForkRuns": session.fork_runs}
        resume = session.resume if caps is not None and caps.resume else None
        task = TaskSpec(
            task_id=f"{session.session_id}:{session.prompts}",
            title=text,
            agent_id=session.agent_id,
            model=self.model,
            cwd=session.cwd,
            resume=resume,
            fork=session.fork_next and resume is not None,
            images=images,
            mcp_servers=session.mcp_servers,
            outcome_fields=fields,
            plan=session.mode == "plan",
        )
        session.running = trio.CancelScope()
        self._busy += 1
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
            self._busy -= 1
            if not self._busy:
                self._idle.set()
                self._idle = trio.Event()
        if isinstance(outcome, RingleaderError):
            await self._error(request_id, -32000, str(outcome), {"code": outcome.event_code})
            return
        await self._after(session, outcome)
        if session.prompts == 1:  # what session/list will call it, told now
            await self._notify(
                session,
                {
                    "sessionUpdate": "session_info_update",
                    "title": text[:200],
                    "updatedAt": _iso(now_ms()),
                },
            )
        await self._answer_prompt(request_id, outcome)

    async def _after(self, session: _Session, outcome: TaskOutcome) -> None:
        """What the next prompt continues: the runtime session the last run recorded."""
        if outcome.cost_usd is not None:
            session.cost_usd = (session.cost_usd or 0.0) + outcome.cost_usd
        if self.event_log is None or not outcome.runs:
            return
        row = await self.event_log.get_session(outcome.runs[-1].session_key)
        if row is not None and (row.codec_blob or row.native_session_id):
            session.resume = ResumeFrom(
                row.run_key or outcome.runs[-1].session_key, row.codec_blob, row.native_session_id
            )
            session.fork_next = False

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


def _cwd(params: Mapping[str, Any], method: str) -> str:
    cwd = params.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        raise _InvalidParams(f"{method} needs a cwd")
    if not os.path.isabs(cwd):
        raise _InvalidParams(f"{method}: cwd must be an absolute path, not {cwd!r}")
    return cwd


def _prompt_number(run: RunRow) -> int | None:
    match = _SESSION_KEY.search(run.session_key)
    return int(match.group(2)) if match else None


def _cost_of(runs: Sequence[RunRow]) -> float | None:
    total: float | None = None
    for run in runs:
        cost = (run.outcome or {}).get("costUsd")
        if isinstance(cost, int | float):
            total = (total or 0.0) + float(cost)
    return total


def _iso(ms: int) -> str:
    moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _cursor_offset(cursor: object) -> int:
    try:
        if not isinstance(cursor, str):
            raise ValueError
        decoded: Any = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        offset: object = (
            cast(dict[str, Any], decoded).get("offset") if isinstance(decoded, dict) else None
        )
        if not isinstance(offset, int) or offset < 0:
            raise ValueError
    except (ValueError, KeyError, binascii.Error):
        raise _InvalidParams(f"session/list: invalid cursor {cursor!r}") from None
    return offset


def _mcp_servers(raw: object) -> tuple[RunMcpServer, ...]:
    """``mcpServers`` of a session request (stdio: ``{name, command, args, env}``; HTTP:
    ``{type: "http", name, url, headers}``)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _InvalidParams("mcpServers must be a list")
    servers: list[RunMcpServer] = []
    for item in cast(list[Any], raw):
        if not isinstance(item, dict):
            raise _InvalidParams("each of mcpServers must be an object")
        entry = cast(dict[str, Any], item)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise _InvalidParams("an MCP server needs a name")
        kind = entry.get("type", "stdio")
        if kind in ("http", "sse"):
            if kind == "sse":
                raise _InvalidParams(f"MCP server {name!r}: the SSE transport is not supported")
            url = entry.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise _InvalidParams(f"MCP server {name!r} needs an http(s) url")
            servers.append(RunMcpServer(name=name, url=url, headers=_pairs(entry.get("headers"))))
            continue
        command = entry.get("command")
        args = entry.get("args", [])
        if not isinstance(command, str) or not command:
            raise _InvalidParams(f"MCP server {name!r} needs a command")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in cast(list[Any], args)):
            raise _InvalidParams(f"MCP server {name!r}: args must be a list of strings")
        servers.append(
            RunMcpServer(
                name=name,
                command=command,
                args=tuple(cast(list[str], args)),
                env=_pairs(entry.get("env")),
            )
        )
    return tuple(servers)


def _pairs(raw: object) -> dict[str, str]:
    """ACP's ``[{name, value}]`` lists (``env``, ``headers``) as a mapping."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise _InvalidParams("env and headers must be lists of {name, value}")
    pairs: dict[str, str] = {}
    for item in cast(list[Any], raw):
        entry = cast(dict[str, Any], item) if isinstance(item, dict) else {}
        name, value = entry.get("name"), entry.get("value")
        if not isinstance(name, str) or not isinstance(value, str):
            raise _InvalidParams("env and headers must be lists of {name, value}")
        pairs[name] = value
    return pairs


def _modes(session: _Session) -> dict[str, Any]:
    return {"currentModeId": session.mode, "availableModes": [dict(m) for m in _MODES]}


def _prompt_content(prompt: object) -> tuple[str, tuple[PromptImage, ...]]:
    """The prompt's text (text blocks, resource links, embedded text resources) and images."""
    if not isinstance(prompt, list):
        raise _InvalidParams("prompt must be a list of content blocks")
    parts: list[str] = []
    images: list[PromptImage] = []
    for item in cast(list[Any], prompt):
        if not isinstance(item, dict):
            raise _InvalidParams("each prompt content block must be an object")
        block = cast(dict[str, Any], item)
        match block.get("type"):
            case "text" if isinstance(block.get("text"), str):
                parts.append(block["text"])
            case "resource":
                resource = block.get("resource")
                if isinstance(resource, dict):
                    text = cast(dict[str, Any], resource).get("text")
                    if isinstance(text, str):
                        parts.append(text)
            case "resource_link" if isinstance(block.get("uri"), str):
                parts.append(f"[{block.get('name') or block['uri']}]({block['uri']})")
            case "image":
                images.append(_image(block))
            case "audio":
                raise _InvalidParams("audio prompts are not supported (promptCapabilities.audio)")
            case _:
                raise _InvalidParams(f"unsupported content block {block.get('type')!r}")
    text = "\n\n".join(parts).strip()
    if not text and not images:
        raise _InvalidParams("the prompt has no text")
    return text or "(see the image)", tuple(images)


def _image(block: Mapping[str, Any]) -> PromptImage:
    data, mime = block.get("data"), block.get("mimeType")
    if not isinstance(data, str) or not data or not isinstance(mime, str):
        raise _InvalidParams("an image block needs base64 data and a mimeType")
    if not mime.startswith("image/"):
        raise _InvalidParams(f"an image block's mimeType must be image/*, not {mime!r}")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _InvalidParams("an image block's data is not base64") from None
    return PromptImage(mime_type=mime, data=data)


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
            if len(buffer) > MAX_LINE and b"\n" not in buffer:
                buffer = b""  # an over-long line: dropped (no id to answer)
                continue
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                await server.handle_line(line, nursery)
        nursery.cancel_scope.cancel()
