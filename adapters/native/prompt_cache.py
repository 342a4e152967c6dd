"""The first user message of a run, cut at its prompt-cache tiers.

The runner assembles a task's prompt with :func:`tiers.assemble_tiers` (stable → context →
volatile) and passes the tiers' UTF-8 end offsets in ``StartOpts.cache_breakpoints``. The native
runtime sends that prompt as one text part per tier, each tier but the last marked as a cache
breakpoint, so on Anthropic Messages the ``cache_control`` markers sit exactly at the tiers'
ends: the stable tier is a cached prefix every turn of the session reuses (and a rotation
successor too: its stable tier is the same), the context tier the next one. Providers that cache
by prefix on their own (OpenAI) receive the same text.
"""

from __future__ import annotations

from orchestrator.core.adapter import StartOpts

from .messages import ContentPart

__all__ = ["tiered_request"]


def tiered_request(opts: StartOpts) -> str | list[ContentPart]:
    """``opts.full_message()``, as parts cut at ``opts.cache_breakpoints`` when there are any.

    An offset outside the message, or one that does not fall between two characters, is
    ignored (the message is then cut at the others, or sent whole); empty and whitespace-only
    pieces are never marked (Anthropic refuses a cache marker on them)."""
    message = opts.full_message()
    if not opts.cache_breakpoints:
        return message
    shift = len(message.encode("utf-8", "surrogatepass")) - len(
        opts.message.encode("utf-8", "surrogatepass")
    )  # a context block goes before the message
    raw = message.encode("utf-8", "surrogatepass")
    parts: list[ContentPart] = []
    start = 0
    for offset in sorted({shift + o for o in opts.cache_breakpoints}):
        if offset <= start or offset > len(raw):
            continue
        try:
            piece = raw[start:offset].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            continue  # not a character boundary: not a tier's end
        parts.append(ContentPart(type="text", text=piece, cache=True if piece.strip() else None))
        start = offset
    if not parts:
        return message
    rest = raw[start:].decode("utf-8", "surrogatepass")
    if rest:
        parts.append(ContentPart(type="text", text=rest))
    return parts
