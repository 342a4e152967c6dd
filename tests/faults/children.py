"""The fault tests' orchestrator processes: killed on the way out when a failed check left one
running (its run waits on a runtime that sleeps for an hour, so leaving the ``with`` block would
otherwise wait for it forever in ``Popen.__exit__``)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator


@contextlib.contextmanager
def killed_on_the_way_out(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """``proc`` for a ``with`` block; SIGKILLed at its end if it still runs, then reaped."""
    with proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
