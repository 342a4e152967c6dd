"""Supervision: tell transient failures from permanent ones, retry the transient ones with
backoff and a cap, never loop on a permanent one, and say why each retry happens.

Classification, in order:

1. a run that already produced output is permanent (a retry would redo visible work);
2. the **typed code** the runtime reported (``error{code}``, e.g. ``rate_limited``,
   ``authentication_failed``, ``model_auth``), from the tables below;
3. only for codes that say nothing (``runtime_reported``, ``api_error``, ``adapter_error``, an
   unknown code): **bounded patterns** over the first :data:`MAX_SCAN_CHARS` of the message. An
   HTTP status counts only next to a word that makes it one (``status 503``, ``HTTP 429``,
   ``503 Service Unavailable``), never digits inside a port or a URL; auth words (401/403,
   ``unauthorized``, ``invalid api key``) are permanent before anything else is considered.

Connection failures are transient, except *connection refused on a loopback address*: nothing
is listening on this machine, and retrying with backoff would only delay the error. Unknown
failures are permanent: retrying what we do not understand is how restart storms start.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeAlias

import attrs
import trio

from orchestrator.core.errors import (
    BudgetExceededError,
    ConfigError,
    RingleaderError,
    RuntimeNotFoundError,
    RuntimeReportedError,
    RuntimeStartError,
    redact_secrets,
)
from orchestrator.engine.actor import RunOutcome
from orchestrator.engine.endpoints import LOOPBACK, REFUSED

__all__ = [
    "FailureClass",
    "RestartPolicy",
    "RetryListener",
    "RetryNotice",
    "Supervisor",
    "classify_exception",
    "classify_failure",
    "classify_outcome",
    "failure_reason",
]

_log = logging.getLogger(__name__)

FailureClass: TypeAlias = Literal["transient", "permanent"]

MAX_SCAN_CHARS: Final = 2000
"""Patterns look at no more than this much of a message."""

TRANSIENT_CODES: Final = frozenset(
    {
        "rate_limited",
        "rate_limit",
        "model_rate_limit",
        "overloaded",
        "model_overloaded",
        "server_error",
        "stream_connection_error",
        "network",
        "model_network",
        "connection_error",
        "timeout",
    }
)
"""Typed codes of failures worth retrying (rate limits, overload, 5xx, a dropped connection)."""

PERMANENT_CODES: Final = frozenset(
    {
        "authentication_failed",
        "auth",
        "model_auth",
        "permission_denied",
        "invalid_request",
        "bad_request",
        "model_bad_request",
        "context_overflow",
        "model_context_overflow",
        "budget_exceeded",
        "config_error",
        "runtime_not_found",
        "session_not_found",
        "line_too_long",
        "internal_error",
        "unreachable",
        "model_unreachable",
    }
)
"""Typed codes no retry can fix (auth, bad requests, budgets, configuration)."""

BEFORE_OUTPUT_CODES: Final = frozenset(
    {"runtime_exited", "runtime_silent", "stream_ended", "runtime_start_failed"}
)
"""Transient when the run had produced nothing yet (a crash or a hang before any output)."""

_AUTH = re.compile(
    r"(?i)\b(?:unauthori[sz]ed|forbidden|authentication[ _](?:failed|error)|"
    r"(?:invalid|incorrect|missing)[ _](?:x-)?api[ _-]?key|permission[ _]denied)\b"
)
_STATUS = re.compile(
    r"(?i)(?:\b(?:status(?:[ _]code)?|http(?:/\d(?:\.\d)?)?|error(?:[ _]code)?|code)[\s:=]*(?<![\d.:/])"
    r"([1-5]\d\d)(?![\d.:/])"
    r"|(?<![\w.:/])([1-5]\d\d)\s+(?:unauthorized|forbidden|too many requests|internal server error|"
    r"bad gateway|service unavailable|gateway timeout|overloaded))"
)
_TRANSIENT_WORDS = re.compile(
    r"(?i)\b(?:rate[ _-]?limit(?:ed)?|overloaded|too many requests|temporarily unavailable|"
    r"service unavailable|timed? ?out|connection (?:reset|closed|aborted|error|failed)|"
    r"econnreset|broken pipe)\b"
)


_TOO_LONG = re.compile(
    r"(?i)\b(?:input exceeds the maximum length|maximum context length|context[ _]length[ _]"
    r"exceeded|context window (?:is )?exceeded|prompt is too long|too many (?:input )?tokens)\b"
)
"""An input no model will take as it is (Codex: "input exceeds the maximum length"): whatever
code it comes with, retrying the same input cannot help."""

_NO_SUCH_SESSION = re.compile(r"(?i)\bno conversation found with session id\b")
"""A resume of a session the runtime never wrote down (Claude Code killed before it saved its
transcript): every attempt would ask for the same missing session."""


def _hopeless(text: str) -> bool:
    """What no retry of the same request can fix, whatever code it came with."""
    return bool(_TOO_LONG.search(text) or _NO_SUCH_SESSION.search(text))


def _status_class(status: int) -> FailureClass:
    if status == 429 or status >= 500:
        return "transient"
    return "permanent"


def classify_failure(code: str | None, message: str | None) -> FailureClass:
    """The class of a failure from its typed ``code`` first, its ``message`` only as a
    fallback (see the module docstring)."""
    text = (message or "")[:MAX_SCAN_CHARS]
    if REFUSED.search(text) and LOOPBACK.search(text):
        return "permanent"
    code = (code or "").lower()
    if code in PERMANENT_CODES or _hopeless(text):
        return "permanent"
    if code in TRANSIENT_CODES:
        # a typed transient code whose message is an auth failure (Codex words its 401s this
        # way through a stream error) is still permanent
        return "permanent" if _AUTH.search(text) else "transient"
    if code.startswith("http_") and code[5:].isdigit():
        return _status_class(int(code[5:]))
    if _AUTH.search(text):
        return "permanent"
    statuses = [int(a or b) for a, b in _STATUS.findall(text)]
    if any(s in (401, 403) for s in statuses):
        return "permanent"
    if statuses:
        return _status_class(statuses[0])
    if _TRANSIENT_WORDS.search(text) or REFUSED.search(text):
        return "transient"
    return "permanent"


def classify_outcome(outcome: RunOutcome) -> FailureClass | None:
    """``None`` when the run did not fail (success, max turns, abort); else its failure class."""
    if outcome.reason != "error":
        return None
    if outcome.produced_output:
        return "permanent"
    code = outcome.error_code or ""
    if code in BEFORE_OUTPUT_CODES:
        text = (outcome.error_message or "")[:MAX_SCAN_CHARS]
        if _AUTH.search(text) or _hopeless(text):
            return "permanent"
        if REFUSED.search(text) and LOOPBACK.search(text):
            return "permanent"
        return "transient"
    return classify_failure(code, outcome.error_message)


def classify_exception(error: BaseException) -> FailureClass:
    """The failure class of an exception raised while starting a run."""
    if isinstance(error, RuntimeNotFoundError | ConfigError | BudgetExceededError):
        return "permanent"
    if isinstance(error, RuntimeReportedError):
        return classify_failure(error.code, str(error))
    if isinstance(error, RuntimeStartError):
        text = str(error)[:MAX_SCAN_CHARS]
        refused_here = REFUSED.search(text) and LOOPBACK.search(text)
        hopeless = _AUTH.search(text) or refused_here or _hopeless(text)
        return "permanent" if hopeless else "transient"
    if isinstance(error, RingleaderError):
        return classify_failure(error.event_code, str(error))
    if isinstance(error, ConnectionRefusedError):
        return "permanent" if LOOPBACK.search(str(error)) else "transient"
    return "permanent"


def failure_reason(outcome: RunOutcome | None = None, error: BaseException | None = None) -> str:
    """One short line saying what failed (redacted), for the user and the log."""
    if error is not None:
        text = f"{type(error).__name__}: {error}"
    elif outcome is not None:
        message = " ".join((outcome.error_message or "").split())
        code = outcome.error_code or "error"
        text = f"{code}: {message}" if message else code
    else:
        text = "failed"
    text = redact_secrets(text)
    return text if len(text) <= 200 else text[:199] + "…"


@attrs.frozen
class RetryNotice:
    """A retry about to happen: ``attempt`` of ``max_attempts`` starts after ``delay_s``."""

    attempt: int
    max_attempts: int
    reason: str
    delay_s: float

    def __str__(self) -> str:
        return f"attempt {self.attempt}/{self.max_attempts}: {self.reason}"


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


RetryListener: TypeAlias = Callable[[RetryNotice], Awaitable[None] | None]


@attrs.define
class Supervisor:
    """Runs attempts of one run under a :class:`RestartPolicy`."""

    policy: RestartPolicy = attrs.field(factory=RestartPolicy)
    on_retry: RetryListener | None = None
    """Told before each retry (``attempt 2/4: <reason>``)."""
    attempts: int = attrs.field(init=False, default=0)
    history: list[str] = attrs.field(init=False, factory=list[str])
    """One line per failed attempt: what failed and how it was classified."""
    park: Callable[[RunOutcome], float | None] | None = None
    """Seconds to wait before continuing a failed run instead of handling it as a failure (a
    rate limit that says when it resets; see ``orchestrator.engine.governance.ratelimit``); parks do
    not count against ``max_restarts``."""
    parks: int = attrs.field(init=False, default=0)
    stop: Callable[[RunOutcome], bool] | None = None
    """Return a failed outcome as it is, neither parked nor retried, when this says so (a task
    rate-limited on one account with another account or runtime to go to)."""

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
                reason = failure_reason(error=exc)
                self.history.append(f"attempt {n + 1}: {reason} ({kind})")
                if kind == "permanent" or n - self.parks >= self.policy.max_restarts:
                    raise
            else:
                kind = classify_outcome(outcome)
                if kind is None:
                    return outcome
                reason = failure_reason(outcome)
                if self.stop is not None and self.stop(outcome):
                    self.history.append(f"attempt {n + 1}: {reason} (handed off)")
                    return outcome
                wait = self.park(outcome) if self.park is not None else None
                if wait is not None:
                    self.parks += 1
                    self.history.append(f"attempt {n + 1}: {reason} (parked {wait:.0f}s)")
                    notice = RetryNotice(
                        n + 2,
                        self.policy.max_restarts + self.parks + 1,
                        f"rate limited; parked {wait:.0f}s until the limit resets, then continuing",
                        wait,
                    )
                    _log.info("rate limited; %s", notice)
                    if self.on_retry is not None:
                        result = self.on_retry(notice)
                        if result is not None:
                            await result
                    await trio.sleep(wait)
                    n += 1
                    continue
                self.history.append(f"attempt {n + 1}: {reason} ({kind})")
                if kind == "permanent" or n - self.parks >= self.policy.max_restarts:
                    return outcome
            delay = self.policy.backoff(n - self.parks)
            notice = RetryNotice(n + 2, self.policy.max_restarts + self.parks + 1, reason, delay)
            _log.info("transient failure; %s (retry in %.1fs)", notice, delay)
            if self.on_retry is not None:
                result = self.on_retry(notice)
                if result is not None:
                    await result
            await trio.sleep(delay)
            n += 1
