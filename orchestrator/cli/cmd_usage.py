"""``ringleader usage``: the quota meters — per runtime and account, the rate-limit windows the
runs last reported (used %, resets at, source, when seen; ``orchestrator/engine/quota.py``)."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
from typing import Any, TextIO

from orchestrator.cli.options import (
    config_option,
    json_option,
    load_cli_config,
    sub_command,
    table,
)
from orchestrator.core.events import now_ms
from orchestrator.core.lifetime import existing_state_dir
from orchestrator.core.quota import DEFAULT_ACCOUNT, QuotaBook, usage_report
from orchestrator.core.registry import discover_runtimes

__all__ = ["register", "usage"]


def _when(epoch_ms: int | None) -> str:
    if epoch_ms is None:
        return "-"
    return _dt.datetime.fromtimestamp(epoch_ms / 1000).strftime("%Y-%m-%d %H:%M")


def usage(config_file: str | None, *, as_json: bool, out: TextIO) -> int:
    """Print the quota meters; every runtime (and configured account) without a reading is
    listed as unknown."""
    specs = discover_runtimes()
    loaded = load_cli_config(config_file, specs)
    accounts: dict[str, list[str]] = {spec.id: [DEFAULT_ACCOUNT] for spec in specs}
    for runtime_id, runtime in loaded.config.runtimes.items():
        names = list(runtime.accounts)
        accounts.setdefault(runtime_id, [DEFAULT_ACCOUNT]).extend(names)
    now = now_ms()
    readings = QuotaBook.in_state_dir(existing_state_dir()).readings()
    report = usage_report(readings, accounts, now_ms=now)
    if as_json:
        for row in report:
            out.write(json.dumps(row) + "\n")
        return 0
    cells: list[tuple[str, ...]] = [
        ("runtime", "account", "window", "used", "left", "resets", "state", "seen", "source")
    ]
    for row in report:
        if not row["windows"]:
            cells.append(
                (row["runtime"], row["account"], "-", "unknown", "unknown", "-", "-", "-", "-")
            )
            continue
        for w in row["windows"]:
            used = "unknown" if w["usedPercent"] is None else f"{w['usedPercent']:g}%"
            left = "unknown" if w["leftPercent"] is None else f"{w['leftPercent']:g}%"
            if not w["current"]:
                used, state = f"{used} (before its reset)", "reset"
            else:
                state = "held" if w["limited"] else (w["state"] or "-")
            cells.append(
                (
                    row["runtime"],
                    row["account"],
                    w["window"] + (f" ({w['windowMinutes']} min)" if w["windowMinutes"] else ""),
                    used,
                    left,
                    _when(w["resetsAt"]),
                    state,
                    _when(w["seenAt"]),
                    w["source"],
                )
            )
    table(cells, out)
    return 0


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    return usage(args.config_file, as_json=bool(args.json), out=out)


def register(sub: Any) -> None:
    """Add usage to the command line."""
    parser = sub_command(
        sub,
        "usage",
        "quota meters: each runtime's and account's rate-limit windows",
        "Show, per runtime and account, the rate-limit windows its runs last reported (Claude "
        "Code's five-hour and weekly windows, Codex's primary and secondary windows, any "
        "rate limit with a reset time): used %, what is left, when it resets, where the "
        "reading came from and when it was seen. Nothing is asked of the provider; a window "
        "never reported is shown as unknown, never as 0.",
        ["ringleader usage", "ringleader usage --json | jq .limitedUntil"],
    )
    json_option(parser, "one JSON object per runtime and account")
    config_option(parser)
    parser.set_defaults(handler=_handle)
