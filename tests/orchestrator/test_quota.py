"""Quota meters: readings from the runtimes' own rate-limit frames (recorded ones where they
exist), the durable book, ``ringleader usage``, ``runtimes``' column and the board's
``GET /usage``. Unknown is shown as unknown, never 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import trio

from adapters.claude_code.dialect import decode_line
from adapters.claude_code.normalize import ClaudeState, normalize_line
from adapters.codex.normalize import AppState, normalize_app
from orchestrator.board.server import board_app
from orchestrator.core import EventFactory, RuntimeEvent, Status
from orchestrator.core.quota import (
    QuotaBook,
    QuotaReading,
    describe_reading,
    readings_from,
    summarize,
    usage_report,
)
from orchestrator.engine import EventLog
from orchestrator.engine.feed import Feed

FIXTURES = Path(__file__).parents[1] / "fixtures"
NOW_MS = 1_795_670_000_000
HOUR_MS = 3_600_000


def claude_events(lines: list[bytes]) -> list[RuntimeEvent]:
    make = EventFactory(run_id="r", session_id="s", clock=lambda: NOW_MS)
    state = ClaudeState()
    events: list[RuntimeEvent] = []
    for line in lines:
        events += normalize_line(decode_line(line), make, state) or []
    return events


def codex_events(frames: list[tuple[str, dict[str, Any]]]) -> list[RuntimeEvent]:
    make = EventFactory(run_id="r", session_id="s", clock=lambda: NOW_MS)
    state = AppState(model="gpt-5.5")
    events: list[RuntimeEvent] = []
    for method, params in frames:
        events += normalize_app(method, params, make, state) or []
    return events


def read(
    events: list[RuntimeEvent], runtime: str, account: str | None = None
) -> list[QuotaReading]:
    return [r for e in events for r in readings_from(e, runtime, account, now_ms=NOW_MS)]


def recorded_codex(name: str) -> list[tuple[str, dict[str, Any]]]:
    frames: list[tuple[str, dict[str, Any]]] = []
    for line in (FIXTURES / "codex" / "0.169.0" / name).read_text().splitlines():
        msg = json.loads(line).get("msg", {})
        if "method" in msg and "id" not in msg:
            frames.append((msg["method"], msg.get("params") or {}))
    return frames


# -- readings from the runtimes' frames ---------------------------------------------------------


def test_codex_recorded_updates_with_no_windows_leave_the_quota_unknown() -> None:
    frames = recorded_codex("app-text.jsonl")
    assert any(method == "account/rateLimits/updated" for method, _ in frames)  # really there
    assert read(codex_events(frames), "codex") == []  # every window null: unknown, not 0%
    assert usage_report([], {"codex": ["default"]}, now_ms=NOW_MS) == [
        {
            "runtime": "codex",
            "account": "default",
            "known": False,
            "limitedUntil": None,
            "seenAt": None,
            "windows": [],
        }
    ]


def test_codex_usage_limit_frames_give_a_held_primary_window() -> None:
    # Codex 0.169.0's own frames when its usage limit was reached (x-codex-primary-* headers)
    reset_s = 1795673691
    frames = [
        (
            "account/rateLimits/updated",
            {
                "rateLimits": {
                    "limitId": "codex",
                    "primary": {"usedPercent": 100, "windowDurationMins": 300, "resetsAt": reset_s},
                    "secondary": None,
                    "rateLimitReachedType": None,
                }
            },
        )
    ]
    (reading,) = read(codex_events(frames), "codex", "work")
    assert (reading.runtime_id, reading.account, reading.window) == ("codex", "work", "primary")
    assert reading.used_percent == 100 and reading.window_minutes == 300
    assert reading.resets_at_ms == reset_s * 1000 and reading.state == "rejected"
    assert reading.source == "codex account/rateLimits/updated"
    assert reading.limited(NOW_MS) and reading.left_percent(NOW_MS) == 0
    assert not reading.limited(reset_s * 1000 + 1)  # after its reset it no longer holds
    assert reading.left_percent(reset_s * 1000 + 1) is None  # … and what is left is unknown


def test_claude_code_recorded_429_is_a_held_requests_window_of_unknown_use() -> None:
    lines = (FIXTURES / "claude_code" / "2.1.330" / "error-429.jsonl").read_bytes().splitlines()
    (reading, *_) = read(claude_events(lines), "claude-code")
    assert reading.window == "requests" and reading.state == "rejected"
    assert reading.used_percent is None  # the 429 did not say how much was used
    assert reading.resets_at_ms is not None and reading.resets_at_ms > NOW_MS  # + retry delay
    assert "HTTP 429" in reading.source
    assert "used unknown" in describe_reading(reading, NOW_MS)


def rate_limit_event(info: dict[str, Any]) -> bytes:
    """A ``rate_limit_event`` in the shape Claude Code 2.1.330 declares for it (its schema in
    the CLI: ``status``, ``resetsAt``, ``rateLimitType``, ``utilization`` and ``unifiedWindows``
    read from the ``anthropic-ratelimit-unified-*`` headers). The CLI sends it only to
    subscription logins, so no recorded transcript (API keys) has one."""
    return json.dumps({"type": "rate_limit_event", "rate_limit_info": info}).encode()


def test_claude_code_rate_limit_event_windows_become_readings() -> None:
    five_h = NOW_MS // 1000 + 3600
    week = NOW_MS // 1000 + 3 * 86400
    line = rate_limit_event(
        {
            "status": "allowed_warning",
            "resetsAt": five_h,
            "rateLimitType": "five_hour",
            "utilization": 0.82,
            "unifiedWindows": {
                "five_hour": {"utilization": 0.82, "resetsAt": five_h, "status": "allowed_warning"},
                "seven_day": {"utilization": 0.31, "resetsAt": week, "status": "allowed"},
            },
        }
    )
    events = claude_events([line])
    (status,) = events
    assert isinstance(status, Status) and status.phase == "running"  # a warning holds nothing
    by_window = {r.window: r for r in read(events, "claude-code")}
    assert (
        by_window["five_hour"].used_percent == 82 and by_window["five_hour"].window_minutes == 300
    )
    assert by_window["seven_day"].used_percent == 31
    assert by_window["seven_day"].resets_at_ms == week * 1000
    assert not any(r.limited(NOW_MS) for r in by_window.values())
    assert summarize(list(by_window.values()), NOW_MS) == "five_hour 82%, seven_day 31%"

    rejected = rate_limit_event(
        {"status": "rejected", "resetsAt": five_h, "rateLimitType": "five_hour"}
    )
    (held,) = claude_events([rejected])
    assert isinstance(held, Status) and held.phase == "rate_limited"
    (reading,) = read([held], "claude-code")
    assert reading.window == "five_hour" and reading.limited(NOW_MS)
    assert reading.used_percent is None  # the event did not say: unknown, not 100 nor 0


# -- the book -----------------------------------------------------------------------------------


def reading(window: str, used: float | None, seen: int, **kw: Any) -> QuotaReading:
    values: dict[str, Any] = {
        "runtime_id": "claude-code",
        "account": "default",
        "window": window,
        "used_percent": used,
        "resets_at_ms": NOW_MS + HOUR_MS,
        "window_minutes": 300,
        "state": "allowed",
        "source": "test",
        "seen_ms": seen,
    } | kw
    return QuotaReading(**values)


def test_the_book_keeps_the_latest_reading_per_window_across_processes(tmp_path: Path) -> None:
    one = QuotaBook.in_state_dir(tmp_path)
    other = QuotaBook.in_state_dir(tmp_path)  # another process sharing the state directory
    one.record([reading("five_hour", 40, NOW_MS), reading("seven_day", 10, NOW_MS)])
    other.record([reading("five_hour", 55, NOW_MS + 1)])
    one.record([reading("five_hour", 20, NOW_MS - 5)])  # older: ignored
    got = {r.window: r.used_percent for r in one.readings()}
    assert got == {"five_hour": 55, "seven_day": 10}
    assert (tmp_path / "quota.json").stat().st_mode & 0o777 == 0o600
    held = reading("five_hour", 100, NOW_MS + 2, account="work", state="rejected")
    other.record([held])
    assert one.limited_until("claude-code", "work", NOW_MS) == NOW_MS + HOUR_MS
    assert one.limited_until("claude-code", None, NOW_MS) is None
    # the runner's park repeats a named window's reset: no second, nameless hold
    park = reading(
        "requests",
        None,
        NOW_MS + 3,
        account="work",
        state="rejected",
        source="claude-code: resets at 1",
    )
    other.record([park])
    assert [r.window for r in one.readings() if r.account == "work"] == ["five_hour"]
    (tmp_path / "quota.json").write_text("{not json")
    assert one.readings() == []  # a damaged file is no readings, never a crash


# -- the surfaces -------------------------------------------------------------------------------


def ringleader(*args: str, state: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"RINGLEADER_STATE_DIR": str(state), "NO_COLOR": "1", "COLUMNS": "250"}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=cwd,
    )


def test_usage_shows_each_window_and_unknown_as_unknown(tmp_path: Path) -> None:
    now = int(time.time() * 1000)
    QuotaBook.in_state_dir(tmp_path / "state").record(
        [
            reading("five_hour", 82, now, resets_at_ms=now + HOUR_MS),
            reading(
                "primary",
                100,
                now,
                runtime_id="codex",
                state="rejected",
                resets_at_ms=now + HOUR_MS,
            ),
        ]
    )
    shown = ringleader("usage", state=tmp_path / "state", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    five = next(line for line in lines if "five_hour" in line)
    assert "82%" in five and "18%" in five and "allowed" in five
    primary = next(line for line in lines if line.startswith("codex") and "primary" in line)
    assert "held" in primary
    native = next(line for line in lines if line.startswith("native "))
    assert "unknown" in native and "0%" not in native
    as_json = ringleader("usage", "--json", state=tmp_path / "state", cwd=tmp_path)
    rows = {(r["runtime"], r["account"]): r for r in map(json.loads, as_json.stdout.splitlines())}
    assert rows[("native", "default")]["known"] is False
    assert rows[("native", "default")]["windows"] == []
    assert rows[("codex", "default")]["limitedUntil"] is not None
    cc = rows[("claude-code", "default")]["windows"][0]
    assert cc["usedPercent"] == 82 and cc["leftPercent"] == 18 and cc["source"] == "test"
    listed = ringleader("runtimes", state=tmp_path / "state", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    header, *rows_text = listed.stdout.splitlines()
    assert header.rstrip().endswith("quota")
    assert "five_hour 82%" in next(r for r in rows_text if r.startswith("claude-code"))
    assert next(r for r in rows_text if r.startswith("native")).rstrip().endswith("unknown")


async def test_the_board_serves_the_meters(tmp_path: Path) -> None:
    book = QuotaBook.in_state_dir(tmp_path)
    now = int(time.time() * 1000)
    book.record([reading("five_hour", 42.5, now, resets_at_ms=now + HOUR_MS)])
    async with EventLog.open(tmp_path / "events.db") as log:
        app = board_app(Feed(), log, token="tok", quota=book)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            assert (await client.get("/usage")).status_code == 401  # reads need the token
            answer = await client.get("/usage", headers={"authorization": "Bearer tok"})
    assert answer.status_code == 200
    (row,) = answer.json()["usage"]
    assert row["runtime"] == "claude-code" and row["known"] is True
    assert row["windows"][0]["usedPercent"] == 42.5
    await trio.lowlevel.checkpoint()
