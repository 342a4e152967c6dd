"""Process identity and private state: who owns a run, whether that owner is still alive.

A pid alone does not name a process for long (pids are reused), so an owner is recorded as
``(pid, start)`` where ``start`` is the process's start time in clock ticks since boot (field 22
of ``/proc/<pid>/stat``). ``start`` is ``None`` where ``/proc`` is missing; then liveness falls
back to the pid alone.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import attrs

__all__ = [
    "ProcessIdentity",
    "ensure_private_dir",
    "process_start_time",
]


def process_start_time(pid: int) -> int | None:
    """``pid``'s start time (clock ticks since boot), or ``None`` if unknown or gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid ..." — comm may hold spaces and parentheses: split after the last ")"
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


@attrs.frozen
class ProcessIdentity:
    """A process named so that a reused pid is not mistaken for it."""

    pid: int
    start: int | None

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity:
        return cls(pid, process_start_time(pid))

    @classmethod
    def current(cls) -> ProcessIdentity:
        return cls.of(os.getpid())

    def alive(self) -> bool:
        """Whether this very process is still running (a zombie counts as gone)."""
        if self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return False
        except OSError:
            return True  # no /proc: trust kill(0)
        fields = data[data.rfind(b")") + 2 :].split()
        if fields and fields[0] in (b"Z", b"X"):
            return False
        if self.start is None:
            return True
        try:
            return int(fields[19]) == self.start
        except (IndexError, ValueError):
            return True


def ensure_private_dir(path: str | os.PathLike[str], *, tighten: bool = False) -> Path:
    """Create ``path`` (and missing parents) with mode 0700.

    With ``tighten``, an existing directory that we own is narrowed to 0700 too (never a shared
    sticky directory such as ``/tmp``): use it for ringleader's own state directory.
    """
    target = Path(path)
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    if tighten:
        st = target.stat()
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid == os.getuid() and mode & 0o077 and not mode & stat.S_ISVTX:
            os.chmod(target, mode & 0o700)
    return target
