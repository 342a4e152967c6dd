"""The durable event log: every event is in SQLite before any subscriber sees it.

Storage: SQLite in WAL mode (stdlib :mod:`sqlite3`). The **writer task owns the writing
connection**: with ``synchronous=NORMAL`` (the default) a commit is a ``write`` into the WAL with
no fsync, so the writer commits on the trio thread — a few dozen microseconds per transaction,
and no thread hand-off, which on a loaded machine costs milliseconds each way. Everything that
may block on the disk runs in **one** database thread (:class:`_DbThread`) on its own
connection: reads, and the WAL checkpoints (``PASSIVE``, every few thousand rows; automatic
checkpoints are off, so no commit ever fsyncs). With ``synchronous="FULL"`` every commit fsyncs,
so commits go to the database thread too.

Writes are **group-committed and pipelined**. :meth:`EventLog.append`, :meth:`~EventLog.start_run`,
:meth:`~EventLog.record_session` and :meth:`~EventLog.finish_run` only *queue* their rows; one
writer task takes everything queued (up to ``max_batch_rows`` event rows) and writes it in one
``BEGIN IMMEDIATE`` transaction — run and session rows in the same transaction as the events
queued with them — then hands the committed batch to a publisher task and goes straight on to
the next transaction while the publisher delivers the committed events, in commit order, to the
listeners (the :class:`~orchestrator.engine.feed.Feed`). However many runs append at once, the log
costs one transaction per writer round, not one per call. If any statement of a transaction
fails, it is rolled back and re-run with one ``SAVEPOINT`` per queued call, so one bad call — a
duplicate ``(run_key, seq)`` — fails alone.

``append`` returns once its events are committed *and* published, so "written before any
subscriber sees it" holds by construction, subscribers see the global order of the log, and a
slow subscriber's backpressure reaches the producer. ``start_run`` returns once its row is
committed (and raises if it could not be written). ``record_session`` and ``finish_run`` return as soon
as their row is queued: it is committed in the same transaction as, or before, anything queued
after it (so a session recorded before a run's next events is durable whenever those events
are), and :meth:`~EventLog.flush` — which every read does first — waits for it. JSON bodies are
encoded by the caller (in :meth:`append`).

Durability: ``synchronous=NORMAL`` under WAL (the default) keeps every committed transaction
across a crash of *this process* (SIGKILL included); a power loss may lose the last few
transactions. Pass ``synchronous="FULL"`` to fsync every commit.

Cancelling :meth:`append` either withdraws the batch (nothing written) if the writer has not
taken it yet, or waits for its commit (one transaction) and then raises ``Cancelled``: a cancelled
append never leaves its batch half-written or its fate unknown.

Tables: ``events`` (``gid`` — a global, increasing id, SQLite's rowid with ``AUTOINCREMENT``,
stable across ``VACUUM`` and never reused; it is the feed's resume cursor — run id, seq, kind,
ts, wire-JSON body; ``(run, seq)`` is ``UNIQUE``, the natural key), ``run_ids`` (the integer id
each run key is stored as on its events: a few bytes a row instead of the key twice; schema
version 1, ``PRAGMA user_version``; a log of schema 0 is migrated when opened), ``runs`` (runtime,
session key, status, times, final outcome JSON, and the owner process as pid + start time) and
``sessions`` (one row per run: its session key, runtime, native session id, codec blob and the
*origin working directory* a resume must run from) and ``run_cards`` (a reader's projection of a
run's events up to a gid — the board's card — kept so that opening the board reads each run's
events once, not at every open: :meth:`EventLog.run_cards`, :meth:`EventLog.save_run_cards`).

Nothing recorded is overwritten: every attempt has its own run key (:meth:`EventLog.start_run`
refuses a used one), and a run's session row is only ever refined by that run. Opening the log
marks runs left ``running`` by a dead owner process ``interrupted`` and closes their event
stream with ``error{code: interrupted}`` + ``done{error}``; closing the log does the same for
the runs it started and was not told the end of (a forced exit, an error outside the run), so
no run stays ``running`` after its process has ended. The database file is created 0600 (and a
missing parent directory 0700).

One writing process per log file keeps the live feed complete: another process's commits are in
the log (and replayed by the SSE endpoint) but are not published live in this one.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import logging
import os
import queue
import sqlite3
import threading
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, cast

import attrs
import outcome
import trio

from orchestrator.core.errors import ConfigError, EventLogWriteError, single_exception
from orchestrator.core.events import (
    Done,
    EventFactory,
    RuntimeEvent,
    event_from_json,
    event_to_json,
    now_ms,
    valid_text,
)
from orchestrator.core.lifetime import ProcessIdentity, ensure_private_dir

__all__ = [
    "CommitListener",
    "EventLog",
    "LoggedEvent",
    "PruneReport",
    "RunCard",
    "RunListing",
    "RunRecorder",
    "RunRow",
    "SessionRow",
    "WorkspaceRow",
]

T = TypeVar("T")

_log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
"""The log's layout (``PRAGMA user_version``): 0 stored the run key on every event row (and again
in its ``(run_key, seq)`` index); 1 stores an integer run id per event, mapped to the run key by
``run_ids``. Opening an older log migrates it (:func:`_migrate_events`)."""

_SCHEMA_EVENTS = """
CREATE TABLE IF NOT EXISTS run_ids (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS events (
    gid INTEGER PRIMARY KEY AUTOINCREMENT,
    run INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ts INTEGER NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (run, seq)
);
"""
"""Every event row names its run by ``run_ids.id`` (a few bytes), not by its run key (about 45
bytes, twice: the row and the unique index): the log takes about 1.2× its events' wire JSON
instead of 1.7× (``python -m bench --only log-bytes``). Ids are ``AUTOINCREMENT``: never reused,
so an id a writer cached can never come to name another run after a prune."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_key TEXT PRIMARY KEY,
    runtime_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    status TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    ended_ms INTEGER,
    outcome TEXT,
    owner_pid INTEGER,
    owner_start INTEGER
);
"""

_SCHEMA_SESSIONS = """
CREATE TABLE IF NOT EXISTS sessions (
    run_key TEXT PRIMARY KEY,
    session_key TEXT NOT NULL,
    runtime_id TEXT NOT NULL,
    native_session_id TEXT,
    codec_blob TEXT,
    origin_cwd TEXT,
    updated_ms INTEGER NOT NULL,
    agent_id TEXT
);
CREATE INDEX IF NOT EXISTS sessions_by_key ON sessions (session_key, updated_ms);
"""

_SCHEMA_WORKSPACES = """
CREATE TABLE IF NOT EXISTS workspaces (
    root TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    runtime_id TEXT NOT NULL,
    label TEXT NOT NULL,
    group_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    origin TEXT NOT NULL,
    path TEXT NOT NULL,
    base TEXT,
    git_dir TEXT,
    created_ms INTEGER NOT NULL,
    applied TEXT,
    removed_ms INTEGER
);
"""
_SCHEMA_CARDS = """
CREATE TABLE IF NOT EXISTS run_cards (
    run INTEGER PRIMARY KEY,
    gid INTEGER NOT NULL,
    card TEXT NOT NULL
);
"""
"""One projection per run (its ``run_ids.id``): ``card`` is the JSON a reader made of the run's
events up to ``gid`` (the log never reads it). Added to a log of any version when it is opened;
a version that does not know the table ignores it — a card it leaves behind is recognized as
stale by its ``gid`` (the run has later events), and its run id is never given again."""

_INDEXES = """
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_ms);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status);
"""
"""Listing the newest runs and finding the running ones read an index, not every run (a log of
100,000 runs lists its newest in milliseconds)."""

_RUN_OWNER_COLUMNS = (("owner_pid", "INTEGER"), ("owner_start", "INTEGER"))

_INSERT = "INSERT INTO events (run, seq, kind, ts, body) VALUES (?, ?, ?, ?, ?)"

_ROWS_PER_INSERT = 64
"""Rows per multi-row ``INSERT`` (320 parameters): binding them in one statement costs about
half of what ``executemany`` pays per row (one statement reset and step per row)."""


@functools.cache
def _insert_sql(n: int) -> str:
    """``INSERT`` of ``n`` rows in one statement (one string per ``n``: sqlite3 caches it)."""
    return _INSERT + ", (?, ?, ?, ?, ?)" * (n - 1)


def _insert_rows(conn: sqlite3.Connection, rows: Sequence[_IdRow]) -> None:
    """Insert ``rows`` (run id, seq, kind, ts, body) in order, up to :data:`_ROWS_PER_INSERT`
    per statement."""
    step = _ROWS_PER_INSERT
    for i in range(0, len(rows), step):
        chunk = rows[i : i + step]
        conn.execute(_insert_sql(len(chunk)), list(itertools.chain.from_iterable(chunk)))


DEFAULT_MAX_BATCH_ROWS = 20_000
"""At most this many rows go into one transaction (more queued rows wait for the next one)."""


class LoggedEvent:
    """One committed event: its global id, run key, wire JSON and (parsed lazily) ``event``.

    A feed subscriber that lagged may receive a *coalesced* text delta: it stands for
    ``merged`` consecutive deltas of one run, carries the concatenated text and the ``gid`` and
    ``seq`` of the **last** one it absorbed, and ``first_gid`` of the first.
    """

    __slots__ = ("body", "event", "first_gid", "gid", "kind", "merged", "run_key", "seq")

    event: RuntimeEvent
    """The event (parsed from the stored JSON on first use, when the item was read back)."""

    def __init__(
        self,
        gid: int,
        run_key: str,
        event: RuntimeEvent | None = None,
        *,
        body: str | None = None,
        kind: str | None = None,
        seq: int | None = None,
        first_gid: int | None = None,
        merged: int = 1,
    ) -> None:
        self.gid = gid
        self.run_key = run_key
        if event is not None:
            self.event = event
            self.body: str = body if body is not None else event_to_json(event)
            self.kind: str = kind if kind is not None else event.kind
            self.seq: int = seq if seq is not None else event.seq
        elif body is not None and kind is not None and seq is not None:
            self.body, self.kind, self.seq = body, kind, seq
        else:
            raise ValueError("LoggedEvent needs the event, or its body, kind and seq")
        self.first_gid = gid if first_gid is None else first_gid
        self.merged = merged

    def __getattr__(self, name: str) -> RuntimeEvent:
        # reached only while the ``event`` slot is empty: a set slot is a plain attribute read
        # (a property would cost a Python call on every read of every subscriber)
        if name != "event":
            raise AttributeError(name)
        event = self.event = event_from_json(self.body)
        return event

    def __repr__(self) -> str:
        return f"LoggedEvent(gid={self.gid}, run_key={self.run_key!r}, kind={self.kind!r}, seq={self.seq})"

    @classmethod
    def _committed(cls, gid: int, event: RuntimeEvent, row: _Row) -> LoggedEvent:
        """The item of a row the writer just committed (what ``LoggedEvent(gid, run_key, event,
        body=…, kind=…, seq=…)`` builds, at a third of the cost of the keyword call)."""
        self = object.__new__(cls)
        self.gid = self.first_gid = gid
        self.run_key, self.seq, self.kind, _, self.body = row
        self.event = event
        self.merged = 1
        return self


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
class RunCard:
    """A run that has events, with the projection kept of them (:meth:`EventLog.run_cards`)."""

    run_key: str
    last_gid: int
    """The gid of the run's last event (when read)."""
    last_seq: int
    """Its ``seq`` (a run's events are numbered from 1 without gaps: how many it has)."""
    card_gid: int | None = None
    """The card covers the run's events up to this gid (``None``: no card kept)."""
    card: str | None = None


