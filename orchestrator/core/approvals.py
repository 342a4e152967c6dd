"""Tool approvals: the request a handler sees, the decisions it may give, and the durable book
every process of a state directory shares.

Anvia's approval rules (``anvia-core-agent.txt``, "Tool Approvals"), as the native loop applies
them (:mod:`adapters.native.executor`):

* a handler is an async function of an :class:`ApprovalRequest`; it is set for the Glove (or
  the adapter) and may be **overridden per request** (``glove.process_request(...,
  approvals=handler)``): the request's handler wins;
* its decision is ``True`` / ``False``, an :class:`ApprovalDecision` (:func:`approve`,
  :func:`reject`) or the seed's mapping shape ``{"approved": bool, "reason"?,
  "reject_message"?}``;
* approved runs the tool — with the decision's **edited input** when it has one (validated
  again like the model's input);
* rejected skips the tool; the model sees ``reject_message``, else ``reason``, else
  ``"Tool approval was rejected."`` as the tool's (error) result;
* a call that needs approval with **no handler** raises
  :class:`~orchestrator.core.errors.ToolApprovalRequiredError` from the run (the library default);
  runs through the native adapter keep the fail-closed default instead (the call is denied and
  the model is told so) unless the run waits in an :class:`ApprovalBook`.

**Durable approvals.** :class:`ApprovalBook` (``<state dir>/approvals.db``, SQLite) is the one
approval mechanism of the board, the ACP server and the CLI: a run started with
``StartOpts.approvals_db`` (``Runner(approvals=True)``; ``ringleader run --approvals wait``,
``ringleader serve``, ``ringleader acp --approvals wait``) records each call that needs approval
as a *pending* entry (the call, its session, the process waiting on it) and waits, polling, for
a decision. Anyone with the state directory decides: ``POST /approve`` on the board,
``ringleader approve ID``, or :meth:`ApprovalBook.decide`. The waiting process picks it up; if
that process is gone (killed, crashed, the machine rebooted) the native session still holds the
call unanswered, and ``ringleader approve`` resumes the run from its session: the loop runs the
unanswered calls first (:meth:`adapters.native.loop.Agent.ask`), and the book answers this one
from its record. An abort while waiting (Ctrl-C, ``abort``) cancels the entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeAlias, TypeVar, cast, runtime_checkable

import attrs
import trio

from orchestrator.core.errors import ConfigError
from orchestrator.core.lifetime import ProcessIdentity
from orchestrator.core.redact import redact_text

__all__ = [
    "APPROVALS_DB",
    "DEFAULT_REJECT_MESSAGE",
    "ApprovalBook",
    "ApprovalDecision",
    "ApprovalEntry",
    "ApprovalHandler",
    "ApprovalRequest",
    "ApprovalStatus",
    "BookHandler",
    "DecisionLike",
    "DecisionScope",
    "Grant",
    "RecordingHandler",
    "RunInfo",
    "approve",
    "as_decision",
    "reject",
]

DEFAULT_REJECT_MESSAGE: Final = "Tool approval was rejected."

DecisionScope: TypeAlias = Literal["once", "run", "always"]
"""How far an approval reaches: this call (``once``), this tool for the rest of the run
(``run``), or this tool for this runtime in this directory from now on (``always``, ACP's
allow-always). A rejection is always ``once``."""
_SCOPES: Final = ("once", "run", "always")


@attrs.frozen
class ApprovalRequest:
    """One tool call waiting for a decision (its input already validated)."""

    tool_name: str
    tool_input: Any
    """The validated input as JSON (what the tool would run with)."""
    call_id: str
    """The model's tool call id."""
    session_id: str = ""
    """The run's session (the native store's id)."""
    reason: str | None = None
    """Why it needs approval (the policy's ``ask``, or a hook's request)."""

    @property
    def id(self) -> str:
        """The approval's id (``ringleader approve ID``): bound to the exact call — the
        session, the model's call id, the tool and a hash of its input — so a decision is never
        inherited by a later call that reuses the id with another input (a provider that
        repeats or omits ids); stable across a resume of the same call."""
        try:
            canonical = json.dumps(
                self.tool_input, sort_keys=True, separators=(",", ":"), default=str
            )
        except ValueError:  # a circular structure: its repr still names the input
            canonical = repr(self.tool_input)
        material = "\0".join((self.session_id, self.call_id, self.tool_name, canonical))
        digest = hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()
        return f"ap-{digest[:16]}"


