"""A runtime's model endpoint (its configured ``base_url``) in failures, for every runtime alike.

* **Named.** A connection failure a runtime reports (``error`` with a connection code, or a
  message saying the connection failed) that does not say where gets the endpoint appended
  (:func:`name_endpoint`, applied by the run's actor to every ``error`` event): Claude Code says
  only "Connection refused", Codex "error sending request".
* **Fail fast on loopback.** Before a run starts, an endpoint on this machine (``127.0.0.0/8``,
  ``::1``, ``localhost``) is connected to once (:func:`unreachable`): nothing listening there is
  a failure no retry can fix, and a CLI would otherwise spend its own retries on it (Codex
  reconnects for minutes). The run then fails at once, naming the URL; the supervisor classifies
  a refused loopback connection as permanent.

Endpoints elsewhere are never probed (a proxy, a firewall or a slow network is the runtime's to
report, and its retries are worth having).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final
from urllib.parse import urlsplit

import trio

from orchestrator.core.events import ErrorEvent

__all__ = [
    "CONNECTION_CODES",
    "LOOPBACK",
    "REFUSED",
    "loopback_address",
    "name_endpoint",
    "unreachable",
]

REFUSED: Final = re.compile(r"(?i)\b(?:connection refused|econnrefused|connect call failed)\b")
"""A refused connection, as runtimes word it."""
LOOPBACK: Final = re.compile(
    r"(?i)(?:\b(?:https?|wss?)://)?(?:\blocalhost\b|\b127(?:\.\d{1,3}){3}\b|\[::1\]|(?<![\w:])::1\b)"
)
"""A loopback address in a message."""
_CONNECTION: Final = re.compile(
    r"(?i)\b(?:connection (?:refused|reset|closed|aborted|error|failed)|econnrefused|econnreset|"
    r"connect call failed|error sending request|failed to connect|could not connect|"
    r"unable to connect|network is unreachable)\b"
)
CONNECTION_CODES: Final = frozenset(
    {
        "network",
        "model_network",
        "connection_error",
        "stream_connection_error",
        "unreachable",
        "model_unreachable",
    }
)
"""Typed ``error{code}``\\ s of a failed connection."""

PROBE_TIMEOUT_S: Final = 2.0
"""How long the loopback check may take (a loopback connect answers in well under 1 ms)."""


def loopback_address(url: str | None) -> tuple[str, int] | None:
    """``(host, port)`` when ``url`` points at this machine's loopback interface, else None."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if host is None:
        return None
    if host != "localhost":
        try:
            if not ipaddress.ip_address(host).is_loopback:
                return None
        except ValueError:
            return None
    if port is None:
        port = 443 if parts.scheme in ("https", "wss") else 80
    return host, port


async def unreachable(url: str | None, *, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the loopback endpoint ``url`` cannot be reached (one line naming it), or None: it
    accepted a connection, or it is not on loopback (not checked)."""
    address = loopback_address(url)
    if address is None:
        return None
    host, port = address
    try:
        with trio.fail_after(timeout_s):
            stream = await trio.open_tcp_stream(host, port)
    except trio.TooSlowError:
        return None  # something is there, only slow: the runtime will say more
    except OSError as exc:
        why = "connection refused" if _refused(exc) else (exc.strerror or str(exc))
        return f"cannot reach {url}: {why} (nothing listens there)"
    await stream.aclose()
    return None


def _refused(exc: BaseException, depth: int = 0) -> bool:
    """Whether a refusal is in the chain (trio groups one error per address it tried)."""
    if isinstance(exc, ConnectionRefusedError):
        return True
    if depth > 8:
        return False
    if isinstance(exc, BaseExceptionGroup):
        members: tuple[BaseException, ...] = exc.exceptions  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if any(_refused(e, depth + 1) for e in members):
            return True
    cause = exc.__cause__ or exc.__context__
    return cause is not None and _refused(cause, depth + 1)


def name_endpoint(event: ErrorEvent, url: str | None) -> ErrorEvent:
    """``event`` with ``url`` appended to its message when it is a connection failure that does
    not say where; otherwise ``event`` itself."""
    if not url or url in event.message:
        return event
    if (event.code or "").lower() not in CONNECTION_CODES and not _CONNECTION.search(
        event.message[:2000]
    ):
        return event
    return event.model_copy(update={"message": f"{event.message} (endpoint: {url})"})
