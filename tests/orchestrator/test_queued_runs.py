"""A run waiting for a free slot under its runtime's ``max_runs`` is shown as queued, with its
reason (issue 34 item 7): on the board (``GET /board``'s projection of the log, another
process's board included), in the CLI's live view, and it is one run — the same run key goes
on to run — that ends in exactly one ``done`` whatever happens while it waits."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import trio
from rich.console import Console

from adapters import ScriptedAdapter
from orchestrator.board.projection import Board, project
from orchestrator.board.server import read_board
from orchestrator.cli.live import PlainView
from orchestrator.core import RuntimeRegistry, StartOpts
from orchestrator.core.events import RuntimeEvent
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import RecordingSink
from orchestrator.engine.hosts.local import LocalHost, TaskRef
from tests.clock import held

REASON = "at most 1 scripted run at once (max_runs)"


def slow(opts: StartOpts) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": "working\n"},
        {"type": "sleep", "seconds": 100},
        {"type": "result", "ok": True, "summary": "ok"},
    ]


def limited() -> RuntimeRegistry:
    registry = RuntimeRegistry()
    registry.register_factory("scripted", lambda: ScriptedAdapter(slow))
    registry.set_limit("scripted", 1)
    return registry


async def submit_waiting(host: LocalHost, task_id: str, clock: trio.testing.MockClock) -> TaskRef:
    """Submit a task over the limit; returns once it is told it waits.

    The clock is held meanwhile: the task makes its state directory on a worker thread before it
    asks for a slot, and an autojump then would run the first run's 100 s — its slot would be
    free, and the task would never wait. Should it start without waiting all the same, this
    fails at once rather than waiting for ever."""
    told = trio.Event()
    with held(clock):
        ref = host.submit("scripted", TaskSpec(task_id=task_id, title=task_id))
        ref.on_wait = lambda _reason: told.set()
        async with trio.open_nursery() as nursery:

            async def unless_it_starts() -> None:
                await ref.started()
                told.set()

            nursery.start_soon(unless_it_starts)
            await told.wait()
            nursery.cancel_scope.cancel()
    assert ref.waiting == REASON, "the task started without waiting for a slot"
    return ref


async def test_a_run_waiting_for_a_slot_is_a_queued_card_with_its_reason(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with EventLog.open(tmp_path / "events.db") as log:
        runner = Runner(
            limited(), sink=RecordingSink(log), state_dir=tmp_path / "state", event_log=log
        )
        async with LocalHost(runner) as host:
            first = host.submit("scripted", TaskSpec(task_id="a", title="first"))
            await first.started()
            second = await submit_waiting(host, "b", autojump_clock)
            # the clock stands still while the board is read on a worker thread (an autojump
            # would run the first run's 100 s meanwhile); it jumps again to let the runs end
            with held(autojump_clock):
                board = await read_board(log)
            waiting = [
                c for c in board.cards.values() if c.run_key.startswith("runtime:scripted:task:b:")
            ]
            assert len(waiting) == 1, board.cards
            card = waiting[0]
            assert card.column == "queued" and card.phase == "queued"
            assert card.waiting_for == REASON
            assert card.to_json()["waitingFor"] == REASON
            queued_key = card.run_key
            assert (await first.outcome()).status == "success"
            outcome = await second.outcome()
        assert outcome.status == "success"
        assert outcome.runs[0].outcome.run_key == queued_key  # one run: queued, then ran
        board = await read_board(log)
        cards = [
            c for c in board.cards.values() if c.run_key.startswith("runtime:scripted:task:b:")
        ]
        assert [c.run_key for c in cards] == [queued_key]
        assert cards[0].column == "done" and cards[0].waiting_for is None
        events = [
            item.event for item in await log.read_since(0, limit=1000) if item.run_key == queued_key
        ]
        assert [e.seq for e in events] == list(range(1, len(events) + 1))  # gapless
        assert [e.kind for e in events].count("done") == 1


async def test_a_queued_run_aborted_while_it_waits_ends_aborted_at_once(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with EventLog.open(tmp_path / "events.db") as log:
        runner = Runner(
            limited(), sink=RecordingSink(log), state_dir=tmp_path / "state", event_log=log
        )
        async with LocalHost(runner) as host:
            first = host.submit("scripted", TaskSpec(task_id="a", title="first"))
            await first.started()
            second = await submit_waiting(host, "b", autojump_clock)
            before = trio.current_time()
            second.abort()
            outcome = await second.outcome()
            assert trio.current_time() - before < 1  # not after the first run's 100 s
            assert not first.finished
        assert outcome.status == "aborted"
        board = await read_board(log)
        cards = [
            c for c in board.cards.values() if c.run_key.startswith("runtime:scripted:task:b:")
        ]
        assert [c.column for c in cards] == ["aborted"]


async def test_a_queued_run_cancelled_with_its_host_is_not_left_queued(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with EventLog.open(tmp_path / "events.db") as log:
        runner = Runner(
            limited(), sink=RecordingSink(log), state_dir=tmp_path / "state", event_log=log
        )
        with trio.CancelScope() as scope:
            async with LocalHost(runner) as host:
                first = host.submit("scripted", TaskSpec(task_id="a", title="first"))
                await first.started()
                await submit_waiting(host, "b", autojump_clock)
                scope.cancel()  # Ctrl-C, a server shutting down
                await trio.sleep_forever()
        board = await read_board(log)
        cards = [
            c for c in board.cards.values() if c.run_key.startswith("runtime:scripted:task:b:")
        ]
        assert cards and all(c.terminal for c in cards), cards


async def test_the_live_view_shows_a_waiting_run_as_queued_with_its_reason(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    out = io.StringIO()
    view = PlainView(console=Console(file=out, width=200))
    lane_a = view.add_lane("a", "scripted", "runtime:scripted:task:a")
    lane_b = view.add_lane("b", "scripted", "runtime:scripted:task:b")
    runner = Runner(limited(), sink=view, state_dir=tmp_path / "state")
    async with LocalHost(runner) as host:
        first = host.submit("scripted", TaskSpec(task_id="a", title="first"))
        await first.started()
        second = await submit_waiting(host, "b", autojump_clock)
        await trio.sleep(0.01)
        assert lane_b.phase == f"queued: {REASON}"
        assert lane_b.first_event is None  # waiting is not the run's first output
        await second.outcome()
    assert lane_a.outcome == lane_b.outcome == "success"
    lines = out.getvalue().splitlines()
    assert any(f"[b] · queued ({REASON})" in line for line in lines), lines


def test_the_projection_keeps_a_queued_status_in_the_queued_column() -> None:
    from orchestrator.core.events import EventFactory

    make = EventFactory(run_id="")
    queued = make.status("queued", detail=REASON)
    card = project("k", [queued])
    assert (card.column, card.phase, card.waiting_for) == ("queued", "queued", REASON)
    running = project("k", [queued, make.status("init", model="m")])
    assert (running.column, running.waiting_for) == ("running", None)
    board = Board()
    board.add_run("k")
    events: list[RuntimeEvent] = [queued]
    assert project("k", events).column == "queued"
