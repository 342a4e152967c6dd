"""Estimated spend for runtimes that report tokens but no USD.

A :class:`PriceBook` looks a model up in the user's prices first (``[runtimes.<id>.prices]`` in
the configuration), then in :data:`SHIPPED_PRICES`, list prices as published on
:data:`SHIPPED_PRICES_DATE`. Lookup is exact after dropping a ``provider:`` / ``provider/`` prefix
and a trailing ``-YYYYMMDD`` (no fuzzy matching: a wrong price is worse than none). A model in
neither table has an unknown price: :meth:`PriceBook.estimate` returns ``None``, never 0.

An estimate is only ever shown marked ``estimated``: it is list price times the tokens the
runtime reported, not what the provider bills (discounts, batch pricing and tiers are ignored).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from typing import Final

import attrs

from orchestrator.core.events import Usage

__all__ = ["SHIPPED_PRICES", "SHIPPED_PRICES_DATE", "PriceBook", "TokenPrice"]

_DATE_SUFFIX = re.compile(r"-\d{8}$")


@attrs.frozen
class TokenPrice:
    """USD per million tokens. Cache reads/writes default to the input price (no discount is
    assumed unless the table says so: an estimate errs high, never low)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


SHIPPED_PRICES_DATE: Final = _dt.date(2025, 11, 1)
"""When the shipped list prices were taken (they age: put current prices in your config)."""

SHIPPED_PRICES: Final[Mapping[str, TokenPrice]] = {
    # Anthropic (cache reads 10%, 5-minute cache writes 125% of input)
    "claude-haiku-4-5": TokenPrice(1.0, 5.0, cache_read=0.1, cache_write=1.25),
    "claude-sonnet-4-5": TokenPrice(3.0, 15.0, cache_read=0.3, cache_write=3.75),
    "claude-sonnet-4-6": TokenPrice(3.0, 15.0, cache_read=0.3, cache_write=3.75),
    "claude-opus-4-5": TokenPrice(5.0, 25.0, cache_read=0.5, cache_write=6.25),
    "claude-sonnet-4": TokenPrice(3.0, 15.0, cache_read=0.3, cache_write=3.75),
    "claude-opus-4-1": TokenPrice(15.0, 75.0, cache_read=1.5, cache_write=18.75),
    # OpenAI
    "gpt-5": TokenPrice(1.25, 10.0, cache_read=0.125),
    "gpt-5-codex": TokenPrice(1.25, 10.0, cache_read=0.125),
    "gpt-5-mini": TokenPrice(0.25, 2.0, cache_read=0.025),
    "gpt-5-nano": TokenPrice(0.05, 0.4, cache_read=0.005),
    "gpt-4.1": TokenPrice(2.0, 8.0, cache_read=0.5),
    "gpt-4.1-mini": TokenPrice(0.4, 1.6, cache_read=0.1),
    "gpt-4o": TokenPrice(2.5, 10.0, cache_read=1.25),
    "gpt-4o-mini": TokenPrice(0.15, 0.6, cache_read=0.075),
}
"""List prices (USD per million tokens) as of :data:`SHIPPED_PRICES_DATE`."""


def _key(model: str) -> str:
    for sep in (":", "/"):
        if sep in model:
            model = model.rsplit(sep, 1)[1]
    return _DATE_SUFFIX.sub("", model)


@attrs.frozen
class PriceBook:
    """The user's prices over the shipped ones (see the module docstring)."""

    user: Mapping[str, TokenPrice] = attrs.field(factory=dict[str, TokenPrice])
    shipped: Mapping[str, TokenPrice] = SHIPPED_PRICES

    def lookup(self, model: str | None) -> tuple[TokenPrice, str] | None:
        """``(price, source)`` for ``model`` (source: ``"config"`` or ``"shipped <date>"``)."""
        if not model:
            return None
        for name in dict.fromkeys((model, _DATE_SUFFIX.sub("", model), _key(model))):
            if name in self.user:
                return self.user[name], "config"
        for name in dict.fromkeys((model, _key(model))):
            if name in self.shipped:
                return self.shipped[name], f"shipped {SHIPPED_PRICES_DATE.isoformat()}"
        return None

    def estimate(self, model: str | None, usage: Usage) -> float | None:
        """List-price USD for ``usage`` on ``model``; ``None`` when the model is unpriced."""
        found = self.lookup(model)
        if found is None:
            return None
        price = found[0]
        cached = usage.cached_input_tokens or 0
        written = usage.cache_write_tokens or 0
        fresh = max(0, usage.input_tokens - cached - written)
        read_rate = price.input if price.cache_read is None else price.cache_read
        write_rate = price.input if price.cache_write is None else price.cache_write
        usd = (
            fresh * price.input
            + cached * read_rate
            + written * write_rate
            + usage.output_tokens * price.output
        ) / 1e6
        return round(usd, 9)