@attrs.frozen
class PruneReport:
    """What :meth:`EventLog.prune` removed (or, dry, would remove) and the file's size."""

    runs: int
    events: int
    bytes_before: int
    bytes_after: int
    sessions: tuple[tuple[str, str], ...] = ()
    """``(runtime id, codec blob)`` of the sessions the removed runs recorded: what a runtime
    keeps of them itself (OpenClaw's transcripts) can go too
    (:attr:`~orchestrator.core.registry.RuntimeSpec.forget_sessions`)."""
    kept: tuple[tuple[str, str], ...] = ()
    """``(runtime id, codec blob)`` of the sessions still recorded for those runtimes (a session
    a kept run continues stays)."""


def _file_bytes(conn: sqlite3.Connection) -> int:
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    return pages * int(conn.execute("PRAGMA page_size").fetchone()[0])


@attrs.frozen
class RunListing:
    """One line of ``replay --list``: a run with its title and USD (from its outcome)."""

    run_key: str
    runtime_id: str
    status: str
    started_ms: int
    ended_ms: int | None
    title: str | None
    cost_usd: float | None


@attrs.frozen
class SessionRow:
    session_key: str
    runtime_id: str
    native_session_id: str | None
    codec_blob: str | None
    origin_cwd: str | None
    updated_ms: int
    run_key: str | None = None
    """The run that recorded it (each run has its own row)."""
    agent_id: str | None = None
    """The identity the run ran as (its per-identity home, if the runtime has one): a resume
    runs as the same identity."""


@attrs.frozen
class WorkspaceRow:
    """A workspace ringleader made for one task's runs (see
    :mod:`orchestrator.engine.workspaces`), recorded when it was created: what ``diff``,
    ``compare``, ``apply`` and ``workspaces`` read. Run keys of the task start with
    ``runtime:<runtime_id>:task:<task_id>``."""

    root: str
    """The worktree's top level, or the temporary copy."""
    task_id: str
    runtime_id: str
    label: str
    """The task's name in the view and the comparison table (``codex``, ``native#2``, …)."""
    group_id: str
    """The side-by-side task (or batch) the workspace was made for: ``compare`` groups by it."""
    kind: str
    origin: str
    """The directory the task was started from (in the person's checkout)."""
    path: str
    """The run's working directory (``root`` or a folder inside it)."""
    base: str | None
    """The commit the workspace started from (a temporary copy: its snapshot's commit)."""
    git_dir: str | None
    """A temporary copy's snapshot repository (outside the copy); ``None`` for a worktree."""
    created_ms: int
    applied: dict[str, Any] | None = None
    """Set by ``apply``: branch, commit, where it landed and when."""
    removed_ms: int | None = None


class RunRecorder(Protocol):
    """What a :class:`~orchestrator.engine.runner.Runner` records a task's runs and sessions in: the
    :class:`EventLog`, or a remote node's relay to the head's log."""

    async def start_run(self, run_key: str, *, runtime_id: str, session_key: str) -> None: ...

    async def finish_run(self, run_key: str, *, status: str, outcome: dict[str, Any]) -> None: ...

    async def record_session(
        self,
        session_key: str,
        *,
        runtime_id: str,
        native_session_id: str | None,
        codec_blob: str | None,
        origin_cwd: str | None,
        run_key: str | None = None,
        agent_id: str | None = None,
    ) -> None: ...

    async def runs(self) -> list[RunRow]: ...

    async def get_session(self, key: str) -> SessionRow | None: ...


