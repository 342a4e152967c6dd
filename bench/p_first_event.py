"""Path 6: time to the first event through ringleader vs the CLI's own first stdout line.

For each installed CLI, against the scripted model server (its own process), on the same argv and
environment the adapter uses:

* the limit — spawn the CLI directly (stdin on the null device) and time until its first stdout
  line; then kill its process group;
* ours — ``adapter.start()`` → ``adapter.events()`` → the first event; then ``abort`` and drain to
  ``done`` (outside the timing).

Each attempt gets a fresh home (as the adapter gives each run) and its own conversation (a marker
in the prompt). Not-installed CLIs and missing adapters say so in their row.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ._core import Config, Row, Target, failed, figure, path
from .p_sessions import model_server

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


# -- Codex ----------------------------------------------------------------------------------------


def _codex(cfg: Config, url: str, state: Path, next_marker: Any) -> Row:
    from adapters._runtimes import runtime_binary
    from orchestrator.errors import RuntimeNotFoundError

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
    from orchestrator.adapter import StartOpts, TaskHandle
    from orchestrator.events import Done

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

    async def through_ringleader() -> list[float]:
        out: list[float] = []
        async with CodexAdapter(config) as adapter:
            for i in range(cfg.warmup + cfg.min_passes):
                t0 = time.perf_counter()
                run = await adapter.start(
                    TaskHandle(),
                    StartOpts(
                        agent_id="codex",
                        session_key=f"bench:{uuid.uuid4().hex[:8]}",
                        message=f"{next_marker()} hi",
                    ),
                )
                async with adapter.events(run) as events:
                    first = True
                    async for event in events:
                        if first:
                            if i >= cfg.warmup:
                                out.append((time.perf_counter() - t0) * 1000)
                            first = False
                            await adapter.abort(run)
                        if isinstance(event, Done):
                            break
        return out

    for _ in range(cfg.warmup):
        direct()
    limit = [direct() for _ in range(cfg.min_passes)]
    ours = trio.run(through_ringleader)
    row.limit = figure("CLI's first line", limit, UNIT, "lower")
    row.ours = figure("ringleader first event", ours, UNIT, "lower")
    return row


# -- Claude Code ---------------------------------------------------------------------------------


def _claude(cfg: Config, url: str, state: Path, next_marker: Any) -> Row:
    from adapters._runtimes import runtime_binary
    from orchestrator.errors import RuntimeNotFoundError

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

    def direct() -> float:
        home = state / f"claude-{uuid.uuid4().hex[:12]}"
        (home / "home").mkdir(parents=True)
        (home / "ws").mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "CLAUDE_CONFIG_DIR": str(home),
            "HOME": str(home / "home"),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        argv = [
            str(binary),
            "-p",
            f"{next_marker()} hi",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "claude-haiku-4-5",
        ]
        try:
            return _first_line_ms(argv, env, home / "ws")
        finally:
            shutil.rmtree(home, ignore_errors=True)

    for _ in range(cfg.warmup):
        direct()
    row.limit = figure("CLI's first line", [direct() for _ in range(cfg.min_passes)], UNIT, "lower")
    try:
        import adapters.claude_code as cc
    except ImportError:
        row.not_built = "not built yet: adapters/claude_code (the CLI's own line is measured)"
        return row
    if not hasattr(cc, "ClaudeCodeAdapter"):
        row.not_built = "not built yet: the Claude Code adapter (driver + trait) has not landed"
        return row
    row.not_built = "not built yet: bench/p_first_event.py does not drive ClaudeCodeAdapter yet"
    return row


@path("first-event", "time to first event through ringleader vs the CLI", timeout_s=180)
def first_event(cfg: Config) -> list[Row]:
    attempts = 4 * (cfg.warmup + cfg.min_passes) + 4
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
