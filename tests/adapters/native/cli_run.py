"""``ringleader run --runtime native --model-server SCRIPT`` as a user runs it: a real subprocess in
a directory holding its ``ringleader.toml``, with no inherited ``RINGLEADER_*`` settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from orchestrator.core import RuntimeEvent, event_from_json
from orchestrator.core.config import trust_directory

CLI = (sys.executable, "-m", "orchestrator.cli")


def run_native_cli(cwd: Path, script: dict[str, Any], prompt: str) -> list[RuntimeEvent]:
    """The wire events of one run in ``cwd`` against the model server replaying ``script``
    (the config file is read from ``cwd``, the state directory is ``cwd/state``)."""
    (cwd / "script.json").write_text(json.dumps(script), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"RINGLEADER_STATE_DIR": str(cwd / "state"), "XDG_CONFIG_HOME": str(cwd)}
    trust_directory(cwd, env)  # the user's own project (`ringleader trust`)
    result = subprocess.run(
        [*CLI, "run", "--runtime", "native", "--model-server", "script.json", "--json", prompt],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    return [event_from_json(line) for line in result.stdout.splitlines() if line.strip()]
