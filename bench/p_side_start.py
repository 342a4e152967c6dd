"""Path 13: a side-by-side start — from the command to every runtime's first event, for native +
Claude Code + Codex, against the slowest runtime's own time to its first line started alone.

Ours: ``ringleader run --runtime native --runtime claude-code --runtime codex --model-server
--json PROMPT`` spawned in a git repository of 200 files (so three git worktrees are made: the
workspace creation is included), timed by the wall clock from the spawn to the first JSON line of
each run (each line carries its run key, ``runtime:<id>:…``); the figure is the last of the three.
The run then goes on to its end (a tool turn and an answer from the built-in scripted model
server) outside the timing.

The reference, measured in the same pass: each runtime started alone, on its own —
Claude Code and Codex spawned directly (the adapter's argv and environment, a fresh home, stdin
on the null device) to their first stdout line, and the native runtime, which has no process of
its own, as ``ringleader run --runtime native --model-server --json`` alone to its first line.
The limit of the pass is the slowest of the three. The passes interleave ours and the
references, the order swapped each pass, so load drift weighs on both.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from ._core import Config, Row, Target, figure, path
from .p_cli_start import ringleader_argv
from .p_first_event import KEY, _first_line_ms  # pyright: ignore[reportPrivateUsage]
from .p_sessions import model_server

UNIT = "ms"
RUNTIMES = ("native", "claude-code", "codex")


def _repo(root: Path, files: int) -> Path:
    repo = root / "repo"
    repo.mkdir()
    for i in range(files):
        d = repo / f"pkg{i % 10}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b")
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
    return repo


def _firsts(
    argv: list[str], cwd: Path, env: dict[str, str], want: tuple[str, ...]
) -> dict[str, float]:
    """Spawn ``argv``; ms from the spawn to the first JSON line of each runtime in ``want``. The
    command then runs to its end (bounded: 240 s, then its process group is killed)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    seen: dict[str, float] = {}
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            at = (time.perf_counter() - t0) * 1000
            if not raw.startswith(b"{"):
                continue
            for runtime in want:
                if runtime not in seen and f'"runtime:{runtime}:'.encode() in raw[:200]:
                    seen[runtime] = at
        proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if set(seen) != set(want):
        err = (proc.stderr.read() if proc.stderr else b"").decode(errors="replace")[-300:]
        raise RuntimeError(f"no first event of {sorted(set(want) - set(seen))}: {err!r}")
    return seen


