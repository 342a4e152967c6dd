"""The served board under load, for path 15 (``bench/p_board.py``): a child process.

``python -m bench.board_feed --runs N --rate R --seconds S [--big B]``: a fresh event log with N
runs already started (a status and a first line each) and, with ``--big``, one finished run of B
events; the real board (``orchestrator.board.server.board_app`` over a ``Feed`` attached to the
log, served by ``serve_feed``, as ``run --board`` serves it) on 127.0.0.1. It prints
``url <page url with the token>`` and ``big <run key>``, then waits for a line ``go`` on stdin and
appends R events a second for S seconds, spread over the N runs (text deltas, one append per
event as an adapter publishes; the schedule catches up when a tick runs late), ends every run
(``done``), prints ``sent <events> <seconds>`` and waits for stdin to close.

``--keep-cards``: the finished run's card is kept in the log as ``ringleader run`` keeps the
cards of the runs it ran (:class:`~orchestrator.board.cards.CardKeeper`), so the board opens on
the log such a run leaves; without it, the log has no card kept (a board folds every event).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import trio


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=5000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--big", type=int, default=0)
    parser.add_argument("--keep-cards", action="store_true")
    args = parser.parse_args()

    from orchestrator.board.cards import CardKeeper
    from orchestrator.board.server import board_app
    from orchestrator.core.events import EventFactory, RuntimeEvent
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.feed import Feed, new_token, serve_feed

    words = ["the ", "file ", "test ", "module ", "passes ", "now; ", "next ", "step\n"]

    async def run(state: Path) -> None:
        lines = _Lines(trio.lowlevel.FdStream(sys.stdin.fileno()))
        async with EventLog.open(state / "events.db") as log:
            keys = [f"runtime:scripted:task:{i:08x}:run-{i:08x}" for i in range(args.runs)]
            makes: list[EventFactory] = []
            for i, key in enumerate(keys):
                await log.start_run(key, runtime_id="scripted", session_key=key.rsplit(":", 1)[0])
                make = EventFactory(run_id=f"r{i}", session_id=key.rsplit(":", 1)[0])
                makes.append(make)
                await log.append(
                    key,
                    [
                        make.status("init", model="scripted-model"),
                        make.text_delta(f"run {i} started\n"),
                    ],
                )
            big_key = ""
            if args.big:
                big_key = "runtime:scripted:task:b16b16b1:run-b16b16b1"
                await log.start_run(big_key, runtime_id="scripted", session_key=big_key[:-13])
                make = EventFactory(run_id="big", session_id=big_key[:-13])
                batch: list[RuntimeEvent] = [make.status("init", model="scripted-model")]
                keeper = CardKeeper()
                for j in range(args.big - 2):
                    batch.append(make.text_delta(words[j % len(words)]))
                    if len(batch) >= 5000:
                        await log.append(big_key, batch)
                        await keeper.deliver(big_key, batch)
                        batch = []
                batch += make.finish("success", "done")
                await log.append(big_key, batch[: len(batch)])
                await keeper.deliver(big_key, batch)
                await log.finish_run(big_key, status="success", outcome={"title": "a long run"})
                if args.keep_cards:
                    await keeper.keep(log)
            feed = Feed()
            feed.attach(log)
            token = new_token()
            app = board_app(feed, log, token=token)
            async with serve_feed(
                feed, log, host="127.0.0.1", port=0, token=token, app=app
            ) as served:
                print(f"url {served.url}/#token={token}", flush=True)
                print(f"big {big_key}", flush=True)
                while (await lines.receive()) != "go":
                    pass
                total = int(args.rate * args.seconds)
                tick = 0.01
                per_tick = args.rate * tick
                sent = 0
                t0 = trio.current_time()
                owed = 0.0
                i = 0
                async with trio.open_nursery() as nursery:

                    async def one(key: str, event: RuntimeEvent) -> None:
                        await log.append(key, [event])

                    while sent < total:
                        owed = min(total, (trio.current_time() - t0) / tick * per_tick + per_tick)
                        while sent < owed:
                            k = i % len(keys)
                            nursery.start_soon(
                                one, keys[k], makes[k].text_delta(words[sent % len(words)])
                            )
                            sent += 1
                            i += 1
                        await trio.sleep(tick)
                took = trio.current_time() - t0
                for key, make in zip(keys, makes, strict=True):
                    await log.append(key, make.finish("success", "ok"))
                    await log.finish_run(key, status="success", outcome={"status": "success"})
                print(f"sent {sent} {took:.3f}", flush=True)
                while True:
                    try:
                        await lines.receive()
                    except trio.EndOfChannel:
                        break
                feed.close()
                log.remove_listener(feed)

    with tempfile.TemporaryDirectory(prefix="ringleader-bench-board-") as tmp:
        trio.run(run, Path(tmp))
    return 0


class _Lines:
    """stdin's lines, read on demand."""

    def __init__(self, stream: trio.lowlevel.FdStream) -> None:
        self.stream = stream
        self.buf = b""

    async def receive(self) -> str:
        while b"\n" not in self.buf:
            chunk = await self.stream.receive_some(4096)
            if not chunk:
                raise trio.EndOfChannel
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode().strip()


if __name__ == "__main__":
    raise SystemExit(main())
