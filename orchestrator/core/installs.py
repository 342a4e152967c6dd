"""Where the real runtimes (Claude Code, Codex, Hermes, OpenClaw) are installed: what the
adapters look in and ``ringleader install`` installs into."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["RUNTIMES_DIR_ENV", "runtimes_dir"]

RUNTIMES_DIR_ENV: Final = "RINGLEADER_RUNTIMES_DIR"

_CHECKOUT: Final = Path(__file__).resolve().parents[2]
"""The source checkout this package runs from (when it is one)."""


def runtimes_dir() -> Path:
    """``$RINGLEADER_RUNTIMES_DIR``; else, run from a source checkout, its ``.runtimes``; else
    the per-user ``$XDG_DATA_HOME/ringleader/runtimes`` (``~/.local/share/…``), where ``ringleader
    install`` puts them for a pip user."""
    override = os.environ.get(RUNTIMES_DIR_ENV)
    if override:
        return Path(override).expanduser()
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "orchestrator").is_dir():
        return _CHECKOUT / ".runtimes"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "ringleader" / "runtimes"