@attrs.frozen
class ApprovalDecision:
    """A handler's answer. ``input`` (approve only) replaces the call's input."""

    approved: bool
    reason: str | None = None
    reject_message: str | None = None
    """What the model sees when rejected (wins over ``reason``)."""
    input: Mapping[str, Any] | None = None
    scope: DecisionScope = "once"
    """An approval's reach (see :data:`DecisionScope`); a grant beyond ``once`` is stored in the
    book and answers the later calls of that tool without asking."""

    def rejection_text(self) -> str:
        return self.reject_message or self.reason or DEFAULT_REJECT_MESSAGE

    def to_json(self) -> dict[str, Any]:
        return {
            "approved": self.approved,
            "reason": self.reason,
            "rejectMessage": self.reject_message,
            "input": None if self.input is None else dict(self.input),
            "scope": self.scope,
        }


DecisionLike: TypeAlias = bool | ApprovalDecision | Mapping[str, Any]
ApprovalHandler: TypeAlias = Callable[[ApprovalRequest], Awaitable[DecisionLike]]


@runtime_checkable
class RecordingHandler(Protocol):
    """A handler that records the request somewhere others can decide it (the book): the loop
    calls :meth:`record` before it announces ``status{waiting_approval}``, so the approval the
    event names can always be decided."""

    async def record(self, request: ApprovalRequest) -> None: ...

    def __call__(self, request: ApprovalRequest) -> Awaitable[DecisionLike]: ...


def approve(
    reason: str | None = None,
    *,
    input: Mapping[str, Any] | None = None,
    scope: DecisionScope = "once",
) -> ApprovalDecision:
    """Run the tool (with ``input`` instead of the model's, when given); ``scope`` ``run`` or
    ``always`` also allows the tool's later calls (see :data:`DecisionScope`)."""
    return ApprovalDecision(True, reason=reason, input=input, scope=scope)


def reject(message: str | None = None, *, reason: str | None = None) -> ApprovalDecision:
    """Skip the tool; the model sees ``message`` (else ``reason``, else the default text)."""
    return ApprovalDecision(False, reason=reason, reject_message=message)


def as_decision(value: DecisionLike) -> ApprovalDecision:
    """Any decision shape a handler may return, as an :class:`ApprovalDecision`."""
    if isinstance(value, ApprovalDecision):
        return value
    if isinstance(value, bool):
        return ApprovalDecision(value)
    data = value
    edited = data.get("input")
    approved = data.get("approved") is True
    scope = data.get("scope")
    return ApprovalDecision(
        approved=approved,
        reason=_opt_str(data.get("reason")),
        reject_message=_opt_str(data.get("reject_message", data.get("rejectMessage"))),
        input=cast(Mapping[str, Any], edited) if isinstance(edited, Mapping) else None,
        scope=scope if approved and scope in _SCOPES else "once",
    )


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# -- the durable book ------------------------------------------------------------------------------

APPROVALS_DB: Final = "approvals.db"
"""The book's file name in the state directory."""

