"""``ringleader acp``: serve a runtime as an Agent Client Protocol agent on stdin/stdout."""

from __future__ import annotations

import argparse
from contextlib import AsyncExitStack
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    approvals_option,
    asking,
    load_cli_config,
    model_server_option,
    model_servers,
    registry_for,
    sub_command,
)
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import (
    discover_runtimes,
)

__all__ = ["register"]


async def _acp(
    runtime_id: str,
    model: str | None,
    config_file: str | None,
    approvals: bool = False,
    script: str | None = None,
) -> int:
    from orchestrator.acp.server import serve_acp_stdio
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog

    specs = discover_runtimes()
    config = load_cli_config(config_file, specs)
    if approvals:
        config = asking(config, [runtime_id], "acp --approvals wait")
    if runtime_id not in {spec.id for spec in specs}:
        known = ", ".join(spec.id for spec in specs)
        raise ConfigError(f"unknown runtime {runtime_id!r}; known: {known}")
    async with AsyncExitStack() as stack:
        config = await model_servers(stack, specs, config, [runtime_id], script)
        registry = registry_for(specs, config)
        async with EventLog.open(usable_state_dir() / "events.db") as log:
            await serve_acp_stdio(
                registry, runtime_id, event_log=log, model=model, approvals=approvals
            )
    return 0


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(
        _acp,
        args.runtime,
        args.model,
        getattr(args, "config_file", None),
        args.approvals == "wait",
        args.model_server,
    )


def register(sub: Any) -> None:
    """Add acp to the command line."""
    acp = sub_command(
        sub,
        "acp",
        "serve a runtime as an Agent Client Protocol agent on stdin/stdout",
        "Serve a ringleader runtime as an ACP agent over stdio, for editors that speak ACP (Zed "
        "and others): point the editor's agent command at this. Runs are recorded in the "
        "event log like any other.",
        ["ringleader acp --runtime claude-code", "ringleader acp --runtime native"],
    )
    acp.add_argument("--runtime", required=True, help="runtime id (see `ringleader runtimes`)")
    acp.add_argument(
        "--model", default=None, help="model for every prompt; e.g. --model anthropic:claude-x"
    )
    approvals_option(acp, "wait", ", the ACP client (session/request_permission)")
    model_server_option(acp, "the runtime")
    acp.set_defaults(handler=_handle)
