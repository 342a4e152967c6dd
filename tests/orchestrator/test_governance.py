"""Governance: budgets stop a run within one event; estimates; breakers with a fake clock."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters import ScriptedAdapter
from orchestrator.core import (
    Capabilities,
    ConfigError,
    Cost,
    Done,
    ErrorEvent,
    RuntimeEvent,
    RuntimeRegistry,
    ToolResult,
    Usage,
)
from orchestrator.engine import RestartPolicy, Runner, TaskSpec
from orchestrator.engine.governance import (
    SHIPPED_PRICES_DATE,
    BreakerBoard,
    BreakerPolicy,
    Budget,
    Governance,
    PriceBook,
    TokenPrice,
)

Frames = list[dict[str, Any]]
TASK = TaskSpec(task_id="t1", title="Fix the bug")


class ListSink:
    def __init__(self) -> None:
        self.events: dict[str, list[RuntimeEvent]] = {}

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        self.events.setdefault(run_key, []).extend(events)
        await trio.lowlevel.checkpoint()

    def all(self) -> list[RuntimeEvent]:
        return [e for events in self.events.values() for e in events]


def caps(**extra: Any) -> Capabilities:
    return Capabilities(
        streaming=True, mcp=False, worktrees=False, resume=True, tool_approval=False, **extra
    )


def usage(tokens_in: int, tokens_out: int, usd: float | None = None, model: str = "m") -> Frames:
    return [
        {
            "type": "usage",
            "inputTokens": tokens_in,
            "outputTokens": tokens_out,
            "costUsd": usd,
            "model": model,
        }
    ]


def runner_for(
    script: Frames | list[Frames],
    tmp_path: Path,
    governance: Governance,
    sink: ListSink,
    capabilities: Capabilities | None = None,
    runtime_id: str = "scripted",
) -> tuple[Runner, list[int]]:
    scripts: list[Frames] = script if script and isinstance(script[0], list) else [script]  # type: ignore[list-item]
    starts: list[int] = []

    def pick(_opts: Any) -> Frames:
        starts.append(1)
        return scripts[min(len(starts), len(scripts)) - 1]

    registry = RuntimeRegistry()
    registry.register_factory(
        runtime_id,
        lambda: ScriptedAdapter(pick, capabilities=capabilities or caps(reports_cost_usd=True)),
    )
    runner = Runner(
        registry,
        sink=sink,
        state_dir=tmp_path / "state",
        today=lambda: dt.date(2026, 11, 22),
        restart=RestartPolicy(max_restarts=2, initial_s=1.0),
        governance=governance,
    )
    return runner, starts


LONG_RUN: Frames = [
    {"type": "init", "sessionId": "s1", "model": "m"},
    {"type": "text", "text": "working"},
    *usage(100, 50),
    {"type": "tool-call", "id": "c1", "name": "bash", "input": {"cmd": "make"}},
    *usage(400, 200),  # crosses a 500-token budget while c1 is open
    {"type": "tool-result", "id": "c1", "output": "ok"},
    {"type": "text", "text": "should never be seen"},
    *usage(900, 300),
    {"type": "result", "ok": True, "summary": "done"},
]


async def test_token_budget_crossing_aborts_within_one_event(tmp_path: Path) -> None:
    sink = ListSink()
    gov = Governance(task_budget=Budget(tokens=500))
    runner, starts = runner_for(LONG_RUN, tmp_path, gov, sink)
    outcome = await runner.run_task("scripted", TASK)
    events = sink.all()
    kinds = [e.kind for e in events]
    crossing = next(
        i for i, e in enumerate(events) if isinstance(e, Cost) and e.usage.input_tokens == 400
    )
    # right after the crossing cost event: the error, the open call closed, done; nothing else
    tail = events[crossing + 1 :]
    assert [e.kind for e in tail] == ["error", "tool-result", "done"]
    assert isinstance(tail[1], ToolResult) and tail[1].is_error
    assert isinstance(tail[0], ErrorEvent) and tail[0].code == "budget_exceeded"
    assert "600 tokens of its 500-token budget" in tail[0].message
    assert isinstance(tail[2], Done) and tail[2].reason == "error"
    assert "should never be seen" not in str([e for e in events])
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert kinds.count("done") == 1
    assert outcome.status == "error" and outcome.error_code == "budget_exceeded"
    assert len(starts) == 1  # permanent: no retry past a budget


async def test_usd_budget_over_a_run_reporting_usd(tmp_path: Path) -> None:
    sink = ListSink()
    script = [
        *usage(10, 10, 0.02),
        *usage(20, 20, 0.06),
        *usage(30, 30, 0.09),
        {"type": "result", "ok": True},
    ]
    runner, _ = runner_for(script, tmp_path, Governance(task_budget=Budget(usd=0.05)), sink)
    outcome = await runner.run_task("scripted", TASK)
    costs = [e for e in sink.all() if isinstance(e, Cost)]
    assert [c.cost_usd for c in costs] == [0.02, 0.06]
    assert outcome.error_code == "budget_exceeded"
    assert (
        outcome.error_message is not None and "$0.0600 of its $0.05 budget" in outcome.error_message
    )


async def test_usd_budget_over_a_token_only_runtime_is_refused_without_estimates(
    tmp_path: Path,
) -> None:
    sink = ListSink()
    gov = Governance(task_budget=Budget(usd=1.0))
    runner, starts = runner_for(LONG_RUN, tmp_path, gov, sink, capabilities=caps())
    with pytest.raises(ConfigError, match="does not report its cost in USD"):
        await runner.run_task("scripted", TASK)
    assert starts == []


async def test_estimates_are_marked_and_enforce_a_usd_budget(tmp_path: Path) -> None:
    sink = ListSink()
    prices = {"scripted": {"m": TokenPrice(input=1000.0, output=1000.0)}}  # $0.001 per token
    gov = Governance(task_budget=Budget(usd=0.5), allow_estimates=True, user_prices=prices)
    runner, _ = runner_for(LONG_RUN, tmp_path, gov, sink, capabilities=caps())
    outcome = await runner.run_task("scripted", TASK)
    costs = [e for e in sink.all() if isinstance(e, Cost)]
    assert [(c.cost_usd, c.estimated) for c in costs] == [(0.15, True), (0.6, True)]
    assert outcome.error_code == "budget_exceeded"
    assert outcome.error_message is not None and "(estimated)" in outcome.error_message


async def test_unpriced_model_under_a_usd_budget_ends_the_run(tmp_path: Path) -> None:
    sink = ListSink()
    gov = Governance(task_budget=Budget(usd=0.5), allow_estimates=True)
    runner, _ = runner_for(LONG_RUN, tmp_path, gov, sink, capabilities=caps())
    outcome = await runner.run_task("scripted", TASK)
    assert outcome.error_code == "cost_unknown"
    costs = [e for e in sink.all() if isinstance(e, Cost)]
    assert len(costs) == 1 and costs[0].cost_usd is None  # unknown stays unknown


async def test_host_budget_spans_tasks_and_refuses_the_next_start(tmp_path: Path) -> None:
    sink = ListSink()
    gov = Governance(host_budget=Budget(tokens=500))
    runner, starts = runner_for(LONG_RUN, tmp_path, gov, sink)
    first = await runner.run_task("scripted", TASK)
    assert first.error_code == "budget_exceeded"
    second = await runner.run_task("scripted", TaskSpec(task_id="t2", title="next"))
    assert second.error_code == "budget_exceeded"
    assert (
        second.error_message is not None
        and "host budget of 500 tokens is spent" in second.error_message
    )
    assert len(starts) == 1


async def test_wall_time_budget(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    sink = ListSink()
    slow: Frames = [
        {"type": "text", "text": "thinking"},
        {"type": "sleep", "seconds": 100},
        {"type": "text", "text": "late"},
        {"type": "result", "ok": True},
    ]
    runner, _ = runner_for(slow, tmp_path, Governance(task_budget=Budget(wall_s=30)), sink)
    began = trio.current_time()
    outcome = await runner.run_task("scripted", TASK)
    assert trio.current_time() - began < 35
    assert outcome.error_code == "budget_exceeded"
    assert "wall-time budget of 30s" in (outcome.error_message or "")
    assert [e.kind for e in sink.all()][-2:] == ["error", "done"]


async def test_max_turns_does_not_rotate_past_a_spent_budget(tmp_path: Path) -> None:
    sink = ListSink()
    script = [*usage(300, 300), {"type": "result", "ok": False, "maxTurns": True}]
    gov = Governance(task_budget=Budget(tokens=600))
    runner, starts = runner_for(script, tmp_path, gov, sink)
    outcome = await runner.run_task("scripted", TASK)
    assert outcome.status == "max_turns" and outcome.rotations == 0
    assert len(starts) == 1


def test_budget_values_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="positive"):
        Budget(usd=0)
    with pytest.raises(ConfigError, match="positive"):
        Budget(tokens=-5)


def test_price_book_prefers_the_user_and_strips_prefixes_and_dates() -> None:
    book = PriceBook(user={"claude-haiku-4-5": TokenPrice(2.0, 10.0)})
    found = book.lookup("anthropic:claude-haiku-4-5-20251001")
    assert found is not None and found[1] == "config" and found[0].input == 2.0
    shipped = book.lookup("openai/gpt-5-mini")
    assert shipped is not None and shipped[1] == f"shipped {SHIPPED_PRICES_DATE.isoformat()}"
    assert book.lookup("some-new-model") is None
    assert book.estimate("some-new-model", Usage(input_tokens=10)) is None
    # 1M fresh input + 1M cache reads + 1M output on claude-sonnet-4-5: 3 + 0.3 + 15
    usd = PriceBook().estimate(
        "claude-sonnet-4-5",
        Usage(input_tokens=2_000_000, cached_input_tokens=1_000_000, output_tokens=1_000_000),
    )
    assert usd == pytest.approx(18.3)


# -- breakers ---------------------------------------------------------------------------------

FAIL: Frames = [
    {"type": "result", "ok": False, "errorMessage": "bad config", "errorCode": "invalid_request"}
]
OK: Frames = [{"type": "text", "text": "fine"}, {"type": "result", "ok": True, "summary": "fine"}]


async def test_breaker_opens_half_opens_and_closes(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    sink = ListSink()
    board = BreakerBoard(BreakerPolicy(failures=2, cooldown_s=60))
    gov = Governance(breakers=board)
    runner, starts = runner_for([FAIL, FAIL, FAIL, OK], tmp_path, gov, sink)

    async def task(n: int) -> Any:
        return await runner.run_task("scripted", TaskSpec(task_id=f"t{n}", title="x"))

    assert (await task(1)).status == "error"
    assert board.state("scripted") == "closed"
    assert (await task(2)).status == "error"
    assert board.state("scripted") == "open"
    refused = await task(3)
    assert refused.error_code == "breaker_open"
    assert "circuit breaker open after 2 failed tasks" in (refused.error_message or "")
    assert len(starts) == 2  # failed fast: nothing started
    await trio.sleep(61)
    assert board.state("scripted") == "half-open"
    assert (await task(4)).status == "error"  # the trial fails: open again
    assert board.state("scripted") == "open"
    assert len(starts) == 3
    await trio.sleep(61)
    assert (await task(5)).status == "success"  # the trial succeeds: closed
    assert board.state("scripted") == "closed"


async def test_open_breaker_sends_tasks_to_the_fallback(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    sink = ListSink()
    board = BreakerBoard(BreakerPolicy(failures=1, cooldown_s=60))
    registry = RuntimeRegistry()
    registry.register_factory("flaky", lambda: ScriptedAdapter(FAIL, capabilities=caps()))
    registry.register_factory("steady", lambda: ScriptedAdapter(OK, capabilities=caps()))
    runner = Runner(
        registry,
        sink=sink,
        state_dir=tmp_path / "state",
        governance=Governance(breakers=board, fallback={"flaky": "steady"}),
    )
    assert (await runner.run_task("flaky", TASK)).status == "error"
    moved = await runner.run_task("flaky", TaskSpec(task_id="t2", title="x"))
    assert moved.status == "success" and moved.runs[0].runtime_id == "steady"


async def test_budget_failures_do_not_trip_the_breaker(tmp_path: Path) -> None:
    sink = ListSink()
    board = BreakerBoard(BreakerPolicy(failures=1, cooldown_s=60))
    gov = Governance(task_budget=Budget(tokens=500), breakers=board)
    runner, _ = runner_for(LONG_RUN, tmp_path, gov, sink)
    assert (await runner.run_task("scripted", TASK)).error_code == "budget_exceeded"
    assert board.state("scripted") == "closed"


def test_breakers_persist_and_are_shared_through_their_file(tmp_path: Path) -> None:
    """Two boards on one file (two ``ringleader`` commands, or two at once) see one breaker."""
    from orchestrator.core.errors import BreakerOpenError

    now = [1_000.0]
    policy = BreakerPolicy(failures=2, cooldown_s=60)
    path = tmp_path / "state" / "breakers.json"

    def board() -> BreakerBoard:
        return BreakerBoard(policy, path=path, clock=lambda: now[0])

    first, second = board(), board()
    first.record("codex", ok=False, reason="exit 1")
    assert second.state("codex") == "closed"
    second.record("codex", ok=False, reason="exit 2")  # the count is shared: 2 in a row
    assert first.state("codex") == "open"
    with pytest.raises(BreakerOpenError, match=r"after 2 failed tasks.*exit 2.*retry in 60s"):
        board().admit("codex")
    assert board().open_breakers() == {
        "codex": "codex: circuit breaker open after 2 failed tasks in a row (last: exit 2); "
        "retry in 60s"
    }
    now[0] += 61
    first.admit("codex")  # the trial
    with pytest.raises(BreakerOpenError, match="a trial run is in progress"):
        second.admit("codex")
    now[0] += 61  # a trial whose process died is given up after a cool-down
    second.admit("codex")
    second.record("codex", ok=True)
    assert first.state("codex") == "closed" and board().open_breakers() == {}
    assert (path.stat().st_mode & 0o777) == 0o600


def test_a_damaged_breaker_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "breakers.json"
    for junk in ("{", "[]", '{"schema": 99, "breakers": {}}', '{"schema": 1, "breakers": 3}'):
        path.write_text(junk, encoding="utf-8")
        board = BreakerBoard(BreakerPolicy(failures=1), path=path, clock=lambda: 0.0)
        assert board.state("codex") == "closed"
        board.record("codex", ok=False)
        assert board.state("codex") == "open"  # and the file is whole again


def test_cli_breakers_outlive_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import json

    from orchestrator.cli.main import main

    failing = tmp_path / "failing.json"
    failing.write_text(json.dumps(FAIL), encoding="utf-8")
    monkeypatch.setenv("RINGLEADER_SCRIPTED_SCRIPT", str(failing))
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    (tmp_path / "ringleader.toml").write_text(
        "[breaker]\nfailures = 1\ncooldown_s = 600\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)

    def run() -> list[str]:
        out = io.StringIO()
        monkeypatch.setattr("sys.stdout", out)
        assert main(["run", "--runtime", "scripted", "--json", "say hi"]) == 1
        return [line for line in out.getvalue().splitlines() if line.startswith("{")]

    assert '"code":"invalid_request"' in run()[-2]
    refused = run()  # a new command: the breaker opened by the first one holds
    assert '"code":"breaker_open"' in refused[-2]
    assert "circuit breaker open after 1 failed tasks" in refused[-2]


def test_native_breakers_are_per_provider() -> None:
    from orchestrator.engine.governance import breaker_key

    assert breaker_key("native", "anthropic:claude-haiku-4-5") == "native:anthropic"
    assert breaker_key("native", None) == "native"
    assert breaker_key("codex", "openai:gpt-5") == "codex"


# -- configuration ----------------------------------------------------------------------------


def test_budget_and_breaker_from_config_files_with_flags_winning(tmp_path: Path) -> None:
    from orchestrator.core.config import load_config, trust_directory

    (tmp_path / "ringleader.toml").write_text(
        "[budget]\nusd = 2.0\ntokens = 1000\nhost_usd = 10\nallow_estimates = true\n"
        '[breaker]\nfailures = 2\ncooldown_s = 5\nfallback = { codex = "claude-code" }\n'
        '[runtimes.codex.prices."gpt-5.5"]\ninput = 1.0\noutput = 2.0\n',
        encoding="utf-8",
    )
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    trust_directory(tmp_path, env)  # an untrusted project's prices are ignored
    loaded = load_config(cwd=tmp_path, environ=env)
    assert loaded.sources["budget.usd"].endswith("ringleader.toml")
    gov = Governance.from_config(loaded.config, tokens=50)
    assert gov.task_budget == Budget(usd=2.0, tokens=50)
    assert gov.host_budget == Budget(usd=10.0)
    assert gov.allow_estimates and gov.fallback == {"codex": "claude-code"}
    assert gov.breakers is not None and gov.breakers.policy == BreakerPolicy(2, 5.0)
    found = gov.prices_for("codex").lookup("gpt-5.5")
    assert found is not None and found[1] == "config"


def test_a_bad_budget_in_the_config_is_one_clear_error(tmp_path: Path) -> None:
    from orchestrator.core.config import load_config

    (tmp_path / "ringleader.toml").write_text("[budget]\nusd = -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"budget\.usd"):
        load_config(cwd=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "none")})


def test_cli_budget_flags_stop_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from orchestrator.cli.main import main

    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    code = main(["run", "--runtime", "scripted", "--budget-tokens", "5", "--json", "say hi"])
    lines = [line for line in out.getvalue().splitlines() if line.startswith("{")]
    assert code == 1
    assert '"code":"budget_exceeded"' in lines[-2] and '"reason":"error"' in lines[-1]


# -- rate limits: park until the reset, then continue the session -----------------------------


def resuming(first: Frames, then: Frames) -> tuple[Any, list[Any]]:
    starts: list[Any] = []

    def pick(opts: Any) -> Frames:
        starts.append(opts)
        return first if len(starts) == 1 else then

    return pick, starts


async def test_a_429_with_a_reset_parks_then_resumes_the_session(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    from orchestrator.core import Status

    limited: Frames = [
        {"type": "init", "sessionId": "sess-1"},
        {"type": "text", "text": "half done. "},
        {
            "type": "result",
            "ok": False,
            "errorCode": "rate_limited",
            "errorMessage": "429 Too Many Requests (retry after 120s)",
        },
    ]
    finished: Frames = [{"type": "text", "text": "finished"}, {"type": "result", "ok": True}]
    pick, starts = resuming(limited, finished)
    registry = RuntimeRegistry()
    registry.register_factory("scripted", lambda: ScriptedAdapter(pick, capabilities=caps()))
    sink = ListSink()
    notices: list[Any] = []
    runner = Runner(
        registry,
        sink=sink,
        state_dir=tmp_path / "state",
        restart=RestartPolicy(max_restarts=0),  # no retries at all: parking is not a retry
        governance=Governance(),
        on_retry=notices.append,
    )
    began = trio.current_time()
    outcome = await runner.run_task("scripted", TASK)
    assert outcome.status == "success"
    assert trio.current_time() - began == pytest.approx(120, abs=1)
    assert len(starts) == 2
    assert starts[1].resume_session_id == "sess-1"
    assert "Continue where you left off." in starts[1].message
    parked_run = next(events for key, events in sink.events.items() if key.count(":a1") == 0)
    tail = parked_run[-3:]
    assert [e.kind for e in tail] == ["status", "error", "done"]
    assert isinstance(tail[0], Status) and tail[0].phase == "rate_limited"
    assert tail[0].resets_at is not None and tail[0].resets_at > tail[0].ts
    assert isinstance(tail[1], ErrorEvent) and tail[1].code == "rate_limited"
    assert [e.seq for e in parked_run] == list(range(1, len(parked_run) + 1))
    assert "parked 120s" in str(notices[0])


async def test_a_reset_too_far_away_is_not_waited_for(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    from orchestrator.engine.governance import ParkPolicy

    limited: Frames = [
        {"type": "text", "text": "x"},
        {
            "type": "result",
            "ok": False,
            "errorCode": "rate_limited",
            "errorMessage": "usage limit reached, try again in 9 hours",
        },
    ]
    pick, starts = resuming(limited, limited)
    registry = RuntimeRegistry()
    registry.register_factory("scripted", lambda: ScriptedAdapter(pick, capabilities=caps()))
    runner = Runner(
        registry,
        sink=ListSink(),
        state_dir=tmp_path / "state",
        governance=Governance(park=ParkPolicy(max_wait_s=3600)),
    )
    began = trio.current_time()
    outcome = await runner.run_task("scripted", TASK)
    assert outcome.error_code == "rate_limited" and len(starts) == 1  # produced output: no retry
    assert trio.current_time() - began < 5


def test_reset_times_are_read_from_the_runtimes_words() -> None:
    from orchestrator.engine.governance import reset_from_text

    now = 1_000_000
    assert reset_from_text("rate limit rejected (five_hour) resets at 1795500000", now) == (
        1795500000000
    )
    assert reset_from_text("429 (retry after 30s)", now) == now + 30_000
    assert reset_from_text("retry-after: 2", now) == now + 2000
    assert reset_from_text("Try again in 5 minutes.", now) == now + 300_000
    assert reset_from_text("retry after 150ms", now) == now + 150
    assert reset_from_text("rate limited", now) is None


def test_a_status_with_a_structured_reset_parks_the_rate_limit_that_follows() -> None:
    """An adapter that knows the reset (Codex's ``account/rateLimits/updated``, Claude Code's
    429 retry delay) puts it in ``status.resets_at``; the failure after it carries no time."""
    from orchestrator.core.events import EventFactory
    from orchestrator.engine.governance import RunGuard

    make = EventFactory(run_id="r", session_id="s", clock=lambda: 1_000)
    guard = RunGuard(ledgers=(), clock=lambda: 2_000)
    batch: list[RuntimeEvent] = [
        make.rate_limited("rate limit reached (primary window 100%)", 1_795_680_000_000),
        make.text_delta("partial"),
        *make.fail("You've hit your usage limit. Try again at 6:14 AM.", code="rate_limited"),
    ]
    kept = guard.screen(batch)
    assert [e.kind for e in kept] == ["status", "text-delta"]  # error and done: the actor's
    assert guard.tripped is not None
    assert guard.tripped.code == "rate_limited"
    assert guard.tripped.resets_at_ms == 1_795_680_000_000


def test_a_rate_limit_with_no_known_reset_does_not_park() -> None:
    from orchestrator.core.events import EventFactory
    from orchestrator.engine.governance import RunGuard

    make = EventFactory(run_id="r", session_id="s", clock=lambda: 1_000)
    guard = RunGuard(ledgers=(), clock=lambda: 2_000)
    batch: list[RuntimeEvent] = [
        make.rate_limited("Reconnecting... 1/1 (429 Too Many Requests)"),
        *make.fail("exceeded retry limit, last status: 429", code="rate_limited"),
    ]
    assert guard.screen(batch) == batch  # the supervisor's ordinary retries handle it
    assert guard.tripped is None