ApprovalStatus: TypeAlias = Literal["pending", "approved", "rejected", "cancelled"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    session_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,
    reason TEXT,
    runtime_id TEXT,
    agent_id TEXT,
    session_key TEXT,
    owner_pid INTEGER,
    owner_start INTEGER,
    decision TEXT,
    created_ms INTEGER NOT NULL,
    decided_ms INTEGER
);
CREATE INDEX IF NOT EXISTS approvals_by_status ON approvals (status, created_ms);
CREATE TABLE IF NOT EXISTS started (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    owner_pid INTEGER,
    started_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS grants (
    scope TEXT NOT NULL,
    tool TEXT NOT NULL,
    runtime_id TEXT NOT NULL,
    cwd TEXT NOT NULL,
    session_key TEXT NOT NULL,
    approval_id TEXT,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (scope, tool, runtime_id, cwd, session_key)
);
"""
_COLUMNS = (
    "id, status, session_id, call_id, tool, input, reason, runtime_id, agent_id, session_key, "
    "owner_pid, owner_start, decision, created_ms, decided_ms"
)
T = TypeVar("T")


@attrs.frozen
class ApprovalEntry:
    """One approval in the book: the call, where it runs, and its decision once there is one."""

    id: str
    status: ApprovalStatus
    session_id: str
    call_id: str
    tool: str
    input: Any
    reason: str | None
    runtime_id: str | None
    agent_id: str | None
    session_key: str | None
    """The orchestrator's session key of the run (``runtime:native:task:…``): its event-log
    sessions name the run to resume."""
    owner: ProcessIdentity | None
    """The process that last waited on it (alive: it takes the decision itself)."""
    decision: ApprovalDecision | None
    created_ms: int
    decided_ms: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "tool": self.tool,
            "input": self.input,
            "reason": self.reason,
            "callId": self.call_id,
            "session": self.session_id,
            "run": self.session_key or "",
            "runtime": self.runtime_id,
            "waiting": self.owner is not None and self.owner.alive(),
            "createdMs": self.created_ms,
            "decision": None if self.decision is None else self.decision.to_json(),
        }


def _entry(row: tuple[Any, ...]) -> ApprovalEntry:
    (id_, status, sid, cid, tool, inp, reason, rt, agent, skey, pid, start, dec, cms, dms) = row
    decision = None if dec is None else as_decision(cast(Mapping[str, Any], json.loads(dec)))
    owner = None if pid is None else ProcessIdentity(int(pid), None if start is None else start)
    return ApprovalEntry(
        id_,
        status,
        sid,
        cid,
        tool,
        _loads(inp),
        reason,
        rt,
        agent,
        skey,
        owner,
        decision,
        cms,
        dms,
    )


def _loads(text: str) -> Any:
    """A stored input (redacted: a pattern that ate a quote leaves the text as it is)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@attrs.define(eq=False)
class ApprovalBook:
    """The durable approvals of a state directory (see the module docstring).

    Every call opens its own short SQLite connection in a worker thread: processes share the
    file, and nothing blocks the trio loop."""

    path: Path = attrs.field(converter=Path)
    poll_s: float = 0.25
    """How often a waiting run looks for its decision."""

    @classmethod
    def in_state_dir(cls, state_dir: str | os.PathLike[str]) -> ApprovalBook:
        return cls(Path(state_dir) / APPROVALS_DB)

    async def _db(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        path = self.path

        def work() -> T:
            conn = sqlite3.connect(path, timeout=30, isolation_level=None)
            try:
                conn.executescript(_SCHEMA)
                return fn(conn)
            finally:
                conn.close()

        if not path.exists():
            await trio.to_thread.run_sync(lambda: _create_private(path))
        return await trio.to_thread.run_sync(work)

    # -- the handler a run waits in --------------------------------------------------------------

    def handler(
        self, *, runtime_id: str = "", agent_id: str = "", session_key: str = "", cwd: str = ""
    ) -> BookHandler:
        """An approval handler for one run: its calls wait in the book."""
        return BookHandler(self, RunInfo(runtime_id, agent_id, session_key, cwd))

    async def wait(self, request: ApprovalRequest, run: RunInfo | None = None) -> ApprovalDecision:
        """Record ``request`` as pending (or take over its pending entry) and wait for its
        decision; an entry already decided (a resumed run) answers at once. A cancel while
        waiting marks it ``cancelled``."""
        entry = await self.record(request, run)
        try:
            while entry.decision is None:
                await trio.sleep(self.poll_s)
                found = await self.get(request.id)
                if found is None:  # the book was cleared under us: fail closed
                    return reject("The approval request was withdrawn.")
                entry = found
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._set_status(request.id, "cancelled", only_pending=True)
            raise
        return entry.decision

    async def record(self, request: ApprovalRequest, run: RunInfo | None = None) -> ApprovalEntry:
        """``request`` as a pending entry owned by this process (an entry already there is
        taken over, and a cancelled one is pending again; a decided one stays decided)."""
        me = ProcessIdentity.current()
        run = run or RunInfo()
        values = (
            request.id,
            request.session_id,
            request.call_id,
            request.tool_name,
            redact_text(json.dumps(request.tool_input, default=str)),
            request.reason,
            run.runtime_id or None,
            run.agent_id or None,
            run.session_key or None,
            me.pid,
            me.start,
            _now_ms(),
        )

        def register(conn: sqlite3.Connection) -> ApprovalEntry:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    f"INSERT INTO approvals ({_COLUMNS}) "
                    "VALUES (?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL) "
                    "ON CONFLICT (id) DO UPDATE SET owner_pid = excluded.owner_pid, "
                    "owner_start = excluded.owner_start, status = CASE status "
                    "WHEN 'cancelled' THEN 'pending' ELSE status END",
                    values,
                )
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (request.id,)
                ).fetchone()
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return _entry(row)

        return await self._db(register)

    # -- reading and deciding -------------------------------------------------------------------

    async def get(self, approval_id: str) -> ApprovalEntry | None:
        def query(conn: sqlite3.Connection) -> ApprovalEntry | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (approval_id,)
            ).fetchone()
            return None if row is None else _entry(row)

        return await self._db(query)

    async def pending(self) -> list[ApprovalEntry]:
        """The entries waiting for a decision, oldest first."""

        def query(conn: sqlite3.Connection) -> list[ApprovalEntry]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM approvals WHERE status = 'pending' ORDER BY created_ms, id"
            ).fetchall()
            return [_entry(r) for r in rows]

        return await self._db(query)

    async def entries(self) -> list[ApprovalEntry]:
        """Every entry, whatever its status, oldest first."""

        def query(conn: sqlite3.Connection) -> list[ApprovalEntry]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM approvals ORDER BY created_ms, id"
            ).fetchall()
            return [_entry(r) for r in rows]

        return await self._db(query)

    async def decide(self, approval_id: str, decision: DecisionLike) -> ApprovalEntry:
        """Record the decision of a pending entry.

        Raises:
            ConfigError: no such entry, or it is not pending (decided, or its run was aborted).
        """
        made = as_decision(decision)
        blob = json.dumps(made.to_json())
        now = _now_ms()
        status = "approved" if made.approved else "rejected"

        def update(conn: sqlite3.Connection) -> ApprovalEntry:
            done = conn.execute(
                "UPDATE approvals SET status = ?, decision = ?, decided_ms = ? "
                "WHERE id = ? AND status = 'pending'",
                (status, blob, now, approval_id),
            ).rowcount
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (approval_id,)
            ).fetchone()
            if row is None:
                raise ConfigError(f"no approval {approval_id!r} (see `ringleader approvals`)")
            entry = _entry(row)
            if not done:
                raise ConfigError(f"approval {approval_id!r} is not pending (it is {entry.status})")
            return entry

        return await self._db(update)

    # -- standing grants (a decision's scope beyond one call) ----------------------------------

    async def grant(self, tool: str, scope: DecisionScope, run: RunInfo, approval_id: str) -> None:
        """Store ``scope``'s grant of ``tool`` for ``run`` (``run``: its session key; ``always``:
        its runtime and directory). ``once`` stores nothing."""
        if scope == "once":
            await trio.lowlevel.checkpoint()
            return
        key = _grant_key(tool, scope, run)
        if key is None:
            await trio.lowlevel.checkpoint()
            return
        now = _now_ms()

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO grants (scope, tool, runtime_id, cwd, session_key, "
                "approval_id, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*key, approval_id, now),
            )

        await self._db(insert)

    async def standing(self, tool: str, run: RunInfo) -> Grant | None:
        """The grant that allows ``tool`` in ``run`` without asking, if any."""
        run_key = _grant_key(tool, "run", run)
        always_key = _grant_key(tool, "always", run)

        def query(conn: sqlite3.Connection) -> Grant | None:
            for key in (run_key, always_key):
                if key is None:
                    continue
                row = conn.execute(
                    f"SELECT {_GRANT_COLUMNS} FROM grants WHERE scope = ? AND tool = ? AND "
                    "runtime_id = ? AND cwd = ? AND session_key = ?",
                    key,
                ).fetchone()
                if row is not None:
                    return Grant(*row)
            return None

        return await self._db(query)

    async def grants(self) -> list[Grant]:
        """Every standing grant, oldest first."""

        def query(conn: sqlite3.Connection) -> list[Grant]:
            rows = conn.execute(
                f"SELECT {_GRANT_COLUMNS} FROM grants ORDER BY created_ms"
            ).fetchall()
            return [Grant(*r) for r in rows]

        return await self._db(query)

    async def revoke(self, tool: str, *, runtime_id: str | None = None) -> int:
        """Remove the grants of ``tool`` (of one runtime, when given); how many went."""

        def delete(conn: sqlite3.Connection) -> int:
            if runtime_id is None:
                return conn.execute("DELETE FROM grants WHERE tool = ?", (tool,)).rowcount
            return conn.execute(
                "DELETE FROM grants WHERE tool = ? AND runtime_id = ?", (tool, runtime_id)
            ).rowcount

        return await self._db(delete)

    async def revoke_grant(
        self, scope: DecisionScope, tool: str, runtime_id: str, cwd: str, session_key: str
    ) -> bool:
        """Remove one standing grant (its key: what :meth:`grants` lists of it); False when
        there is no such grant (revoked already)."""

        def delete(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM grants WHERE scope = ? AND tool = ? AND runtime_id = ? AND cwd = ? "
                "AND session_key = ?",
                (scope, tool, runtime_id, cwd, session_key),
            ).rowcount

        return await self._db(delete) > 0

    # -- calls that started ------------------------------------------------------------------

    async def mark_started(self, request: ApprovalRequest) -> None:
        """``request``'s call was approved and is about to run: recorded before it runs, so a
        resume after the process died never runs it again (:meth:`started`)."""
        me = os.getpid()
        values = (request.id, request.session_id, request.call_id, request.tool_name, me)

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO started (id, session_id, call_id, tool, owner_pid, "
                "started_ms) VALUES (?, ?, ?, ?, ?, ?)",
                (*values, _now_ms()),
            )

        await self._db(insert)

    async def started(self, approval_id: str) -> bool:
        """Whether the approved call ``approval_id`` started running (:meth:`mark_started`)."""

        def query(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT 1 FROM started WHERE id = ?", (approval_id,)).fetchone()
            return row is not None

        return await self._db(query)

    async def _set_status(self, approval_id: str, status: str, *, only_pending: bool) -> None:
        where = " AND status = 'pending'" if only_pending else ""

        def update(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"UPDATE approvals SET status = ? WHERE id = ?{where}", (status, approval_id)
            )

        await self._db(update)


@attrs.frozen
class RunInfo:
    """Where a run that waits in the book runs: enough for ``ringleader approve`` to resume it."""

    runtime_id: str = ""
    agent_id: str = ""
    session_key: str = ""
    """The orchestrator's session key (``runtime:native:task:…``)."""
    cwd: str = ""
    """The run's working directory (where an ``always`` grant applies)."""


_GRANT_COLUMNS: Final = "scope, tool, runtime_id, cwd, session_key, approval_id, created_ms"


@attrs.frozen
class Grant:
    """A standing approval: ``tool`` runs without asking, for the rest of one run (``run``:
    :attr:`session_key`) or on one runtime in one directory (``always``: :attr:`cwd`)."""

    scope: DecisionScope
    tool: str
    runtime_id: str
    cwd: str
    session_key: str
    approval_id: str | None
    created_ms: int

    def describe(self) -> str:
        if self.scope == "run":
            return f"for the rest of run {self.session_key}"
        return f"always on {self.runtime_id} in {self.cwd}"

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "tool": self.tool,
            "runtime": self.runtime_id,
            "cwd": self.cwd or None,
            "run": self.session_key or None,
            "approval": self.approval_id,
            "createdMs": self.created_ms,
        }


