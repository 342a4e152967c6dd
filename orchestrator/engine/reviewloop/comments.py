"""Review comments on a run's changes, collected and then sent back to its agent as one turn.

A comment names a file of the run's workspace (relative to the repository's top level, as a
diff names it; relative to the workspace in a temporary copy), a line or a range of lines, and
the text. The lines themselves are read from the workspace when the comment is made and kept
with it, so the follow-up quotes what the person saw even if the agent changes the file before
the comments are sent.

Comments are durable: :class:`CommentBook` keeps them in ``comments.db`` (SQLite, 0600) in the
state directory, so ``ringleader comment``, the board of ``ringleader serve`` and ``run
--board`` share them across processes. :func:`follow_up_prompt` turns the pending comments of a
run into the one message its agent gets — each file, line range, the lines and the comment —
sent on the same session: a steer when the run is live in the sending process and its runtime
is steerable, otherwise a resumed turn (as ``run --resume``); see ``orchestrator.cli.cmd_comment``
and the board's ``POST /runs/KEY/comments/send``.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from orchestrator.core.errors import ConfigError
from orchestrator.core.events import now_ms
from orchestrator.core.lifetime import ensure_private_dir
from orchestrator.core.redact import redact_text
from orchestrator.engine.eventlog import RunRecorder, SessionRow
from orchestrator.engine.reviewloop.bootstrap import register_workspace_secrets

__all__ = [
    "COMMENTS_DB",
    "Comment",
    "CommentBook",
    "comment_range",
    "commented_lines",
    "follow_up_prompt",
    "parse_location",
    "resolve_commented_run",
]

COMMENTS_DB = "comments.db"
MAX_COMMENT_LINES = 400
"""The longest range a comment may quote."""
MAX_COMMENT_CHARS = 20_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key TEXT NOT NULL,
    path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    body TEXT NOT NULL,
    lines TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    sent_ms INTEGER,
    sent_via TEXT,
    follow_up TEXT
);
CREATE INDEX IF NOT EXISTS comments_by_run ON comments (run_key, id);
"""


@attrs.frozen
class Comment:
    """One comment: ``path`` lines ``start``–``end`` (1-based, inclusive), the ``lines`` as
    they were when it was made, the ``text``; once sent, when, how (``steer`` / ``resume``) and
    the follow-up (a run-key prefix)."""

    id: int
    run_key: str
    path: str
    start: int
    end: int
    text: str
    lines: tuple[str, ...]
    created_ms: int
    sent_ms: int | None = None
    sent_via: str | None = None
    follow_up: str | None = None

    @property
    def location(self) -> str:
        span = str(self.start) if self.start == self.end else f"{self.start}-{self.end}"
        return f"{self.path}:{span}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "runKey": self.run_key,
            "file": self.path,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "lines": list(self.lines),
            "createdMs": self.created_ms,
            "sentMs": self.sent_ms,
            "sentVia": self.sent_via,
            "followUp": self.follow_up,
        }


def _row(r: Sequence[Any]) -> Comment:
    return Comment(
        id=int(r[0]),
        run_key=str(r[1]),
        path=str(r[2]),
        start=int(r[3]),
        end=int(r[4]),
        text=str(r[5]),
        lines=tuple(json.loads(r[6])),
        created_ms=int(r[7]),
        sent_ms=None if r[8] is None else int(r[8]),
        sent_via=None if r[9] is None else str(r[9]),
        follow_up=None if r[10] is None else str(r[10]),
    )


_COLUMNS = (
    "id, run_key, path, start_line, end_line, body, lines, created_ms, sent_ms, sent_via, follow_up"
)


