"""Prompt-prefix reuse, measured on what the server received: per request, how many leading
bytes of its prompt — in the order providers cache it: tools, system prompt, conversation
(:attr:`~.state.LoggedRequest.prompt`) — repeat the request before it, and how many of those a
prompt cache with the request's breakpoints (Anthropic ``cache_control``) would serve.

Byte shares stand in for token shares: the server counts about four bytes per token everywhere
(``count_tokens``), so a byte share is the share of input tokens under that estimate. The
sequence is the caller's: a conversation's requests in order, or a predecessor's requests
followed by its rotation successor's (the reuse *across* the rotation).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from orchestrator.model_server.state import LoggedRequest, common_prefix

__all__ = ["PrefixReuse", "prefix_reuse_report"]


@attrs.frozen
class PrefixReuse:
    """One request of a sequence, compared with the one before it."""

    index: int
    prompt_bytes: int
    reused_bytes: int
    """Leading bytes equal to the previous request's (0 for the first)."""
    cached_bytes: int
    """Of those, the bytes up to the last cache breakpoint inside them."""
    first_mark: int | None
    """Offset of this request's first cache breakpoint (the end of its first cached tier)."""

    @property
    def share(self) -> float:
        """Reused bytes / prompt bytes (≈ the share of input tokens that are a reused prefix)."""
        return self.reused_bytes / self.prompt_bytes if self.prompt_bytes else 0.0

    @property
    def cached_share(self) -> float:
        """Cache-served bytes / prompt bytes."""
        return self.cached_bytes / self.prompt_bytes if self.prompt_bytes else 0.0

    @property
    def first_tier_reused(self) -> bool:
        """The whole first cached tier (up to its breakpoint) repeats the previous request."""
        return self.first_mark is not None and self.reused_bytes >= self.first_mark


def prefix_reuse_report(requests: Sequence[LoggedRequest]) -> list[PrefixReuse]:
    """Each request against the one before it in ``requests`` (see the module docstring)."""
    report: list[PrefixReuse] = []
    previous: bytes | None = None
    for index, request in enumerate(requests):
        raw = request.prompt
        reused = common_prefix(previous, raw) if previous is not None else 0
        cached = max((m for m in request.cache_marks if m <= reused), default=0)
        first = request.cache_marks[0] if request.cache_marks else None
        report.append(PrefixReuse(index, len(raw), reused, cached, first))
        previous = raw
    return report
