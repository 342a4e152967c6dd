"""Shared helpers for the Codex adapter tests: the recorded transcripts."""

from __future__ import annotations

from typing import Any

from ..cli_harness import Recorded

RECORDED = Recorded("codex", "codex")
fixture_lines = RECORDED.lines
fixture_meta = RECORDED.meta


def app_messages(name: str, direction: str = "out") -> list[dict[str, Any]]:
    """The messages of a recorded app-server conversation in one direction."""
    return RECORDED.messages(f"app-{name}", direction)
