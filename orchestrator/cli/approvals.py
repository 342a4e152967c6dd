"""``ringleader approvals`` and ``ringleader approve``: the CLI side of the approval book
(:mod:`orchestrator.core.approvals`). Part of the CLI: the library never imports this module."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO, cast

from rich.console import Console
from rich.table import Table

from orchestrator.core.adapter import RESUME_PROMPT
from orchestrator.core.approvals import (
    ApprovalBook,
    ApprovalDecision,
    ApprovalEntry,
    DecisionScope,
)
from orchestrator.core.errors import ConfigError
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.runner import TaskSpec, resumable_task

__all__ = ["approve_command", "decision_from_args", "list_approvals", "revoke_grants"]

Resume = Callable[[str, TaskSpec], Awaitable[int]]
"""Runs the resumed task on its runtime (with approvals on); the exit code."""


def decision_from_args(
    allow: bool, message: str | None, edit: str | None, scope: DecisionScope = "once"
) -> ApprovalDecision:
    """``--allow [--edit JSON] [--for-run | --always]`` or ``--deny [--message M]``."""
    if not allow:
        if edit is not None:
            raise ConfigError("--edit goes with --allow (a denied call does not run)")
        if scope != "once":
            raise ConfigError("--for-run and --always go with --allow (a denial is for one call)")
        return ApprovalDecision(False, reject_message=message or None)
    if message is not None:
        raise ConfigError("--message goes with --deny (it is what the model is told)")
    if edit is None:
        return ApprovalDecision(True, scope=scope)
    if scope != "once":
        raise ConfigError("--edit is for one call: it does not go with --for-run or --always")
    try:
        edited: Any = json.loads(edit)
    except ValueError as exc:
        raise ConfigError(f"--edit: not JSON ({exc})") from None
    except RecursionError:  # valid JSON nested deeper than the parser goes (as the board, ACP)
        raise ConfigError("--edit: not JSON (nested too deeply)") from None
    if not isinstance(edited, dict):
        raise ConfigError("--edit: the tool's input must be a JSON object")
    return ApprovalDecision(True, input=cast(dict[str, Any], edited))


async def list_approvals(state: Path, *, as_json: bool, out: TextIO) -> int:
    """The pending approvals of the state directory, oldest first, then the standing grants
    (``--json``: one object per line; a grant's has ``"grant": true``)."""
    book = ApprovalBook.in_state_dir(state)
    entries = await book.pending()
    grants = await book.grants()
    if as_json:
        for entry in entries:
            out.write(json.dumps(entry.to_json(), default=str) + "\n")
        for grant in grants:
            out.write(json.dumps({"grant": True, **grant.to_json()}) + "\n")
        return 0
    if grants:
        table = Table("grant", "tool", "runtime", "where", "from", box=None)
        for grant in grants:
            where = grant.session_key if grant.scope == "run" else grant.cwd
            label = "rest of run" if grant.scope == "run" else "always"
            table.add_row(label, grant.tool, grant.runtime_id, where, grant.approval_id or "")
        Console(file=out, soft_wrap=True, no_color=True).print(table)
    if not entries:
        out.write("ringleader: no pending approvals\n")
        return 0
    table = Table("id", "tool", "input", "waiting", "age", "run", box=None)
    now = time.time() * 1000
    for entry in entries:
        alive = entry.owner is not None and entry.owner.alive()
        table.add_row(
            entry.id,
            entry.tool,
            _short(json.dumps(entry.input, default=str)),
            f"pid {entry.owner.pid}" if alive and entry.owner else "no (resumes on approve)",
            f"{max(0, (now - entry.created_ms) / 1000):.0f}s",
            entry.session_key or entry.session_id,
        )
    Console(file=out, soft_wrap=True, no_color=True).print(table)
    return 0


async def revoke_grants(state: Path, what: str, *, runtime_id: str | None, out: TextIO) -> int:
    """``approvals --revoke WHAT``: remove the standing grants ``WHAT`` names — the approval
    that made one (the ``from`` column, ``ap-…``) or a tool (all its grants; ``runtime_id``
    narrows to one runtime) — saying each; the tool asks again from its next call.

    Raises:
        ConfigError: no standing grant matches (nothing is removed).
    """
    book = ApprovalBook.in_state_dir(state)
    chosen = [
        g
        for g in await book.grants()
        if what in (g.approval_id, g.tool) and runtime_id in (None, g.runtime_id)
    ]
    if not chosen:
        on = f" on {runtime_id}" if runtime_id else ""
        raise ConfigError(
            f"--revoke: no standing grant of {what!r}{on} (`ringleader approvals` lists them: "
            "a tool, or the approval in the `from` column)"
        )
    for grant in chosen:
        gone = await book.revoke_grant(
            grant.scope, grant.tool, grant.runtime_id, grant.cwd, grant.session_key
        )
        said = "revoked" if gone else "already gone"
        out.write(f"ringleader: {said}: {grant.tool} allowed {grant.describe()}\n")
    return 0


async def approve_command(
    state: Path, approval_id: str, decision: ApprovalDecision, *, resume: Resume, out: TextIO
) -> int:
    """Decide ``approval_id``; if no live process waits on it, resume its run here. A decision
    whose resume failed (the runtime could not start, the run ended in error) is not used up:
    the same ``approve`` again resumes the run again."""
    book = ApprovalBook.in_state_dir(state)
    verb = "approved" if decision.approved else "rejected"
    try:
        entry = await book.decide(approval_id, decision)
    except ConfigError:
        entry = await _retry(state, book, approval_id, decision)
        if entry is None:
            raise
        out.write(f"ringleader: {entry.id} was {verb}; its resumed run failed: resuming again\n")
    else:
        reach = {"once": "", "run": ", and for the rest of its run", "always": ", and always here"}
        out.write(f"ringleader: {entry.id} {verb} ({entry.tool}{reach[decision.scope]})\n")
    out.flush()
    if entry.owner is not None and entry.owner.alive():
        out.write(f"ringleader: the run waiting on it (pid {entry.owner.pid}) goes on\n")
        return 0
    runtime_id, task = await _task(state, entry)
    assert task.resume is not None
    print(
        f"ringleader: its process is gone; resuming {task.resume.run_key} on {runtime_id}",
        file=sys.stderr,
        flush=True,
    )
    return await resume(runtime_id, task)


async def _retry(
    state: Path, book: ApprovalBook, approval_id: str, decision: ApprovalDecision
) -> ApprovalEntry | None:
    """The entry, when deciding it again the same way means retrying its resume: decided so,
    no live process waits on it, and no resume of its run went through (else ``None``: the
    decision stands, and the caller's error says so)."""
    entry = await book.get(approval_id)
    if entry is None or entry.decision is None or not entry.session_key:
        return None
    if entry.decision.approved != decision.approved:
        return None
    if entry.owner is not None and entry.owner.alive():
        return None
    async with EventLog.open(state / "events.db") as log:
        rows = await log.runs()
    own = {r.run_key for r in rows if r.session_key == entry.session_key}
    for row in rows:  # a resume of one of its runs that went through uses the decision up
        resumed_from = row.outcome.get("resumedFrom") if row.outcome else None
        if resumed_from in own and row.status not in ("error", "interrupted", "aborted"):
            return None
    return entry


async def _task(state: Path, entry: ApprovalEntry) -> tuple[str, TaskSpec]:
    if not entry.session_key:
        raise ConfigError(f"approval {entry.id}: its run recorded no session to resume")
    async with EventLog.open(state / "events.db") as log:
        session = await log.get_session(entry.session_key)  # its latest run
        key = session.run_key if session is not None and session.run_key else entry.session_key
        return await resumable_task(log, key, RESUME_PROMPT, agent_id=entry.agent_id or "agent")


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
