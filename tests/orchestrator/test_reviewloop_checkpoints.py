"""Checkpoints of a workspace after each turn that changed files (real git repositories in tmp
dirs): one per changed turn, on private refs, the user's index and branches untouched; listing
them; rewinding (files written and deleted, ignored files kept, the rewind itself undoable)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.core import ConfigError
from orchestrator.core.events import EventFactory, RuntimeEvent
from orchestrator.engine.reviewloop.checkpoints import (
    Checkpointer,
    checkpoint_ref_prefix,
    list_checkpoints,
    rewind,
)

KEY = "runtime:native:task:t1:run-0a1b2c3d"


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


def repo(tmp_path: Path) -> Path:
    top = tmp_path / "repo"
    (top / "src").mkdir(parents=True)
    (top / "src" / "a.py").write_text("a = 1\n")
    (top / ".gitignore").write_text(".env\n")
    (top / ".env").write_text("SECRET=x\n")
    git("init", "-q", cwd=top)
    git("add", "-A", cwd=top)
    git("commit", "-qm", "init", cwd=top)
    return top


class Turns:
    """Events of a run, turn by turn, fed to the recorder as the runner does."""

    def __init__(self, recorder: Checkpointer) -> None:
        self.recorder = recorder
        self.make = EventFactory(run_id="s-1", clock=lambda: 1_800_000_000_000)
        self.n = 0

    async def feed(self, *events: RuntimeEvent) -> None:
        for event in events:
            pending = self.recorder.observe(event, "s-1")
            if pending is not None:
                await pending

    async def tool_turn(self) -> None:
        self.n += 1
        call = f"c{self.n}"
        await self.feed(
            self.make.text_delta(f"turn {self.n}"),
            self.make.tool_call(call, "write_file", {}),
            self.make.tool_result(call, "ok"),
        )

    async def done(self) -> None:
        await self.feed(self.make.text_delta("all done"), *self.make.finish("success"))


async def test_a_checkpoint_after_each_turn_that_changed_files(tmp_path: Path) -> None:
    top = repo(tmp_path)
    index_before = (top / ".git" / "index").read_bytes()
    head_before = git("rev-parse", "HEAD", cwd=top)
    recorder = await Checkpointer.before_start(str(top / "src"), clock=lambda: 1_800_000_000_000)
    assert recorder is not None
    recorder.run_key = KEY
    turns = Turns(recorder)
    await turns.tool_turn()  # turn 1 writes a.py
    (top / "src" / "a.py").write_text("a = 2\n")
    await turns.tool_turn()  # turn 2 adds b.py (its checkpoint follows turn 1's end)
    (top / "src" / "b.py").write_text("b = 1\n")
    await turns.tool_turn()  # turn 3 changes nothing
    await turns.tool_turn()  # turn 4 deletes a.py
    (top / "src" / "a.py").unlink()
    (top / ".env").write_text("SECRET=changed\n")  # ignored: never in a checkpoint
    await turns.done()

    found = await list_checkpoints(top, KEY)
    assert [(c.n, c.turn, c.files) for c in found] == [
        (0, 0, ()),
        (1, 1, ("M\tsrc/a.py",)),
        (2, 2, ("A\tsrc/b.py",)),
        (3, 4, ("D\tsrc/a.py",)),  # turn 3 changed nothing: no checkpoint
    ]
    assert all(c.session_id == "s-1" for c in found[1:])
    assert found[1].time_ms == 1_800_000_000_000
    refs = git("for-each-ref", "--format=%(refname)", "refs/ringleader/", cwd=top).split()
    assert refs == [f"{checkpoint_ref_prefix(KEY)}/{n}" for n in range(4)]
    assert ":" not in refs[0]
    # only git objects: the user's index, HEAD and branches are as they were
    assert (top / ".git" / "index").read_bytes() == index_before
    assert git("rev-parse", "HEAD", cwd=top) == head_before
    assert git("branch", "--format=%(refname:short)", cwd=top).split() in (["main"], ["master"])
    tree = git("ls-tree", "-r", "--name-only", found[-1].commit, cwd=top).split()
    assert tree == [".gitignore", "src/b.py"]  # no .env


async def test_a_run_that_changes_nothing_leaves_no_refs(tmp_path: Path) -> None:
    top = repo(tmp_path)
    recorder = await Checkpointer.before_start(str(top))
    assert recorder is not None
    recorder.run_key = KEY
    turns = Turns(recorder)
    await turns.tool_turn()
    await turns.done()
    assert await list_checkpoints(top, KEY) == []
    assert git("for-each-ref", "refs/ringleader/", cwd=top) == ""


async def test_rewind_restores_the_files_keeps_ignored_ones_and_can_be_undone(
    tmp_path: Path,
) -> None:
    top = repo(tmp_path)
    recorder = await Checkpointer.before_start(str(top))
    assert recorder is not None
    recorder.run_key = KEY
    turns = Turns(recorder)
    await turns.tool_turn()
    (top / "src" / "a.py").write_text("a = 2\n")
    await turns.tool_turn()
    (top / "deep" / "er").mkdir(parents=True)
    (top / "deep" / "er" / "new.txt").write_text("new\n")
    await turns.done()
    (top / "src" / "a.py").write_text("a = 3  # by hand, after the run\n")
    index_before = (top / ".git" / "index").read_bytes()

    done = await rewind(top, KEY, 1)
    assert (top / "src" / "a.py").read_text() == "a = 2\n"
    assert not (top / "deep").exists()  # deleted, with its emptied folders
    assert (top / ".env").read_text() == "SECRET=x\n"  # ignored: left alone
    assert set(done.written) == {"src/a.py"} and set(done.deleted) == {"deep/er/new.txt"}
    assert (top / ".git" / "index").read_bytes() == index_before
    assert done.saved is not None and done.saved.note == "before rewind to 1"

    await rewind(top, KEY, done.saved.n)  # undo
    assert (top / "src" / "a.py").read_text() == "a = 3  # by hand, after the run\n"
    assert (top / "deep" / "er" / "new.txt").read_text() == "new\n"

    again = await rewind(top, KEY, 0)  # the state the run started from
    assert (top / "src" / "a.py").read_text() == "a = 1\n"
    assert again.saved is None  # nothing new to keep: checkpoint 3 holds what was there


async def test_rewind_mistakes_are_typed_errors(tmp_path: Path) -> None:
    top = repo(tmp_path)
    with pytest.raises(ConfigError, match="has no checkpoint 5 \\(it has: none"):
        await rewind(top, KEY, 5)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ConfigError, match="is not in a git work tree"):
        await list_checkpoints(plain, KEY)
    assert await Checkpointer.before_start(str(plain)) is None
    with pytest.raises(ConfigError, match=r"the run's workspace .*gone$"):
        await rewind(tmp_path / "removed", KEY, 0)
