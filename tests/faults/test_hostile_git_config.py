"""A repository whose own ``.git`` names programs (an unpacked archive, someone else's folder):
ringleader's git runs none of them — no ``core.fsmonitor`` program, no hook, no filter driver
of the repository's — while making a worktree for a run, diffing it and landing it
(orchestrator/core/git.py). Each test first shows the trap springs under plain git."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.cli.main import main
from orchestrator.core.git import git_env
from tests.orchestrator.review_kit import GIT_ID, git, make_runs

TRAPS = ("fsmonitor", "hook", "clean", "process", "smudge", "prepush")


def hostile_repo(root: Path, marks: Path) -> Path:
    """A committed repository whose ``.git`` holds a trap per program git could run by itself;
    each leaves a file named after it in ``marks``."""
    marks.mkdir()
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "init", cwd=root)

    def trap(name: str) -> str:
        return f"touch {marks / name}"

    git("config", "core.fsmonitor", f"{trap('fsmonitor')}; false", cwd=root)
    git("config", "filter.x.clean", f"sh -c '{trap('clean')}; cat'", cwd=root)
    git("config", "filter.x.smudge", f"sh -c '{trap('smudge')}; cat'", cwd=root)
    git("config", "filter.y.process", f"sh -c '{trap('process')}'", cwd=root)
    (root / ".gitattributes").write_text("*.py filter=x\n*.txt filter=y\n")
    git("add", ".gitattributes", cwd=root)
    git("commit", "-qm", "attributes", cwd=root)
    hooks = root / ".git" / "hooks"
    for hook, name in (("post-checkout", "hook"), ("pre-push", "prepush")):
        (hooks / hook).write_text(f"#!/bin/sh\n{trap(name)}\n")
        (hooks / hook).chmod(0o755)
    return root


def sprung(marks: Path) -> set[str]:
    found = {p.name for p in marks.iterdir()}
    for name in found:
        (marks / name).unlink()
    return found


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "state"
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(where))
    monkeypatch.setenv("NO_COLOR", "1")
    for name, value in GIT_ID.items():
        monkeypatch.setenv(name, value)
    return where


def test_the_traps_spring_under_plain_git_and_not_under_ours(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    repo = hostile_repo(tmp_path / "repo", marks)
    sprung(marks)  # (committing .gitattributes may already have run a filter)
    (repo / "src" / "app.py").write_text("def main():\n    return 2\n")
    (repo / "notes.txt").write_text("n\n")
    plain = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for env in (plain, git_env(repo=repo)):
        for args in (
            ["status", "--short"],
            ["add", "-A"],
            ["worktree", "add", "-q", "../wt"],
            ["worktree", "remove", "--force", "../wt"],
            ["reset", "-q"],
        ):
            done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True)
            # under plain git the process filter (a trap, not a filter) fails the add
            under_plain_git = env is plain
            assert done.returncode == 0 or under_plain_git, (args, done.stderr)
        if env is plain:
            assert sprung(marks) >= {"fsmonitor", "hook", "clean", "process", "smudge"}
        else:
            assert sprung(marks) == set()
    # the person's own GIT_CONFIG_* settings stay, ours after them
    mine = git_env({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_VALUE_0": "c"})
    assert (mine["GIT_CONFIG_KEY_0"], mine["GIT_CONFIG_KEY_1"]) == ("a.b", "core.fsmonitor")


def test_a_run_in_a_hostile_repository_is_diffed_and_landed_without_running_its_programs(
    tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marks = tmp_path / "marks"
    repo = hostile_repo(tmp_path / "repo", marks)
    sprung(marks)
    ws = make_runs(repo, state, ("native",))["native"]  # a git worktree of the repository
    assert sprung(marks) == set()
    (ws / "src" / "app.py").write_text("def main():\n    return 2\n")
    (ws / "notes.txt").write_text("n\n")
    assert main(["diff", "last", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert {f["path"] for f in body["files"]} == {"src/app.py", "notes.txt"}
    assert sprung(marks) == set()
    assert main(["apply", "last"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert (repo / "notes.txt").read_text() == "n\n"
    assert sprung(marks) == set()


def test_land_push_runs_the_persons_pre_push_hook_as_git_push_would(
    tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marks = tmp_path / "marks"
    repo = hostile_repo(tmp_path / "repo", marks)
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=repo)
    sprung(marks)
    ws = make_runs(repo, state, ("codex",))["codex"]
    (ws / "codex.py").write_text("c = 1\n")
    assert main(["apply", "last", "--push", "origin"]) == 0, capsys.readouterr().err
    assert sprung(marks) == {"prepush"}  # the one program of theirs that runs
