"""Issue 40: ``ringleader prune`` also removes the OpenClaw transcripts of the runs it prunes.
They live in ``<state>/openclaw`` (OpenClaw's own store, written by nobody but a gateway), so
prune starts a gateway there — here the fake gateway as a real child process, recording each
``sessions.delete`` — and deletes the OpenClaw sessions that no kept run still records; a
session a kept run continues stays. While a gateway holds the directory (a run is going), the
OpenClaw runs are kept in the log too, said in one line, so a later prune still finds them;
without OpenClaw installed the runs go and the line says their sessions stay."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import trio

from orchestrator.core import EventFactory
from orchestrator.engine.eventlog import EventLog

from .test_gateway import stand_in

DAY_MS = 86_400_000


async def fill(path: Path) -> None:
    """Old runs: two OpenClaw sessions (``old-1``; ``old-2``, which a new run continues) and a
    scripted one; and that new OpenClaw run."""
    runs = (  # name, runtime, OpenClaw session key, age in days
        ("old-1", "openclaw", "agent:main:one", 40),
        ("old-2", "openclaw", "agent:main:two", 40),
        ("old-s", "scripted", None, 40),
        ("new-2", "openclaw", "agent:main:two", 1),
    )
    async with EventLog.open(path) as log:
        for name, runtime, gateway_key, _ in runs:
            key = f"runtime:{runtime}:task:{name}:run-1"
            session = f"runtime:{runtime}:task:{name}"
            await log.start_run(key, runtime_id=runtime, session_key=session)
            await log.append(key, [EventFactory(run_id=name, clock=lambda: 1).text_delta("x")])
            blob = json.dumps({"sessionKey": session, "sessionId": gateway_key})
            await log.record_session(
                session, runtime_id=runtime, native_session_id=name, origin_cwd="/tmp",
                codec_blob=blob if gateway_key else None, run_key=key,
            )  # fmt: skip
            await log.finish_run(key, status="success", outcome={"title": name})
    conn = sqlite3.connect(path)
    now = int(time.time() * 1000)
    for name, runtime, _, age in runs:
        conn.execute(
            "UPDATE runs SET ended_ms = ? WHERE run_key = ?",
            (now - age * DAY_MS, f"runtime:{runtime}:task:{name}:run-1"),
        )
    conn.commit()
    conn.close()


def left(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return sorted(r[0].split(":")[3] for r in conn.execute("SELECT run_key FROM runs"))
    finally:
        conn.close()


def prune(tmp_path: Path, binary: str | None = None) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "ringleader.toml"
    config.write_text(f'[runtimes.openclaw]\nbinary = "{binary or stand_in(tmp_path)}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"RINGLEADER_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "prune", "--older-than", "30d",
         "--config", str(config)],
        capture_output=True, text=True, env=env, check=False, timeout=120, cwd=tmp_path,
    )  # fmt: skip


def test_prune_deletes_the_openclaw_sessions_no_kept_run_continues(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "openclaw").mkdir(parents=True, mode=0o700)
    trio.run(fill, state / "events.db")
    done = prune(tmp_path)
    assert done.returncode == 0, done
    assert done.stdout.startswith("removed 3 runs (3 events)"), done.stdout
    assert "removed 1 openclaw session it kept" in done.stdout, done.stdout
    deleted = (state / "openclaw" / "deleted.txt").read_text().split()
    assert deleted == ["agent:main:one"]  # "two" goes on in the new run
    assert left(state / "events.db") == ["new-2"]


def test_prune_keeps_the_openclaw_runs_while_a_gateway_holds_their_sessions(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    (state / "openclaw").mkdir(parents=True, mode=0o700)
    trio.run(fill, state / "events.db")
    fd = os.open(state / "openclaw" / ".gateway.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a run's gateway holds it
        done = prune(tmp_path)
    finally:
        os.close(fd)
    assert done.returncode == 1, done
    assert done.stdout.startswith("removed 1 run (1 events)"), done.stdout
    assert "kept the openclaw runs: their sessions could not be removed: another OpenClaw " \
        "gateway holds" in done.stdout, done.stdout  # fmt: skip
    assert "Traceback" not in done.stderr
    assert not (state / "openclaw" / "deleted.txt").exists()
    assert left(state / "events.db") == ["new-2", "old-1", "old-2"]  # a later prune finds them
    again = prune(tmp_path)
    assert again.returncode == 0 and "removed 1 openclaw session" in again.stdout, again
    assert left(state / "events.db") == ["new-2"]


def test_prune_without_openclaw_installed_removes_the_runs_and_says_what_stays(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    (state / "openclaw").mkdir(parents=True, mode=0o700)
    trio.run(fill, state / "events.db")
    done = prune(tmp_path, binary=str(tmp_path / "missing" / "openclaw"))
    assert done.returncode == 0, done
    assert done.stdout.startswith("removed 3 runs (3 events)"), done.stdout
    assert "left the openclaw sessions of those runs where they are: runtime binary not " \
        "found" in done.stdout, done.stdout  # fmt: skip
    assert left(state / "events.db") == ["new-2"]
