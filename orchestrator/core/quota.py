"""Quota meters: the latest known state of each rate-limit window, per runtime and account.

Nothing here asks a provider anything: the readings come from what the runtimes already
report in their streams (the adapters turn them into ``status`` events):

* Claude Code's ``rate_limit_event`` (``status``, ``rateLimitType``, ``utilization``,
  ``resetsAt`` and the ``unifiedWindows`` it read from the ``anthropic-ratelimit-unified-*``
  headers): ``status{running|rate_limited}`` with ``quota`` windows ``five_hour``,
  ``seven_day``, …;
* Codex's ``account/rateLimits/updated`` (``primary`` / ``secondary`` windows with
  ``usedPercent``, ``windowDurationMins``, ``resetsAt``): the same, windows ``primary`` and
  ``secondary``;
* a plain rate limit that says only when it resets (Claude Code's 429 ``api_retry`` delay, the
  runner's park, a native ``Retry-After``): ``status{rate_limited, resets_at}`` with no windows,
  kept as the window ``requests``: held until then, how much was used unknown.

:func:`readings_from` turns one such event into :class:`QuotaReading`\\ s; a :class:`QuotaBook`
keeps the latest reading per (runtime, account, window) in ``<state dir>/quota.json`` (read and
replaced under an exclusive lock, like the breakers' file, so every process sharing the state
directory keeps one book). The runner records what its runs report (``Runner.quota``, ``orchestrator/engine/runner.py``); ``ringleader
usage``, ``ringleader runtimes`` and the board's ``GET /usage`` read it.

Unknown stays unknown: a window nobody reported is not in the book (the meters say
``unknown``), a used share the runtime did not state is ``None``, and a window whose reset time
has passed is shown as reset, its old share no longer current (:meth:`QuotaReading.current`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import attrs

from orchestrator.core.events import RuntimeEvent, Status
from orchestrator.core.jsonfile import locked, read_section, write_section

__all__ = [
    "DEFAULT_ACCOUNT",
    "QUOTA_FILE",
    "QuotaBook",
    "QuotaReading",
    "describe_reading",
    "latest",
    "readings_from",
    "summarize",
    "usage_report",
    "wants",
]

QUOTA_FILE: Final = "quota.json"
"""Where the quota book lives, in the state directory."""
DEFAULT_ACCOUNT: Final = "default"
"""The account of a runtime run without ``--account`` (its own login or key)."""
_SCHEMA: Final = 1


@attrs.frozen
class QuotaReading:
    """One window's state as last reported (see the module docstring)."""

    runtime_id: str
    account: str
    window: str
    used_percent: float | None
    """0–100 (may pass 100); ``None``: the runtime did not say."""
    resets_at_ms: int | None
    window_minutes: int | None
    state: str | None
    """``allowed``, ``allowed_warning`` or ``rejected`` (held until ``resets_at_ms``)."""
    source: str
    """What reported it: ``claude-code rate_limit_event``, ``codex account/rateLimits/updated``,
    ``rate limit (resets at …)``."""
    seen_ms: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.runtime_id, self.account, self.window)

    def limited(self, now_ms: int) -> bool:
        """Held by this window now: rejected (or used up) and its reset still ahead."""
        ahead = self.resets_at_ms is not None and self.resets_at_ms > now_ms
        full = self.state == "rejected" or (self.used_percent or 0) >= 100
        return full and ahead

    def current(self, now_ms: int) -> bool:
        """Whether the reading still describes the window: its reset has not passed."""
        return self.resets_at_ms is None or self.resets_at_ms > now_ms

    def left_percent(self, now_ms: int) -> float | None:
        """What is left of the window (``None``: unknown, also once it has reset)."""
        if self.used_percent is None or not self.current(now_ms):
            return None
        return max(0.0, 100.0 - self.used_percent)

    def to_json(self, now_ms: int | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "runtime": self.runtime_id,
            "account": self.account,
            "window": self.window,
            "usedPercent": self.used_percent,
            "resetsAt": self.resets_at_ms,
            "windowMinutes": self.window_minutes,
            "state": self.state,
            "source": self.source,
            "seenAt": self.seen_ms,
        }
        if now_ms is not None:
            data["current"] = self.current(now_ms)
            data["limited"] = self.limited(now_ms)
            data["leftPercent"] = self.left_percent(now_ms)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QuotaReading | None:
        try:
            return cls(
                runtime_id=str(data["runtime"]),
                account=str(data.get("account") or DEFAULT_ACCOUNT),
                window=str(data["window"]),
                used_percent=_number(data.get("usedPercent")),
                resets_at_ms=_integer(data.get("resetsAt")),
                window_minutes=_integer(data.get("windowMinutes")),
                state=str(data["state"]) if data.get("state") is not None else None,
                source=str(data.get("source") or "?"),
                seen_ms=_integer(data.get("seenAt")) or 0,
            )
        except (KeyError, TypeError, ValueError):
            return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _integer(value: object) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


