"""Event log (durable, crash-safe) and board feed (fan-out, SSE resume without loss)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx2
import pytest
import trio

from adapters import ScriptedAdapter
from orchestrator import ConfigError, EventFactory, Runner, RuntimeEvent, RuntimeRegistry, TaskSpec
from orchestrator.eventlog import EventLog
from orchestrator.feed import Feed, RecordingSink, serve_feed


def deltas(n: int, run_id: str = "r") -> list[RuntimeEvent]:
    make = EventFactory(run_id=run_id, clock=lambda: 1)
    return [make.text_delta(f"t{i} ") for i in range(n)]


async def test_append_read_and_global_ids(tmp_path: Path) -> None:
    async with EventLog.open(tmp_path / "log.db") as log:
        g1 = await log.append("run-a", deltas(3))
        g2 = await log.append("run-b", deltas(2))
        assert g1 == [1, 2, 3]
        assert g2 == [4, 5]
        assert [e.seq for e in await log.read("run-a")] == [1, 2, 3]
        assert [e.seq for e in await log.read("run-a", after_seq=2)] == [3]
        since = await log.read_since(2)
        assert [(i.gid, i.run_key) for i in since] == [(3, "run-a"), (4, "run-b"), (5, "run-b")]
        assert await log.last_gid() == 5
        with pytest.raises(sqlite3.IntegrityError):
            await log.append("run-a", deltas(1))  # seq 1 again: the log refuses duplicates
        assert len(await log.read("run-a")) == 3  # and the failed batch left nothing behind


async def test_runs_and_sessions(tmp_path: Path) -> None:
    async with EventLog.open(tmp_path / "log.db") as log:
        await log.start_run("k:1", runtime_id="claude-code", session_key="k")
        await log.record_session(
            "k",
            runtime_id="claude-code",
            native_session_id="abc",
            codec_blob='{"x":1}',
            origin_cwd="/work/repo",
        )
        await log.finish_run("k:1", status="success", outcome={"summary": "ok"})
    async with EventLog.open(tmp_path / "log.db") as log:
        (run,) = await log.runs()
        assert run.status == "success"
        assert run.outcome == {"summary": "ok"}
        session = await log.get_session("k")
        assert session is not None
        assert session.origin_cwd == "/work/repo"
        assert session.native_session_id == "abc"
        assert await log.get_session("missing") is None


WRITER = textwrap.dedent(
    """
    import sys, trio
    from orchestrator import EventFactory
    from orchestrator.eventlog import EventLog

    async def main():
        async with EventLog.open(sys.argv[1]) as log:
            await log.record_session("s", runtime_id="codex", native_session_id="thread-1", codec_blob=None, origin_cwd="/repo")
            make = EventFactory(run_id="r", clock=lambda: 1)
            n = 0
            while True:
                batch = [make.text_delta("x") for _ in range(50)]
                await log.append("run", batch)
                n += 50
                if n == 500:
                    print("ready", flush=True)

    trio.run(main)
    """
)


def test_log_survives_sigkill_intact_and_gapless(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    async def check() -> None:
        async with EventLog.open(db) as log:
            events = await log.read("run")
            assert len(events) >= 500
            assert len(events) % 50 == 0  # whole transactions only
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            session = await log.get_session("s")
            assert session is not None
            assert session.native_session_id == "thread-1"
            assert session.origin_cwd == "/repo"

    trio.run(check)


async def test_feed_fans_out_and_disconnects_a_laggard_without_loss(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    feed = Feed(max_buffer=10, slow_timeout_s=1.0)
    async with EventLog.open(tmp_path / "log.db") as log:
        sink = RecordingSink(log, feed)
        fast = feed.subscribe()
        slow = feed.subscribe()
        got: list[int] = []

        async def drain() -> None:
            async for item in fast:
                got.append(item.gid)
                if len(got) == 30:
                    return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain)
            for i in range(3):
                await sink.deliver("run", deltas(10)[:10] if i == 0 else [])
            make = EventFactory(run_id="r", clock=lambda: 1, seq=10)
            await sink.deliver("run", [make.text_delta("y") for _ in range(20)])
        assert got == list(range(1, 31))
        assert slow.disconnected  # it never read, so it was dropped...
        assert len(await log.read_since(0)) == 30  # ...and can resume everything from the log
        assert feed.subscribers == 1  # only the reader that kept up
        await fast.aclose()
        assert feed.subscribers == 0


async def test_sse_resume_with_last_event_id_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    script = [{"type": "text", "text": f"part-{i} "} for i in range(40)] + [
        {"type": "result", "ok": True, "summary": "done"}
    ]
    registry = RuntimeRegistry()
    registry.register_factory("scripted", lambda: ScriptedAdapter(script))
    feed = Feed()
    async with EventLog.open(tmp_path / "log.db") as log, serve_feed(feed, log) as served:
        runner = Runner(registry, sink=RecordingSink(log, feed), state_dir=tmp_path / "state")
        seen: list[int] = []
        async with httpx2.AsyncClient(timeout=10) as http:
            # first connection: read a few events, then drop the connection
            async with http.stream("GET", f"{served.url}/events") as response:
                assert response.status_code == 200
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(
                        runner.run_task, "scripted", TaskSpec(task_id="t", title="t")
                    )
                    async for line in response.aiter_lines():
                        if line.startswith("id: "):
                            seen.append(int(line[4:]))
                            if len(seen) == 7:
                                break
            # second connection resumes from the last id it saw
            async with http.stream(
                "GET", f"{served.url}/events", headers={"Last-Event-ID": str(seen[-1])}
            ) as response:
                kinds: list[str] = []
                async for line in response.aiter_lines():
                    if line.startswith("id: "):
                        seen.append(int(line[4:]))
                    elif line.startswith("data: "):
                        kinds.append(json.loads(line[6:])["event"]["kind"])
                        if kinds[-1] == "done":
                            break
        total = await log.last_gid()
    assert seen == list(range(1, total + 1))  # every id exactly once, in order


async def test_serving_off_loopback_requires_a_token(tmp_path: Path) -> None:
    async with EventLog.open(tmp_path / "log.db") as log:
        with pytest.raises(ConfigError, match="requires a token"):
            async with serve_feed(Feed(), log, host="0.0.0.0"):
                pass


async def test_token_is_required_when_configured(tmp_path: Path) -> None:
    async with (
        EventLog.open(tmp_path / "log.db") as log,
        serve_feed(Feed(), log, token="s3cret-token") as served,
    ):
        async with httpx2.AsyncClient(timeout=5) as http:
            assert (await http.get(f"{served.url}/runs")).status_code == 401
            ok = await http.get(
                f"{served.url}/runs", headers={"authorization": "Bearer s3cret-token"}
            )
            assert ok.status_code == 200
            assert ok.json() == []
