"""Every path module, imported in table order (importing registers the paths)."""

from __future__ import annotations

import importlib

from ._core import PATHS, PathSpec

MODULES = (
    "bench.p_decode",
    "bench.p_native",
    "bench.p_eventpath",
    "bench.p_sessions",
    "bench.p_first_event",
    "bench.p_live",
    "bench.p_ray_head",
    "bench.p_prefix",
    "bench.p_cli_start",
    "bench.p_run_start",
    "bench.p_review_diff",
    "bench.p_workspaces",
    "bench.p_log",
    "bench.p_side_start",
    "bench.p_overhead",
    "bench.p_board",
    "bench.p_board_open",
)


def load_paths() -> dict[str, PathSpec]:
    for name in MODULES:
        importlib.import_module(name)
    return PATHS
