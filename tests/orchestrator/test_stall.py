"""A run whose runtime keeps talking without progress (Codex's "Reconnecting…" statuses while
its model server is gone) ends ``error{stalled}`` after the configured time, on any runtime
(the actor decides, from the events); progress resets the clock, silence stays the idle
guard's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import trio.testing

from orchestrator.core import Done, ErrorEvent, Status

from .test_runner import TASK, ListSink, Scripts, caps, make_runner, registry_with, result


def reconnecting(n: int, every_s: float = 30) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    for i in range(n):
        frames += [
            {"type": "sleep", "seconds": every_s},
            {"type": "status", "detail": f"Reconnecting... {i % 5 + 1}/5"},
        ]
    return frames


async def test_statuses_without_progress_end_the_run_as_stalled(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    script = [{"type": "text", "text": "working"}, *reconnecting(10_000), result()]
    sink = ListSink()
    runner = make_runner(registry_with(Scripts(script), caps()), tmp_path, sink, stall_s=300)
    began = trio.current_time()
    outcome = await runner.run_task("scripted", TASK)
    elapsed = trio.current_time() - began
    assert outcome.status == "error"
    [events] = sink.events.values()
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["stalled"]
    assert "no progress for 300s" in errors[0].message
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "error"
    assert sum(isinstance(e, Done) for e in events) == 1
    assert any(isinstance(e, Status) and e.detail for e in events)
    assert 300 <= elapsed < 300 + 60  # not retried as a transient failure forever either


async def test_progress_resets_the_clock_and_silence_is_the_idle_guards(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    talking: list[dict[str, Any]] = []
    for i in range(40):  # 40 × 30 s = 20 min of statuses, with text every 2 minutes
        talking += reconnecting(1)
        if i % 4 == 3:
            talking.append({"type": "text", "text": f"step {i} "})
    sink = ListSink()
    runner = make_runner(
        registry_with(Scripts([*talking, result()]), caps()), tmp_path, sink, stall_s=300
    )
    assert (await runner.run_task("scripted", TASK)).status == "success"
    silent = [{"type": "text", "text": "hi"}, {"type": "sleep", "seconds": 10_000}, result()]
    sink = ListSink()
    runner = make_runner(
        registry_with(Scripts(silent), caps()), tmp_path, sink, stall_s=300, idle_s=900
    )
    began = trio.current_time()
    await runner.run_task("scripted", TASK)
    assert trio.current_time() - began >= 900  # the idle guard ended it, not the stall watch
    [events] = sink.events.values()
    assert "stalled" not in [e.code for e in events if isinstance(e, ErrorEvent)]


def test_run_max_stall_configures_it(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    script = tmp_path / "script.json"
    frames = [{"type": "text", "text": "working"}, *reconnecting(100, every_s=0.2), result()]
    script.write_text(json.dumps(frames))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "RINGLEADER_SCRIPTED_SCRIPT": str(script),
    }
    answer = subprocess.run(
        [
            *(sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "scripted"),
            *("--max-stall", "1", "--json", "go"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert answer.returncode == 1, answer.stderr
    kinds = [json.loads(line) for line in answer.stdout.splitlines()]
    assert [e["code"] for e in kinds if e["kind"] == "error"] == ["stalled"]
