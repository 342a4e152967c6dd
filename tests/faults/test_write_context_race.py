"""Item 7: ``write_context`` (through :mod:`adapters._confine`, shared with the native tools) under a directory/symlink flip. While another thread keeps swapping
a workspace directory for a symbolic link to a directory outside (and back), thousands of writes
land only inside the workspace — zero escapes — or are refused; the test is bounded by its
attempt count, not by time."""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
from pathlib import Path

import pytest

from adapters import ScriptedAdapter
from adapters._base import _write_context_file_sync as write_confined_sync  # pyright: ignore[reportPrivateUsage]
from orchestrator.core import ConfigError, StartOpts, TaskHandle

ATTEMPTS = 3000
_LIBC = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
REFUSED = (ConfigError, FileNotFoundError, NotADirectoryError)


class Flipper:
    """Makes ``ws/sub`` alternately a real directory and a symlink to ``outside``, until stopped."""

    def __init__(self, ws: Path, outside: Path) -> None:
        self.ws, self.outside = ws, outside
        self.stop = threading.Event()
        self.flips = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        old, new = bytes(self.ws / "sub"), bytes(self.ws / "sub.link")
        while not self.stop.is_set():
            # swap the two names atomically: "sub" is always there, a directory or the symlink
            if _LIBC.renameat2(_AT_FDCWD, old, _AT_FDCWD, new, _RENAME_EXCHANGE) != 0:
                raise OSError(ctypes.get_errno(), "renameat2")
            self.flips += 1

    def __enter__(self) -> Flipper:
        # switch threads often so the flips interleave with every step of the writes
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        (self.ws / "sub").mkdir()
        (self.ws / "sub.link").symlink_to(self.outside, target_is_directory=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        sys.setswitchinterval(self._interval)


def _escapes(outside: Path) -> list[str]:
    return sorted(p.name for p in outside.rglob("*"))


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    return ws, outside


def test_confined_writes_never_escape_under_a_symlink_flip(tmp_path: Path) -> None:
    ws, outside = _dirs(tmp_path)
    written = refused = 0
    with Flipper(ws, outside) as flipper:
        for i in range(ATTEMPTS):
            try:
                write_confined_sync(ws, f"sub/f{i}.txt", "x")
                written += 1
            except REFUSED:
                refused += 1
    assert flipper.flips > 100  # the race really ran
    assert written > 0 and refused > 0  # both sides of the flip were hit
    assert _escapes(outside) == []


async def test_adapter_write_context_never_escapes_under_a_symlink_flip(tmp_path: Path) -> None:
    ws, outside = _dirs(tmp_path)
    async with ScriptedAdapter([{"type": "sleep", "seconds": 3600}]) as adapter:
        opts = StartOpts(agent_id="a", session_key="s", message="m", cwd=str(ws))
        run = await adapter.start(TaskHandle(task_id="t"), opts)
        with Flipper(ws, outside) as flipper:
            for i in range(ATTEMPTS):
                with contextlib.suppress(ConfigError, OSError):
                    await adapter.write_context(run, f"sub/f{i}.txt", "x")
        await adapter.abort(run)
    assert flipper.flips > 100
    assert _escapes(outside) == []


def test_symlinks_out_and_escaping_keys_are_refused(tmp_path: Path) -> None:
    ws, outside = _dirs(tmp_path)
    (outside / "target.txt").write_text("keep")
    (ws / "link").symlink_to(outside, target_is_directory=True)
    (ws / "file-link").symlink_to(outside / "target.txt")
    (ws / "rel-link").symlink_to("../outside/target.txt")
    for key in ("link/x.txt", "file-link", "rel-link", "../x", "/etc/passwd", "", "a/../../x"):
        with pytest.raises(ConfigError):
            write_confined_sync(ws, key, "x")
    assert (outside / "target.txt").read_text() == "keep"
    assert _escapes(outside) == ["target.txt"]
    write_confined_sync(ws, "a/b/c.txt", "ok")
    write_confined_sync(ws, "a/b/c.txt", "new")
    assert (ws / "a" / "b" / "c.txt").read_text() == "new"
