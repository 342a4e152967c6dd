"""``ringleader run --board`` and ``serve``'s Ctrl-C, without a browser."""

from __future__ import annotations

import json
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx2
import pytest

from .conftest import (
    Served,
    native_turns,
    scripted_frames,
    start_native_model,
    stop,
    write_script,
)


def test_run_board_prints_its_url_and_aborts_from_it(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path, "slow.json", scripted_frames(["working\n"], pause_s=0.1, tail_sleep_s=120)
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "run",
            "--board",
            "--runtime",
            "scripted",
            "--json",
            "a long job",
        ],
        cwd=tmp_path,
        env=board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    stderr = proc.stderr
    threading.Thread(
        target=lambda: ([lines.put(x) for x in stderr], lines.put("")), daemon=True
    ).start()
    try:
        url = token = ""
        while not url:
            line = lines.get(timeout=60)
            found = re.search(r"board at (http://127\.0\.0\.1:\d+)/#token=([\w-]+) ", line)
            url, token = found.groups() if found else ("", "")
        page = httpx2.get(url + "/").text
        assert token not in page
        assert httpx2.get(url + "/board").status_code == 401
        key = ""
        for _ in range(600):
            cards = httpx2.get(url + "/board", headers={"authorization": f"Bearer {token}"}).json()[
                "cards"
            ]
            running = [c for c in cards if c["column"] == "running" and c["lastLine"] == "working"]
            if running:
                key = running[0]["runKey"]
                assert running[0]["title"] == "a long job"
                break
            threading.Event().wait(0.1)
        assert key, "the run never showed up on its board"
        answer = httpx2.post(
            url + "/abort", json={"run": key}, headers={"authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 202, answer.text
        assert proc.wait(timeout=60) == 1  # the run ended aborted: not a success
        out = proc.stdout.read() if proc.stdout else ""
        assert '"reason":"aborted"' in out.replace(" ", "")
        rest = "".join(iter(lambda: lines.get(timeout=60), ""))  # "" marks the end of stderr
        assert "internal error" not in rest, rest
    finally:
        stop(proc)


def test_run_board_ends_in_its_runs_outcome_with_the_table(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    """Issue 34 item 2: a run under --board succeeds (exit 0, the comparison table), never an
    internal error from the board's server closing around the runs."""
    script = write_script(tmp_path, "quick.json", scripted_frames(["done\n"], pause_s=0))
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "run", "--board", "--runtime", "scripted", "hi"],
        cwd=tmp_path,
        env=board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"board at http://127\.0\.0\.1:\d+/", done.stderr), done.stderr
    assert "internal error" not in done.stderr
    assert "comparison" in done.stdout and "success" in done.stdout, done.stdout


def test_ctrl_c_on_serve_ends_its_runs_as_aborted(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path, "slow.json", scripted_frames(["working\n"], pause_s=0.1, tail_sleep_s=120)
    )
    server = Served(tmp_path, board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)}, None)
    server.start()
    try:
        answer = server.post("/tasks", json={"prompt": "slow", "runtime": "scripted"})
        assert answer.status_code == 201
        prefix = answer.json()["runKeyPrefix"]
        for _ in range(600):
            cards = server.get("/board").json()["cards"]
            if any(c["runKey"].startswith(prefix) and c["lastLine"] == "working" for c in cards):
                break
            threading.Event().wait(0.1)
        assert server.proc is not None
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=60) == 130
    finally:
        server.close()
    replay = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "replay", "--list", "--json"],
        env=board_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert '"status": "aborted"' in replay.stdout or '"status":"aborted"' in replay.stdout, (
        replay.stdout
    )


