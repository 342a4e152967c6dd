"""The scripted runtime's spec: how ringleader builds it from its configuration
(registered in the ``ringleader.runtimes`` entry-point group, as a third party's runtime is).
The adapter is imported when a run is built, never when the spec is listed."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from orchestrator.core.adapter import RuntimeAdapter
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import RuntimeSpec

__all__ = ["SCRIPTED", "SCRIPTED_SCRIPT_ENV"]


SCRIPTED_SCRIPT_ENV = "RINGLEADER_SCRIPTED_SCRIPT"
"""A JSON file of scripted frames (a list) the ``scripted`` runtime replays instead of its
canned hello (demos of the board, tests of a served process)."""


def _scripted_script(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as handle:
            frames = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{SCRIPTED_SCRIPT_ENV}={path}: cannot load the script: {exc}") from None
    if not isinstance(frames, list) or not all(isinstance(f, dict) for f in frames):  # pyright: ignore[reportUnknownVariableType]
        raise ConfigError(f"{SCRIPTED_SCRIPT_ENV}={path}: the script must be a JSON list of frames")
    session = f"scripted-{uuid.uuid4().hex}"  # a fresh session id per adapter: unique run ids
    return [
        {**f, "sessionId": session} if f.get("type") == "init" else dict(f)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        for f in frames  # pyright: ignore[reportUnknownVariableType]
    ]


def _scripted(config: RuntimeConfig) -> RuntimeAdapter:
    from adapters.scripted import ScriptedAdapter

    script_file = os.environ.get(SCRIPTED_SCRIPT_ENV)
    if script_file:
        return ScriptedAdapter(_scripted_script(script_file))
    return ScriptedAdapter(
        [
            # a fresh session id per adapter (the CLI builds one per run): unique run ids
            {
                "type": "init",
                "sessionId": f"scripted-{uuid.uuid4().hex}",
                "model": "scripted-model",
            },
            {"type": "text", "text": "Hello from the scripted runtime."},
            {"type": "usage", "inputTokens": 12, "outputTokens": 6, "costUsd": None},
            {"type": "result", "ok": True, "summary": "Hello from the scripted runtime."},
        ]
    )


SCRIPTED = RuntimeSpec(
    id="scripted",
    factory=_scripted,
    summary="a canned in-memory run (no model at all)",
    settings=frozenset(),  # no binary, no model: only what every run has
)
