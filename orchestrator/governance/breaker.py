"""Circuit breakers: per runtime, and per provider for the native runtime.

A breaker counts a key's consecutive failed tasks. At ``failures`` in a row it **opens** for
``cooldown_s``: tasks sent to the key fail fast with :class:`~orchestrator.errors.BreakerOpenError`
(or go to the configured fallback runtime) instead of starting a runtime that keeps failing.
After the cool-down it is **half-open**: one trial task may start; its success **closes** the
breaker, its failure opens it again for another cool-down. Time is trio's clock, so tests drive
it with ``autojump_clock``.

A failure is a run that ended in error after supervision (its retries, if any, are spent).
Governance outcomes (a budget, an unknown cost, a rate-limit park) and aborts are not the
runtime's fault and leave the count alone.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

import attrs
import trio

from ..errors import BreakerOpenError

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
    trial: bool = False
    last_reason: str = ""


@attrs.define(eq=False)
class BreakerBoard:
    """Every key's breaker (one board per host; shared by its runner copies)."""

    policy: BreakerPolicy = attrs.field(factory=BreakerPolicy)
    _breakers: dict[str, _Breaker] = attrs.field(factory=dict[str, _Breaker])

    def state(self, key: str) -> BreakerState:
        breaker = self._breakers.get(key)
        if breaker is None or breaker.opened_at is None:
            return "closed"
        if trio.current_time() - breaker.opened_at < self.policy.cooldown_s:
            return "open"
        return "half-open"

    def admit(self, key: str) -> None:
        """Let a task start on ``key``, or raise :class:`BreakerOpenError` saying why not."""
        state = self.state(key)
        if state == "closed":
            return
        breaker = self._breakers[key]
        assert breaker.opened_at is not None
        if state == "half-open" and not breaker.trial:
            breaker.trial = True  # this task is the trial; others wait for its verdict
            return
        left = max(0.0, self.policy.cooldown_s - (trio.current_time() - breaker.opened_at))
        when = f"retry in {left:.0f}s" if state == "open" else "a trial run is in progress"
        raise BreakerOpenError(
            f"{key}: circuit breaker open after {breaker.failures} failed tasks in a row "
            f"(last: {breaker.last_reason or 'error'}); {when}",
            actor_id=key,
        )

    def record(self, key: str, *, ok: bool, code: str | None = None, reason: str = "") -> None:
        """Tell the breaker how a task on ``key`` ended (``ok``: it did not fail)."""
        if not ok and code in NOT_THE_RUNTIMES_FAULT:
            breaker = self._breakers.get(key)
            if breaker is not None:
                breaker.trial = False
            return
        breaker = self._breakers.setdefault(key, _Breaker())
        if ok:
            self._breakers.pop(key, None)
            return
        breaker.failures += 1
        breaker.last_reason = reason
        if breaker.trial or breaker.failures >= self.policy.failures:
            breaker.opened_at = trio.current_time()
        breaker.trial = False
