"""The board's projection (orchestrator/board/projection.py): columns from events, property-tested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.board.projection import (
    COLUMNS,
    TERMINAL_COLUMNS,
    Board,
    Card,
    apply,
    card_from_cache,
    card_to_cache,
    column_of,
    project,
)
from orchestrator.board.server import read_board
from orchestrator.core.events import ApprovalCall, EventFactory, RuntimeEvent, Usage, event_to_json
from orchestrator.engine.eventlog import EventLog, LoggedEvent

ENDINGS = ("success", "max_turns", "aborted", "error", "interrupted", "start-failed")
EXPECTED = {
    "success": "done",
    "max_turns": "done",
    "aborted": "aborted",
    "error": "failed",
    "interrupted": "interrupted",
    "start-failed": "failed",
}

_step = st.one_of(
    st.tuples(st.just("text"), st.text(max_size=30), st.sampled_from(["assistant", "reasoning"])),
    st.tuples(st.just("tool"), st.sampled_from(["bash", "read_file"]), st.booleans()),
    st.tuples(st.just("status"), st.sampled_from(["init", "thinking", "running", "turn-complete"])),
    st.tuples(
        st.just("cost"),
        st.integers(0, 10_000),
        st.integers(0, 10_000),
        st.one_of(st.none(), st.floats(0, 5, allow_nan=False)),
    ),
    st.tuples(st.just("error"), st.text(max_size=20)),
)


def build_stream(steps: list[tuple[Any, ...]], ending: str) -> list[RuntimeEvent]:
    """A valid stream (seq gapless, tool calls closed, one done last) from the steps."""
    make = EventFactory(run_id="r1", clock=iter(range(1000, 10_000_000, 7)).__next__)
    out: list[RuntimeEvent] = []
    for n, step in enumerate(steps):
        match step[0]:
            case "text":
                if step[1]:
                    out.append(make.text_delta(step[1], step[2]))
            case "tool":
                out.append(make.tool_call(f"call-{n}", step[1], {"n": n}))
                if step[2]:
                    out.append(make.tool_result(f"call-{n}", "output"))
            case "status":
                out.append(make.status(step[1]))
            case "cost":
                out.append(
                    make.cost(Usage(input_tokens=step[1], output_tokens=step[2]), cost_usd=step[3])
                )
            case "error":
                out.append(make.error(step[1] or "oops", fatal=False))
    if ending == "interrupted":
        out.extend(make.fail("the owner process died", code="interrupted"))
    elif ending == "start-failed":
        out.extend(make.fail("could not start", code="runtime_start_failed"))
    elif ending == "error":
        out.extend(make.fail("boom", code="boom"))
    else:
        out.extend(make.finish(ending))  # type: ignore[arg-type]
    return out


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_step, max_size=25), st.sampled_from(ENDINGS))
def test_any_valid_stream_ends_in_exactly_one_terminal_column(
    steps: list[tuple[Any, ...]], ending: str
) -> None:
    events = build_stream(steps, ending)
    assert [e.kind for e in events].count("done") == 1
    card = Card("k")
    terminal_seen: list[str] = []
    for event in events:
        card = apply(card, event)
        assert card.column in COLUMNS
        if card.terminal:
            terminal_seen.append(card.column)
    # once terminal it stays in the same column; the done (last event) is what put it there
    assert len(set(terminal_seen)) == 1
    assert len(terminal_seen) == 1
    assert card.column == EXPECTED[ending]
    assert card.open_tool_calls == ()
    # events after the done change nothing but the count
    extra = EventFactory(run_id="r1", seq=len(events)).text_delta("late")
    after = apply(card, extra)
    assert after.column == card.column and after.last_line == card.last_line
    assert after.after_done == 1


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_step, max_size=25), st.sampled_from(ENDINGS))
def test_tokens_and_cost_follow_the_cumulative_cost_events(
    steps: list[tuple[Any, ...]], ending: str
) -> None:
    events = build_stream(steps, ending)
    card = project("k", events)
    costs = [e for e in events if e.kind == "cost"]
    if costs:
        assert card.input_tokens == max(c.usage.input_tokens for c in costs)  # type: ignore[union-attr]
        known = [c.cost_usd for c in costs if c.cost_usd is not None]  # type: ignore[union-attr]
        assert card.cost_usd == (known[-1] if known else None)
    else:
        assert card.cost_usd is None  # unknown, never 0
    # a prefix that has not ended is running (or queued when empty), never terminal
    for cut in range(len(events)):
        prefix = project("k", events[:cut])
        assert prefix.column == ("queued" if cut == 0 else "running")


def test_last_line_is_the_last_non_empty_line_across_deltas() -> None:
    make = EventFactory(run_id="r")
    card = project(
        "k", [make.text_delta("first line\nsec"), make.text_delta("ond <script>x</script>\n\n")]
    )
    assert card.last_line == "second <script>x</script>"
    card = apply(card, make.text_delta("third"))
    assert card.last_line == "third"
    assert apply(card, make.text_delta("thinking…", "reasoning")).last_line == "third"


def test_a_pending_approval_puts_a_running_card_in_waiting() -> None:
    make = EventFactory(run_id="r")
    card = project("k", [make.tool_call("c1", "bash", {"command": "ls"})])
    assert column_of(card) == "running"
    assert column_of(card, {"c1"}) == "waiting"
    assert column_of(card, {"other"}) == "running"
    done = project("k", [make.tool_result("c1", "x"), *make.finish("success")])
    assert column_of(done, {"c1"}) == "done"


def test_a_waiting_approval_status_puts_a_running_card_in_waiting_until_the_call_goes_on() -> None:
    make = EventFactory(run_id="r")
    call = ApprovalCall(id="ap-1", tool_call_id="c1", name="bash", input={"command": "ls"})
    card = project("k", [make.tool_call("c1", "bash", {"command": "ls"})])
    card = apply(card, make.waiting_approval(call))
    assert column_of(card) == "waiting"  # from the event itself: runs of any process
    assert column_of(apply(card, make.tool_result("c1", "x"))) == "running"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.lists(_step, max_size=8), st.sampled_from(ENDINGS)), min_size=1, max_size=4
    ),
    st.randoms(use_true_random=False),
    st.integers(0, 60),
)
def test_replaying_the_log_gives_the_board_watching_live_gave(
    runs: list[tuple[list[tuple[Any, ...]], str]], rnd: Any, resume_at: int
) -> None:
    """Interleave several runs' streams in one log; a board that watched live (with a
    reconnect that repeats events it already had) equals the board replayed from the log."""
    streams = {f"run-{i}": build_stream(s, e) for i, (s, e) in enumerate(runs)}
    cursors = dict.fromkeys(streams, 0)
    order: list[LoggedEvent] = []
    while any(cursors[k] < len(v) for k, v in streams.items()):
        key = rnd.choice([k for k, v in streams.items() if cursors[k] < len(v)])
        order.append(LoggedEvent(len(order) + 1, key, streams[key][cursors[key]]))
        cursors[key] += 1
    live = Board()
    cut = min(resume_at, len(order))
    live.apply_all(order[:cut])
    # the connection drops; the resumed feed repeats from an earlier id: nothing counts twice
    live.apply_all(order[max(0, cut - 5) :])
    replayed = Board()
    replayed.apply_all(order)
    assert live.cards == replayed.cards
    assert live.cursor == replayed.cursor == len(order)
    for key, stream in streams.items():
        assert replayed.cards[key] == project(key, stream)
        assert replayed.cards[key].column in TERMINAL_COLUMNS


async def test_read_board_projects_the_event_log(tmp_path: Path) -> None:
    make = EventFactory(run_id="r")
    async with EventLog.open(tmp_path / "events.db") as log:
        await log.start_run("a", runtime_id="scripted", session_key="s")
        await log.start_run("queued-one", runtime_id="scripted", session_key="s2")
        events = [make.text_delta("hello\n"), *make.finish("aborted")]
        await log.append("a", events)
        board = await read_board(log, page=1)
        await trio.lowlevel.checkpoint()
    assert board.cards["a"] == project("a", events)
    assert board.cards["a"].column == "aborted"
    assert board.cards["queued-one"].column == "queued"
    cols = board.columns()
    assert [c.run_key for c in cols["queued"]] == ["queued-one"]
    assert list(cols) == list(COLUMNS)


class CountingLog:
    """The reads the board makes, forwarded to a real log, with the cursors asked for (and
    the events read)."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.cursors: list[int] = []
        self.read: list[tuple[str | None, int]] = []
        """(run key or None: every run, the events returned) per read."""

    async def runs(self) -> Any:
        return await self.log.runs()

    async def last_gid(self) -> int:
        return await self.log.last_gid()

    async def run_cards(self) -> Any:
        return await self.log.run_cards()

    async def save_run_cards(self, cards: Any) -> None:
        await self.log.save_run_cards(cards)

    async def read_since(self, cursor: int, limit: int = 1000, run_key: str | None = None) -> Any:
        self.cursors.append(cursor)
        found = await self.log.read_since(cursor, limit=limit, run_key=run_key)
        self.read.append((run_key, len(found)))
        return found


