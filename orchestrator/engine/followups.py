"""Follow-ups: messages a person sends to a run (``ringleader say RUN "text"``, the board's
message box), durably queued in the state directory (``followups.db``, SQLite) until delivered.

A message names the run's *session key* (the runs row's, shared by a task's attempts). Delivery
(:class:`~orchestrator.engine.runner.Runner` with ``followups=True``, and ``ringleader say``
itself when no process hosts the run):

* the run is live and its runtime is steerable (Claude Code long-lived, Codex app-server,
  native): the process hosting it steers the message in at once (it polls the book);
* otherwise it stays queued, and when the current run ends the hosting process delivers every
  queued message of the session as the next turn on the same session, in order, in one turn;
* no process hosts the run (it ended, or its process is gone): ``ringleader say`` resumes the
  session with the queued messages itself.

Until then a message can be listed, edited or withdrawn. :meth:`FollowupBook.take` marks the
messages it returns delivered in one transaction, so two processes never deliver one twice.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, TypeVar

import attrs
import trio

from orchestrator.core.errors import ConfigError

__all__ = ["FOLLOWUPS_DB", "Followup", "FollowupBook", "FollowupStatus", "joined"]

FOLLOWUPS_DB: Final = "followups.db"
FollowupStatus: TypeAlias = Literal["queued", "delivered", "withdrawn"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS followups (
    id TEXT PRIMARY KEY,
    session_key TEXT NOT NULL,
    run_key TEXT NOT NULL,
    text TEXT NOT NULL,
    status TEXT NOT NULL,
    how TEXT,
    created_ms INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    delivered_ms INTEGER
);
CREATE INDEX IF NOT EXISTS followups_by_session ON followups (session_key, status, seq);
"""
_COLUMNS = "id, session_key, run_key, text, status, how, created_ms, delivered_ms"
T = TypeVar("T")


@attrs.frozen
class Followup:
    """One message to a run."""

    id: str
    session_key: str
    run_key: str
    """The run it was said to (the session's run at the time)."""
    text: str
    status: FollowupStatus
    how: str | None
    """How it was delivered: ``steer`` (into the live run) or ``turn`` (the next turn)."""
    created_ms: int
    delivered_ms: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session": self.session_key,
            "run": self.run_key,
            "text": self.text,
            "status": self.status,
            "how": self.how,
            "createdMs": self.created_ms,
            "deliveredMs": self.delivered_ms,
        }


def joined(messages: Sequence[Followup]) -> str:
    """Several queued messages as the text of one turn, in order."""
    return "\n\n".join(m.text for m in messages)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@attrs.define(eq=False)
class FollowupBook:
    """The follow-ups of a state directory (see the module docstring). Each call opens its own
    short SQLite connection in a worker thread: processes share the file."""

    path: Path = attrs.field(converter=Path)

    @classmethod
    def in_state_dir(cls, state_dir: str | os.PathLike[str]) -> FollowupBook:
        return cls(Path(state_dir) / FOLLOWUPS_DB)

    async def _db(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        path = self.path

        def work() -> T:
            if not path.exists():
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))  # messages are private
            conn = sqlite3.connect(path, timeout=30, isolation_level=None)
            try:
                conn.executescript(_SCHEMA)
                return fn(conn)
            finally:
                conn.close()

        return await trio.to_thread.run_sync(work)

    async def queue(self, session_key: str, run_key: str, text: str) -> Followup:
        """Queue ``text`` for the session (after the ones already queued)."""
        if not text.strip():
            raise ConfigError("a follow-up needs some text")
        fid = f"fu-{uuid.uuid4().hex[:10]}"
        now = _now_ms()

        def insert(conn: sqlite3.Connection) -> Followup:
            conn.execute("BEGIN IMMEDIATE")
            try:
                (seq,) = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM followups").fetchone()
                conn.execute(
                    f"INSERT INTO followups ({_COLUMNS}, seq) "
                    "VALUES (?, ?, ?, ?, 'queued', NULL, ?, NULL, ?)",
                    (fid, session_key, run_key, text, now, seq),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return Followup(fid, session_key, run_key, text, "queued", None, now, None)

        return await self._db(insert)

    async def list(
        self, session_key: str | None = None, *, queued_only: bool = True
    ) -> list[Followup]:
        """The messages (of one session, when given), in the order they were said."""
        where: list[str] = []
        params: list[str] = []
        if session_key is not None:
            where.append("session_key = ?")
            params.append(session_key)
        if queued_only:
            where.append("status = 'queued'")
        clause = f" WHERE {' AND '.join(where)}" if where else ""

        def query(conn: sqlite3.Connection) -> list[Followup]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM followups{clause} ORDER BY seq", params
            ).fetchall()
            return [Followup(*r) for r in rows]

        return await self._db(query)

    async def has_queued(self, session_key: str) -> bool:
        def query(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT 1 FROM followups WHERE session_key = ? AND status = 'queued' LIMIT 1",
                (session_key,),
            ).fetchone()
            return row is not None

        return await self._db(query)

    async def take(self, session_key: str, how: str) -> list[Followup]:
        """The session's queued messages, in order, marked delivered (``how``) at once."""
        now = _now_ms()

        def claim(conn: sqlite3.Connection) -> list[Followup]:
            conn.execute("BEGIN IMMEDIATE")
            try:
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM followups WHERE session_key = ? AND "
                    "status = 'queued' ORDER BY seq",
                    (session_key,),
                ).fetchall()
                conn.execute(
                    "UPDATE followups SET status = 'delivered', how = ?, delivered_ms = ? "
                    "WHERE session_key = ? AND status = 'queued'",
                    (how, now, session_key),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return [
                attrs.evolve(Followup(*r), status="delivered", how=how, delivered_ms=now)
                for r in rows
            ]

        return await self._db(claim)

    async def requeue(self, messages: Sequence[Followup]) -> None:
        """Put taken messages back (their delivery failed before reaching the runtime)."""
        ids = [(m.id,) for m in messages]

        def update(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "UPDATE followups SET status = 'queued', how = NULL, delivered_ms = NULL "
                "WHERE id = ? AND status = 'delivered'",
                ids,
            )

        await self._db(update)

    async def edit(self, followup_id: str, text: str) -> Followup:
        """Replace a queued message's text.

        Raises:
            ConfigError: no such message, or it was delivered or withdrawn already.
        """
        if not text.strip():
            raise ConfigError("a follow-up needs some text (withdraw it instead)")
        return await self._change(followup_id, "text = ?", (text,))

    async def withdraw(self, followup_id: str) -> Followup:
        """Withdraw a queued message (it will not be delivered)."""
        return await self._change(followup_id, "status = 'withdrawn'", ())

    async def _change(self, followup_id: str, assignment: str, params: tuple[str, ...]) -> Followup:
        def update(conn: sqlite3.Connection) -> Followup:
            done = conn.execute(
                f"UPDATE followups SET {assignment} WHERE id = ? AND status = 'queued'",
                (*params, followup_id),
            ).rowcount
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM followups WHERE id = ?", (followup_id,)
            ).fetchone()
            if row is None:
                raise ConfigError(f"no follow-up {followup_id!r} (see `ringleader say --list`)")
            found = Followup(*row)
            if not done:
                raise ConfigError(f"follow-up {followup_id!r} is {found.status}, not queued")
            return found

        return await self._db(update)
