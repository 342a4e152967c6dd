"""Open files *beneath* a directory, race-free: the one confinement helper adapters share.

``open_beneath(root, "a/b/c.txt", flags)`` walks the path one component at a time, each step an
``openat`` relative to the directory handle of the step before, with ``O_NOFOLLOW``. A component
that is a symbolic link is never followed by the kernel: its target is read (``readlinkat``) and
spliced into the rest of the path, so a link that stays inside ``root`` works and one that leaves
it (an absolute target, or ``..`` above ``root``) raises :class:`EscapeError`. ``..`` pops the
stack of directories actually walked, so it can never climb above ``root``.

Because every check happens *at open time* on handles already held, swapping a directory or a
file for a symlink between a caller's check and its write cannot redirect the write outside
``root``: there is no check-then-open window. (This is ``openat2(RESOLVE_BENEATH |
RESOLVE_NO_MAGICLINKS)`` done in user space, portable to any POSIX system.)

Limits, stated plainly: a *hard* link inside ``root`` to a file elsewhere is a real directory entry
and is opened like any other (the kernel's ``protected_hardlinks`` stops users from creating links
to files they do not own); mount points inside ``root`` are crossed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from contextlib import suppress
from typing import Final

__all__ = ["MAX_SYMLINKS", "EscapeError", "open_beneath", "read_beneath", "write_beneath"]

MAX_SYMLINKS: Final = 40
"""Symbolic links followed in one resolution before ``ELOOP`` (the kernel's limit)."""

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_PATH: Final = getattr(os, "O_PATH", 0)
_DIR_FLAGS: Final = (_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC


class EscapeError(PermissionError):
    """The path leaves the directory it must stay beneath (absolute, ``..`` or a symlink)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(errno.EXDEV, f"{reason}: {path!r} is outside the allowed directory")
        self.path = path
        self.reason = reason


def _split(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


def open_beneath(
    root: int | str | os.PathLike[str],
    path: str | os.PathLike[str],
    flags: int = os.O_RDONLY,
    mode: int = 0o666,
    *,
    mkdirs: bool = False,
) -> int:
    """Open ``path`` relative to ``root`` without ever leaving it; return a new file descriptor.

    Args:
        root: the directory (a path, or a directory file descriptor the caller keeps owning).
        path: a relative path (``/`` separators). ``""`` or ``"."`` opens ``root`` itself.
        flags: ``os.open`` flags for the final component (``O_NOFOLLOW`` and ``O_CLOEXEC`` are
            added); ``O_CREAT`` creates the file *beneath* ``root`` even through a dangling
            in-root symlink.
        mode: creation mode for ``O_CREAT``.
        mkdirs: create missing intermediate directories (each one beneath ``root``).

    Raises:
        EscapeError: absolute path, ``..`` above ``root``, or a symlink pointing outside it.
        OSError: what the open itself raises (``FileNotFoundError``, ``NotADirectoryError``,
            ``IsADirectoryError``, ``ELOOP`` after :data:`MAX_SYMLINKS` links, …).
    """
    raw = os.fspath(path)
    if "\x00" in raw:
        raise ValueError("path contains a NUL byte")
    if raw.startswith("/"):
        raise EscapeError(raw, "absolute path")
    if isinstance(root, int):
        base = os.dup(root)
    else:
        base = os.open(root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    stack = [base]
    try:
        return _walk(stack, raw, deque(_split(raw)), flags | os.O_NOFOLLOW | _CLOEXEC, mode, mkdirs)
    finally:
        for fd in stack:
            os.close(fd)


def _walk(
    stack: list[int], raw: str, parts: deque[str], flags: int, mode: int, mkdirs: bool
) -> int:
    links = 0
    while parts:
        name = parts.popleft()
        if name == "..":
            if len(stack) == 1:
                raise EscapeError(raw, "'..' climbs above the root")
            os.close(stack.pop())
            continue
        cur = stack[-1]
        last = not parts
        try:
            if last:
                return os.open(name, flags, mode, dir_fd=cur)
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=cur)
            except FileNotFoundError:
                if not mkdirs:
                    raise
                # created meanwhile (or a dangling symlink: the retry below resolves it)
                with suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=cur)
                fd = os.open(name, _DIR_FLAGS, dir_fd=cur)
            stack.append(fd)
        except OSError as exc:
            # O_NOFOLLOW on a symlink: ELOOP (or ENOTDIR with O_DIRECTORY / O_PATH)
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise
            try:
                target = os.readlink(name, dir_fd=cur)
            except OSError:
                raise exc from None  # not a symlink: the original error stands
            links += 1
            if links > MAX_SYMLINKS:
                raise OSError(errno.ELOOP, "too many levels of symbolic links", raw) from None
            if target.startswith("/"):
                raise EscapeError(raw, f"symlink {name!r} points to an absolute path") from None
            parts.extendleft(reversed(_split(target)))
    return _open_dot(stack, flags, mode)


def _open_dot(stack: list[int], flags: int, mode: int) -> int:
    """The directory at the top of the stack, opened with the caller's flags."""
    return os.open(".", flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC), mode, dir_fd=stack[-1])


def read_beneath(
    root: int | str | os.PathLike[str], path: str | os.PathLike[str], limit: int = -1
) -> bytes:
    """The bytes of a regular file beneath ``root`` (at most ``limit`` bytes if ``limit >= 0``)."""
    fd = open_beneath(root, path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not _is_regular(f.fileno()):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        return f.read(limit)


def write_beneath(
    root: int | str | os.PathLike[str],
    path: str | os.PathLike[str],
    data: bytes,
    *,
    mkdirs: bool = True,
    mode: int = 0o666,
) -> bool:
    """Write ``data`` to ``path`` beneath ``root`` (truncating); True if the file was created."""
    created = True
    try:
        fd = open_beneath(
            root, path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NONBLOCK, mode, mkdirs=mkdirs
        )
    except FileExistsError:
        created = False
        fd = open_beneath(root, path, os.O_WRONLY | os.O_NONBLOCK, mode, mkdirs=mkdirs)
    with os.fdopen(fd, "wb") as f:
        if not created:
            if not _is_regular(f.fileno()):
                raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
            f.truncate(0)
        f.write(data)
    return created


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)
