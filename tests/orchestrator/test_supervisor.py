"""Supervisor classification (#14 item 4): typed codes first, bounded patterns only as fallback;
401/403 permanent and never retried; ``5\\d\\d`` never matches digits in ports or URLs; connection
refused on loopback is not retried; each retry is announced as ``attempt n/N: <reason>``."""

from __future__ import annotations

import pytest
import trio

from orchestrator.core.errors import ConfigError, RuntimeReportedError, RuntimeStartError
from orchestrator.engine.actor import RunOutcome
from orchestrator.engine.supervisor import (
    RestartPolicy,
    RetryNotice,
    Supervisor,
    classify_exception,
    classify_failure,
    classify_outcome,
)


def failed(code: str | None, message: str = "", *, produced_output: bool = False) -> RunOutcome:
    return RunOutcome(
        run_key="k",
        run_id="r",
        reason="error",
        summary="",
        usage=None,
        cost_usd=None,
        error_code=code,
        error_message=message,
        produced_output=produced_output,
    )


PERMANENT = [
    # the Codex 401 that used to be retried: a typed-less message with a 401 in it
    (
        "runtime_reported",
        "unexpected status 401 Unauthorized: Incorrect API key provided: sk-[REDACTED]",
    ),
    ("api_error", 'API Error: 401 {"type":"error","error":{"type":"authentication_error"}}'),
    ("api_error", "API Error: 403 Forbidden"),
    # digits of a port or a URL are not an HTTP status
    ("runtime_reported", "stream error at http://127.0.0.1:5003/v1/responses: unexpected frame"),
    ("runtime_reported", "listening on 127.0.0.1:8500 went away unexpectedly"),
    ("runtime_reported", "see https://example.com/errors/500/details"),
    # connection refused on loopback: nothing listens here
    (
        "model_unreachable",
        "connection to http://127.0.0.1:9/v1/messages failed: ConnectError: [Errno 111] Connection refused",
    ),
    ("model_network", "connection to http://localhost:9/v1/messages failed: Connection refused"),
    (
        "stream_connection_error",
        "error sending request for url (http://127.0.0.1:9/v1/responses): Connection refused",
    ),
    # typed permanent codes, whatever the message says
    ("authentication_failed", "status 503"),
    ("model_auth", ""),
    ("invalid_request", "overloaded"),
    ("budget_exceeded", ""),
    # a typed transient code whose message is an auth failure
    ("stream_connection_error", "unexpected status 401 Unauthorized"),
    # an input too long for the model, whatever code it comes with: no retry can fix it
    # (Codex's, through a stream error and before any output)
    ("stream_connection_error", "Input exceeds the maximum length of 1048576 characters."),
    ("server_error", "input exceeds the maximum length"),
    ("runtime_exited", "codex exited with status 1: input exceeds the maximum length"),
    ("runtime_reported", "This model's maximum context length is 200000 tokens"),
    # a resumed session the runtime never saved (Claude Code killed before its transcript)
    (
        "runtime_start_failed",
        "claude exited during initialize: No conversation found with session ID: a9ba",
    ),
    # unknown: permanent
    ("runtime_reported", "something odd happened"),
    (None, ""),
]

TRANSIENT = [
    ("rate_limited", ""),
    ("model_rate_limit", "HTTP 429: slow down"),
    ("overloaded", ""),
    ("server_error", ""),
    (
        "model_network",
        "connection to https://api.anthropic.com/v1/messages failed: Connection refused",
    ),
    ("stream_connection_error", "stream disconnected before completion"),
    ("runtime_reported", "exceeded retry limit, last status: 429 Too Many Requests"),
    ("runtime_reported", "unexpected status 503 Service Unavailable at http://127.0.0.1:5003/v1"),
    ("api_error", 'API Error: 529 {"type":"overloaded_error"}'),
    ("runtime_reported", "HTTP 500 Internal Server Error"),
    ("runtime_reported", "Request timed out."),
]


@pytest.mark.parametrize(("code", "message"), PERMANENT)
def test_permanent(code: str | None, message: str) -> None:
    assert classify_failure(code, message) == "permanent"
    assert classify_outcome(failed(code, message)) == "permanent"


@pytest.mark.parametrize(("code", "message"), TRANSIENT)
def test_transient(code: str | None, message: str) -> None:
    assert classify_failure(code, message) == "transient"
    assert classify_outcome(failed(code, message)) == "transient"


def test_output_already_produced_is_permanent() -> None:
    assert classify_outcome(failed("rate_limited", produced_output=True)) == "permanent"


def test_before_output_codes() -> None:
    assert classify_outcome(failed("runtime_exited", "exit 1")) == "transient"
    assert classify_outcome(failed("runtime_exited", "exit 1", produced_output=True)) == "permanent"
    assert classify_outcome(failed("runtime_exited", "401 Unauthorized")) == "permanent"


def test_success_and_abort_are_not_failures() -> None:
    ok = RunOutcome(
        run_key="k", run_id="r", reason="success", summary="", usage=None, cost_usd=None
    )
    assert classify_outcome(ok) is None


def test_exceptions() -> None:
    assert classify_exception(ConfigError("bad")) == "permanent"
    assert classify_exception(RuntimeStartError("spawn failed")) == "transient"
    assert classify_exception(RuntimeStartError("HTTP 401 Unauthorized")) == "permanent"
    gone = "claude exited during initialize: No conversation found with session ID: a9ba263b"
    assert classify_exception(RuntimeStartError(gone)) == "permanent"  # was retried 4×
    assert classify_exception(RuntimeReportedError("x", code="rate_limited")) == "transient"
    assert classify_exception(RuntimeReportedError("status 403", code="api_error")) == "permanent"
    assert classify_exception(ValueError("?")) == "permanent"


def test_message_scan_is_bounded() -> None:
    assert classify_failure("runtime_reported", "x" * 10_000 + " status 503") == "permanent"


async def test_auth_failure_is_never_retried(autojump_clock: trio.abc.Clock) -> None:
    calls: list[int] = []
    notices: list[RetryNotice] = []

    async def attempt(n: int) -> RunOutcome:
        calls.append(n)
        await trio.lowlevel.checkpoint()
        return failed(
            "runtime_reported", "unexpected status 401 Unauthorized at http://127.0.0.1:5003/v1"
        )

    supervisor = Supervisor(RestartPolicy(max_restarts=3), on_retry=notices.append)
    outcome = await supervisor.supervise(attempt)
    assert outcome.reason == "error"
    assert calls == [0]
    assert notices == []


async def test_retries_are_announced(autojump_clock: trio.abc.Clock) -> None:
    notices: list[str] = []

    async def attempt(n: int) -> RunOutcome:
        await trio.lowlevel.checkpoint()
        return failed("rate_limited", "HTTP 429: slow down, sk-abcdefghijklmnop")

    async def on_retry(notice: RetryNotice) -> None:
        await trio.lowlevel.checkpoint()
        notices.append(str(notice))

    supervisor = Supervisor(RestartPolicy(max_restarts=3, initial_s=1.0), on_retry=on_retry)
    start = trio.current_time()
    await supervisor.supervise(attempt)
    assert supervisor.attempts == 4
    assert notices == [
        f"attempt {n}/4: rate_limited: HTTP 429: slow down, [REDACTED]" for n in (2, 3, 4)
    ]
    assert trio.current_time() - start == pytest.approx(1 + 2 + 4)
