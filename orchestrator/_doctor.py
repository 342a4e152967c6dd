"""``ringleader doctor``: what the event log says about runtime drift. Part of the CLI: the
library never imports this module."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TextIO

from ._commands import usable_state_dir
from .config import LoadedConfig
from .eventlog import EventLog
from .governance.drift import drift_report
from .registry import RuntimeSpec

__all__ = ["doctor"]


def _installed_version(specs: Sequence[RuntimeSpec], config: LoadedConfig, rid: str) -> str | None:
    spec = next((s for s in specs if s.id == rid), None)
    if spec is None or spec.locate is None:
        return None
    try:
        return spec.locate(config.runtime(rid)).version
    except Exception:
        return None


async def doctor(
    specs: Sequence[RuntimeSpec], config: LoadedConfig, *, as_json: bool, out: TextIO
) -> int:
    """Report unknown frame types per runtime over every logged run; 1 when there are any."""
    db = usable_state_dir() / "events.db"
    if not db.exists():
        out.write(f"no event log yet ({db}): nothing to check\n")
        return 0
    async with EventLog.open(db) as log:
        rows = await log.runs()
    findings = drift_report(rows)
    if as_json:
        for f in findings:
            record = {
                "runtimeId": f.runtime_id,
                "installedVersion": _installed_version(specs, config, f.runtime_id),
                "unknownFrameTypes": dict(f.frame_types),
                "runs": f.runs,
                "firstMs": f.first_ms,
                "lastMs": f.last_ms,
            }
            out.write(json.dumps(record) + "\n")
        return 1 if findings else 0
    if not findings:
        out.write(f"no drift: {len(rows)} logged runs saw only frame types their adapters know\n")
        return 0
    for f in findings:
        version = _installed_version(specs, config, f.runtime_id)
        out.write(f"drift: {f.describe(version)}\n")
    out.write(
        "an adapter ignored these frames (nothing crashed); the runtime's output format changed: "
        "check its release notes and teach the adapter's dialect the new types\n"
    )
    return 1
