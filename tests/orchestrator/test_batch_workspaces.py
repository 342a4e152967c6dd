"""Per-run workspaces (git worktree / temporary copy), the batch file, and `ringleader batch`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cli.batch import load_batch
from orchestrator.core import ConfigError
from orchestrator.engine import create_workspace, workspace_changes


def git(*args: str, cwd: Path) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


async def test_a_git_repository_gets_a_worktree_per_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("x = 1\n")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    state = tmp_path / "state"
    one = await create_workspace(repo / "src", "native", state_dir=state)
    two = await create_workspace(repo / "src", "codex", state_dir=state)
    assert one.kind == two.kind == "git worktree"
    assert one.path != two.path
    assert one.path.name == "src" and (one.path / "a.py").read_text() == "x = 1\n"
    assert one.root.parent == state / "workspaces"
    assert await workspace_changes(one) == "none"
    (one.path / "a.py").write_text("x = 2\ny = 3\n")
    (one.path / "new.py").write_text("z = 1\n")
    changed = await workspace_changes(one)
    assert changed.startswith("2 files changed"), changed
    assert await workspace_changes(two) == "none"
    assert (repo / "src" / "a.py").read_text() == "x = 1\n"  # the origin is untouched
    assert str(one.root) in git("worktree", "list", cwd=repo)


async def test_elsewhere_a_temporary_copy_without_caches(tmp_path: Path) -> None:
    origin = tmp_path / "plain"
    (origin / ".venv" / "lib").mkdir(parents=True)
    (origin / ".venv" / "lib" / "big.bin").write_bytes(b"x" * 1000)
    (origin / "notes.txt").write_text("hello\n")
    (origin / "old.txt").write_text("bye\n")
    ws = await create_workspace(origin, "native", state_dir=tmp_path / "state")
    try:
        assert ws.kind == "temporary copy"
        assert (ws.path / "notes.txt").read_text() == "hello\n"
        assert not (ws.path / ".venv").exists()
        assert await workspace_changes(ws) == "none"
        (ws.path / "notes.txt").write_text("hello, changed\n")
        (ws.path / "added.txt").write_text("new\n")
        (ws.path / "old.txt").unlink()
        assert await workspace_changes(ws) == "3 files changed (+1 ~1 -1)"
        assert (origin / "old.txt").exists()
    finally:
        shutil.rmtree(ws.path)


async def test_a_directory_too_large_to_copy_is_refused(tmp_path: Path) -> None:
    origin = tmp_path / "big"
    origin.mkdir()
    (origin / "huge.bin").write_bytes(b"")
    os.truncate(origin / "huge.bin", 300 * 1024 * 1024)  # sparse: no disk used
    with pytest.raises(ConfigError, match="too large to copy"):
        await create_workspace(origin, "native", state_dir=tmp_path / "state")
    with pytest.raises(ConfigError, match="does not exist"):
        await create_workspace(tmp_path / "nope", "native", state_dir=tmp_path / "state")


BAD_BATCHES = {
    "bad toml": ("[[task]\n", "not valid TOML"),
    "no tasks": ("jobs = 2\n", "task: Field required"),
    "no prompt": ('[[task]]\nid = "a"\nruntime = "native"\n', "task.0.prompt: Field required"),
    "blank prompt": ('[[task]]\nid = "a"\nruntime = "native"\nprompt = "  "\n', "prompt is empty"),
    "twice": (
        '[[task]]\nid = "a"\nruntime = "x"\nprompt = "p"\n'
        '[[task]]\nid = "a"\nruntime = "x"\nprompt = "q"\n',
        "task id 'a' appears twice",
    ),
    "unknown key": ('[[task]]\nid = "a"\nruntime = "x"\nprompt = "p"\ncolour = 1\n', "colour"),
    "bad jobs": ('jobs = 0\n[[task]]\nid = "a"\nruntime = "x"\nprompt = "p"\n', "jobs"),
}


@pytest.mark.parametrize("case", sorted(BAD_BATCHES))
def test_a_bad_batch_file_is_one_config_error(case: str, tmp_path: Path) -> None:
    text, expected = BAD_BATCHES[case]
    path = tmp_path / "tasks.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected) as caught:
        load_batch(path)
    assert "\n" not in str(caught.value)
    assert str(path) in str(caught.value)


def test_batch_cwd_is_relative_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text('[[task]]\nid = "a"\nruntime = "x"\nprompt = "p"\ncwd = "sub"\n')
    (task,) = load_batch(path).task
    assert task.cwd == str(tmp_path / "sub")
    with pytest.raises(ConfigError, match="no such file"):
        load_batch(tmp_path / "missing.toml")


def ringleader(*args: str, state: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RINGLEADER_STATE_DIR=str(state))
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
        cwd=cwd,
    )


def test_batch_runs_every_task_two_at_a_time_and_logs_each(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "readme.txt").write_text("hi\n")
    tasks = "\n".join(
        f'[[task]]\nid = "t{i}"\nruntime = "scripted"\nprompt = "task number {i}"\n'
        for i in range(1, 4)
    )
    (work / "tasks.toml").write_text(tasks)
    state = tmp_path / "state"
    result = ringleader("batch", "tasks.toml", "--jobs", "2", state=state, cwd=work)
    assert result.returncode == 0, result.stdout + result.stderr
    for i in range(1, 4):
        assert f"[t{i}] ■ done: success" in result.stdout
        row = next(line for line in result.stdout.splitlines() if line.startswith(f"│ t{i} "))
        assert "scripted" in row and "success" in row and "temporary copy" in row
    assert "comparison" in result.stdout
    listing = ringleader("replay", "--list", "--json", state=state, cwd=work)
    runs = [json.loads(line) for line in listing.stdout.splitlines()]
    assert sorted(r["prompt"] for r in runs) == [f"task number {i}" for i in range(1, 4)]
    assert all(r["status"] == "success" for r in runs)
    # never more than two at once: every run started before the third one's start had ended
    spans = sorted((r["startedMs"], r["endedMs"]) for r in runs)
    for start, _ in spans:
        running = [s for s in spans if s[0] <= start < s[1]]
        assert len(running) <= 2, spans


def test_batch_with_an_unknown_runtime_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "tasks.toml").write_text('[[task]]\nid = "a"\nruntime = "nope"\nprompt = "p"\n')
    result = ringleader("batch", "tasks.toml", state=tmp_path / "state", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown runtime 'nope'" in result.stderr
    assert "Traceback" not in result.stderr