async def test_the_boards_projection_is_brought_up_to_date_not_redone(tmp_path: Path) -> None:
    make = EventFactory(run_id="r")
    async with EventLog.open(tmp_path / "events.db") as log:
        await log.start_run("a", runtime_id="scripted", session_key="s")
        first = [make.text_delta(f"line {i}\n") for i in range(50)]
        await log.append("a", first)
        counting = CountingLog(log)
        board = await read_board(counting, board=None)  # pyright: ignore[reportArgumentType]
        assert counting.cursors == [0, 50]  # the run's events (no card kept yet), then since
        rest = [make.text_delta("more\n"), *make.finish("success")]
        await log.append("a", rest)
        counting.cursors.clear()
        again = await read_board(counting, board=board)  # pyright: ignore[reportArgumentType]
        assert again is board and counting.cursors == [50, 52]  # only what was appended
        assert board.cards["a"] == project("a", first + rest)
        assert board.cards == (await read_board(log)).cards


async def test_a_new_board_reads_only_the_events_no_kept_card_covers(tmp_path: Path) -> None:
    """Opening the board again (another process, a restart) does not fold every event of every
    run: the cards the last open folded are kept in the log, and only the events after them
    are read (issue 37: the board's first paint)."""
    make_a, make_b = EventFactory(run_id="ra"), EventFactory(run_id="rb")
    ended = [make_a.text_delta(f"line {i}\n") for i in range(40)] + make_a.finish("success")
    live = [make_b.text_delta("working\n"), make_b.tool_call("t1", "Bash", {"command": "ls"})]
    async with EventLog.open(tmp_path / "events.db") as log:
        await log.start_run("a", runtime_id="scripted", session_key="s")
        await log.start_run("b", runtime_id="scripted", session_key="s2")
        await log.start_run("queued", runtime_id="scripted", session_key="s3")
        await log.append("a", ended)
        await log.append("b", live)
        first = CountingLog(log)
        board = await read_board(first, page=7)  # pyright: ignore[reportArgumentType]
        assert sum(n for key, n in first.read if key == "a") == len(ended)
        more = [make_b.tool_result("t1", "ok"), make_b.text_delta("done\n")]
        await log.append("b", more)
        again = CountingLog(log)
        reopened = await read_board(again, page=7)  # pyright: ignore[reportArgumentType]
        assert [(key, n) for key, n in again.read if n] == [("b", len(more))]
        assert reopened.cards["a"] == project("a", ended)
        assert reopened.cards["b"] == project("b", live + more)
        assert reopened.cards["queued"].column == "queued"
        assert reopened.cursor == await log.last_gid()
        assert list(reopened.cards) == list(board.cards)
        # a card the log keeps that is not one (damaged, another layout) is folded again
        await log.save_run_cards([("a", len(ended), "{not json")])
        third = CountingLog(log)
        board3 = await read_board(third)  # pyright: ignore[reportArgumentType]
        assert ("a", len(ended)) in third.read
        assert board3.cards == reopened.cards


