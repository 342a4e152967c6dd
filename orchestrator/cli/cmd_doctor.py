"""``ringleader doctor``: drift, the runtime versions runs used, open breakers (the body:
:mod:`orchestrator.cli.doctor`)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    config_option,
    json_option,
    load_cli_config,
    sub_command,
)
from orchestrator.core.registry import (
    discover_runtimes,
)

__all__ = ["register"]


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    specs = discover_runtimes()
    loaded = load_cli_config(args.config_file, specs)
    from orchestrator.cli.doctor import doctor

    return trio.run(
        lambda: doctor(specs, loaded, as_json=bool(args.json), out=out, repair=bool(args.repair))
    )


def register(sub: Any) -> None:
    """Add doctor to the command line."""
    doctor_cmd = sub_command(
        sub,
        "doctor",
        "report runtime drift, the runtime versions runs used, and open breakers",
        "Check the event log (SQLite's integrity check) and report, per runtime version, the frame types its adapter did not "
        "know and the frames that came without fields it expects (a runtime upgrade that changed "
        "its output), how many runs saw them and since when; how many runs used each runtime "
        "version; and the circuit breakers open now. Exit status 1 when the log is damaged, there is "
        "drift or an open breaker.",
        ["ringleader doctor", "ringleader doctor --json"],
    )
    json_option(doctor_cmd, "the findings (one JSON object per line)")
    doctor_cmd.add_argument(
        "--repair",
        action="store_true",
        help="when the event log's integrity check fails, rebuild its indexes and check again; "
        "e.g. doctor --repair",
    )
    config_option(doctor_cmd)
    doctor_cmd.set_defaults(handler=_handle)
