"""``ringleader schedules``: the ``[[schedule]]`` tasks of the configuration, their next firings
and their last results (``orchestrator/engine/schedule.py``; ``ringleader serve`` runs them)."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from orchestrator.cli.options import (
    config_option,
    json_option,
    load_cli_config,
    sub_command,
    table,
)
from orchestrator.core.lifetime import existing_state_dir
from orchestrator.core.registry import discover_runtimes

__all__ = ["register", "schedules"]


def schedules(config_file: str | None, *, as_json: bool, out: TextIO, count: int = 3) -> int:
    # the engine is imported when the command runs, not when the parser is built
    from orchestrator.engine.schedule import ScheduleBook, describe_cron, next_firings, wall_clock

    loaded = load_cli_config(config_file, discover_runtimes())
    book = ScheduleBook.in_state_dir(existing_state_dir())
    now = wall_clock()
    rows: list[dict[str, Any]] = []
    for schedule in loaded.config.schedule:
        entry = book.entry(schedule.id)
        rows.append(
            {
                "id": schedule.id,
                "cron": schedule.cron,
                "timezone": schedule.timezone,
                "explained": describe_cron(schedule),
                "runtime": schedule.runtime,
                "catchUp": schedule.catch_up,
                "overlap": schedule.overlap,
                "next": [m.isoformat() for m in next_firings(schedule, now, count)],
                "last": entry.get("last"),
                "history": entry.get("history") or [],
                "running": entry.get("running") or [],
                "missed": entry.get("missed") or [],
                "missedTotal": int(entry.get("missedTotal") or 0),
                "watchedUntil": entry.get("watchedUntil"),
            }
        )
    if as_json:
        for row in rows:
            out.write(json.dumps(row) + "\n")
        return 0
    if not rows:
        out.write(
            "no schedules: add [[schedule]] entries to ringleader.toml (docs/guide/running.md, 'Schedules')\n"
        )
        return 0
    cells: list[tuple[str, ...]] = [("schedule", "when", "next firings", "last result", "missed")]
    for row in rows:
        last: dict[str, Any] | None = row["last"]
        if row["running"]:
            shown = f"running since {row['running'][-1]}"
        elif last is None:
            shown = "never fired"
        else:
            key = f" ({last['runKey']})" if last.get("runKey") else ""
            shown = f"{last['status']} at {last['ended'] or last['scheduled']}{key}"
            if last["status"] != "success" and last.get("summary"):
                shown += f": {last['summary'][:80]}"
        missed = "-"
        if row["missedTotal"]:
            missed = f"{row['missedTotal']} (last {row['missed'][-1]})"
            missed += ", caught up" if row["catchUp"] else ", not run"
        cells.append(
            (
                row["id"],
                f"{row['cron']} {row['timezone']} ({row['explained']})",
                ", ".join(row["next"]),
                shown,
                missed,
            )
        )
    table(cells, out)
    return 0


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    return schedules(args.config_file, as_json=bool(args.json), out=out)


def register(sub: Any) -> None:
    """Add schedules to the command line."""
    parser = sub_command(
        sub,
        "schedules",
        "scheduled tasks: next firings and last results",
        "List the [[schedule]] entries of the configuration (cron expression, time zone, a task "
        "as in a batch file) that `ringleader serve` runs: the next firings, the last result "
        "(status, run key), firings running now and firings missed while the server was down.",
        ["ringleader schedules", "ringleader schedules --json | jq .next"],
    )
    json_option(parser, "one JSON object per schedule")
    config_option(parser)
    parser.set_defaults(handler=_handle)
