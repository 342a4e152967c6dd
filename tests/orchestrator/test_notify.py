"""Notifications through Apprise (:mod:`orchestrator.engine.notify`), received by a local HTTP
server on 127.0.0.1 through Apprise's ``json://`` scheme: one per run per change of state, with
the run, runtime, title, reason and board link and nothing else; a notifier on a closed port is
logged and never fails a run (through ``ringleader run``, a real process)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.config import NotifyConfig
from orchestrator.core.events import ApprovalCall, EventFactory, RuntimeEvent
from orchestrator.engine.notify import Notifier

SECRET = "sk-notify-secret-0123456789abcdef"


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps every JSON body POSTed to it."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        received = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound on 127.0.0.1 that nobody listens on (connections are refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


def run_events(make: EventFactory) -> list[RuntimeEvent]:
    call = ApprovalCall(id="ap-1", tool_call_id="c1", name="Bash", input={"command": "ls"})
    return [
        make.status("running"),
        make.waiting_approval(call),
        make.waiting_approval(call),  # the same state again: no second notification
        make.tool_call("c1", "Bash", {"command": "ls"}),
        make.tool_result("c1", f"tool output with {SECRET}"),
        make.status("running"),
        make.waiting_approval(call),  # a new change of state
        make.rate_limited("429", resets_at=1_800_000_000_000),
        *make.fail(f"boom {SECRET}", code="server_error"),
    ]


async def test_one_notification_per_change_of_state_with_the_expected_payload(
    receiver: Receiver,
) -> None:
    config = NotifyConfig(urls=(receiver.url,), board_url="http://127.0.0.1:9999")
    key = "runtime:claude-code:task:t1:run-abc"
    done_key = "runtime:codex:task:t2:run-def"
    notifier = Notifier(config, titles={"runtime:claude-code:task:t1": "fix the parser"})
    async with notifier.running():
        await notifier.deliver(key, run_events(EventFactory(run_id="r1")))
        await notifier.deliver(done_key, EventFactory(run_id="r2").finish("success", "ok"))
    kinds = [(n.event, n.run_key) for n in notifier.sent]
    assert kinds == [
        ("waiting_approval", key),
        ("waiting_approval", key),
        ("rate_limited", key),
        ("error", key),
        ("done", done_key),
    ]
    assert notifier.failures == 0
    assert len(receiver.bodies) == 5
    first = receiver.bodies[0]
    assert first["title"] == "ringleader: claude-code run needs your approval"
    assert first["message"] == (
        f"run: {key}\nruntime: claude-code\ntitle: fix the parser\nreason: Bash (ap-1)\n"
        f"board: http://127.0.0.1:9999/run/{key}"
    )
    assert "until 2027-01-15 08:00:00 UTC" in receiver.bodies[2]["message"]
    assert "reason: server_error" in receiver.bodies[3]["message"]
    assert receiver.bodies[4]["title"] == "ringleader: codex run is done"
    everything = json.dumps(receiver.bodies)
    assert SECRET not in everything and "tool output" not in everything and "boom" not in everything


async def test_only_the_configured_events_notify_and_urls_name_keys_by_variable(
    receiver: Receiver,
) -> None:
    host_port = receiver.url.removeprefix("json://").split("/")[0]
    config = NotifyConfig(urls=("json://${E2E_HOOK_HOST}/hook",), events=("done",))
    assert config.resolved_urls({}) == []  # an unset variable: that URL is left out
    notifier = Notifier(config, environ={"E2E_HOOK_HOST": host_port})
    async with notifier.running():
        await notifier.deliver("runtime:native:task:t:run-1", run_events(EventFactory(run_id="r")))
        await notifier.deliver(
            "runtime:native:task:u:run-2", EventFactory(run_id="s").finish("success", "")
        )
    assert [n.event for n in notifier.sent] == ["done"]
    assert [b["title"] for b in receiver.bodies] == ["ringleader: native run is done"]


async def test_a_notifier_on_a_closed_port_is_counted_and_logged_not_raised(
    closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    notifier = Notifier(NotifyConfig(urls=(f"json://127.0.0.1:{closed_port}/",)))
    async with notifier.running():
        await notifier.deliver(
            "runtime:native:task:t:run-1", EventFactory(run_id="r").finish("success", "")
        )
    assert notifier.failures == 1
    assert "not delivered" in caplog.text


def _run_cli(tmp_path: Path, url: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.json"
    frames = [
        {"type": "init", "sessionId": "x", "model": "scripted-model"},
        {"type": "text", "text": "hello\n"},
        {"type": "result", "ok": True, "summary": "hello"},
    ]
    script.write_text(json.dumps(frames))
    user = tmp_path / "xdg" / "ringleader" / "config.toml"  # the user's own: a project's
    user.parent.mkdir(parents=True, exist_ok=True)  # notify URLs need `ringleader trust`
    user.write_text(f'[notify]\nurls = ["{url}"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "RINGLEADER_SCRIPTED_SCRIPT": str(script),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "scripted", "say hi"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_ringleader_run_notifies_when_its_run_is_done(tmp_path: Path, receiver: Receiver) -> None:
    done = _run_cli(tmp_path, receiver.url)
    assert done.returncode == 0, done.stderr
    [body] = receiver.bodies
    assert body["title"] == "ringleader: scripted run is done"
    assert "title: say hi\nreason: success" in body["message"]


def test_a_notifier_on_a_closed_port_does_not_fail_the_run(
    tmp_path: Path, closed_port: int
) -> None:
    done = _run_cli(tmp_path, f"json://127.0.0.1:{closed_port}/")
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr
