"""``ringleader open``: take a run over in its runtime's own interactive CLI (``claude --resume
ID``, ``codex resume ID``), in the run's workspace, with its home and environment (see
:mod:`orchestrator.engine.reviewloop.takeover`). The command replaces this process."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

import trio

from orchestrator.cli.options import config_option, load_cli_config, registry_for, sub_command
from orchestrator.core.errors import ConfigError

__all__ = ["register"]


async def _command(args: argparse.Namespace) -> Any:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.core.registry import discover_runtimes
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.reviewloop.takeover import take_over

    specs = discover_runtimes()
    registry = registry_for(specs, load_cli_config(args.config_file, specs))
    state = usable_state_dir()
    async with EventLog.open(state / "events.db") as log:
        return await take_over(log, registry, args.run_key, state_dir=state)


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    found = trio.run(_command, args)
    print(
        f"ringleader: opening {found.runtime_id} on session {found.session_id} in {found.cwd}",
        file=sys.stderr,
        flush=True,
    )
    out.flush()
    try:
        os.chdir(found.cwd)
        os.execvpe(found.argv[0], list(found.argv), found.env)
    except OSError as exc:
        raise ConfigError(
            f"cannot start {found.argv[0]}: {exc.strerror or exc} (see `ringleader runtimes`)"
        ) from None
    return 0  # not reached: exec replaced this process


def register(sub: Any) -> None:
    """Add open to the command line."""
    opened = sub_command(
        sub,
        "open",
        "continue a run's session by hand in its runtime's interactive CLI",
        "Start the runtime's own interactive CLI on the run's recorded session, in the run's "
        "workspace, with the home and environment its runs used (Claude Code: claude --resume "
        "ID; Codex: codex resume ID), replacing this process. Runtimes without an interactive "
        "mode (native, scripted, ACP agents, OpenClaw, Hermes) are refused: continue them with "
        "`ringleader run --resume`.",
        ["ringleader open last", "ringleader open 'runtime:claude-code:task:1a2b:run-3c4d'"],
    )
    opened.add_argument(
        "run_key", metavar="RUN", help="run key from `replay --list`, or `last`; e.g. last"
    )
    config_option(opened)
    opened.set_defaults(handler=_handle)
