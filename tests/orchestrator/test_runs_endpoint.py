"""The board's ``/runs`` endpoints: camelCase throughout, and an unknown run is a 404."""

from __future__ import annotations

from pathlib import Path

import httpx2

from orchestrator.core import EventFactory, event_from_json
from orchestrator.engine import EventLog, Feed, serve_feed


async def test_runs_are_camel_case_and_unknown_runs_are_404(tmp_path: Path) -> None:
    make = EventFactory(run_id="r1")
    async with (
        EventLog.open(tmp_path / "log.db") as log,
        serve_feed(Feed(), log) as url,
        httpx2.AsyncClient(timeout=10, headers={"authorization": f"Bearer {url.token}"}) as http,
    ):
        await log.start_run("runtime:native:task:a", runtime_id="native", session_key="s")
        await log.append("runtime:native:task:a", [make.text_delta("hi"), *make.finish("success")])
        await log.finish_run(
            "runtime:native:task:a",
            status="success",
            outcome={"reason": "success", "costUsd": None},
        )
        await log.start_run("runtime:codex:task:b", runtime_id="codex", session_key="t")
        (row, empty) = (await http.get(f"{url}/runs")).json()
        assert set(row) == {
            "runKey", "runtimeId", "sessionKey", "status", "startedMs", "endedMs", "outcome"
        }  # fmt: skip
        assert row["runKey"] == "runtime:native:task:a"
        assert row["outcome"] == {"reason": "success", "costUsd": None}
        assert empty["endedMs"] is None
        one = await http.get(f"{url}/runs/runtime:native:task:a")
        assert one.status_code == 200
        kinds = [event_from_json(line).kind for line in one.text.splitlines()]
        assert kinds == ["text-delta", "done"]
        assert (
            await http.get(f"{url}/runs/runtime:codex:task:b")
        ).status_code == 200  # no events yet
        missing = await http.get(f"{url}/runs/no-such-run")
        assert missing.status_code == 404
        assert missing.json() == {"error": "no such run"}
