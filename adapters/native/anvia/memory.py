"""Session memory for the Anvia agent: the store protocol, two stores, and the save policies.

An :class:`AgentMemory` keeps transcripts per :class:`MemoryContext` (``session_id`` plus an
optional ``user_id``): ``load``, ``append({run_id, turn, messages})``, ``clear`` and
``record_error``. :class:`InMemoryAgentMemory` keeps them in the process;
:class:`SqliteAgentMemory` in a SQLite file (Anvia's ``memory-sqlite`` schema: sessions,
messages with run id, turn and position, errors), every call in a worker thread.

Save policies (Anvia's, default ``message``), applied by :class:`MemoryWriter` at the run's one
choke point, the run store's ``append_messages``:

* ``message`` — each message as it is produced: the prompt at run start, each reply, each tool
  message, steers. An assistant message that calls tools is written **together with its tool
  results** (never a ``tool_use`` without its result; Anvia 0.26 writes it first — B.20 #7);
* ``turn`` — a turn's messages (prompt or steers, the reply, its tool results) once the turn is
  complete: earlier complete turns survive a later failure;
* ``run`` — every new message once the run completed; a failed or cancelled run writes nothing.

A failed or cancelled run calls ``record_error`` with the run's new messages, whatever the policy.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, runtime_checkable

import attrs
import trio

from adapters.native.messages import Message, messages_from_json, messages_to_json
from orchestrator.core.errors import redact_secrets

__all__ = [
    "AgentMemory",
    "InMemoryAgentMemory",
    "MemoryContext",
    "MemoryWriter",
    "RecordedError",
    "SavePolicy",
    "SqliteAgentMemory",
]

SavePolicy: TypeAlias = Literal["message", "turn", "run"]
SAVE_POLICIES: tuple[SavePolicy, ...] = ("message", "turn", "run")
T = TypeVar("T")


@attrs.frozen
class MemoryContext:
    session_id: str
    user_id: str | None = None
    metadata: Mapping[str, Any] | None = None

    @property
    def scope_key(self) -> str:
        """What identifies the transcript: the session id and the user id."""
        return json.dumps([self.session_id, self.user_id])


@attrs.frozen
class RecordedError:
    """What ``record_error`` keeps: the run, the error's type and (redacted) text, the messages."""

    run_id: str
    error_type: str
    error: str
    messages: tuple[Message, ...]


@runtime_checkable
class AgentMemory(Protocol):
    async def load(self, context: MemoryContext) -> list[Message]: ...
    async def append(
        self, context: MemoryContext, run_id: str, turn: int, messages: Sequence[Message]
    ) -> None: ...
    async def clear(self, context: MemoryContext) -> None: ...
    async def record_error(
        self,
        context: MemoryContext,
        run_id: str,
        error: BaseException,
        messages: Sequence[Message],
    ) -> None: ...


def _recorded(run_id: str, error: BaseException, messages: Sequence[Message]) -> RecordedError:
    return RecordedError(run_id, type(error).__name__, redact_secrets(str(error)), tuple(messages))


class InMemoryAgentMemory:
    """Transcripts in the process (tests, short-lived apps)."""

    def __init__(self) -> None:
        self._rows: dict[str, list[tuple[str, int, Message]]] = {}
        self.errors: dict[str, list[RecordedError]] = {}

    async def load(self, context: MemoryContext) -> list[Message]:
        await trio.lowlevel.checkpoint()
        return [m for _, _, m in self._rows.get(context.scope_key, ())]

    async def append(
        self, context: MemoryContext, run_id: str, turn: int, messages: Sequence[Message]
    ) -> None:
        await trio.lowlevel.checkpoint()
        rows = self._rows.setdefault(context.scope_key, [])
        rows.extend((run_id, turn, m) for m in messages)

    async def rows(self, context: MemoryContext) -> list[tuple[str, int, Message]]:
        """Every stored message with its run id and turn (inspection)."""
        await trio.lowlevel.checkpoint()
        return list(self._rows.get(context.scope_key, ()))

    async def clear(self, context: MemoryContext) -> None:
        await trio.lowlevel.checkpoint()
        self._rows.pop(context.scope_key, None)
        self.errors.pop(context.scope_key, None)

    async def record_error(
        self,
        context: MemoryContext,
        run_id: str,
        error: BaseException,
        messages: Sequence[Message],
    ) -> None:
        await trio.lowlevel.checkpoint()
        self.errors.setdefault(context.scope_key, []).append(_recorded(run_id, error, messages))


_SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA foreign_keys=ON;
CREATE TABLE IF NOT EXISTS agent_memory_sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scope_key TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL,
  user_id TEXT,
  metadata_json TEXT,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS agent_memory_messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id INTEGER NOT NULL REFERENCES agent_memory_sessions(id) ON DELETE CASCADE,
  run_id TEXT NOT NULL,
  turn INTEGER NOT NULL,
  position INTEGER NOT NULL,
  role TEXT NOT NULL,
  message_json TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  UNIQUE (memory_session_id, position)
);
CREATE TABLE IF NOT EXISTS agent_memory_errors (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id INTEGER NOT NULL REFERENCES agent_memory_sessions(id) ON DELETE CASCADE,
  run_id TEXT NOT NULL,
  error_type TEXT NOT NULL,
  error TEXT NOT NULL,
  messages_json TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
"""


class SqliteAgentMemory:
    """Transcripts in a SQLite file; many sessions per file, safe across processes (WAL)."""

    def __init__(self, path: str | Path) -> None:
        self._path = str(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = trio.Lock()

    async def _db(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        async with self._lock:
            if self._conn is None:
                self._conn = await trio.to_thread.run_sync(self._open)
            conn = self._conn
            return await trio.to_thread.run_sync(lambda: fn(conn))

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        conn.executescript(_SCHEMA)
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @staticmethod
    def _session_row(conn: sqlite3.Connection, context: MemoryContext, create: bool) -> int | None:
        row = conn.execute(
            "SELECT id FROM agent_memory_sessions WHERE scope_key = ?", (context.scope_key,)
        ).fetchone()
        if row is not None or not create:
            return None if row is None else int(row[0])
        meta = json.dumps(dict(context.metadata)) if context.metadata is not None else None
        cur = conn.execute(
            "INSERT INTO agent_memory_sessions (scope_key, session_id, user_id, metadata_json) "
            "VALUES (?, ?, ?, ?)",
            (context.scope_key, context.session_id, context.user_id, meta),
        )
        return int(cur.lastrowid or 0)

    async def load(self, context: MemoryContext) -> list[Message]:
        def read(conn: sqlite3.Connection) -> list[str]:
            sid = self._session_row(conn, context, create=False)
            if sid is None:
                return []
            rows = conn.execute(
                "SELECT message_json FROM agent_memory_messages WHERE memory_session_id = ? "
                "ORDER BY position",
                (sid,),
            ).fetchall()
            return [str(r[0]) for r in rows]

        blobs = await self._db(read)
        return messages_from_json("[" + ",".join(blobs) + "]") if blobs else []

    async def rows(self, context: MemoryContext) -> list[tuple[str, int, Message]]:
        """Every stored message with its run id and turn (inspection)."""

        def read(conn: sqlite3.Connection) -> list[tuple[str, int, str]]:
            sid = self._session_row(conn, context, create=False)
            if sid is None:
                return []
            rows = conn.execute(
                "SELECT run_id, turn, message_json FROM agent_memory_messages "
                "WHERE memory_session_id = ? ORDER BY position",
                (sid,),
            ).fetchall()
            return [(str(r[0]), int(r[1]), str(r[2])) for r in rows]

        return [
            (run, turn, messages_from_json(f"[{m}]")[0]) for run, turn, m in await self._db(read)
        ]

    async def append(
        self, context: MemoryContext, run_id: str, turn: int, messages: Sequence[Message]
    ) -> None:
        if not messages:
            return
        blobs = [messages_to_json([m])[1:-1] for m in messages]
        roles = [m.sender for m in messages]

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                sid = self._session_row(conn, context, create=True)
                (last,) = conn.execute(
                    "SELECT COALESCE(MAX(position), -1) FROM agent_memory_messages "
                    "WHERE memory_session_id = ?",
                    (sid,),
                ).fetchone()
                conn.executemany(
                    "INSERT INTO agent_memory_messages "
                    "(memory_session_id, run_id, turn, position, role, message_json) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (sid, run_id, turn, int(last) + 1 + i, roles[i], blob)
                        for i, blob in enumerate(blobs)
                    ],
                )
                conn.execute(
                    "UPDATE agent_memory_sessions SET updated_at = CURRENT_TIMESTAMP WHERE id = ?",
                    (sid,),
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

        await self._db(write)

    async def clear(self, context: MemoryContext) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            conn.execute(
                "DELETE FROM agent_memory_sessions WHERE scope_key = ?", (context.scope_key,)
            )

        await self._db(delete)

    async def record_error(
        self,
        context: MemoryContext,
        run_id: str,
        error: BaseException,
        messages: Sequence[Message],
    ) -> None:
        rec = _recorded(run_id, error, messages)
        body = messages_to_json(rec.messages)

        def write(conn: sqlite3.Connection) -> None:
            sid = self._session_row(conn, context, create=True)
            conn.execute(
                "INSERT INTO agent_memory_errors "
                "(memory_session_id, run_id, error_type, error, messages_json) "
                "VALUES (?, ?, ?, ?, ?)",
                (sid, rec.run_id, rec.error_type, rec.error, body),
            )

        await self._db(write)

    async def errors(self, context: MemoryContext) -> list[RecordedError]:
        """The recorded errors of a session, oldest first (inspection)."""

        def read(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
            sid = self._session_row(conn, context, create=False)
            if sid is None:
                return []
            rows = conn.execute(
                "SELECT run_id, error_type, error, messages_json FROM agent_memory_errors "
                "WHERE memory_session_id = ? ORDER BY id",
                (sid,),
            ).fetchall()
            return [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]

        return [
            RecordedError(run, kind, text, tuple(messages_from_json(body)))
            for run, kind, text, body in await self._db(read)
        ]


@attrs.define
class MemoryWriter:
    """Applies one save policy to one run's messages (see the module docstring)."""

    memory: AgentMemory
    context: MemoryContext
    run_id: str
    policy: SavePolicy
    turn: int = 1
    new_messages: list[Message] = attrs.field(factory=list[Message])
    _buffer: list[Message] = attrs.field(factory=list[Message])

    async def appended(self, messages: Sequence[Message]) -> None:
        """The run store appended ``messages`` (in order)."""
        for msg in messages:
            self.new_messages.append(msg)
            turn = self.turn
            held = msg.sender == "agent" and bool(msg.tool_calls)  # until its results arrive
            ends_turn = not held and (msg.tool_results is not None or msg.sender == "agent")
            if ends_turn:
                self.turn += 1
            if self.policy == "run":
                continue
            self._buffer.append(msg)
            if not held and (self.policy == "message" or ends_turn):
                batch, self._buffer = self._buffer, []
                await self.memory.append(self.context, self.run_id, turn, batch)

    async def completed(self) -> None:
        """The run completed: the ``run`` policy writes everything now."""
        if self.policy == "run" and self.new_messages:
            await self.memory.append(
                self.context, self.run_id, max(1, self.turn - 1), self.new_messages
            )

    async def failed(self, error: BaseException) -> None:
        """The run failed or was cancelled: record it (incomplete turns are not written)."""
        await self.memory.record_error(self.context, self.run_id, error, self.new_messages)
