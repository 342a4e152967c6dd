"""Rate limits: a 429 that says when it resets parks the task until then, instead of burning
the supervisor's retries; the task then continues from its session.

Where the reset time comes from (first found wins, checked on the events themselves, so one
mechanism serves every runtime):

* a ``status`` with ``resets_at`` (the adapters set it from the runtime's own rate-limit
  signals: Claude Code's ``rate_limit_event`` and its 429 ``api_retry`` delay, Codex's
  ``account/rateLimits/updated``), or whose detail carries ``resets at <epoch seconds>``;
* a rate-limit ``error`` (``rate_limited``, ``model_rate_limit``, …) whose message says
  ``retry after <N>s`` / ``retry-after: <N>`` (an HTTP ``Retry-After``; the native runtime adds it),
  ``try again in <N> seconds|minutes|hours`` (Codex's wording) or ``resets at <epoch>``.

A reset further away than :attr:`ParkPolicy.max_wait_s`, or more than :attr:`ParkPolicy.max_parks`
parks in one task, falls back to the supervisor's ordinary handling.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

__all__ = ["RATE_LIMIT_CODES", "ParkPolicy", "reset_from_text"]

RATE_LIMIT_CODES: Final = frozenset(
    {"rate_limited", "rate_limit", "model_rate_limit", "rate_limit_error", "http_429"}
)
"""``error.code`` values that mean "rate limited"."""

_RESETS_AT = re.compile(r"(?i)\bresets?(?:[ _]?at)?[\s:=]+(\d{9,13})(?:\.\d+)?\b")
_AFTER = re.compile(
    r"(?i)\b(?:retry[ _-]?after|try again in)[\s:=]*(\d+(?:\.\d+)?)\s*"
    r"(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)?\b"
)
_UNIT_S: Final = {"ms": 0.001, "m": 60.0, "h": 3600.0}
_MAX_SCAN: Final = 2000


@attrs.frozen
class ParkPolicy:
    max_parks: int = 3
    """Parks per task before rate limits go back to the supervisor's retries."""
    max_wait_s: float = 6 * 3600.0
    """A reset further away than this is not waited for."""


def reset_from_text(text: str, now_ms: int) -> int | None:
    """The reset time (epoch ms) a rate-limit message or status detail states, if any."""
    text = text[:_MAX_SCAN]
    found = _RESETS_AT.search(text)
    if found is not None:
        value = int(found.group(1))
        return value if value > 10**12 else value * 1000  # epoch seconds or ms
    found = _AFTER.search(text)
    if found is not None:
        unit = (found.group(2) or "s").lower()
        key = "ms" if unit == "ms" or unit.startswith("milli") else unit[0]
        scale = _UNIT_S.get(key, 1.0)
        return now_ms + int(float(found.group(1)) * scale * 1000)
    return None
