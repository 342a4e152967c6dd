"""The durable event log: round trip, order, group commit, cancellation, crash safety."""

from __future__ import annotations

import functools
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

from orchestrator.core import EventFactory, RuntimeEvent, Usage
from orchestrator.engine.eventlog import EventLog, LoggedEvent
from orchestrator.engine.runner import recoverable_tasks, resumable_task


def deltas(n: int, run_id: str = "r", start: int = 0) -> list[RuntimeEvent]:
    make = EventFactory(run_id=run_id, clock=lambda: 1, seq=start)
    return [make.text_delta(f"t{start + i} ") for i in range(n)]


def every_kind() -> list[RuntimeEvent]:
    make = EventFactory(run_id="run-1", session_id="sess", clock=lambda: 1_700_000_000_000)
    return [
        make.status("init", model="m"),
        make.text_delta("héllo ✓", channel="reasoning"),
        make.tool_call("c1", "Bash", {"command": ["ls", "-la"], "n": 1}),
        make.tool_result("c1", "out"),
        make.cost(Usage(input_tokens=10, output_tokens=5), cost_usd=None, estimated=True),
        make.error("transient", code="rate_limit", fatal=False),
        *make.finish("success", "ok"),
    ]


async def committed(log: EventLog, transactions: int) -> None:
    """Wait until the writer has committed this many transactions (under ``synchronous=NORMAL``
    it commits on the trio thread, so once every task is blocked it has)."""
    await trio.testing.wait_all_tasks_blocked()
    assert log.transactions == transactions


class Recorder:
    """A commit listener that records what it is handed."""

    def __init__(self) -> None:
        self.items: list[LoggedEvent] = []
        self.gate: trio.Event | None = None

    async def publish(self, items: Sequence[LoggedEvent]) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.items.extend(items)


async def test_round_trip_of_every_kind_with_wire_names(tmp_path: Path) -> None:
    events = every_kind()
    async with EventLog.open(tmp_path / "log.db") as log:
        gids = await log.append("k:1", events)
        assert gids == list(range(1, len(events) + 1))
        assert await log.read("k:1") == events
        assert await log.read("k:1", after_seq=5) == events[5:]
        assert await log.read("k:1", after_seq=1, limit=2) == events[1:3]
        logged = await log.read_since(0)
        assert [i.event for i in logged] == events  # parsed lazily from the stored JSON
        assert [(i.gid, i.run_key, i.kind, i.seq) for i in logged] == [
            (g, "k:1", e.kind, e.seq) for g, e in zip(gids, events, strict=True)
        ]
    with sqlite3.connect(tmp_path / "log.db") as raw:
        (body,) = raw.execute("SELECT body FROM events WHERE kind = 'tool-call'").fetchone()
        (mode,) = raw.execute("PRAGMA journal_mode").fetchone()
    assert '"toolCallId":"c1"' in body  # camelCase wire names in the stored body
    assert '"runId":"run-1"' in body
    assert mode == "wal"


async def test_global_ids_filters_and_duplicates(tmp_path: Path) -> None:
    async with EventLog.open(tmp_path / "log.db") as log:
        assert await log.append("run-a", deltas(3)) == [1, 2, 3]
        assert await log.append("run-b", deltas(2)) == [4, 5]
        assert await log.append("run-a", []) == []
        since = await log.read_since(2)
        assert [(i.gid, i.run_key) for i in since] == [(3, "run-a"), (4, "run-b"), (5, "run-b")]
        assert [i.gid for i in await log.read_since(0, run_key="run-b")] == [4, 5]
        assert [i.gid for i in await log.read_since(0, limit=2)] == [1, 2]
        assert await log.last_gid() == 5
        with pytest.raises(sqlite3.IntegrityError):
            await log.append("run-a", deltas(2, start=2))  # seq 3 again: refused, whole batch
        assert [e.seq for e in await log.read("run-a")] == [1, 2, 3]


async def test_concurrent_appends_group_commit_in_order(tmp_path: Path) -> None:
    recorder = Recorder()
    async with EventLog.open(tmp_path / "log.db") as log:
        log.add_listener(recorder)
        log.add_listener(recorder)  # idempotent

        async def producer(run: str) -> None:
            for i in range(20):
                await log.append(run, deltas(5, run_id=run, start=i * 5))

        async with trio.open_nursery() as nursery:
            for p in range(10):
                nursery.start_soon(producer, f"run-{p}")
        # 200 appends went into far fewer transactions
        assert log.transactions < 200
        total = await log.last_gid()
        assert total == 1000
        # listeners see every committed event once, in commit (gid) order
        assert [i.gid for i in recorder.items] == list(range(1, 1001))
        for p in range(10):
            assert [e.seq for e in await log.read(f"run-{p}")] == list(range(1, 101))


