"""``ringleader mcp``: ringleader's tools for an agent (start, watch, steer, abort, approve runs,
read their diffs) as an MCP server on stdin/stdout (the body: :mod:`orchestrator.mcp.server`)."""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

import trio

from orchestrator.cli.options import config_option, load_cli_config, registry_for, sub_command
from orchestrator.core.registry import discover_runtimes

__all__ = ["register"]


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.mcp.server import serve_mcp_stdio

    specs = discover_runtimes()
    registry = registry_for(specs, load_cli_config(args.config_file, specs))
    state = usable_state_dir()
    trio.run(lambda: serve_mcp_stdio(registry, state, cwd=os.getcwd()))
    return 0


def register(sub: Any) -> None:
    """Add mcp to the command line."""
    mcp = sub_command(
        sub,
        "mcp",
        "serve ringleader's tools to an agent as an MCP server on stdin/stdout",
        "Serve ringleader as an MCP server over stdio, so an agent can orchestrate others: "
        "start_run, list_runs, read_events, wait_run, say, abort_run, approve, read_diff. Runs "
        "it starts work in the current directory (or the cwd given) and are recorded in the "
        "event log like any other; a tool call that needs approval waits for `approve`.",
        [
            "ringleader mcp",
            'claude --mcp-config \'{"mcpServers": {"ringleader": {"command": "ringleader", '
            '"args": ["mcp"]}}}\'',
        ],
    )
    config_option(mcp)
    mcp.set_defaults(handler=_handle)
