"""`ringleader model-server --script FILE` and `python -m orchestrator.model_server --script FILE`
print the server's URL and serve until interrupted."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx2

SCRIPT = (
    Path(__file__).resolve().parents[2] / "orchestrator" / "model_server" / "scripts" / "demo.json"
)


def test_model_server_commands_serve_the_script_until_interrupted(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    commands = [
        [sys.executable, "-m", "orchestrator.cli", "model-server", "--script", str(SCRIPT)],
        [
            sys.executable,
            "-m",
            "orchestrator.model_server",
            "--script",
            str(SCRIPT),
            "--log",
            str(log),
        ],
    ]
    # started together so that their (slow) imports overlap
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for argv in commands
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            reply = httpx2.post(
                f"{url}/v1/messages",
                headers={"x-api-key": "sk-ant-cli-secret"},
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
        for proc in procs:
            proc.send_signal(signal.SIGINT)
        errors = [proc.communicate(timeout=10)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], errors
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["conversation"], line["turn"], line["status"]) for line in lines] == [
        ("demo", 0, 200)
    ]
    assert "sk-ant-cli-secret" not in log.read_text()