def test_a_card_kept_in_the_log_is_the_same_card() -> None:
    make = EventFactory(run_id="r")
    events = [
        make.text_delta("hello\nworld"),
        make.tool_call("t1", "Bash", {"command": "ls"}),
        make.error("boom", code="interrupted"),
        *make.finish("error"),
        make.text_delta("after"),
    ]
    card = project("k", events)
    assert card.open_tool_calls == () and card.after_done == 1
    assert card_from_cache(card_to_cache(card)) == card
    running = project("k", events[:2])
    assert running.open_tool_calls == ("t1",)
    assert card_from_cache(card_to_cache(running)) == running
    other_column = card_to_cache(card).replace('"column":"interrupted"', '"column":"x"')
    for bad in ("", "[]", '{"v": 99}', '{"v": 1}', "{not json", other_column):
        assert card_from_cache(bad) is None


async def test_the_card_keeper_keeps_only_cards_that_saw_every_event(tmp_path: Path) -> None:
    """``ringleader run``'s sink beside the log: it folds each run's card as the events are
    delivered and keeps it in the log at the end, covering the run's last event — unless it
    missed an event the log holds (that run is left to the board)."""
    from orchestrator.board.cards import CardKeeper
    from orchestrator.engine.feed import RecordingSink

    make_a, make_b = EventFactory(run_id="ra"), EventFactory(run_id="rb")
    a = [make_a.text_delta("one\n"), *make_a.finish("success")]
    b = [make_b.text_delta("two\n"), *make_b.finish("success")]
    async with EventLog.open(tmp_path / "events.db") as log:
        keeper = CardKeeper()
        sink = RecordingSink(log, extra=[keeper])
        await sink.deliver("a", a)
        await sink.deliver("b", b[:1])
        await log.append("b", b[1:])  # an event the keeper never saw
        assert await keeper.keep(log) == 1
        kept = {c.run_key: c for c in await log.run_cards()}
        assert kept["a"].card_gid == kept["a"].last_gid and kept["b"].card is None
        assert card_from_cache(kept["a"].card or "") == project("a", a)
        counting = CountingLog(log)
        board = await read_board(counting)  # pyright: ignore[reportArgumentType]
        assert [key for key, n in counting.read if n] == ["b"]
        assert board.cards == {"a": project("a", a), "b": project("b", b)}