async def test_a_bad_append_fails_alone_in_its_transaction(tmp_path: Path) -> None:
    recorder = Recorder()
    async with EventLog.open(tmp_path / "log.db") as log:
        log.add_listener(recorder)
        await log.append("a", deltas(2))
        recorder.gate = trio.Event()  # hold the writer in publish so the next appends group up
        results: dict[str, object] = {}

        async def append(name: str, run: str, events: list[RuntimeEvent]) -> None:
            try:
                results[name] = await log.append(run, events)
            except sqlite3.IntegrityError as exc:
                results[name] = exc

        async with trio.open_nursery() as nursery:
            nursery.start_soon(append, "first", "a", deltas(1, start=2))
            await committed(log, 2)
            nursery.start_soon(append, "dup", "a", deltas(1, start=1))
            nursery.start_soon(append, "other", "b", deltas(2))
            await committed(log, 3)
            recorder.gate.set()
        assert log.transactions == 3  # "dup" and "other" shared one transaction
        assert results["first"] == [3]
        assert isinstance(results["dup"], sqlite3.IntegrityError)
        assert results["other"] == [4, 5]
        assert [i.gid for i in recorder.items] == [1, 2, 3, 4, 5]


async def test_cancelled_append_before_the_writer_took_it_writes_nothing(tmp_path: Path) -> None:
    recorder = Recorder()
    async with EventLog.open(tmp_path / "log.db") as log:
        log.add_listener(recorder)
        recorder.gate = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.append, "a", deltas(1))
            await committed(log, 1)  # batch 1 is held in publish
            nursery.start_soon(log.append, "b", deltas(1))
            await committed(log, 2)  # batch 2 is committed and waits to be published
            with trio.move_on_after(0.01) as scope:
                await log.append("a", deltas(1, start=1))  # queued behind them, then cancelled
            assert scope.cancelled_caught
            recorder.gate.set()
        assert [e.seq for e in await log.read("a")] == [1]
        assert await log.append("a", deltas(1, start=1)) == [3]  # the same seq goes in later


async def test_runs_and_sessions(tmp_path: Path) -> None:
    async with EventLog.open(tmp_path / "log.db", clock=lambda: 42) as log:
        await log.start_run("k:1", runtime_id="claude-code", session_key="k")
        await log.start_run("k:2", runtime_id="codex", session_key="k")
        await log.record_session(
            "k",
            runtime_id="claude-code",
            native_session_id="abc",
            codec_blob='{"x":1}',
            origin_cwd="/work/repo",
        )
        await log.finish_run("k:1", status="success", outcome={"summary": "ok", "costUsd": None})
    async with EventLog.open(tmp_path / "log.db") as log:
        first, second = await log.runs()
        assert (first.run_key, first.status, first.started_ms, first.ended_ms) == (
            "k:1",
            "success",
            42,
            42,
        )
        assert first.outcome == {"summary": "ok", "costUsd": None}
        # never finished: ended when its log closed (no events: nothing to close)
        assert (second.run_key, second.status, second.outcome) == ("k:2", "interrupted", None)
        session = await log.get_session("k")
        assert session is not None
        assert (session.native_session_id, session.codec_blob, session.origin_cwd) == (
            "abc",
            '{"x":1}',
            "/work/repo",
        )
        assert await log.get_session("missing") is None
        assert session.agent_id is None  # recorded without one


async def test_a_session_resumes_as_the_identity_it_ran_as(tmp_path: Path) -> None:
    # a per-identity home (Codex, Claude Code) holds the session: `run --resume` and `recover`
    # must run as the agent the run ran as, not as their own default
    async with EventLog.open(tmp_path / "log.db") as log:
        await log.start_run("runtime:codex:task:t:run-1", runtime_id="codex", session_key="s")
        await log.record_session(
            "s",
            runtime_id="codex",
            native_session_id="thread-1",
            codec_blob=None,
            origin_cwd="/work/repo",
            run_key="runtime:codex:task:t:run-1",
            agent_id="batch",
        )
    async with EventLog.open(tmp_path / "log.db") as log:  # left interrupted by the close
        [(runtime, task)] = await recoverable_tasks(log)
        assert (runtime, task.agent_id, task.cwd) == ("codex", "batch", "/work/repo")
        _, again = await resumable_task(log, "last", "go on", agent_id="cli")
        assert again.agent_id == "batch"


