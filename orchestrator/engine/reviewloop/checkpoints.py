"""Checkpoints: the state of a run's working directory after each turn that changed files, kept
as commits on private refs, and rewinding a workspace to one of them.

A checkpoint is a commit of the whole work tree (tracked and untracked files, ignored ones left
out — so a ``.env`` never lands in git objects) on ``refs/ringleader/checkpoints/<run>/<n>``: on
no branch, costing only git objects, built in a **temporary index** (``GIT_INDEX_FILE``, seeded
from the work tree's own index so unchanged files are not re-hashed), so the user's index,
branches and ``HEAD`` are never touched. ``<run>`` is the run key with every character git
refuses in a ref name replaced by ``_``.

Checkpoint ``1``, ``2``, … follow each **turn** (a model answer, ending at its tool results — as
the comparison table counts them) after which the tree differs from the previous checkpoint, and
the end of the run; checkpoint ``0``, written with the first of them, is the state the run
started from (a run that changes nothing leaves no refs). The commit carries the turn,
the session id and the time; its parent is the previous checkpoint (``0``'s is ``HEAD``), so the
files of a checkpoint are ``git diff-tree`` against its parent.

:func:`rewind` makes the work tree equal to a checkpoint (files it lacks are deleted, files it
has are written; ignored files are left alone), after recording the current state as one more
checkpoint, so a rewind can itself be undone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import attrs
import trio

from orchestrator.core.errors import ConfigError
from orchestrator.core.events import (
    Done,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
    now_ms,
)
from orchestrator.core.git import run_git

__all__ = [
    "CHECKPOINT_REFS",
    "Checkpoint",
    "Checkpointer",
    "Rewound",
    "checkpoint_ref_prefix",
    "list_checkpoints",
    "rewind",
]

CHECKPOINT_REFS = "refs/ringleader/checkpoints"

_log = logging.getLogger(__name__)
_REF_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_IDENTITY = {
    "GIT_AUTHOR_NAME": "ringleader",
    "GIT_AUTHOR_EMAIL": "ringleader@localhost",
    "GIT_COMMITTER_NAME": "ringleader",
    "GIT_COMMITTER_EMAIL": "ringleader@localhost",
}


def checkpoint_ref_prefix(run_key: str) -> str:
    """``refs/ringleader/checkpoints/<run>`` for ``run_key`` (no trailing slash)."""
    safe = _REF_UNSAFE.sub("_", run_key).strip(".") or "_"
    safe = safe.replace("..", "__")
    if safe.endswith(".lock"):
        safe += "_"
    return f"{CHECKPOINT_REFS}/{safe}"


def _git(
    args: list[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    return run_git(args, cwd, text=True, env=env, input=stdin)


def _ok(result: subprocess.CompletedProcess[str], what: str) -> str:
    if result.returncode != 0:
        raise ConfigError(f"git {what} failed: {(result.stderr or result.stdout).strip()[:300]}")
    return result.stdout.strip()


@attrs.frozen
class _Repo:
    top: Path
    git_dir: Path
    index: Path
    head: str | None


def _repo(cwd: str | Path) -> _Repo | None:
    """The work tree ``cwd`` is in (``None``: not a git work tree, or no git)."""
    here = Path(cwd)
    if shutil.which("git") is None or not here.is_dir():
        return None
    found = _git(
        ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-path", "index"], here
    )
    if found.returncode != 0:
        return None
    lines = found.stdout.splitlines()
    if len(lines) < 3:
        return None
    top = Path(lines[0])
    index = Path(lines[2])
    if not index.is_absolute():
        index = here / index
    head = _git(["rev-parse", "--verify", "--quiet", "HEAD"], top)
    return _Repo(top, Path(lines[1]), index, head.stdout.strip() if head.returncode == 0 else None)


def _snapshot(repo: _Repo) -> str:
    """The tree of the work tree as it is now (tracked and untracked, ignored files left out),
    written through a temporary index: the user's index is untouched."""
    fd, tmp = tempfile.mkstemp(prefix="ringleader-checkpoint-", suffix=".index", dir=repo.git_dir)
    os.close(fd)
    try:
        if repo.index.is_file():
            shutil.copy2(repo.index, tmp)  # stat data and mtime: racily clean files re-read
        else:
            os.unlink(tmp)
        env = {"GIT_INDEX_FILE": tmp}
        _ok(_git(["add", "-A", "--", "."], repo.top, env=env), "add (checkpoint)")
        return _ok(_git(["write-tree"], repo.top, env=env), "write-tree (checkpoint)")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _commit(repo: _Repo, tree: str, parent: str | None, message: str, when_ms: int) -> str:
    args = ["commit-tree", tree, "-m", message]
    if parent:
        args[2:2] = ["-p", parent]
    date = f"@{when_ms // 1000} +0000"
    env = {**_IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return _ok(_git(args, repo.top, env=env), "commit-tree (checkpoint)")


def _tree_of(repo: _Repo, commit: str) -> str:
    return _ok(_git(["rev-parse", f"{commit}^{{tree}}"], repo.top), "rev-parse")


@attrs.frozen
class Checkpoint:
    """One checkpoint: its number, the turn it followed, when, the files it changed against the
    previous checkpoint (``status\\tpath``, as ``git diff-tree --name-status``), its commit."""

    n: int
    turn: int
    time_ms: int
    files: tuple[str, ...]
    commit: str
    ref: str
    session_id: str | None = None
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "n": self.n,
            "turn": self.turn,
            "timeMs": self.time_ms,
            "files": list(self.files),
            "commit": self.commit,
            "ref": self.ref,
            "sessionId": self.session_id,
            "note": self.note,
        }


