"""Path 10: ``ringleader diff --json`` of a change touching 2,000 files, against ``git diff
--numstat`` + ``git diff`` of the same change (issue 32: ≤ 1.5×).

A repository of 2,000 text files (40 lines each) is committed, then every file gets one line
changed, as an agent's run would leave its workspace. Ours is the engine's whole ``diff --json``:
the private index copy, ``git add -N`` for untracked files, one ``git diff --raw -z -p``, parsing
every hunk and encoding the JSON. The limit is what a person would run to get the same facts:
``git diff --numstat`` then ``git diff``. The two are interleaved pass for pass (a load spike hits
both) and timed by the wall clock (git runs as child processes); the CPU time of this process and
its children is noted.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

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


def _git(*args: str, cwd: Path) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, env=_ENV, check=True, capture_output=True).stdout


def _repo(root: Path, files: int) -> str:
    root.mkdir()
    _git("init", "-q", cwd=root)
    for i in range(files):
        folder = root / f"pkg{i // 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i:05d}.py").write_text("".join(f"value_{n} = {n}\n" for n in range(40)))
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "base", cwd=root)
    base = _git("rev-parse", "HEAD", cwd=root).decode().strip()
    for i in range(files):
        target = root / f"pkg{i // 100:03d}" / f"mod{i:05d}.py"
        lines = target.read_text().splitlines(keepends=True)
        lines[20] = f"value_20 = {i} * 2  # changed\n"
        target.write_text("".join(lines))
    return base


def _cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


@path("review-diff", "ringleader diff --json of 2,000 changed files vs git diff", timeout_s=300)
def review_diff(cfg: Config) -> list[Row]:
    from orchestrator.engine.review.diff import workspace_diff
    from orchestrator.engine.review.git import Checkout

    files = 50 if cfg.smoke else 2000
    row = Row(
        "review-diff-json",
        f"10. `diff --json` of a change touching {files:,} files",
        UNIT,
        "lower",
        Target("≤ 1.5× git diff --numstat + git diff (#32)", "max_ratio_to_limit", 1.5),
    )
    with tempfile.TemporaryDirectory(prefix="ringleader-bench-diff-") as tmp:
        root = Path(tmp) / "repo"
        base = _repo(root, files)
        checkout = Checkout(root, base)

        def ours() -> int:
            body = json.dumps(workspace_diff(checkout).to_json())
            return len(body)

        def limit() -> int:
            numstat = _git("diff", "--numstat", base, cwd=root)
            patch = _git("diff", base, cwd=root)
            return len(numstat) + len(patch)

        size = ours()
        if json.loads(json.dumps(workspace_diff(checkout).to_json()))["totals"]["files"] != files:
            raise RuntimeError("the diff does not list every changed file")
        for _ in range(cfg.warmup):
            ours()
            limit()
        walls: dict[str, list[float]] = {"ours": [], "limit": []}
        cpus: dict[str, list[float]] = {"ours": [], "limit": []}
        for _ in range(cfg.min_passes):
            for name, fn in (("ours", ours), ("limit", limit)):
                c0, t0 = _cpu(), time.perf_counter()
                fn()
                walls[name].append((time.perf_counter() - t0) * 1000)
                cpus[name].append((_cpu() - c0) * 1000)
    cpu_ours = sorted(cpus["ours"])[len(cpus["ours"]) // 2]
    cpu_limit = sorted(cpus["limit"])[len(cpus["limit"]) // 2]
    row.ours = figure(
        "ringleader diff --json", walls["ours"], UNIT, "lower", note=f"median CPU {cpu_ours:.0f} ms"
    )
    row.limit = figure(
        "git diff --numstat + git diff",
        walls["limit"],
        UNIT,
        "lower",
        note=f"median CPU {cpu_limit:.0f} ms",
    )
    row.notes.append(
        f"{files:,} files changed, one line each; JSON {size / 1024:.0f} KB; CPU (this process "
        f"and git), median: ours {cpu_ours:.0f} ms, git {cpu_limit:.0f} ms; load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    return [row]
