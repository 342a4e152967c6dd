"""Accounts and fallbacks: several accounts per runtime; a task moves on when its account is
held at a limit (its run would park, its breaker is open, or the quota meters say it is held)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from adapters.scripted import ScriptedAdapter
from orchestrator.core import Capabilities, ConfigError, RuntimeEvent, RuntimeRegistry
from orchestrator.core.config import AccountConfig, load_config
from orchestrator.core.quota import QuotaBook
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.accounts import (
    account_table,
    check_targets,
    register_accounts,
    targets,
)
from orchestrator.engine.governance import BreakerBoard, BreakerPolicy, Governance
from orchestrator.engine.supervisor import RestartPolicy

Frames = list[dict[str, Any]]

LIMITED: Frames = [
    {"type": "init", "sessionId": "sess-first"},
    {"type": "text", "text": "half done. "},
    {
        "type": "result",
        "ok": False,
        "errorCode": "rate_limited",
        "errorMessage": "429 Too Many Requests (retry after 1800s)",
    },
]


def finished(text: str) -> Frames:
    return [
        {"type": "init", "sessionId": f"sess-{text}"},
        {"type": "text", "text": text},
        {"type": "result", "ok": True, "summary": text},
    ]


class ListSink:
    def __init__(self) -> None:
        self.events: dict[str, list[RuntimeEvent]] = {}

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        self.events.setdefault(run_key, []).extend(events)
        await trio.lowlevel.checkpoint()


def caps() -> Capabilities:
    return Capabilities(
        streaming=True, mcp=False, worktrees=False, resume=True, tool_approval=False
    )


def counting(frames: Frames, starts: list[str], name: str) -> Callable[[], ScriptedAdapter]:
    def make() -> ScriptedAdapter:
        def pick(opts: Any) -> Frames:
            starts.append(f"{name} home={opts.home_dir}")
            return frames

        return ScriptedAdapter(pick, capabilities=caps())

    return make


ACCOUNTS = {"scripted@first": AccountConfig(), "scripted@second": AccountConfig()}


def setup(
    tmp_path: Path, first: Frames, *, breakers: BreakerBoard | None = None
) -> tuple[Runner, list[str], list[Any]]:
    starts: list[str] = []
    registry = RuntimeRegistry()
    registry.register_factory("scripted", counting(finished("default"), starts, "default"))
    registry.register_factory("scripted@first", counting(first, starts, "first"))
    registry.register_factory("scripted@second", counting(finished("SECOND"), starts, "second"))
    notices: list[Any] = []
    runner = Runner(
        registry,
        sink=ListSink(),
        state_dir=tmp_path / "state",
        restart=RestartPolicy(max_restarts=0),
        governance=Governance(breakers=breakers),
        on_retry=notices.append,
        quota=QuotaBook.in_state_dir(tmp_path / "state"),
        accounts=ACCOUNTS,
    )
    return runner, starts, notices


TASK = TaskSpec(task_id="t1", title="Fix the bug", account="first", fallback=("second",))


REAL_BOUND_S = 60.0
"""Real seconds the task may take: its runs are scripted and instant, a park is 30 minutes."""


async def test_a_task_moves_to_its_next_account_instead_of_parking(tmp_path: Path) -> None:
    # Real time, not the autojump clock (this test's old xfail): the runner does part of its
    # work in worker threads (the process registry, homes, the quota book's SQLite), and while
    # trio waits for a thread the autojump clock jumps to the next pending timer — the run
    # actor's stall watch, which re-arms every 600 s (stall_s / 2) while a run is silent. With
    # threads slowed to 50 ms that was 265 jumps of 600 s: "46 hours elapsed" for a task that
    # never parked. Whether it parked is what the notices say; the real-time bound backs it.
    runner, starts, notices = setup(tmp_path, LIMITED)
    began = time.monotonic()
    with trio.fail_after(REAL_BOUND_S):  # a 30-minute park would end here
        outcome = await runner.run_task("scripted", TASK)
    assert time.monotonic() - began < REAL_BOUND_S
    assert not [n for n in notices if "parked" in str(n)], notices  # no park on the first
    assert outcome.status == "success" and outcome.summary == "SECOND"
    assert [s.split()[0] for s in starts] == ["first", "second"]
    # each account works in a home of its own
    homes = [s.split("home=")[1] for s in starts]
    assert homes[0] != homes[1] and "first" in homes[0] and "second" in homes[1]
    first, second = outcome.runs
    assert first.runtime_id == "scripted@first" and first.outcome.error_code == "rate_limit_parked"
    assert second.runtime_id == "scripted@second"
    assert any("moving to scripted@second" in str(n) for n in notices)
    # the meters say the first account is held until its reset (a 429 with 1800 s to go)
    book = QuotaBook.in_state_dir(tmp_path / "state")
    held = book.limited_until("scripted", "first", runner.clock())
    assert held is not None and held > runner.clock() + 1_700_000
    assert book.limited_until("scripted", "second", runner.clock()) is None

    # the next task does not even start on the held account
    starts.clear()
    with trio.fail_after(REAL_BOUND_S):
        again = await runner.run_task(
            "scripted", TaskSpec(task_id="t2", title="more", account="first", fallback=("second",))
        )
    assert again.status == "success" and [s.split()[0] for s in starts] == ["second"]
    assert any("scripted@first is held by a rate limit until" in str(n) for n in notices)


async def test_the_last_target_parks_as_any_task_does(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    runner, starts, notices = setup(tmp_path, LIMITED)
    parked = trio.Event()

    def told(notice: Any) -> None:
        notices.append(notice)
        parked.set()

    runner.on_retry = told
    task = TaskSpec(task_id="t3", title="x", account="first")  # no fallback
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runner.run_task, "scripted", task)
        await parked.wait()
        nursery.cancel_scope.cancel()
    (notice,) = notices
    assert "parked 1800s until the limit resets" in str(notice)  # it waits the reset out
    assert [s.split()[0] for s in starts] == ["first"]


async def test_an_open_breaker_moves_the_task_on(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    board = BreakerBoard(BreakerPolicy(failures=1, cooldown_s=600))
    board.record("scripted@first", ok=False, reason="it broke")
    runner, starts, notices = setup(tmp_path, finished("FIRST"), breakers=board)
    outcome = await runner.run_task("scripted", TASK)
    assert outcome.summary == "SECOND" and [s.split()[0] for s in starts] == ["second"]
    assert outcome.runs[0].outcome.error_code == "breaker_open"
    assert any("moving to scripted@second" in str(n) for n in notices)


async def test_a_fallback_to_another_runtime(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    runner, starts, _ = setup(tmp_path, LIMITED)
    runner.registry.register_factory("other", counting(finished("OTHER"), starts, "other"))
    task = TaskSpec(task_id="t4", title="x", account="first", fallback=("other",))
    outcome = await runner.run_task("scripted", task)
    assert outcome.summary == "OTHER"
    assert [s.split()[0] for s in starts] == ["first", "other"]


def test_targets_read_accounts_runtimes_and_both() -> None:
    accounts = {"claude-code@work": AccountConfig(), "codex@team": AccountConfig()}
    found = targets("claude-code", "work", ["personal", "work", "codex", "codex@team"], accounts)
    assert found == [
        ("claude-code", "work"),
        ("personal", None),  # not an account of claude-code: a runtime (checked below)
        ("codex", None),
        ("codex", "team"),
    ]
    registry = RuntimeRegistry()
    for rid in ("claude-code", "claude-code@work", "codex", "codex@team"):
        registry.register_factory(rid, lambda: ScriptedAdapter([]))
    with pytest.raises(ConfigError, match="unknown runtime 'personal'"):
        check_targets(found, registry, where="run")
    with pytest.raises(ConfigError, match=r"codex has no account 'nope' \(configured: team"):
        check_targets([("codex", "nope")], registry, where="run")


def test_accounts_in_the_config_become_runtimes_of_their_own(tmp_path: Path) -> None:
    from orchestrator.core.registry import discover_runtimes

    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.codex.accounts.team]\nhome = "~/.codex-team"\napi_key_env = "TEAM_OPENAI_KEY"\n'
        "[runtimes.claude-code.accounts.personal]\n",
        encoding="utf-8",
    )
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    untrusted = load_config(cwd=tmp_path, environ=env)
    assert untrusted.runtime("codex").accounts == {}  # a repository picks no account homes
    assert any("ignored runtimes.codex.accounts" in line for line in untrusted.ignored)
    (tmp_path / "cfg" / "ringleader").mkdir(parents=True)
    (tmp_path / "cfg" / "ringleader" / "config.toml").write_text(
        f"[[trusted]]\ndirectory = {json.dumps(str(tmp_path))}\n"
    )
    loaded = load_config(cwd=tmp_path, environ=env)
    team = loaded.runtime("codex").accounts["team"]
    assert team.home_path() == Path("~/.codex-team").expanduser()
    assert loaded.runtime("codex").for_account("team").api_key_env == "TEAM_OPENAI_KEY"
    assert set(account_table(loaded.config)) == {"codex@team", "claude-code@personal"}
    specs = discover_runtimes()
    registry = RuntimeRegistry.from_specs(specs, loaded.runtime)
    register_accounts(registry, specs, loaded.config)
    assert "codex@team" in registry and "claude-code@personal" in registry
    with pytest.raises(ConfigError, match="no account 'x'"):
        loaded.runtime("codex").for_account("x")
    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.codex.accounts.team]\napi_key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"\n'
    )
    with pytest.raises(ConfigError, match="keys are not allowed"):
        load_config(cwd=tmp_path, environ=env)


def test_an_unknown_account_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"RINGLEADER_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path)}
    (tmp_path / "tasks.toml").write_text(
        '[[task]]\nid = "a"\nruntime = "scripted"\nprompt = "p"\naccount = "work"\n'
    )
    for args in (
        ["run", "--runtime", "scripted", "--account", "work", "hi"],
        ["batch", "tasks.toml"],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
            cwd=tmp_path,
        )
        assert result.returncode == 2, result.stderr
        assert "scripted has no account 'work'" in result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "state" / "events.db").exists()
