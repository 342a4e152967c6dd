"""Path 12: bytes on disk per event in the event log, against the event's own wire JSON.

The events are what the real adapters make of the transcripts recorded from the real CLIs
(``tests/fixtures/claude_code/…`` and ``tests/fixtures/codex/…/exec-*``: each recorded session
normalized one line per call, as a CLI streaming tokens is read), each session one run with a run
key and ids shaped as the runner makes them (``runtime:<id>:task:<8 hex>:run-<8 hex>``). They are
appended through :class:`~orchestrator.engine.eventlog.EventLog` (one ``append`` per line's
events, as the adapter publishes), the log is closed (its WAL checkpointed into the file), and the
file's growth over an empty log is divided by the number of events. The limit is the sum of the
events' wire JSON (UTF-8 bytes of :func:`~orchestrator.core.events.event_to_json`), the body a
subscriber receives. Bytes are counted, not timed: a pass is the same every time, so one pass is
enough; the row reports the page size and free pages too.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from ._core import Config, Figure, Row, Target, path
from .inputs import Session, recorded_fixtures, repeat_to

UNIT = "B/event"


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def recorded_runs(total_events: int, seed: int = 7) -> list[tuple[str, list[Any]]]:
    """(run key, events) per recorded session, repeated to about ``total_events`` events."""
    from adapters.claude_code.dialect import decode_line
    from adapters.claude_code.normalize import ClaudeState, normalize_lines
    from adapters.codex.dialect import decode_exec_line
    from adapters.codex.normalize import ExecState, normalize_exec
    from orchestrator.core.events import EventFactory

    rng = random.Random(seed)
    claude = recorded_fixtures("claude_code")
    codex = recorded_fixtures("codex", "exec-")
    runs: list[tuple[str, list[Any]]] = []
    count = 0

    def one(runtime: str, session: Session) -> None:
        nonlocal count
        task = _hex(rng, 8)
        key = f"runtime:{runtime}:task:{task}:run-{_hex(rng, 8)}"
        make = EventFactory(
            run_id=f"{runtime}-{_hex(rng, 32)}", session_id=f"runtime:{runtime}:task:{task}"
        )
        events: list[Any] = []
        if runtime == "claude-code":
            state = ClaudeState(model="claude-sonnet-4-5")
            for line in session:
                events += normalize_lines((decode_line(line),), make, state)[0]
        else:
            cstate = ExecState(model="gpt-5.5")
            for line in session:
                events += normalize_exec(decode_exec_line(line), make, cstate) or []
        runs.append((key, events))
        count += len(events)

    while count < total_events:
        for s in repeat_to(claude, 1):
            one("claude-code", s)
        for s in repeat_to(codex, 1):
            one("codex", s)
    return runs


def measure(runs: list[tuple[str, list[Any]]], where: Path) -> dict[str, Any]:
    """Append ``runs`` to a fresh log under ``where``; bytes per event and per wire byte."""
    import sqlite3

    import trio

    from orchestrator.core.events import event_to_json
    from orchestrator.engine.eventlog import EventLog

    db = where / "events.db"

    async def empty() -> None:
        async with EventLog.open(db):
            pass

    trio.run(empty)
    base = db.stat().st_size
    wire = 0
    n = 0

    async def fill() -> None:
        nonlocal wire, n
        async with EventLog.open(db) as log:
            for key, events in runs:
                runtime = key.split(":")[1]
                await log.start_run(key, runtime_id=runtime, session_key=key.rsplit(":", 1)[0])
                for event in events:
                    await log.append(key, [event])
                    wire += len(event_to_json(event).encode())
                    n += 1
                await log.finish_run(key, status="success", outcome={"status": "success"})

    trio.run(fill)
    size = db.stat().st_size
    conn = sqlite3.connect(db)
    page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    conn.close()
    old = schema0_bytes(db, where / "events-v0.db")
    return {
        "schema0_bytes": old,
        "schema0_per_event": (old - base) / n,
        "events": n,
        "runs": len(runs),
        "wire_bytes": wire,
        "file_bytes": size,
        "empty_bytes": base,
        "page_size": page,
        "free_pages": free,
        "schema_version": version,
        "per_event": (size - base) / n,
        "wire_per_event": wire / n,
    }


def schema0_bytes(db: Path, target: Path) -> int:
    """The size of the same log in schema 0's layout (the run key on every event row and in its
    unique index), copied row for row from ``db`` and vacuumed: the layout before, measured on
    the same events in the same run."""
    import sqlite3

    conn = sqlite3.connect(target, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE events (gid INTEGER PRIMARY KEY AUTOINCREMENT, run_key TEXT NOT NULL, "
        "seq INTEGER NOT NULL, kind TEXT NOT NULL, ts INTEGER NOT NULL, body TEXT NOT NULL, "
        "UNIQUE (run_key, seq))"
    )
    conn.execute("ATTACH DATABASE ? AS new", (str(db),))
    for table in ("runs", "sessions", "workspaces"):
        conn.execute(f"CREATE TABLE {table} AS SELECT * FROM new.{table} WHERE 0")
    conn.execute("CREATE UNIQUE INDEX runs_key ON runs (run_key)")
    conn.execute("CREATE INDEX runs_by_start ON runs (started_ms)")
    conn.execute("CREATE INDEX runs_by_status ON runs (status)")
    conn.execute("INSERT INTO runs SELECT * FROM new.runs ORDER BY rowid")
    conn.execute(
        "INSERT INTO events (gid, run_key, seq, kind, ts, body) SELECT e.gid, r.run_key, e.seq, "
        "e.kind, e.ts, e.body FROM new.events AS e JOIN new.run_ids AS r ON r.id = e.run "
        "ORDER BY e.gid"
    )
    conn.execute("DETACH DATABASE new")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()
    return target.stat().st_size


@path("log-bytes", "bytes on disk per event vs its wire JSON", timeout_s=300)
def log_bytes(cfg: Config) -> list[Row]:
    total = 500 if cfg.smoke else 20_000
    runs = recorded_runs(total)
    row = Row(
        "log-bytes",
        "12. event log: bytes on disk per event (recorded Claude Code + Codex runs)",
        UNIT,
        "lower",
        Target("≤ 1.5× its wire JSON (#37)", "max_ratio_to_limit", 1.5),
    )
    with tempfile.TemporaryDirectory(prefix="ringleader-bench-log-") as tmp:
        got = measure(runs, Path(tmp))
    row.ours = Figure("events.db", got["per_event"], UNIT, "lower", [got["per_event"]])
    row.limit = Figure("wire JSON", got["wire_per_event"], UNIT, "lower", [got["wire_per_event"]])
    row.peers.append(
        Figure(
            "schema 0 (run key per row)",
            got["schema0_per_event"],
            UNIT,
            "lower",
            [got["schema0_per_event"]],
            note="the same rows in the layout before schema 1, vacuumed",
        )
    )
    row.extra = got
    row.notes.append(
        f"{got['events']:,} events in {got['runs']} runs; schema version {got['schema_version']}; "
        f"{got['free_pages']} free pages of {got['page_size']} B"
    )
    return [row]
