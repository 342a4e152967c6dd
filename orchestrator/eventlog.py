"""The durable event log: every event is in SQLite before any subscriber sees it.

SQLite in WAL mode (stdlib :mod:`sqlite3`), one connection used from worker threads one call at a
time (``trio.to_thread`` behind a capacity limiter of 1), so the trio loop never blocks on disk.
``synchronous=NORMAL`` under WAL keeps every committed transaction across a crash of *this
process* (an OS crash may lose the last few); each :meth:`EventLog.append` is one transaction.

Tables: ``events`` (a global id ``gid`` — the feed's resume cursor — run key, seq, kind, ts,
wire JSON), ``runs`` (runtime, session key, status, times, final outcome) and ``sessions``
(runtime, native session id, codec blob and the *origin working directory* a resume must run
from).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

from .events import RuntimeEvent, event_from_json, event_to_json, now_ms

__all__ = ["EventLog", "LoggedEvent", "RunRow", "SessionRow"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    gid INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ts INTEGER NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (run_key, seq)
);
CREATE TABLE IF NOT EXISTS runs (
    run_key TEXT PRIMARY KEY,
    runtime_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    status TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    ended_ms INTEGER,
    outcome TEXT
);
CREATE TABLE IF NOT EXISTS sessions (
    session_key TEXT PRIMARY KEY,
    runtime_id TEXT NOT NULL,
    native_session_id TEXT,
    codec_blob TEXT,
    origin_cwd TEXT,
    updated_ms INTEGER NOT NULL
);
"""


@attrs.frozen
class LoggedEvent:
    gid: int
    """The log's global, increasing id (the SSE feed's ``id:``)."""
    run_key: str
    event: RuntimeEvent


@attrs.frozen
class RunRow:
    run_key: str
    runtime_id: str
    session_key: str
    status: str
    started_ms: int
    ended_ms: int | None
    outcome: dict[str, Any] | None


@attrs.frozen
class SessionRow:
    session_key: str
    runtime_id: str
    native_session_id: str | None
    codec_blob: str | None
    origin_cwd: str | None
    updated_ms: int


@attrs.define(eq=False)
class EventLog:
    """Open with ``async with EventLog.open(path) as log``."""

    path: Path
    _conn: sqlite3.Connection = attrs.field(alias="conn")
    _limiter: trio.CapacityLimiter = attrs.field(
        factory=lambda: trio.CapacityLimiter(1), alias="limiter"
    )
    clock: Callable[[], int] = now_ms

    @classmethod
    @asynccontextmanager
    async def open(cls, path: str | Path) -> AsyncGenerator[EventLog]:
        target = Path(path)

        def connect() -> sqlite3.Connection:
            target.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            return conn

        conn = await trio.to_thread.run_sync(connect)
        log = cls(path=target, conn=conn)
        try:
            yield log
        finally:
            with trio.CancelScope(shield=True):
                await log._call(conn.close)

    async def _call(self, fn: Callable[[], T]) -> T:
        return await trio.to_thread.run_sync(fn, limiter=self._limiter)

    # -- events ----------------------------------------------------------------------------------

    async def append(self, run_key: str, events: Sequence[RuntimeEvent]) -> list[int]:
        """Write ``events`` in one transaction; returns their global ids once committed."""
        rows = [(run_key, e.seq, e.kind, e.ts, event_to_json(e)) for e in events]
        conn = self._conn

        def write() -> list[int]:
            cur = conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                gids: list[int] = []
                for row in rows:
                    cur.execute(
                        "INSERT INTO events (run_key, seq, kind, ts, body) VALUES (?, ?, ?, ?, ?)",
                        row,
                    )
                    gids.append(int(cur.lastrowid or 0))
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            return gids

        return await self._call(write)

    async def read(self, run_key: str, *, after_seq: int = 0) -> list[RuntimeEvent]:
        """A run's events with ``seq > after_seq``, in order."""
        conn = self._conn

        def query() -> list[str]:
            cur = conn.execute(
                "SELECT body FROM events WHERE run_key = ? AND seq > ? ORDER BY seq",
                (run_key, after_seq),
            )
            return [str(r[0]) for r in cur.fetchall()]

        return [event_from_json(body) for body in await self._call(query)]

    async def read_since(self, gid: int, *, limit: int = 10_000) -> list[LoggedEvent]:
        """Events of every run with a global id above ``gid`` (for feed resume), in order."""
        conn = self._conn

        def query() -> list[tuple[int, str, str]]:
            cur = conn.execute(
                "SELECT gid, run_key, body FROM events WHERE gid > ? ORDER BY gid LIMIT ?",
                (gid, limit),
            )
            return [(int(r[0]), str(r[1]), str(r[2])) for r in cur.fetchall()]

        return [LoggedEvent(g, k, event_from_json(b)) for g, k, b in await self._call(query)]

    async def last_gid(self) -> int:
        conn = self._conn
        return await self._call(
            lambda: int(conn.execute("SELECT COALESCE(MAX(gid), 0) FROM events").fetchone()[0])
        )

    # -- runs ----------------------------------------------------------------------------------

    async def start_run(self, run_key: str, *, runtime_id: str, session_key: str) -> None:
        conn, now = self._conn, self.clock()
        await self._call(
            lambda: conn.execute(
                "INSERT OR REPLACE INTO runs (run_key, runtime_id, session_key, status, started_ms) "
                "VALUES (?, ?, ?, 'running', ?)",
                (run_key, runtime_id, session_key, now),
            )
        )

    async def finish_run(self, run_key: str, *, status: str, outcome: dict[str, Any]) -> None:
        conn, now, body = self._conn, self.clock(), json.dumps(outcome)
        await self._call(
            lambda: conn.execute(
                "UPDATE runs SET status = ?, ended_ms = ?, outcome = ? WHERE run_key = ?",
                (status, now, body, run_key),
            )
        )

    async def runs(self) -> list[RunRow]:
        conn = self._conn

        def query() -> list[RunRow]:
            cur = conn.execute(
                "SELECT run_key, runtime_id, session_key, status, started_ms, ended_ms, outcome "
                "FROM runs ORDER BY started_ms, run_key"
            )
            return [
                RunRow(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]) if r[6] else None)
                for r in cur.fetchall()
            ]

        return await self._call(query)

    # -- sessions --------------------------------------------------------------------------------

    async def record_session(
        self,
        session_key: str,
        *,
        runtime_id: str,
        native_session_id: str | None,
        codec_blob: str | None,
        origin_cwd: str | None,
    ) -> None:
        conn, now = self._conn, self.clock()
        await self._call(
            lambda: conn.execute(
                "INSERT OR REPLACE INTO sessions (session_key, runtime_id, native_session_id, "
                "codec_blob, origin_cwd, updated_ms) VALUES (?, ?, ?, ?, ?, ?)",
                (session_key, runtime_id, native_session_id, codec_blob, origin_cwd, now),
            )
        )

    async def get_session(self, session_key: str) -> SessionRow | None:
        conn = self._conn

        def query() -> SessionRow | None:
            row = conn.execute(
                "SELECT session_key, runtime_id, native_session_id, codec_blob, origin_cwd, updated_ms "
                "FROM sessions WHERE session_key = ?",
                (session_key,),
            ).fetchone()
            return SessionRow(*row) if row else None

        return await self._call(query)