def _message(run_key: str, n: int, turn: int, session_id: str | None, note: str) -> str:
    lines = [f"ringleader checkpoint {n} of {run_key}", "", f"turn: {turn}"]
    if session_id:
        lines.append(f"session: {session_id}")
    if note:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"


def _field(body: str, name: str) -> str | None:
    for line in body.splitlines():
        if line.startswith(f"{name}: "):
            return line[len(name) + 2 :]
    return None


def _list(repo: _Repo, run_key: str) -> list[Checkpoint]:
    prefix = checkpoint_ref_prefix(run_key)
    listed = _ok(
        _git(
            [
                "for-each-ref",
                "--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(parent)"
                "%00%(contents:body)%00%00",
                f"{prefix}/",
            ],
            repo.top,
        ),
        "for-each-ref",
    )
    found: list[Checkpoint] = []
    for record in listed.split("\0\0"):
        record = record.strip("\n")
        if not record:
            continue
        ref, commit, when, parent, body = (record.split("\0") + [""] * 5)[:5]
        tail = ref.rsplit("/", 1)[-1]
        if not tail.isdigit():
            continue
        base = parent.split()[0] if parent.strip() else None
        files: tuple[str, ...] = ()
        if base is not None:
            changed = _git(
                ["diff-tree", "-r", "--no-commit-id", "--name-status", "-M", base, commit],
                repo.top,
            )
            files = tuple(line for line in changed.stdout.splitlines() if line)
        turn = _field(body, "turn")
        found.append(
            Checkpoint(
                n=int(tail),
                turn=int(turn) if turn and turn.isdigit() else 0,
                time_ms=int(when or 0) * 1000,
                files=files,
                commit=commit,
                ref=ref,
                session_id=_field(body, "session"),
                note=_field(body, "note") or "",
            )
        )
    return sorted(found, key=lambda c: c.n)