_SOURCES: Final = {
    "claude-code": "claude-code rate_limit_event",
    "codex": "codex account/rateLimits/updated",
}


def readings_from(
    event: RuntimeEvent, runtime_id: str, account: str | None, *, now_ms: int
) -> list[QuotaReading]:
    """The quota readings one event carries (none for most events)."""
    if type(event) is not Status:
        return []
    account = account or DEFAULT_ACCOUNT
    if event.quota:
        source = _SOURCES.get(runtime_id, f"{runtime_id} rate-limit report")
        return [
            QuotaReading(
                runtime_id=runtime_id,
                account=account,
                window=w.name,
                used_percent=w.used_percent,
                resets_at_ms=w.resets_at,
                window_minutes=w.window_minutes,
                state=w.state,
                source=source,
                seen_ms=event.ts or now_ms,
            )
            for w in event.quota
        ]
    if event.phase == "rate_limited" and event.resets_at is not None:
        detail = " ".join((event.detail or "rate limited").split())[:120]
        return [
            QuotaReading(
                runtime_id=runtime_id,
                account=account,
                window="requests",
                used_percent=None,
                resets_at_ms=event.resets_at,
                window_minutes=None,
                state="rejected",
                source=f"{runtime_id}: {detail}",
                seen_ms=event.ts or now_ms,
            )
        ]
    return []


def wants(event: RuntimeEvent) -> bool:
    """Whether ``event`` carries a reading (cheap: called for every event of a run)."""
    return type(event) is Status and (
        event.quota is not None or (event.phase == "rate_limited" and event.resets_at is not None)
    )


@attrs.define(eq=False)
class QuotaBook:
    """The latest reading per (runtime, account, window), in ``path`` (see the module
    docstring); without a path, in memory only."""

    path: Path | None = None
    _readings: dict[tuple[str, str, str], QuotaReading] = attrs.field(
        factory=dict[tuple[str, str, str], QuotaReading]
    )

    @classmethod
    def in_state_dir(cls, state_dir: Path) -> QuotaBook:
        return cls(state_dir / QUOTA_FILE)

    def record(self, readings: Iterable[QuotaReading]) -> None:
        """Keep each reading unless the book has a newer one for its window."""
        fresh = list(readings)
        if not fresh:
            return
        with self._synced(write=True):
            for reading in fresh:
                if self._told_by_a_window(reading):
                    continue
                known = self._readings.get(reading.key)
                if known is not None and known.seen_ms > reading.seen_ms:
                    continue
                if known is not None and _same_hold(known, reading):
                    # the same hold reported again (the runner's park repeats the runtime's
                    # reset): keep the runtime's own account of it
                    reading = attrs.evolve(known, seen_ms=reading.seen_ms)
                self._readings[reading.key] = reading

    def _told_by_a_window(self, reading: QuotaReading) -> bool:
        """A plain hold (``requests``) that a named window of the same account already
        explains (the runner's park repeating Codex's primary window's reset, say)."""
        if reading.window != "requests":
            return False
        return any(
            r.runtime_id == reading.runtime_id
            and r.account == reading.account
            and r.window != "requests"
            and r.resets_at_ms == reading.resets_at_ms
            for r in self._readings.values()
        )

    def readings(self) -> list[QuotaReading]:
        """Every reading, by runtime, account and window."""
        with self._synced(write=False):
            return [self._readings[k] for k in sorted(self._readings)]

    def limited_until(self, runtime_id: str, account: str | None, now_ms: int) -> int | None:
        """When the account's last held window resets, while one is held (else ``None``)."""
        account = account or DEFAULT_ACCOUNT
        held = [
            r.resets_at_ms
            for r in self.readings()
            if r.runtime_id == runtime_id
            and r.account == account
            and r.limited(now_ms)
            and r.resets_at_ms is not None
        ]
        return max(held) if held else None

    @contextlib.contextmanager
    def _synced(self, *, write: bool) -> Generator[None]:
        path = self.path
        if path is None:
            yield
            return
        if not write and not path.exists():
            self._readings = {}
            yield
            return
        with locked(path):
            self._readings = _read(path)
            yield
            if write:
                _write(path, self._readings)


