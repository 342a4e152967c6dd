"""Budgets: USD, tokens and wall time, per task and per host, checked on every ``cost`` event.

* A :class:`Budget` is the limits; a :class:`SpendLedger` is what was spent against one (a
  task's ledger is shared by every run of the task: retries and rotation successors; a host's by
  every task it runs).
* A :class:`RunGuard` watches one run's events (the run's actor hands it each batch): it adds
  each ``cost`` event's increase to the ledgers and, when one of them crosses its limit, *trips*:
  the batch is cut right after that event, the actor aborts the run and ends it with
  ``error{code: budget_exceeded}`` + ``done{error}``. Nothing the runtime sends after the
  crossing event reaches the log.
* Spend is the runtime's own USD when it reports one; else, when estimates are allowed, the
  :class:`~orchestrator.engine.governance.prices.PriceBook` estimate, and the ``cost`` event is
  re-issued with it and ``estimated: true``. Unknown stays unknown: a USD budget over a run
  whose spend cannot be known ends the run (``cost_unknown``) rather than run unchecked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, TypeAlias, cast

import attrs

from orchestrator.core.errors import ConfigError
from orchestrator.core.events import (
    Cost,
    ErrorEvent,
    RuntimeEvent,
    Status,
    ToolCall,
    ToolResult,
    now_ms,
)
from orchestrator.engine.governance.prices import PriceBook
from orchestrator.engine.governance.ratelimit import RATE_LIMIT_CODES, reset_from_text

__all__ = ["BUDGET_EXCEEDED", "COST_UNKNOWN", "Budget", "RunGuard", "SpendLedger", "Trip"]

BUDGET_EXCEEDED = "budget_exceeded"
"""The ``error.code`` of a run ended by a budget."""
COST_UNKNOWN = "cost_unknown"
"""The ``error.code`` of a run under a USD budget whose spend cannot be known."""

Scope: TypeAlias = Literal["task", "host"]


@attrs.frozen
class Budget:
    """Limits; ``None`` means no limit. ``wall_s`` bounds each run's wall time."""

    usd: float | None = None
    tokens: int | None = None
    wall_s: float | None = None

    def __attrs_post_init__(self) -> None:
        for name, value in (("usd", self.usd), ("tokens", self.tokens), ("wall", self.wall_s)):
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise ConfigError(f"budget {name} must be a positive number, not {value!r}")

    @property
    def is_set(self) -> bool:
        return self.usd is not None or self.tokens is not None or self.wall_s is not None

    def describe(self) -> str:
        parts: list[str] = []
        if self.usd is not None:
            parts.append(f"${self.usd:g}")
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        if self.wall_s is not None:
            parts.append(f"{self.wall_s:g}s per run")
        return ", ".join(parts) or "none"


@attrs.define(eq=False)
class SpendLedger:
    """What was spent against ``budget`` (cumulative over every run that shares it)."""

    budget: Budget
    scope: Scope = "task"
    usd: float = 0.0
    tokens: int = 0
    usd_estimated: bool = False

    def crossed(self) -> str | None:
        """Why the ledger is over its budget (``None`` while within it)."""
        budget = self.budget
        if budget.usd is not None and self.usd > budget.usd:
            est = " (estimated)" if self.usd_estimated else ""
            return f"{self.scope} spent ${self.usd:.4f}{est} of its ${budget.usd:g} budget"
        if budget.tokens is not None and self.tokens > budget.tokens:
            return f"{self.scope} used {self.tokens:,} tokens of its {budget.tokens:,}-token budget"
        return None

    def absorb(self, usd: float | None, tokens: int, *, estimated: bool = False) -> None:
        """Count spend that was checked elsewhere (a task that ran on another node)."""
        self.tokens += tokens
        if usd is not None:
            self.usd += usd
            self.usd_estimated = self.usd_estimated or estimated

    def exhausted(self) -> str | None:
        """Why no new run may start on this ledger (spent up to or past a limit)."""
        budget = self.budget
        if budget.usd is not None and self.usd >= budget.usd:
            return f"{self.scope} budget of ${budget.usd:g} is spent (${self.usd:.4f})"
        if budget.tokens is not None and self.tokens >= budget.tokens:
            return (
                f"{self.scope} budget of {budget.tokens:,} tokens is spent ({self.tokens:,} used)"
            )
        return None


