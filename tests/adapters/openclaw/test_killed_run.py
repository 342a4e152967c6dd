"""Issue 40: a ``ringleader run`` on OpenClaw SIGKILLed mid-run leaves nothing behind. The run
here is the real CLI (``python -m orchestrator.cli run --runtime openclaw``) with the fake gateway
as its gateway: a real child process started by the gateway manager (a stand-in ``openclaw``
executable), recorded in ``<state>/procs``. When the orchestrator dies, its gateway dies with it
(the per-child PID namespace, else the parent-death signal) — before anything else runs, not at
the next start's reap — and the ``<state>/openclaw`` lock it held is free for ``recover``."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from pathlib import Path

import trio

from orchestrator.core.lifetime import marked_pids
from orchestrator.model_server import serve_model_server

from .test_gateway import REPO, stand_in

SURVIVOR = (
    "import os, sys\n"
    f"sys.path.insert(0, {str(REPO)!r})\n"
    "from tests.adapters.openclaw.fake_gateway import main\n"
    "null = os.open(os.devnull, os.O_WRONLY)\n"
    "os.dup2(null, 1)\n"
    "os.dup2(null, 2)\n"
    "main(sys.argv[1:])\n"
)
"""The fake gateway writing to the null device: like a gateway that outlives its log pipes
(nothing but its parent's death can end it)."""


def lock_is_free(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)  # releases it again
    return True


def recorded_marks(state: Path) -> list[str]:
    marks: list[str] = []
    for path in (state / "procs").glob("*.json"):
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being written
        if entry.get("adapter") == "openclaw":
            marks.append(str(entry["mark"]))
    return marks


async def test_a_killed_run_leaves_no_gateway_and_frees_the_shared_state(tmp_path: Path) -> None:
    async with serve_model_server({"model": "m", "conversations": []}) as server:
        await run_and_kill(tmp_path, server.base_url)


async def run_and_kill(tmp_path: Path, base_url: str) -> None:
    state = tmp_path / "state"
    config = tmp_path / "ringleader.toml"
    config.write_text(
        f'[runtimes.openclaw]\nbinary = "{stand_in(tmp_path, SURVIVOR)}"\n'
        f'base_url = "{base_url}"\nmodel = "m"\n'
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RINGLEADER_") or k == "RINGLEADER_RUNTIMES_DIR"
    } | {"RINGLEADER_STATE_DIR": str(state), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    argv = [sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config),
            "--runtime", "openclaw", "--json", "never answered"]  # fmt: skip
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lock = state / "openclaw" / ".gateway.lock"
    proc = await trio.lowlevel.open_process(argv, cwd=workspace, env=env)
    try:
        with trio.fail_after(60):  # the run is up: its gateway recorded, alive, the lock held
            while True:
                marks = recorded_marks(state)
                live = [pid for mark in marks for pid in marked_pids(mark)]
                if live and lock.exists() and not lock_is_free(lock):
                    break
                assert proc.poll() is None, "the run ended before its gateway was up"
                await trio.sleep(0.05)
        proc.kill()
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert lock_is_free(lock)  # released with the orchestrator, whatever its gateway does
    with trio.fail_after(10):  # and the gateway is gone by itself, nothing reaped it
        while any(marked_pids(mark) for mark in marks):  # noqa: ASYNC110 - polling /proc
            await trio.sleep(0.05)
    assert recorded_marks(state) == marks  # the record stays for the next start's reap
