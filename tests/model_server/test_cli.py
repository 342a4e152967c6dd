"""`ringleader model-server --script FILE` prints its base URL and serves until stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx2

SCRIPT = Path(__file__).resolve().parents[2] / "contract" / "model_server" / "scripts" / "demo.json"


def test_model_server_command_serves_the_script_until_interrupted() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "model-server", "--script", str(SCRIPT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        reply = httpx2.post(
            f"{url}/v1/messages",
            json={
                "model": "m",
                "max_tokens": 2048,
                "tools": [{"name": "list_files"}],
                "messages": [{"role": "user", "content": "go"}],
            },
            timeout=10,
        )
        assert reply.status_code == 200
        assert reply.json()["content"][1]["name"] == "list_files"
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
