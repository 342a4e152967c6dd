"""Rate limits on the real Claude Code and Codex against the scripted model server: a 429 holds
the run (``status{rate_limited}``, with ``resets_at`` when the runtime says when), and the run
resumes and finishes.

Two ways a real CLI meets a 429:

* **it waits itself** (both CLIs honour ``retry-after``): the adapter reports
  ``status{rate_limited}`` — Claude Code's ``api_retry`` says how long it waits, so ``resets_at`` is
  known; Codex's retry message does not — and the same run goes on to ``done{success}``;
* **it gives up** (its retries are spent, or Codex's structured usage limit, which it never
  retries): the run ends ``error{rate_limited}``; the runner parks the task until the reset the
  runtime reported (Claude Code's retry delay; Codex's ``account/rateLimits/updated`` window
  ``resetsAt``) and continues the same session with "Continue where you left off." — parking is
  not a retry (``RestartPolicy(max_restarts=0)`` here).
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig
from adapters.codex import CodexAdapter, CodexConfig, CodexProvider
from adapters.codex.driver import Mode, default_state_root
from contract import check_stream
from orchestrator.core import Done, ErrorEvent, RuntimeEvent, RuntimeRegistry, Status
from orchestrator.core.quota import QuotaBook
from orchestrator.engine import RestartPolicy, Runner, TaskOutcome, TaskSpec
from orchestrator.engine.governance import Governance
from orchestrator.model_server import ModelServer

from .kit import assert_no_drift, installed, text

pytestmark = pytest.mark.e2e

CC_KEY = "sk-ant-e2e-ratelimit-000000000"
CX_KEY = "sk-e2e-codex-ratelimit-00000000"
CC_MODEL = "claude-sonnet-4-6"
CX_MODEL = "gpt-5.5"
RESET_IN_S = 4
"""How far ahead the Codex usage-limit window resets (epoch seconds in its headers)."""
RESETS: dict[str, int] = {}
"""The reset (epoch s) the latest ``script()`` gave each conversation."""


def usage_limit(reset_s: int) -> dict[str, Any]:
    """A 429 as OpenAI sends it for a used-up plan: Codex reads the body's type and the
    ``x-codex-primary-*`` headers, never retries it, and reports the window structurally."""
    return {
        "kind": "rate_limit",
        "retry_after": None,
        "message": "The usage limit has been reached",
        "error": {"type": "usage_limit_reached", "resets_at": reset_s, "plan_type": "plus"},
        "headers": {
            "x-codex-primary-used-percent": "100",
            "x-codex-primary-window-minutes": "300",
            "x-codex-primary-reset-at": str(reset_s),
        },
    }


def script() -> dict[str, Any]:
    reset_s = RESETS["cx-park"] = int(time.time()) + RESET_IN_S
    once = {"kind": "rate_limit", "times": 1, "retry_after": 2}
    return {
        "conversations": [
            {
                "name": "cc-wait",
                "marker": "[[e2e:cc-wait]]",
                "turns": [{"fault": once, "text": "CC FINISHED"}],
            },
            {
                "name": "cc-park",
                "marker": "[[e2e:cc-park]]",
                "turns": [
                    {
                        "fault": {"kind": "rate_limit", "times": 2, "retry_after": 1},
                        "text": "CC RESUMED",
                    }
                ],
            },
            {
                "name": "cx-wait",
                "marker": "[[e2e:cx-wait]]",
                "turns": [{"fault": once, "text": "CX FINISHED"}],
            },
            {
                "name": "cx-park",
                "marker": "[[e2e:cx-park]]",
                "turns": [{"fault": usage_limit(reset_s), "text": "CX RESUMED"}],
            },
        ],
    }


class RunSink:
    """Every run's events, by run key, in order."""

    def __init__(self) -> None:
        self.runs: dict[str, list[RuntimeEvent]] = {}

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        self.runs.setdefault(run_key, []).extend(events)
        await trio.lowlevel.checkpoint()

    def streams(self) -> list[list[RuntimeEvent]]:
        return list(self.runs.values())


def limited(events: list[RuntimeEvent]) -> list[Status]:
    return [e for e in events if isinstance(e, Status) and e.phase == "rate_limited"]


