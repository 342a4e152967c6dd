"""Small JSON state files shared between processes: read under a lock, replaced atomically.

The breakers (:mod:`orchestrator.engine.governance.breaker`), the quota meters
(:mod:`orchestrator.core.quota`) and the scheduler's memory (:mod:`orchestrator.engine.schedule`)
each keep one small document in the state directory that several ringleader processes (a
``serve``, a ``run``, a ``batch``) read and change. The rules are the same for all of them, so
they live here once:

- a change holds an exclusive ``flock`` on ``NAME.lock`` beside the file from the read to the
  write, so two processes never lose each other's update;
- the file is replaced atomically (a reader never sees half a file), owner-only (0600) in an
  owner-only folder;
- the document is ``{"schema": N, SECTION: …}``; a missing, damaged or other-schema file reads
  as empty — these files are advice, and a damaged one must not stop every task.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any, cast


@contextlib.contextmanager
def locked(path: Path) -> Generator[None]:
    """Hold the exclusive lock of ``path`` (``NAME.lock`` beside it) for the ``with`` body."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def read_section(path: Path, *, schema: int, section: str) -> object:
    """``SECTION`` of the document in ``path``; ``None`` when the file is missing, damaged or
    written with another schema."""
    try:
        raw: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    top = cast(dict[str, Any], raw)
    return top.get(section) if top.get("schema") == schema else None


def write_section(
    path: Path, value: object, *, schema: int, section: str, indent: int | None = None
) -> None:
    """Replace ``path`` atomically with ``{"schema": schema, section: value}`` (mode 0600)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"schema": schema, section: value}, handle, indent=indent)
    os.replace(tmp, path)
