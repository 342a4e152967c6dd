"""``ringleader acp``: serve a runtime as an Agent Client Protocol agent on stdin/stdout, or
over the network with ``--listen HOST:PORT`` (WebSocket and Streamable HTTP; docs/acp.md)."""

from __future__ import annotations

import argparse
import signal
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    approvals_option,
    asking,
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

__all__ = ["listen_address", "register"]


def listen_address(text: str) -> tuple[str, int]:
    """argparse ``type`` for ``--listen``: ``HOST:PORT`` (``[::1]:PORT`` for IPv6; port 0
    picks a free one)."""
    host, colon, port = text.rpartition(":")
    host = host.strip("[]")
    if not colon or not host:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:8766)")
    return host, port_arg(port)


async def _acp(
    runtime_id: str,
    model: str | None,
    config_file: str | None,
    approvals: bool = False,
    script: str | None = None,
    listen: tuple[str, int] | None = None,
    token: str | None = None,
    out: TextIO | None = None,
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
    if listen is not None:
        from orchestrator.engine.feed import check_bind

        try:
            check_bind(listen[0], token)  # before anything starts
        except ConfigError as exc:
            raise ConfigError(f"acp --listen: {exc}") from None
    async with AsyncExitStack() as stack:
        config = await model_servers(stack, specs, config, [runtime_id], script)
        registry = registry_for(specs, config)
        state = usable_state_dir()
        async with EventLog.open(state / "events.db") as log:
            if listen is None:
                await serve_acp_stdio(
                    registry, runtime_id, event_log=log, model=model, approvals=approvals
                )
                return 0
            return await _listen(
                registry, runtime_id, listen, token, log, model, approvals, out or sys.stdout
            )
    return 0


async def _listen(
    registry: Any,
    runtime_id: str,
    listen: tuple[str, int],
    token: str | None,
    log: Any,
    model: str | None,
    approvals: bool,
    out: TextIO,
) -> int:
    from orchestrator.acp.remote import serve_acp_remote
    from orchestrator.cli.serve import access_token

    access = token or access_token(log.path.parent)  # loopback is no trust boundary
    host, port = listen
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with serve_acp_remote(
            registry,
            runtime_id,
            host=host,
            port=port,
            token=access,
            event_log=log,
            model=model,
            approvals=approvals,
        ) as url:
            if token is None:  # a generated token is printed once; a configured one never
                out.write(f"{url}?token={access}\n")
                auth = "the token above"
            else:
                out.write(f"{url}\n")
                auth = "the configured token"
            out.write(
                f"  ACP ({runtime_id}) over WebSocket at this URL, and over Streamable HTTP at "
                f"{url.replace('ws://', 'http://', 1).split('?')[0]}; every connection sends "
                f"{auth} (Authorization: Bearer …, or ?token=); Ctrl-C stops\n"
            )
            out.flush()
            async for _ in signals:
                break
    return 130


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    token: str | None = None
    if args.listen is not None:
        from orchestrator.cli.cmd_serve import feed_token

        token = feed_token(args)
    elif args.token is not None or args.token_file is not None:
        raise ConfigError("acp: --token and --token-file go with --listen")
    return trio.run(
        _acp,
        args.runtime,
        args.model,
        getattr(args, "config_file", None),
        args.approvals == "wait",
        args.model_server,
        args.listen,
        token,
        out,
    )


def register(sub: Any) -> None:
    """Add acp to the command line."""
    acp = sub_command(
        sub,
        "acp",
        "serve a runtime as an Agent Client Protocol agent (stdio, or the network with --listen)",
        "Serve a ringleader runtime as an ACP agent over stdio, for editors that speak ACP (Zed "
        "and others): point the editor's agent command at this. With --listen, serve it over "
        "the network at HOST:PORT/acp instead, WebSocket or Streamable HTTP (every connection "
        "needs the token; off "
        "loopback a configured one). Runs are recorded in the event log like any other; "
        "sessions can be listed, loaded, resumed and (native, claude-code) forked.",
        [
            "ringleader acp --runtime claude-code",
            "ringleader acp --runtime native",
            "ringleader acp --runtime native --listen 127.0.0.1:8766",
        ],
    )
    acp.add_argument("--runtime", required=True, help="runtime id (see `ringleader runtimes`)")
    acp.add_argument(
        "--model", default=None, help="model for every prompt; e.g. --model anthropic:claude-x"
    )
    acp.add_argument(
        "--listen",
        type=listen_address,
        default=None,
        metavar="HOST:PORT",
        help="serve ACP over the network on HOST:PORT instead of stdio: WebSocket and "
        "Streamable HTTP at /acp (port 0 picks a free one); e.g. --listen 127.0.0.1:8766",
    )
    acp.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="with --listen: file holding the bearer token clients must send (required off "
        "loopback); by default $RINGLEADER_FEED_TOKEN_FILE, else $RINGLEADER_FEED_TOKEN, else a "
        "generated one (printed); e.g. --token-file ~/.config/ringleader/feed-token",
    )
    acp.add_argument(
        "--token",
        default=None,
        help="with --listen: the token itself (discouraged: `ps` shows it; prefer "
        "--token-file); e.g. --token local-test-only",
    )
    approvals_option(acp, "wait", ", the ACP client (session/request_permission)")
    model_server_option(acp, "the runtime")
    acp.set_defaults(handler=_handle)
