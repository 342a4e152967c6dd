"""The app-server normalizer on recorded Codex 0.169.0 conversations."""

from __future__ import annotations

from typing import Any

from adapters.codex import AppState, normalize_app
from contract import check_stream
from orchestrator.core.events import (
    Cost,
    Done,
    ErrorEvent,
    EventFactory,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)

from .conftest import app_messages


def replay(name: str, state: AppState | None = None) -> tuple[list[RuntimeEvent], list[str]]:
    make = EventFactory(run_id="r", session_id="s", clock=lambda: 1)
    state = state or AppState(model="gpt-5.5")
    events: list[RuntimeEvent] = []
    unknown: list[str] = []
    for message in app_messages(name):
        if "method" not in message or "id" in message or make.finished:
            continue
        out = normalize_app(message["method"], message.get("params"), make, state)
        if out is None:
            unknown.append(message["method"])
        else:
            events += out
    return events, unknown


def test_text_streams_deltas() -> None:
    events, unknown = replay("text")
    check_stream(events)
    assert not unknown
    assistant = [e.text for e in events if isinstance(e, TextDelta) and e.channel == "assistant"]
    reasoning = [e.text for e in events if isinstance(e, TextDelta) and e.channel == "reasoning"]
    assert len(assistant) > 1 and "".join(assistant) == "FINAL: hello from codex"
    assert "".join(reasoning) == "Thinking about it"
    cost = next(e for e in events if isinstance(e, Cost))
    assert (cost.usage.input_tokens, cost.usage.output_tokens) == (10, 5)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert done.summary == "FINAL: hello from codex"


def test_tool_calls_and_results() -> None:
    events, _ = replay("tool")
    check_stream(events)
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["exec_command", "exec_command"]
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls]
    assert "hi-from-tool" in results[0].output and results[0].output.endswith("[exit code: 0]")
    assert results[1].is_error and results[1].output.endswith("[exit code: 2]")
    assert isinstance(events[-1], Done) and events[-1].summary == "TOOL_RESULT_SEEN"


def test_failed_turn() -> None:
    events, _ = replay("error-500")
    check_stream(events)
    retries = [e for e in events if isinstance(e, Status) and e.detail]
    assert any("Reconnecting" in (e.detail or "") for e in retries)
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.fatal and error.code == "server_error"
    assert isinstance(events[-1], Done) and events[-1].reason == "error"


def test_interrupted_turn_is_aborted_with_partial_text() -> None:
    events, _ = replay("abort")
    check_stream(events)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "aborted"
    assert done.summary.startswith("slow")
    assert not any(isinstance(e, ErrorEvent) for e in events)


def test_resume_reports_this_runs_usage_only() -> None:
    first, _ = replay("resume-first")
    base = next(e for e in first if isinstance(e, Cost)).usage
    second, unknown = replay("resume-second", AppState(model="gpt-5.5", base_usage=base))
    assert not unknown  # deprecationNotice, thread/goal/cleared … are known and dropped
    (cost,) = [e for e in second if isinstance(e, Cost)]  # the replayed old total is dropped
    assert (cost.usage.input_tokens, cost.usage.output_tokens) == (10, 5)
    assert isinstance(second[-1], Done) and second[-1].summary == "SECOND after resume"


def test_unknown_and_malformed_notifications() -> None:
    make = EventFactory(run_id="r")
    state = AppState()
    assert normalize_app("brand/new", {"x": 1}, make, state) is None
    assert (
        normalize_app("item/started", {"item": {"type": "newKind", "id": "x"}}, make, state) is None
    )
    assert normalize_app("item/agentMessage/delta", "junk", make, state) == []
    out = normalize_app("thread/tokenUsage/updated", {"tokenUsage": None}, make, state)
    assert out is not None and isinstance(out[-1], Cost) and out[-1].usage == Usage()
    assert isinstance(out[0], Status)  # drift: the totals it expects are missing
    assert out[0].detail == (
        "frame lacks expected fields: 'thread/tokenUsage/updated' without tokenUsage.total"
    )
    item: dict[str, Any] = {"type": "commandExecution", "id": "c", "exitCode": "x"}
    out = normalize_app("item/completed", {"item": item}, make, state)
    assert out is not None and [e.kind for e in out] == ["tool-call", "tool-result"]
    assert normalize_app("item/completed", {"item": item}, make, state) == []


