"""The benchmarks never rot: ``python -m bench --smoke --json`` runs every path on tiny inputs and
writes a row for each, with numbers or a reason (not built yet, skipped, not installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PATH_KEYS = (
    "claude-code-decode",
    "codex-decode",
    "native-loop",
    "event-path",
    "native-sessions",
    "first-event",
    "live",  # live-under-load: rows live-p99-N and live-first-N
    "cli-start",
    "run-start",
    "review-diff",
    "workspaces",
    "log-bytes",
    "side-start",
    "cli-overhead",  # real CLIs at N=2 each (20 each in the full run)
    "board-open",
    "board",  # rows board-*: 50 runs at 200 events/s in chromium (1,000 at 5,000/s in the full run)
)


def test_bench_smoke_writes_every_path(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--no-install", "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,  # real CLIs (cli-overhead) and chromium (board) at small sizes, on a loaded machine
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["smoke"] is True
    assert data["machine"]["versions"]["trio"]
    rows = data["paths"]
    for key in PATH_KEYS:
        mine = [r for r in rows if r["key"] == key or r["key"].startswith(key + "-")]
        assert mine, f"no row for path {key}"
        for row in mine:
            if row["ours"] is not None:
                assert row["ours"]["value"] > 0, row
                assert len(row["ours"]["passes"]) >= 1, row
            else:
                assert row["not_built"], row
            assert not (row["not_built"] or "").startswith("failed"), row
            for peer in row["peers"]:
                assert peer["value"] > 0 or peer["note"], peer
    assert "furthest from its target" in proc.stdout or all(r["shortfall"] is None for r in rows)
