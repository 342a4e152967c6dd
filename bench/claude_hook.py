"""Ours for path 1: one Claude Code stdout line → events through ``adapters.claude_code``.

Kept apart from :mod:`bench.p_decode` so that the adapter's API is touched in one place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .inputs import Session


def make_pass(
    normalize: Any, dialect: Any
) -> tuple[Callable[[list[Session]], Callable[[], None]] | None, str]:
    return None, "not built yet: adapters/claude_code has no per-line normalizer the bench knows"