def _same_hold(known: QuotaReading, new: QuotaReading) -> bool:
    return (
        known.resets_at_ms == new.resets_at_ms
        and known.state == new.state
        and new.used_percent is None
        and new.source.startswith(f"{new.runtime_id}: resets at ")
    )


def _read(path: Path) -> dict[tuple[str, str, str], QuotaReading]:
    """The readings in ``path`` (none when it is missing or damaged: a meter is advice)."""
    entries = read_section(path, schema=_SCHEMA, section="readings")
    if not isinstance(entries, list):
        return {}
    found: dict[tuple[str, str, str], QuotaReading] = {}
    for entry in cast(list[object], entries):
        if isinstance(entry, dict):
            reading = QuotaReading.from_json(cast(dict[str, Any], entry))
            if reading is not None:
                found[reading.key] = reading
    return found


def _write(path: Path, readings: dict[tuple[str, str, str], QuotaReading]) -> None:
    entries = [readings[k].to_json() for k in sorted(readings)]
    write_section(path, entries, schema=_SCHEMA, section="readings")


def _clock(epoch_ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch_ms / 1000))


def describe_reading(reading: QuotaReading, now_ms: int) -> str:
    """One short line: ``42% used, resets 2026-11-27 14:00`` / ``held until …`` / ``reset at
    … (used since: unknown)``; unknown stays ``unknown``."""
    if not reading.current(now_ms):
        assert reading.resets_at_ms is not None
        return f"reset at {_clock(reading.resets_at_ms)} (used since: unknown)"
    used = "used unknown" if reading.used_percent is None else f"{reading.used_percent:g}% used"
    if reading.limited(now_ms):
        assert reading.resets_at_ms is not None
        return f"held until {_clock(reading.resets_at_ms)} ({used})"
    if reading.resets_at_ms is not None:
        return f"{used}, resets {_clock(reading.resets_at_ms)}"
    return used


def latest(readings: Sequence[QuotaReading]) -> int | None:
    """When the newest of ``readings`` was seen."""
    return max((r.seen_ms for r in readings), default=None)


def usage_report(
    readings: Sequence[QuotaReading],
    accounts: Mapping[str, Sequence[str]] | None = None,
    *,
    now_ms: int,
) -> list[dict[str, Any]]:
    """One entry per (runtime, account): its windows as last reported (``windows`` empty and
    ``known`` false when none were: unknown, never 0). ``accounts``: runtime id → the accounts
    to list even when nothing was reported for them (the configured ones)."""
    rows: dict[tuple[str, str], list[QuotaReading]] = {}
    for runtime_id, names in (accounts or {}).items():
        for name in names:
            rows.setdefault((runtime_id, name), [])
    for reading in readings:
        rows.setdefault((reading.runtime_id, reading.account), []).append(reading)
    report: list[dict[str, Any]] = []
    for (runtime_id, account), found in sorted(rows.items()):
        held = [r.resets_at_ms for r in found if r.limited(now_ms) and r.resets_at_ms]
        report.append(
            {
                "runtime": runtime_id,
                "account": account,
                "known": bool(found),
                "limitedUntil": max(held) if held else None,
                "seenAt": latest(found),
                "windows": [r.to_json(now_ms) for r in found],
            }
        )
    return report


def summarize(readings: Sequence[QuotaReading], now_ms: int) -> str:
    """One cell per runtime (``ringleader runtimes``): each account's windows, shortest form:
    ``five_hour 42%, seven_day 31%`` / ``primary held until …``; ``unknown`` when none."""
    if not readings:
        return "unknown"
    accounts: dict[str, list[str]] = {}
    for r in readings:
        if not r.current(now_ms):
            shown = "reset"
        elif r.limited(now_ms):
            assert r.resets_at_ms is not None
            shown = f"held until {_clock(r.resets_at_ms)}"
        elif r.used_percent is None:
            shown = "unknown"
        else:
            shown = f"{r.used_percent:g}%"
        accounts.setdefault(r.account, []).append(f"{r.window} {shown}")
    if list(accounts) == [DEFAULT_ACCOUNT]:
        return ", ".join(accounts[DEFAULT_ACCOUNT])
    return "; ".join(f"{name}: {', '.join(parts)}" for name, parts in accounts.items())
