"""The runtimes ringleader ships, as a registry of adapter factories.

Each factory imports its adapter lazily, so a runtime whose module or binary is missing never
breaks the others; ``ringleader runtimes`` reports what is installed and healthy.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.adapter import RuntimeAdapter
from orchestrator.registry import RuntimeRegistry

__all__ = ["BUILTIN_RUNTIMES", "builtin_registry"]


def _scripted() -> RuntimeAdapter:
    from .scripted import ScriptedAdapter

    return ScriptedAdapter(
        [
            {"type": "init", "sessionId": "scripted-session", "model": "scripted-model"},
            {"type": "text", "text": "Hello from the scripted runtime."},
            {"type": "usage", "inputTokens": 12, "outputTokens": 6, "costUsd": None},
            {"type": "result", "ok": True, "summary": "Hello from the scripted runtime."},
        ]
    )


def _native() -> RuntimeAdapter:
    from .native import NativeAdapter

    return NativeAdapter()


BUILTIN_RUNTIMES: dict[str, Callable[[], RuntimeAdapter]] = {
    "native": _native,
    "scripted": _scripted,
}
"""Runtime id → factory, in the order ``ringleader runtimes`` lists them."""


def builtin_registry() -> RuntimeRegistry:
    """A registry with a factory for every runtime ringleader ships."""
    registry = RuntimeRegistry()
    for runtime_id, factory in BUILTIN_RUNTIMES.items():
        registry.register_factory(runtime_id, factory)
    return registry
