"""USD prices per model (per million tokens), extendable by the user.

A price covers fresh input, output, and (when known) cache reads and writes; without explicit
cache prices, reads cost 10% and writes 125% of the input price (Anthropic's multipliers). A
model not in the table has an unknown price: :meth:`PriceTable.cost` returns ``None``, never 0.
Lookup is exact after stripping a trailing ``-YYYYMMDD`` (no fuzzy matching, like the original executor).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from .messages import TokenCounter

__all__ = ["DEFAULT_PRICES", "Price", "PriceTable"]

_DATE = re.compile(r"-\d{8}$")


@attrs.frozen
class Price:
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


DEFAULT_PRICES: Mapping[str, Price] = {
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-sonnet-4-20250514": Price(3.0, 15.0),
    "anthropic.claude-3-5-sonnet-20241022-v2:0": Price(3.0, 15.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "gpt-4o-mini": Price(0.15, 0.6, cache_read=0.075),
    "gpt-4o": Price(2.5, 10.0, cache_read=1.25),
    "gpt-4.1": Price(2.0, 8.0, cache_read=0.5),
    "gpt-4.1-mini": Price(0.4, 1.6, cache_read=0.1),
    "openai/gpt-4o-mini": Price(0.15, 0.6),
    "anthropic/claude-haiku-4.5": Price(1.0, 5.0),
    "anthropic/claude-sonnet-4": Price(3.0, 15.0),
}
"""Built-in prices (USD per million tokens)."""


@attrs.define
class PriceTable:
    prices: dict[str, Price] = attrs.field(factory=lambda: dict(DEFAULT_PRICES))

    def add(self, model: str, price: Price) -> PriceTable:
        self.prices[model] = price
        return self

    def lookup(self, model: str) -> Price | None:
        return self.prices.get(model) or self.prices.get(_DATE.sub("", model))

    def cost(self, model: str, tokens: TokenCounter) -> float | None:
        """USD for one call's tokens, rounded to 1e-9; ``None`` when the model is unpriced."""
        price = self.lookup(model)
        if price is None:
            return None
        read = tokens.cache_read_input_tokens
        write = tokens.cache_creation_input_tokens
        fresh = max(0, tokens.tokens_in - read - write)
        read_price = price.cache_read if price.cache_read is not None else price.input * 0.1
        write_price = price.cache_write if price.cache_write is not None else price.input * 1.25
        usd = (
            fresh * price.input
            + read * read_price
            + write * write_price
            + tokens.tokens_out * price.output
        ) / 1_000_000
        return round(usd, 9)