def test_an_older_sessions_table_gains_the_agent_column(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE sessions (run_key TEXT PRIMARY KEY, session_key TEXT NOT NULL, "
            "runtime_id TEXT NOT NULL, native_session_id TEXT, codec_blob TEXT, "
            "origin_cwd TEXT, updated_ms INTEGER NOT NULL);"
            "INSERT INTO sessions VALUES ('r', 's', 'codex', 'thread-1', NULL, '/w', 1);"
        )
    conn.close()

    async def check() -> None:
        async with EventLog.open(path) as log:
            session = await log.get_session("r")
            assert session is not None
            assert (session.native_session_id, session.agent_id) == ("thread-1", None)
            await log.record_session(
                "s", runtime_id="codex", native_session_id=None, codec_blob=None,
                origin_cwd=None, run_key="r", agent_id="cli",
            )  # fmt: skip
            await log.flush()
            refined = await log.get_session("r")
            assert refined is not None
            assert (refined.native_session_id, refined.agent_id) == ("thread-1", "cli")

    trio.run(check)


async def test_closed_log_refuses_appends_and_caller_errors_are_not_wrapped(
    tmp_path: Path,
) -> None:
    with pytest.raises(KeyError):
        async with EventLog.open(tmp_path / "log.db") as log:
            raise KeyError("mine")  # the caller's own error, not an ExceptionGroup
    with pytest.raises(trio.ClosedResourceError):
        await log.append("a", deltas(1))


WRITER = textwrap.dedent(
    """
    import sys, trio
    from orchestrator.core import EventFactory
    from orchestrator.engine.eventlog import EventLog

    async def main():
        async with EventLog.open(sys.argv[1]) as log:
            await log.record_session("s", runtime_id="codex", native_session_id="thread-1",
                                     codec_blob='{"thread":"thread-1"}', origin_cwd="/repo")
            make = EventFactory(run_id="r", clock=lambda: 1)
            n = 0

            async def writer():
                nonlocal n
                while True:
                    await log.append("run", [make.text_delta("x") for _ in range(50)])
                    n += 50
                    if n == 1000:
                        print("ready", flush=True)

            async def other(k):
                m = EventFactory(run_id=f"o{k}", clock=lambda: 1)
                while True:
                    await log.append(f"other-{k}", [m.text_delta("y") for _ in range(7)])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(writer)
                for k in range(3):
                    nursery.start_soon(other, k)

    trio.run(main)
    """
)


def test_log_survives_sigkill_intact_and_gapless(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True, env=env
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGKILL)  # mid-write: the writers never stop
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    async def check() -> None:
        async with EventLog.open(db) as log:
            events = await log.read("run")
            assert len(events) >= 1000
            assert len(events) % 50 == 0  # whole appends only
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            for k in range(3):
                seqs = [e.seq for e in await log.read(f"other-{k}")]
                assert len(seqs) % 7 == 0
                assert seqs == list(range(1, len(seqs) + 1))
            everything = await log.read_since(0, limit=1_000_000)
            assert [i.gid for i in everything] == list(range(1, len(everything) + 1))
            session = await log.get_session("s")
            assert session is not None
            assert session.native_session_id == "thread-1"
            assert session.codec_blob == '{"thread":"thread-1"}'
            assert session.origin_cwd == "/repo"
            # and the log takes new writes after the crash
            make = EventFactory(run_id="r", clock=lambda: 1, seq=len(events))
            assert await log.append("run", [make.text_delta("after")]) == [len(everything) + 1]

    trio.run(check)


async def test_run_and_session_rows_share_the_events_transactions(tmp_path: Path) -> None:
    """Many runs starting at once: their run rows, session rows, events and finishes are
    group-committed together (a few transactions, not one per call), and every read sees
    what was queued before it."""
    recorder = Recorder()
    async with EventLog.open(tmp_path / "log.db") as log:
        log.add_listener(recorder)

        async def one_run(i: int) -> None:
            key = f"run-{i}"
            await log.start_run(key, runtime_id="scripted", session_key=f"s-{i}")
            await log.record_session(
                f"s-{i}",
                runtime_id="scripted",
                native_session_id=f"n-{i}",
                codec_blob=None,
                origin_cwd="/repo",
            )
            await log.append(key, deltas(3, run_id=key))
            await log.finish_run(key, status="success", outcome={"i": i})

        async with trio.open_nursery() as nursery:
            for i in range(200):
                nursery.start_soon(one_run, i)
        # 800 calls; start_run and append each wait for a commit, so at least 2 rounds
        assert 2 <= log.transactions <= 40
        runs = await log.runs()  # reads flush what is queued (the finishes)
        assert len(runs) == 200
        assert {r.status for r in runs} == {"success"}
        session = await log.get_session("s-7")
        assert session is not None and session.native_session_id == "n-7"
        assert len(recorder.items) == 600
        assert [i.gid for i in recorder.items] == list(range(1, 601))


async def test_a_failing_row_fails_alone(tmp_path: Path) -> None:
    async with EventLog.open(tmp_path / "log.db") as log:
        await log.start_run("k", runtime_id="x", session_key="k")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.append, "k", deltas(2))
            # a statement that fails inside the same transaction as the append
            nursery.start_soon(
                functools.partial(
                    log._write,  # pyright: ignore[reportPrivateUsage]
                    "INSERT INTO nowhere VALUES (1)",
                    (),
                    what="broken",
                    wait=False,
                )
            )
        await log.flush()
        assert [e.seq for e in await log.read("k")] == [1, 2]
        assert (await log.runs())[0].run_key == "k"


