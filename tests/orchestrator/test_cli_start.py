"""``ringleader runtimes`` starts light (#12: under 1 s): it builds every runtime and asks for its
health, but imports nothing only other commands or a run need. Deterministic (which modules got
imported), so a regression shows here, not as a flaky timing; the time itself is the bench row
``cli-start-runtimes`` (``python -m bench --only cli-start``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = (
    "mcp",  # the MCP client: most of a second of CPU; imported when a run opens its servers
    "mcp_types",
    "anthropic",  # model SDKs: imported when a native run starts
    "openai",
    "starlette",  # the board server
    "hypercorn",
    "ray",
    "opentelemetry",
    "rich.live",
    "orchestrator.board.server",
    "orchestrator.acp.server",
    "orchestrator.cli.sidebyside",
    "orchestrator.engine.hosts",
    "orchestrator.engine.otel",
)

PROBE = f"""
import contextlib, io, json, sys
from orchestrator.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["runtimes"])
print(json.dumps({{"code": code, "table": out.getvalue(),
                  "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def test_runtimes_imports_nothing_heavy(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "RINGLEADER_STATE_DIR": str(tmp_path)}
    if "RINGLEADER_RUNTIMES_DIR" in os.environ:
        env["RINGLEADER_RUNTIMES_DIR"] = os.environ["RINGLEADER_RUNTIMES_DIR"]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["code"] == 0
    assert "native" in result["table"] and "claude-code" in result["table"]
    assert result["heavy"] == []
