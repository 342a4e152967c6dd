"""Item 9: a ``Last-Event-ID`` out of range (≥ 2^63, negative) or garbage is answered 400 before
any stream starts, instead of a 200 whose stream then dies with ``OverflowError``."""

from __future__ import annotations

from pathlib import Path

import httpx2
import trio

from orchestrator.core import EventFactory
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import Feed, serve_feed


async def test_out_of_range_or_garbage_cursor_is_a_400(tmp_path: Path) -> None:
    make = EventFactory(run_id="r", clock=lambda: 1)
    async with (
        EventLog.open(tmp_path / "log.db") as log,
        serve_feed(Feed(), log) as url,
        httpx2.AsyncClient(timeout=5, headers={"authorization": f"Bearer {url.token}"}) as http,
    ):
        await log.append("run", [make.text_delta("x")])
        for bad in (str(2**63), str(2**64 + 5), "9" * 400, "-1", "1e3", "0x10", "1_0"):
            answer = await http.get(f"{url}/events", headers={"Last-Event-ID": bad})
            assert answer.status_code == 400, bad
            by_query = await http.get(f"{url}/events", params={"last_event_id": bad})
            assert by_query.status_code == 400, bad
        non_ascii = await http.get(f"{url}/events", params={"last_event_id": "١٢"})
        assert non_ascii.status_code == 400
        # the largest valid cursor streams (nothing after it, so only keep-alives: read one line)
        with trio.fail_after(5):
            async with http.stream(
                "GET", f"{url}/events", headers={"Last-Event-ID": str(2**63 - 1)}
            ) as ok:
                assert ok.status_code == 200
        with trio.fail_after(5):
            async with http.stream("GET", f"{url}/events", headers={"Last-Event-ID": "0"}) as ok:
                assert ok.status_code == 200
                async for line in ok.aiter_lines():
                    if line.startswith("id:"):
                        assert line == "id: 1"
                        break