def _direct_claude(url: str, state: Path) -> float:
    from adapters._runtimes import runtime_binary
    from adapters.claude_code import ClaudeCodeConfig, claude_args, run_env
    from adapters.claude_code.driver import prepare_home

    config = ClaudeCodeConfig(
        model="claude-haiku-4-5", base_url=url, api_key=KEY, max_retries=0, state_root=state
    )
    home, _ = prepare_home(None, state, f"direct-{uuid.uuid4().hex[:12]}")
    ws = home / "workspace"
    ws.mkdir(exist_ok=True)
    args = claude_args(config, prompt=f"[[bench:{uuid.uuid4().hex}]] hi", model=config.model)
    try:
        return _first_line_ms(
            [str(runtime_binary("claude-code")), *args], run_env(config, home=home, extra={}), ws
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _direct_codex(url: str, state: Path) -> float:
    from adapters._runtimes import runtime_binary
    from adapters.codex import CodexConfig, CodexProvider
    from adapters.codex.driver import exec_argv, prepare_home, run_env

    provider = CodexProvider(
        base_url=f"{url}/v1", api_key=KEY, request_max_retries=0, stream_max_retries=0
    )
    config = CodexConfig(provider=provider, model="gpt-5.5", state_root=state)
    home, _ = prepare_home(None, state, f"direct-{uuid.uuid4().hex[:12]}")
    ws = home / "workspace"
    ws.mkdir(exist_ok=True)
    argv = [
        str(runtime_binary("codex")),
        *exec_argv(config, provider, f"[[bench:{uuid.uuid4().hex}]] hi", model="gpt-5.5"),
    ]
    try:
        return _first_line_ms(argv, run_env(config, provider, codex_home=home, extra={}), ws)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _missing() -> str | None:
    from adapters._runtimes import runtime_binary
    from orchestrator.core.errors import RuntimeNotFoundError

    for runtime in ("claude-code", "codex"):
        try:
            runtime_binary(runtime)
        except RuntimeNotFoundError as exc:
            return f"{runtime} not installed here ({exc.install_hint})"
    return None


@path("side-start", "side-by-side start: command → every runtime's first event", timeout_s=900)
def side_start(cfg: Config) -> list[Row]:
    row = Row(
        "side-start",
        "13. side-by-side start (native + Claude Code + Codex, 3 worktrees): command → last first event",
        UNIT,
        "lower",
        Target("≤ 1.1× the slowest runtime alone (#37)", "max_ratio_to_limit", 1.1),
    )
    if cfg.smoke:
        row.not_built = "skipped in --smoke (it spawns the real CLIs)"
        return [row]
    missing = _missing()
    if missing:
        row.not_built = missing
        return [row]
    passes = cfg.min_passes
    ours: list[float] = []
    limit: list[float] = []
    per_runtime: dict[str, list[float]] = {r: [] for r in RUNTIMES}
    alone: dict[str, list[float]] = {r: [] for r in RUNTIMES}
    ratios: list[float] = []
    state = Path.home() / ".local" / "state" / "ringleader" / f"bench-{uuid.uuid4().hex[:8]}"
    state.mkdir(parents=True)
    try:
        with tempfile.TemporaryDirectory(prefix="ringleader-bench-side-") as tmpdir:
            tmp = Path(tmpdir)
            repo = _repo(tmp, 200)
            env = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith("RINGLEADER_") or k == "RINGLEADER_RUNTIMES_DIR"
            }
            env |= {
                "RINGLEADER_STATE_DIR": str(tmp / "state"),
                "XDG_CONFIG_HOME": str(tmp / "xdg"),
                "NO_COLOR": "1",
            }
            base = [*ringleader_argv(), "run", "--model-server", "--json"]
            side_argv = [*base, *(a for r in RUNTIMES for a in ("--runtime", r)), "say hi"]
            native_argv = [*base, "--runtime", "native", "say hi"]
            with model_server({"model": "m", "conversations": []}, tmp) as url:

                def references() -> dict[str, float]:
                    return {
                        "native": _firsts(native_argv, repo, env, ("native",))["native"],
                        "claude-code": _direct_claude(url, state),
                        "codex": _direct_codex(url, state),
                    }

                def side() -> dict[str, float]:
                    return _firsts(side_argv, repo, env, RUNTIMES)

                for i in range(cfg.warmup + passes):
                    if i % 2:
                        refs, mine = references(), side()
                    else:
                        mine, refs = side(), references()
                    if i < cfg.warmup:
                        continue
                    slowest = max(refs.values())
                    ours.append(max(mine.values()))
                    limit.append(slowest)
                    ratios.append(max(mine.values()) / slowest)
                    for r in RUNTIMES:
                        per_runtime[r].append(mine[r])
                        alone[r].append(refs[r])
    finally:
        shutil.rmtree(state, ignore_errors=True)
    row.ours = figure("side by side, last first event", ours, UNIT, "lower")
    row.limit = figure("slowest runtime alone", limit, UNIT, "lower")
    for r in RUNTIMES:
        row.peers.append(
            figure(f"{r} alone", alone[r], UNIT, "lower", "(reference, for reading the row)")
        )
    row.notes.append(
        "side by side, each runtime's first event (median ms): "
        + ", ".join(f"{r} {statistics.median(per_runtime[r]):.0f}" for r in RUNTIMES)
        + "; alone: "
        + ", ".join(f"{r} {statistics.median(alone[r]):.0f}" for r in RUNTIMES)
        + f"; median of the per-pass ratios {statistics.median(ratios):.2f}×, best "
        f"{min(ratios):.2f}×; load average {os.getloadavg()[0]:.1f}"
    )
    row.extra = {"per_runtime": per_runtime, "alone": alone, "ratios": ratios}
    return [row]


if __name__ == "__main__":  # a quick look: python -m bench.p_side_start
    from ._core import Config as _C

    for r in side_start(_C(quick=True, passes=2, warmup=0)):
        print(r.to_json()["ours"], r.notes, file=sys.stderr)
