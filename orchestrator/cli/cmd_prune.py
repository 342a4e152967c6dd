"""``ringleader prune``: remove old runs from the event log and give the space back."""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Sequence
from typing import Any, TextIO

import trio

from orchestrator.cli.options import config_option, sub_command

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
    keep = _FAILED if args.keep_failed else ()

    async def prune() -> int:
        async with EventLog.open(db) as log:
            chosen = await log.prune(ended_before_ms=cutoff, keep=keep, dry_run=True)
            if args.dry_run:
                done, forgot, spared, left = chosen, {}, {}, {}
            else:  # the runtimes' own copies first: a run whose copy stays is not pruned
                forgot, spared, left = await _forget(args, chosen.sessions, chosen.kept)
                done = await log.prune(ended_before_ms=cutoff, keep=keep, spare=list(spared))
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
        for runtime, count in forgot.items():
            out.write(f"removed {count} {runtime} session{'s' if count != 1 else ''} it kept\n")
        for runtime, why in left.items():
            out.write(f"left the {runtime} sessions of those runs where they are: {why}\n")
        for runtime, why in spared.items():
            out.write(f"kept the {runtime} runs: their sessions could not be removed: {why}\n")
        return 1 if spared else 0

    return trio.run(prune)


async def _forget(
    args: argparse.Namespace,
    removed: Sequence[tuple[str, str]],
    kept: Sequence[tuple[str, str]],
) -> tuple[dict[str, int], dict[str, str], dict[str, str]]:
    """Remove what runtimes keep themselves of the ``removed`` sessions (``(runtime, codec
    blob)``) that no ``kept`` one still names: per runtime, how many; why not, for those whose
    runs are then kept (it may work later); why not, for those left in place (the runtime is
    not installed: the runs go all the same)."""
    from orchestrator.cli.options import load_cli_config
    from orchestrator.core.errors import RingleaderError, RuntimeNotFoundError
    from orchestrator.core.registry import discover_runtimes

    runtimes = {runtime for runtime, _ in removed}
    if not runtimes:
        return {}, {}, {}
    specs = discover_runtimes()
    hooks = {s.id: s.forget_sessions for s in specs if s.id in runtimes and s.forget_sessions}
    if not hooks:
        return {}, {}, {}
    config = load_cli_config(args.config_file, specs)
    forgot: dict[str, int] = {}
    spared: dict[str, str] = {}
    left: dict[str, str] = {}
    for runtime, hook in hooks.items():
        try:
            count = await hook(
                config.runtime(runtime),
                [blob for r, blob in removed if r == runtime],
                [blob for r, blob in kept if r == runtime],
            )
        except RuntimeNotFoundError as exc:
            left[runtime] = str(exc).splitlines()[0]
        except RingleaderError as exc:
            spared[runtime] = str(exc).splitlines()[0]
        else:
            if count:
                forgot[runtime] = count
    return forgot, spared, left


def register(sub: Any) -> None:
    """Add prune to the command line."""
    prune = sub_command(
        sub,
        "prune",
        "remove old runs from the event log and reclaim the space",
        "Remove every run that ended longer ago than --older-than (never a run still going), with "
        "its events and its recorded session, then compact the log file (VACUUM). What a runtime "
        "keeps of those sessions itself goes too (OpenClaw's transcripts in <state>/openclaw, "
        "unless a kept run continues them; this starts an OpenClaw gateway once). Workspaces are "
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
    config_option(prune)
    prune.set_defaults(handler=_handle)
