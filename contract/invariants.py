"""The invariants every event stream keeps, as named checks.

Each check raises :class:`ContractViolation` (an ``AssertionError``) whose ``check`` names the
rule, so a failing adapter learns exactly which rule it broke, and the suite's own tests can
assert which check caught a deliberately broken adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from orchestrator.core.events import Cost, Done, ErrorEvent, RuntimeEvent, ToolCall, ToolResult

__all__ = ["ContractViolation", "check_stream", "violation"]


class ContractViolation(AssertionError):
    """An adapter broke a named rule of the contract."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"contract[{check}]: {detail}")
        self.check = check
        self.detail = detail

    def __reduce__(self) -> tuple[type[ContractViolation], tuple[str, str]]:
        return (type(self), (self.check, self.detail))


def violation(check: str, detail: str) -> ContractViolation:
    return ContractViolation(check, detail)


_SECONDS_FROM: Final = 10**9
_MILLIS_FROM: Final = 10**12
_MICROS_FROM: Final = 10**14


def _check_ts(events: Sequence[RuntimeEvent]) -> None:
    last = None
    for event in events:
        ts = event.ts
        if _SECONDS_FROM <= ts < _MILLIS_FROM:
            raise violation(
                "ts-epoch-ms", f"ts {ts} at seq {event.seq} looks like epoch seconds, not ms"
            )
        if ts >= _MICROS_FROM:
            raise violation(
                "ts-epoch-ms", f"ts {ts} at seq {event.seq} looks like epoch µs or ns, not ms"
            )
        if last is not None and ts < last:
            raise violation("ts-epoch-ms", f"ts went back at seq {event.seq}: {last} → {ts}")
        last = ts


def _brief(events: Sequence[RuntimeEvent]) -> str:
    return ", ".join(f"{e.seq}:{e.kind}" for e in events[:40])


def check_stream(events: Sequence[RuntimeEvent], *, expect_done: bool = True) -> None:
    """Check one stream's events against every stream-level invariant.

    * ``seq-gapless`` — seq is 1, 2, 3, … with no gap and no repeat;
    * ``single-done`` / ``done-last`` — at most one ``done`` and nothing after it;
    * ``ends-in-done`` — a finished stream's last event is ``done`` (when ``expect_done``);
    * ``run-id-bound`` — every event carries a non-empty run id, the same on all of them;
    * ``tool-call-closed`` — every ``tool-call`` id gets a ``tool-result`` with the same id
      before ``done``; no result without a call;
    * ``cost-cumulative`` — usage and USD on ``cost`` events never decrease;
    * ``cost-usd-unknown`` — USD is a non-negative number or None;
    * ``error-then-done`` — a fatal ``error`` is followed by ``done{error}``; ``done{error}`` is
      preceded by a fatal ``error``;
    * ``ts-epoch-ms`` — ``ts`` never decreases within a stream and is epoch *milliseconds*: a value
      that reads as seconds (``1e9 <= ts < 1e12``) or as micro- or nanoseconds (``ts >= 1e14``)
      is refused (small values from an injected test clock pass).
    """
    for i, event in enumerate(events, start=1):
        if event.seq != i:
            raise violation("seq-gapless", f"event #{i} has seq {event.seq}: [{_brief(events)}]")
    _check_ts(events)
    done_at = [i for i, e in enumerate(events) if isinstance(e, Done)]
    if len(done_at) > 1:
        raise violation("single-done", f"{len(done_at)} done events: [{_brief(events)}]")
    if done_at and done_at[0] != len(events) - 1:
        raise violation("done-last", f"events after done: [{_brief(events)}]")
    if expect_done and not done_at:
        raise violation("ends-in-done", f"stream ended without done: [{_brief(events)}]")
    run_ids = {e.run_id for e in events}
    if "" in run_ids:
        raise violation("run-id-bound", "an event carries an empty run id")
    if len(run_ids) > 1:
        raise violation("run-id-bound", f"run id changed within one run: {sorted(run_ids)}")
    open_calls: dict[str, str] = {}
    for event in events:
        if isinstance(event, ToolCall):
            if not event.partial:
                open_calls[event.tool_call_id] = event.name
        elif isinstance(event, ToolResult):
            if event.tool_call_id not in open_calls:
                raise violation(
                    "tool-call-closed", f"tool-result {event.tool_call_id!r} has no tool-call"
                )
            del open_calls[event.tool_call_id]
    if done_at and open_calls:
        raise violation("tool-call-closed", f"tool calls never closed: {sorted(open_calls)}")
    last_in = last_out = 0
    last_usd: float | None = None
    for event in events:
        if not isinstance(event, Cost):
            continue
        usage = event.usage
        if usage.input_tokens < last_in or usage.output_tokens < last_out:
            raise violation(
                "cost-cumulative",
                f"usage decreased at seq {event.seq}: in {last_in}→{usage.input_tokens}, "
                f"out {last_out}→{usage.output_tokens}",
            )
        last_in, last_out = usage.input_tokens, usage.output_tokens
        if event.cost_usd is not None:
            if event.cost_usd < 0:
                raise violation("cost-usd-unknown", f"negative USD at seq {event.seq}")
            if last_usd is not None and event.cost_usd < last_usd:
                raise violation("cost-cumulative", f"USD decreased at seq {event.seq}")
            last_usd = event.cost_usd
    fatal_errors = [i for i, e in enumerate(events) if isinstance(e, ErrorEvent) and e.fatal]
    done = events[done_at[0]] if done_at else None
    if (
        fatal_errors
        and done is not None
        and not (isinstance(done, Done) and done.reason == "error")
    ):
        raise violation("error-then-done", "a fatal error was not followed by done{error}")
    if isinstance(done, Done) and done.reason == "error" and not fatal_errors:
        raise violation("error-then-done", "done{error} without a preceding fatal error event")
