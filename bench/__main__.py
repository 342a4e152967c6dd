"""``python -m bench [--quick] [--json FILE] [--only KEY …]``: every hot path in one run, one table.

It first makes sure the ``bench`` extra (orjson and the peers) is installed in this interpreter's
environment (``pip install -e .[bench]`` when something is missing), prints the machine and the
versions, then runs each path in its own worker process and prints, per row: our figure, the
limit and the peers measured in the same run on the same input, the ratios, and target (docs/architecture.md, Speed targets)
with how far we are from it. ``--json FILE`` writes every number (all passes) for tracking.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .registry import load_paths

REPO = Path(__file__).resolve().parent.parent
EXTRA_DISTS = ("orjson", "claude-agent-sdk", "pydantic-ai-slim", "openai-agents")
VERSION_DISTS = (
    "ringleader",
    "trio",
    "pydantic",
    "pydantic-core",
    *EXTRA_DISTS,
    "anthropic",
    "openai",
    "httpx2",
    "hypercorn",
)


def _missing_extra() -> list[str]:
    missing = []
    for dist in EXTRA_DISTS:
        try:
            md.version(dist)
        except md.PackageNotFoundError:
            missing.append(dist)
    return missing


def ensure_extra(*, install: bool) -> list[str]:
    """Install the ``bench`` extra if anything in it is missing; returns what is still missing."""
    missing = _missing_extra()
    if missing and install:
        print(f"bench: installing the bench extra (missing: {', '.join(missing)}) …", flush=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "-e", f"{REPO}[bench]"],
            check=False,
        )
        if proc.returncode != 0:
            print("bench: pip could not install the bench extra; those rows say so", flush=True)
        missing = _missing_extra()
    return missing


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["mem_gib"] = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:
        pass
    versions = {}
    for dist in VERSION_DISTS:
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            versions[dist] = None
    info["versions"] = versions
    return info


def run_path(key: str, title: str, timeout_s: float, mode: str | None) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "bench._worker", key] + ([f"--{mode}"] if mode else [])
    env = dict(os.environ, PYTHONHASHSEED="0")
    try:
        proc = subprocess.run(
            cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        reason = f"failed: took longer than {timeout_s:.0f} s"
        return [_failed_row(key, title, reason)]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("[")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return [_failed_row(key, title, f"failed: worker exited {proc.returncode}: {tail}")]
    return json.loads(lines[-1])


def _failed_row(key: str, title: str, reason: str) -> dict[str, Any]:
    return {
        "key": key,
        "title": title,
        "unit": "",
        "status": "not built",
        "not_built": reason,
        "ours": None,
        "limit": None,
        "peers": [],
        "ratios": {},
        "shortfall": None,
        "meets_target": None,
        "notes": [],
        "extra": {},
        "target": None,
    }


# -- the table --------------------------------------------------------------------------------------


def _num(value: float, unit: str) -> str:
    if value == 0:
        return "—"
    if unit in ("lines/s", "events/s"):
        return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.1f}k"
    if unit == "MiB":
        return f"{value:.0f} MiB"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    if value >= 10:
        return f"{value:.1f} {unit}"
    return f"{value:.2f} {unit}"


def _fig(fig: dict[str, Any] | None) -> str:
    if fig is None:
        return "—"
    if not fig["value"]:
        return f"{fig['name']}: n/a ({fig.get('note') or 'not measured'})"
    spread = fig.get("spread_pct")
    s = f"±{spread / 2:.0f}%" if spread is not None else ""
    return f"{_num(fig['value'], fig['unit'])} {s}".strip()


def render(rows: list[dict[str, Any]]) -> str:
    out: list[str] = []
    header = ("path", "ours", "limit", "peers", "ratios", "target", "vs target")
    table: list[tuple[str, ...]] = [header]
    for row in rows:
        limit = row.get("limit")
        limit_s = f"{limit['name']} {_fig(limit)}" if limit else "—"
        peers = (
            "; ".join(
                f"{p['name']} {_fig(p)}" if p["value"] else _fig(p) for p in row.get("peers", [])
            )
            or "—"
        )
        ratios = (
            ", ".join(f"{k.split('/', 1)[1].split()[0]} {v:.2f}×" for k, v in row["ratios"].items())
            or "—"
        )
        if row["ours"] is None:
            ours = row.get("not_built") or "not built"
            verdict = "—"
        else:
            ours = _fig(row["ours"])
            shortfall = row.get("shortfall")
            if shortfall is None:
                verdict = "—"
            elif shortfall <= 1:
                verdict = f"meets ({1 / shortfall:.2f}× margin)"
            else:
                verdict = f"MISSES by {shortfall:.2f}×"
        target = (row.get("target") or {}).get("text", "—")
        table.append((row["title"], ours, limit_s, peers, ratios, target, verdict))
    widths = [min(60, max(len(r[i]) for r in table)) for i in range(len(header))]
    for n, r in enumerate(table):
        out.append(" | ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        if n == 0:
            out.append("-+-".join("-" * w for w in widths))
    return "\n".join(out)


def furthest(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    scored = [r for r in rows if r.get("shortfall") is not None]
    return max(scored, key=lambda r: r["shortfall"]) if scored else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small inputs, few passes (smoke run)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny inputs, two passes: checks every path runs (not a measurement)",
    )
    parser.add_argument("--json", metavar="FILE", help="write every number to FILE")
    parser.add_argument("--only", nargs="*", metavar="KEY", help="run only these paths")
    parser.add_argument("--no-install", action="store_true", help="never pip-install the extra")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    missing = ensure_extra(install=not args.no_install)
    info = machine()
    print(
        f"machine: {info.get('cpu', '?')}, {info['cpus']} cpus, {info.get('mem_gib', '?')} GiB, "
        f"load {info['loadavg']}; Python {info['python']} ({info['platform']})"
    )
    print("versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v))
    if missing:
        print(f"not installed: {', '.join(missing)} (their figures say so)")
    print(
        f"method: one warm-up, median of {2 if args.smoke else 5 if args.quick else 7} passes (±: half the "
        "max–min spread); results dropped as they stream; each path in its own process\n",
        flush=True,
    )

    paths = load_paths()
    keys = args.only or list(paths)
    rows: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    if args.smoke:  # not a measurement: run the workers side by side to keep it short
        with ThreadPoolExecutor(max_workers=3) as pool:
            done = pool.map(
                lambda k: run_path(k, paths[k].title, paths[k].timeout_s, "smoke"), keys
            )
            for key, got in zip(keys, done, strict=True):
                rows += got
                timings[key] = 0.0
        keys = []
    for key in keys:
        spec = paths[key]
        t0 = time.perf_counter()
        print(f"… {key}", end="", flush=True)
        mode = "smoke" if args.smoke else "quick" if args.quick else None
        rows += run_path(key, spec.title, spec.timeout_s, mode)
        timings[key] = round(time.perf_counter() - t0, 2)
        print(f" {timings[key]:.1f} s", flush=True)
    print()
    print(render(rows))
    worst = furthest(rows)
    if worst is not None:
        print(
            f"\nfurthest from its target: {worst['title']} "
            f"(shortfall {worst['shortfall']:.2f}×; > 1 misses)"
        )
    for row in rows:
        for note in row.get("notes", []):
            if "\n" not in note:
                print(f"note [{row['key']}]: {note}")
    total = time.perf_counter() - started
    print(f"\ntotal {total:.1f} s")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "machine": info,
                    "quick": args.quick,
                    "smoke": args.smoke,
                    "seconds": round(total, 2),
                    "path_seconds": timings,
                    "paths": rows,
                },
                indent=1,
            )
        )
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
