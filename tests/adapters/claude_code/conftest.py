"""Shared helpers for the Claude Code adapter tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters._runtimes import PINNED_VERSIONS

FIXTURES = (
    Path(__file__).resolve().parents[2]
    / "fixtures"
    / "claude_code"
    / PINNED_VERSIONS["claude-code"]
)


def fixture_lines(name: str) -> list[bytes]:
    """The stdout lines of a recorded one-shot run."""
    return [line for line in (FIXTURES / f"{name}.jsonl").read_bytes().split(b"\n") if line]


def fixture_meta(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.meta.json").read_text())


def live_messages(direction: str = "out") -> list[dict[str, Any]]:
    """The messages of the recorded long-lived session in one direction."""
    out: list[dict[str, Any]] = []
    for line in (FIXTURES / "live-session.jsonl").read_text().splitlines():
        if line.strip():
            entry = json.loads(line)
            if entry["dir"] == direction:
                out.append(entry["msg"])
    return out