def _grant_key(tool: str, scope: DecisionScope, run: RunInfo) -> tuple[str, ...] | None:
    """The grant's primary key, or ``None`` when the run lacks what the scope is keyed on."""
    if scope == "run" and run.session_key:
        return ("run", tool, run.runtime_id, "", run.session_key)
    if scope == "always" and run.cwd and run.runtime_id:
        return ("always", tool, run.runtime_id, run.cwd, "")
    return None


@attrs.frozen
class BookHandler:
    """One run's approval handler on an :class:`ApprovalBook` (a :class:`RecordingHandler`:
    the entry is in the book before the run says it waits)."""

    book: ApprovalBook
    run: RunInfo = attrs.field(factory=RunInfo)

    async def record(self, request: ApprovalRequest) -> None:
        await self.book.record(request, self.run)

    async def standing(self, request: ApprovalRequest) -> ApprovalDecision | None:
        """An approval from a standing grant (see :data:`DecisionScope`), else ``None`` (ask)."""
        grant = await self.book.standing(request.tool_name, self.run)
        if grant is None:
            return None
        return approve(f"allowed {grant.describe()} ({grant.approval_id or 'a grant'})")

    async def mark_started(self, request: ApprovalRequest) -> None:
        """The approved call is about to run (see :meth:`ApprovalBook.mark_started`)."""
        await self.book.mark_started(request)

    async def started(self, request: ApprovalRequest) -> bool:
        """Whether the call had started running before (a resumed run must not re-run it)."""
        return await self.book.started(request.id)

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        decision = await self.book.wait(request, self.run)
        if decision.approved and decision.scope != "once":
            await self.book.grant(request.tool_name, decision.scope, self.run, request.id)
        return decision


def _create_private(path: Path) -> None:
    """The book's file, created 0600 (tool inputs may be private)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