@attrs.frozen
class Trip:
    """Why a guard stopped its run (``resets_at_ms``: a rate limit that says when it resets)."""

    code: str
    message: str
    resets_at_ms: int | None = None


@attrs.define(eq=False)
class RunGuard:
    """Checks one run's ``cost`` events against its ledgers (see the module docstring)."""

    ledgers: tuple[SpendLedger, ...]
    prices: PriceBook | None = None
    """Estimate USD for ``cost`` events without it (``None``: estimates are not allowed)."""
    reports_usd: bool = False
    """The runtime reports USD itself (perhaps only at the end): a ``cost`` without USD is
    not a reason to stop."""
    wall_s: float | None = None
    clock: Callable[[], int] = now_ms
    tripped: Trip | None = None
    last_seq: int = 0
    """The ``seq`` of the last event let through."""
    open_tool_calls: dict[str, str] = attrs.field(factory=dict[str, str])
    _usd: float = 0.0
    _tokens: int = 0
    _reset_hint: int | None = None
    _usd_budget: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self._usd_budget = any(ledger.budget.usd is not None for ledger in self.ledgers)

    def trip(self, code: str, message: str, resets_at_ms: int | None = None) -> None:
        if self.tripped is None:
            self.tripped = Trip(code, message, resets_at_ms)

    def trip_wall(self) -> None:
        self.trip(BUDGET_EXCEEDED, f"run exceeded its wall-time budget of {self.wall_s:g}s")

    def screen(self, batch: list[RuntimeEvent]) -> list[RuntimeEvent]:
        """``batch`` up to and including the event that trips the guard (all of it while within
        budget); ``cost`` events may come back re-issued with an estimate."""
        if self.tripped is not None:
            return []
        for index, event in enumerate(batch):
            # dispatch on the exact type: isinstance on pydantic models costs ~0.9 µs each
            kind = type(event)
            if kind is Cost:
                event = self._cost(cast(Cost, event))
                batch[index] = event
            elif kind is ToolCall:
                call = cast(ToolCall, event)
                self.open_tool_calls[call.tool_call_id] = call.name
            elif kind is ToolResult:
                self.open_tool_calls.pop(cast(ToolResult, event).tool_call_id, None)
            elif kind is Status:
                status = cast(Status, event)
                if status.resets_at is not None:  # the runtime's own structured reset
                    self._reset_hint = status.resets_at
                elif status.detail and "rate" in status.detail:
                    self._reset_hint = reset_from_text(status.detail, self.clock())
            elif kind is ErrorEvent:
                error = cast(ErrorEvent, event)
                if error.fatal and error.code in RATE_LIMIT_CODES:
                    resets = reset_from_text(error.message, self.clock()) or self._reset_hint
                    if resets is not None:  # the actor ends the run: status{rate_limited}, error
                        self.trip(error.code or "rate_limited", error.message, resets)
                        return batch[:index]
            self.last_seq = event.seq
            if self.tripped is not None:
                return batch[: index + 1]
        return batch

    def _cost(self, event: Cost) -> Cost:
        usage = event.usage
        tokens = usage.input_tokens + usage.output_tokens
        usd = event.cost_usd
        estimated = event.estimated
        if usd is None and self.prices is not None:
            guess = self.prices.estimate(event.model, usage)
            if guess is not None:
                usd, estimated = guess, True
                event = event.model_copy(update={"cost_usd": guess, "estimated": True})
        d_tokens = tokens - self._tokens
        self._tokens = tokens
        d_usd = 0.0
        if usd is not None:
            d_usd = usd - self._usd
            self._usd = usd
        for ledger in self.ledgers:
            ledger.tokens += d_tokens
            if usd is not None:
                ledger.usd += d_usd
                ledger.usd_estimated = ledger.usd_estimated or estimated
        if usd is None and self._usd_budget and not self.reports_usd:
            model = event.model or "the model"
            self.trip(
                COST_UNKNOWN,
                f"a USD budget is set but the spend of {model} cannot be known (no price for it:"
                f" add one under [runtimes.<id>.prices] in the config, or use a token budget)",
            )
            return event
        for ledger in self.ledgers:
            why = ledger.crossed()
            if why is not None:
                self.trip(BUDGET_EXCEEDED, f"budget exceeded: {why}")
                break
        return event
