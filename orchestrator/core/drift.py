"""Drift alarms: what a runtime sent that its adapter does not know, or did not send that its
adapter expects.

* **Unknown frame types.** Every adapter routes a frame it cannot read through one place
  (``RunEmitter.note_unknown``), which surfaces the first frame of each unknown type as
  ``status{detail: "ignored unknown frame type 'X'"}``.
* **Missing expected fields.** The frames a run's accounting and its end rest on (Claude Code's
  ``system/init`` and ``result``; Codex's ``thread.started``, ``turn.completed``,
  ``turn/completed`` …) are checked for the fields the adapter reads from them
  (:func:`missing_fields_detail`, a handful of dict lookups on a few frames per run, never on
  the streamed deltas); a frame without some is
  ``status{detail: "frame 'result' lacks expected fields: usage, total_cost_usd"}``.

That keeps the normalizers' hot paths untouched: the fingerprint is taken on the normalized
stream, with one ``startswith`` per ``status`` event carrying a detail (measured in
``tests/orchestrator/test_drift.py``). Each run's findings are recorded in its outcome row in the
event log (``outcome.drift``), next to the runtime version the run used
(``outcome.runtimeVersion``), and :func:`drift_report` groups them per runtime and version for
``ringleader doctor``.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, cast

import attrs

from orchestrator.core.events import EventFactory, RuntimeEvent

__all__ = [
    "MISSING_FIELDS_PREFIX",
    "UNKNOWN_FRAME_PREFIX",
    "DriftFinding",
    "drift_report",
    "missing_fields",
    "missing_fields_detail",
    "note_missing_fields",
    "unknown_frame_type",
]

UNKNOWN_FRAME_PREFIX: Final = "ignored unknown frame type "
"""How ``RunEmitter.note_unknown`` words its status detail."""
MISSING_FIELDS_PREFIX: Final = "frame lacks expected fields: "
"""How :func:`missing_fields_detail` words its status detail."""

_QUOTED = re.compile(r"""^['"](.*)['"]$""")
_MISSING = re.compile(r"""^['"](.*)['"] without (.+)$""")


def unknown_frame_type(detail: str | None) -> str | None:
    """The frame type a ``status`` detail reports as unknown (``None`` for any other detail)."""
    if detail is None or not detail.startswith(UNKNOWN_FRAME_PREFIX):
        return None
    raw = detail[len(UNKNOWN_FRAME_PREFIX) :].strip()
    quoted = _QUOTED.match(raw)
    return quoted.group(1) if quoted else raw


def missing_fields_detail(
    label: str, frame: Mapping[str, Any], expected: Sequence[str]
) -> str | None:
    """The ``status`` detail naming the ``expected`` fields ``frame`` lacks (``a.b``: field
    ``b`` of the object in field ``a``); ``None`` when it has them all."""
    absent = [path for path in expected if not _has(frame, path)]
    if not absent:
        return None
    return f"{MISSING_FIELDS_PREFIX}{label!r} without {', '.join(absent)}"


def note_missing_fields(
    make: EventFactory,
    noted: set[str],
    label: str,
    frame: Mapping[str, Any],
    expected: Sequence[str],
) -> list[RuntimeEvent]:
    """A normalizer's check of one frame: a ``status`` naming the ``expected`` fields it lacks,
    the first time per ``label`` in a run (``noted``: the run's labels already reported)."""
    if label in noted:
        return []
    detail = missing_fields_detail(label, frame, expected)
    if detail is None:
        return []
    noted.add(label)
    return [make.status("running", detail=detail)]


def missing_fields(detail: str | None) -> tuple[str, tuple[str, ...]] | None:
    """``(frame label, fields)`` a ``status`` detail reports missing (``None`` for any other)."""
    if detail is None or not detail.startswith(MISSING_FIELDS_PREFIX):
        return None
    found = _MISSING.match(detail[len(MISSING_FIELDS_PREFIX) :])
    if found is None:
        return None
    return found.group(1), tuple(f.strip() for f in found.group(2).split(","))


def _has(frame: Mapping[str, Any], path: str) -> bool:
    if "." not in path:
        return path in frame
    value: object = frame
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = cast(dict[str, object], value)[part]
    return True


@attrs.frozen
class DriftFinding:
    """What one runtime version's runs sent that their adapter did not expect."""

    runtime_id: str
    frame_types: Mapping[str, int]
    """Unknown frame type → how many runs saw it."""
    runs: int
    first_ms: int
    last_ms: int
    version: str | None = None
    """The runtime version those runs used (``None``: not recorded)."""
    missing_fields: Mapping[str, int] = attrs.field(factory=dict[str, int])
    """``"<frame> without <field>"`` → how many runs saw it."""

    def describe(self, version: str | None = None) -> str:
        """One line; ``version`` (the installed one) stands in when the runs recorded none."""
        when = _dt.datetime.fromtimestamp(self.first_ms / 1000, _dt.UTC).strftime("%a %Y-%m-%d")
        shown = self.version or (f"{version} (installed now)" if version else None)
        who = f"{self.runtime_id} {shown}" if shown else self.runtime_id
        runs = f"in {self.runs} run{'s' if self.runs != 1 else ''} since {when}"
        parts: list[str] = []
        if self.frame_types:
            n = len(self.frame_types)
            kinds = ", ".join(f"{t} ×{c}" for t, c in sorted(self.frame_types.items()))
            parts.append(f"{n} unknown frame type{'s' if n != 1 else ''} ({kinds})")
        if self.missing_fields:
            gaps = ", ".join(f"{k} ×{c}" for k, c in sorted(self.missing_fields.items()))
            parts.append(f"frames missing expected fields ({gaps})")
        return f"{who} sent {' and '.join(parts)} {runs}"


def drift_report(runs: Iterable[Any]) -> list[DriftFinding]:
    """One finding per runtime and version whose runs recorded drift (``runs``: the event
    log's run rows, with ``runtime_id``, ``started_ms`` and ``outcome``)."""
    types_of: dict[tuple[str, str], dict[str, int]] = {}
    gaps_of: dict[tuple[str, str], dict[str, int]] = {}
    runs_of: dict[tuple[str, str], int] = {}
    span: dict[tuple[str, str], tuple[int, int]] = {}
    for run in runs:
        outcome: Mapping[str, Any] = run.outcome or {}
        drift: Mapping[str, Any] = outcome.get("drift") or {}
        names: Mapping[str, Any] = drift.get("unknownFrameTypes") or {}
        missing: Mapping[str, Any] = drift.get("missingFields") or {}
        if not names and not missing:
            continue
        key = (str(run.runtime_id), str(outcome.get("runtimeVersion") or ""))
        started: int = run.started_ms
        runs_of[key] = runs_of.get(key, 0) + 1
        first, last = span.get(key, (started, started))
        span[key] = (min(first, started), max(last, started))
        seen = types_of.setdefault(key, {})
        for name in names:
            seen[str(name)] = seen.get(str(name), 0) + 1
        gaps = gaps_of.setdefault(key, {})
        for label, fields in missing.items():
            listed = cast(list[object], fields) if isinstance(fields, list) else []
            for field in listed:
                gap = f"{label} without {field}"
                gaps[gap] = gaps.get(gap, 0) + 1
    return [
        DriftFinding(
            key[0],
            types_of[key],
            runs_of[key],
            *span[key],
            version=key[1] or None,
            missing_fields=gaps_of[key],
        )
        for key in sorted(types_of)
    ]
