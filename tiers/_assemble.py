"""Prompt tiers: stable → context → volatile, with UTF-8 cache breakpoints.

Byte-exact with the original executor (docs/architecture.md, Lineage): tiers are joined with ``"\\n\\n"``; an empty *context* or *volatile*
tier is skipped (empty means the empty string; whitespace is content); the *stable* tier is never
skipped, so an empty stable tier with a context gives a prefix starting with ``"\\n\\n"``.
Breakpoints mark the end of each tier (before the separator) as UTF-8 byte offsets into the prompt.

Lone surrogates: Python strings may hold them (JavaScript's UTF-8 encoder replaces each with
U+FFFD, 3 bytes). We count them as 3 bytes too (``surrogatepass`` encodes one surrogate in exactly
3 bytes), so offsets match the original executor for every input, and :func:`utf8_len` never raises. The
prompt text itself is returned unchanged; replacing the surrogate is the transport's business.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeVar

import attrs

__all__ = [
    "SEPARATOR",
    "AssembledPrompt",
    "CacheBreakpoint",
    "PromptTiers",
    "assemble_tiers",
    "date_stamp",
    "sort_tool_defs",
    "utf8_len",
]

SEPARATOR = "\n\n"


@attrs.frozen
class PromptTiers:
    """stable: identity, tool guidance, skills index (frozen per session);
    context: caller/system message, team manifest, project files, handoff notes;
    volatile: memory snapshot, last handoff summary, a date-only stamp."""

    stable: str = ""
    context: str = ""
    volatile: str = ""


@attrs.frozen
class CacheBreakpoint:
    offset: int
    """UTF-8 byte offset into the prompt where the tier ends."""
    label: Literal["stable", "context"]


@attrs.frozen
class AssembledPrompt:
    prompt: str
    stable_prefix: str
    stable_prefix_bytes: int
    cache_breakpoints: tuple[CacheBreakpoint, ...]


def utf8_len(text: str) -> int:
    """Length of ``text`` in UTF-8 bytes; a lone surrogate counts 3 bytes (as U+FFFD would)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def assemble_tiers(tiers: PromptTiers) -> AssembledPrompt:
    """Join the tiers and compute the cache breakpoints (see the module docstring)."""
    stable_prefix = tiers.stable + SEPARATOR + tiers.context if tiers.context else tiers.stable
    prompt = stable_prefix + SEPARATOR + tiers.volatile if tiers.volatile else stable_prefix
    prefix_bytes = utf8_len(stable_prefix)
    breakpoints = [CacheBreakpoint(offset=utf8_len(tiers.stable), label="stable")]
    if tiers.context:
        breakpoints.append(CacheBreakpoint(offset=prefix_bytes, label="context"))
    return AssembledPrompt(
        prompt=prompt,
        stable_prefix=stable_prefix,
        stable_prefix_bytes=prefix_bytes,
        cache_breakpoints=tuple(breakpoints),
    )


def date_stamp(moment: _dt.datetime | _dt.date) -> str:
    """``YYYY-MM-DD`` from the UTC date (a naive datetime is taken as UTC). Never finer.

    A finer timestamp would bust the prompt cache at every rebuild; wall-clock time is a tool.
    The year is not padded, like the original executor.
    """
    if isinstance(moment, _dt.datetime):
        if moment.tzinfo is not None:
            moment = moment.astimezone(_dt.UTC)
        day = moment.date()
    else:
        day = moment
    return f"{day.year}-{day.month:02d}-{day.day:02d}"


ToolDefT = TypeVar("ToolDefT", bound=Mapping[str, Any])


def sort_tool_defs(defs: Iterable[ToolDefT]) -> list[ToolDefT]:
    """A new list sorted by ``name`` (plain code-point order, stable, non-mutating).

    The reference compares UTF-16 code units; code points differ from it only for names with
    astral characters, which no real tool name has.
    """
    return sorted(defs, key=lambda d: str(d["name"]))
