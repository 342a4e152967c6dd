"""``--model-server`` beyond ``run`` (issue 34 item 6) and runs of one runtime side by side
(item 7), through real ``ringleader`` processes against the scripted model server: a batch of
two native tasks (both succeed, at the same time), ``serve`` running a posted native task, and
the flag on every command that starts runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from orchestrator.engine.eventlog import EventLog, RunRow
from tests.board.conftest import Served


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    return env | {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "NO_COLOR": "1",
    }


def runs_of(tmp_path: Path) -> list[RunRow]:
    async def read() -> list[RunRow]:
        async with EventLog.open(tmp_path / "state" / "events.db") as log:
            return await log.runs()

    return trio.run(read)


def test_a_batch_of_two_native_tasks_runs_them_at_once_against_the_model_server(
    tmp_path: Path,
) -> None:
    (tmp_path / "tasks.toml").write_text(
        "".join(
            f'[[task]]\nid = "{name}"\nruntime = "native"\nprompt = "the {name} task"\n'
            for name in ("one", "two")
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "batch", "tasks.toml", "--model-server"],
        cwd=tmp_path,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    rows = runs_of(tmp_path)
    assert sorted(r.status for r in rows) == ["success", "success"]
    first, second = sorted(rows, key=lambda r: r.started_ms)
    assert first.ended_ms is not None
    assert second.started_ms < first.ended_ms  # side by side, not one after the other


def test_run_points_native_at_the_model_server_and_leaves_scripted_beside_it(
    tmp_path: Path,
) -> None:
    """The scripted runtime talks to no model: beside native, `--model-server` leaves it as it
    is (alone, the flag is refused for it: tests/e2e/test_cli_model_server.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "scripted",
         "--runtime", "native", "--model-server", "--json", "hi"],
        cwd=tmp_path, env=env_for(tmp_path), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    rows = runs_of(tmp_path)
    assert sorted((r.runtime_id, r.status) for r in rows) == [
        ("native", "success"),
        ("scripted", "success"),
    ]


@pytest.mark.parametrize("command", ["recover", "approve", "batch", "serve", "acp"])
def test_every_command_that_starts_runs_takes_model_server(command: str) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and "--model-server [SCRIPT]" in shown.stdout


def test_serve_with_model_server_runs_a_posted_native_task(tmp_path: Path) -> None:
    server = Served(tmp_path, env_for(tmp_path), None, ("--model-server",))
    server.start()
    try:
        posted = server.post(
            "/tasks",
            json={"prompt": "look around", "runtime": "native", "model": None},
            timeout=60,
        )
        assert posted.status_code == 201, posted.text
        deadline = time.monotonic() + 120
        cards: list[dict[str, object]] = []
        while time.monotonic() < deadline:
            cards = server.get("/board", timeout=60).json()["cards"]
            if cards and all(c["column"] in ("done", "failed") for c in cards):
                break
            time.sleep(0.3)
        assert [c["column"] for c in cards] == ["done"], cards
    finally:
        server.close()
