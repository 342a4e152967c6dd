"""What every benchmark shares: the path registry, the timing method, figures and rows.

A *path* is a function ``(cfg) -> list[Row]`` registered with :func:`path`; it runs in its own
worker process (``python -m bench._worker KEY``) so one path's imports, garbage and event loop
(trio for ours, asyncio for the peers) never touch another's figures or RSS.

The method (docs/architecture.md, Speed targets): one warm-up pass, then the median
of at least five passes, the spread reported as (max − min) / median; every result is dropped as
soon as it is produced (keeping 20k decoded objects alive halves decode rates through GC rescans).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Better = Literal["higher", "lower"]


@dataclass
class Config:
    quick: bool = False
    passes: int = 7
    warmup: int = 1
    smoke: bool = False
    """Tiny inputs and two passes: proves every path still runs (the test suite's smoke run);
    its figures are not measurements."""

    @property
    def min_passes(self) -> int:
        return 2 if self.smoke else max(5, self.passes)


@dataclass
class Figure:
    """One measured quantity: the median of its passes, and its spread."""

    name: str
    value: float
    unit: str
    better: Better = "higher"
    passes: list[float] = field(default_factory=list)
    spread_pct: float | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Target:
    """The target of a row (docs/architecture.md, Speed targets).

    ``kind``: ``min_ratio_to_limit`` (ours/limit ≥ value), ``max_ratio_to_limit`` (ours/limit ≤
    value), ``max`` (ours ≤ value, in the row's unit), ``min`` (ours ≥ value).
    """

    text: str
    kind: Literal["min_ratio_to_limit", "max_ratio_to_limit", "max", "min"]
    value: float
    peer_min: float | None = None
    """Also: ours / the first peer ≥ this (for a higher-is-better row); the worse of the two
    shortfalls counts."""

    def shortfall(
        self, ours: float, limit: float | None, peer: float | None = None
    ) -> float | None:
        """How far from the target: > 1 misses it by that factor, ≤ 1 meets it (the margin)."""
        base = self._shortfall(ours, limit)
        if self.peer_min is None or not peer or base is None:
            return base
        return max(base, self.peer_min / (ours / peer))

    def _shortfall(self, ours: float, limit: float | None) -> float | None:
        if ours <= 0:
            return None
        match self.kind:
            case "min_ratio_to_limit":
                return None if not limit else self.value / (ours / limit)
            case "max_ratio_to_limit":
                return None if not limit else (ours / limit) / self.value
            case "max":
                return ours / self.value
            case "min":
                return self.value / ours


@dataclass
class Row:
    """One line of the table: ours, the limit and the peers, measured on the same input."""

    key: str
    title: str
    unit: str
    better: Better
    target: Target | None = None
    ours: Figure | None = None
    limit: Figure | None = None
    peers: list[Figure] = field(default_factory=list)
    not_built: str | None = None
    """Why ours has no figure ("not built yet: …"); the limit and peers may still be measured."""
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def ratios(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.ours is None:
            return out
        if self.limit is not None and self.limit.value:
            out[f"ours/{self.limit.name}"] = self.ours.value / self.limit.value
        for peer in self.peers:
            if peer.value and peer.unit == self.ours.unit:
                out[f"ours/{peer.name}"] = self.ours.value / peer.value
        return out

    def shortfall(self) -> float | None:
        if self.target is None or self.ours is None:
            return None
        peer = self.peers[0].value if self.peers and self.peers[0].unit == self.unit else None
        return self.target.shortfall(
            self.ours.value, self.limit.value if self.limit else None, peer
        )

    def to_json(self) -> dict[str, Any]:
        shortfall = self.shortfall()
        return {
            "key": self.key,
            "title": self.title,
            "unit": self.unit,
            "better": self.better,
            "status": "not built" if self.ours is None else "ok",
            "not_built": self.not_built,
            "target": asdict(self.target) if self.target else None,
            "ours": self.ours.to_json() if self.ours else None,
            "limit": self.limit.to_json() if self.limit else None,
            "peers": [p.to_json() for p in self.peers],
            "ratios": self.ratios(),
            "shortfall": shortfall,
            "meets_target": None if shortfall is None else shortfall <= 1.0,
            "notes": self.notes,
            "extra": self.extra,
        }


PathFn = Callable[[Config], list[Row]]


@dataclass
class PathSpec:
    key: str
    title: str
    fn: PathFn
    timeout_s: float


PATHS: dict[str, PathSpec] = {}


def path(key: str, title: str, *, timeout_s: float = 120.0) -> Callable[[PathFn], PathFn]:
    """Register a benchmark path (a function returning its rows)."""

    def register(fn: PathFn) -> PathFn:
        PATHS[key] = PathSpec(key, title, fn, timeout_s)
        return fn

    return register


# -- timing --------------------------------------------------------------------------------------


def spread(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    mid = statistics.median(values)
    return None if mid == 0 else 100.0 * (max(values) - min(values)) / mid


def timed_passes(run: Callable[[], object], cfg: Config) -> list[float]:
    """CPU seconds per pass of ``run`` after the warm-up; the result of each pass is dropped.

    CPU time of this process (``time.process_time``), not the wall clock: on a shared machine the
    wall clock charges a pass with the time the OS gave other processes, which made the ratios
    of figures measured one after another swing by ±50% under load; CPU time does not."""
    for _ in range(cfg.warmup):
        run()
    out: list[float] = []
    for _ in range(cfg.min_passes):
        gc.collect()
        t0 = time.process_time()
        run()
        out.append(time.process_time() - t0)
    return out


def rate(name: str, seconds: list[float], count: int, unit: str, note: str | None = None) -> Figure:
    """A rate figure (``count`` items per pass) from pass durations."""
    rates = [count / s for s in seconds]
    return Figure(name, statistics.median(rates), unit, "higher", rates, spread(rates), note)


def per_item(
    name: str,
    seconds: list[float],
    count: int,
    unit: str = "µs",
    scale: float = 1e6,
    note: str | None = None,
) -> Figure:
    """A time-per-item figure (lower is better) from pass durations."""
    values = [s / count * scale for s in seconds]
    return Figure(name, statistics.median(values), unit, "lower", values, spread(values), note)


def figure(
    name: str, values: list[float], unit: str, better: Better, note: str | None = None
) -> Figure:
    return Figure(name, statistics.median(values), unit, better, list(values), spread(values), note)


def failed(name: str, unit: str, better: Better, why: str) -> Figure:
    """A peer that could not be measured here (the reason is in its note; value 0)."""
    return Figure(name, 0.0, unit, better, [], None, why)
