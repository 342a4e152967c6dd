"""Tolerant accessors for decoded JSON (runtime frames carry fields of any type, or none)."""

from __future__ import annotations

from typing import Any, cast

__all__ = ["as_dict", "as_int", "as_list", "as_str"]


def as_str(value: object, default: str = "") -> str:
    """``value`` if it is a string, else ``default``."""
    return value if isinstance(value, str) else default


def as_int(value: object) -> int | None:
    """``value`` if it is an int (not a bool), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty dict."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else an empty list."""
    return cast(list[Any], value) if isinstance(value, list) else []
