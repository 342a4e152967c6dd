"""Capping tool output: keep the head and the tail, state the cut (C#20).

A model reading a 2 MB log learns as much from its first and last 16 KB, and a context window
is not spent on the middle. :func:`cap_text` cuts a finished text; :class:`HeadTail` collects a
stream (a command's output) in bounded memory. Both cut at line boundaries when one is near, and
say exactly how many bytes and lines were left out, and how to read them where that is possible.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_OUTPUT_LIMIT", "HeadTail", "cap_text", "omission_note"]

DEFAULT_OUTPUT_LIMIT: Final = 32 * 1024
"""Bytes of tool output a model sees at most (UTF-8), unless configured otherwise."""

_SNAP: Final = 0.2
"""Cut at a newline if one lies within this fraction of the kept part's size from the cut."""


def omission_note(omitted_bytes: int, omitted_lines: int, hint: str | None = None) -> str:
    """The line that replaces the cut: ``[… 12,345 bytes (321 lines) omitted …]``."""
    lines = f" ({omitted_lines:,} line{'s' if omitted_lines != 1 else ''})" if omitted_lines else ""
    tail = f"; {hint}" if hint else ""
    return f"[… {omitted_bytes:,} bytes{lines} omitted{tail} …]"


def _split_point(data: bytes, keep: int, *, head: bool) -> int:
    """Where to cut ``data`` keeping about ``keep`` bytes at its head (or tail), on a newline
    if one is near; the index is where the kept head ends (or the kept tail starts)."""
    snap = max(1, int(keep * _SNAP))
    if head:
        nl = data.rfind(b"\n", max(0, keep - snap), keep)
        return nl + 1 if nl >= 0 else keep
    start = len(data) - keep
    nl = data.find(b"\n", start - 1, start + snap)
    return nl + 1 if nl >= 0 else start


def cap_text(
    text: str, limit: int = DEFAULT_OUTPUT_LIMIT, *, hint: str | None = None
) -> tuple[str, tuple[int, int] | None]:
    """``text`` within ``limit`` UTF-8 bytes: head, an omission note, tail.

    Returns the capped text and, when something was cut, the 1-based range of lines left out
    (first, last; ``last < first`` when the cut falls inside one line). ``hint`` is appended to the
    note (say how to read the rest).
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, None
    half = max(1, limit // 2)
    head_end = _split_point(data, half, head=True)
    tail_start = max(head_end, _split_point(data, half, head=False))
    head, middle, tail = data[:head_end], data[head_end:tail_start], data[tail_start:]
    first = head.count(b"\n") + 1
    last = first + middle[:-1].count(b"\n")
    note = omission_note(len(middle), middle.count(b"\n"), hint)
    out = (
        head.decode("utf-8", "ignore")
        + ("" if head.endswith(b"\n") else "\n")
        + note
        + "\n"
        + tail.decode("utf-8", "ignore")
    )
    return out, (first, last)


class HeadTail:
    """Bounded collector for a byte stream: the first and last ``limit // 2`` bytes, and counts."""

    def __init__(self, limit: int = DEFAULT_OUTPUT_LIMIT) -> None:
        self.limit = limit
        self._half = max(1, limit // 2)
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0
        self.total_lines = 0
        self._dropped_bytes = 0
        self._dropped_lines = 0

    def feed(self, data: bytes) -> None:
        self.total_bytes += len(data)
        self.total_lines += data.count(b"\n")
        room = self._half - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        excess = len(self._tail) - self._half
        if excess > self._half:  # trim in chunks, not on every feed
            dropped = self._tail[:excess]
            self._dropped_bytes += len(dropped)
            self._dropped_lines += dropped.count(b"\n")
            del self._tail[:excess]

    def note_long_line(self, limit: int) -> None:
        """Record, in place, a line the reader discarded for being longer than ``limit`` bytes."""
        self.feed(f"[a line longer than {limit:,} bytes was left out]\n".encode())

    def text(self, hint: str | None = None) -> str:
        """The collected output as text, with an omission note if anything was left out."""
        head, tail = bytes(self._head), bytes(self._tail)
        dropped, dropped_lines = self._dropped_bytes, self._dropped_lines
        if len(tail) > self._half:  # finish the trim, snapping to a newline
            start = _split_point(tail, self._half, head=False)
            dropped += start
            dropped_lines += tail[:start].count(b"\n")
            tail = tail[start:]
        if not dropped:
            return (head + tail).decode("utf-8", "replace")
        if len(head) == self._half:  # snap the head's end back to a newline
            end = _split_point(head, self._half, head=True)
            dropped += len(head) - end
            dropped_lines += head[end:].count(b"\n")
            head = head[:end]
        return (
            head.decode("utf-8", "ignore")
            + ("" if head.endswith(b"\n") or not head else "\n")
            + omission_note(dropped, dropped_lines, hint)
            + "\n"
            + tail.decode("utf-8", "ignore")
        )
