"""The board feed: fan-out in log order, per-subscriber backpressure with coalescing, JSON Lines,
SSE resume by Last-Event-ID without a lost or duplicated event, token off loopback."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import httpx2
import pytest
import trio
import trio.testing

from adapters import ScriptedAdapter
from orchestrator.core import ConfigError, EventFactory, RuntimeEvent, RuntimeRegistry
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.eventlog import EventLog, LoggedEvent
from orchestrator.engine.feed import (
    Feed,
    FeedSubscription,
    RecordingSink,
    _SSEStream,
    jsonl_line,
    serve_feed,
    write_jsonl,
)


def deltas(n: int, run_id: str = "r", start: int = 0, text: str = "t") -> list[RuntimeEvent]:
    make = EventFactory(run_id=run_id, clock=lambda: 1, seq=start)
    return [make.text_delta(f"{text}{start + i} ") for i in range(n)]


def statuses(n: int, run_id: str = "r", start: int = 0) -> list[RuntimeEvent]:
    make = EventFactory(run_id=run_id, clock=lambda: 1, seq=start)
    return [make.status("running", detail=str(start + i)) for i in range(n)]


def logged(
    events: list[RuntimeEvent], run_key: str = "run", first_gid: int = 1
) -> list[LoggedEvent]:
    return [LoggedEvent(first_gid + i, run_key, e) for i, e in enumerate(events)]


async def test_fan_out_to_many_subscribers_in_log_order(tmp_path: Path) -> None:
    feed = Feed()
    async with EventLog.open(tmp_path / "log.db") as log:
        sink = RecordingSink(log, feed)
        everything = [feed.subscribe(), feed.subscribe()]
        only_b = feed.subscribe("run-b")
        got: dict[int, list[LoggedEvent]] = {0: [], 1: [], 2: []}

        async def drain(i: int, sub: FeedSubscription) -> None:
            async for item in sub:
                got[i].append(item)

        async def produce(run: str) -> None:
            for k in range(10):
                await sink.deliver(run, deltas(3, run_id=run, start=k * 3))

        async with trio.open_nursery() as consumers:
            for i, sub in enumerate([*everything, only_b]):
                consumers.start_soon(drain, i, sub)
            async with trio.open_nursery() as producers:
                producers.start_soon(produce, "run-a")
                producers.start_soon(produce, "run-b")
            feed.close()
        for i in (0, 1):
            assert [x.gid for x in got[i]] == list(range(1, 61))  # the log's global order
        assert {x.run_key for x in got[2]} == {"run-b"}
        assert [x.seq for x in got[2]] == list(range(1, 31))
        # what the subscribers saw is exactly what the log holds
        assert [x.body for x in got[0]] == [x.body for x in await log.read_since(0)]


async def test_subscribers_only_see_committed_events(tmp_path: Path) -> None:
    feed = Feed()
    async with EventLog.open(tmp_path / "log.db") as log:
        sink = RecordingSink(log, feed)
        sub = feed.subscribe()
        seen_durable: list[bool] = []

        async def check() -> None:
            async for item in sub:
                with sqlite3.connect(log.path) as other:  # another connection: committed only
                    row = other.execute("SELECT 1 FROM events WHERE gid = ?", (item.gid,))
                    seen_durable.append(row.fetchone() is not None)
                if item.gid == 12:
                    return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(check)
            for k in range(4):
                await sink.deliver("run", statuses(3, start=k * 3))
        assert seen_durable == [True] * 12


async def test_lagging_subscriber_sees_coalesced_deltas_with_no_lost_text() -> None:
    feed = Feed()
    lagging = feed.subscribe(max_items=4)
    events = deltas(100)
    await feed.publish(logged(events))  # never waits: deltas coalesce instead
    assert len(lagging) == 4
    assert lagging.coalesced == 96
    got = await lagging.receive_batch()
    assert "".join(x.event.text for x in got if x.event.kind == "text-delta") == "".join(
        e.text for e in events if e.kind == "text-delta"
    )
    assert [x.gid for x in got] == [1, 2, 3, 100]
    merged = got[-1]
    assert (merged.first_gid, merged.gid, merged.seq, merged.merged) == (4, 100, 100, 97)
    assert json.loads(merged.body)["text"] == merged.event.text  # the body is re-encoded


async def test_coalescing_keeps_runs_and_channels_apart() -> None:
    feed = Feed()
    sub = feed.subscribe(max_items=1)
    a = EventFactory(run_id="a", clock=lambda: 1)
    b = EventFactory(run_id="b", clock=lambda: 1)
    items = [
        LoggedEvent(1, "a", a.text_delta("a1")),
        LoggedEvent(2, "a", a.text_delta("a2")),
        LoggedEvent(3, "a", a.text_delta("r", channel="reasoning")),
        LoggedEvent(4, "b", b.text_delta("b1")),
    ]
    got: list[LoggedEvent] = []

    async def consume() -> None:
        async for item in sub:
            got.append(item)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await feed.publish(items)
        feed.close()
    texts = [(x.run_key, x.event.text) for x in got if x.event.kind == "text-delta"]
    assert texts == [("a", "a1a2"), ("a", "r"), ("b", "b1")]


async def test_full_subscriber_is_dropped_after_its_timeout_and_others_keep_going(
    autojump_clock: trio.testing.MockClock,
) -> None:
    feed = Feed(slow_timeout_s=5.0)
    stuck = feed.subscribe(max_items=3)  # never reads
    live = feed.subscribe(max_items=3)
    got: list[int] = []

    async def consume() -> None:
        async for item in live:
            got.append(item.gid)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        start = trio.current_time()
        await feed.publish(logged(statuses(10)))
        assert trio.current_time() - start == pytest.approx(5.0)  # held up once, bounded
        await feed.publish(logged(statuses(10, start=10), first_gid=11))
        assert trio.current_time() - start == pytest.approx(5.0)  # and never again
        feed.close()
    assert got == list(range(1, 21))
    assert stuck.disconnected
    assert feed.subscribers == 0
    # the dropped subscriber drains a contiguous prefix, then ends; the log has the rest
    assert [x.gid async for x in stuck] == [1, 2, 3]


async def test_block_policy_waits_as_long_as_it_takes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    feed = Feed(slow_timeout_s=1.0)
    sub = feed.subscribe(max_items=2, slow="block")
    got: list[int] = []

    async def late_reader() -> None:
        await trio.sleep(3600)
        async for item in sub:
            got.append(item.gid)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(late_reader)
        await feed.publish(logged(statuses(10)))
        assert trio.current_time() >= 3600  # the publisher waited for the reader
        feed.close()
    assert got == list(range(1, 11))
    assert not sub.disconnected


async def test_backpressure_reaches_the_producer_through_the_log(tmp_path: Path) -> None:
    feed = Feed()
    async with EventLog.open(tmp_path / "log.db") as log:
        sink = RecordingSink(log, feed)
        sub = feed.subscribe(max_items=2, slow="block")
        done = trio.Event()

        async def produce() -> None:
            await sink.deliver("run", statuses(5))
            done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            await trio.testing.wait_all_tasks_blocked()
            assert not done.is_set()  # committed, but the full subscriber holds the producer
            assert await log.last_gid() == 5
            assert [x.gid async for x in _take(sub, 5)] == [1, 2, 3, 4, 5]
        assert done.is_set()


async def _take(sub: FeedSubscription, n: int) -> AsyncIterator[LoggedEvent]:
    for _ in range(n):
        yield await sub.receive()


async def test_write_jsonl_from_a_subscription_and_from_events() -> None:
    feed = Feed()
    sub = feed.subscribe()
    events = statuses(3) + deltas(2, start=3)
    await feed.publish(logged(events, run_key="k"))
    feed.close()
    send, receive = trio.testing.memory_stream_pair()
    assert await write_jsonl(sub, send) == 5
    lines = (await receive.receive_some()).decode().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [1, 2, 3, 4, 5]
    assert json.loads(lines[3]) == {
        "id": 4,
        "runKey": "k",
        "event": json.loads(jsonl_line(events[3])),
    }

    class Collect:
        def __init__(self) -> None:
            self.text = ""

        async def write(self, data: str, /) -> object:
            self.text += data
            return len(data)

    out = Collect()
    assert await write_jsonl(events, out) == 5
    assert [json.loads(line)["seq"] for line in out.text.splitlines()] == [1, 2, 3, 4, 5]


async def _collect_sse(stream: _SSEStream, until_gid: int) -> list[int]:
    ids: list[int] = []
    async for chunk in stream:
        for line in chunk.decode().splitlines():
            if line.startswith("id: "):
                ids.append(int(line[4:]))
        if ids and ids[-1] >= until_gid:
            return ids
    return ids


async def test_sse_stream_replays_then_follows_live_without_gap_or_duplicate(
    tmp_path: Path,
) -> None:
    feed = Feed()
    async with EventLog.open(tmp_path / "log.db") as log:
        sink = RecordingSink(log, feed)
        await sink.deliver("a", statuses(30, run_id="a"))  # history before the client connects
        stream = _SSEStream(feed, log, 10, None, page=7, keepalive_s=0.05)
        ids: list[int] = []

        async def produce() -> None:
            # live traffic while the client replays: a burst far over the SSE queue's bound
            # (the subscription is dropped and resynced from the log) and coalescible deltas
            await sink.deliver("b", statuses(1500, run_id="b"))
            for k in range(20):
                await sink.deliver("a", deltas(50, run_id="a", start=30 + k * 50))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            ids = await _collect_sse(stream, 30 + 1500 + 1000)
        assert ids == list(range(11, 2531))
        # now following live: a burst while the client does not read overflows its queue;
        # the subscription is dropped and the stream resyncs from the log
        assert await stream.__anext__() == b": keepalive\n\n"  # caught up: live and idle
        resyncs = stream.resyncs
        await sink.deliver("b", statuses(1200, run_id="b", start=1500))
        await sink.deliver("a", deltas(10, run_id="a", start=1030))
        ids = await _collect_sse(stream, 2530 + 1210)
        assert ids == list(range(2531, 2530 + 1211))
        assert stream.resyncs == resyncs + 1
        await stream.aclose()
    assert feed.subscribers == 0


class RacingLog:
    """Commits more events while the stream's last (empty) replay read is in flight."""

    def __init__(self, log: EventLog, race: Callable[[], Awaitable[None]]) -> None:
        self.log = log
        self.race: Callable[[], Awaitable[None]] | None = race

    async def read_since(self, gid: int, **kwargs: Any) -> list[LoggedEvent]:
        got = await self.log.read_since(gid, **kwargs)
        if not got and self.race is not None:
            race, self.race = self.race, None
            await race()  # committed and published after the read's snapshot
        return got


