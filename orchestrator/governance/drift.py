"""Drift alarms: what a runtime sent that its adapter does not know.

Every adapter already routes a frame it cannot read through one place
(``RunEmitter.note_unknown``), which surfaces the first frame of each unknown type as
``status{detail: "ignored unknown frame type 'X'"}``. That keeps the normalizers' hot paths
untouched: the fingerprint is taken here, on the normalized stream, with one ``startswith`` per
``status`` event (measured in ``tests/orchestrator/test_drift.py``). Each run's unknown types
are recorded in its outcome row in the event log (``outcome.drift``), and
:func:`drift_report` groups them per runtime for ``ringleader doctor``.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

__all__ = ["UNKNOWN_FRAME_PREFIX", "DriftFinding", "drift_report", "unknown_frame_type"]

UNKNOWN_FRAME_PREFIX: Final = "ignored unknown frame type "
"""How ``RunEmitter.note_unknown`` words its status detail."""

_QUOTED = re.compile(r"""^['"](.*)['"]$""")


def unknown_frame_type(detail: str | None) -> str | None:
    """The frame type a ``status`` detail reports as unknown (``None`` for any other detail)."""
    if detail is None or not detail.startswith(UNKNOWN_FRAME_PREFIX):
        return None
    raw = detail[len(UNKNOWN_FRAME_PREFIX) :].strip()
    quoted = _QUOTED.match(raw)
    return quoted.group(1) if quoted else raw


@attrs.frozen
class DriftFinding:
    """Unknown frame types one runtime sent, over the runs in the log."""

    runtime_id: str
    frame_types: Mapping[str, int]
    """type → how many runs saw it."""
    runs: int
    first_ms: int
    last_ms: int

    def describe(self, version: str | None = None) -> str:
        when = _dt.datetime.fromtimestamp(self.first_ms / 1000, _dt.UTC).strftime("%a %Y-%m-%d")
        who = f"{self.runtime_id} {version}" if version else self.runtime_id
        n = len(self.frame_types)
        kinds = ", ".join(f"{t} ×{c}" for t, c in sorted(self.frame_types.items()))
        plural = "s" if n != 1 else ""
        return (
            f"{who} sent {n} unknown frame type{plural} in {self.runs} run"
            f"{'s' if self.runs != 1 else ''} since {when} ({kinds})"
        )


def drift_report(runs: Iterable[Any]) -> list[DriftFinding]:
    """One finding per runtime whose runs recorded unknown frame types (``runs``: the event
    log's run rows, with ``runtime_id``, ``started_ms`` and ``outcome``)."""
    types_of: dict[str, dict[str, int]] = {}
    runs_of: dict[str, int] = {}
    span: dict[str, tuple[int, int]] = {}
    for run in runs:
        outcome: Mapping[str, Any] = run.outcome or {}
        drift: Mapping[str, Any] = outcome.get("drift") or {}
        names: Mapping[str, Any] = drift.get("unknownFrameTypes") or {}
        if not names:
            continue
        rid: str = run.runtime_id
        started: int = run.started_ms
        runs_of[rid] = runs_of.get(rid, 0) + 1
        first, last = span.get(rid, (started, started))
        span[rid] = (min(first, started), max(last, started))
        seen = types_of.setdefault(rid, {})
        for name in names:
            seen[str(name)] = seen.get(str(name), 0) + 1
    return [DriftFinding(rid, types_of[rid], runs_of[rid], *span[rid]) for rid in sorted(types_of)]
