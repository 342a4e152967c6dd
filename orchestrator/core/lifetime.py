"""Process identity and private state: who owns a run, whether that owner is still alive.

A pid alone does not name a process for long (pids are reused), so an owner is recorded as
``(pid, start)`` where ``start`` is the process's start time in clock ticks since boot (field 22
of ``/proc/<pid>/stat``). ``start`` is ``None`` where ``/proc`` is missing; then liveness falls
back to the pid alone.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import stat
from collections.abc import Collection
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Final

import attrs

__all__ = [
    "MARK_ENV",
    "PID_NS_ENV",
    "ProcessIdentity",
    "ProcessRegistry",
    "check_state_dir",
    "current_process_registry",
    "default_state_dir",
    "ensure_private_dir",
    "existing_state_dir",
    "kill_marked",
    "marked_pids",
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
        """Whether this very process is still running (a zombie counts as gone).

        Namespace-proof: a process recorded from inside a PID namespace (a ringleader run by a
        runtime's tool, ``ringleader mcp`` as a native MCP server: every runtime child has one,
        ``adapters/_process.py``) is found by its start time and its innermost pid
        (:meth:`locate`); and inside a namespace ringleader made (:data:`PID_NS_ENV`) a process
        that cannot be seen is not taken for dead — it may live outside it."""
        if self.locate() is not None:
            return True
        return bool(os.environ.get(PID_NS_ENV))

    def locate(self) -> int | None:
        """This process's pid as this process sees it (``None``: not running, or not visible
        from here): ``pid`` itself when its start time matches, else — ``pid`` was recorded in
        another PID namespace — the process whose start time is ``start`` and whose innermost
        pid (``NSpid``) is ``pid``."""
        if self.pid <= 0:
            return None
        direct = _same(self.pid, self.start)
        if direct is not False:
            return self.pid if direct else None
        if self.start is None:
            return None
        for name in _proc_pids():
            if _same(name, self.start) and _innermost_pid(name) == self.pid:
                return name
        return None


def _same(pid: int, start: int | None) -> bool | None:
    """``pid`` is the live process that started at ``start``: True, False (gone, a zombie, or
    another process), or ``None`` (gone: reported as not running, nothing to look for)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # no /proc: trust kill(0)
    fields = data[data.rfind(b")") + 2 :].split()
    if fields and fields[0] in (b"Z", b"X"):
        return None  # a zombie: gone
    if start is None:
        return True
    try:
        return int(fields[19]) == start
    except (IndexError, ValueError):
        return True


