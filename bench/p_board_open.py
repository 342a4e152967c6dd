"""Path 15c: opening the board on a typical state directory — ``GET /board``'s projection of an
event log of a few hundred finished runs, in a new process (a fresh :class:`Board`, a fresh log
handle), the first time and again.

The log: ``RUNS`` runs (300; 20 in ``--smoke``), each as a streaming CLI run looks — an ``init``
status, ``DELTAS`` text deltas of a few characters (400), five tool calls with their results, a
``cost`` and ``done`` — appended through :class:`~orchestrator.engine.eventlog.EventLog` one
event per append, as an adapter publishes. A pass opens the log and runs the board's
:func:`~orchestrator.board.server.read_board` on a new board, timed from the open to the board.

* **ours**: a reopen — the board kept each run's card in the log (``run_cards``) at its last
  open, so it reads no event of a run that ended before;
* **limit** (the reference, same run): the first open — no card kept (the table emptied
  before each pass), every event of every run folded, which is what every open did before
  the cards were kept (issue 37).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from pathlib import Path

from ._core import Config, Row, Target, figure, path

UNIT = "ms"


def _fill(db: Path, runs: int, deltas: int) -> int:
    import trio

    from orchestrator.core.events import EventFactory, RuntimeEvent, Usage
    from orchestrator.engine.eventlog import EventLog

    async def main() -> int:
        total = 0
        async with EventLog.open(db) as log:
            for r in range(runs):
                key = f"runtime:claude-code:task:{r:08x}:run-{r:08x}"
                await log.start_run(key, runtime_id="claude-code", session_key=key)
                make = EventFactory(run_id=f"run-{r}", session_id=key)
                events: list[RuntimeEvent] = [make.status("init", model="m")]
                for i in range(deltas):
                    events.append(make.text_delta(f"tok{i % 97} " + ("\n" if i % 40 == 39 else "")))
                    if i % (deltas // 5) == 0:
                        call = f"call-{r}-{i}"
                        events.append(make.tool_call(call, "Bash", {"command": f"ls {i}"}))
                        events.append(make.tool_result(call, "a\nb\n"))
                usage = Usage(input_tokens=1000 + r, output_tokens=deltas)
                events.append(make.cost(usage, cost_usd=0.01))
                events += make.finish("success", "ok", usage=usage, cost_usd=0.01)
                for event in events:
                    await log.append(key, [event])
                await log.finish_run(key, status="success", outcome={"title": f"task {r}"})
                total += len(events)
        return total

    return trio.run(main)


def _open_board(db: Path) -> tuple[float, int]:
    """Open the log and project the board on a new Board: (ms, cards)."""
    import trio

    from orchestrator.board.server import read_board
    from orchestrator.engine.eventlog import EventLog

    async def main() -> tuple[float, int]:
        t0 = time.perf_counter()
        async with EventLog.open(db) as log:
            board = await read_board(log)
            ms = (time.perf_counter() - t0) * 1000
        return ms, len(board.cards)

    return trio.run(main)


def _forget_cards(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute("DELETE FROM run_cards")
        conn.commit()
    finally:
        conn.close()


@path("board-open", "opening the board on a few hundred finished runs", timeout_s=600)
def board_open(cfg: Config) -> list[Row]:
    runs = 20 if cfg.smoke else 300
    deltas = 40 if cfg.smoke else 400
    row = Row(
        "board-open",
        f"15c. board opened on {runs} finished runs (~{deltas} events each): log open → board",
        UNIT,
        "lower",
        Target("< 1 s (#37: the board's first paint)", "max", 1000.0),
    )
    ours: list[float] = []
    first: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ringleader-bench-board-open-") as tmp:
        db = Path(tmp) / "events.db"
        events = _fill(db, runs, deltas)
        _open_board(db)  # warm: the first open of a log also checkpoints it
        for i in range(cfg.warmup + cfg.min_passes):
            # interleaved, the order swapped each pass (load drift weighs on both)
            order = ("first", "again") if i % 2 == 0 else ("again", "first")
            got: dict[str, float] = {}
            for which in order:
                if which == "first":
                    _forget_cards(db)
                    got["first"], cards = _open_board(db)
                    assert cards == runs, cards
                else:
                    _open_board(db)  # the cards kept (a first open before this one)
                    got["again"], cards = _open_board(db)
                    assert cards == runs, cards
            if i >= cfg.warmup:
                first.append(got["first"])
                ours.append(got["again"])
    row.ours = figure("reopen (cards kept)", ours, UNIT, "lower")
    row.limit = figure("first open (every event folded)", first, UNIT, "lower")
    row.notes.append(
        f"{runs} runs, {events:,} events; best reopen {min(ours):.0f} ms, best first open "
        f"{min(first):.0f} ms; load average {os.getloadavg()[0]:.1f}"
    )
    row.extra = {"runs": runs, "events": events}
    return [row]
