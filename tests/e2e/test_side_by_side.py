"""Three different runtimes side by side through the `ringleader` command, against the built-in
scripted model server: the demo (native, the real Claude Code, the real Codex) and `run` with
several `--runtime` in a git repository (each run in its own worktree). Claude Code and Codex are
installed by ``scripts/install-runtimes``; if one is missing these tests FAIL with the command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from orchestrator.core.events import event_from_json

from . import kit

pytestmark = pytest.mark.e2e

RUNTIMES = ("native", "claude-code", "codex")
TOOL = {"native": "list_files", "claude-code": "Bash", "codex": "exec_command"}


@pytest.fixture(autouse=True)
def clis_installed() -> None:
    for runtime in ("claude-code", "codex"):
        kit.installed(runtime)


def ringleader(*args: str, cwd: Path, state: Path) -> subprocess.CompletedProcess[str]:
    env = kit.cli_env(state, XDG_CONFIG_HOME=str(state / "xdg"))
    env.pop("NO_COLOR", None)
    return kit.ringleader(*args, cwd=cwd, env=env, timeout=300)


def table_rows(stdout: str) -> dict[str, list[str]]:
    """The comparison table's rows by run label (cells stripped)."""
    rows: dict[str, list[str]] = {}
    last: str | None = None
    for line in stdout.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            if not cells[0] and last is not None:  # a wrapped row goes on on the next line
                rows[last] = [f"{a} {b}".strip() for a, b in zip(rows[last], cells, strict=True)]
            else:
                rows[cells[0]] = cells
                last = cells[0]
    return rows


def test_the_demo_runs_three_runtimes_side_by_side(tmp_path: Path) -> None:
    result = ringleader("demo", cwd=tmp_path, state=tmp_path / "state")
    assert result.returncode == 0, result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    assert "scripted model server on 127.0.0.1" in first and "no spend" in first
    for runtime in RUNTIMES:
        assert f"[{runtime}] ■ done: success" in result.stdout
        assert f"[{runtime}] ✓ {TOOL[runtime]}" in result.stdout  # a real tool turn each
    assert result.stdout.count("■ done:") == 3
    rows = table_rows(result.stdout)
    assert set(rows) == set(RUNTIMES)
    for runtime in RUNTIMES:
        run, rid, outcome, turns, tools, tokens_in, tokens_out, cost, *_rest, workspace = rows[
            runtime
        ]
        assert (run, rid, outcome) == (runtime, runtime, "success")
        assert int(turns) >= 2 and tools == "1"
        assert int(tokens_in) > 0 and int(tokens_out) > 0
        assert cost == "unknown" or cost.endswith("est."), cost  # never shown as a bill
        assert workspace.endswith("(temporary copy)")


def test_run_several_runtimes_in_a_git_repository_uses_a_worktree_each(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "marker.txt").write_text("here\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    args = [arg for runtime in RUNTIMES for arg in ("--runtime", runtime)]
    state = tmp_path / "state"
    result = ringleader(
        "run", *args, "--model-server", "--json", "list the files", cwd=repo, state=state
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    events = [event_from_json(line) for line in lines]
    keys = {json.loads(line)["runKey"].split(":")[1] for line in lines}
    assert keys == set(RUNTIMES)  # every line names its run
    assert [e.kind for e in events].count("done") == 3
    assert all(e.reason == "success" for e in events if e.kind == "done")
    results = [e for e in events if e.kind == "tool-result"]
    assert len(results) == 3 and all("marker.txt" in r.output for r in results)
    worktrees = list((state / "workspaces").iterdir())
    assert len(worktrees) == 3 and all((w / "marker.txt").exists() for w in worktrees)
