"""Supervision: tell transient failures from permanent ones, retry the transient ones with
backoff and a cap, never loop on a permanent one.

Transient: rate limits and overload (429, 529, 503), server errors (5xx), a runtime that died or
went silent *before producing output*, a failed spawn. Permanent: a missing binary, bad
configuration, authentication or permission failures, invalid requests, exhausted budgets, and
any failure after the run already produced output (a retry would redo visible work). Unknown
codes are permanent: retrying what we do not understand is how restart storms start.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Literal, TypeAlias

import attrs
import trio

from .actor import RunOutcome
from .errors import (
    BudgetExceededError,
    ConfigError,
    RingleaderError,
    RuntimeNotFoundError,
    RuntimeStartError,
)

__all__ = [
    "FailureClass",
    "RestartPolicy",
    "Supervisor",
    "classify_exception",
    "classify_outcome",
]

_log = logging.getLogger(__name__)

FailureClass: TypeAlias = Literal["transient", "permanent"]

_TRANSIENT_CODE = re.compile(
    r"(?i)(rate[_ -]?limit|overload|429|529|503|502|500|5\d\d|server[_ -]?error|api[_ -]?error|"
    r"timeout|unavailable|connection)"
)
_BEFORE_OUTPUT_TRANSIENT = {
    "runtime_exited",
    "runtime_silent",
    "stream_ended",
    "runtime_start_failed",
}


def classify_outcome(outcome: RunOutcome) -> FailureClass | None:
    """``None`` when the run did not fail (success, max turns, abort); else its failure class."""
    if outcome.reason != "error":
        return None
    code = outcome.error_code or ""
    if code in _BEFORE_OUTPUT_TRANSIENT:
        return "permanent" if outcome.produced_output else "transient"
    if outcome.produced_output:
        return "permanent"
    text = f"{code} {outcome.error_message or ''}"
    if re.search(r"(?i)(auth|permission|forbidden|invalid|401|403|400|not[_ ]found|budget)", code):
        return "permanent"
    return "transient" if _TRANSIENT_CODE.search(text) else "permanent"


def classify_exception(error: BaseException) -> FailureClass:
    """The failure class of an exception raised while starting a run."""
    if isinstance(error, RuntimeNotFoundError | ConfigError | BudgetExceededError):
        return "permanent"
    if isinstance(error, RuntimeStartError):
        return "transient"
    if isinstance(error, RingleaderError):
        return "transient" if _TRANSIENT_CODE.search(str(error)) else "permanent"
    return "permanent"


@attrs.frozen
class RestartPolicy:
    """At most ``max_restarts`` retries, waiting ``initial_s × factor^n`` (capped) before each."""

    max_restarts: int = 3
    initial_s: float = 1.0
    factor: float = 2.0
    max_s: float = 30.0

    def backoff(self, restart: int) -> float:
        """The wait before retry number ``restart`` (0-based)."""
        return min(self.max_s, self.initial_s * self.factor**restart)


@attrs.define
class Supervisor:
    """Runs attempts of one run under a :class:`RestartPolicy`."""

    policy: RestartPolicy = attrs.field(factory=RestartPolicy)
    attempts: int = attrs.field(init=False, default=0)
    history: list[str] = attrs.field(init=False, factory=list[str])
    """One line per failed attempt: what failed and how it was classified."""

    async def supervise(self, attempt: Callable[[int], Awaitable[RunOutcome]]) -> RunOutcome:
        """Call ``attempt(n)`` until it succeeds, fails permanently or the cap is reached.

        Exceptions from a permanent failure (or the last allowed attempt) propagate; a transient
        exception is retried like a transient outcome.
        """
        n = 0
        while True:
            self.attempts = n + 1
            try:
                outcome = await attempt(n)
            except Exception as exc:
                kind = classify_exception(exc)
                self.history.append(f"attempt {n + 1}: {type(exc).__name__} ({kind})")
                if kind == "permanent" or n >= self.policy.max_restarts:
                    raise
            else:
                kind = classify_outcome(outcome)
                if kind is None:
                    return outcome
                self.history.append(f"attempt {n + 1}: {outcome.error_code or 'error'} ({kind})")
                if kind == "permanent" or n >= self.policy.max_restarts:
                    return outcome
            delay = self.policy.backoff(n)
            _log.info("transient failure; retry %d in %.1fs", n + 1, delay)
            await trio.sleep(delay)
            n += 1
