"""Workspace bootstrap: ``.worktreeinclude`` carries ignored files into each new worktree, their
secrets never reach the event log, and ``[workspace] setup`` runs before the agent (a failing
one fails the run with ``error{setup_failed}`` and no agent starts)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters import ScriptedAdapter
from orchestrator.core import ConfigError, RuntimeRegistry
from orchestrator.core.config import load_config, trust_directory
from orchestrator.core.events import Done, ErrorEvent, Status
from orchestrator.core.redact import redact_text
from orchestrator.engine import Runner, TaskSpec, create_workspace
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import RecordingSink
from orchestrator.engine.reviewloop.bootstrap import (
    included_files,
    run_workspace_script,
    secrets_in_text,
)

SECRET = "sk-live-9f8e7d6c5b4a3f2e1d0c"  # shaped like a key: also caught by pattern
PLAIN_SECRET = "Zq7Xw2Lm9Pv4Rt6Yb1Nc"  # no key shape: only its registration redacts it


def git(*args: str, cwd: Path) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def repo_with_env(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "config").mkdir(parents=True)
    (repo / "node_modules" / "pkg").mkdir(parents=True)
    (repo / "app.py").write_text("print('hi')\n")
    (repo / ".gitignore").write_text(".env\nconfig/local.toml\nnode_modules/\n*.log\n")
    (repo / ".worktreeinclude").write_text("# carried into worktrees\n.env\nconfig/local.toml\n")
    (repo / ".env").write_text(f"DB_PASSWORD={PLAIN_SECRET}\nAPI_KEY={SECRET}\nMODE=dev\n")
    (repo / "config" / "local.toml").write_text('port = 8080\ntoken = "abc12345xyz"\n')
    (repo / "node_modules" / "pkg" / ".env").write_text("X=1\n")  # ignored, heavy: not searched
    (repo / "debug.log").write_text("ignored, not named\n")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    return repo


async def test_worktreeinclude_carries_ignored_files_into_each_worktree(tmp_path: Path) -> None:
    repo = repo_with_env(tmp_path)
    assert included_files(repo) == [".env", "config/local.toml"]
    ws = await create_workspace(repo, "native", state_dir=tmp_path / "state")
    assert ws.kind == "git worktree"
    assert ws.included == (".env", "config/local.toml")
    assert (ws.root / ".env").read_text() == (repo / ".env").read_text()
    assert (ws.root / "config" / "local.toml").is_file()
    assert not (ws.root / "debug.log").exists()  # ignored but not named
    assert not (ws.root / "node_modules").exists()
    # the copied files are still ignored there: nothing counts as a change
    assert git("status", "--porcelain", cwd=ws.root) == ""


async def test_without_a_worktreeinclude_nothing_ignored_is_copied(tmp_path: Path) -> None:
    repo = repo_with_env(tmp_path)
    (repo / ".worktreeinclude").unlink()
    git("commit", "-qam", "no include", cwd=repo)
    ws = await create_workspace(repo, "codex", state_dir=tmp_path / "state")
    assert ws.included == ()
    assert not (ws.root / ".env").exists()


def test_secret_values_in_dotenv_toml_and_urls() -> None:
    text = (
        "# comment = ignored\n"
        "export GITHUB_TOKEN='ghp_short1'\n"
        "MODE=production\n"
        "DATABASE_URL=postgres://app:pa55word-xyz@db:5432/app\n"
        'session_seed = "a1b2c3d4e5f6g7h8i9"\n'
        '"password": "hunter2hunter2",\n'
    )
    found = secrets_in_text(text)
    assert "ghp_short1" in found
    assert "pa55word-xyz" in found
    assert "a1b2c3d4e5f6g7h8i9" in found  # a credential-looking value, whatever its name
    assert "hunter2hunter2" in found
    assert "production" not in found  # an ordinary value is not a secret


def scripted_registry(frames: list[dict[str, Any]]) -> RuntimeRegistry:
    registry = RuntimeRegistry()
    registry.register_factory("scripted", lambda: ScriptedAdapter(frames))
    return registry


HELLO: list[dict[str, Any]] = [
    {"type": "init", "sessionId": "s-1", "model": "scripted-model"},
    {"type": "tool-call", "id": "c1", "name": "Bash", "input": {"command": "cat .env"}},
    {
        "type": "tool-result",
        "id": "c1",
        "name": "Bash",
        "output": f"DB_PASSWORD={PLAIN_SECRET}\nAPI_KEY={SECRET}",
    },
    {"type": "text", "text": f"The password is {PLAIN_SECRET}."},
    {"type": "result", "ok": True, "summary": "read it"},
]


async def test_secrets_of_copied_files_never_reach_the_event_log(tmp_path: Path) -> None:
    repo = repo_with_env(tmp_path)
    state = tmp_path / "state"
    ws = await create_workspace(repo, "scripted", state_dir=state)
    async with EventLog.open(state / "events.db") as log:
        runner = Runner(
            scripted_registry(HELLO), sink=RecordingSink(log), state_dir=state, event_log=log
        )
        task = TaskSpec(task_id="t1", title="read the env", cwd=str(ws.path))
        outcome = await runner.run_task("scripted", task)
        assert outcome.status == "success"
        [row] = await log.runs()
        bodies = [e.model_dump_json() for e in await log.read(row.run_key)]
    text = "\n".join(bodies)
    assert PLAIN_SECRET not in text and SECRET not in text
    assert "[REDACTED]" in text
    raw = (state / "events.db").read_bytes()
    assert PLAIN_SECRET.encode() not in raw
    assert redact_text(PLAIN_SECRET) == "[REDACTED]"


async def test_a_setup_script_runs_before_the_agent_and_shows_its_output(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    state = tmp_path / "state"
    async with EventLog.open(state / "events.db") as log:
        runner = Runner(
            scripted_registry(HELLO), sink=RecordingSink(log), state_dir=state, event_log=log
        )
        task = TaskSpec(
            task_id="t2",
            title="go",
            cwd=str(work),
            setup="echo installing; echo ready > setup.done; echo finished >&2",
        )
        outcome = await runner.run_task("scripted", task)
        assert outcome.status == "success"
        [row] = await log.runs()
        events = await log.read(row.run_key)
    assert (work / "setup.done").read_text() == "ready\n"
    statuses = [e.detail for e in events if isinstance(e, Status)]
    assert statuses[:3] == [
        "setup: $ echo installing; echo ready > setup.done; echo finished >&2",
        "setup: installing",
        "setup: finished",
    ]
    assert events[0].seq == 1 and isinstance(events[0], Status)  # before the agent's events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # one stream, in order
    assert isinstance(events[-1], Done) and events[-1].reason == "success"


async def test_a_failing_setup_fails_the_run_and_no_agent_starts(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    state = tmp_path / "state"
    starts: list[str] = []

    def factory() -> ScriptedAdapter:
        starts.append("built")
        return ScriptedAdapter(lambda opts: starts.append("started") or HELLO)  # pyright: ignore[reportUnknownLambdaType, reportArgumentType]

    registry = RuntimeRegistry()
    registry.register_factory("scripted", factory)
    async with EventLog.open(state / "events.db") as log:
        runner = Runner(registry, sink=RecordingSink(log), state_dir=state, event_log=log)
        task = TaskSpec(
            task_id="t3", title="go", cwd=str(work), setup="echo cannot install; exit 3"
        )
        outcome = await runner.run_task("scripted", task)
        [row] = await log.runs()
        events = await log.read(row.run_key)
    assert "started" not in starts
    assert outcome.status == "error" and outcome.error_code == "setup_failed"
    assert "exited with status 3: cannot install" in (outcome.error_message or "")
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["setup_failed"]
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
    assert row.status == "error" and (row.outcome or {}).get("errorCode") == "setup_failed"


async def test_a_setup_script_past_its_timeout_is_stopped(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # The clock stands still until the script's first line is read: autojumping while the
    # shell starts would pass the 5 s before it prints anything (seen under load in CI).
    jump = autojump_clock.autojump_threshold
    autojump_clock.autojump_threshold = math.inf

    def seen(line: str) -> None:
        if line == "start":
            autojump_clock.autojump_threshold = jump

    result = await run_workspace_script(
        "echo start; exec sleep 600", tmp_path, timeout_s=5, on_line=seen
    )
    assert not result.ok and result.timed_out
    assert result.lines == ("start",)
    assert "did not finish within 5s" in result.describe("setup", 5)


def test_the_workspace_section_of_the_config(tmp_path: Path) -> None:
    (tmp_path / "ringleader.toml").write_text(
        '[workspace]\nsetup = "npm ci"\nteardown = "make clean"\ntimeout_s = 60\n'
    )
    env = {"XDG_CONFIG_HOME": str(tmp_path / "x")}
    untrusted = load_config(cwd=tmp_path, environ=env).config.workspace
    assert (untrusted.setup, untrusted.teardown) == (None, None)  # a cloned repo's commands
    trust_directory(tmp_path, environ=env)
    loaded = load_config(cwd=tmp_path, environ=env)
    ws = loaded.config.workspace
    assert (ws.setup, ws.teardown, ws.timeout_s) == ("npm ci", "make clean", 60)
    (tmp_path / "ringleader.toml").write_text("[workspace]\nsetpu = 'x'\n")
    with pytest.raises(ConfigError, match=r"workspace\.setpu: unknown key"):
        load_config(cwd=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "x")})
    assert json.dumps(ws.model_dump())  # plain data


def ringleader(*args: str, cwd: Path, state: Path) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    environ |= {"RINGLEADER_STATE_DIR": str(state), "XDG_CONFIG_HOME": str(state / "xdg")}
    environ["NO_COLOR"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
    )


def test_side_by_side_runs_setup_in_each_workspace_then_teardown(tmp_path: Path) -> None:
    repo = repo_with_env(tmp_path)
    config = tmp_path / "team.toml"
    config.write_text(
        "[workspace]\n"
        'setup = "test -f .env && echo env is here && touch .setup-ran"\n'
        'teardown = "echo tearing down; touch .teardown-ran"\n'
        "timeout_s = 60\n"
    )
    state = tmp_path / "state"
    result = ringleader(
        "run", "--runtime", "scripted", "--runtime", "scripted", "--config", str(config), "hi",
        cwd=repo, state=state,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for label in ("scripted", "scripted#2"):
        assert f"[{label}] · running (setup: env is here)" in out
        assert f"[{label}] · teardown: tearing down" in out
    assert out.index("setup: env is here") < out.index("Hello from the scripted runtime")
    spaces = list((state / "workspaces").iterdir())
    assert len(spaces) == 2
    assert all((w / ".setup-ran").exists() and (w / ".teardown-ran").exists() for w in spaces)
    assert not (repo / ".setup-ran").exists()  # never in the person's checkout


def test_a_failing_setup_script_fails_its_run_with_one_clear_line(tmp_path: Path) -> None:
    repo = repo_with_env(tmp_path)
    config = tmp_path / "team.toml"
    config.write_text('[workspace]\nsetup = "echo no network >&2; exit 4"\n')
    state = tmp_path / "state"
    result = ringleader(
        "run", "--runtime", "scripted", "--runtime", "scripted", "--config", str(config),
        "--json", "hi",
        cwd=repo, state=state,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    errors = [e for e in events if e["kind"] == "error"]
    assert [e["code"] for e in errors] == ["setup_failed", "setup_failed"]
    assert all(
        e["message"] == "the workspace setup script exited with status 4: no network"
        for e in errors
    )
    dones = [e for e in events if e["kind"] == "done"]
    assert [d["reason"] for d in dones] == ["error", "error"]
    assert not any(e["kind"] == "text-delta" for e in events)  # no agent started
