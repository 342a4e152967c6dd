"""The governance a runner applies to its tasks: budgets, estimates, breakers (one object,
shared by every copy of a runner, so a host's ledger and breakers span all of its tasks)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from orchestrator.core.adapter import Capabilities
from orchestrator.core.config import Config
from orchestrator.core.errors import BudgetExceededError, ConfigError
from orchestrator.core.events import now_ms
from orchestrator.engine.governance.breaker import BreakerBoard, BreakerPolicy, breaker_key
from orchestrator.engine.governance.budget import Budget, RunGuard, SpendLedger
from orchestrator.engine.governance.prices import PriceBook, TokenPrice
from orchestrator.engine.governance.ratelimit import ParkPolicy

__all__ = ["BREAKERS_FILE", "Governance"]

BREAKERS_FILE = "breakers.json"
"""Where the CLI's breakers persist, in the state directory."""


@attrs.define(eq=False)
class Governance:
    """Budgets per task and per host, the price table for estimates, and the breakers.

    ``fallback`` maps a runtime id to the runtime a task goes to while the first one's breaker
    is open.
    """

    task_budget: Budget = attrs.field(factory=Budget)
    host_budget: Budget = attrs.field(factory=Budget)
    allow_estimates: bool = False
    """Estimate USD from list prices for runtimes that report only tokens (marked estimated)."""
    user_prices: Mapping[str, Mapping[str, TokenPrice]] = attrs.field(
        factory=dict[str, Mapping[str, TokenPrice]]
    )
    """runtime id → model → price, from the configuration (before the shipped table)."""
    breakers: BreakerBoard | None = None
    fallback: Mapping[str, str] = attrs.field(factory=dict[str, str])
    park: ParkPolicy = attrs.field(factory=ParkPolicy)
    """Rate limits that say when they reset park the task until then (see ``ratelimit``)."""
    stall_s: float | None = None
    """A run without progress this long ends ``error{stalled}`` (``run --max-stall``); None:
    the runner's default (:attr:`~orchestrator.engine.runner.Runner.stall_s`)."""
    host_ledger: SpendLedger = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.host_ledger = SpendLedger(self.host_budget, "host")

    @classmethod
    def from_config(
        cls,
        config: Config,
        *,
        usd: float | None = None,
        tokens: int | None = None,
        wall_s: float | None = None,
        allow_estimates: bool | None = None,
        state_dir: Path | None = None,
        stall_s: float | None = None,
    ) -> Governance:
        """From ``[budget]``, ``[breaker]`` and every runtime's ``prices``; the arguments (the
        command line's ``--budget-usd`` …) win over the file. With ``state_dir`` the breakers
        persist in ``<state_dir>/breakers.json``: they outlive the command, and every process
        sharing the directory shares them."""
        b = config.budget
        task = Budget(
            usd=usd if usd is not None else b.usd,
            tokens=tokens if tokens is not None else b.tokens,
            wall_s=wall_s if wall_s is not None else b.wall_s,
        )
        prices = {
            rid: {
                model: TokenPrice(p.input, p.output, cache_read=p.cached_input)
                for model, p in rc.prices.items()
            }
            for rid, rc in config.runtimes.items()
            if rc.prices
        }
        breaker = config.breaker
        return cls(
            task_budget=task,
            host_budget=Budget(usd=b.host_usd, tokens=b.host_tokens),
            allow_estimates=b.allow_estimates if allow_estimates is None else allow_estimates,
            user_prices=prices,
            breakers=(
                BreakerBoard(
                    BreakerPolicy(breaker.failures, breaker.cooldown_s),
                    path=state_dir / BREAKERS_FILE if state_dir is not None else None,
                )
                if breaker is not None
                else None
            ),
            fallback=breaker.fallback if breaker is not None else {},
            stall_s=stall_s,
        )

    def for_node(self) -> Governance:
        """What a node of a cluster enforces for one task (``RayHost`` ships it with the task):
        the same budgets, prices and parking; the host ledger starts at what the whole host
        spent so far (so a spent host budget refuses the task there, as here); breakers stay
        with the head."""
        node = attrs.evolve(self, breakers=None, fallback={})
        node.host_ledger.absorb(
            self.host_ledger.usd if self.host_ledger.usd else None,
            self.host_ledger.tokens,
            estimated=self.host_ledger.usd_estimated,
        )
        return node

    def prices_for(self, runtime_id: str) -> PriceBook:
        return PriceBook(user=self.user_prices.get(runtime_id, {}))

    def task_ledger(self) -> SpendLedger:
        return SpendLedger(self.task_budget, "task")

    def check_start(
        self, runtime_id: str, caps: Capabilities, model: str | None, task: SpendLedger
    ) -> None:
        """Refuse a run that cannot be governed, or whose budget is already spent.

        Raises:
            ConfigError: a USD budget over a runtime that reports no USD, estimates not allowed.
            BudgetExceededError: the task's or the host's budget is already spent.
        """
        usd_budget = self.task_budget.usd is not None or self.host_budget.usd is not None
        if usd_budget and not caps.reports_cost_usd and not self.allow_estimates:
            raise ConfigError(
                f"{runtime_id} does not report its cost in USD, so a USD budget cannot be "
                f"enforced on it; allow list-price estimates (--allow-estimates, or "
                f"allow_estimates = true under [budget]) or set a token budget (--budget-tokens)"
            )
        for ledger in (task, self.host_ledger):
            why = ledger.exhausted()
            if why is not None:
                raise BudgetExceededError(f"not starting {runtime_id}: {why}")

    def guard(
        self,
        runtime_id: str,
        caps: Capabilities,
        task: SpendLedger,
        clock: Callable[[], int] = now_ms,
    ) -> RunGuard:
        """The guard of one run: budgets, estimates, rate-limit resets."""
        ledgers = tuple(ledger for ledger in (task, self.host_ledger) if ledger.budget.is_set)
        return RunGuard(
            clock=clock,
            ledgers=ledgers,
            prices=self.prices_for(runtime_id) if self.allow_estimates else None,
            reports_usd=bool(caps.reports_cost_usd),
            wall_s=self.task_budget.wall_s,
        )

    def admit(self, runtime_id: str, model: str | None) -> str:
        """The runtime a task goes to: ``runtime_id``, or its fallback while its breaker is
        open (raises :class:`~orchestrator.core.errors.BreakerOpenError` when neither may start)."""
        board = self.breakers
        if board is None:
            return runtime_id
        try:
            board.admit(breaker_key(runtime_id, model))
        except Exception:
            fallback = self.fallback.get(runtime_id)
            if fallback is None or fallback == runtime_id:
                raise
            board.admit(breaker_key(fallback, model))
            return fallback
        return runtime_id

    def record(
        self, runtime_id: str, model: str | None, *, ok: bool, code: str | None, reason: str
    ) -> None:
        if self.breakers is not None:
            self.breakers.record(breaker_key(runtime_id, model), ok=ok, code=code, reason=reason)
