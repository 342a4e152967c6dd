"""``ringleader trust [DIR]``: let a project's ``ringleader.toml`` set what can redirect a key or
run code (``binary``, ``base_url``, ``api_key_env``, ``extra_args``, ``mcp_servers``, hooks,
workspace commands, schedules, notification URLs, ``permission = "allow"``, …) and let the
runtimes read their own project files; recorded in the user config
(:func:`orchestrator.core.config.trust_directory`). What is ignored until then: docs/security.md."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from orchestrator.cli.options import sub_command
from orchestrator.core.config import trust_directory, trusted_directories, user_config_path

__all__ = ["register"]


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    if args.list:
        for directory in trusted_directories():
            out.write(f"{directory}\n")
        return 0
    directory, added = trust_directory(args.dir)
    where = user_config_path()
    if added:
        out.write(f"trusted {directory} (recorded in {where})\n")
    else:
        out.write(f"{directory} was already trusted (in {where})\n")
    return 0


def register(sub: Any) -> None:
    """Add trust to the command line."""
    trust = sub_command(
        sub,
        "trust",
        "trust a directory's ringleader.toml to set binaries, URLs, keys and MCP servers",
        "A ringleader.toml in the working directory comes with whatever repository is there: "
        "unless its directory is trusted it may not set what can run code, redirect a key or "
        "loosen your protections (a runtime's binary, base_url, api_key_env and extra_args, MCP "
        "servers, hooks, workspace setup/teardown, schedules, notification URLs, accounts, "
        'prices, permission = "allow", sandbox paths or kind = "none"), its budgets, breaker '
        "and max_runs may only be stricter than yours, and the runtimes' own project "
        "files (.claude/, .mcp.json, .codex/, opencode.json; Hermes' language servers; "
        "OpenClaw's .env) start nothing; each ignored key is "
        "said on stderr. Trusting a directory (and what is under it) records it in your user "
        "config ([[trusted]] directory = …); remove that entry to take it back. What trust "
        "covers, and what it does not: docs/security.md.",
        ["ringleader trust", "ringleader trust ~/src/myproject", "ringleader trust --list"],
    )
    trust.add_argument(
        "dir",
        nargs="?",
        type=Path,
        default=Path("."),
        help="the directory to trust (default: the current one); e.g. ~/src/myproject",
    )
    trust.add_argument(
        "--list", action="store_true", help="print the trusted directories, one per line"
    )
    trust.set_defaults(handler=_handle)
