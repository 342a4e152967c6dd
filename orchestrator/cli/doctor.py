"""``ringleader doctor``: what the event log says about runtime drift, which runtime version each
run used, and which circuit breakers are open. Part of the CLI: the library never imports this
module."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from orchestrator.cli.commands import usable_state_dir
from orchestrator.core.config import LoadedConfig
from orchestrator.core.drift import drift_report
from orchestrator.core.registry import RuntimeSpec
from orchestrator.core.sandbox import probe
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.governance.breaker import BreakerBoard, BreakerPolicy
from orchestrator.engine.governance.policy import BREAKERS_FILE

__all__ = ["doctor"]


def _installed_version(specs: Sequence[RuntimeSpec], config: LoadedConfig, rid: str) -> str | None:
    spec = next((s for s in specs if s.id == rid), None)
    if spec is None or spec.locate is None:
        return None
    try:
        return spec.locate(config.runtime(rid)).version
    except Exception:
        return None


def runs_by_version(rows: Sequence[Any]) -> dict[str, dict[str, int]]:
    """runtime id → the version each of its finished runs recorded (``"?"``: none) → runs."""
    found: dict[str, dict[str, int]] = {}
    for row in rows:
        outcome = row.outcome
        if not outcome:
            continue
        version = str(outcome.get("runtimeVersion") or "?")
        per = found.setdefault(str(row.runtime_id), {})
        per[version] = per.get(version, 0) + 1
    return found


def _versions_line(rid: str, versions: dict[str, int]) -> str:
    def one(version: str, n: int) -> str:
        runs = f"{n} run{'s' if n != 1 else ''}"
        return f"{runs} on {version}" if version != "?" else f"{runs} with no recorded version"

    return f"{rid}: " + ", ".join(one(v, n) for v, n in sorted(versions.items()))


def _sandbox_line(config: LoadedConfig) -> str:
    """Whether the run sandbox (bubblewrap) works here, and whether it is on."""
    why = probe()
    on = config.config.sandbox.kind == "bubblewrap"
    if why is None:
        state = "on" if on else 'off (turn it on: [sandbox] kind = "bubblewrap")'
        return f"bubblewrap works here; {state}"
    return f"{why}; runs are not confined" if on else f"{why} (the sandbox is off)"


async def doctor(
    specs: Sequence[RuntimeSpec],
    config: LoadedConfig,
    *,
    as_json: bool,
    out: TextIO,
    repair: bool = False,
) -> int:
    """Report whether the event log is sound (SQLite's integrity check; ``repair`` rebuilds its
    indexes when it is not), unknown frame types and frames missing expected fields per runtime
    version over every logged run, the versions the runs used, and the open breakers; 1 when the
    log is damaged, there is drift or an open breaker."""
    state = usable_state_dir()
    breakers = config.config.breaker
    board = (
        BreakerBoard(
            BreakerPolicy(breakers.failures, breakers.cooldown_s), path=state / BREAKERS_FILE
        )
        if breakers is not None and (state / BREAKERS_FILE).exists()
        else None
    )
    open_breakers = board.open_breakers() if board is not None else {}
    db = state / "events.db"
    damage: list[str] = []
    if not db.exists():
        rows: list[Any] = []
        if not as_json:
            out.write(f"no event log yet ({db}): nothing to check\n")
    else:
        async with EventLog.open(db) as log:
            rows = list(await log.runs())
            damage = await log.check(repair=repair)
    findings = drift_report(rows)
    versions = runs_by_version(rows)
    sandbox = _sandbox_line(config)
    if as_json:
        out.write(json.dumps({"eventLog": str(db), "sound": not damage, "problems": damage}) + "\n")
        for f in findings:
            record = {
                "runtimeId": f.runtime_id,
                "version": f.version,
                "installedVersion": _installed_version(specs, config, f.runtime_id),
                "unknownFrameTypes": dict(f.frame_types),
                "missingFields": dict(f.missing_fields),
                "runs": f.runs,
                "firstMs": f.first_ms,
                "lastMs": f.last_ms,
            }
            out.write(json.dumps(record) + "\n")
        for rid, per in sorted(versions.items()):
            out.write(json.dumps({"runtimeId": rid, "runsByVersion": per}) + "\n")
        for key, why in open_breakers.items():
            out.write(json.dumps({"breaker": key, "open": why}) + "\n")
        out.write(json.dumps({"sandbox": sandbox}) + "\n")
        return 1 if findings or open_breakers or damage else 0
    if db.exists():
        if damage:
            out.write(f"event log {db}: damaged ({'; '.join(damage[:5])})")
            out.write(" — still damaged after rebuilding its indexes\n" if repair else "\n")
            if not repair:
                out.write("  rebuild its indexes with: ringleader doctor --repair\n")
        else:
            out.write(f"event log {db}: sound (SQLite integrity check)\n")
    out.write(f"sandbox: {sandbox}\n")
    if rows:
        for rid, per in sorted(versions.items()):
            out.write(f"runs: {_versions_line(rid, per)}\n")
    for why in open_breakers.values():
        out.write(f"breaker open: {why}\n")
    if not rows:
        return 1 if open_breakers or damage else 0
    if not findings:
        out.write(f"no drift: {len(rows)} logged runs saw only frame types their adapters know\n")
        return 1 if open_breakers or damage else 0
    for f in findings:
        installed = _installed_version(specs, config, f.runtime_id)
        out.write(f"drift: {f.describe(installed)}\n")
    out.write(
        "an adapter ignored these frames or did without these fields (nothing crashed); the "
        "runtime's output format changed: check its release notes and teach the adapter's "
        "dialect the change\n"
    )
    return 1
