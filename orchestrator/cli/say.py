"""``ringleader say``: the CLI side of follow-ups (:mod:`orchestrator.engine.followups`). Part of
the CLI: the library never imports this module."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.table import Table

from orchestrator.core.errors import ConfigError
from orchestrator.engine.eventlog import EventLog, RunRow
from orchestrator.engine.followups import Followup, FollowupBook, joined
from orchestrator.engine.runner import TaskSpec, resumable_task

__all__ = ["edit_followup", "list_followups", "say_command", "withdraw_followup"]

Resume = Callable[[str, TaskSpec], Awaitable[int]]
"""Runs the next turn on the run's runtime (follow-ups delivered); the exit code."""


def _pick(rows: list[RunRow], run: str) -> tuple[RunRow, RunRow]:
    """The run named (``last``: the newest) and the newest run of its session."""
    named = (
        rows[-1] if run == "last" and rows else next((r for r in rows if r.run_key == run), None)
    )
    if named is None:
        raise ConfigError(f"no run {run!r} (see `ringleader replay --list`)")
    latest = [r for r in rows if r.session_key == named.session_key][-1]
    return named, latest


async def say_command(state: Path, run: str, text: str, *, resume: Resume, out: TextIO) -> int:
    """Queue ``text`` for ``run``'s session. A process running it delivers it (steered in at once
    where the runtime is steerable, else as the next turn); with none, the next turn runs here."""
    book = FollowupBook.in_state_dir(state)
    async with EventLog.open(state / "events.db") as log:  # marks runs of dead processes
        named, latest = _pick(await log.runs(), run)
        queued = await book.queue(named.session_key, named.run_key, text)
        if latest.status == "running":
            out.write(
                f"ringleader: {queued.id} queued for {latest.run_key}; its process delivers it "
                "(steered in now if its runtime is steerable, else as its next turn)\n"
            )
            return 0
        messages = await book.take(named.session_key, "turn")
        if not messages:  # delivered meanwhile by the process that ran it
            out.write(f"ringleader: {queued.id} delivered\n")
            return 0
        try:
            runtime_id, task = await resumable_task(
                log, latest.run_key, joined(messages), agent_id="cli"
            )
        except ConfigError:
            await book.requeue(messages)
            raise
    out.write(f"ringleader: {len(messages)} message(s) for {latest.run_key}\n")
    out.flush()
    print(
        f"ringleader: no process runs it; its next turn runs here on {runtime_id}",
        file=sys.stderr,
        flush=True,
    )
    return await resume(runtime_id, task)


async def list_followups(state: Path, run: str | None, *, as_json: bool, out: TextIO) -> int:
    """The queued follow-ups (of ``run``'s session, when given), in order."""
    session: str | None = None
    if run is not None:
        async with EventLog.open(state / "events.db") as log:
            session = _pick(await log.runs(), run)[0].session_key
    messages = await FollowupBook.in_state_dir(state).list(session)
    if as_json:
        for message in messages:
            out.write(json.dumps(message.to_json()) + "\n")
        return 0
    if not messages:
        out.write("ringleader: no queued follow-ups\n")
        return 0
    table = Table("id", "run", "text", box=None)
    for message in messages:
        table.add_row(message.id, message.run_key, _short(message.text))
    Console(file=out, soft_wrap=True, no_color=True).print(table)
    return 0


async def edit_followup(state: Path, followup_id: str, text: str, out: TextIO) -> int:
    changed = await FollowupBook.in_state_dir(state).edit(followup_id, text)
    return _said(out, changed, "edited")


async def withdraw_followup(state: Path, followup_id: str, out: TextIO) -> int:
    changed = await FollowupBook.in_state_dir(state).withdraw(followup_id)
    return _said(out, changed, "withdrawn")


def _said(out: TextIO, message: Followup, verb: str) -> int:
    out.write(f"ringleader: {message.id} {verb} ({message.run_key})\n")
    return 0


def _short(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