def runner(runtime_id: str, factory: Any, sink: RunSink, state: Path) -> Runner:
    registry = RuntimeRegistry()
    registry.register_factory(runtime_id, factory)
    return Runner(
        registry,
        sink=sink,
        state_dir=state,
        governance=Governance(),
        restart=RestartPolicy(max_restarts=0),  # only a park may continue a failed run
        quota=QuotaBook.in_state_dir(state),  # the quota meters keep what the runs report
    )


async def run(r: Runner, runtime_id: str, marker: str, cwd: Path) -> TaskOutcome:
    task = TaskSpec(task_id=uuid.uuid4().hex[:8], title=f"{marker} do it", cwd=str(cwd))
    with trio.fail_after(150):
        return await r.run_task(runtime_id, task)


def check(sink: RunSink, runtime_id: str) -> None:
    for events in sink.streams():
        check_stream(events)
        assert_no_drift(runtime_id, events)


def last_user_text(request: Any) -> str:
    return json.dumps(request.body)


# -- Claude Code -------------------------------------------------------------------------------


def claude(server: ModelServer, root: Path, **kw: Any) -> ClaudeCodeAdapter:
    config = ClaudeCodeConfig(
        mode="one-shot",
        model=CC_MODEL,
        base_url=server.url,
        api_key=CC_KEY,
        state_root=root / "cc-state",
        **kw,
    )
    return ClaudeCodeAdapter(config)