async def list_checkpoints(cwd: str | Path, run_key: str) -> list[Checkpoint]:
    """The checkpoints of ``run_key`` in the repository of ``cwd``, oldest first.

    Raises:
        ConfigError: ``cwd`` is not in a git work tree (checkpoints need one).
    """

    def work() -> list[Checkpoint]:
        if not Path(cwd).is_dir():
            raise ConfigError(f"the run's workspace {cwd} is gone")
        repo = _repo(cwd)
        if repo is None:
            raise ConfigError(f"{cwd} is not in a git work tree: runs there have no checkpoints")
        return _list(repo, run_key)

    return await trio.to_thread.run_sync(work)


@attrs.define(eq=False)
class Checkpointer:
    """Records a run's checkpoints as its events go by (see the module docstring). Build it with
    :meth:`before_start`; the runner calls :meth:`observe` for every event (a plain call: it
    makes a coroutine only at a turn boundary). A git failure is logged and ends the recording:
    it never fails the run.

    A checkpoint is taken when ringleader *sees* a turn end (the next answer begins, or the run
    is done); a runtime does not wait for it, so one that is already further along by then (an
    in-process loop whose events are read in a batch) has its later changes in that checkpoint
    too: checkpoints never miss a change, but a fast turn may share one with the next."""

    repo: _Repo
    run_key: str
    clock: Callable[[], int] = now_ms
    last_tree: str | None = None
    last_commit: str | None = None
    n: int = 0
    turns: int = 0
    in_turn: bool = False
    ended: bool = False
    """A turn ended (tool results, or ``turn-complete``) and no checkpoint followed it yet."""
    broken: bool = False

    @classmethod
    async def before_start(
        cls, cwd: str | None, *, clock: Callable[[], int] = now_ms
    ) -> Checkpointer | None:
        """A recorder for a run about to start in ``cwd``, holding the state it starts from
        (the future checkpoint 0: take it *before* the runtime starts, which may write at once);
        ``None`` when ``cwd`` is not in a git work tree with a commit. Name its run
        (:attr:`run_key`) before the events come."""
        if cwd is None:
            return None
        repo = await trio.to_thread.run_sync(_repo, cwd)
        if repo is None or repo.head is None:
            return None
        self = cls(repo, "", clock=clock)
        try:
            self.last_tree = await trio.to_thread.run_sync(_snapshot, repo)
        except ConfigError as exc:
            _log.warning("%s: no checkpoints: %s", cwd, exc)
            return None
        return self

    def observe(self, event: RuntimeEvent, session_id: str | None) -> Awaitable[None] | None:
        if self.broken:
            return None
        kind = type(event)
        if kind is TextDelta or kind is ToolCall:
            if not self.in_turn:
                self.in_turn = True
                pending = self.ended
                self.ended = False
                turn = self.turns
                self.turns += 1
                if pending:  # the previous turn's tools have run: its state is final
                    return self._record(turn, session_id)
        elif kind is ToolResult or (isinstance(event, Status) and event.phase == "turn-complete"):
            self.in_turn = False
            self.ended = True
        elif kind is Done:
            self.in_turn = False
            self.ended = False
            return self._record(self.turns, session_id)
        return None

    async def _record(self, turn: int, session_id: str | None) -> None:
        try:
            await trio.to_thread.run_sync(self._record_sync, turn, session_id)
        except Exception as exc:
            self.broken = True
            _log.warning("%s: checkpoints stopped: %s", self.run_key, exc)

    def _save(self, n: int, tree: str, turn: int, session_id: str | None, note: str = "") -> None:
        parent = self.last_commit or self.repo.head
        message = _message(self.run_key, n, turn, session_id, note)
        commit = _commit(self.repo, tree, parent, message, self.clock())
        ref = f"{checkpoint_ref_prefix(self.run_key)}/{n}"
        _ok(_git(["update-ref", ref, commit], self.repo.top), "update-ref (checkpoint)")
        self.last_tree, self.last_commit, self.n = tree, commit, n

    def _record_sync(self, turn: int, session_id: str | None) -> None:
        tree = _snapshot(self.repo)
        if tree == self.last_tree:
            return
        if self.last_commit is None and self.last_tree is not None:
            # the first change: checkpoint 0 keeps the state the run started from
            self._save(0, self.last_tree, 0, session_id, "the state the run started from")
        self._save(self.n + 1, tree, turn, session_id)


