"""Path 14: the orchestrator's own cost per live CLI run — N real Claude Code runs and N real
Codex runs at once, against the scripted model server streaming steadily.

This worker is the orchestrator: a ``Runner`` over a ``RuntimeRegistry`` of the real
``ClaudeCodeAdapter`` and ``CodexAdapter`` (the installed CLIs, a fresh home per run), the durable
``EventLog`` (WAL, ``synchronous=NORMAL``), the ``RecordingSink`` publishing every committed event
to a ``Feed``, and one board-like subscriber draining it. The model server runs in its own
process; each run has its own conversation (a marker in the prompt): one turn whose answer streams
in small chunks with a pause between them (steady streaming, several seconds a run).

Over the window from the first submit to the last run's end (every CLI reaped):

* **CPU**: this process's CPU (``RUSAGE_SELF``: the trio thread, the log's database thread)
  against its children's (``RUSAGE_CHILDREN``: the CLIs and everything they spawned, reaped by
  then; the model server is not reaped until after the window). Target ≤ 5%.
* **Memory**: this process's resident set (``VmRSS``, sampled every 50 ms) at its peak minus
  before the window (after a warm-up run of each CLI, so imports are not counted), per live run.
  Target ≤ 1 MB a run.
* **Delivery**: for every event the subscriber receives, ``receipt − event.ts`` (``ts`` is
  stamped when the adapter normalizes the CLI's line), p50 and p99. Target p99 < 50 ms.

It stops by itself: every run ends when its stream does (a run still going after 240 s is
aborted, and the row says so).
"""

from __future__ import annotations

import array
import gc
import os
import resource
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ._core import Config, Figure, Row, Target, path
from .p_first_event import KEY
from .p_sessions import model_server

RUNTIMES = ("claude-code", "codex")
HELD = frozenset({"status", "cost", "done", "error"})
"""Kinds a CLI adapter holds by design before publishing: the start's status until the child is
ready, the terminal group (cost, error, done) until the process group is gone (adapters/_cli.py);
their ``ts`` is when they were made, so their delivery lag includes the CLI's exit."""


def _rss_kib() -> int:
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith(b"VmRSS:"):
                return int(line.split()[1])
    return 0


