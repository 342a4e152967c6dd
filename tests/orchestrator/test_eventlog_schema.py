"""The event log's layout: an integer run id per event (schema 1), and a log written by schema 0
(the run key on every event row) migrated when it is opened, with every reader still right."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio

from orchestrator.core import ConfigError, EventFactory, RuntimeEvent
from orchestrator.core.events import Done, ErrorEvent, event_to_json
from orchestrator.engine.eventlog import SCHEMA_VERSION, EventLog

_V0 = """
CREATE TABLE events (
    gid INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ts INTEGER NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (run_key, seq)
);
CREATE TABLE runs (
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
"""The tables as schema 0 (before this change) created them."""

DONE_KEY = "runtime:scripted:task:aaaa0001:run-11111111"
GOING_KEY = "runtime:scripted:task:bbbb0002:run-22222222"


def run_events(run_id: str, n: int, *, finished: bool) -> list[RuntimeEvent]:
    make = EventFactory(run_id=run_id, session_id="s", clock=lambda: 1_700_000_000_000)
    events: list[RuntimeEvent] = [make.status("init", model="m")]
    events += [make.text_delta(f"word {i} ") for i in range(n)]
    if finished:
        events += make.finish("success", "ok")
    return events


def write_v0(path: Path) -> dict[str, list[RuntimeEvent]]:
    """A schema-0 log: a finished run and one left running by a dead process (no owner), their
    events interleaved, and a gid counter above the last row (the tail was pruned)."""
    runs = {
        DONE_KEY: run_events("done", 30, finished=True),
        GOING_KEY: run_events("going", 20, finished=False),
    }
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(_V0)
    order = [
        (k, e)
        for i in range(40)
        for k, events in runs.items()
        if i < len(events)
        for e in [events[i]]
    ]
    conn.executemany(
        "INSERT INTO events (run_key, seq, kind, ts, body) VALUES (?, ?, ?, ?, ?)",
        [(k, e.seq, e.kind, e.ts, event_to_json(e)) for k, e in order],
    )
    conn.execute("UPDATE sqlite_sequence SET seq = 500 WHERE name = 'events'")
    conn.execute(
        "INSERT INTO runs VALUES (?, 'scripted', ?, 'success', 1, 2, '{\"title\": \"t\"}', NULL, NULL)",
        (DONE_KEY, DONE_KEY.rsplit(":", 1)[0]),
    )
    conn.execute(
        "INSERT INTO runs VALUES (?, 'scripted', ?, 'running', 1, NULL, NULL, NULL, NULL)",
        (GOING_KEY, GOING_KEY.rsplit(":", 1)[0]),
    )
    conn.close()
    return runs


def columns(path: Path, table: str) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


def user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def test_a_new_log_stores_a_run_id_per_event(tmp_path: Path) -> None:
    path = tmp_path / "events.db"

    async def main() -> None:
        async with EventLog.open(path) as log:
            await log.append(DONE_KEY, run_events("r", 3, finished=True))

    trio.run(main)
    assert columns(path, "events") == ["gid", "run", "seq", "kind", "ts", "body"]
    assert user_version(path) == SCHEMA_VERSION == 1
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT id, run_key FROM run_ids").fetchall() == [(1, DONE_KEY)]
    assert {r[0] for r in conn.execute("SELECT DISTINCT run FROM events")} == {1}
    conn.close()


def test_a_schema_0_log_is_migrated_on_open_and_every_reader_works(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    runs = write_v0(path)
    old = sqlite3.connect(path)
    old_rows = old.execute("SELECT gid, run_key, seq, body FROM events ORDER BY gid").fetchall()
    old.close()

    async def main() -> None:
        async with EventLog.open(path) as log:
            # replay of one run, and the feed's read of every run by gid: as before, gid for gid
            done = await log.read(DONE_KEY)
            assert [event_to_json(e) for e in done] == [event_to_json(e) for e in runs[DONE_KEY]]
            everything = await log.read_since(0, limit=10_000)
            before = [(g, k, s, b) for g, k, s, b in old_rows]
            assert [(i.gid, i.run_key, i.seq, i.body) for i in everything][: len(before)] == before
            # the run left running by a dead process was ended on open, through its run id
            going = await log.read(GOING_KEY)
            assert len(going) == len(runs[GOING_KEY]) + 2
            assert isinstance(going[-2], ErrorEvent) and isinstance(going[-1], Done)
            assert [r.status for r in await log.runs()] == ["success", "interrupted"]
            one = await log.read_since(0, run_key=GOING_KEY)
            assert {i.run_key for i in one} == {GOING_KEY} and len(one) == len(going)
            # new events after the migration: ids continue, gids stay above the old counter
            make = EventFactory(run_id="new", clock=lambda: 2)
            new_key = "runtime:scripted:task:cccc0003:run-33333333"
            gids = await log.append(new_key, [make.text_delta("after")])
            assert gids[0] > 500
            assert [e.seq for e in await log.read(new_key)] == [1]
            assert await log.check() == []

    trio.run(main)
    assert columns(path, "events") == ["gid", "run", "seq", "kind", "ts", "body"]
    assert user_version(path) == SCHEMA_VERSION
    conn = sqlite3.connect(path)
    names = [str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")]
    assert "events_v0" not in names
    ids = conn.execute("SELECT run_key FROM run_ids ORDER BY id").fetchall()
    assert [r[0] for r in ids] == [
        DONE_KEY,
        GOING_KEY,
        "runtime:scripted:task:cccc0003:run-33333333",
    ]
    conn.close()


def test_reopening_a_migrated_log_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_v0(path)

    async def open_once() -> list[tuple[int, str, int]]:
        async with EventLog.open(path) as log:
            return [(i.gid, i.run_key, i.seq) for i in await log.read_since(0)]

    first = trio.run(open_once)
    size = path.stat().st_size
    assert trio.run(open_once) == first
    assert path.stat().st_size == size


def test_a_migrated_log_prunes_and_frees_the_run_ids(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_v0(path)

    async def main() -> None:
        async with EventLog.open(path) as log:
            report = await log.prune(ended_before_ms=10**15)
            assert report.runs == 2
            assert await log.read_since(0) == []
            # a pruned run's id is never given again: a new run gets a new one
            make = EventFactory(run_id="n", clock=lambda: 3)
            await log.append(DONE_KEY, [make.text_delta("again")])
            assert [i.run_key for i in await log.read_since(0)] == [DONE_KEY]

    trio.run(main)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT id, run_key FROM run_ids").fetchall() == [(3, DONE_KEY)]
    conn.close()


def test_a_log_of_a_newer_schema_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "events.db"

    async def create() -> None:
        async with EventLog.open(path):
            pass

    trio.run(create)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(ConfigError, match="newer ringleader") as caught:
        trio.run(create)
    assert "\n" not in str(caught.value)


def test_the_cards_a_reader_keeps_are_per_run_and_pruned_with_their_run(tmp_path: Path) -> None:
    """``run_cards`` (added to a log of any version when it is opened, a migrated one too):
    every run with events, its last gid and the card kept of it; a card is replaced per run,
    one for a run with no event is not kept, and pruning a run drops its card."""
    path = tmp_path / "events.db"
    write_v0(path)

    async def main() -> None:
        async with EventLog.open(path) as log:
            cards = await log.run_cards()
            assert [(c.run_key, c.card) for c in cards] == [
                (k, None) for k in (DONE_KEY, GOING_KEY)
            ]
            last = {c.run_key: c.last_gid for c in cards}
            await log.save_run_cards([(DONE_KEY, 1, "old"), ("no-such-run", 1, "x")])
            await log.save_run_cards([(DONE_KEY, last[DONE_KEY], "new")])
            kept = {c.run_key: (c.card_gid, c.card) for c in await log.run_cards()}
            assert kept == {DONE_KEY: (last[DONE_KEY], "new"), GOING_KEY: (None, None)}
            await log.prune(ended_before_ms=10**15)
            assert await log.run_cards() == []

    trio.run(main)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM run_cards").fetchone() == (0,)
    conn.close()
