"""Path 6: time to the first event through ringleader vs the CLI's own first stdout line.

For each installed CLI, against the scripted model server (its own process), on the same argv and
environment the adapter uses:

* the limit — spawn the CLI directly (stdin on the null device) and time until its first stdout
  line; then kill its process group;
* ours — ``adapter.start()`` → ``adapter.events()`` → the first event; then ``abort`` and drain to
  ``done`` (outside the timing).

The two are interleaved, one of each per pass with the order swapped every pass, so load drift on
a shared machine weighs on both alike; 15 passes of each (a first line swings by ±30% from pass to
pass under load), and a note gives the median of the per-pass ratios too. Each attempt gets a fresh home (as the adapter gives each run) and its own conversation (a marker
in the prompt). Not-installed CLIs and missing adapters say so in their row.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._core import Config, Row, Target, failed, figure, path
from .p_sessions import model_server

if TYPE_CHECKING:
    from adapters.claude_code import ClaudeCodeAdapter
    from adapters.codex import CodexAdapter

UNIT = "ms"
KEY = "sk-bench-0000000000"


def _script(attempts: int) -> dict[str, Any]:
    return {
        "model": "gpt-5.5",
        "conversations": [
            {"name": f"a{i}", "marker": f"[[bench:{i}]]", "turns": [{"text": "FINAL: hi"}]}
            for i in range(attempts)
        ],
    }


def _first_line_ms(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        elapsed = (time.perf_counter() - t0) * 1000
        if not line:
            raise RuntimeError(f"{Path(argv[0]).name} wrote nothing")
        return elapsed
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _pairs(cfg: Config) -> int:
    """Passes of each figure. A CLI's first line swings by ±30% pass to pass on a shared machine
    (other processes' load), a few milliseconds of it ours: more than the usual passes, so that
    the two medians settle."""
    return cfg.min_passes if cfg.quick else max(cfg.min_passes, 15)


def _paired(row: Row, limit: list[float], ours: list[float]) -> Row:
    row.limit = figure("CLI's first line", limit, UNIT, "lower")
    row.ours = figure("ringleader first event", ours, UNIT, "lower")
    ratios = [o / t for o, t in zip(ours, limit, strict=True)]
    row.notes.append(
        f"median of the {len(ratios)} per-pass ratios (each pair measured back to back): "
        f"{statistics.median(ratios):.3f}×"
    )
    return row


async def _side_by_side(
    adapter: ClaudeCodeAdapter | CodexAdapter,
    direct: Callable[[], float],
    cfg: Config,
    next_marker: Callable[[], str],
) -> tuple[list[float], list[float]]:
    """(the CLI's first line, ours) in ms, one of each per pass, interleaved (the order swapped
    every pass) so that load drift on a shared machine weighs on both alike. Ours is
    ``start()`` → ``events()`` → the first event; then abort and drain to ``done`` (untimed)."""
    from orchestrator.core.adapter import StartOpts, TaskHandle
    from orchestrator.core.events import Done

    async def ours() -> float:
        t0 = time.perf_counter()
        run = await adapter.start(
            TaskHandle(),
            StartOpts(
                agent_id=adapter.id,
                session_key=f"bench:{uuid.uuid4().hex[:8]}",
                message=f"{next_marker()} hi",
            ),
        )
        elapsed = math.nan
        async with adapter.events(run) as events:
            async for event in events:
                if math.isnan(elapsed):
                    elapsed = (time.perf_counter() - t0) * 1000
                    await adapter.abort(run)
                if isinstance(event, Done):
                    break
        return elapsed

    limit: list[float] = []
    out: list[float] = []
    async with adapter:
        for i in range(cfg.warmup + _pairs(cfg)):
            if i % 2:
                theirs, mine = direct(), await ours()
            else:
                mine, theirs = await ours(), direct()
            if i >= cfg.warmup:
                limit.append(theirs)
                out.append(mine)
    return limit, out


# -- Codex ----------------------------------------------------------------------------------------


def _codex(cfg: Config, url: str, state: Path, next_marker: Callable[[], str]) -> Row:
    from adapters._runtimes import runtime_binary
    from orchestrator.core.errors import RuntimeNotFoundError

    row = Row(
        "first-event-codex",
        "6. time to first event, Codex exec (0.169.0)",
        UNIT,
        "lower",
        Target("≤ 1.05× the CLI's own first line", "max_ratio_to_limit", 1.05),
    )
    try:
        binary = runtime_binary("codex")
    except RuntimeNotFoundError as exc:
        row.not_built = f"Codex not installed here ({exc.install_hint})"
        return row

    import trio

    from adapters.codex import CodexAdapter, CodexConfig, CodexProvider
    from adapters.codex.driver import exec_argv, prepare_home, run_env

    provider = CodexProvider(
        base_url=f"{url}/v1", api_key=KEY, request_max_retries=0, stream_max_retries=0
    )
    config = CodexConfig(provider=provider, model="gpt-5.5", state_root=state)

    def direct() -> float:
        home, _ = prepare_home(None, state, f"direct-{uuid.uuid4().hex[:12]}")
        ws = home / "workspace"
        ws.mkdir(exist_ok=True)
        argv = [str(binary), *exec_argv(config, provider, f"{next_marker()} hi", model="gpt-5.5")]
        env = run_env(config, provider, codex_home=home, extra={})
        try:
            return _first_line_ms(argv, env, ws)
        finally:
            shutil.rmtree(home, ignore_errors=True)

    limit, ours = trio.run(_side_by_side, CodexAdapter(config), direct, cfg, next_marker)
    return _paired(row, limit, ours)


# -- Claude Code ---------------------------------------------------------------------------------


def _claude(cfg: Config, url: str, state: Path, next_marker: Callable[[], str]) -> Row:
    from adapters._runtimes import runtime_binary
    from orchestrator.core.errors import RuntimeNotFoundError

    row = Row(
        "first-event-claude-code",
        "6. time to first event, Claude Code (2.1.330)",
        UNIT,
        "lower",
        Target("≤ 1.05× the CLI's own first line", "max_ratio_to_limit", 1.05),
    )
    try:
        binary = runtime_binary("claude-code")
    except RuntimeNotFoundError as exc:
        row.not_built = f"Claude Code not installed here ({exc.install_hint})"
        return row

    import trio

    from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig, claude_args, run_env
    from adapters.claude_code.driver import prepare_home

    config = ClaudeCodeConfig(
        model="claude-haiku-4-5", base_url=url, api_key=KEY, max_retries=0, state_root=state
    )

    def direct() -> float:
        home, _ = prepare_home(None, state, f"direct-{uuid.uuid4().hex[:12]}")
        ws = home / "workspace"
        ws.mkdir(exist_ok=True)
        args = claude_args(config, prompt=f"{next_marker()} hi", model=config.model)
        env = run_env(config, home=home, extra={})
        try:
            return _first_line_ms([str(binary), *args], env, ws)
        finally:
            shutil.rmtree(home, ignore_errors=True)

    limit, ours = trio.run(_side_by_side, ClaudeCodeAdapter(config), direct, cfg, next_marker)
    return _paired(row, limit, ours)


@path("first-event", "time to first event through ringleader vs the CLI", timeout_s=180)
def first_event(cfg: Config) -> list[Row]:
    attempts = 4 * (cfg.warmup + _pairs(cfg)) + 4
    counter = iter(range(attempts))

    def next_marker() -> str:
        return f"[[bench:{next(counter)}]]"

    rows: list[Row] = []
    if cfg.smoke:
        for name in ("claude-code", "codex"):
            rows.append(
                Row(
                    f"first-event-{name}",
                    f"6. time to first event, {name}",
                    UNIT,
                    "lower",
                    not_built="skipped in --smoke (it spawns the real CLIs)",
                )
            )
        return rows
    state = Path.home() / ".local" / "state" / "ringleader" / f"bench-{uuid.uuid4().hex[:8]}"
    state.mkdir(parents=True)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="ringleader-bench-") as tmp,
            model_server(_script(attempts), Path(tmp)) as url,
        ):
            for measure in (_claude, _codex):
                try:
                    rows.append(measure(cfg, url, state, next_marker))
                except Exception as exc:
                    name = measure.__name__.strip("_")
                    row = Row(
                        f"first-event-{name}",
                        f"6. time to first event, {name}",
                        UNIT,
                        "lower",
                        not_built=f"failed: {type(exc).__name__}: {exc}"[:160],
                    )
                    row.limit = failed("CLI's first line", UNIT, "lower", "not measured")
                    rows.append(row)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    return rows