def _script(n: int, chunks: int, delay_s: float) -> dict[str, Any]:
    text = " ".join(f"word{i}" for i in range(chunks * 2))
    size = max(1, len(text) // chunks)
    return {
        "model": "claude-haiku-4-5",
        "conversations": [
            {
                "name": f"{rt}-{i}",
                "marker": f"[[ov:{rt}:{i}]]",
                "turns": [
                    {
                        "text": text,
                        "chunk_chars": size,
                        "chunk_delay_s": delay_s,
                        "usage": {"input_tokens": 300, "output_tokens": chunks * 2},
                    }
                ],
            }
            for rt in (*RUNTIMES, "warm")
            for i in range(n + 2)
        ],
    }


def _registry(url: str, state: Path) -> Any:
    from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig
    from adapters.codex import CodexAdapter, CodexConfig, CodexProvider
    from orchestrator.core.registry import RuntimeRegistry

    claude = ClaudeCodeConfig(
        model="claude-haiku-4-5", base_url=url, api_key=KEY, max_retries=0, state_root=state
    )
    provider = CodexProvider(
        base_url=f"{url}/v1", api_key=KEY, request_max_retries=0, stream_max_retries=0
    )
    codex = CodexConfig(provider=provider, model="gpt-5.5", state_root=state)
    registry = RuntimeRegistry()
    registry.register_factory("claude-code", lambda: ClaudeCodeAdapter(claude))
    registry.register_factory("codex", lambda: CodexAdapter(codex))
    return registry


def _measure(n: int, url: str, tmp: Path, state: Path) -> dict[str, Any]:
    import trio

    from orchestrator.core.events import now_ms
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.feed import Feed, RecordingSink
    from orchestrator.engine.runner import Runner, TaskSpec

    latencies = array.array("q")
    floor = array.array("d")
    streamed = array.array("q")
    late: dict[str, int] = {}
    late_seq: dict[int, int] = {}
    got: dict[str, Any] = {}
    cwd = tmp / "cwd"
    cwd.mkdir(exist_ok=True)

    async def main() -> None:
        registry = _registry(url, state)
        async with EventLog.open(tmp / "events.db") as log:
            feed = Feed()
            sink = RecordingSink(log, feed)
            sub = feed.subscribe()
            runner = Runner(registry, sink=sink, state_dir=tmp / "state", event_log=log)
            measuring = False
            statuses: list[str] = []
            live = 0
            peak_live = 0

            async def one(runtime: str, marker: str) -> None:
                nonlocal live, peak_live
                live += 1
                peak_live = max(peak_live, live)
                try:
                    with trio.move_on_after(240):
                        result = await runner.run_task(
                            runtime,
                            TaskSpec(
                                task_id=f"{runtime}-{uuid.uuid4().hex[:6]}",
                                title=f"{marker} say something long",
                                cwd=str(cwd),
                            ),
                        )
                        statuses.append(result.status)
                        return
                    statuses.append("timed out")
                finally:
                    live -= 1

            async def board() -> None:
                async for item in sub:
                    if measuring:
                        lat = now_ms() - item.event.ts
                        for _ in range(item.merged):
                            latencies.append(lat)
                            if item.kind not in HELD:
                                streamed.append(lat)
                        if lat > 50:
                            late[item.kind] = late.get(item.kind, 0) + 1
                            late_seq[min(item.seq, 10)] = late_seq.get(min(item.seq, 10), 0) + 1

            rss_peak = 0

            async def sample() -> None:
                nonlocal rss_peak
                while True:
                    rss_peak = max(rss_peak, _rss_kib())
                    await trio.sleep(0.05)

            async def lateness() -> None:
                # the floor: how late a bare trio sleep of 10 ms wakes in this process, in the
                # same window (what the machine's load alone costs any task here)
                while True:
                    t = time.perf_counter()
                    await trio.sleep(0.01)
                    if measuring:
                        floor.append((time.perf_counter() - t - 0.01) * 1000)

            async with trio.open_nursery() as outer:
                outer.start_soon(board)
                # warm-up: one run of each CLI (imports, first spawns), outside the window
                async with trio.open_nursery() as warm:
                    for runtime in RUNTIMES:
                        warm.start_soon(one, runtime, f"[[ov:warm:{RUNTIMES.index(runtime)}]]")
                warm_statuses = list(statuses)
                statuses.clear()
                gc.collect()
                await trio.sleep(0.2)
                rss_before = _rss_kib()
                rss_peak = rss_before
                outer.start_soon(sample)
                outer.start_soon(lateness)
                measuring = True
                self0 = resource.getrusage(resource.RUSAGE_SELF)
                kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                async with trio.open_nursery() as runs:
                    for i in range(n):
                        for runtime in RUNTIMES:
                            runs.start_soon(one, runtime, f"[[ov:{runtime}:{i}]]")
                wall = time.perf_counter() - t0
                self1 = resource.getrusage(resource.RUSAGE_SELF)
                kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                measuring = False
                outer.cancel_scope.cancel()
            got.update(
                self_cpu=self1.ru_utime - self0.ru_utime + self1.ru_stime - self0.ru_stime,
                kids_cpu=kids1.ru_utime - kids0.ru_utime + kids1.ru_stime - kids0.ru_stime,
                wall=wall,
                rss_before_kib=rss_before,
                rss_peak_kib=rss_peak,
                peak_live=peak_live,
                statuses=statuses,
                warm_statuses=warm_statuses,
                transactions=log.transactions,
            )

    trio.run(main)
    got["latencies"] = latencies
    got["floor"] = floor
    got["streamed"] = streamed
    got["late_by_kind"] = late
    got["late_by_seq"] = late_seq
    return got


def _missing() -> str | None:
    from adapters._runtimes import runtime_binary
    from orchestrator.core.errors import RuntimeNotFoundError

    for runtime in RUNTIMES:
        try:
            runtime_binary(runtime)
        except RuntimeNotFoundError as exc:
            return f"{runtime} not installed here ({exc.install_hint})"
    return None


@path("cli-overhead", "orchestrator overhead per live CLI run", timeout_s=600)
def cli_overhead(cfg: Config) -> list[Row]:
    n = 2 if cfg.smoke else 20
    chunks, delay = (6, 0.05) if cfg.smoke else (60, 0.25)
    title = f"14. {n} Claude Code + {n} Codex real runs at once (streaming): orchestrator"
    cpu = Row(
        "cli-overhead-cpu",
        f"{title} CPU / children's CPU",
        "%",
        "lower",
        Target("≤ 5% of the children's CPU (#37)", "max", 5.0),
    )
    rss = Row(
        "cli-overhead-rss",
        f"{title} RSS growth per live run",
        "MiB/run",
        "lower",
        Target("≤ 1 MB per live run (#37)", "max", 1.0),
    )
    p99 = Row(
        "cli-overhead-p99",
        f"{title} delivery p99 creation → subscriber",
        "ms",
        "lower",
        Target("p99 < 50 ms (#37)", "max", 50.0),
    )
    rows = [cpu, rss, p99]
    missing = _missing()
    if missing:
        for row in rows:
            row.not_built = missing
        return rows
    state = Path.home() / ".local" / "state" / "ringleader" / f"bench-{uuid.uuid4().hex[:8]}"
    state.mkdir(parents=True)
    load0 = os.getloadavg()[0]
    try:
        with tempfile.TemporaryDirectory(prefix="ringleader-bench-overhead-") as tmpdir:
            tmp = Path(tmpdir)
            with model_server(_script(n, chunks, delay), tmp) as url:
                got = _measure(n, url, tmp, state)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    lat = sorted(got["latencies"])
    share = 100.0 * got["self_cpu"] / got["kids_cpu"] if got["kids_cpu"] else 0.0
    growth = (got["rss_peak_kib"] - got["rss_before_kib"]) / 1024 / max(1, 2 * n)
    cpu.ours = Figure("orchestrator/children CPU", share, "%", "lower", [share])
    cpu.limit = Figure("children CPU", got["kids_cpu"], "s", "lower", [got["kids_cpu"]])
    cpu.peers.append(Figure("orchestrator CPU", got["self_cpu"], "s", "lower", [got["self_cpu"]]))
    rss.ours = Figure("RSS growth per run", growth, "MiB/run", "lower", [growth])
    rss.peers.append(
        Figure(
            "RSS before",
            got["rss_before_kib"] / 1024,
            "MiB",
            "lower",
            [got["rss_before_kib"] / 1024],
        )
    )
    rss.peers.append(
        Figure("RSS peak", got["rss_peak_kib"] / 1024, "MiB", "lower", [got["rss_peak_kib"] / 1024])
    )
    if lat:
        p99v = float(lat[min(len(lat) - 1, int(0.99 * len(lat)))])
        p50v = float(lat[len(lat) // 2])
        p99.ours = Figure("p99", p99v, "ms", "lower", [p99v])
        fl = sorted(got["floor"])
        if fl:
            fp99 = float(fl[min(len(fl) - 1, int(0.99 * len(fl)))])
            p99.limit = Figure(
                "trio sleep lateness p99", fp99, "ms", "lower", [fp99], note="the floor: load alone"
            )
        share_late = sum(1 for v in lat if v > 50) / len(lat)
        st = sorted(got["streamed"])
        st99 = float(st[min(len(st) - 1, int(0.99 * len(st)))]) if st else 0.0
        p99.peers.append(
            Figure(
                "p99 of streamed events",
                st99,
                "ms",
                "lower",
                [st99],
                note="every kind but the held ones (status, cost, error, done)",
            )
        )
        p99.extra = {
            "share_over_50ms": share_late,
            "floor_p50": fl[len(fl) // 2] if fl else None,
            "late_by_kind": got["late_by_kind"],
            "late_by_seq": got["late_by_seq"],
            "streamed_events": len(st),
        }
        p99.peers.append(Figure("p50", p50v, "ms", "lower", [p50v], note="(our own p50)"))
        p99.peers.append(Figure("max", float(lat[-1]), "ms", "lower", [float(lat[-1])]))
    else:
        p99.not_built = "no event was delivered"
    counts: dict[str, int] = {}
    for s in got["statuses"]:
        counts[s] = counts.get(s, 0) + 1
    note = (
        f"{2 * n} runs ({n} per CLI), at most {got['peak_live']} live; statuses {counts}; "
        f"wall {got['wall']:.1f} s; {len(lat):,} events delivered; CPU ours "
        f"{got['self_cpu']:.2f} s vs children {got['kids_cpu']:.2f} s; RSS "
        f"{got['rss_before_kib'] / 1024:.0f} → {got['rss_peak_kib'] / 1024:.0f} MiB; "
        f"{got['transactions']} log transactions; load average {load0:.1f} → "
        f"{os.getloadavg()[0]:.1f}" + (f"; p50 {statistics.median(lat):.0f} ms" if lat else "")
    )
    for row in rows:
        row.notes.append(note)
    cpu.extra = {k: v for k, v in got.items() if k not in ("latencies", "floor", "streamed")}
    return rows