@attrs.define(eq=False)
class CommentBook:
    """The comments of every run, in ``<state_dir>/comments.db`` (one short connection per call,
    in a worker thread: several processes share the file)."""

    path: Path

    @classmethod
    def in_state_dir(cls, state_dir: Path) -> CommentBook:
        return cls(Path(state_dir) / COMMENTS_DB)

    def _connect(self) -> sqlite3.Connection:
        if not self.path.parent.exists():
            ensure_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.close(fd)
        conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=5000")
        conn.executescript(_SCHEMA)
        return conn

    def _add(
        self, run_key: str, path: str, start: int, end: int, text: str, lines: Sequence[str]
    ) -> Comment:
        conn = self._connect()
        try:
            created = now_ms()
            cur = conn.execute(
                "INSERT INTO comments (run_key, path, start_line, end_line, body, lines, "
                "created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_key, path, start, end, text, json.dumps(list(lines)), created),
            )
            return Comment(
                int(cur.lastrowid or 0), run_key, path, start, end, text, tuple(lines), created
            )
        finally:
            conn.close()

    async def add(
        self, run_key: str, path: str, start: int, end: int, text: str, lines: Sequence[str]
    ) -> Comment:
        """Keep a new comment (its text and lines redacted); returns it."""
        text = redact_text(text)
        lines = [redact_text(line) for line in lines]
        return await trio.to_thread.run_sync(self._add, run_key, path, start, end, text, lines)

    def _list(self, run_key: str, pending: bool) -> list[Comment]:
        conn = self._connect()
        try:
            where = "run_key = ?" + (" AND sent_ms IS NULL" if pending else "")
            cur = conn.execute(
                f"SELECT {_COLUMNS} FROM comments WHERE {where} ORDER BY id", (run_key,)
            )
            return [_row(r) for r in cur.fetchall()]
        finally:
            conn.close()

    async def comments(self, run_key: str, *, pending: bool = False) -> list[Comment]:
        """The comments on ``run_key``, oldest first (``pending``: only those not yet sent)."""
        return await trio.to_thread.run_sync(self._list, run_key, pending)

    def _withdraw(self, run_key: str, comment_id: int) -> bool:
        conn = self._connect()
        try:
            cur = conn.execute(
                "DELETE FROM comments WHERE id = ? AND run_key = ? AND sent_ms IS NULL",
                (comment_id, run_key),
            )
            return cur.rowcount > 0
        finally:
            conn.close()

    async def withdraw(self, run_key: str, comment_id: int) -> None:
        """Drop comment ``comment_id`` of ``run_key`` before it is sent.

        Raises:
            ConfigError: no such comment waiting on that run (never made, or already sent).
        """
        if not await trio.to_thread.run_sync(self._withdraw, run_key, comment_id):
            raise ConfigError(f"no comment #{comment_id} waiting on {run_key} (sent already?)")

    def _mark(self, ids: Sequence[int], via: str, follow_up: str | None) -> None:
        conn = self._connect()
        try:
            when = now_ms()
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "UPDATE comments SET sent_ms = ?, sent_via = ?, follow_up = ? "
                "WHERE id = ? AND sent_ms IS NULL",
                [(when, via, follow_up, i) for i in ids],
            )
            conn.execute("COMMIT")
        finally:
            conn.close()

    async def mark_sent(self, ids: Sequence[int], *, via: str, follow_up: str | None) -> None:
        """Record that comments ``ids`` went to the agent (``via`` ``steer`` or ``resume``)."""
        await trio.to_thread.run_sync(self._mark, list(ids), via, follow_up)


_LOCATION = re.compile(r"^(?P<path>.+):(?P<start>\d+)(?:-(?P<end>\d+))?$")


def parse_location(text: str) -> tuple[str, int, int]:
    """``FILE:LINE`` or ``FILE:START-END`` → ``(file, start, end)``.

    Raises:
        ConfigError: not that shape, or a range that is empty or backwards.
    """
    match = _LOCATION.match(text.strip())
    if match is None:
        raise ConfigError(f"{text!r} is not FILE:LINE or FILE:START-END (e.g. src/app.py:12-14)")
    start = int(match.group("start"))
    end = int(match.group("end") or start)
    return _checked(match.group("path"), start, end)


def comment_range(path: str, start: int, end: int) -> tuple[str, int, int]:
    """``(path, start, end)`` checked as :func:`parse_location` checks it."""
    return _checked(path, start, end)


