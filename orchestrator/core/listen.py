"""Listening on a port: the ``--port`` argument and the one line for a failure to bind.

Shared by every command that listens (the board, the scripted model server) and by adapters that
start a local server.
"""

from __future__ import annotations

import argparse
import errno

from orchestrator.core.errors import exception_leaves

__all__ = ["bind_error", "port_number"]


def port_number(text: str) -> int:
    """argparse ``type`` for ``--port``: 0 (a free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range (0-65535; 0 picks a free port)")
    return port


def bind_error(exc: BaseException, host: str, port: int) -> str | None:
    """One line for a failure to listen on ``host:port`` (in use, not allowed), else None."""
    leaves = exception_leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, OSError):
            if leaf.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is in use; pick another, or --port 0 for a free one"
            if leaf.errno in (errno.EACCES, errno.EPERM):
                return f"not allowed to listen on {host}:{port}; use a port above 1023, or --port 0"
            if leaf.errno == errno.EADDRNOTAVAIL:
                return f"cannot listen on {host}: no such address on this machine"
    return None
