"""Governance: budgets that stop runaway runs, price estimates, circuit breakers, rate-limit
parking (one place).

See :mod:`.budget`, :mod:`.prices`, :mod:`.breaker` and :class:`Governance`, which a
:class:`~orchestrator.runner.Runner` applies to every task it runs.
"""

from __future__ import annotations

from .breaker import BreakerBoard as BreakerBoard
from .breaker import BreakerPolicy as BreakerPolicy
from .breaker import BreakerState as BreakerState
from .breaker import breaker_key as breaker_key
from .budget import BUDGET_EXCEEDED as BUDGET_EXCEEDED
from .budget import COST_UNKNOWN as COST_UNKNOWN
from .budget import Budget as Budget
from .budget import RunGuard as RunGuard
from .budget import SpendLedger as SpendLedger
from .budget import Trip as Trip
from .policy import Governance as Governance
from .prices import SHIPPED_PRICES as SHIPPED_PRICES
from .prices import SHIPPED_PRICES_DATE as SHIPPED_PRICES_DATE
from .prices import PriceBook as PriceBook
from .prices import TokenPrice as TokenPrice
from .ratelimit import RATE_LIMIT_CODES as RATE_LIMIT_CODES
from .ratelimit import ParkPolicy as ParkPolicy
from .ratelimit import reset_from_text as reset_from_text

__all__ = [
    "BUDGET_EXCEEDED",
    "COST_UNKNOWN",
    "RATE_LIMIT_CODES",
    "SHIPPED_PRICES",
    "SHIPPED_PRICES_DATE",
    "BreakerBoard",
    "BreakerPolicy",
    "BreakerState",
    "Budget",
    "Governance",
    "ParkPolicy",
    "PriceBook",
    "RunGuard",
    "SpendLedger",
    "TokenPrice",
    "Trip",
    "breaker_key",
    "reset_from_text",
]