def test_the_board_binds_its_own_port_and_no_picked_free_port_can_be_lost(
    tmp_path: Path, board_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of a port picked free and bound later, lost on purpose: the moment this process
    releases a port it bound, another socket takes it. The server binds port 0 itself and says
    which port it got; a restart gets that port again."""
    held: dict[int, int] = {}
    squatters: list[socket.socket] = []
    bind, close = socket.socket.bind, socket.socket.close

    def remember(self: socket.socket, address: object) -> None:
        bind(self, address)
        if self.family == socket.AF_INET:
            held[id(self)] = int(self.getsockname()[1])

    def take_over(self: socket.socket) -> None:
        port = held.pop(id(self), None)
        close(self)
        if port is not None:
            squatter = socket.socket()
            bind(squatter, ("127.0.0.1", port))
            squatter.listen()
            squatters.append(squatter)

    monkeypatch.setattr(socket.socket, "bind", remember)
    monkeypatch.setattr(socket.socket, "close", take_over)
    server = Served(tmp_path, board_env, None)
    try:
        server.start()
        assert server.get("/board").status_code == 200
        port = server.port
        server.kill()
        server.start()
        assert server.port == port
        assert server.get("/board").status_code == 200
    finally:
        server.close()
        for squatter in squatters:
            close(squatter)


def test_on_loopback_every_read_and_action_needs_the_printed_token(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    """Loopback is no trust boundary (another local user can connect): without a configured
    token, serve makes one, prints it once (in the URLs), never puts it in a page, and refuses
    every read and action without it; the feed's query token is for ``/events`` alone."""
    server = Served(tmp_path, board_env, None)
    server.start()
    try:
        assert len(server.token) >= 32
        page = httpx2.get(server.url + "/")
        assert page.status_code == 200 and server.token not in page.text
        assert server.token not in httpx2.get(server.url + "/run/x").text
        reads = (
            "/board",
            "/events",
            "/approvals",
            "/grants",
            "/runs",
            "/runs/x",
            "/run-meta?run=x",
        )
        for path in reads:
            assert httpx2.get(server.url + path).status_code == 401, path
            wrong = {"authorization": "Bearer " + "x" * len(server.token)}
            assert httpx2.get(server.url + path, headers=wrong).status_code == 401, path
        assert httpx2.get(server.url + f"/runs?token={server.token}").status_code == 401
        assert httpx2.get(server.url + f"/board?token={server.token}").status_code == 401
        with httpx2.stream("GET", server.url + f"/events?token={server.token}") as events:
            assert events.status_code == 200
        body = {"prompt": "hi", "runtime": "scripted"}
        for path in ("/tasks", "/abort", "/steer", "/approve", "/grants/revoke"):
            assert httpx2.post(server.url + path, json=body).status_code == 401, path
        assert server.get("/board").status_code == 200
        token_file = Path(board_env["RINGLEADER_STATE_DIR"]) / "board-token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        assert token_file.read_text().strip() == server.token
    finally:
        server.close()


def test_with_a_token_every_read_and_action_needs_it_and_no_page_shows_it(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    secret = "board-test-token-0123456789"
    token_file = tmp_path / "token"
    token_file.write_text(secret)
    server = Served(tmp_path, board_env, None, ("--token-file", str(token_file)))
    server.start()
    try:
        assert server.token == ""  # a configured token is never printed
        page = httpx2.get(server.url + "/")
        assert page.status_code == 200 and secret not in page.text
        assert httpx2.get(server.url + "/board").status_code == 401
        bearer = {"authorization": f"Bearer {secret}"}
        assert server.get("/board", headers=bearer).status_code == 200
        with httpx2.stream("GET", server.url + f"/events?token={secret}") as events:
            assert events.status_code == 200
        body = {"prompt": "hi", "runtime": "scripted"}
        assert httpx2.post(server.url + "/tasks", json=body).status_code == 401
        # the token in the query string is for EventSource alone; actions need the header
        assert httpx2.post(server.url + f"/tasks?token={secret}", json=body).status_code == 401
        assert server.post("/tasks", json=body, headers=bearer).status_code == 201
    finally:
        server.close()


def test_the_boards_approve_button_decides_the_approval_book_the_cli_reads(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    """One approval mechanism: the native run hosted by ``serve`` waits in the approval book;
    ``ringleader approvals`` (another process) lists what ``GET /approvals`` lists, and
    ``POST /approve`` decides it (a denial's message is what the model sees)."""
    model, config = start_native_model(
        tmp_path,
        board_env,
        native_turns(
            {
                "text": "I need to run a command.",
                "tool_calls": [{"name": "bash", "input": {"command": "touch nope.txt"}}],
            },
            {"text": "Understood, not running it."},
        ),
    )
    try:
        server = Served(tmp_path, board_env, config)
        server.start()
        try:
            bearer = server.auth()
            answer = server.post(
                "/tasks",
                json={"prompt": "touch it", "runtime": "native"},
                headers=bearer,
                timeout=60,
            )
            assert answer.status_code == 201, answer.text
            pending: list[dict[str, object]] = []
            for _ in range(600):
                pending = server.get("/approvals", timeout=60).json()
                if pending:
                    break
                threading.Event().wait(0.1)
            [item] = pending
            assert item["tool"] == "bash" and item["waiting"] is True
            listed = subprocess.run(
                [sys.executable, "-m", "orchestrator.cli", "approvals", "--json"],
                env=board_env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [item["id"]]
            cards = server.get("/board", timeout=60).json()["cards"]
            assert [c["phase"] for c in cards] == ["waiting_approval"]
            decided = server.post(
                "/approve",
                json={"id": item["id"], "allow": False, "message": "not in this repo"},
                headers=bearer,
                timeout=60,
            )
            assert decided.status_code == 202, decided.text
            for _ in range(600):
                cards = server.get("/board", timeout=60).json()["cards"]
                if cards[0]["column"] == "done":
                    break
                threading.Event().wait(0.1)
            assert cards[0]["column"] == "done"
            assert server.get("/approvals", timeout=60).json() == []
            again = server.post(
                "/approve",
                json={"id": item["id"], "allow": True},
                headers=bearer,
                timeout=60,
            )
            assert again.status_code == 404 and "not pending" in again.json()["error"]
        finally:
            server.close()
    finally:
        stop(model)
    replay = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "replay", "last", "--json"],
        env=board_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    results = [json.loads(x) for x in replay.stdout.splitlines() if '"tool-result"' in x]
    # the model sees the message as the (error) result, like every denial
    assert [(r["isError"], r["output"]) for r in results] == [(True, "Error: not in this repo")]
    assert not (tmp_path / "nope.txt").exists()


def test_a_lone_surrogate_in_a_prompt_breaks_nothing(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    """``"\\ud800"`` in a posted prompt (valid JSON, not valid Unicode) is stored as U+FFFD:
    the runs, the board and ``replay --list`` keep working, across a restart too."""
    script = write_script(tmp_path, "quick.json", scripted_frames(["ok\n"], pause_s=0))
    env = board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)}
    server = Served(tmp_path, env, None)
    server.start()
    try:
        answer = server.post(
            "/tasks",
            content=b'{"prompt": "\\ud800 go [[x]]", "runtime": "scripted"}',
            headers={"content-type": "application/json"},
        )
        assert answer.status_code == 201, answer.text
        prefix = answer.json()["runKeyPrefix"]
        for _ in range(600):
            runs = server.get("/runs")
            assert runs.status_code == 200, runs.text
            if any(r["runKey"].startswith(prefix) and r["endedMs"] for r in runs.json()):
                break
            threading.Event().wait(0.1)
        board = server.get("/board")
        assert board.status_code == 200
        [card] = [c for c in board.json()["cards"] if c["runKey"].startswith(prefix)]
        assert card["title"] == "\ufffd go [[x]]"
        server.kill()
        server.start()
        assert server.get("/runs").status_code == 200
        assert server.get("/board").status_code == 200
    finally:
        server.close()
    for args in (("--json",), ()):
        listed = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", "replay", "--list", *args],
            env=env | {"COLUMNS": "200"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        assert "\ufffd go [[x]]" in listed.stdout  # and Rich markup is not applied to it


def test_a_body_over_the_limit_is_refused_while_it_is_read(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    """The board answers 413 once a body passes its limit — or at once when the declared length
    does — without waiting for (or buffering) the rest; a deeply nested body is a clean 400."""
    server = Served(tmp_path, board_env, None)
    server.start()
    try:

        def request(head: str, body: bytes) -> str:
            with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
                sock.sendall(
                    (
                        f"POST /tasks HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                        f"Authorization: Bearer {server.token}\r\n"
                        f"Content-Type: application/json\r\n{head}\r\n"
                    ).encode()
                    + body
                )
                return sock.recv(4096).decode(errors="replace")  # the body is never finished

        huge = request("Content-Length: 419430400\r\n", b'{"prompt": "')
        assert huge.startswith("HTTP/1.1 413"), huge
        chunk = b"x" * 65536
        streamed = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(6))
        endless = request("Transfer-Encoding: chunked\r\n", streamed)
        assert endless.startswith("HTTP/1.1 413"), endless
        deep = server.post(
            "/tasks",
            content=b"[" * 100_000 + b"]" * 100_000,
            headers={"content-type": "application/json"},
        )
        assert deep.status_code == 400 and "deeply" in deep.json()["error"]
    finally:
        server.close()
