"""``ringleader workspaces``: the kept workspaces (run, size, age, applied?) and pruning them."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any, TextIO

import trio

from orchestrator.cli.options import json_option, sub_command

__all__ = ["register"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(text: str) -> float:
    """``7d``, ``12h``, ``30m``, ``2w``, ``90s`` → seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 7d, 12h or 30m")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


async def _workspaces(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.core.events import now_ms
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.review.housekeeping import (
        forget_start,
        kept_workspaces,
        remove_workspace,
        stale_starts,
    )
    from orchestrator.engine.review.records import task_prefix

    now = now_ms()
    removed: list[dict[str, Any]] = []
    async with EventLog.open(usable_state_dir() / "events.db") as log:
        rows = await log.workspaces()
        runs = await log.runs_under([task_prefix(row) for row in rows])
        kept = await trio.to_thread.run_sync(kept_workspaces, rows, runs)
        if args.prune:
            older = args.older_than
            for ws in kept:
                old = older is not None and ws.age_s(now) > older
                if ws.live or not (ws.row.applied is not None or old or not ws.exists):
                    continue
                await trio.to_thread.run_sync(remove_workspace, ws)
                await log.mark_workspace(ws.row.root, removed_ms=now_ms())
                why = (
                    "applied" if ws.row.applied is not None else "gone" if not ws.exists else "old"
                )
                removed.append({**ws.to_json(now), "reason": why})
            starts = await trio.to_thread.run_sync(stale_starts, rows, runs, now, older)
            for start in starts:  # a run in the person's own checkout: only its start is ours
                await trio.to_thread.run_sync(forget_start, start)
                await log.mark_workspace(start.row.root, removed_ms=now_ms())
                why = "its start, old" if start.exists else "its start, checkout gone"
                removed.append({**start.to_json(now), "reason": why})
            gone = {r["workspace"] for r in removed}
            kept = [ws for ws in kept if ws.row.root not in gone]
    if args.json:
        for item in removed:
            out.write(json.dumps({"removed": True, **item}) + "\n")
        for ws in kept:
            out.write(json.dumps(ws.to_json(now)) + "\n")
        return 0
    for item in removed:
        out.write(f"removed {item['workspace']} ({item['label']}, {item['reason']})\n")
    if not kept:
        out.write("no kept workspaces\n")
        return 0
    from rich.table import Table

    from orchestrator.cli.live import table_console

    table = Table(title="workspaces", title_justify="left")
    for name in ("task", "run", "status", "size", "age", "applied", "workspace"):
        table.add_column(name, overflow="fold")
    for ws in kept:
        applied = ws.row.applied
        table.add_row(
            f"{ws.row.group_id}/{ws.row.label}",
            ws.runs[-1].run_key if ws.runs else "-",
            ("live" if ws.live else ws.status) if ws.exists else "gone",
            _size(ws.size),
            _age(ws.age_s(now)),
            "-" if applied is None else str(applied.get("landedOn") or applied.get("how") or "yes"),
            f"{ws.row.root} ({ws.row.kind})",
        )
    table_console(out).print(table)
    return 0


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.core.errors import ConfigError

    if args.older_than is not None and not args.prune:
        raise ConfigError("workspaces: --older-than goes with --prune")
    return trio.run(_workspaces, args, out)


def register(sub: Any) -> None:
    """Add workspaces to the command line."""
    ws = sub_command(
        sub,
        "workspaces",
        "the kept workspaces of side-by-side runs, and pruning them",
        "Every workspace ringleader kept (git worktree or temporary copy): its task and run, "
        "the run's status, size, age and whether it was applied. --prune removes the applied "
        "ones (worktree and its ringleader/… branch, or copy and snapshot) and, with "
        "--older-than, the old ones; never one whose run is live. A run in your own checkout "
        "has no workspace, only its recorded start (a private ref, refs/ringleader/starts/…, "
        "that its diff is read against): --prune forgets the starts whose checkout is gone "
        "and, with --older-than, the old ones; your files, index and branches stay as they are.",
        [
            "ringleader workspaces",
            "ringleader workspaces --prune",
            "ringleader workspaces --prune --older-than 7d --json",
        ],
    )
    ws.add_argument("--prune", action="store_true", help="remove applied (and old) workspaces")
    ws.add_argument(
        "--older-than",
        type=duration,
        metavar="AGE",
        help="with --prune: also remove workspaces older than AGE (7d, 12h, 30m)",
    )
    json_option(ws, "the workspaces (one JSON object per line)")
    ws.set_defaults(handler=_handle)
