"""Server-sent event framing and ids shared by the dialects."""

from __future__ import annotations

import itertools
import json
from typing import Any, cast

__all__ = ["Ids", "as_dict", "as_list", "sse", "user_texts"]


def sse(data: Any, event: str | None = None) -> bytes:
    """One SSE frame (``event:`` line when given, then one ``data:`` line)."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class Ids:
    """Deterministic ids: ``prefix_000001`` … per prefix, so transcripts are reproducible."""

    def __init__(self) -> None:
        self._counters: dict[str, itertools.count[int]] = {}

    def next(self, prefix: str) -> str:
        counter = self._counters.setdefault(prefix, itertools.count(1))
        return f"{prefix}_{next(counter):06d}"


def as_list(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else an empty list."""
    return cast(list[Any], value) if isinstance(value, list) else []


def as_dict(value: object) -> dict[str, Any] | None:
    """``value`` if it is a JSON object, else None."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def user_texts(messages: object, text_types: tuple[str, ...] = ("text",)) -> list[str]:
    """The texts of every ``user`` message: string content, or content parts of ``text_types``."""
    texts: list[str] = []
    for raw in as_list(messages):
        message = as_dict(raw)
        if message is None or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        for part in as_list(content):
            block = as_dict(part)
            if block is not None and block.get("type") in text_types:
                texts.append(str(block.get("text", "")))
    return texts
