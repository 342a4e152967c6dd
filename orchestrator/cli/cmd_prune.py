"""``ringleader prune``: remove old runs from the event log and give the space back."""

from __future__ import annotations

import argparse
import re
import time
from typing import Any, TextIO

import trio

from orchestrator.cli.options import sub_command

__all__ = ["age_seconds", "register"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_FAILED = ("error", "failed", "interrupted", "aborted")
"""The statuses ``--keep-failed`` keeps."""


def age_seconds(text: str) -> float:
    """argparse ``type`` for an age: a number and a unit (``30d``, ``12h``, ``2w``, ``90m``)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if found is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an age: a number and a unit, s m h d or w (e.g. 30d)"
        )
    return float(found.group(1)) * _UNITS[found.group(2)]


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog

    db = usable_state_dir() / "events.db"
    if not db.exists():
        out.write(f"no event log yet ({db}): nothing to prune\n")
        return 0
    cutoff = int((time.time() - args.older_than) * 1000)

    async def prune() -> int:
        async with EventLog.open(db) as log:
            done = await log.prune(
                ended_before_ms=cutoff,
                keep=_FAILED if args.keep_failed else (),
                dry_run=args.dry_run,
            )
        what = f"{done.runs} run{'s' if done.runs != 1 else ''} ({done.events} events)"
        if args.dry_run:
            out.write(
                f"would remove {what} that ended before the cutoff; {_mb(done.bytes_before)}\n"
            )
        elif not done.runs:
            out.write(
                f"nothing to prune: no run ended before the cutoff; {_mb(done.bytes_before)}\n"
            )
        else:
            out.write(f"removed {what}: {_mb(done.bytes_before)} → {_mb(done.bytes_after)}\n")
        return 0

    return trio.run(prune)


def register(sub: Any) -> None:
    """Add prune to the command line."""
    prune = sub_command(
        sub,
        "prune",
        "remove old runs from the event log and reclaim the space",
        "Remove every run that ended longer ago than --older-than (never a run still going), with "
        "its events and its recorded session, then compact the log file (VACUUM). Workspaces are "
        "not touched (see the workspaces command).",
        ["ringleader prune", "ringleader prune --older-than 7d --keep-failed --dry-run"],
    )
    prune.add_argument(
        "--older-than",
        type=age_seconds,
        default=30 * 86400.0,
        metavar="AGE",
        help="remove runs that ended more than AGE ago (default 30d); e.g. --older-than 12h",
    )
    prune.add_argument(
        "--keep-failed",
        action="store_true",
        help="keep runs that failed, were aborted or interrupted; e.g. --keep-failed",
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="only say what would go; e.g. --dry-run"
    )
    prune.set_defaults(handler=_handle)
