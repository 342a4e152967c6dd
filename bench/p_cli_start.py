"""Path 9: the cold start of ``ringleader runtimes``, ``ringleader --version`` and ``ringleader
replay --list`` over a log of 100,000 runs, against ``python -c pass``.

``ringleader runtimes`` imports the command, discovers every runtime through the entry-point
group, builds each adapter (importing its module) and asks it for its capabilities and its
health, side by side, then prints the table: what a newcomer runs first. Issue #12 wants it under
one second when no runtime is slow. Each pass is a fresh process (cold: nothing imported yet) in
an empty directory with an empty user config dir, timed by the wall clock from spawn to exit (what
the user waits for); the limit is the same interpreter's bare start, ``python -c pass``, measured
in the same run, pass for pass, the two interleaved so a load spike hits both. The CPU seconds
the command used (its own and its children's: a CLI's health check runs ``--version``) are noted
next to the wall time: on a shared machine the wall clock also counts the time others got.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._core import Config, Row, Target, figure, path

UNIT = "ms"


def ringleader_argv() -> list[str]:
    """The console script next to this interpreter, else ``python -m orchestrator.cli``."""
    script = shutil.which("ringleader", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "orchestrator.cli"]


def _fill_log(state: Path, runs: int) -> None:
    """A state directory whose event log holds ``runs`` finished runs (rows written directly)."""
    import json
    import sqlite3

    import trio

    from orchestrator.engine.eventlog import EventLog

    async def create() -> None:
        async with EventLog.open(state / "events.db"):
            pass

    trio.run(create)
    conn = sqlite3.connect(state / "events.db")
    start = int(time.time() * 1000) - runs * 100
    conn.executemany(
        "INSERT INTO runs (run_key, runtime_id, session_key, status, started_ms, ended_ms, "
        "outcome) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            (
                f"runtime:native:task:t{i}:run-{i:08x}",
                "native",
                f"runtime:native:task:t{i}",
                "success",
                start + i * 100,
                start + i * 100 + 50,
                json.dumps({"title": f"task number {i}", "costUsd": 0.001, "status": "success"}),
            )
            for i in range(runs)
        ),
    )
    conn.commit()
    conn.close()


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall milliseconds from spawn to exit, and the CPU milliseconds the process tree used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[-1]} exited {proc.returncode}: {proc.stderr[-300:]!r}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


@path("cli-start", "ringleader runtimes cold start vs python -c pass", timeout_s=180)
def cli_start(cfg: Config) -> list[Row]:
    row = Row(
        "cli-start-runtimes",
        "9. `ringleader runtimes` cold start (every runtime: build, capabilities, health)",
        UNIT,
        "lower",
        Target("< 1 s when no runtime is slow (#12)", "max", 1000.0),
    )
    version_row = Row(
        "cli-start-version",
        "9b. `ringleader --version` cold start",
        UNIT,
        "lower",
        Target("≤ 3× python -c pass (#37)", "max_ratio_to_limit", 3.0),
    )
    runs = 1_000 if cfg.smoke else 100_000
    listing_row = Row(
        "cli-start-replay-list",
        f"9c. `ringleader replay --list` over {runs:,} runs: CPU of the command",
        UNIT,
        "lower",
        Target("≤ 1 s of our own time (#37)", "max", 1000.0),
    )
    ours_argv = [*ringleader_argv(), "runtimes"]
    version_argv = [*ringleader_argv(), "--version"]
    listing_argv = [*ringleader_argv(), "replay", "--list"]
    bare_argv = [sys.executable, "-c", "pass"]
    with tempfile.TemporaryDirectory(prefix="ringleader-bench-cli-") as tmp:
        cwd = Path(tmp) / "cwd"
        cwd.mkdir()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("RINGLEADER_") or k == "RINGLEADER_RUNTIMES_DIR"
        }
        env |= {
            "XDG_CONFIG_HOME": str(Path(tmp) / "xdg"),
            "RINGLEADER_STATE_DIR": str(Path(tmp) / "state"),
            "NO_COLOR": "1",
        }
        for _ in range(cfg.warmup):  # the OS page cache, not our imports: each pass is cold
            _timed(ours_argv, cwd, env)
            _timed(bare_argv, cwd, env)
        ours: list[tuple[float, float]] = []
        bare: list[tuple[float, float]] = []
        version: list[tuple[float, float]] = []
        for _ in range(cfg.min_passes):
            ours.append(_timed(ours_argv, cwd, env))
            bare.append(_timed(bare_argv, cwd, env))
            version.append(_timed(version_argv, cwd, env))
        big = Path(tmp) / "big-state"
        big.mkdir(mode=0o700)
        _fill_log(big, runs)
        listing_env = env | {"RINGLEADER_STATE_DIR": str(big)}
        _timed(listing_argv, cwd, listing_env)  # the first open adds the indexes of this version
        listing = [_timed(listing_argv, cwd, listing_env) for _ in range(cfg.min_passes)]
    cpu = sorted(c for _, c in ours)[len(ours) // 2]
    row.ours = figure(
        "ringleader runtimes",
        [w for w, _ in ours],
        UNIT,
        "lower",
        note=f"median CPU {cpu:.0f} ms (the command and its children)",
    )
    row.limit = figure("python -c pass", [w for w, _ in bare], UNIT, "lower")
    row.notes.append(
        f"CPU (the command and its children), median: {cpu:.0f} ms; load average at the end: "
        f"{os.getloadavg()[0]:.2f} (the wall clock also counts the time other processes got)"
    )
    version_row.ours = figure("ringleader --version", [w for w, _ in version], UNIT, "lower")
    version_row.limit = figure("python -c pass", [w for w, _ in bare], UNIT, "lower")
    listing_row.ours = figure(
        "replay --list (CPU)",
        [c for _, c in listing],
        UNIT,
        "lower",
        note=f"wall median {sorted(w for w, _ in listing)[len(listing) // 2]:.0f} ms",
    )
    listing_row.limit = figure("python -c pass (CPU)", [c for _, c in bare], UNIT, "lower")
    listing_row.notes.append(
        "the newest 50 runs through the started_ms index (title and USD extracted in SQLite); "
        "the CPU includes the interpreter's start and imports"
    )
    return [row, version_row, listing_row]
