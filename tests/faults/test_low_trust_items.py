"""Issue 40's low items: a state directory another user can write is refused (as ssh refuses a
loose key file), crash files are private and stay in the state directory, deeply nested TOML is
a clean error, and ``serve --host 127.0.0.2`` prints a URL that answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
import trio

from orchestrator.cli.commands import crash_report, usable_state_dir
from orchestrator.core.config import load_config
from orchestrator.core.errors import ConfigError
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
