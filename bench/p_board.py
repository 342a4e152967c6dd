"""Path 15: the board at scale — 1,000 runs and 5,000 events/s into the served page, in Chromium
(Playwright), the way tests/board/test_board_browser.py drives it.

The server is a child process (``bench/board_feed.py``: the real board app over a fresh event log
holding 1,000 started runs and one finished run of 100,000 events). The page is loaded with
instruments added before its own scripts run: a long-task observer (``PerformanceObserver``,
``longtask``), a ``requestAnimationFrame`` loop recording every frame's interval, and a wrapper
around ``EventSource`` listeners recording each event's lag (receipt − the event's ``ts``, both
wall-clock epoch ms on this machine) before the page's own handler runs.

Measured, in the same run:

* **first paint**: from ``goto`` to every one of the 1,000 cards in the DOM (and the browser's
  first contentful paint); the finished run's card is kept in the log as ``ringleader run``
  keeps it (``--keep-cards``): a log with no card kept is row 15c's reference;
* **frames** while idle (the reference: the same page, nothing streaming) and while the server
  streams 5,000 events/s for the window: frame interval p50 / p99 / max, long tasks (count, the
  longest), event lag p50 / p99, the JS heap and DOM node count after;
* **the run page of a run with 100,000 events**: from ``goto`` to its ``done`` marker.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._core import Config, Figure, Row, Target, path

REPO = Path(__file__).resolve().parent.parent

INSTRUMENTS = """
(() => {
  window.__long = [];
  window.__frames = [];
  window.__lags = [];
  window.__measure = false;
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__long.push([e.startTime, e.duration]);
    }).observe({ type: "longtask", buffered: true });
  } catch (e) {}
  let last = 0;
  const frame = (t) => {
    if (window.__measure && last) window.__frames.push(t - last);
    last = t;
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  const add = EventSource.prototype.addEventListener;
  const ts = /"ts":(\\d+)/;
  EventSource.prototype.addEventListener = function (kind, fn, opts) {
    if (typeof fn !== "function" || kind === "open" || kind === "error")
      return add.call(this, kind, fn, opts);
    return add.call(this, kind, function (e) {
      if (window.__measure) {
        const m = ts.exec(e.data);
        if (m) window.__lags.push(Date.now() - Number(m[1]));
      }
      return fn.call(this, e);
    }, opts);
  };
})();
"""


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return float(s[min(len(s) - 1, int(q * len(s)))])


def _chromium() -> str | None:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _read(proc: subprocess.Popen[str], prefix: str, timeout_s: float) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"board_feed ended: {err[-400:]}")
        if line.startswith(prefix + " ") or line.strip() == prefix:
            return line.strip()[len(prefix) + 1 :]
    raise RuntimeError(f"board_feed: no {prefix!r} line within {timeout_s} s")


def _window(page: Any, seconds: float) -> dict[str, Any]:
    page.evaluate("() => { window.__frames = []; window.__lags = []; window.__measure = true; }")
    t0 = page.evaluate("() => performance.now()")
    time.sleep(seconds)
    page.evaluate("() => { window.__measure = false; }")
    frames = page.evaluate("() => window.__frames")
    lags = page.evaluate("() => window.__lags")
    longs = [d for start, d in page.evaluate("() => window.__long") if start >= t0]
    return {"frames": frames, "lags": lags, "long": longs}


@path("board-scale", "the board at 1,000 runs and 5,000 events/s", timeout_s=600)
def board_scale(cfg: Config) -> list[Row]:
    runs = 50 if cfg.smoke else 1000
    rate = 200.0 if cfg.smoke else 5000.0
    seconds = 2.0 if cfg.smoke else 15.0
    big = 2_000 if cfg.smoke else 100_000
    title = f"15. board, {runs:,} runs + {rate:,.0f} events/s"
    paint = Row(
        "board-first-paint",
        f"{title}: load → every card in the DOM",
        "ms",
        "lower",
        Target("< 1 s (#37)", "max", 1000.0),
    )
    frames = Row(
        "board-frames",
        f"{title}: longest frame while streaming",
        "ms",
        "lower",
        Target("no main-thread task > 100 ms (#37)", "max", 100.0),
    )
    lag = Row(
        "board-lag",
        f"{title}: event lag creation → page handler, p99",
        "ms",
        "lower",
    )
    run_page = Row(
        "board-run-page",
        f"15b. run page of a run with {big:,} events: load → done shown",
        "ms",
        "lower",
        Target("< 1 s (#37)", "max", 1000.0),
    )
    rows = [paint, frames, lag, run_page]
    chromium = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if chromium is None or sync_playwright is None:
        why = (
            "chromium not installed (scripts/install-chromium)"
            if chromium is None
            else ("playwright is not installed (the dev extra)")
        )
        for row in rows:
            row.not_built = why
        return rows
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.board_feed", "--runs", str(runs), "--rate", str(rate),
         "--seconds", str(seconds), "--big", str(big), "--keep-cards"],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    got: dict[str, Any] = {}
    try:
        url = _read(proc, "url", 300)
        big_key = _read(proc, "big", 10)
        with (
            tempfile.TemporaryDirectory(prefix="ringleader-bench-chromium-") as profile,
            sync_playwright() as pw,
        ):
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=chromium,
                headless=True,
                args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                      "--disable-background-networking", "--disable-component-update"],
                viewport={"width": 1440, "height": 900},
            )  # fmt: skip
            try:
                page = context.new_page()
                page.add_init_script(INSTRUMENTS)
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_function(
                    f"() => document.querySelectorAll('article.card').length >= {runs}",
                    timeout=120_000,
                )
                got["paint_ms"] = (time.perf_counter() - t0) * 1000
                got["fcp_ms"] = page.evaluate(
                    "() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0"
                )
                page.wait_for_selector('#conn[data-state="live"]', timeout=60_000)
                got["idle"] = _window(page, min(3.0, seconds))
                heap0 = page.evaluate("() => (performance.memory || {}).usedJSHeapSize || 0")
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
                got["busy"] = _window(page, seconds)
                sent = _read(proc, "sent", 300).split()
                got["sent"], got["sent_s"] = int(sent[0]), float(sent[1])
                page.wait_for_function(
                    f"() => document.querySelectorAll('[data-column=\"done\"] article.card').length >= {runs}",
                    timeout=300_000,
                )
                got["heap_before"] = heap0
                got["heap_after"] = page.evaluate(
                    "() => (performance.memory || {}).usedJSHeapSize || 0"
                )
                got["dom_nodes"] = page.evaluate("() => document.getElementsByTagName('*').length")
                got["long_total"] = page.evaluate("() => window.__long.length")
                # the run page of the long run
                run_url = url.replace("/#", f"/run/{big_key}#")
                t1 = time.perf_counter()
                page.goto(run_url)
                page.wait_for_selector('[data-testid="done"]', timeout=120_000)
                got["run_page_ms"] = (time.perf_counter() - t1) * 1000
            finally:
                context.close()
    finally:
        with contextlib.suppress(Exception):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    idle, busy = got["idle"], got["busy"]
    paint.ours = Figure("every card shown", got["paint_ms"], "ms", "lower", [got["paint_ms"]])
    paint.peers.append(
        Figure("first contentful paint", got["fcp_ms"], "ms", "lower", [got["fcp_ms"]])
    )
    bf, idf = busy["frames"], idle["frames"]
    longest = max(busy["long"], default=0.0)
    # a main-thread task over 100 ms shows as a frame over 100 ms: the longest frame is judged
    # (never 0, unlike the long-task list when there were none), the longest task beside it
    frames.ours = Figure(
        "longest frame streaming", max(bf, default=0.0), "ms", "lower", [max(bf, default=0.0)]
    )
    frames.limit = Figure(
        "longest frame idle", max(idf, default=0.0), "ms", "lower", [max(idf, default=0.0)]
    )
    frames.peers.append(
        Figure(
            "longest long task",
            longest,
            "ms",
            "lower",
            [longest],
            note="none over 50 ms" if not longest else None,
        )
    )
    frames.peers.append(
        Figure("frame p99 streaming", _pct(bf, 0.99), "ms", "lower", [_pct(bf, 0.99)])
    )
    lags = busy["lags"]
    if lags:
        lag.ours = Figure("lag p99", _pct(lags, 0.99), "ms", "lower", [_pct(lags, 0.99)])
        lag.peers.append(Figure("lag p50", _pct(lags, 0.5), "ms", "lower", [_pct(lags, 0.5)]))
        lag.peers.append(Figure("lag max", max(lags), "ms", "lower", [max(lags)]))
    else:
        lag.not_built = "the page received no event in the window"
    run_page.ours = Figure("run page", got["run_page_ms"], "ms", "lower", [got["run_page_ms"]])
    rate_sent = got["sent"] / got["sent_s"] if got["sent_s"] else 0
    note = (
        f"server sent {got['sent']:,} events in {got['sent_s']:.1f} s ({rate_sent:,.0f}/s); page "
        f"received {len(lags):,} in the {seconds:.0f} s window; frames idle p50 "
        f"{_pct(idf, 0.5):.0f} / p99 {_pct(idf, 0.99):.0f} ms, streaming p50 {_pct(bf, 0.5):.0f} / "
        f"p99 {_pct(bf, 0.99):.0f} / max {max(bf, default=0):.0f} ms over {len(bf)} frames "
        f"({len(bf) / seconds:.0f} fps); long tasks while streaming {len(busy['long'])} (longest "
        f"{longest:.0f} ms; idle: {len(idle['long'])}); JS heap {got['heap_before'] / 2**20:.0f} → "
        f"{got['heap_after'] / 2**20:.0f} MiB, {got['dom_nodes']:,} DOM nodes after; load "
        f"average {os.getloadavg()[0]:.1f}"
        + (f"; lag p50 {statistics.median(lags):.0f} ms" if lags else "")
    )
    for row in rows:
        row.notes.append(note)
    paint.extra = {k: v for k, v in got.items() if k not in ("idle", "busy")}
    frames.extra = {"busy_long": busy["long"], "idle_long": idle["long"]}
    return rows
