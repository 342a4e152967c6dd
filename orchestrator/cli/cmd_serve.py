"""``ringleader serve``: the board and its feed over the event log, hosting runs (the body:
:mod:`orchestrator.cli.serve`)."""

from __future__ import annotations

import argparse
import os
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    asking,
    config_option,
    load_cli_config,
    model_server_option,
    model_servers,
    port_arg,
    registry_for,
    sub_command,
)
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import (
    discover_runtimes,
)

__all__ = ["feed_token", "register"]


async def _serve(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.serve import serve_board
    from orchestrator.engine.accounts import account_table

    specs = discover_runtimes()
    config = asking(load_cli_config(args.config_file, specs), (s.id for s in specs), "serve")
    async with AsyncExitStack() as stack:
        # --model-server: every runtime that can be pointed at one gets its own
        able = [spec.id for spec in specs if spec.model_server is not None]
        config = await model_servers(stack, specs, config, able, args.model_server)
        registry = registry_for(specs, config)
        return await serve_board(
            registry,
            host=args.host,
            port=args.port,
            token=feed_token(args),
            out=out,
            notify=config.config.notify,
            schedules=config.config.schedule,
            accounts=account_table(config.config),
        )


def feed_token(args: argparse.Namespace) -> str | None:
    """The feed token: ``--token-file``, else ``$RINGLEADER_FEED_TOKEN_FILE``, else
    ``$RINGLEADER_FEED_TOKEN``, else ``--token`` (which shows in ``ps``). One source only."""
    path: Path | None = args.token_file
    if path is None and os.environ.get("RINGLEADER_FEED_TOKEN_FILE"):
        path = Path(os.environ["RINGLEADER_FEED_TOKEN_FILE"])
    token: str | None = args.token
    if path is not None:
        if token is not None:
            raise ConfigError("give the feed token once: --token-file or --token, not both")
        try:
            token = path.expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"cannot read the feed token file {path}: {exc.strerror}") from None
        if not token:
            raise ConfigError(f"the feed token file {path} is empty")
    elif token is None:
        token = os.environ.get("RINGLEADER_FEED_TOKEN") or None
    return token


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(_serve, args, out)


def register(sub: Any) -> None:
    """Add serve to the command line."""
    serve = sub_command(
        sub,
        "serve",
        "serve the board (a web page) and its feed over the event log; hosts runs",
        "Serve the board at / (a column per state, a card per run, live; a page per run with "
        "abort, steer and approvals) and the event log to other boards: /events (Server-Sent "
        "Events, resumable), /runs (JSON), /runs/KEY (JSON Lines). Runs posted to /tasks (or "
        "from the board's form) run in this process, in the current directory. Loopback by "
        "default; any other address needs a token.",
        [
            "ringleader serve",
            "ringleader serve --port 0",
            "ringleader serve --host 0.0.0.0 --token-file ~/.config/ringleader/feed-token",
        ],
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="bind address (loopback by default; others need a token); e.g. --host ::1",
    )
    serve.add_argument(
        "--port",
        type=port_arg,
        default=8765,
        help="TCP port, 0 for a free one (printed); default 8765; e.g. --port 0",
    )
    serve.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="file holding the bearer token clients must send (required off loopback); by "
        "default the token comes from the file named by $RINGLEADER_FEED_TOKEN_FILE, else from "
        "$RINGLEADER_FEED_TOKEN; e.g. --token-file ~/.config/ringleader/feed-token",
    )
    serve.add_argument(
        "--token",
        default=None,
        help="the token itself (discouraged: any local user can read it in `ps`; prefer "
        "--token-file); e.g. --token local-test-only",
    )
    config_option(serve)
    model_server_option(serve, "every runtime that can use one")
    serve.set_defaults(handler=_handle)
