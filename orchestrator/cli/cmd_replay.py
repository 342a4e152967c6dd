"""``ringleader replay``: a run from the event log as it was shown live, or the list of runs."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    json_option,
    positive,
    sub_command,
)

__all__ = ["register"]


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import list_runs, replay

    if args.list:
        limit = None if args.all else args.limit
        return trio.run(lambda: list_runs(as_json=bool(args.json), out=out, limit=limit))
    return trio.run(lambda: replay(args.run_key, as_json=bool(args.json), out=out))


def register(sub: Any) -> None:
    """Add replay to the command line."""
    replay = sub_command(
        sub,
        "replay",
        "replay a run from the event log, or list the runs",
        "Show a logged run as it was shown live, or (--list) every run in the log: time, "
        "runtime, status, prompt, cost, run key.",
        [
            "ringleader replay --list",
            "ringleader replay last",
            "ringleader replay 'runtime:native:task:1a2b3c4d' --json",
        ],
    )
    replay.add_argument(
        "run_key",
        nargs="?",
        default="last",
        help="run key from `replay --list`, or `last` (default); e.g. last",
    )
    json_option(replay, "the events, with --list the runs (one JSON object per line)")
    replay.add_argument(
        "--list",
        action="store_true",
        help="list the newest runs in the log (oldest of them first); e.g. replay --list --json",
    )
    replay.add_argument(
        "--limit",
        type=positive,
        default=50,
        metavar="N",
        help="with --list: how many of the newest runs (default 50); e.g. --limit 200",
    )
    replay.add_argument(
        "--all", action="store_true", help="with --list: every run; e.g. replay --list --all"
    )
    replay.set_defaults(handler=_handle)