async def test_sse_stream_resyncs_when_a_coalesced_delta_straddles_the_cursor(
    tmp_path: Path,
) -> None:
    feed = Feed()
    async with EventLog.open(tmp_path / "log.db") as log:
        sink = RecordingSink(log, feed)
        racing = RacingLog(log, lambda: sink.deliver("a", deltas(5, run_id="a", start=2)))
        stream = _SSEStream(feed, cast(EventLog, racing), 0, "a", page=1000, keepalive_s=60)
        stream._sub.max_items = 2  # pyright: ignore[reportPrivateUsage]
        await stream.__anext__()  # retry hint
        await sink.deliver("a", deltas(2, run_id="a"))  # queued live (full) AND in the log
        first = (await stream.__anext__()).decode()  # replayed from the log: gids 1, 2
        assert [line for line in first.splitlines() if line.startswith("id: ")] == [
            "id: 1",
            "id: 2",
        ]
        # the next replay read comes back empty while gids 3..7 commit: they coalesce live into
        # the queued gid 2, so the live item straddles the cursor and the stream resyncs
        rest = (await stream.__anext__()).decode()
        assert stream.resyncs == 1
        assert [line for line in rest.splitlines() if line.startswith("id: ")] == [
            f"id: {g}" for g in range(3, 8)
        ]
        texts = [
            json.loads(line[6:])["event"]["text"]
            for line in rest.splitlines()
            if line.startswith("data: ")
        ]
        assert "".join(texts) == "t2 t3 t4 t5 t6 "  # nothing of gids 1..2 again, nothing lost
        await stream.aclose()