@attrs.frozen
class Rewound:
    """What :func:`rewind` did: the checkpoint restored, the files it wrote and deleted, and
    the checkpoint that keeps the state from before the rewind."""

    checkpoint: Checkpoint
    written: tuple[str, ...]
    deleted: tuple[str, ...]
    saved: Checkpoint | None


def _rewind_sync(cwd: str | Path, run_key: str, n: int, clock: Callable[[], int]) -> Rewound:
    if not Path(cwd).is_dir():
        raise ConfigError(f"the run's workspace {cwd} is gone")
    repo = _repo(cwd)
    if repo is None:
        raise ConfigError(f"{cwd} is not in a git work tree: runs there have no checkpoints")
    found = _list(repo, run_key)
    target = next((c for c in found if c.n == n), None)
    if target is None:
        have = ", ".join(str(c.n) for c in found) or "none"
        raise ConfigError(
            f"run {run_key!r} has no checkpoint {n} (it has: {have}; see `ringleader checkpoints`)"
        )
    current = _snapshot(repo)
    wanted = _tree_of(repo, target.commit)
    saved: Checkpoint | None = None
    last = found[-1]
    trees = _ok(
        _git(["rev-parse", *(f"{c.commit}^{{tree}}" for c in found)], repo.top), "rev-parse"
    )
    if current not in trees.split():  # keep what is there now: the rewind can be undone
        number = last.n + 1
        commit = _commit(
            repo,
            current,
            last.commit,
            _message(run_key, number, last.turn, last.session_id, f"before rewind to {n}"),
            clock(),
        )
        ref = f"{checkpoint_ref_prefix(run_key)}/{number}"
        _ok(_git(["update-ref", ref, commit], repo.top), "update-ref (checkpoint)")
        saved = Checkpoint(
            number, last.turn, clock(), (), commit, ref, last.session_id, f"before rewind to {n}"
        )
    changes = _ok(
        _git(["diff-tree", "-r", "-z", "--no-renames", "--name-status", current, wanted], repo.top),
        "diff-tree",
    )
    parts = [p for p in changes.split("\0") if p]
    written: list[str] = []
    deleted: list[str] = []
    for status, path in zip(parts[::2], parts[1::2], strict=True):
        (deleted if status == "D" else written).append(path)
    for rel in deleted:
        target_path = repo.top / rel
        with contextlib.suppress(FileNotFoundError):
            target_path.unlink()
        folder = target_path.parent
        while folder != repo.top:
            try:
                folder.rmdir()  # only when empty
            except OSError:
                break
            folder = folder.parent
    if written:
        fd, tmp = tempfile.mkstemp(prefix="ringleader-rewind-", suffix=".index", dir=repo.git_dir)
        os.close(fd)
        os.unlink(tmp)
        try:
            env = {"GIT_INDEX_FILE": tmp}
            _ok(_git(["read-tree", wanted], repo.top, env=env), "read-tree (rewind)")
            _ok(
                _git(
                    ["checkout-index", "-f", "-z", "--stdin"],
                    repo.top,
                    env=env,
                    stdin="\0".join(written) + "\0",
                ),
                "checkout-index (rewind)",
            )
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return Rewound(target, tuple(written), tuple(deleted), saved)


async def rewind(
    cwd: str | Path, run_key: str, n: int, *, clock: Callable[[], int] = now_ms
) -> Rewound:
    """Make the work tree of ``cwd`` what it was at checkpoint ``n`` of ``run_key`` (see the
    module docstring).

    Raises:
        ConfigError: not a git work tree, or no such checkpoint.
    """
    return await trio.to_thread.run_sync(_rewind_sync, cwd, run_key, n, clock)
