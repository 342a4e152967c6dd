"""The board shows the approval book's standing grants ("for the rest of the run", "always
here": what ``ringleader approvals`` lists) and revokes one (``POST /grants/revoke``), against a
real ``ringleader serve``; the route keeps the action rules (token in a header, this origin,
a JSON body)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx2
import trio

from orchestrator.core.approvals import ApprovalBook, RunInfo
from orchestrator.engine.eventlog import EventLog

from .conftest import Served


def plant_grants(state: Path) -> None:
    """Two grants as a person's "always here" and "for the rest of the run" answers leave them."""

    async def plant() -> None:
        book = ApprovalBook.in_state_dir(state)
        here = RunInfo(runtime_id="native", session_key="runtime:native:task:t1", cwd="/w/repo")
        await book.grant("bash", "always", here, "ap-1")
        await book.grant("write_file", "run", here, "ap-2")

    trio.run(plant)


def listed_by_cli(env: dict[str, str]) -> list[tuple[str, str]]:
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "approvals", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    return [(r["tool"], r["scope"]) for r in rows if r.get("grant")]


def test_the_board_lists_the_grants_the_cli_lists_and_revokes_one(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    state = Path(board_env["RINGLEADER_STATE_DIR"])
    plant_grants(state)

    async def runs() -> None:  # a run of the granted session, another of another runtime
        async with EventLog.open(state / "events.db") as log:
            await log.start_run(
                "runtime:native:task:t1:run-1",
                runtime_id="native",
                session_key="runtime:native:task:t1",
            )
            await log.start_run(
                "runtime:codex:task:t2:run-1",
                runtime_id="codex",
                session_key="runtime:codex:task:t2",
            )

    trio.run(runs)
    server = Served(tmp_path, board_env, None)
    server.start()
    try:
        grants = server.get("/grants", timeout=60).json()
        assert [(g["tool"], g["scope"]) for g in grants] == listed_by_cli(board_env)
        assert [(g["tool"], g["scope"], g["describe"]) for g in grants] == [
            ("bash", "always", "always on native in /w/repo"),
            ("write_file", "run", "for the rest of run runtime:native:task:t1"),
        ]
        # a run page lists those that apply to its run
        mine = server.get("/grants?run=runtime:native:task:t1:run-1").json()
        assert [g["tool"] for g in mine] == ["bash", "write_file"]
        assert server.get("/grants?run=runtime:codex:task:t2:run-1").json() == []
        assert server.get("/grants?run=no-such-run").json() == []
        bash = grants[0]
        body = {k: bash[k] for k in ("scope", "tool", "runtime", "cwd", "run")}
        # the action rules: no token, another origin, a form: refused, and nothing revoked
        assert httpx2.post(server.url + "/grants/revoke", json=body).status_code == 401
        evil = server.post("/grants/revoke", json=body, headers={"origin": "http://evil.example"})
        assert evil.status_code == 403
        assert server.post("/grants/revoke", data=body).status_code == 415
        assert len(server.get("/grants").json()) == 2
        gone = server.post("/grants/revoke", json=body)
        assert gone.status_code == 200, gone.text
        assert listed_by_cli(board_env) == [("write_file", "run")]
        assert [g["tool"] for g in server.get("/grants").json()] == ["write_file"]
        again = server.post("/grants/revoke", json=body)
        assert again.status_code == 404 and "no such grant" in again.json()["error"]
        bad = server.post("/grants/revoke", json=body | {"scope": "once"})
        assert bad.status_code == 409 and "'scope'" in bad.json()["error"]
    finally:
        server.close()
