"""Issue 40's low items: a state directory another user can write is refused (as ssh refuses a
loose key file), a planted ``procs/*.json`` kills nothing of yours, crash files are private and stay in the state directory, deeply nested TOML is
a clean error, and ``serve --host 127.0.0.2`` prints a URL that answers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
import trio

from orchestrator.cli.commands import crash_report, usable_state_dir
from orchestrator.core.config import load_config
from orchestrator.core.errors import ConfigError
from orchestrator.core.lifetime import (
    MARK_ENV,
    ProcessIdentity,
    ProcessRegistry,
    ensure_private_dir,
)
from orchestrator.engine import EventLog, Feed, serve_feed


def test_a_state_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    assert usable_state_dir(state) == state
    state.chmod(0o777)
    with pytest.raises(ConfigError, match=r"writable by other users.*chmod 700"):
        usable_state_dir(state)
    state.chmod(0o770)
    with pytest.raises(ConfigError, match="writable by other users"):
        usable_state_dir(state)
    env = {**os.environ, "RINGLEADER_STATE_DIR": str(state)}
    listed = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "replay", "--list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert listed.returncode == 2
    assert listed.stderr.strip().splitlines() == [
        f"ringleader: the state directory {state} is writable by other users (mode 770); "
        f"make it private: chmod 700 {state}"
    ]
    # the commands that only read what is there (quota readings, schedules) refuse it too
    for command in ("usage", "schedules"):
        read = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", command],
            env=env | {"XDG_CONFIG_HOME": str(tmp_path / "xdg")},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert read.returncode == 2 and "writable by other users" in read.stderr, read.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user's needs root")
def test_a_state_directory_of_another_user_is_refused_by_the_engine_too(tmp_path: Path) -> None:
    state = tmp_path / "theirs"
    state.mkdir(mode=0o755)
    os.chown(state, 65534, 65534)
    with pytest.raises(ConfigError, match="belongs to another user"):
        usable_state_dir(state)
    with pytest.raises(ConfigError, match="belongs to another user"):  # the runner's check
        ensure_private_dir(state, tighten=True)


def _plant(procs: Path, victim: subprocess.Popen[bytes], mark: str) -> Path:
    """An entry naming ``victim`` as the child of a dead orchestrator."""
    procs.mkdir(mode=0o700, exist_ok=True)
    entry = procs / f"{mark}.json"
    start = ProcessIdentity.of(victim.pid).start
    entry.write_text(
        json.dumps({"mark": mark, "ownerPid": 999_999_999, "ownerStart": 1, "pid": victim.pid,
                    "start": start, "adapter": None, "sessionKey": None})
    )  # fmt: skip
    return entry


def test_a_planted_process_entry_kills_nothing_of_yours(tmp_path: Path) -> None:
    """``procs/*.json`` names processes the next run kills (the children of a dead orchestrator):
    an entry naming a process of yours that is no child of ours (it lacks the mark) kills
    nothing; one that is not your own file, or in a directory others can write, is not read."""
    procs = tmp_path / "procs"
    registry = ProcessRegistry(procs)
    mark = "t12-mark-0001"
    unmarked = subprocess.Popen(["sleep", "60"])
    marked = subprocess.Popen(["sleep", "60"], env={**os.environ, MARK_ENV: mark})
    try:
        _plant(procs, unmarked, "t12-planted")
        assert registry.reap() == []
        assert unmarked.poll() is None, "a process without the mark was killed"
        if os.geteuid() == 0:  # a file of another user's naming a marked process: not read
            entry = _plant(procs, marked, mark)
            os.chown(entry, 65534, 65534)
            assert registry.reap() == [] and marked.poll() is None
            entry.unlink()
        _plant(procs, marked, mark)
        procs.chmod(0o777)  # writable by others: nothing in it is trusted
        assert registry.reap() == [] and marked.poll() is None
        procs.chmod(0o700)
        assert marked.pid in registry.reap()  # a real child of a dead orchestrator still goes
        assert marked.wait(timeout=10) == -signal.SIGKILL
        assert unmarked.poll() is None
    finally:
        for proc in (unmarked, marked):
            proc.kill()
            proc.wait()


def test_crash_files_are_private_and_in_the_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(state))
    monkeypatch.setenv("T12_SECRET_TOKEN", "t12-very-secret-value-0001")
    from orchestrator.core.redact import register_env_secrets

    register_env_secrets({"T12_SECRET_TOKEN": "t12-very-secret-value-0001"})
    line = crash_report(RuntimeError("boom with t12-very-secret-value-0001"))
    [crash] = state.glob("crash-*.txt")
    assert str(crash) in line and crash.stat().st_mode & 0o777 == 0o600
    assert "t12-very-secret-value-0001" not in crash.read_text()
    # an unusable state directory: no file anywhere else (no shared temp directory)
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a directory")
    assert "traceback is in" not in crash_report(RuntimeError("boom"))


def test_deeply_nested_toml_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "ringleader.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConfigError, match=r"nested too deeply|invalid TOML"):
        load_config(cwd=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})


async def test_serving_on_another_loopback_address_answers_at_its_url(tmp_path: Path) -> None:
    async with (
        EventLog.open(tmp_path / "log.db") as log,
        serve_feed(Feed(), log, host="127.0.0.2") as url,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        assert url.startswith("http://127.0.0.2:")
        answer = await http.get(f"{url}/runs", headers={"authorization": f"Bearer {url.token}"})
        assert answer.status_code == 200
        await trio.lowlevel.checkpoint()


def test_ray_auto_without_a_cluster_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is in the dev extra: scripts/setup")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RINGLEADER_", "RAY_"))}
    env |= {"RINGLEADER_STATE_DIR": str(tmp_path / "state"), "RAY_TMPDIR": str(tmp_path / "ray")}
    answer = subprocess.run(
        [
            *(sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "scripted"),
            *("--ray", "auto", "hi"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert answer.returncode == 2, answer.stderr
    last = answer.stderr.strip().splitlines()[-1]
    assert last.startswith("ringleader: no Ray cluster running on this machine"), answer.stderr
    assert "internal error" not in answer.stderr
