"""Path 11: making the three workspaces of a side-by-side run in a repository of 20,000 files,
against three plain ``git worktree add`` of the same repository (issue 32: ≤ 1.2×).

Ours is what ``ringleader run --runtime A --runtime B --runtime C`` does before the runs start:
``create_workspace`` three times, one after the other (git locks the worktree list) — a detached
worktree of ``HEAD`` under the state directory, the ignored files ``.worktreeinclude`` names
copied in, the starting commit recorded. The limit is ``git worktree add --detach PATH HEAD``
three times. The two are interleaved pass for pass and timed by the wall clock (git checks the
files out in a child process); the worktrees are removed between passes, untimed. Five passes,
no warm-up (making the repository warmed the page cache): each pass writes 120,000 files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import trio

from ._core import Config, Row, Target, figure, path

UNIT = "ms"

_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "LC_ALL": "C",
}


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=_ENV, check=True, capture_output=True)


def _repo(root: Path, files: int) -> None:
    root.mkdir()
    _git("init", "-q", cwd=root)
    for i in range(files):
        folder = root / f"d{i // 200:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text(f"file {i}\n" * 4)
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "base", cwd=root)


def _clean(repo: Path, folder: Path) -> None:
    for child in folder.iterdir():
        _git("worktree", "remove", "--force", str(child), cwd=repo)
    shutil.rmtree(folder, ignore_errors=True)
    _git("worktree", "prune", cwd=repo)


@path(
    "workspaces", "three side-by-side workspaces of 20,000 files vs git worktree add", timeout_s=900
)
def workspaces(cfg: Config) -> list[Row]:
    from orchestrator.engine.workspaces import create_workspace

    files = 200 if cfg.smoke else 20_000
    row = Row(
        "workspaces-three",
        f"11. three side-by-side workspaces of a {files:,}-file repository",
        UNIT,
        "lower",
        Target("≤ 1.2× three git worktree add (#32)", "max_ratio_to_limit", 1.2),
    )
    with tempfile.TemporaryDirectory(prefix="ringleader-bench-ws-") as tmp:
        repo = Path(tmp) / "repo"
        _repo(repo, files)
        state = Path(tmp) / "state"
        plain = Path(tmp) / "plain"

        def ours() -> None:
            async def make() -> None:
                for name in ("native", "claude-code", "codex"):
                    await create_workspace(repo, name, state_dir=state)

            trio.run(make)

        def limit() -> None:
            plain.mkdir()
            for name in ("native", "claude-code", "codex"):
                _git("worktree", "add", "--detach", "--quiet", str(plain / name), "HEAD", cwd=repo)

        walls: dict[str, list[float]] = {"ours": [], "limit": []}
        passes = cfg.min_passes if cfg.smoke else 5  # each pass checks out 120,000 files
        sides = [("ours", ours, state / "workspaces"), ("limit", limit, plain)]
        for n in range(passes):
            for name, fn, folder in sides if n % 2 == 0 else sides[::-1]:  # swap: drift hits both
                t0 = time.perf_counter()
                fn()
                took = (time.perf_counter() - t0) * 1000
                walls[name].append(took)
                _clean(repo, folder)
    row.ours = figure("create_workspace ×3", walls["ours"], UNIT, "lower")
    row.limit = figure("git worktree add ×3", walls["limit"], UNIT, "lower")
    row.notes.append(
        f"{files:,} files; wall clock (git checks out in a child process); load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    return [row]
