"""Holding trio's autojump clock still while work runs on a worker thread.

pytest-trio's ``autojump_clock`` jumps virtual time to the next deadline as soon as every trio
task is blocked — and a task waiting on ``trio.to_thread.run_sync`` counts as blocked. So while
a worker thread makes a directory or reads a SQLite log, a scripted run's ``sleep 100`` elsewhere
in the test can pass in full: its run ends, its slot frees, a deadline fires early. A test whose
assertion depends on such a deadline *not* having passed yet holds the clock around that part
(see tests/orchestrator/test_queued_runs.py), and lets it jump again afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from contextlib import contextmanager

import trio.testing

__all__ = ["held"]


@contextmanager
def held(clock: trio.testing.MockClock) -> Generator[None]:
    """Virtual time stands still inside the block (worker threads included); it autojumps again
    as before on the way out. Inside it nothing may wait for virtual time to pass: a
    ``trio.sleep`` there waits forever."""
    before = clock.autojump_threshold
    clock.autojump_threshold = math.inf
    try:
        yield
    finally:
        clock.autojump_threshold = before