def _checked(path: str, start: int, end: int) -> tuple[str, int, int]:
    if start < 1 or end < start:
        raise ConfigError(f"{path}:{start}-{end}: lines start at 1 and a range goes forward")
    if end - start + 1 > MAX_COMMENT_LINES:
        raise ConfigError(
            f"{path}:{start}-{end}: a comment quotes at most {MAX_COMMENT_LINES} lines"
        )
    return path, start, end


def _base(cwd: Path) -> Path:
    """Where a comment's path is relative to: the repository's top level (as a diff names
    files), else the workspace itself."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def _commented_lines(cwd: str, path: str, start: int, end: int) -> tuple[str, list[str]]:
    here = Path(cwd)
    if not here.is_dir():
        raise ConfigError(f"the run's workspace {cwd} is gone")
    # a comment may quote a line of a copied .env: its secrets are redacted like the runs'
    register_workspace_secrets(here)
    base = _base(here).resolve()
    candidates = [base / path, here / path]
    target = next((c for c in candidates if c.is_file()), None)
    if target is None:
        raise ConfigError(f"{path}: no such file in the run's workspace ({base})")
    resolved = target.resolve()
    try:
        rel = resolved.relative_to(base)
    except ValueError:
        raise ConfigError(f"{path}: outside the run's workspace ({base})") from None
    try:
        text = resolved.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file; comment on text files") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    lines = text.splitlines()
    if end > len(lines):
        raise ConfigError(f"{path}: has {len(lines)} lines; {start}-{end} is past its end")
    return rel.as_posix(), lines[start - 1 : end]


async def commented_lines(cwd: str, path: str, start: int, end: int) -> tuple[str, list[str]]:
    """The file's path as comments name it and its lines ``start``–``end`` in the workspace
    ``cwd`` (the workspace's secrets registered for redaction first, as a run does).

    Raises:
        ConfigError: the workspace or file is gone, outside the workspace, not UTF-8 text, or
            shorter than the range.
    """
    return await trio.to_thread.run_sync(_commented_lines, cwd, path, start, end)


async def resolve_commented_run(log: RunRecorder, run_key: str) -> tuple[str, SessionRow]:
    """The run ``run_key`` names (``last``: the newest run that recorded a session) and its
    session row (its working directory, runtime and session).

    Raises:
        ConfigError: no such run, or it recorded no session (nothing to comment on or resume).
    """
    if run_key == "last":
        for run in reversed(await log.runs()):
            found = await log.get_session(run.run_key)
            if found is not None and found.run_key == run.run_key and found.origin_cwd:
                return run.run_key, found
        raise ConfigError("the event log has no run with a recorded session yet")
    session = await log.get_session(run_key)
    if session is None or session.run_key != run_key:
        known = {row.run_key for row in await log.runs()}
        if run_key not in known:
            raise ConfigError(
                f"no run {run_key!r} in the event log (see `ringleader replay --list`)"
            )
        raise ConfigError(
            f"run {run_key!r} recorded no session: there is nothing to send comments to"
        )
    if not session.origin_cwd:
        raise ConfigError(f"run {run_key!r} recorded no working directory")
    return run_key, session


def follow_up_prompt(comments: Sequence[Comment]) -> str:
    """The one message that sends ``comments`` to the agent: each file, line range, the lines
    (numbered) and the comment."""
    count = len(comments)
    parts = [
        f"A reviewer left {count} comment{'s' if count != 1 else ''} on your changes. Address "
        "each one in the files (the quoted lines are what the reviewer saw; the file may have "
        "changed since), then say briefly what you changed.",
    ]
    for index, comment in enumerate(comments, 1):
        span = (
            f"line {comment.start}"
            if comment.start == comment.end
            else f"lines {comment.start}-{comment.end}"
        )
        width = len(str(comment.end))
        quoted = "\n".join(
            f"    {n:>{width}} | {line}" for n, line in enumerate(comment.lines, comment.start)
        )
        parts.append(f"{index}. {comment.path}, {span}:\n{quoted}\n   Comment: {comment.text}")
    return "\n\n".join(parts)
