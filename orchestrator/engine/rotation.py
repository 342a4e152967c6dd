"""Session rotation: the last-resort answer to "the context window is full".

At a run boundary (never mid-generation) the host serializes the predecessor (best effort),
renders a short structured handoff note (never the transcript), starts a fresh successor from that
note and records the rotation (best effort). Pure and storage-free: the host supplies the
``restart`` and ``record_rotation`` callables.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal, TypeAlias

import attrs

from orchestrator.core.adapter import RunHandle, RuntimeAdapter

__all__ = [
    "DEFAULT_ROTATION",
    "RotationDefaults",
    "RotationHandoff",
    "RotationReason",
    "RotationRecord",
    "RotationTrigger",
    "build_rotation_handoff_note",
    "rotate_session",
    "should_rotate",
]

_log = logging.getLogger(__name__)

RotationReason: TypeAlias = Literal["max_turns", "context_watermark"]


@attrs.frozen
class RotationTrigger:
    tokens_used: int
    context_window: int
    threshold_pct: float


@attrs.frozen
class RotationDefaults:
    threshold_pct: float = 0.85
    max_rotations: int = 3


DEFAULT_ROTATION = RotationDefaults()
"""Rotate at 85% of the context window, at most 3 times per task."""


def should_rotate(trigger: RotationTrigger) -> bool:
    """True when ``tokens_used / context_window >= threshold_pct`` (inert for a 0 window or pct)."""
    if trigger.context_window <= 0 or trigger.threshold_pct <= 0:
        return False
    return trigger.tokens_used / trigger.context_window >= trigger.threshold_pct


@attrs.frozen
class RotationHandoff:
    task_id: str | None
    predecessor_session_key: str
    predecessor_session_id: str | None
    reason: RotationReason
    last_summary: str
    tokens_used: int
    rotation_index: int
    """1-based."""
    context_window_tokens: int | None = None
    """The predecessor's context window (for showing the watermark; never rendered in the note)."""

    @property
    def watermark(self) -> float | None:
        """``tokens_used / context_window_tokens`` (None when the window is unknown)."""
        window = self.context_window_tokens
        return self.tokens_used / window if window else None


def build_rotation_handoff_note(handoff: RotationHandoff) -> str:
    """The handoff note, byte for byte as the original executor renders it.

    Line 1 says "context limit" even for ``max_turns`` (kept for compatibility with boards that
    match on it); ids and token counts are deliberately not rendered.
    """
    lines = [
        "Session handoff (rotation): the previous session reached its context limit.",
        f"- Reason: {handoff.reason}",
        f"- Rotation: #{handoff.rotation_index}",
        f"- Last progress: {handoff.last_summary}" if handoff.last_summary else "",
        "Pick the task up from its current state; pull in only the context you actually need "
        "instead of replaying the full history.",
    ]
    return "\n".join(line for line in lines if line)


@attrs.frozen
class RotationRecord:
    """What ``record_rotation`` receives."""

    serialized: str | None
    handoff: RotationHandoff
    successor: RunHandle
    note: str = ""
    """The handoff note the successor started with, byte for byte."""
    predecessor: RunHandle | None = None

    @property
    def note_bytes(self) -> int:
        return len(self.note.encode("utf-8", "surrogatepass"))


async def rotate_session(
    *,
    adapter: RuntimeAdapter,
    current: RunHandle,
    handoff: RotationHandoff,
    restart: Callable[[str], Awaitable[RunHandle]],
    record_rotation: Callable[[RotationRecord], Awaitable[None] | None] | None = None,
) -> RunHandle:
    """Rotate ``current`` into a successor, in the original executor's strict order.

    1. serialize the predecessor with the adapter's session codec (a failure gives ``None``);
    2. build the handoff note;
    3. ``restart(note)`` — its errors propagate;
    4. ``record_rotation`` — its errors are logged and swallowed;
    5. return the successor.
    """
    serialized: str | None = None
    codec = adapter.session_codec
    if codec is not None:
        try:
            serialized = await codec.serialize(current)
        except Exception:
            _log.warning("session codec failed to serialize the predecessor", exc_info=True)
            serialized = None
    note = build_rotation_handoff_note(handoff)
    successor = await restart(note)
    if record_rotation is not None:
        try:
            result = record_rotation(
                RotationRecord(
                    serialized=serialized,
                    handoff=handoff,
                    successor=successor,
                    note=note,
                    predecessor=current,
                )
            )
            if result is not None:
                await result
        except Exception:
            _log.warning("record_rotation failed; rotation kept", exc_info=True)
    return successor
