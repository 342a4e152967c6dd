"""Circuit breakers: per runtime, and per provider for the native runtime.

A breaker counts a key's consecutive failed tasks. At ``failures`` in a row it **opens** for
``cooldown_s``: tasks sent to the key fail fast with :class:`~orchestrator.core.errors.BreakerOpenError`
(or go to the configured fallback runtime) instead of starting a runtime that keeps failing.
After the cool-down it is **half-open**: one trial task may start; its success **closes** the
breaker, its failure opens it again for another cool-down. Time is trio's clock, so tests drive
it with ``autojump_clock``.

A failure is a run that ended in error after supervision (its retries, if any, are spent).
Governance outcomes (a budget, an unknown cost, a rate-limit park) and aborts are not the
runtime's fault and leave the count alone.

A breaker belongs to its runtime, not to one command: a board with a ``path`` (the CLI uses
``<state dir>/breakers.json``) reads the file before every decision and writes it after every
change, under an exclusive lock, so every ``ringleader`` process sharing the state directory
sees one breaker per key. The file holds wall-clock times (a process's trio clock means nothing
to another); a trial whose process died is given up after one cool-down.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Final, Literal, TypeAlias, cast

import attrs
import trio

from orchestrator.core.errors import BreakerOpenError
from orchestrator.core.jsonfile import locked, read_section, write_section

__all__ = ["BreakerBoard", "BreakerPolicy", "BreakerState", "breaker_key"]

BreakerState: TypeAlias = Literal["closed", "open", "half-open"]

NOT_THE_RUNTIMES_FAULT: Final = frozenset(
    {"budget_exceeded", "cost_unknown", "breaker_open", "rate_limit_parked"}
)


def breaker_key(runtime_id: str, model: str | None) -> str:
    """``runtime_id``; for the native runtime ``native:<provider>`` when the model names one
    (``anthropic:claude-haiku-4-5`` → ``native:anthropic``)."""
    if runtime_id == "native" and model and ":" in model:
        return f"native:{model.split(':', 1)[0]}"
    return runtime_id


@attrs.frozen
class BreakerPolicy:
    failures: int = 3
    """Consecutive failed tasks that open the breaker."""
    cooldown_s: float = 60.0
    """How long it stays open before a trial task may start."""


@attrs.define
class _Breaker:
    failures: int = 0
    opened_at: float | None = None
    """When it opened, wall-clock epoch seconds."""
    trial_at: float | None = None
    """When its half-open trial task started (wall clock), while one runs."""
    last_reason: str = ""


@attrs.define(eq=False)
class BreakerBoard:
    """Every key's breaker (one board per host; shared by its runner copies; with ``path``,
    shared by every process that uses the file)."""

    policy: BreakerPolicy = attrs.field(factory=BreakerPolicy)
    path: Path | None = None
    """Where the breakers persist across commands (``None``: this board only)."""
    clock: Callable[[], float] | None = None
    """Seconds; default: trio's clock for a board of its own (tests drive it with
    ``autojump_clock``), the wall clock (:func:`time.time`) for a board shared through ``path``."""
    _breakers: dict[str, _Breaker] = attrs.field(factory=dict[str, _Breaker])

    def _now(self) -> float:
        if self.clock is not None:
            return self.clock()
        return time.time() if self.path is not None else trio.current_time()

    def state(self, key: str) -> BreakerState:
        with self._synced(write=False):
            return self._state(self._breakers.get(key))

    def _state(self, breaker: _Breaker | None) -> BreakerState:
        if breaker is None or breaker.opened_at is None:
            return "closed"
        if self._now() - breaker.opened_at < self.policy.cooldown_s:
            return "open"
        return "half-open"

    def open_breakers(self) -> dict[str, str]:
        """key → why, for every breaker not closed (``ringleader doctor`` lists them)."""
        with self._synced(write=False):
            found: dict[str, str] = {}
            for key, breaker in sorted(self._breakers.items()):
                state = self._state(breaker)
                if state != "closed":
                    found[key] = self._why(key, breaker, state)
            return found

    def admit(self, key: str) -> None:
        """Let a task start on ``key``, or raise :class:`BreakerOpenError` saying why not."""
        with self._synced(write=True):
            breaker = self._breakers.get(key)
            state = self._state(breaker)
            if state == "closed":
                return
            assert breaker is not None
            now = self._now()
            trial = breaker.trial_at
            if state == "half-open" and (trial is None or now - trial >= self.policy.cooldown_s):
                breaker.trial_at = now  # this task is the trial; others wait for its verdict
                return
            raise BreakerOpenError(self._why(key, breaker, state), actor_id=key)

    def _why(self, key: str, breaker: _Breaker, state: BreakerState) -> str:
        assert breaker.opened_at is not None
        left = max(0.0, self.policy.cooldown_s - (self._now() - breaker.opened_at))
        when = f"retry in {left:.0f}s" if state == "open" else "a trial run is in progress"
        if state == "half-open" and breaker.trial_at is None:
            when = "the next task is its trial"
        return (
            f"{key}: circuit breaker open after {breaker.failures} failed tasks in a row "
            f"(last: {breaker.last_reason or 'error'}); {when}"
        )

    def record(self, key: str, *, ok: bool, code: str | None = None, reason: str = "") -> None:
        """Tell the breaker how a task on ``key`` ended (``ok``: it did not fail)."""
        with self._synced(write=True):
            if not ok and code in NOT_THE_RUNTIMES_FAULT:
                breaker = self._breakers.get(key)
                if breaker is not None:
                    breaker.trial_at = None
                return
            if ok:
                self._breakers.pop(key, None)
                return
            breaker = self._breakers.setdefault(key, _Breaker())
            breaker.failures += 1
            breaker.last_reason = reason
            if breaker.trial_at is not None or breaker.failures >= self.policy.failures:
                breaker.opened_at = self._now()
            breaker.trial_at = None

    # -- persistence --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _synced(self, *, write: bool) -> Generator[None]:
        """Read the file's breakers before a decision, write them back after a change (one
        small JSON file under an exclusive ``flock``: a few hundred µs per task start/end)."""
        path = self.path
        if path is None:
            yield
            return
        with locked(path):
            self._breakers = _read(path)
            yield
            if write:
                _write(path, self._breakers)


_SCHEMA: Final = 1


def _read(path: Path) -> dict[str, _Breaker]:
    """The breakers in ``path`` (none when it is missing or unreadable: a breaker is advice,
    and a damaged file must not stop every task)."""
    entries = read_section(path, schema=_SCHEMA, section="breakers")
    if not isinstance(entries, dict):
        return {}
    found: dict[str, _Breaker] = {}
    for key, value in cast(dict[str, object], entries).items():
        if not isinstance(value, dict):
            continue
        entry = cast(dict[str, object], value)
        failures = entry.get("failures")
        found[key] = _Breaker(
            failures=failures if isinstance(failures, int) else 0,
            opened_at=_seconds(entry.get("openedAt")),
            trial_at=_seconds(entry.get("trialAt")),
            last_reason=str(entry.get("lastReason") or ""),
        )
    return found


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _write(path: Path, breakers: dict[str, _Breaker]) -> None:
    """Replace ``path`` atomically (a reader never sees half a file)."""
    entries = {
        key: {
            "failures": b.failures,
            "openedAt": b.opened_at,
            "trialAt": b.trial_at,
            "lastReason": b.last_reason,
        }
        for key, b in sorted(breakers.items())
    }
    write_section(path, entries, schema=_SCHEMA, section="breakers")
