"""A full disk (or a file-size limit) while a run writes its log: one clear line, the run ended
as far as can be recorded, everything readable after — never "internal error" nor "cannot
rollback - no transaction is active"."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.core.errors import EventLogWriteError
from orchestrator.core.events import EventFactory
from orchestrator.engine.eventlog import EventLog


def cli(
    *args: str, env: dict[str, str], limit: int | None = None
) -> subprocess.CompletedProcess[str]:
    def apply_limit() -> None:  # in the child: writes past `limit` bytes fail (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        env=env,
        preexec_fn=apply_limit,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_run_that_cannot_write_its_log_says_so_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "big.json"
    frames = [{"type": "init", "sessionId": "x"}, {"type": "text", "text": "started\n"}]
    frames += [{"type": "sleep", "seconds": 0.3}]  # what came first is committed on its own
    frames += [{"type": "text", "text": "x" * 1000 + "\n"} for _ in range(3000)]
    script.write_text(json.dumps([*frames, {"type": "result", "ok": True}]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "RINGLEADER_SCRIPTED_SCRIPT": str(script),
    }
    run = cli("run", "--runtime", "scripted", "--json", "fill the disk", env=env, limit=400_000)
    assert run.returncode == 2, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("ringleader: the event log ") and "could not be written" in last
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert "cannot rollback" not in run.stderr
    listed = cli("replay", "--list", "--json", env=env)  # space is back: everything reads
    assert listed.returncode == 0, listed.stderr
    [row] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert row["status"] == "interrupted"  # ended, not left running
    replayed = cli("replay", row["runKey"], "--json", env=env)
    assert replayed.returncode == 0, replayed.stderr
    events = [json.loads(line) for line in replayed.stdout.splitlines()]
    assert events[0]["kind"] == "status" and events[1]["text"] == "started\n"
    assert [e["kind"] for e in events[-2:]] == ["error", "done"]  # ended as interrupted
    # the table under the lanes says why the run failed in the same words, not trio's
    # "Exceptions from Trio nursery (1 sub-exception)"
    env["RINGLEADER_STATE_DIR"] = str(tmp_path / "state2")
    shown = cli("run", "--runtime", "scripted", "fill the disk", env=env, limit=400_000)
    assert shown.returncode == 2, shown.stderr
    [said] = [line for line in shown.stdout.splitlines() if line.startswith("scripted: ")]
    assert "could not be written" in said and "sub-exception" not in shown.stdout, said


async def test_a_full_database_fails_one_write_cleanly_and_the_log_goes_on(tmp_path: Path) -> None:
    make = EventFactory(run_id="r")
    async with EventLog.open(tmp_path / "events.db") as log:
        await log.start_run("a", runtime_id="scripted", session_key="s")
        await log.append("a", [make.text_delta("before\n")])
        conn = log._conn  # pyright: ignore[reportPrivateUsage]
        db = log._db  # pyright: ignore[reportPrivateUsage]
        pages = await db.call(lambda: conn.execute("PRAGMA page_count").fetchone()[0])
        await db.call(lambda: conn.execute(f"PRAGMA max_page_count = {pages}"))  # SQLITE_FULL
        with pytest.raises(EventLogWriteError, match="could not be written") as caught:
            for _ in range(200):  # until the WAL checkpoint must grow the file
                await log.append("a", [make.text_delta("y" * 4000)])
                await log.flush()
        assert "cannot rollback" not in str(caught.value)
        assert [r.run_key for r in await log.runs()] == ["a"]  # reads go on
        await db.call(lambda: conn.execute("PRAGMA max_page_count = 1073741823"))  # space again
        await log.append("a", [make.text_delta("after\n")])
        texts = [getattr(e, "text", "") for e in await log.read("a")]
        assert texts[0] == "before\n" and texts[-1] == "after\n"