async def test_sse_client_disconnects_and_resumes_with_last_event_id(tmp_path: Path) -> None:
    script = [{"type": "text", "text": f"part-{i} "} for i in range(40)] + [
        {"type": "result", "ok": True, "summary": "done"}
    ]
    registry = RuntimeRegistry()
    registry.register_factory("scripted", lambda: ScriptedAdapter(script))
    feed = Feed()
    async with EventLog.open(tmp_path / "log.db") as log, serve_feed(feed, log) as url:
        assert url.startswith("http://127.0.0.1:")
        runner = Runner(registry, sink=RecordingSink(log, feed), state_dir=tmp_path / "state")
        seen: list[int] = []
        texts: list[str] = []
        auth = {"authorization": f"Bearer {url.token}"}
        async with httpx2.AsyncClient(timeout=10, headers=auth) as http:
            # first connection: read a few events mid-run, then drop the connection
            async with http.stream("GET", f"{url}/events") as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(
                        runner.run_task, "scripted", TaskSpec(task_id="t", title="t")
                    )
                    async for line in response.aiter_lines():
                        if line.startswith("id: "):
                            seen.append(int(line[4:]))
                        elif line.startswith("data: "):
                            event = json.loads(line[6:])["event"]
                            if event["kind"] == "text-delta":
                                texts.append(event["text"])
                            if len(seen) == 7:
                                break
            # the second connection resumes from the last id it saw
            async with http.stream(
                "GET", f"{url}/events", headers={"Last-Event-ID": str(seen[-1])}
            ) as response:
                async for line in response.aiter_lines():
                    if line.startswith("id: "):
                        seen.append(int(line[4:]))
                    elif line.startswith("data: "):
                        event = json.loads(line[6:])["event"]
                        if event["kind"] == "text-delta":
                            texts.append(event["text"])
                        if event["kind"] == "done":
                            break
        total = await log.last_gid()
    assert seen == list(range(1, total + 1))  # every id exactly once, in order
    assert "".join(texts) == "".join(f"part-{i} " for i in range(40))
    assert feed.subscribers == 0  # both connections released their subscriptions


