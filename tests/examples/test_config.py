"""examples/config: one ringleader.toml with accounts, notifications and schedules, read by the
real config loader and by `ringleader config`, `usage`, `schedules` and `run`; its [notify]
reaches examples/config/notify_receiver.py (a real process on 127.0.0.1) through Apprise."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from orchestrator.core import load_config

from .kit import EXAMPLES, clean_env, ringleader

CONFIG = EXAMPLES / "config" / "ringleader.toml"


def test_the_config_loader_reads_accounts_notify_and_schedules(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    loaded = load_config(CONFIG, cwd=tmp_path, environ=env)
    assert loaded.files == (CONFIG,) and loaded.ignored == ()
    config = loaded.config
    assert sorted(config.runtime("claude-code").accounts) == ["personal", "work"]
    assert config.runtime("codex").accounts["team"].api_key_env == "TEAM_OPENAI_KEY"
    work = config.runtime("claude-code").accounts["work"].home_path()
    assert work == Path("~/.claude-work").expanduser()
    # the URL names its host by variable: left out until the variable is set
    assert config.notify.resolved_urls({}) == []
    hook = {"RINGLEADER_EXAMPLE_HOOK": "127.0.0.1:9"}
    assert config.notify.resolved_urls(hook) == ["json://127.0.0.1:9/ringleader"]
    assert config.notify.events == ("error", "done")
    assert [(s.id, s.runtime, s.account) for s in config.schedule] == [
        ("nightly-triage", "claude-code", "work"),
        ("hourly-hello", "scripted", None),
    ]
    assert config.schedule[0].fallback == ("personal", "codex@team")


def test_config_and_usage_show_the_accounts(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    shown = ringleader("--config", str(CONFIG), "config", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line for line in shown.stdout.splitlines()[2:] if line.strip()}
    assert "home=~/.claude-work" in rows["runtimes.claude-code.accounts.work"]
    assert str(CONFIG) in rows["runtimes.claude-code.accounts.personal"]
    assert "api_key_env=TEAM_OPENAI_KEY (not set)" in rows["runtimes.codex.accounts.team"]

    usage = ringleader("--config", str(CONFIG), "usage", "--json", cwd=tmp_path, env=env)
    assert usage.returncode == 0, usage.stderr
    meters = [json.loads(line) for line in usage.stdout.splitlines()]
    accounts = {(m["runtime"], m["account"]) for m in meters}
    assert {("claude-code", "work"), ("claude-code", "personal"), ("codex", "team")} <= accounts
    # nothing reported yet: unknown, never 0%
    assert all(not m["known"] and m["windows"] == [] for m in meters)


def test_schedules_lists_the_next_firings(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    before = dt.datetime.now(dt.UTC)
    listed = ringleader("--config", str(CONFIG), "schedules", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    schedules = {s["id"]: s for s in map(json.loads, listed.stdout.splitlines())}
    assert list(schedules) == ["nightly-triage", "hourly-hello"]
    nightly = schedules["nightly-triage"]
    assert (nightly["timezone"], nightly["catchUp"], nightly["last"]) == ("Europe/Riga", True, None)
    assert nightly["explained"] == "At 03:00 on Monday through Friday"
    firings = [dt.datetime.fromisoformat(t) for t in nightly["next"]]
    assert len(firings) == 3 and firings == sorted(firings) and firings[0] > before
    for firing in firings:  # 03:00 in Riga, Monday to Friday
        local = firing.astimezone(ZoneInfo("Europe/Riga"))
        assert (local.hour, local.minute, local.weekday() < 5) == (3, 0, True)
    hourly = [dt.datetime.fromisoformat(t) for t in schedules["hourly-hello"]["next"]]
    assert [t.minute for t in hourly] == [0, 0, 0]
    assert hourly[1] - hourly[0] == dt.timedelta(hours=1)


def test_notify_reaches_the_receiver_for_done_and_for_error(tmp_path: Path) -> None:
    receiver = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "config" / "notify_receiver.py"), "--port", "0",
         "--count", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert receiver.stderr is not None
        listening = receiver.stderr.readline()
        assert listening.startswith("listening on 127.0.0.1:"), listening
        env = clean_env(tmp_path, RINGLEADER_EXAMPLE_HOOK=listening.split()[-1])
        done = ringleader("--config", str(CONFIG), "run", "--runtime", "scripted", "say hi",
                          cwd=tmp_path, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        failing = tmp_path / "fails.json"
        failing.write_text(
            json.dumps(
                [
                    {"type": "init", "sessionId": "x", "model": "scripted-model"},
                    {"type": "result", "ok": False, "summary": "it broke"},
                ]
            )
        )
        env["RINGLEADER_SCRIPTED_SCRIPT"] = str(failing)
        failed = ringleader("--config", str(CONFIG), "run", "--runtime", "scripted", "break it",
                            cwd=tmp_path, env=env)  # fmt: skip
        assert failed.returncode == 1, failed.stderr
        out, _ = receiver.communicate(timeout=60)
    finally:
        receiver.kill()
        receiver.wait()
    bodies: list[dict[str, Any]] = [json.loads(line) for line in out.splitlines()]
    assert [b["title"] for b in bodies] == [
        "ringleader: scripted run is done",
        "ringleader: scripted run ended in error",
    ]
    assert (
        "title: say hi\nreason: success\nboard: http://127.0.0.1:8765/run/" in bodies[0]["message"]
    )
    assert "title: break it\n" in bodies[1]["message"]