# Codex 0.169.0's own frames for a usage limit: the model server answered 429 with an
# ``error.type: usage_limit_reached`` body and ``x-codex-primary-*`` headers (tests/e2e/
# test_rate_limit_e2e.py drives the same through the real CLI).
RESET_S = 1795673691
USAGE_LIMIT: list[tuple[str, dict[str, Any]]] = [
    ("turn/started", {"threadId": "t1", "turn": {"id": "u1", "status": "inProgress"}}),
    (
        "account/rateLimits/updated",
        {
            "rateLimits": {
                "limitId": "codex",
                "primary": {"usedPercent": 100, "windowDurationMins": 300, "resetsAt": RESET_S},
                "secondary": None,
                "rateLimitReachedType": None,
            }
        },
    ),
    (
        "error",
        {
            "error": {
                "message": "You’ve hit your usage limit. … or try again at 6:14 AM.",
                "codexErrorInfo": "usageLimitExceeded",
            },
            "willRetry": False,
            "threadId": "t1",
            "turnId": "u1",
        },
    ),
    (
        "turn/completed",
        {
            "threadId": "t1",
            "turn": {
                "id": "u1",
                "status": "failed",
                "error": {
                    "message": "You’ve hit your usage limit. … or try again at 6:14 AM.",
                    "codexErrorInfo": "usageLimitExceeded",
                },
            },
        },
    ),
]


def feed(frames: list[tuple[str, dict[str, Any]]]) -> list[RuntimeEvent]:
    make = EventFactory(run_id="r", session_id="s", clock=lambda: 1)
    state = AppState(model="gpt-5.5")
    events: list[RuntimeEvent] = []
    for method, params in frames:
        out = normalize_app(method, params, make, state)
        assert out is not None, method
        events += out
    return events


def test_a_used_up_window_is_rate_limited_until_its_reset() -> None:
    events = feed(USAGE_LIMIT)
    check_stream(events)
    limited = [e for e in events if isinstance(e, Status) and e.phase == "rate_limited"]
    assert limited[0].resets_at == RESET_S * 1000
    assert limited[0].detail == (
        f"rate limit reached: primary 100% of a 300-min window; resets at {RESET_S}"
    )
    assert len(limited) == 2  # then the error notification, which has no time
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "rate_limited" and error.fatal


def test_rate_limit_updates_below_the_limit_report_the_windows_and_hold_nothing() -> None:
    make = EventFactory(run_id="r")
    state = AppState()
    empty = {"rateLimits": {"limitId": "codex", "primary": None, "secondary": None}}
    assert normalize_app("account/rateLimits/updated", empty, make, state) == []  # unknown
    half = {
        "rateLimits": {
            "primary": {"usedPercent": 50.5, "windowDurationMins": 300, "resetsAt": RESET_S},
            "secondary": {"usedPercent": 12, "windowDurationMins": 10080, "resetsAt": RESET_S + 9},
        }
    }
    out = normalize_app("account/rateLimits/updated", half, make, state)
    assert out is not None
    (status,) = out
    assert isinstance(status, Status) and status.phase == "running"  # the run goes on
    assert status.resets_at is None
    assert status.detail == "rate limits: primary 50.5% used, secondary 12% used"
    assert status.quota is not None
    primary, secondary = status.quota
    assert (primary.name, primary.used_percent, primary.window_minutes) == ("primary", 50.5, 300)
    assert primary.resets_at == RESET_S * 1000 and primary.state == "allowed"
    assert (secondary.name, secondary.used_percent) == ("secondary", 12)


def test_a_reached_type_without_windows_is_a_rate_limit_with_no_reset() -> None:
    make = EventFactory(run_id="r")
    params = {"rateLimits": {"primary": None, "rateLimitReachedType": "workspace_member"}}
    out = normalize_app("account/rateLimits/updated", params, make, AppState())
    assert out is not None
    (status,) = out
    assert isinstance(status, Status) and status.phase == "rate_limited"
    assert status.resets_at is None and status.detail == "rate limit reached (workspace_member)"


def test_a_retried_429_is_rate_limited_and_a_500_is_not() -> None:
    def error(status: int) -> dict[str, Any]:
        info = {"responseStreamDisconnected": {"httpStatusCode": status}}
        return {
            "error": {"message": "Reconnecting... 1/1", "codexErrorInfo": info},
            "willRetry": True,
        }

    make = EventFactory(run_id="r")
    state = AppState()
    (limited,) = normalize_app("error", error(429), make, state) or []
    (other,) = normalize_app("error", error(500), make, state) or []
    assert isinstance(limited, Status) and limited.phase == "rate_limited"
    assert isinstance(other, Status) and other.phase == "running"
