"""Writing inside a run's workspace without a check-then-write race.

:func:`write_confined` opens every path component relative to the previous directory's handle
(``openat``) with ``O_NOFOLLOW``, starting from a handle on the workspace root: a component that
is (or is swapped, at any moment, for) a symbolic link fails the open instead of being followed,
so nothing can be written outside the workspace however the tree is changed meanwhile. Missing
directories are created the same way (``mkdirat`` then an ``O_NOFOLLOW`` open). The file itself is
opened ``O_NOFOLLOW`` without truncation, refused if it is not a regular file or has other hard
links (a hard link could point outside), and only then truncated and written.

Symbolic links inside the workspace are therefore never followed by ``write_context`` keys, even
ones pointing inside it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import PurePosixPath

import trio

from orchestrator.errors import ConfigError

__all__ = ["write_confined", "write_confined_sync"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _escape(key: str) -> ConfigError:
    return ConfigError(f"context key {key!r} escapes the run's workspace (symbolic link)")


def _key_parts(key: str) -> tuple[str, ...]:
    if not key or "\x00" in key:
        raise ConfigError("context key must be a non-empty relative path")
    pure = PurePosixPath(key.replace("\\", "/"))
    if pure.is_absolute() or any(part == ".." for part in pure.parts) or not pure.parts:
        raise ConfigError(f"context key {key!r} escapes the run's workspace")
    return pure.parts


def _open_dir(name: str, parent: int, key: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _escape(key) from None
        raise
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
            raise _escape(key) from None
        raise


def write_confined_sync(root: str | os.PathLike[str], key: str, value: str) -> None:
    """Write ``value`` (UTF-8) to ``key`` under ``root`` (see the module docstring).

    Raises :class:`ConfigError` for an absolute key, ``..``, or a symbolic link (or hard link,
    or non-regular file) on the way; ``OSError`` for ordinary I/O failures.
    """
    parts = _key_parts(key)
    data = value.encode("utf-8")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts[:-1]:
            next_fd = _open_dir(name, fd, key)
            os.close(fd)
            fd = next_fd
        try:
            file_fd = os.open(parts[-1], _FILE_FLAGS, 0o666, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
                raise _escape(key) from None
            raise
        try:
            st = os.fstat(file_fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                raise ConfigError(f"context key {key!r} is not a plain file of the workspace")
            os.ftruncate(file_fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(file_fd, view) :]
        finally:
            os.close(file_fd)
    finally:
        os.close(fd)


async def write_confined(root: str | os.PathLike[str], key: str, value: str) -> None:
    """:func:`write_confined_sync` in a worker thread."""
    await trio.to_thread.run_sync(write_confined_sync, root, key, value)