async def test_full_sync_commits_in_the_database_thread(tmp_path: Path) -> None:
    recorder = Recorder()
    async with EventLog.open(tmp_path / "log.db", synchronous="FULL") as log:
        log.add_listener(recorder)
        await log.start_run("a", runtime_id="x", session_key="a")
        async with trio.open_nursery() as nursery:
            for run in ("a", "b", "c"):
                nursery.start_soon(log.append, run, deltas(4, run_id=run))
        assert [e.seq for e in await log.read("b")] == [1, 2, 3, 4]
        assert [i.gid for i in recorder.items] == list(range(1, 13))
        assert (await log.runs())[0].status == "running"


def raw_runs(path: Path) -> dict[str, str]:
    """run key → status, read without an ``EventLog`` (whose open would end runs itself)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {str(k): str(s) for k, s in db.execute("SELECT run_key, status FROM runs")}
    finally:
        db.close()


async def test_closing_ends_the_runs_it_was_not_told_the_end_of(tmp_path: Path) -> None:
    """A process that stops without finishing its runs (a forced Ctrl-C cancels everything)
    never leaves them ``running``: a stream without its done gets ``error{interrupted}`` +
    ``done{error}``; one whose done was logged keeps it and the run takes its reason; a run
    that was finished, or another log's run, is left as it is."""
    path = tmp_path / "events.db"
    async with EventLog.open(path) as other:
        await other.start_run("theirs", runtime_id="x", session_key="t")
        with trio.CancelScope() as scope:
            async with EventLog.open(path) as log:
                for key in ("cut", "done", "finished"):
                    await log.start_run(key, runtime_id="x", session_key=key)
                    await log.append(key, deltas(2, run_id=key))
                make = EventFactory(run_id="done", clock=lambda: 1, seq=2)
                await log.append("done", make.finish("aborted", ""))
                await log.finish_run("finished", status="success", outcome={})
                await log.flush()
                scope.cancel()  # as a forced exit does: nothing else is written
                await trio.sleep_forever()
        assert raw_runs(path) == {
            "theirs": "running",  # its log is still open, its process alive
            "cut": "interrupted",
            "done": "aborted",
            "finished": "success",
        }
        cut = await other.read("cut")
        assert [(e.seq, e.kind) for e in cut] == [(1, "text-delta"), (2, "text-delta"),
                                                 (3, "error"), (4, "done")]  # fmt: skip
        assert cut[2].model_dump()["code"] == "interrupted"
        assert [e.kind for e in await other.read("done")] == ["text-delta"] * 2 + ["done"]


async def test_run_listing_reads_the_newest_runs_through_an_index(tmp_path: Path) -> None:
    """`replay --list` over a long log: the newest N runs, oldest of them first, read through the
    started_ms index (no scan and sort of every run), title and USD taken from the outcome."""
    async with EventLog.open(tmp_path / "events.db") as log:
        for i in range(300):
            key = f"runtime:scripted:task:t{i}:run-{i}"
            await log.start_run(key, runtime_id="scripted", session_key=f"s{i}")
            await log.finish_run(key, status="success", outcome={"title": f"p{i}", "costUsd": i})
        newest = await log.run_listing(3)
        assert [r.title for r in newest] == ["p297", "p298", "p299"]
        assert [r.cost_usd for r in newest] == [297, 298, 299]
        assert len(await log.run_listing(None)) == 300
    conn = sqlite3.connect(tmp_path / "events.db")
    plan = " ".join(
        str(row[-1])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT run_key FROM runs ORDER BY started_ms DESC, rowid DESC "
            "LIMIT 50"
        )
    )
    assert "runs_by_start" in plan and "TEMP B-TREE" not in plan, plan
    plan = " ".join(
        str(row[-1])
        for row in conn.execute("EXPLAIN QUERY PLAN SELECT run_key FROM runs WHERE status = 'x'")
    )
    assert "runs_by_status" in plan, plan
    conn.close()
