"""Shared helpers for the ACP and Hermes adapter tests: the recorded Hermes conversations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters._runtimes import PINNED_VERSIONS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "hermes" / PINNED_VERSIONS["hermes"]


def conversation(name: str) -> list[tuple[str, dict[str, Any]]]:
    """A recorded ACP conversation: ``(direction, message)`` pairs, ``out`` = what Hermes wrote."""
    pairs: list[tuple[str, dict[str, Any]]] = []
    for line in (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            pairs.append((entry["dir"], entry["msg"]))
    return pairs


def prompt_updates(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The updates Hermes sent after the prompt request, and the prompt's response."""
    pairs = conversation(name)
    prompt_id = next(m["id"] for d, m in pairs if d == "in" and m.get("method") == "session/prompt")
    start = next(
        i for i, (d, m) in enumerate(pairs) if d == "in" and m.get("method") == "session/prompt"
    )
    updates: list[dict[str, Any]] = []
    for direction, message in pairs[start + 1 :]:
        if direction == "out" and message.get("id") == prompt_id and "method" not in message:
            return updates, message
        if direction == "out" and message.get("method") == "session/update":
            updates.append(message["params"]["update"])
    raise AssertionError(f"{name}: no prompt response")
