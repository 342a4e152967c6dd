"""A run that never reached its runtime, written like any run.

Four things end a task before its runtime runs: the runtime could not start (binary missing, a
budget spent, a breaker open, …), the workspace's setup script failed, the person aborted while
the runtime was starting, or a dependency of a chained task did not succeed. Each is still one
logged run with exactly one ``done``, so the views, ``replay``, the board and the comparison
table see it like any other: its events go through the sink (the log first), and its runs row
gets a status and an outcome. :func:`record_unstarted` is the one place that writes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

import trio

from orchestrator.core.events import EventFactory, now_ms
from orchestrator.engine.actor import EventSink, RunOutcome
from orchestrator.engine.eventlog import RunRecorder


def new_run_key(session_key: str) -> str:
    """A fresh run key in ``session_key``."""
    return f"{session_key}:run-{uuid.uuid4().hex[:8]}"


async def record_unstarted(
    log: RunRecorder | None,
    sink: EventSink,
    *,
    runtime_id: str,
    session_key: str,
    summary: str,
    code: str | None,
    status: str | None = None,
    title: str | None = None,
    outcome_fields: Mapping[str, Any] | None = None,
    run_key: str | None = None,
    started: bool = False,
    make: EventFactory | None = None,
    prior_events: int = 0,
    clock: Callable[[], int] = now_ms,
) -> RunOutcome:
    """Log a run that never reached its runtime and return its outcome.

    ``code``: the ``error.code`` of a failure (``error{code}`` + ``done{error}``); ``None``: an
    abort (``done{aborted}``). ``status``: the runs row's status (default: the ``done`` reason;
    a skipped chain step says ``skipped``). ``run_key``: the run's key (default: a new one in
    ``session_key``). ``started``/``make``/``prior_events``: the run has already started in the
    log and streamed events (the setup script's output): it is finished with the same event
    factory, so sequence numbers go on.
    """
    reason = "aborted" if code is None else "error"
    run_key = run_key or new_run_key(session_key)
    if make is None:
        make = EventFactory(run_id="", session_id=session_key, clock=clock)
    events = make.finish("aborted", summary) if code is None else make.fail(summary, code=code)
    with trio.CancelScope(shield=True):  # an abort must not lose the record of its own run
        if not started and log is not None:
            await log.start_run(run_key, runtime_id=runtime_id, session_key=session_key)
        await sink.deliver(run_key, events)
        if log is not None:
            await log.finish_run(
                run_key,
                status=status or reason,
                outcome={
                    "reason": status or reason,
                    "summary": summary,
                    **({"errorCode": code} if code is not None else {}),
                    "runId": None,
                    "title": title,
                    **(outcome_fields or {}),
                },
            )
    return RunOutcome(
        run_key=run_key,
        run_id=None,
        reason=reason,
        summary=summary,
        usage=None,
        cost_usd=None,
        error_code=code,
        error_message=summary if code is not None else None,
        events=prior_events + len(events),
    )
