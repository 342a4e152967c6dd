"""Follow-ups from the board (``POST /say``, ``GET /followups``, ``POST /followup``) on a run of
``ringleader run --board``: queued while the (non-steerable) run is busy, edited or withdrawn
before delivery, then delivered in order in one next turn on the same session."""

from __future__ import annotations

import queue
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import httpx2

from .conftest import scripted_frames, stop, write_script

RINGLEADER = (sys.executable, "-m", "orchestrator.cli")


def test_messages_said_from_the_board_are_the_runs_next_turn(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path, "busy.json", scripted_frames(["working\n"], pause_s=0.1, tail_sleep_s=3)
    )
    proc = subprocess.Popen(
        [*RINGLEADER, "run", "--board", "--runtime", "scripted", "--json", "a busy job"],
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
        auth = {"authorization": f"Bearer {token}"}
        key = ""
        for _ in range(600):
            cards = httpx2.get(url + "/board", headers=auth).json()["cards"]
            running = [c for c in cards if c["column"] == "running" and c["lastLine"] == "working"]
            if running:
                key = running[0]["runKey"]
                break
            threading.Event().wait(0.05)
        assert key, "the run never showed up on its board"
        ids: list[str] = []
        for text in ("ONE", "TWO", "THREE"):
            answer = httpx2.post(url + "/say", json={"run": key, "text": text}, headers=auth)
            assert answer.status_code == 202, answer.text
            assert answer.json()["delivery"] == "queued"
            ids.append(answer.json()["id"])
        listed = httpx2.get(url + "/followups", params={"run": key}, headers=auth).json()
        assert [m["text"] for m in listed] == ["ONE", "TWO", "THREE"]
        edited = httpx2.post(
            url + "/followup", json={"id": ids[1], "text": "TWO-EDITED"}, headers=auth
        )
        assert edited.status_code == 202 and edited.json()["text"] == "TWO-EDITED"
        gone = httpx2.post(url + "/followup", json={"id": ids[2], "withdraw": True}, headers=auth)
        assert gone.status_code == 202 and gone.json()["status"] == "withdrawn"
        again = httpx2.post(url + "/followup", json={"id": ids[2], "text": "x"}, headers=auth)
        assert again.status_code == 409 and "withdrawn" in again.json()["error"]
        no_token = httpx2.post(url + "/say", json={"run": key, "text": "sneaky"})
        assert no_token.status_code in (401, 403)
        code = proc.wait(timeout=60)
        out = proc.stdout.read() if proc.stdout else ""
        rest = "".join(iter(lambda: lines.get(timeout=60), ""))  # "" marks the end of stderr
        assert code == 0, rest[-3000:]
    finally:
        stop(proc)
    assert out.count('"kind":"done"') == 2  # the run, then its follow-up turn
    with sqlite3.connect(Path(board_env["RINGLEADER_STATE_DIR"]) / "events.db") as conn:
        rows = conn.execute("SELECT session_key, outcome FROM runs ORDER BY started_ms").fetchall()
    assert len(rows) == 2 and rows[0][0] == rows[1][0]  # the same session
    assert '"title": "ONE\\n\\nTWO-EDITED"' in rows[1][1]  # in order, one turn, edited
    assert "sneaky" not in rows[1][1] and "THREE" not in rows[1][1]