async def test_serving_off_loopback_requires_a_token(tmp_path: Path) -> None:
    async with EventLog.open(tmp_path / "log.db") as log:
        for host in ("0.0.0.0", "192.168.1.10", "::", "example.com"):
            with pytest.raises(ConfigError, match="requires a token"):
                async with serve_feed(Feed(), log, host=host):
                    pass
        with pytest.raises(ConfigError, match="empty"):
            async with serve_feed(Feed(), log, token=""):
                pass


async def test_token_is_checked_and_never_optional_once_set(tmp_path: Path) -> None:
    async with (
        EventLog.open(tmp_path / "log.db") as log,
        serve_feed(Feed(), log, token="s3cret-token") as url,
        httpx2.AsyncClient(timeout=5) as http,
    ):
        assert (await http.get(f"{url}/runs")).status_code == 401
        bad = await http.get(f"{url}/runs", headers={"authorization": "Bearer wrong"})
        assert bad.status_code == 401
        assert "s3cret" not in bad.text
        ok = await http.get(f"{url}/runs", headers={"authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200
        assert ok.json() == []
        # the query token is for EventSource (GET /events) alone
        assert (await http.get(f"{url}/runs?token=s3cret-token")).status_code == 401
        assert (await http.get(f"{url}/events?token=nope")).status_code == 401
        with trio.fail_after(5):
            async with http.stream("GET", f"{url}/events?token=s3cret-token") as events:
                assert events.status_code == 200


async def test_on_loopback_without_a_configured_token_a_random_one_is_required(
    tmp_path: Path,
) -> None:
    """Loopback is no trust boundary: another local user can connect to 127.0.0.1, so without
    a configured token the feed makes a random one, and every request needs it."""
    async with (
        EventLog.open(tmp_path / "log.db") as log,
        serve_feed(Feed(), log) as url,
        serve_feed(Feed(), log) as other,
        httpx2.AsyncClient(timeout=5) as http,
    ):
        assert len(url.token) >= 32 and url.token != other.token
        for path in ("/runs", "/runs/x", "/events"):
            assert (await http.get(f"{url}{path}")).status_code == 401, path
            foreign = {"authorization": f"Bearer {other.token}"}
            assert (await http.get(f"{url}{path}", headers=foreign)).status_code == 401, path
        mine = {"authorization": f"Bearer {url.token}"}
        assert (await http.get(f"{url}/runs", headers=mine)).status_code == 200
        bad_cursor = await http.get(f"{url}/events", headers=mine | {"Last-Event-ID": "x"})
        assert bad_cursor.status_code == 400
