"""Tolerant accessors for decoded JSON (runtime frames carry fields of any type, or none)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from orchestrator.core.errors import ProtocolError

__all__ = ["as_dict", "as_float", "as_int", "as_list", "as_str", "json_object"]


def json_object(
    line: bytes | str, loads: Callable[[bytes | str], object], *, runtime: str, adapter: str
) -> dict[str, Any]:
    """One line decoded with ``loads``; raises :class:`ProtocolError` (saying that ``runtime``
    wrote it) unless it is a JSON object."""
    try:
        obj = loads(line)
    except ValueError:
        raise ProtocolError(
            f"{runtime} wrote a line that is not JSON", line=line, adapter=adapter
        ) from None
    if type(obj) is not dict:
        raise ProtocolError(
            f"{runtime} wrote a JSON line that is not an object", line=line, adapter=adapter
        )
    return cast(dict[str, Any], obj)


def as_str(value: object, default: str = "") -> str:
    """``value`` if it is a string, else ``default``."""
    return value if isinstance(value, str) else default


def as_int(value: object) -> int | None:
    """``value`` if it is an int (not a bool), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_float(value: object) -> float | None:
    """``value`` as a float if it is a number (not a bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def as_dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty dict."""
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def as_list(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