def _proc_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _innermost_pid(pid: int) -> int | None:
    """``pid``'s number in its own PID namespace (the last ``NSpid`` of its status)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def default_state_dir() -> Path:
    """``$RINGLEADER_STATE_DIR``, else ``$XDG_STATE_HOME/ringleader``, else ``~/.local/state/ringleader``."""
    explicit = os.environ.get("RINGLEADER_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "ringleader"


def check_state_dir(path: str | os.PathLike[str]) -> None:
    """Refuse a state directory another user owns or can write (as ssh refuses a loose key
    file): another user could plant what ringleader reads there (``procs/*.json`` names
    processes to kill) or read the log. A :class:`~orchestrator.core.errors.ConfigError` line
    saying what to do."""
    from orchestrator.core.errors import ConfigError

    state = Path(path)
    info = state.stat()
    if info.st_uid != os.geteuid():
        raise ConfigError(
            f"the state directory {state} belongs to another user (uid {info.st_uid}); "
            "set RINGLEADER_STATE_DIR to a directory of your own"
        )
    if info.st_mode & 0o022:
        raise ConfigError(
            f"the state directory {state} is writable by other users "
            f"(mode {info.st_mode & 0o777:o}); make it private: chmod 700 {state}"
        )


def existing_state_dir() -> Path:
    """:func:`default_state_dir`, checked (:func:`check_state_dir`) if it exists: for commands
    that only read what is there."""
    state = default_state_dir()
    if state.is_dir():
        check_state_dir(state)
    return state


def ensure_private_dir(path: str | os.PathLike[str], *, tighten: bool = False) -> Path:
    """Create ``path`` (and missing parents) with mode 0700.

    With ``tighten``, an existing directory that we own is narrowed to 0700 too (never a shared
    sticky directory such as ``/tmp``), and one another user owns is refused
    (:func:`check_state_dir`): use it for ringleader's own state directory.
    """
    target = Path(path)
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    if tighten:
        st = target.stat()
        if st.st_uid != os.geteuid():
            check_state_dir(target)
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid == os.getuid() and mode & 0o077 and not mode & stat.S_ISVTX:
            os.chmod(target, mode & 0o700)
    return target


# -- child processes: marks, the on-disk registry, reaping ------------------------------------

PID_NS_ENV: Final = "RINGLEADER_PID_NAMESPACE_CHILD"
"""Set (to ``1``) in the environment of a child ringleader started in a PID namespace of its
own (``adapters/_process.py``): what runs in there cannot see processes outside it, so it never
takes an unseen owner for dead (see :meth:`ProcessIdentity.alive`)."""

MARK_ENV: Final = "RINGLEADER_PROC_MARK"
"""Set in every runtime child's environment to a unique mark. Descendants inherit it whatever
session or process group they move to (Claude Code puts its Bash tool in a session of its own),
so the whole tree of one child can be found in ``/proc`` — even after the orchestrator died."""


def marked_pids(mark: str, *, exclude: Collection[int] = ()) -> list[int]:
    """Live processes (not zombies) whose environment carries ``mark`` (Linux; ``[]`` elsewhere)."""
    needle = b"\0" + f"{MARK_ENV}={mark}".encode() + b"\0"
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    me = os.getpid()
    found: list[int] = []
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me or pid in exclude:
            continue
        # environ ends without a trailing NUL on some kernels: test with one appended
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                data = b"\0" + f.read() + b"\0"
        except OSError:
            continue
        if needle in data and ProcessIdentity(pid, None).alive():
            found.append(pid)
    return found


def kill_marked(mark: str, sig: int = signal.SIGKILL) -> list[int]:
    """Send ``sig`` to every live process carrying ``mark``; returns their pids."""
    pids = marked_pids(mark)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return pids


@attrs.define
class ProcessRegistry:
    """One file per live runtime child under ``directory`` (``<state_dir>/procs``), naming its
    owner (this process), the child and its mark. The entry goes when the child's whole tree is
    gone. If the owner dies first (SIGKILL, OOM, power), :meth:`reap` — run by the next start —
    kills every process still carrying the mark and removes the entry."""

    directory: Path

    def record(self, mark: str, pid: int, *, adapter: str | None, session_key: str | None) -> None:
        ensure_private_dir(self.directory)
        owner = ProcessIdentity.current()
        entry = {
            "mark": mark,
            "ownerPid": owner.pid,
            "ownerStart": owner.start,
            "pid": pid,
            "start": process_start_time(pid),
            "adapter": adapter,
            "sessionKey": session_key,
        }
        path = self.directory / f"{mark}.json"
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, path)

    def forget(self, mark: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.directory / f"{mark}.json").unlink()

    def reap(self) -> list[int]:
        """Kill the trees of children whose owner process is dead; returns the pids killed.

        An entry names processes to kill, so only ours count: the directory must be ours and
        writable by nobody else, each entry a regular file of ours; and only a process that
        carries the entry's mark is killed — a planted entry naming any other process of yours
        (its pid and start time) kills nothing."""
        killed: list[int] = []
        try:
            info = self.directory.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                return killed
            if info.st_mode & 0o022:
                return killed
            entries = sorted(self.directory.glob("*.json"))
        except OSError:
            return killed
        for path in entries:
            try:
                entry: dict[str, Any] = json.loads(_own_file_text(path))
                owner = ProcessIdentity(int(entry["ownerPid"]), entry.get("ownerStart"))
                mark = str(entry["mark"])
            except (OSError, ValueError, KeyError, TypeError, RecursionError):
                continue
            if owner.alive():
                continue
            child = ProcessIdentity(int(entry.get("pid") or 0), entry.get("start"))
            here = child.locate()  # the pid as seen here (it may have been recorded in a namespace)
            if here is not None and here in marked_pids(mark):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(here, signal.SIGKILL)
                killed.append(here)
            # kill until none is left (a dying parent may still fork once)
            for _ in range(10):
                pids = kill_marked(mark)
                if not pids:
                    break
                killed.extend(pids)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        return killed


def _own_file_text(path: Path) -> str:
    """``path``'s text if it is a regular file of ours (not a link); else :class:`OSError`."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise PermissionError(errno.EPERM, "not a file of ours", str(path))
        return f.read(1 << 20).decode()


current_process_registry: ContextVar[ProcessRegistry | None] = ContextVar(
    "ringleader_process_registry", default=None
)
"""The registry runtime children started in this context are recorded in (set by the
:class:`~orchestrator.engine.runner.Runner` for the duration of a task; ``None``: not recorded)."""