class CommitListener(Protocol):
    """Receives committed events in commit (``gid``) order, one batch at a time."""

    async def publish(self, items: Sequence[LoggedEvent]) -> None: ...


_Row = tuple[str, int, str, int, str]
"""A queued event row: run key, seq, kind, ts, wire JSON."""
_IdRow = tuple[int, int, str, int, str]
"""An event row as stored: the run key replaced by its id in ``run_ids``."""


def _with_id(rows: Sequence[_Row], run: int) -> list[_IdRow]:
    return [(run, seq, kind, ts, body) for _, seq, kind, ts, body in rows]


def _lookup_run(conn: sqlite3.Connection, run_key: str) -> int | None:
    row = conn.execute("SELECT id FROM run_ids WHERE run_key = ?", (run_key,)).fetchone()
    return None if row is None else int(row[0])


def _resolve_runs(
    conn: sqlite3.Connection, batch: Sequence[_Op], known: dict[str, int]
) -> tuple[dict[str, int], dict[str, int]]:
    """The run id of every run key appended in ``batch`` (inside the batch's transaction): from
    ``known`` (ids committed before), else read, else given now. Returns (every id the batch
    needs, the ids not in ``known``: the caller adds them to ``known`` once committed — a
    rolled-back id may be given again to another key)."""
    ids: dict[str, int] = {}
    fresh: dict[str, int] = {}
    for op in batch:
        if not isinstance(op, _Append) or op.run_key in ids:
            continue
        key = op.run_key
        run = known.get(key)
        if run is None:
            run = _lookup_run(conn, key)
            if run is None:
                cur = conn.execute("INSERT INTO run_ids (run_key) VALUES (?)", (key,))
                run = int(cur.lastrowid or 0)
            fresh[key] = run
        ids[key] = run
    return ids, fresh


@attrs.define(eq=False)
class _Append:
    """A queued append: its events and their rows."""

    run_key: str
    events: Sequence[RuntimeEvent]
    rows: list[_Row]
    committed: trio.Event = attrs.field(factory=trio.Event)
    published: trio.Event = attrs.field(factory=trio.Event)
    taken: bool = False
    gids: list[int] | None = None
    error: BaseException | None = None


@attrs.define(eq=False)
class _Statement:
    """A queued run or session row (one statement)."""

    sql: str
    params: tuple[object, ...]
    what: str
    committed: trio.Event | None = None
    """Set once committed, for a caller that waits; ``None`` for fire-and-forget rows."""
    rows: tuple[()] = ()
    taken: bool = False
    error: BaseException | None = None


_Op = _Append | _Statement


def _create_private(target: Path) -> None:
    """Create the database file 0600 before SQLite opens it (its ``-wal`` and ``-shm`` files
    take the database file's mode); narrow an existing log we own to 0600."""
    fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        st = os.fstat(fd)
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        side = target.with_name(target.name + suffix)
        try:
            if side.stat().st_mode & 0o077:
                os.chmod(side, 0o600)
        except OSError:
            pass


def _migrate_events(conn: sqlite3.Connection, target: Path) -> int:
    """Bring the events of a log written by schema 0 (a run key on every event row) to schema
    1 (an integer run id per row, ``run_ids`` mapping it to the run key), in one transaction,
    then give the old rows' space back (``VACUUM``); creates the tables of a new log. Every
    event keeps its gid, and the gid counter its value (a resume cursor stays valid). Returns
    how many events were moved (0: nothing to migrate). A log of a newer schema is refused."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"the event log {target} was written by a newer ringleader (schema {version}; this "
            f"one reads {SCHEMA_VERSION}): upgrade ringleader, or use another state directory "
            "(RINGLEADER_STATE_DIR)"
        )
    cols = {str(r[1]) for r in conn.execute("PRAGMA table_info(events)")}
    if "run_key" not in cols:
        conn.executescript(_SCHEMA_EVENTS)
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        return 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        counter = int(row[0]) if row else 0
        conn.execute("ALTER TABLE events RENAME TO events_v0")
        for statement in _SCHEMA_EVENTS.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            "INSERT INTO run_ids (run_key) SELECT run_key FROM events_v0 "
            "GROUP BY run_key ORDER BY MIN(gid)"
        )
        moved = conn.execute(
            "INSERT INTO events (gid, run, seq, kind, ts, body) "
            "SELECT e.gid, r.id, e.seq, e.kind, e.ts, e.body FROM events_v0 AS e "
            "JOIN run_ids AS r ON r.run_key = e.run_key ORDER BY e.gid"
        ).rowcount
        conn.execute("DROP TABLE events_v0")
        top = int(conn.execute("SELECT COALESCE(MAX(gid), 0) FROM events").fetchone()[0])
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'events'")
        conn.execute(
            "INSERT INTO sqlite_sequence (name, seq) VALUES ('events', ?)", (max(counter, top),)
        )
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("VACUUM")
    _log.warning(
        "event log %s: %d event(s) moved to schema %d (a run id per event, not its key)",
        target,
        moved,
        SCHEMA_VERSION,
    )
    return int(moved)


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a log written by an older version to the current schema (idempotent)."""
    cols = {str(r[1]) for r in conn.execute("PRAGMA table_info(runs)")}
    for name, sql_type in _RUN_OWNER_COLUMNS:
        if name not in cols:
            conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {sql_type}")
    cols = {str(r[1]) for r in conn.execute("PRAGMA table_info(sessions)")}
    if cols and "run_key" not in cols:
        # one row per session key (overwritten by every run) becomes one row per run
        conn.executescript(
            "BEGIN; ALTER TABLE sessions RENAME TO sessions_v0;"
            + _SCHEMA_SESSIONS
            + "INSERT INTO sessions (run_key, session_key, runtime_id, native_session_id, "
            "codec_blob, origin_cwd, updated_ms) SELECT session_key, session_key, runtime_id, "
            "native_session_id, codec_blob, origin_cwd, updated_ms FROM sessions_v0;"
            "DROP TABLE sessions_v0; COMMIT;"
        )
    cols = {str(r[1]) for r in conn.execute("PRAGMA table_info(sessions)")}
    if cols and "agent_id" not in cols:
        conn.execute("ALTER TABLE sessions ADD COLUMN agent_id TEXT")


INTERRUPTED_CODE = "interrupted"
"""``error{code}`` of the terminal events appended to a run whose owner process died."""


UNFINISHED_AT_CLOSE = (
    "the orchestrator stopped before this run ended (a forced exit, or an error outside the "
    "run); run interrupted"
)
"""``error{message}`` of a run whose log closed while it was still running: a process that
stops (a second Ctrl-C, an unexpected error) never leaves its runs ``running``."""


def _mark_interrupted(conn: sqlite3.Connection, now: int) -> list[str]:
    """Mark runs left ``running`` by a dead owner process ``interrupted`` (see
    :func:`_end_unfinished`). Returns their run keys."""
    rows = conn.execute(
        "SELECT run_key, owner_pid, owner_start FROM runs WHERE status = 'running'"
    ).fetchall()
    dead = [
        str(key)
        for key, pid, start in rows
        if pid is None
        or not ProcessIdentity(int(pid), None if start is None else int(start)).alive()
    ]
    message = "the orchestrator process running this run died; run interrupted"
    return _end_unfinished(conn, dead, now, message)


