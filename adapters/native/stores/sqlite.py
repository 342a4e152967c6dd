"""A SQLite store (stdlib ``sqlite3``): durable sessions, every capability.

Every database call runs in ``trio.to_thread.run_sync`` (one connection per store, serialized by
a lock), so the trio loop never blocks on disk. Messages are stored whole as JSON, so every flag
(``is_compaction`` …) survives a reload — the glove-sqlite bug that made compaction invisible
after a restart is not repeated. The history is cached in memory after the first read (one
active run per session); inbox reads always go to the database, so an item resolved from another
process (:func:`resolve_inbox_item`) is seen by the next request.
"""

from __future__ import annotations

import datetime as _dt
import sqlite3
import uuid
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import trio

from adapters.native.messages import InboxItem, Message, PermissionStatus, Task, TokenCounter

from .base import Store, StoreCapabilities, permission_key

__all__ = ["SqliteStore", "list_inbox_items", "list_sessions", "resolve_inbox_item"]

T = TypeVar("T")

_ALL = StoreCapabilities(tasks=True, permissions=True, inbox=True, sub_stores=True)

_SCHEMA = """
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS sessions (
  session_id TEXT PRIMARY KEY,
  tokens_in INTEGER NOT NULL DEFAULT 0,
  tokens_out INTEGER NOT NULL DEFAULT 0,
  cache_read INTEGER NOT NULL DEFAULT 0,
  cache_write INTEGER NOT NULL DEFAULT 0,
  turn_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  is_compaction INTEGER NOT NULL DEFAULT 0,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, id);
CREATE TABLE IF NOT EXISTS tasks (
  session_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  id TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (session_id, id)
);
CREATE TABLE IF NOT EXISTS permissions (
  session_id TEXT NOT NULL,
  key TEXT NOT NULL,
  status TEXT NOT NULL,
  PRIMARY KEY (session_id, key)
);
CREATE TABLE IF NOT EXISTS inbox (
  session_id TEXT NOT NULL,
  id TEXT NOT NULL,
  position INTEGER NOT NULL,
  body TEXT NOT NULL,
  status TEXT NOT NULL,
  PRIMARY KEY (session_id, id)
);
CREATE INDEX IF NOT EXISTS inbox_status ON inbox(session_id, status);
"""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Generator[None, None, None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.executescript(_SCHEMA)
    return conn


class SqliteStore:
    """One session in a SQLite database file (see the module docstring)."""

    def __init__(self, path: str | Path, session_id: str | None = None) -> None:
        self._path = str(path)
        self._id = session_id or f"native-{uuid.uuid4().hex[:12]}"
        self._conn: sqlite3.Connection | None = None
        self._lock = trio.Lock()
        self._cache: list[Message] | None = None
        self._compaction_at = 0

    @property
    def identifier(self) -> str:
        return self._id

    @property
    def path(self) -> str:
        return self._path

    @property
    def capabilities(self) -> StoreCapabilities:
        return _ALL

    async def _db(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        async with self._lock:

            def work() -> T:
                if self._conn is None:
                    self._conn = _connect(self._path)
                    self._conn.execute(
                        "INSERT OR IGNORE INTO sessions(session_id, created_at) VALUES (?, ?)",
                        (self._id, _now()),
                    )
                return fn(self._conn)

            return await trio.to_thread.run_sync(work)

    async def aclose(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                await trio.to_thread.run_sync(conn.close)

    # -- messages ------------------------------------------------------------------------------

    async def _messages(self) -> list[Message]:
        if self._cache is None:
            rows = await self._db(
                lambda c: c.execute(
                    "SELECT body FROM messages WHERE session_id=? ORDER BY id", (self._id,)
                ).fetchall()
            )
            cache = [Message.model_validate_json(r[0]) for r in rows]
            self._compaction_at = max(
                (i for i, m in enumerate(cache) if m.is_compaction), default=0
            )
            self._cache = cache
        return self._cache

    async def get_messages(self) -> Sequence[Message]:
        return tuple(await self._messages())

    async def get_context_messages(self) -> Sequence[Message]:
        messages = await self._messages()
        return messages[self._compaction_at :]

    async def append_messages(self, messages: Sequence[Message]) -> None:
        cache = await self._messages()
        rows = [
            (self._id, int(m.is_compaction), m.model_dump_json(exclude_defaults=True))
            for m in messages
        ]

        def write(c: sqlite3.Connection) -> None:
            with _transaction(c):
                c.executemany(
                    "INSERT INTO messages(session_id, is_compaction, body) VALUES (?, ?, ?)", rows
                )

        await self._db(write)
        for m in messages:
            if m.is_compaction:
                self._compaction_at = len(cache)
            cache.append(m)

    # -- counters ----------------------------------------------------------------------------

    async def _counters(self) -> tuple[int, int, int, int, int]:
        row = await self._db(
            lambda c: c.execute(
                "SELECT tokens_in, tokens_out, cache_read, cache_write, turn_count "
                "FROM sessions WHERE session_id=?",
                (self._id,),
            ).fetchone()
        )
        return tuple(row) if row else (0, 0, 0, 0, 0)

    async def get_token_count(self) -> int:
        t_in, t_out, *_ = await self._counters()
        return t_in + t_out

    async def get_token_consumption(self) -> TokenCounter:
        t_in, t_out, read, write, _ = await self._counters()
        return TokenCounter(
            tokens_in=t_in,
            tokens_out=t_out,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=write,
        )

    async def add_tokens(self, counter: TokenCounter) -> None:
        await self._db(
            lambda c: c.execute(
                "UPDATE sessions SET tokens_in=tokens_in+?, tokens_out=tokens_out+?, "
                "cache_read=cache_read+?, cache_write=cache_write+? WHERE session_id=?",
                (
                    counter.tokens_in,
                    counter.tokens_out,
                    counter.cache_read_input_tokens,
                    counter.cache_creation_input_tokens,
                    self._id,
                ),
            )
        )

    async def get_turn_count(self) -> int:
        return (await self._counters())[4]

    async def increment_turn(self) -> None:
        await self._db(
            lambda c: c.execute(
                "UPDATE sessions SET turn_count=turn_count+1 WHERE session_id=?", (self._id,)
            )
        )

    async def reset_counters(self) -> None:
        await self._db(
            lambda c: c.execute(
                "UPDATE sessions SET tokens_in=0, tokens_out=0, cache_read=0, cache_write=0, "
                "turn_count=0 WHERE session_id=?",
                (self._id,),
            )
        )

    # -- tasks ---------------------------------------------------------------------------------

    async def get_tasks(self) -> list[Task]:
        rows = await self._db(
            lambda c: c.execute(
                "SELECT body FROM tasks WHERE session_id=? ORDER BY position", (self._id,)
            ).fetchall()
        )
        return [Task.model_validate_json(r[0]) for r in rows]

    async def set_tasks(self, tasks: Sequence[Task]) -> None:
        rows = [(self._id, i, t.id, t.model_dump_json()) for i, t in enumerate(tasks)]

        def write(c: sqlite3.Connection) -> None:
            with _transaction(c):
                c.execute("DELETE FROM tasks WHERE session_id=?", (self._id,))
                c.executemany(
                    "INSERT INTO tasks(session_id, position, id, body) VALUES (?, ?, ?, ?)", rows
                )

        await self._db(write)

    async def update_task(self, task_id: str, **changes: Any) -> None:
        tasks = await self.get_tasks()
        await self.set_tasks(
            [t.model_copy(update=changes) if t.id == task_id else t for t in tasks]
        )

    # -- permissions -------------------------------------------------------------------------

    async def get_permission(self, tool_name: str, input: Any = None) -> PermissionStatus:
        key = permission_key(tool_name, input)
        row = await self._db(
            lambda c: c.execute(
                "SELECT status FROM permissions WHERE session_id=? AND key=?", (self._id, key)
            ).fetchone()
        )
        if row is None or row[0] not in ("granted", "denied"):
            return "unset"
        return "granted" if row[0] == "granted" else "denied"

    async def set_permission(
        self, tool_name: str, status: PermissionStatus, input: Any = None
    ) -> None:
        key = permission_key(tool_name, input)
        await self._db(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO permissions(session_id, key, status) VALUES (?, ?, ?)",
                (self._id, key, status),
            )
        )

    # -- inbox ---------------------------------------------------------------------------------

    async def get_inbox_items(self) -> list[InboxItem]:
        rows = await self._db(
            lambda c: c.execute(
                "SELECT body FROM inbox WHERE session_id=? ORDER BY position", (self._id,)
            ).fetchall()
        )
        return [InboxItem.model_validate_json(r[0]) for r in rows]

    async def add_inbox_item(self, item: InboxItem) -> None:
        def write(c: sqlite3.Connection) -> None:
            with _transaction(c):
                (pos,) = c.execute(
                    "SELECT COALESCE(MAX(position), -1) + 1 FROM inbox WHERE session_id=?",
                    (self._id,),
                ).fetchone()
                c.execute(
                    "INSERT OR REPLACE INTO inbox(session_id, id, position, body, status) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (self._id, item.id, pos, item.model_dump_json(), item.status),
                )

        await self._db(write)

    async def update_inbox_item(self, item_id: str, **changes: Any) -> None:
        sid = self._id

        def write(c: sqlite3.Connection) -> None:
            with _transaction(c):
                _update_item(c, sid, item_id, changes)

        await self._db(write)

    async def get_resolved_inbox_items(self) -> list[InboxItem]:
        return [i for i in await self.get_inbox_items() if i.status == "resolved"]

    # -- sub-agent stores ----------------------------------------------------------------------

    async def create_sub_store(self, namespace: str, durable: bool = False) -> Store:
        await trio.lowlevel.checkpoint()
        suffix = namespace if durable else f"{namespace}_{uuid.uuid4().hex[:8]}"
        return SqliteStore(self._path, f"{self._id}__{suffix}")


def _update_item(c: sqlite3.Connection, sid: str, item_id: str, changes: dict[str, Any]) -> bool:
    row = c.execute("SELECT body FROM inbox WHERE session_id=? AND id=?", (sid, item_id)).fetchone()
    if row is None:
        return False
    item = InboxItem.model_validate_json(row[0]).model_copy(update=changes)
    c.execute(
        "UPDATE inbox SET body=?, status=? WHERE session_id=? AND id=?",
        (item.model_dump_json(), item.status, sid, item_id),
    )
    return True


def resolve_inbox_item(path: str | Path, session_id: str, item_id: str, response: str) -> bool:
    """Resolve a *pending* inbox item from anywhere (another process included); blocking I/O.

    Returns whether an item changed. The next request of that session injects it.
    """
    conn = _connect(str(path))
    try:
        with _transaction(conn):
            row = conn.execute(
                "SELECT status FROM inbox WHERE session_id=? AND id=?", (session_id, item_id)
            ).fetchone()
            if row is None or row[0] != "pending":
                return False
            return _update_item(
                conn,
                session_id,
                item_id,
                {"status": "resolved", "response": response, "resolved_at": _now()},
            )
    finally:
        conn.close()


def list_sessions(path: str | Path) -> list[str]:
    """Session ids in a database file, oldest first (blocking I/O)."""
    conn = _connect(str(path))
    try:
        rows = conn.execute("SELECT session_id FROM sessions ORDER BY created_at, rowid").fetchall()
        return [str(r[0]) for r in rows]
    finally:
        conn.close()


def list_inbox_items(
    path: str | Path, session_id: str | None = None
) -> list[tuple[str, InboxItem]]:
    """``(session id, item)`` for every inbox item in a database file (one session's when
    ``session_id`` is given), each session's in posting order (blocking I/O)."""
    conn = _connect(str(path))
    try:
        query = "SELECT session_id, body FROM inbox"
        params: tuple[str, ...] = ()
        if session_id is not None:
            query += " WHERE session_id=?"
            params = (session_id,)
        rows = conn.execute(query + " ORDER BY session_id, position", params).fetchall()
        return [(str(r[0]), InboxItem.model_validate_json(r[1])) for r in rows]
    finally:
        conn.close()
