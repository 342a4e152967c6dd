"""Serve the scripted model server on 127.0.0.1 with Hypercorn's trio worker.

Why Starlette on Hypercorn: both are well kept, Hypercorn has a native trio worker (no asyncio in
our process), it speaks HTTP/1.1 chunked SSE exactly as the real APIs do, and Starlette is a
small, typed routing layer over ASGI.
"""

from __future__ import annotations

import argparse
import functools
import logging
import sys
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from orchestrator.core.errors import ConfigError, exception_leaves
from orchestrator.core.listen import serve_asgi
from orchestrator.model_server.app import StreamCut, build_app
from orchestrator.model_server.script import Script, load_script
from orchestrator.model_server.state import LoggedRequest, Outcome, ServerState

__all__ = ["ModelServer", "main", "serve_model_server"]


@attrs.define
class ModelServer:
    """A running server: its base URL (``http://127.0.0.1:PORT/v1``) and what it has seen."""

    state: ServerState
    host: str
    port: int

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (Anthropic SDK base URL)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (OpenAI SDK base URL)."""
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request so far, in arrival order (secrets redacted)."""
        return self.state.requests

    def requests_for(self, conversation: str) -> list[LoggedRequest]:
        """The requests that took (or tried to take) a turn of ``conversation``."""
        return [r for r in self.state.requests if r.conversation == conversation]

    async def settled(self, request: LoggedRequest) -> Outcome:
        """Wait until ``request`` has ended; its outcome (``"disconnected"`` after an abort)."""
        return await self.state.settled(request)

    def prefix_reuse(self, conversation: str) -> list[int]:
        """For each request of ``conversation`` after its first: the leading bytes it shares
        with the request before it (the prompt-cache figure)."""
        return self.state.prefix_reuse(conversation)


@asynccontextmanager
async def serve_model_server(
    script: Script | dict[str, Any] | str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    log_path: str | Path | None = None,
) -> AsyncGenerator[ModelServer]:
    """Run the server for the duration of the block (ephemeral port by default).

    ``log_path``: also append each finished request to this file as one JSON line.
    """
    if host not in ("127.0.0.1", "::1", "localhost"):
        raise ValueError("the scripted model server binds to loopback only")
    state = ServerState(load_script(script), Path(log_path) if log_path is not None else None)
    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(
            functools.partial(serve_asgi, build_app(state), host, port, errorlog=_ERROR_LOG)
        )
        bound_port = int(binds[0].rsplit(":", 1)[1])
        try:
            yield ModelServer(
                state=state, host="127.0.0.1" if host == "localhost" else host, port=bound_port
            )
        finally:
            nursery.cancel_scope.cancel()


class _QuietCuts(logging.Filter):
    """Drop Hypercorn's traceback for a scripted stream cut (it is the point of the fault)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], StreamCut))


_ERROR_LOG = logging.getLogger("ringleader.model_server")
_ERROR_LOG.addFilter(_QuietCuts())


def main(argv: Sequence[str] | None = None) -> int:
    """``ringleader model-server --script FILE [--port N] [--log FILE]``.

    Prints the server's URL (``http://127.0.0.1:PORT``: the Anthropic base URL; add ``/v1`` for
    OpenAI clients) on one line, then serves until interrupted; returns 0 after Ctrl-C. A bad
    script or a port in use is one line on stderr and exit code 2.
    """
    from orchestrator.core.listen import bind_error, port_number

    parser = argparse.ArgumentParser(
        prog="ringleader model-server",
        description="Serve the scripted model server (Anthropic Messages, OpenAI Responses and "
        "Chat Completions) on 127.0.0.1; the script decides what the model answers. Prints its "
        "URL (the Anthropic base URL; add /v1 for OpenAI clients).",
        epilog="examples:\n  ringleader model-server --script script.json --port 0\n"
        "  ringleader model-server --script script.toml --log requests.jsonl",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--script",
        required=True,
        metavar="FILE",
        help="a JSON or TOML script (conversations, turns, faults); e.g. --script demo.json",
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=0,
        help="port on 127.0.0.1 (default 0: a free one, printed); e.g. --port 8080",
    )
    parser.add_argument(
        "--log",
        metavar="FILE",
        help="append each request to this file as one JSON line; e.g. --log requests.jsonl",
    )
    args = parser.parse_args(argv)
    try:
        script = load_script(Path(args.script))
    except ConfigError as exc:
        print(f"ringleader model-server: {exc}", file=sys.stderr)
        return 2

    async def run() -> None:
        async with serve_model_server(script, port=args.port, log_path=args.log) as server:
            print(server.url, flush=True)
            await trio.sleep_forever()

    try:
        trio.run(run)
    except KeyboardInterrupt:
        return 0
    except BaseException as exc:
        leaves = exception_leaves(exc)
        if all(isinstance(e, KeyboardInterrupt) for e in leaves):
            return 0
        line = bind_error(exc, "127.0.0.1", args.port)
        if line is None:
            raise
        print(f"ringleader model-server: {line}", file=sys.stderr)
        return 2
    return 0
