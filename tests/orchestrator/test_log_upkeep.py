"""A log that lasts: ``ringleader prune`` removes old runs (events and sessions too) and gives the
space back; ``ringleader doctor`` checks the file and, with --repair, rebuilds damaged indexes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.cli.cmd_prune import age_seconds
from orchestrator.core import EventFactory
from orchestrator.engine.eventlog import EventLog

DAY_MS = 86_400_000
NOW_MS = int(time.time() * 1000)


async def fill(path: Path) -> None:
    """Runs of each kind: old and new, finished well or not, and one still going (50 events
    each; the one going gets two more when this log closes: it was left unfinished)."""
    async with EventLog.open(path) as log:
        for name, status in (
            ("old-ok", "success"),
            ("old-failed", "error"),
            ("old-aborted", "aborted"),
            ("new-ok", "success"),
            ("going", "running"),
        ):
            key = f"runtime:scripted:task:{name}:run-1"
            await log.start_run(
                key, runtime_id="scripted", session_key=f"runtime:scripted:task:{name}"
            )
            make = EventFactory(run_id=name, clock=lambda: 1)
            await log.append(key, [make.text_delta("x" * 2000) for _ in range(50)])
            await log.record_session(
                f"runtime:scripted:task:{name}", runtime_id="scripted", native_session_id=name,
                codec_blob=None, origin_cwd="/tmp", run_key=key,
            )  # fmt: skip
            if status != "running":
                await log.finish_run(key, status=status, outcome={"title": name})
    conn = sqlite3.connect(path)  # when each ended (the log stamps the clock's now)
    for name, age_days in (("old-ok", 40), ("old-failed", 40), ("old-aborted", 40), ("new-ok", 1)):
        conn.execute(
            "UPDATE runs SET ended_ms = ? WHERE run_key = ?",
            (NOW_MS - age_days * DAY_MS, f"runtime:scripted:task:{name}:run-1"),
        )
    conn.execute(  # the log ended it when it closed (its process is still alive): going again
        "UPDATE runs SET ended_ms = NULL, status = 'running' "
        "WHERE run_key = 'runtime:scripted:task:going:run-1'"
    )
    conn.commit()
    conn.close()


def left(path: Path) -> tuple[list[str], int, int]:
    conn = sqlite3.connect(path)
    runs = sorted(r[0].split(":")[3] for r in conn.execute("SELECT run_key FROM runs"))
    events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    conn.close()
    return runs, events, sessions


async def test_prune_removes_old_runs_with_their_events_and_gives_the_space_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.db"
    await fill(path)
    cutoff = NOW_MS - 30 * DAY_MS
    async with EventLog.open(path) as log:
        dry = await log.prune(ended_before_ms=cutoff, dry_run=True)
        assert (dry.runs, dry.events) == (3, 150)
        assert left(path)[0] == ["going", "new-ok", "old-aborted", "old-failed", "old-ok"]
        kept_failed = await log.prune(
            ended_before_ms=cutoff, keep=("error", "failed", "interrupted", "aborted")
        )
        assert (kept_failed.runs, kept_failed.events) == (1, 50)
        assert left(path) == (["going", "new-ok", "old-aborted", "old-failed"], 202, 4)
        rest = await log.prune(ended_before_ms=cutoff)
        assert (rest.runs, rest.events) == (2, 100)
        assert rest.bytes_after < rest.bytes_before  # the file shrank (VACUUM)
        assert await log.read("runtime:scripted:task:new-ok:run-1")  # what is kept still reads
    assert left(path) == (["going", "new-ok"], 102, 2)  # never a run still going


def test_prune_command_says_what_it_did(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env["RINGLEADER_STATE_DIR"] = str(tmp_path)

    def prune(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", "prune", *args],
            capture_output=True, text=True, env=env, check=False, timeout=120,
        )  # fmt: skip

    assert prune().stdout.startswith("no event log yet")
    import trio

    trio.run(fill, tmp_path / "events.db")  # ended 40 days before NOW_MS: long ago today
    dry = prune("--older-than", "30d", "--keep-failed", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("would remove 1 run (50 events)"), dry
    done = prune("--older-than", "30d")
    assert done.returncode == 0 and done.stdout.startswith("removed 3 runs (150 events): ")
    bad = prune("--older-than", "3 days")
    assert bad.returncode == 2 and "is not an age" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize(("text", "seconds"), [("30d", 2_592_000), ("12h", 43_200), ("90m", 5400)])
def test_ages(text: str, seconds: float) -> None:
    assert age_seconds(text) == seconds


def test_doctor_finds_a_damaged_index_and_repairs_it(tmp_path: Path) -> None:
    import trio

    trio.run(fill, tmp_path / "events.db")
    conn = sqlite3.connect(tmp_path / "events.db")  # an index that no longer matches its table
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = 'CREATE INDEX runs_by_status ON runs (runtime_id)' "
        "WHERE name = 'runs_by_status'"
    )
    conn.commit()
    conn.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"RINGLEADER_STATE_DIR": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}

    def doctor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", "doctor", *args],
            capture_output=True, text=True, env=env, check=False, timeout=120,
        )  # fmt: skip

    found = doctor()
    assert found.returncode == 1, found.stdout + found.stderr
    assert "damaged (row 1 missing from index runs_by_status" in found.stdout
    assert "ringleader doctor --repair" in found.stdout
    fixed = doctor("--repair")
    assert "sound (SQLite integrity check)" in fixed.stdout, fixed.stdout + fixed.stderr
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "sound" in doctor().stdout
