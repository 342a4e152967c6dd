"""Line framer with a hard line cap: byte chunks in, complete lines out.

Every CLI adapter reads its runtime's stdout through :class:`LineFramer` (via
:mod:`adapters._process`). Chunks may split anywhere — inside a line, between ``\\r`` and ``\\n``,
inside a multi-byte UTF-8 sequence — and the framer gives the same lines as splitting the whole
input at once.

Rules:

* A line is the bytes before a ``\\n``; a ``\\r`` right before the ``\\n`` is removed too. Empty
  lines are delivered as ``b""`` (dialect parsers skip them).
* The cap (``max_line_bytes``, default 8 MiB) counts every byte before the ``\\n``, including the
  ``\\r`` of a ``\\r\\n``. A line longer than that is discarded up to its newline and reported in its
  place, in order, as a :class:`~orchestrator.core.errors.LineTooLongError` carrying ``limit`` and the
  line's first bytes. It is reported as soon as the cap trips, so a runaway line never grows the
  buffer beyond the cap; the lines after it are delivered normally.
* At end of input, :meth:`LineFramer.close` returns a final unterminated line if there is one. A
  runtime that writes one JSON object per line always ends its last line with ``\\n``, so such a
  line is usually a truncated frame (the process died mid-write): the dialect parser reports it as a
  :class:`~orchestrator.core.errors.ProtocolError` when it fails to decode.

Performance: the work per chunk is one ``bytes.split`` plus, only when needed, a ``b"".join`` for a
line that spans chunks, a length check when the chunk could hold an over-cap line at all, and a
``\\r`` strip when the chunk contains a ``\\r``. There are no per-byte loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeAlias

from orchestrator.core.errors import LineTooLongError

__all__ = ["DEFAULT_MAX_LINE_BYTES", "Frame", "LineFramer"]

DEFAULT_MAX_LINE_BYTES: Final = 8 * 1024 * 1024
"""Default hard cap on one line (8 MiB): above any real frame, far below a memory problem."""

Frame: TypeAlias = bytes | LineTooLongError
"""What the framer yields: a complete line (no newline), or the error standing in for a too-long one."""

_ERROR_HEAD_BYTES: Final = 800
"""How much of a too-long line is kept in the error (``ProtocolError`` trims it further)."""


class LineFramer:
    """Chunks in, complete lines out, with a hard cap on the length of one line.

    Feed chunks with :meth:`feed`; each call returns the frames completed by that chunk, in order.
    Call :meth:`close` at end of input for the last, unterminated line. Not thread-safe; one framer
    per stream.

    Args:
        max_line_bytes: the cap on one line (bytes before the ``\\n``). Must be positive.
        adapter: adapter id recorded on :class:`LineTooLongError`.
        session_key: session key recorded on :class:`LineTooLongError`.
    """

    __slots__ = (
        "_adapter",
        "_discarding",
        "_pending",
        "_pending_len",
        "_session_key",
        "max_line_bytes",
    )

    def __init__(
        self,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        *,
        adapter: str | None = None,
        session_key: str | None = None,
    ) -> None:
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be positive, got {max_line_bytes}")
        self.max_line_bytes: Final = max_line_bytes
        self._adapter = adapter
        self._session_key = session_key
        self._pending: list[bytes] = []
        """Pieces of the current, not yet terminated line (their total never exceeds the cap)."""
        self._pending_len = 0
        self._discarding = False
        """True while skipping the rest of a too-long line (already reported) up to its newline."""

    @property
    def buffered(self) -> int:
        """Bytes of an unterminated line currently held."""
        return self._pending_len

    def feed(self, data: bytes) -> Sequence[Frame]:
        """Take the next chunk; return the frames it completes (possibly none), in order."""
        if self._discarding:
            i = data.find(b"\n")
            if i < 0:
                return ()
            self._discarding = False
            data = data[i + 1 :]
        lines = data.split(b"\n")
        tail = lines.pop()
        if not lines:  # no newline: the whole chunk continues the current line
            return self._hold(tail) if tail else ()

        cap = self.max_line_bytes
        could_overflow = self._pending_len + len(data) > cap
        has_cr = b"\r" in data
        if self._pending:
            pending = self._pending
            pending.append(lines[0])
            lines[0] = head = b"".join(pending)
            pending.clear()
            self._pending_len = 0
            has_cr = has_cr or head.endswith(b"\r")

        out: Sequence[Frame]
        if could_overflow:  # checked before the \r strip: the cap counts the \r
            out = [
                self._too_long(line)
                if len(line) > cap
                else (line[:-1] if has_cr and line.endswith(b"\r") else line)
                for line in lines
            ]
        elif has_cr:
            out = [line[:-1] if line.endswith(b"\r") else line for line in lines]
        else:
            out = lines
        if tail and (held := self._hold(tail)):
            return [*out, *held]
        return out

    def close(self) -> Sequence[Frame]:
        """End of input: return the final unterminated line (if any) and reset the framer.

        A too-long final line was already reported by :meth:`feed`, so nothing is returned for it.
        """
        discarding = self._discarding
        self._discarding = False
        if not self._pending or discarding:
            self._pending.clear()
            self._pending_len = 0
            return ()
        head = b"".join(self._pending)
        self._pending.clear()
        self._pending_len = 0
        if head.endswith(b"\r"):
            head = head[:-1]
        return (head,)

    def _hold(self, piece: bytes) -> Sequence[Frame]:
        """Buffer ``piece`` of an unterminated line; report and start discarding past the cap."""
        new_len = self._pending_len + len(piece)
        if new_len <= self.max_line_bytes:
            self._pending.append(piece)
            self._pending_len = new_len
            return ()
        start = self._pending[0] if self._pending else piece
        self._pending.clear()
        self._pending_len = 0
        self._discarding = True
        return (self._too_long(start),)

    def _too_long(self, line: bytes) -> LineTooLongError:
        return LineTooLongError(
            f"line longer than {self.max_line_bytes} bytes discarded",
            limit=self.max_line_bytes,
            line=line[:_ERROR_HEAD_BYTES],
            adapter=self._adapter,
            session_key=self._session_key,
        )
