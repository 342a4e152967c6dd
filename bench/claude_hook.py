"""Ours for path 1: Claude Code stdout lines → events through ``adapters.claude_code``.

Kept apart from :mod:`bench.p_decode` so the adapter's API is touched in one place. As in the
adapter, lines are decoded one by one (``dialect.decode_line``) and normalized a read-chunk at a
time (``normalize.normalize_lines``: streamed text deltas of a chunk are held and flushed together
at its end); a chunk here is 64 lines (the best case: deltas of a chunk coalesce), or one line
per call (the typical case: a CLI streaming tokens writes one line per read), a fresh state and
event factory per session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .inputs import Session

CHUNK = 64


def make_pass(normalize: Any, dialect: Any) -> tuple[Callable[..., Callable[[], None]] | None, str]:
    normalize_lines = getattr(normalize, "normalize_lines", None)
    state_cls = getattr(normalize, "ClaudeState", None)
    decode_line = getattr(dialect, "decode_line", None)
    if normalize_lines is None or state_cls is None or decode_line is None:
        return None, (
            "not built yet: adapters/claude_code lacks normalize_lines/ClaudeState/decode_line"
        )

    from orchestrator.core.events import EventFactory

    def factory(sessions: list[Session], chunk: int = CHUNK) -> Callable[[], None]:
        if chunk == 1:  # one line per read: the common case of a CLI streaming tokens

            def per_line() -> None:
                for session in sessions:
                    make = EventFactory(run_id="claude-bench", session_id="bench")
                    state = state_cls(model="claude-sonnet-4-5")
                    for line in session:
                        normalize_lines((decode_line(line),), make, state)

            return per_line
        chunked = [[s[i : i + chunk] for i in range(0, len(s), chunk)] for s in sessions]

        def run() -> None:
            for chunks in chunked:
                make = EventFactory(run_id="claude-bench", session_id="bench")
                state = state_cls(model="claude-sonnet-4-5")
                for chunk in chunks:
                    normalize_lines([decode_line(line) for line in chunk], make, state)

        return run

    return factory, ""