def _end_unfinished(
    conn: sqlite3.Connection, keys: Sequence[str], now: int, message: str
) -> list[str]:
    """End the runs of ``keys`` that are still ``running``: a stream without its ``done`` is
    closed with ``error{fatal, code: interrupted}`` + ``done{error}`` and the run is marked
    ``interrupted``; a stream whose ``done`` was logged (its runs row was not yet updated) keeps
    it and the run takes its reason. One transaction per run; returns the keys it ended."""
    ended: list[str] = []
    for key in keys:
        conn.execute("BEGIN IMMEDIATE")
        try:
            still = conn.execute(
                "SELECT 1 FROM runs WHERE run_key = ? AND status = 'running'", (key,)
            ).fetchone()
            if still is None:
                conn.execute("COMMIT")
                continue
            status = "interrupted"
            run = _lookup_run(conn, key)
            last = (
                None
                if run is None
                else conn.execute(
                    "SELECT body FROM events WHERE run = ? ORDER BY seq DESC LIMIT 1", (run,)
                ).fetchone()
            )
            if last is not None and run is not None:
                prev = event_from_json(str(last[0]))
                if isinstance(prev, Done):
                    status = prev.reason
                else:
                    make = EventFactory(
                        run_id=prev.run_id,
                        session_id=prev.session_id,
                        clock=lambda: now,
                        seq=prev.seq,
                    )
                    conn.executemany(
                        _INSERT,
                        [
                            (run, e.seq, e.kind, e.ts, event_to_json(e))
                            for e in make.fail(message, code=INTERRUPTED_CODE)
                        ],
                    )
            conn.execute(
                "UPDATE runs SET status = ?, ended_ms = ? WHERE run_key = ? AND status = 'running'",
                (status, now, key),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back itself (a full disk)
                conn.execute("ROLLBACK")
            raise
        ended.append(key)
    return ended


def _run_op(conn: sqlite3.Connection, op: _Op, ids: dict[str, int]) -> None:
    if isinstance(op, _Append):
        _insert_rows(conn, _with_id(op.rows, ids[op.run_key]))
    else:
        conn.execute(op.sql, op.params)


def _write_batch(
    conn: sqlite3.Connection, batch: list[_Op], known: dict[str, int] | None = None
) -> list[list[int] | Exception]:
    """Write ``batch`` in one transaction (on the trio thread, or the database thread).

    ``known``: the run ids committed so far (run key → id), the writer's cache; the ids this
    transaction gives are added to it once it commits.

    The fast path runs every statement plainly (the rows of consecutive appends together, in
    multi-row ``INSERT`` statements) and
    derives the gids from the last rowid: one writer holds the write lock, so one transaction's
    rows get consecutive ids. If anything fails, the transaction is rolled back and re-run with a
    savepoint per call, so a failing call fails alone."""
    known = {} if known is None else known
    conn.execute("BEGIN IMMEDIATE")
    try:
        try:
            ids, fresh = _resolve_runs(conn, batch, known)
            rows: list[_IdRow] = []
            for op in batch:
                if isinstance(op, _Append):
                    run = ids[op.run_key]
                    rows += [(run, seq, kind, ts, body) for _, seq, kind, ts, body in op.rows]
                    continue
                if rows:
                    _insert_rows(conn, rows)
                    rows = []
                conn.execute(op.sql, op.params)
            if rows:
                _insert_rows(conn, rows)
        except sqlite3.Error:
            if conn.in_transaction:  # SQLite may have rolled back itself (a full disk)
                conn.execute("ROLLBACK")
            conn.execute("BEGIN IMMEDIATE")
            ids, fresh = _resolve_runs(conn, batch, known)
            out = _write_isolated(conn, batch, ids)
        else:
            total = sum(len(op.rows) for op in batch)
            last = _last_gid(conn) if total else 0
            gid = last - total + 1
            out: list[list[int] | Exception] = []
            for op in batch:
                n = len(op.rows)
                out.append(list(range(gid, gid + n)))
                gid += n
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    known.update(fresh)
    return out


def _last_gid(conn: sqlite3.Connection) -> int:
    """The largest gid ever given (``AUTOINCREMENT``'s counter; ``last_insert_rowid()`` would
    name a run or session row inserted after the events)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
    return int(row[0]) if row else 0


def _write_isolated(
    conn: sqlite3.Connection, batch: list[_Op], ids: dict[str, int]
) -> list[list[int] | Exception]:
    out: list[list[int] | Exception] = []
    for op in batch:
        conn.execute("SAVEPOINT a")
        try:
            _run_op(conn, op, ids)
        except sqlite3.Error as exc:
            if not conn.in_transaction:  # SQLite rolled the whole transaction back (disk full)
                raise
            conn.execute("ROLLBACK TO a")
            conn.execute("RELEASE a")
            out.append(exc)
            continue
        conn.execute("RELEASE a")
        n = len(op.rows)
        if n:
            last = _last_gid(conn)
            out.append(list(range(last - n + 1, last + 1)))
        else:
            out.append([])
    return out


_CHECKPOINT_ROWS = 4000
"""Checkpoint the WAL after about this many rows (SQLite's own default is every 1000 pages)."""


def _checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


class _DbThread:
    """The one thread that owns the connection: jobs run there in submission order; each
    :meth:`call` costs one hand-off and one wake-up of the waiting trio task."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Callable[[Any], None]] | None] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._main, name="ringleader-eventlog", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, deliver = job
            deliver(outcome.capture(fn))

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in the database thread. Not cancellable once submitted (a statement runs
        to its end); a cancellation is delivered at the caller's next checkpoint."""
        task = trio.lowlevel.current_task()
        token = trio.lowlevel.current_trio_token()

        def deliver(result: outcome.Outcome[T]) -> None:
            with contextlib.suppress(trio.RunFinishedError):  # the loop is gone
                token.run_sync_soon(trio.lowlevel.reschedule, task, result)

        self._jobs.put((fn, deliver))
        result: T = await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)
        await trio.lowlevel.checkpoint_if_cancelled()
        return result

    def submit(self, fn: Callable[[], T], deliver: Callable[[outcome.Outcome[T]], None]) -> None:
        """Run ``fn`` in the database thread; ``deliver`` gets its outcome there."""
        self._jobs.put((fn, deliver))

    def stop(self) -> None:
        """No more jobs: the thread ends after the queued ones."""
        self._jobs.put(None)


@attrs.define(eq=False)
class EventLog:
    """Open with ``async with EventLog.open(path) as log`` (see the module docstring)."""

    path: Path
    _conn: sqlite3.Connection = attrs.field(alias="conn")
    _reader: sqlite3.Connection = attrs.field(alias="reader")
    _db: _DbThread = attrs.field(alias="db")
    _inline: bool = attrs.field(alias="inline", default=True)
    """Commit on the trio thread (``synchronous=NORMAL``: a commit is a ``write`` to the WAL, no
    fsync) rather than handing each transaction to the database thread (``FULL``)."""
    clock: Callable[[], int] = now_ms
    max_batch_rows: int = DEFAULT_MAX_BATCH_ROWS
    _pending: deque[_Op] = attrs.field(init=False, factory=deque[_Op])
    _wakeup: trio.lowlevel.ParkingLot = attrs.field(init=False, factory=trio.lowlevel.ParkingLot)
    _committed_q: deque[tuple[list[_Op], list[LoggedEvent]]] = attrs.field(
        init=False, factory=deque[tuple[list[_Op], list[LoggedEvent]]]
    )
    _publish_wakeup: trio.lowlevel.ParkingLot = attrs.field(
        init=False, factory=trio.lowlevel.ParkingLot
    )
    _publish_room: trio.lowlevel.ParkingLot = attrs.field(
        init=False, factory=trio.lowlevel.ParkingLot
    )
    _queued: int = attrs.field(init=False, default=0)
    """How many calls were ever queued (a ticket per call)."""
    _done: int = attrs.field(init=False, default=0)
    """How many queued calls have been committed (or failed), in queue order."""
    _flushed: trio.lowlevel.ParkingLot = attrs.field(init=False, factory=trio.lowlevel.ParkingLot)
    _listeners: list[CommitListener] = attrs.field(init=False, factory=list[CommitListener])
    _closing: bool = attrs.field(init=False, default=False)
    _writer_done: bool = attrs.field(init=False, default=False)
    _uncheckpointed: int = attrs.field(init=False, default=0)
    _checkpointing: bool = attrs.field(init=False, default=False)
    transactions: int = attrs.field(init=False, default=0)
    """How many transactions the writer has committed (batching shows as calls/transaction)."""
    _run_ids: dict[str, int] = attrs.field(init=False, factory=dict[str, int])
    """Run key → id in ``run_ids``, of the ids this writer saw committed (ids never change)."""
    _unfinished: set[str] = attrs.field(init=False, factory=set[str])
    """Runs this log started and has not been told the end of (ended at close: see
    :data:`UNFINISHED_AT_CLOSE`)."""

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        path: str | Path,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        clock: Callable[[], int] = now_ms,
        max_batch_rows: int = DEFAULT_MAX_BATCH_ROWS,
    ) -> AsyncGenerator[EventLog]:
        target = Path(path)

        def connect() -> tuple[sqlite3.Connection, sqlite3.Connection]:
            if not target.parent.exists():
                ensure_private_dir(target.parent)
            _create_private(target)
            conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
            try:
                mode = str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
                if mode.lower() != "wal":
                    _log.warning("event log %s: journal mode is %s, not WAL", target, mode)
                conn.execute(f"PRAGMA synchronous={synchronous}")
                conn.execute("PRAGMA busy_timeout=5000")
                conn.executescript(_SCHEMA)
                _migrate_events(conn, target)
                _migrate(conn)
                conn.executescript(_SCHEMA_SESSIONS)
                conn.executescript(_SCHEMA_WORKSPACES)
                conn.executescript(_SCHEMA_CARDS)
                conn.executescript(_INDEXES)
                try:
                    interrupted = _mark_interrupted(conn, clock())
                except sqlite3.OperationalError as exc:  # a full disk: reading still works
                    _log.warning(
                        "event log %s: runs of a dead process could not be marked interrupted "
                        "(%s); the next open does it",
                        target,
                        exc,
                    )
                    interrupted = []
                if interrupted:
                    _log.warning(
                        "event log %s: %d run(s) of a dead process marked interrupted",
                        target,
                        len(interrupted),
                    )
                # checkpoints (which fsync) run in the database thread, never in a commit
                conn.execute("PRAGMA wal_autocheckpoint=0")
                reader = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
            except BaseException:
                conn.close()
                raise
            try:
                reader.execute("PRAGMA busy_timeout=5000")
            except BaseException:
                reader.close()
                conn.close()
                raise
            return conn, reader

        def close(conns: tuple[sqlite3.Connection, sqlite3.Connection]) -> None:
            writer, reader = conns
            try:
                reader.close()
            finally:
                writer.close()

        db = _DbThread()
        opened: list[tuple[sqlite3.Connection, sqlite3.Connection]] = []
        try:
            with trio.CancelScope(shield=True):  # connections, once made, are closed by us
                opened.append(await db.call(connect))
            await trio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            if opened:
                with trio.CancelScope(shield=True):
                    await db.call(functools.partial(close, opened[0]))
            db.stop()
            raise
        conn, reader = opened[0]
        log = cls(
            path=target,
            conn=conn,
            reader=reader,
            db=db,
            inline=synchronous == "NORMAL",
            clock=clock,
            max_batch_rows=max_batch_rows,
        )
        try:
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(log._writer)
                    nursery.start_soon(log._publisher)
                    try:
                        yield log
                    finally:
                        log._closing = True
                        log._wakeup.unpark_all()
            except BaseExceptionGroup as group:
                # the caller's own error, not wrapped in our writer's nursery group
                one = single_exception(group)
                if one is not None:
                    raise one from None
                raise
        finally:
            with trio.CancelScope(shield=True):
                try:
                    if log._unfinished:  # the runs' owner is going away without their end
                        ended = await db.call(
                            functools.partial(
                                _end_unfinished,
                                conn,
                                sorted(log._unfinished),
                                clock(),
                                UNFINISHED_AT_CLOSE,
                            )
                        )
                        if ended:
                            _log.warning(
                                "event log %s: %d unfinished run(s) ended at close",
                                target,
                                len(ended),
                            )
                except sqlite3.OperationalError as exc:  # a full disk: the next open ends them
                    _log.warning(
                        "event log %s: the end of %d run(s) could not be recorded (%s); the "
                        "next open of the log records it",
                        target,
                        len(log._unfinished),
                        exc,
                    )
                try:
                    await db.call(functools.partial(_checkpoint, reader))
                except sqlite3.OperationalError:  # a full disk: the WAL keeps every commit
                    _log.debug("event log %s: checkpoint at close failed", target, exc_info=True)
                finally:
                    await db.call(functools.partial(close, opened[0]))
                    db.stop()

    async def _call(self, fn: Callable[[], T]) -> T:
        """Run a read in the database thread, after everything queued so far is committed."""
        await self.flush()
        return await self._db.call(fn)

    # -- upkeep ----------------------------------------------------------------------------------

    async def prune(
        self,
        *,
        ended_before_ms: int,
        keep: Sequence[str] = (),
        spare: Sequence[str] = (),
        dry_run: bool = False,
    ) -> PruneReport:
        """Remove the runs that ended before ``ended_before_ms`` (never a run still going, nor
        one whose status is in ``keep``, nor one of a runtime in ``spare``), with their events
        and sessions, then give the space back to the file system (``VACUUM``). ``dry_run``:
        only count."""
        conn = self._conn
        statuses, spared = tuple(keep), tuple(spare)
        chosen = (
            "SELECT run_key FROM runs WHERE ended_ms IS NOT NULL AND ended_ms < ? "
            "AND status != 'running'"
            + (f" AND status NOT IN ({','.join('?' * len(statuses))})" if statuses else "")
            + (f" AND runtime_id NOT IN ({','.join('?' * len(spared))})" if spared else "")
        )
        params = (ended_before_ms, *statuses, *spared)
        ids = f"SELECT id FROM run_ids WHERE run_key IN ({chosen})"

        blobs = "SELECT runtime_id, codec_blob FROM sessions WHERE codec_blob IS NOT NULL"

        def sessions(where: str, args: Sequence[object]) -> tuple[tuple[str, str], ...]:
            rows = conn.execute(f"{blobs} AND {where} ORDER BY rowid", args).fetchall()
            return tuple((str(r[0]), str(r[1])) for r in rows)

        def work() -> PruneReport:
            before = _file_bytes(conn)
            runs = conn.execute(f"SELECT count(*) FROM ({chosen})", params).fetchone()[0]
            events = conn.execute(
                f"SELECT count(*) FROM events WHERE run IN ({ids})", params
            ).fetchone()[0]
            pruned = sessions(f"run_key IN ({chosen})", params)
            runtimes = sorted({runtime for runtime, _ in pruned})
            kept = sessions(
                f"runtime_id IN ({','.join('?' * len(runtimes))}) AND run_key NOT IN ({chosen})",
                (*runtimes, *params),
            )
            if dry_run or not runs:
                return PruneReport(int(runs), int(events), before, before, pruned, kept)
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(f"DELETE FROM events WHERE run IN ({ids})", params)
                conn.execute(f"DELETE FROM run_cards WHERE run IN ({ids})", params)
                conn.execute(f"DELETE FROM run_ids WHERE id IN ({ids})", params)
                conn.execute(f"DELETE FROM sessions WHERE run_key IN ({chosen})", params)
                conn.execute(f"DELETE FROM runs WHERE run_key IN ({chosen})", params)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
            return PruneReport(int(runs), int(events), before, _file_bytes(conn), pruned, kept)

        await self.flush()
        report = await self._db.call(work)
        if report.runs and not dry_run:
            self._run_ids.clear()  # the pruned runs' ids are gone (never given again)
        return report

    async def check(self, *, repair: bool = False) -> list[str]:
        """SQLite's own check of the whole file (``PRAGMA integrity_check``): ``[]`` when it is
        sound, else what it found (at most 100 lines). ``repair``: when it is not, rebuild every
        index from its table (``REINDEX``, what a damaged index needs) and check again."""
        conn = self._conn

        def once() -> list[str]:
            rows = conn.execute("PRAGMA integrity_check(100)").fetchall()
            found = [str(r[0]) for r in rows]
            return [] if found == ["ok"] else found

        def work() -> list[str]:
            found = once()
            if found and repair:
                conn.execute("REINDEX")
                found = once()
            return found

        await self.flush()
        return await self._db.call(work)

    # -- listeners -------------------------------------------------------------------------------

    def add_listener(self, listener: CommitListener) -> None:
        """Publish every later commit to ``listener`` (idempotent)."""
        if not any(existing is listener for existing in self._listeners):
            self._listeners.append(listener)

    def remove_listener(self, listener: CommitListener) -> None:
        self._listeners = [x for x in self._listeners if x is not listener]

    # -- the queue -------------------------------------------------------------------------------

    def _queue(self, op: _Op) -> None:
        if self._closing:
            raise trio.ClosedResourceError("the event log is closed")
        self._pending.append(op)
        self._queued += 1
        if self._wakeup:
            self._wakeup.unpark_all()

    async def flush(self) -> None:
        """Wait until everything queued before this call is committed (or has failed)."""
        target = self._queued
        while self._done < target and not self._writer_done:
            await self._flushed.park()
        await trio.lowlevel.checkpoint()

    # -- events ----------------------------------------------------------------------------------

    async def append(self, run_key: str, events: Sequence[RuntimeEvent]) -> list[int]:
        """Write ``events`` (one transaction); returns their global ids once they are committed
        and published to the listeners. Raises :class:`sqlite3.IntegrityError` (nothing of this
        batch written) if a ``(run_key, seq)`` is already in the log."""
        if self._closing:
            raise trio.ClosedResourceError("the event log is closed")
        if not events:
            await trio.lowlevel.checkpoint()
            return []
        rows: list[_Row] = [(run_key, e.seq, e.kind, e.ts, event_to_json(e)) for e in events]
        req = _Append(run_key, events, rows)
        self._queue(req)
        try:
            await req.published.wait()
        except trio.Cancelled:
            if not req.taken:
                self._pending.remove(req)
                self._done += 1  # withdrawn: nothing to wait for
                self._flushed.unpark_all()
            else:
                with trio.CancelScope(shield=True):
                    await req.committed.wait()
            raise
        if req.error is not None:
            raise req.error
        assert req.gids is not None
        return req.gids

    def _take(self) -> list[_Op]:
        batch: list[_Op] = []
        rows = 0
        pending = self._pending
        while pending and (not batch or rows + len(pending[0].rows) <= self.max_batch_rows):
            op = pending.popleft()
            op.taken = True
            rows += len(op.rows)
            batch.append(op)
        return batch

    def _write_error(self, exc: Exception) -> Exception:
        """A failed transaction as one clear line (a full disk, a file-size limit, an I/O
        error): nothing of it was written, what was committed before stays readable."""
        if not isinstance(exc, sqlite3.Error):
            return exc
        error = EventLogWriteError(
            f"the event log {self.path} could not be written ({exc}: is the disk full?); "
            "what was recorded before stays readable"
        )
        error.__cause__ = exc
        return error

    async def _writer(self) -> None:
        conn = self._conn
        batch: list[_Op] = []
        try:
            while True:
                while not self._pending:
                    if self._closing:
                        return
                    await self._wakeup.park()
                # at most one committed batch waits for the publisher (pipeline depth two)
                while len(self._committed_q) > 1:
                    await self._publish_room.park()
                batch = self._take()
                try:
                    if self._inline:
                        results = _write_batch(conn, batch, self._run_ids)
                    else:
                        results = await self._db.call(
                            functools.partial(_write_batch, conn, batch, self._run_ids)
                        )
                except Exception as exc:
                    _log.debug("event log write failed", exc_info=True)
                    results = [self._write_error(exc)] * len(batch)
                self.transactions += 1
                self._uncheckpointed += sum(len(op.rows) for op in batch) + 1
                if self._uncheckpointed >= _CHECKPOINT_ROWS and not self._checkpointing:
                    self._start_checkpoint()
                items: list[LoggedEvent] = []
                for op, result in zip(batch, results, strict=True):
                    if isinstance(op, _Statement):
                        if isinstance(result, Exception):
                            op.error = result
                            if op.committed is None:
                                _log.error("event log: %s failed: %s", op.what, result)
                        if op.committed is not None:
                            op.committed.set()
                        continue
                    if isinstance(result, Exception):
                        op.error = result
                    else:
                        op.gids = result
                        committed = LoggedEvent._committed  # pyright: ignore[reportPrivateUsage]
                        items += map(committed, result, op.events, op.rows)
                    op.committed.set()
                self._done += len(batch)
                self._flushed.unpark_all()
                self._committed_q.append((batch, items))
                self._publish_wakeup.unpark_all()
                batch = []
                if self._inline:
                    await trio.lowlevel.checkpoint()  # never hog the loop between commits
        finally:
            # closing or cancelled: nobody will write what is still queued (a batch cancelled
            # while in the database thread may or may not have committed: it reports closed)
            self._writer_done = True
            self._flushed.unpark_all()
            for op in [*batch, *self._pending]:
                op.error = trio.ClosedResourceError("the event log closed before this write")
                if isinstance(op, _Statement) and op.what == "finish_run":
                    self._unfinished.add(str(op.params[3]))  # its end was never written
                if isinstance(op, _Append):
                    op.committed.set()
                    op.published.set()
                elif op.committed is not None:
                    op.committed.set()
            self._pending.clear()
            self._publish_wakeup.unpark_all()

    def _start_checkpoint(self) -> None:
        """Copy the WAL into the database in the database thread (its own connection; a
        ``PASSIVE`` checkpoint never blocks the writer)."""
        self._checkpointing = True
        self._uncheckpointed = 0
        token = trio.lowlevel.current_trio_token()

        def finished(result: outcome.Outcome[None]) -> None:
            if isinstance(result, outcome.Error):
                _log.warning("event log checkpoint failed: %s", result.error)
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(self._checkpoint_done)

        self._db.submit(functools.partial(_checkpoint, self._reader), finished)

    def _checkpoint_done(self) -> None:
        self._checkpointing = False

    async def _publisher(self) -> None:
        """Hands committed batches to the listeners, in commit order."""
        queue_ = self._committed_q
        try:
            while True:
                while not queue_:
                    if self._writer_done:
                        return
                    await self._publish_wakeup.park()
                batch, items = queue_[0]
                if items:
                    for listener in tuple(self._listeners):
                        try:
                            await listener.publish(items)
                        except Exception:
                            _log.exception("event log listener failed; removed")
                            self.remove_listener(listener)
                queue_.popleft()
                self._publish_room.unpark_all()
                for op in batch:
                    if isinstance(op, _Append):
                        op.published.set()
        finally:
            for batch, _ in queue_:
                for op in batch:
                    if isinstance(op, _Append):
                        op.published.set()
            queue_.clear()
            self._publish_room.unpark_all()

    async def read(
        self, run_key: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[RuntimeEvent]:
        """A run's events with ``seq > after_seq``, in order (at most ``limit``)."""
        conn = self._reader

        def query() -> list[str]:
            cur = conn.execute(
                "SELECT body FROM events WHERE run = (SELECT id FROM run_ids WHERE run_key = ?) "
                "AND seq > ? ORDER BY seq LIMIT ?",
                (run_key, after_seq, -1 if limit is None else limit),
            )
            return [str(r[0]) for r in cur.fetchall()]

        return [event_from_json(body) for body in await self._call(query)]

    async def read_since(
        self, gid: int, *, limit: int = 10_000, run_key: str | None = None
    ) -> list[LoggedEvent]:
        """Events with a global id above ``gid`` (of every run, or of ``run_key``), in order.

        The events are parsed lazily: a reader that only forwards the JSON (the SSE endpoint)
        never pays for validation."""
        conn = self._reader

        def query() -> list[tuple[int, str, str, int, str]]:
            if run_key is None:
                cur = conn.execute(
                    "SELECT e.gid, r.run_key, e.kind, e.seq, e.body FROM events AS e "
                    "JOIN run_ids AS r ON r.id = e.run WHERE e.gid > ? ORDER BY e.gid LIMIT ?",
                    (gid, limit),
                )
            else:
                run = _lookup_run(conn, run_key)
                if run is None:
                    return []
                cur = conn.execute(
                    "SELECT gid, ?, kind, seq, body FROM events "
                    "WHERE run = ? AND gid > ? ORDER BY gid LIMIT ?",
                    (run_key, run, gid, limit),
                )
            return [(int(r[0]), str(r[1]), str(r[2]), int(r[3]), str(r[4])) for r in cur]

        return [
            LoggedEvent(g, k, body=b, kind=kind, seq=s)
            for g, k, kind, s, b in await self._call(query)
        ]

    async def read_tail(self, run_key: str, limit: int) -> list[LoggedEvent]:
        """A run's last ``limit`` events, in order (a page of a long run: one index range read,
        not the run's every event)."""
        conn = self._reader

        def query() -> list[tuple[int, str, int, str]]:
            run = _lookup_run(conn, run_key)
            if run is None:
                return []
            cur = conn.execute(
                "SELECT gid, kind, seq, body FROM events WHERE run = ? ORDER BY seq DESC LIMIT ?",
                (run, limit),
            )
            return [(int(r[0]), str(r[1]), int(r[2]), str(r[3])) for r in cur][::-1]

        return [
            LoggedEvent(g, run_key, body=b, kind=kind, seq=s)
            for g, kind, s, b in await self._call(query)
        ]

    async def run_cards(self) -> list[RunCard]:
        """Every run that has events, in the order its first event was logged, with its last
        event's gid and the card kept of it (:meth:`save_run_cards`), if any: one index seek per
        run, no event read."""
        conn = self._reader

        def query() -> list[RunCard]:
            cur = conn.execute(
                "SELECT r.run_key, e.gid, e.seq, c.gid, c.card FROM run_ids AS r "
                "JOIN events AS e ON e.gid = (SELECT gid FROM events WHERE run = r.id "
                "ORDER BY seq DESC LIMIT 1) "
                "LEFT JOIN run_cards AS c ON c.run = r.id ORDER BY r.id"
            )
            return [
                RunCard(str(key), int(last), int(seq), None if at is None else int(at), card)
                for key, last, seq, at, card in cur.fetchall()
            ]

        return await self._call(query)

    async def save_run_cards(self, cards: Sequence[tuple[str, int, str]]) -> None:
        """Keep ``(run key, gid, card)`` projections (replacing a run's previous one), for
        :meth:`run_cards`; a run key with no event logged is skipped. Returns once queued (the
        rows are written with the writer's next transaction)."""
        for run_key, gid, card in cards:
            await self._write(
                "INSERT OR REPLACE INTO run_cards (run, gid, card) "
                "SELECT id, ?, ? FROM run_ids WHERE run_key = ?",
                (gid, card, run_key),
                what="save_run_cards",
                wait=False,
            )

    async def last_gid(self) -> int:
        conn = self._reader
        return await self._call(
            lambda: int(conn.execute("SELECT COALESCE(MAX(gid), 0) FROM events").fetchone()[0])
        )

    # -- runs ----------------------------------------------------------------------------------

    async def start_run(self, run_key: str, *, runtime_id: str, session_key: str) -> None:
        """Record a new run, owned by this process (``running``); returns once committed.

        Raises :class:`sqlite3.IntegrityError` if ``run_key`` was used before: every attempt
        needs its own key, and nothing recorded is ever replaced. If this log closes before
        :meth:`finish_run`, the run is ended ``interrupted`` then; if this process dies, the
        next :meth:`open` does it."""
        owner = ProcessIdentity.current()
        await self._write(
            "INSERT INTO runs (run_key, runtime_id, session_key, status, started_ms, "
            "owner_pid, owner_start) VALUES (?, ?, ?, 'running', ?, ?, ?)",
            (run_key, runtime_id, session_key, self.clock(), owner.pid, owner.start),
            what="start_run",
            wait=True,
        )
        self._unfinished.add(run_key)

    async def finish_run(self, run_key: str, *, status: str, outcome: dict[str, Any]) -> None:
        """Record how a running run ended (``outcome`` is stored as JSON); a run that already
        ended (or was marked ``interrupted``) keeps what was recorded. Queued: committed with the
        next transaction (see the module docstring)."""
        await self._write(
            "UPDATE runs SET status = ?, ended_ms = ?, outcome = ? "
            "WHERE run_key = ? AND status = 'running'",
            (status, self.clock(), _outcome_json(outcome), run_key),
            what="finish_run",
            wait=False,
        )
        self._unfinished.discard(run_key)

    async def _write(self, sql: str, params: tuple[object, ...], *, what: str, wait: bool) -> None:
        op = _Statement(sql, params, what, trio.Event() if wait else None)
        self._queue(op)
        if op.committed is None:
            await trio.lowlevel.checkpoint()
            return
        with trio.CancelScope(shield=True):  # a queued row is written either way
            await op.committed.wait()
        await trio.lowlevel.checkpoint_if_cancelled()
        if op.error is not None:
            raise op.error

    async def runs(self) -> list[RunRow]:
        """Every run, oldest first (runs started in the same millisecond: in the order they
        started)."""
        conn = self._reader

        def query() -> list[RunRow]:
            cur = conn.execute(
                "SELECT run_key, runtime_id, session_key, status, started_ms, ended_ms, outcome "
                "FROM runs ORDER BY started_ms, rowid"
            )
            return [
                RunRow(r[0], r[1], r[2], r[3], r[4], r[5], _outcome(r[6]) if r[6] else None)
                for r in cur.fetchall()
            ]

        return await self._call(query)

    async def runs_under(self, prefixes: Sequence[str]) -> list[RunRow]:
        """The runs whose key is one of ``prefixes`` or starts with one followed by ``:`` (a
        task's runs: ``runtime:<runtime>:task:<task>``), oldest first; read through the run
        key's index, so a log of many runs answers for a few tasks at once."""
        conn = self._reader
        wanted = sorted(set(prefixes))

        def query() -> list[RunRow]:
            found: list[tuple[int, int, RunRow]] = []
            for prefix in wanted:
                cur = conn.execute(
                    "SELECT run_key, runtime_id, session_key, status, started_ms, ended_ms, "
                    "outcome, rowid FROM runs WHERE run_key = ? OR (run_key >= ? AND run_key < ?)",
                    (prefix, prefix + ":", prefix + ";"),
                )
                for r in cur.fetchall():
                    row = RunRow(
                        r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]) if r[6] else None
                    )
                    found.append((int(r[4]), int(r[7]), row))
            found.sort(key=lambda item: (item[0], item[1]))
            unique = {row.run_key: row for _, _, row in found}
            return list(unique.values())

        return await self._call(query)

    async def run_listing(self, limit: int | None = None) -> list[RunListing]:
        """The newest ``limit`` runs (every run when ``None``), oldest first, with their title
        and USD read from the outcome inside SQLite (no JSON decoding here)."""
        conn = self._reader

        def query() -> list[RunListing]:
            cur = conn.execute(
                "SELECT * FROM (SELECT run_key, runtime_id, status, started_ms, ended_ms, "
                "CAST(json_extract(outcome, '$.title') AS BLOB), "
                "json_extract(outcome, '$.costUsd'), rowid "
                "FROM runs ORDER BY started_ms DESC, rowid DESC LIMIT ?) "
                "ORDER BY started_ms, rowid",
                (-1 if limit is None else limit,),
            )
            return [
                RunListing(r[0], r[1], r[2], r[3], r[4], _title(r[5]), r[6]) for r in cur.fetchall()
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
        run_key: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        """Record the resumable state of one run of ``session_key``. Queued: committed in the
        same transaction as, or before, anything queued after it (:meth:`flush` waits for it).

        Each run has its own row (``run_key``, defaulting to ``session_key``): recording a new
        run never touches an earlier run's row. Recording the same run again refines its row
        (a known native id or codec blob is never replaced by an unknown one)."""
        key = session_key if run_key is None else run_key
        await self._write(
            "INSERT INTO sessions (run_key, session_key, runtime_id, native_session_id, "
            "codec_blob, origin_cwd, updated_ms, agent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (run_key) DO UPDATE SET "
            "native_session_id = COALESCE(excluded.native_session_id, native_session_id), "
            "codec_blob = COALESCE(excluded.codec_blob, codec_blob), "
            "origin_cwd = COALESCE(excluded.origin_cwd, origin_cwd), "
            "agent_id = COALESCE(excluded.agent_id, agent_id), "
            "updated_ms = excluded.updated_ms",
            (
                key,
                session_key,
                runtime_id,
                native_session_id,
                codec_blob,
                origin_cwd,
                self.clock(),
                agent_id,
            ),
            what="record_session",
            wait=False,
        )

    async def get_session(self, key: str) -> SessionRow | None:
        """The session recorded by run ``key``; else the latest run's of session key ``key``."""
        conn = self._reader
        cols = (
            "session_key, runtime_id, native_session_id, codec_blob, origin_cwd, updated_ms, "
            "run_key, agent_id"
        )

        def query() -> SessionRow | None:
            row = conn.execute(f"SELECT {cols} FROM sessions WHERE run_key = ?", (key,)).fetchone()
            if row is None:
                row = conn.execute(
                    f"SELECT {cols} FROM sessions WHERE session_key = ? "
                    "ORDER BY updated_ms DESC, rowid DESC LIMIT 1",
                    (key,),
                ).fetchone()
            return SessionRow(*row) if row else None

        return await self._call(query)

    # -- workspaces ------------------------------------------------------------------------------

    async def record_workspace(self, row: WorkspaceRow) -> None:
        """Record a new workspace (a root recorded before is replaced: git may reuse a path
        only after the earlier worktree is gone). Returns once committed."""
        await self._write(
            "INSERT OR REPLACE INTO workspaces (root, task_id, runtime_id, label, group_id, kind, "
            "origin, path, base, git_dir, created_ms, applied, removed_ms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.root,
                row.task_id,
                row.runtime_id,
                row.label,
                row.group_id,
                row.kind,
                row.origin,
                row.path,
                row.base,
                row.git_dir,
                row.created_ms,
                None if row.applied is None else json.dumps(row.applied),
                row.removed_ms,
            ),
            what="record_workspace",
            wait=True,
        )

    async def mark_workspace(
        self,
        root: str,
        *,
        applied: dict[str, Any] | None = None,
        removed_ms: int | None = None,
    ) -> None:
        """Record that a workspace's run was applied (``applied``) or the workspace removed."""
        if applied is not None:
            await self._write(
                "UPDATE workspaces SET applied = ? WHERE root = ?",
                (json.dumps(applied), root),
                what="mark_workspace",
                wait=True,
            )
        if removed_ms is not None:
            await self._write(
                "UPDATE workspaces SET removed_ms = ? WHERE root = ?",
                (removed_ms, root),
                what="mark_workspace",
                wait=True,
            )

    async def workspaces(self) -> list[WorkspaceRow]:
        """Every recorded workspace, oldest first."""
        conn = self._reader

        def query() -> list[WorkspaceRow]:
            cur = conn.execute(
                "SELECT root, task_id, runtime_id, label, group_id, kind, origin, path, base, "
                "git_dir, created_ms, applied, removed_ms FROM workspaces "
                "ORDER BY created_ms, rowid"
            )
            return [
                WorkspaceRow(
                    root=r[0],
                    task_id=r[1],
                    runtime_id=r[2],
                    label=r[3],
                    group_id=r[4],
                    kind=r[5],
                    origin=r[6],
                    path=r[7],
                    base=r[8],
                    git_dir=r[9],
                    created_ms=r[10],
                    applied=json.loads(r[11]) if r[11] else None,
                    removed_ms=r[12],
                )
                for r in cur.fetchall()
            ]

        return await self._call(query)


def _outcome_json(outcome: dict[str, Any]) -> str:
    """A run's outcome as JSON, its text valid Unicode (a lone surrogate in a prompt that
    became the title is U+FFFD: what is stored can always be served)."""
    return valid_text(json.dumps(outcome, ensure_ascii=False))


def _outcome(raw: str) -> dict[str, Any] | None:
    """A stored outcome; one stored before :func:`_outcome_json` existed may escape a lone
    surrogate (``\\udXXX``): it is read as U+FFFD, so such a log still opens and serves."""
    data: Any = json.loads(raw)
    if "\\ud" in raw or "\\uD" in raw:
        data = json.loads(valid_text(json.dumps(data, ensure_ascii=False)))
    return cast(dict[str, Any], data) if isinstance(data, dict) else None


def _title(raw: bytes | None) -> str | None:
    """A title read as bytes: an old outcome's escaped lone surrogate comes out of SQLite's JSON
    as its 3-byte encoding, which no UTF-8 decoder takes; it reads as U+FFFD."""
    if raw is None:
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        pass
    try:
        return valid_text(raw.decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")