def test_ringleader_run_keeps_its_runs_cards(tmp_path: Path, monkeypatch: Any) -> None:
    """After ``ringleader run``, the board that opens reads none of the run's events."""
    import io

    from orchestrator.cli.main import main

    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert main(["run", "--runtime", "scripted", "--json", "say hi"]) == 0

    async def reopen() -> tuple[list[tuple[str | None, int]], Board, list[RuntimeEvent]]:
        async with EventLog.open(tmp_path / "state" / "events.db") as log:
            counting = CountingLog(log)
            board = await read_board(counting)  # pyright: ignore[reportArgumentType]
            [key] = board.cards
            return counting.read, board, await log.read(key)

    read, board, events = trio.run(reopen)
    [(key, card)] = board.cards.items()
    assert [n for _, n in read] == [0] and card == project(key, events)
    assert card.column == "done" and card.events == len(events) > 2


async def test_a_served_board_keeps_the_cards_of_the_runs_that_end(tmp_path: Path) -> None:
    """A board kept up to date while runs end (``serve``, ``run --board``) keeps their cards:
    the next board reads none of their events."""
    make = EventFactory(run_id="r")
    async with EventLog.open(tmp_path / "events.db") as log:
        await log.start_run("a", runtime_id="scripted", session_key="s")
        first = [make.text_delta("working\n")]
        await log.append("a", first)
        board = await read_board(log)
        rest = [make.text_delta("more\n"), *make.finish("success")]
        await log.append("a", rest)
        await read_board(log, board=board)
        counting = CountingLog(log)
        again = await read_board(counting)  # pyright: ignore[reportArgumentType]
        assert [n for _, n in counting.read] == [0]
        assert again.cards == board.cards == {"a": project("a", first + rest)}


async def test_the_run_page_starts_from_the_runs_last_events(tmp_path: Path) -> None:
    """``GET /run-tail``: the run's last N events, its card over all of them (what the page
    shows without replaying the run), how many came before, and the cursor to follow from."""
    import json

    import httpx2

    from orchestrator.board.server import board_app
    from orchestrator.engine.feed import Feed

    make = EventFactory(run_id="r")
    events = [make.text_delta(f"line {i}\n") for i in range(30)] + make.finish("success")
    async with EventLog.open(tmp_path / "events.db") as log:
        await log.start_run("a", runtime_id="scripted", session_key="s")
        await log.start_run("quiet", runtime_id="scripted", session_key="s2")
        await log.append("a", events)
        transport = httpx2.ASGITransport(app=board_app(Feed(), log, token="tok"))
        async with httpx2.AsyncClient(
            transport=transport,
            base_url="http://127.0.0.1",
            headers={"authorization": "Bearer tok"},
        ) as client:
            got = (await client.get("/run-tail", params={"run": "a", "limit": 5})).json()
            none = (await client.get("/run-tail", params={"run": "quiet"})).json()
            missing = await client.get("/run-tail", params={"run": "nope"})
            bad = await client.get("/run-tail", params={"run": "a", "limit": "x"})
        last = await log.last_gid()
    assert got["card"] == project("a", events).to_json()
    assert got["earlier"] == len(events) - 5 and got["cursor"] == last
    assert [e["event"] for e in got["events"]] == [
        json.loads(event_to_json(e)) for e in events[-5:]
    ]
    assert [e["gid"] for e in got["events"]] == list(range(last - 4, last + 1))
    assert none == {"card": Card("quiet").to_json(), "earlier": 0, "cursor": 0, "events": []}
    assert missing.status_code == 404 and bad.status_code == 400
