"""Path 9d: the start of ``ringleader run`` — what a person waits for before anything runs.

Two commands, each a fresh process (cold) in a git repository of 200 files, with an empty user
config and a fresh state directory per pass:

* ``ringleader run --runtime scripted --json PROMPT``, spawn to exit: the command's own cost (the
  scripted runtime answers at once, in-process); its CPU milliseconds are noted;
* ``ringleader run --runtime native --model-server --json PROMPT``, spawn to the first JSON line:
  the native runtime on the default (Anthropic) provider against the built-in model server —
  the model SDK's import is part of it.

The limit is the same interpreter's bare start (``python -c pass``), in the same passes. With
``RINGLEADER_BENCH_BEFORE`` naming a checkout of an earlier tree, the same commands run from it
too (``PYTHONPATH``, this interpreter and its installed dependencies), interleaved pass for pass
with ours, as peers: the before and after of a change, measured under the same load.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._core import Config, Row, figure, path
from .p_cli_start import ringleader_argv
from .p_side_start import _repo  # pyright: ignore[reportPrivateUsage]

UNIT = "ms"
BEFORE_ENV = "RINGLEADER_BENCH_BEFORE"


def _to_exit(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall ms from spawn to exit, and the CPU ms of the process tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr[-400:]!r}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def _to_first_line(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall ms from spawn to the first JSON line on stdout; the command then runs to its end."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    first: float | None = None
    assert proc.stdout is not None
    for raw in proc.stdout:
        if first is None and raw.startswith(b"{"):
            first = (time.perf_counter() - t0) * 1000
    err = proc.stderr.read() if proc.stderr else b""
    if proc.wait(timeout=240) != 0 or first is None:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {err[-400:]!r}")
    return first


@path("run-start", "ringleader run: spawn → exit (scripted), → first event (native)", timeout_s=900)
def run_start(cfg: Config) -> list[Row]:
    scripted = Row(
        "run-start-scripted",
        "9d. `ringleader run --runtime scripted` cold: spawn → exit (the command's own cost)",
        UNIT,
        "lower",
    )
    native = Row(
        "run-start-native",
        "9e. `ringleader run --runtime native --model-server` cold: spawn → first event",
        UNIT,
        "lower",
    )
    before_tree = os.environ.get(BEFORE_ENV)
    ours_argv = [*ringleader_argv(), "run", "--json"]
    before_argv = [sys.executable, "-m", "orchestrator.cli", "run", "--json"]
    bare = [sys.executable, "-c", "pass"]
    got: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        got.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory(prefix="ringleader-bench-run-start-") as tmpdir:
        tmp = Path(tmpdir)
        repo = _repo(tmp, 200)
        base = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
        base |= {"XDG_CONFIG_HOME": str(tmp / "xdg"), "NO_COLOR": "1"}
        if "RINGLEADER_RUNTIMES_DIR" in os.environ:
            base["RINGLEADER_RUNTIMES_DIR"] = os.environ["RINGLEADER_RUNTIMES_DIR"]
        trees: list[tuple[str, list[str], dict[str, str]]] = [("ours", ours_argv, base)]
        if before_tree:
            env = base | {"PYTHONPATH": before_tree}
            trees.append(("before", before_argv, env))
        passes = cfg.min_passes
        for i in range(cfg.warmup + passes):
            order = trees if i % 2 == 0 else trees[::-1]
            for name, argv, env in order:
                env = env | {"RINGLEADER_STATE_DIR": str(tmp / f"state-{name}-{i}")}
                wall, cpu = _to_exit([*argv, "--runtime", "scripted", "say hi"], repo, env)
                if i >= cfg.warmup:
                    add(f"{name}-scripted", wall)
                    add(f"{name}-scripted-cpu", cpu)
                if cfg.smoke:  # the native runtime's SDK import: seconds a pass
                    continue
                first = _to_first_line(
                    [*argv, "--runtime", "native", "--model-server", "say hi"], repo, env
                )
                if i >= cfg.warmup:
                    add(f"{name}-native", first)
            if i >= cfg.warmup:
                add("bare", _to_exit(bare, repo, base)[0])
    load = os.getloadavg()[0]
    cpu = {name: statistics.median(got[f"{name}-scripted-cpu"]) for name, _, _ in trees}
    scripted.ours = figure(
        "ringleader run (scripted)",
        got["ours-scripted"],
        UNIT,
        "lower",
        f"CPU {cpu['ours']:.0f} ms",
    )
    for row in (scripted, native):
        row.limit = figure("python -c pass", got["bare"], UNIT, "lower")
    if cfg.smoke:
        native.not_built = "skipped in --smoke (seconds a pass: the model SDK's import)"
        native.limit = None
        return [scripted, native]
    native.ours = figure("ringleader run (native), first event", got["ours-native"], UNIT, "lower")
    if before_tree:
        scripted.peers.append(
            figure(
                "the tree before",
                got["before-scripted"],
                UNIT,
                "lower",
                f"CPU {cpu['before']:.0f} ms",
            )
        )
        native.peers.append(
            figure("the tree before, first event", got["before-native"], UNIT, "lower")
        )
    for row in (scripted, native):
        row.notes.append(
            f"load average {load:.1f}"
            + (f"; before: {before_tree}, interleaved pass for pass" if before_tree else "")
        )
    scripted.extra = {k: v for k, v in got.items() if "scripted" in k}
    native.extra = {k: v for k, v in got.items() if "native" in k}
    return [scripted, native]