async def test_claude_code_waits_out_a_429_and_finishes(
    server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    installed("claude-code")
    sink = RunSink()
    r = runner("claude-code", lambda: claude(server, tmp_path), sink, tmp_path / "rl")
    outcome = await run(r, "claude-code", "[[e2e:cc-wait]]", workspace)
    check(sink, "claude-code")
    assert outcome.status == "success" and outcome.summary == "CC FINISHED"
    assert len(outcome.runs) == 1 and outcome.runs[0].attempts == 1  # one run, no park
    (events,) = sink.streams()
    (held,) = limited(events)
    assert held.detail is not None and "(HTTP 429)" in held.detail
    # the CLI honours retry-after: 2 s (plus its jitter); it says so, and waits that long
    assert held.resets_at is not None and 1_900 <= held.resets_at - held.ts <= 6_000
    after = events[events.index(held) + 1 :]
    assert text(after) == "CC FINISHED"
    first_text = next(e for e in after if e.kind == "text-delta")
    assert first_text.ts >= held.resets_at - 250  # the text came after the reset
    assert [r.status for r in server.requests_for("cc-wait")] == [429, 200]


async def test_claude_code_gives_up_then_the_task_parks_and_resumes_its_session(
    server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    installed("claude-code")
    sink = RunSink()
    r = runner(
        "claude-code", lambda: claude(server, tmp_path, max_retries=1), sink, tmp_path / "rl"
    )
    outcome = await run(r, "claude-code", "[[e2e:cc-park]]", workspace)
    check(sink, "claude-code")
    assert outcome.status == "success" and outcome.summary == "CC RESUMED"
    assert len(outcome.runs) == 1 and outcome.runs[0].attempts == 2  # parked once, resumed
    parked, resumed = sink.streams()
    # the CLI's own wait (its api_retry), then the park the runner adds before it ends the run
    held = limited(parked)
    assert len(held) == 2 and all(s.resets_at is not None for s in held)
    assert held[-1].resets_at == held[0].resets_at  # the park waits for the reported reset
    tail = parked[-3:]
    assert tail[0] is held[-1]
    assert isinstance(tail[1], ErrorEvent) and tail[1].code == "rate_limited"
    assert isinstance(tail[2], Done) and tail[2].reason == "error"
    assert isinstance(resumed[-1], Done) and resumed[-1].reason == "success"
    assert text(resumed) == "CC RESUMED"
    # the same session continued: the resumed request carries the first prompt and the nudge
    requests = server.requests_for("cc-park")
    assert [q.status for q in requests] == [429, 429, 200]
    body = last_user_text(requests[-1])
    assert "[[e2e:cc-park]] do it" in body and "Continue where you left off." in body
    assert parked[0].run_id == resumed[0].run_id  # Claude Code's session id
    # the quota meter kept the hold: a window held until the reported reset, use unknown
    (meter,) = QuotaBook.in_state_dir(tmp_path / "rl").readings()
    assert (meter.runtime_id, meter.account, meter.window) == ("claude-code", "default", "requests")
    assert meter.resets_at_ms == held[-1].resets_at and meter.used_percent is None
    assert meter.state == "rejected" and "HTTP 429" in meter.source


# -- Codex --------------------------------------------------------------------------------------


@pytest.fixture
def codex_state() -> Iterator[Path]:
    """Homes outside the system temp directory (Codex warns about homes there)."""
    root = default_state_root() / f"e2e-rl-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def codex(server: ModelServer, state: Path, mode: Mode) -> CodexAdapter:
    provider = CodexProvider(
        base_url=server.base_url, api_key=CX_KEY, request_max_retries=1, stream_max_retries=1
    )
    config = CodexConfig(mode=mode, provider=provider, model=CX_MODEL, state_root=state)
    return CodexAdapter(config)


@pytest.mark.parametrize("mode", ["exec", "app-server"])
async def test_codex_waits_out_a_429_and_finishes(
    mode: Mode, server: ModelServer, workspace: Path, codex_state: Path, tmp_path: Path
) -> None:
    installed("codex")
    sink = RunSink()
    r = runner("codex", lambda: codex(server, codex_state, mode), sink, tmp_path / "rl")
    outcome = await run(r, "codex", "[[e2e:cx-wait]]", workspace)
    check(sink, "codex")
    assert outcome.status == "success" and outcome.summary == "CX FINISHED"
    assert len(outcome.runs) == 1 and outcome.runs[0].attempts == 1
    (events,) = sink.streams()
    (held,) = limited(events)
    assert held.resets_at is None  # Codex's retry notice does not say when
    after = events[events.index(held) + 1 :]
    assert text(after) == "CX FINISHED"
    first_text = next(e for e in after if e.kind == "text-delta")
    assert first_text.ts - held.ts >= 1_500  # Codex waited out retry-after: 2
    assert [q.status for q in server.requests_for("cx-wait")] == [429, 200]


async def test_codex_usage_limit_parks_until_its_reset_then_resumes_the_thread(
    server: ModelServer, workspace: Path, codex_state: Path, tmp_path: Path
) -> None:
    installed("codex")
    reset_s = RESETS["cx-park"]
    sink = RunSink()
    r = runner("codex", lambda: codex(server, codex_state, "app-server"), sink, tmp_path / "rl")
    outcome = await run(r, "codex", "[[e2e:cx-park]]", workspace)
    check(sink, "codex")
    assert outcome.status == "success" and outcome.summary == "CX RESUMED"
    assert len(outcome.runs) == 1 and outcome.runs[0].attempts == 2
    parked, resumed = sink.streams()
    # Codex's structured account/rateLimits/updated gave the window's reset
    structured = limited(parked)[0]
    assert structured.resets_at == reset_s * 1000
    assert structured.detail is not None and "primary 100% of a 300-min window" in structured.detail
    errors = [e for e in parked if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and errors[0].code == "rate_limited"
    assert isinstance(parked[-1], Done) and parked[-1].reason == "error"
    # parked until the reset, then the same thread continued
    assert resumed[0].ts >= reset_s * 1000 - 250
    assert resumed[0].run_id == parked[0].run_id  # the thread id
    assert text(resumed) == "CX RESUMED"
    requests = server.requests_for("cx-park")
    assert [q.status for q in requests] == [429, 200]
    body = last_user_text(requests[-1])
    assert "[[e2e:cx-park]] do it" in body and "Continue where you left off." in body
    # the quota meter: Codex's primary window, 100% of 300 minutes until its reset
    meters = {m.window: m for m in QuotaBook.in_state_dir(tmp_path / "rl").readings()}
    primary = meters["primary"]
    assert (primary.runtime_id, primary.used_percent, primary.window_minutes) == ("codex", 100, 300)
    assert primary.resets_at_ms == reset_s * 1000 and primary.state == "rejected"
    assert primary.source == "codex account/rateLimits/updated"
