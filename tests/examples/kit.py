"""What the example tests share: where the examples are, and running ``ringleader`` as a user
would (a real process, in a folder of its own, with its own state and user config)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def example_copy(name: str, into: Path) -> Path:
    """A copy of ``examples/<name>`` under ``into`` (runs write next to their files)."""
    target = into / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment without any RINGLEADER_* setting of the caller's, with the state
    directory and the user config folder under ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env.pop("PYTEST_ADDOPTS", None)
    env |= {
        "RINGLEADER_STATE_DIR": str(tmp / "state"),
        "XDG_CONFIG_HOME": str(tmp / "xdg"),
        "NO_COLOR": "1",
    }
    return env | extra


def ringleader(
    *args: str,
    cwd: Path,
    env: dict[str, str],
    python: Path | str = sys.executable,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "orchestrator.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
