"""Governance: budgets that stop runaway runs, price estimates, circuit breakers, rate-limit
parking (one place).

See :mod:`.budget`, :mod:`.prices`, :mod:`.breaker` and :class:`Governance`, which a
:class:`~orchestrator.engine.runner.Runner` applies to every task it runs.
"""

from __future__ import annotations

from orchestrator.engine.governance.breaker import BreakerBoard as BreakerBoard
from orchestrator.engine.governance.breaker import BreakerPolicy as BreakerPolicy
from orchestrator.engine.governance.breaker import BreakerState as BreakerState
from orchestrator.engine.governance.breaker import breaker_key as breaker_key
from orchestrator.engine.governance.budget import BUDGET_EXCEEDED as BUDGET_EXCEEDED
from orchestrator.engine.governance.budget import COST_UNKNOWN as COST_UNKNOWN
from orchestrator.engine.governance.budget import Budget as Budget
from orchestrator.engine.governance.budget import RunGuard as RunGuard
from orchestrator.engine.governance.budget import SpendLedger as SpendLedger
from orchestrator.engine.governance.budget import Trip as Trip
from orchestrator.engine.governance.policy import Governance as Governance
from orchestrator.engine.governance.prices import SHIPPED_PRICES as SHIPPED_PRICES
from orchestrator.engine.governance.prices import SHIPPED_PRICES_DATE as SHIPPED_PRICES_DATE
from orchestrator.engine.governance.prices import PriceBook as PriceBook
from orchestrator.engine.governance.prices import TokenPrice as TokenPrice
from orchestrator.engine.governance.ratelimit import RATE_LIMIT_CODES as RATE_LIMIT_CODES
from orchestrator.engine.governance.ratelimit import ParkPolicy as ParkPolicy
from orchestrator.engine.governance.ratelimit import reset_from_text as reset_from_text
