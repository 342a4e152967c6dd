"""Shared helpers for the Claude Code adapter tests: the recorded transcripts."""

from __future__ import annotations

from typing import Any

from ..cli_harness import Recorded

RECORDED = Recorded("claude_code", "claude-code")
fixture_lines = RECORDED.lines
fixture_meta = RECORDED.meta


def live_messages(direction: str = "out") -> list[dict[str, Any]]:
    """The messages of the recorded long-lived session in one direction."""
    return RECORDED.messages("live-session", direction)
