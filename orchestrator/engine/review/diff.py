"""What a run changed in its workspace, against the commit the workspace started from.

One ``git diff BASE`` of the working tree (``--raw -z -p``: the file list with exact paths and
the unified patch in one pass), through a private copy of the checkout's index in which untracked
files are marked intent-to-add — so new files are in the diff, nothing is hashed into the object
store, and neither the agent's index nor the person's is touched. Renames are detected
(``--find-renames``); binary files are marked (``binary``) and so are files above
:data:`LARGE_BYTES` (``large``: git treats them as binary, no hunks are read). Files ignored by
the repository's ``.gitignore`` (and, in a temporary copy, the folders it leaves out) are not
changes.

:func:`workspace_tree` writes the workspace's state as a tree (objects written, no ref moved):
what ``apply`` commits.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from orchestrator.core.errors import ReviewError
from orchestrator.engine.review.git import Checkout, temporary_index

__all__ = [
    "LARGE_BYTES",
    "DiffFile",
    "FileStatus",
    "Hunk",
    "WorkspaceDiff",
    "parse_diff",
    "workspace_diff",
    "workspace_tree",
]

LARGE_BYTES = 1024 * 1024
"""A file above this size (either side) is marked ``large``; its hunks are not read."""

FileStatus = Literal["added", "modified", "deleted", "renamed", "copied", "type-changed"]

_STATUS: dict[str, FileStatus] = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type-changed",
}

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")


@attrs.frozen
class Hunk:
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    header: str
    """The text git shows after the second ``@@`` (the enclosing function, if it found one)."""
    lines: tuple[str, ...]
    """Each line with its prefix: ``' '`` context, ``-`` removed, ``+`` added, ``\\`` a note."""

    def to_json(self) -> dict[str, Any]:
        return {
            "oldStart": self.old_start,
            "oldLines": self.old_lines,
            "newStart": self.new_start,
            "newLines": self.new_lines,
            "header": self.header,
            "lines": list(self.lines),
        }


@attrs.frozen
class DiffFile:
    path: str
    status: FileStatus
    old_path: str | None = None
    """Where a renamed or copied file came from."""
    added: int = 0
    removed: int = 0
    binary: bool = False
    large: bool = False
    similarity: int | None = None
    """Percent, for a rename or copy."""
    old_mode: str | None = None
    new_mode: str | None = None
    hunks: tuple[Hunk, ...] = ()
    patch: str = ""
    """The file's part of the unified diff (``diff --git`` header included)."""

    def to_json(self, *, hunks: bool = True) -> dict[str, Any]:
        found: dict[str, Any] = {
            "path": self.path,
            "status": self.status,
            "oldPath": self.old_path,
            "added": self.added,
            "removed": self.removed,
            "binary": self.binary,
            "large": self.large,
        }
        if self.similarity is not None:
            found["similarity"] = self.similarity
        if self.old_mode != self.new_mode:
            found["oldMode"], found["newMode"] = self.old_mode, self.new_mode
        if hunks:
            found["hunks"] = [h.to_json() for h in self.hunks]
        return found


@attrs.frozen
class WorkspaceDiff:
    base: str
    files: tuple[DiffFile, ...]

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    def summary(self) -> str:
        """``none``, or ``3 files, +12 -4`` (what the comparison table shows)."""
        if not self.files:
            return "none"
        n = len(self.files)
        return f"{n} file{'s' if n != 1 else ''}, +{self.added} -{self.removed}"

    def paths(self) -> set[str]:
        return {f.path for f in self.files}

    def unified(self) -> str:
        return "".join(f.patch for f in self.files)

    def stat(self, width: int = 80) -> str:
        """Like ``git diff --stat``: a line per file, then the totals."""
        if not self.files:
            return "no changes\n"
        names = [_stat_name(f) for f in self.files]
        pad = max(len(n) for n in names)
        most = max((f.added + f.removed for f in self.files), default=0)
        digits = len(str(most))
        room = max(10, width - pad - digits - 6)
        lines: list[str] = []
        for f, name in zip(self.files, names, strict=True):
            if f.large:
                what = "large file (not diffed)"
            elif f.binary:
                what = "Bin"
            else:
                total = f.added + f.removed
                scale = min(1.0, room / most) if most else 1.0
                plus, minus = round(f.added * scale), round(f.removed * scale)
                what = f"{total:>{digits}} {'+' * plus}{'-' * minus}".rstrip()
            lines.append(f" {name.ljust(pad)} | {what}")
        n = len(self.files)
        lines.append(
            f" {n} file{'s' if n != 1 else ''} changed, {self.added} insertion"
            f"{'s' if self.added != 1 else ''}(+), {self.removed} deletion"
            f"{'s' if self.removed != 1 else ''}(-)"
        )
        return "\n".join(lines) + "\n"

    def to_json(self, *, hunks: bool = True) -> dict[str, Any]:
        return {
            "base": self.base,
            "files": [f.to_json(hunks=hunks) for f in self.files],
            "totals": {"files": len(self.files), "added": self.added, "removed": self.removed},
        }


def _stat_name(f: DiffFile) -> str:
    if f.old_path is not None and f.status in ("renamed", "copied"):
        return f"{f.old_path} => {f.path}"
    return f.path


# -- parsing -------------------------------------------------------------------------------------


@attrs.frozen
class _Raw:
    status: FileStatus
    path: str
    old_path: str | None
    old_mode: str
    new_mode: str
    old_blob: str
    similarity: int | None


def _parse_raw(data: bytes) -> tuple[list[_Raw], int]:
    """The ``--raw -z`` records at the start of ``data``, and where the patch starts."""
    found: list[_Raw] = []
    pos = 0
    while pos < len(data) and data[pos : pos + 1] == b":":
        end = data.index(b"\0", pos)
        meta = data[pos + 1 : end].decode("ascii").split(" ")
        old_mode, new_mode, old_blob, _new_blob, code = meta[:5]
        pos = end + 1
        end = data.index(b"\0", pos)
        first = data[pos:end].decode("utf-8", "surrogateescape")
        pos = end + 1
        letter = code[0]
        score = int(code[1:]) if len(code) > 1 else None
        if letter in ("R", "C"):
            end = data.index(b"\0", pos)
            second = data[pos:end].decode("utf-8", "surrogateescape")
            pos = end + 1
            found.append(_Raw(_STATUS[letter], second, first, old_mode, new_mode, old_blob, score))
        else:
            status = _STATUS.get(letter, "modified")
            found.append(_Raw(status, first, None, old_mode, new_mode, old_blob, None))
    if pos < len(data) and data[pos : pos + 1] == b"\0":
        pos += 1  # the separator between the records and the patch
    return found, pos


def _split_patches(data: bytes) -> list[bytes]:
    """The patch, one chunk per file (each starts with ``diff --git``)."""
    if not data:
        return []
    starts = [m.start() for m in re.finditer(rb"(?m)^diff --git ", data)]
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


def _parse_patch(chunk: bytes) -> tuple[bool, list[Hunk], int, int]:
    """(binary, hunks, added, removed) of one file's patch."""
    lines = chunk.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    binary = False
    hunks: list[Hunk] = []
    added = removed = 0
    i = 0
    # header: up to the first hunk
    while i < len(lines) and not lines[i].startswith(b"@@ "):
        if lines[i].startswith(b"Binary files ") or lines[i] == b"GIT binary patch":
            binary = True
        i += 1
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if m is None:
            i += 1
            continue
        old_start, old_n, new_start, new_n = (
            int(m.group(1)),
            int(m.group(2) or b"1"),
            int(m.group(3)),
            int(m.group(4) or b"1"),
        )
        header = m.group(5).decode("utf-8", "replace")
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].startswith(b"@@ "):
            line = lines[i]
            first = line[:1]
            if first == b"+":
                added += 1
            elif first == b"-":
                removed += 1
            body.append(line.decode("utf-8", "replace"))
            i += 1
        hunks.append(Hunk(old_start, old_n, new_start, new_n, header, tuple(body)))
    return binary, hunks, added, removed


def parse_diff(data: bytes, *, base: str, sizes: dict[str, int] | None = None) -> WorkspaceDiff:
    """A :class:`WorkspaceDiff` from ``git diff --raw -z -p`` output. ``sizes``: the larger
    side's size in bytes of each binary-looking file, to tell ``large`` from ``binary``."""
    records, start = _parse_raw(data)
    chunks = _split_patches(data[start:])
    if len(chunks) != len(records):
        raise ReviewError(
            f"could not read git's diff ({len(records)} files listed, {len(chunks)} patches)"
        )
    files: list[DiffFile] = []
    limit = LARGE_BYTES
    for raw, chunk in zip(records, chunks, strict=True):
        binary, hunks, added, removed = _parse_patch(chunk)
        large = binary and (sizes or {}).get(raw.path, 0) > limit
        files.append(
            DiffFile(
                path=raw.path,
                status=raw.status,
                old_path=raw.old_path,
                added=added,
                removed=removed,
                binary=binary and not large,
                large=large,
                similarity=raw.similarity,
                old_mode=raw.old_mode,
                new_mode=raw.new_mode,
                hunks=tuple(hunks),
                patch=chunk.decode("utf-8", "replace"),
            )
        )
    return WorkspaceDiff(base=base, files=tuple(files))


# -- the workspace -------------------------------------------------------------------------------

_DIFF_FLAGS = (
    "-c",
    "core.quotePath=false",
    "-c",
    f"core.bigFileThreshold={LARGE_BYTES}",
    "-c",
    "diff.noprefix=false",
    "-c",
    "diff.mnemonicPrefix=false",
)


def _git_diff_args(base: str, paths: Sequence[str] = ()) -> list[str]:
    return [
        "diff",
        "--raw",
        "-z",
        "-p",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--find-renames",
        "--full-index",
        "--no-abbrev",
        base,
        *(["--", *paths] if paths else []),
    ]


def _sizes(checkout: Checkout, data: bytes) -> dict[str, int]:
    """The larger side's size of each file git called binary (the working tree's file, and the
    base's blob)."""
    records, start = _parse_raw(data)
    chunks = _split_patches(data[start:])
    wanted = [
        raw
        for raw, chunk in zip(records, chunks, strict=False)
        if b"\nBinary files " in chunk or b"\nGIT binary patch" in chunk
    ]
    if not wanted:
        return {}
    found: dict[str, int] = {}
    blobs = [r.old_blob for r in wanted if r.old_blob.strip("0")]
    old: dict[str, int] = {}
    if blobs:
        out = checkout.run(
            "cat-file", "--batch-check", input="\n".join(blobs).encode() + b"\n"
        ).stdout.decode()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[2].isdigit():
                old[parts[0]] = int(parts[2])
    for raw in wanted:
        size = old.get(raw.old_blob, 0)
        with contextlib.suppress(OSError):
            size = max(size, (checkout.root / raw.path).lstat().st_size)
        found[raw.path] = size
    return found


def workspace_diff(checkout: Checkout, paths: Sequence[str] = ()) -> WorkspaceDiff:
    """What changed in ``checkout`` since its base commit (blocking: call it in a thread).
    ``paths``: only these files."""
    if not checkout.root.is_dir():
        raise ReviewError(f"the workspace {checkout.root} is gone (removed or pruned)")
    with temporary_index(checkout) as env:
        checkout.run("add", "-A", "-N", "--", ".", env=env, what="listing new files")
        data = checkout.run(
            *_DIFF_FLAGS, *_git_diff_args(checkout.base, paths), env=env, what="git diff"
        ).stdout
    return parse_diff(data, base=checkout.base, sizes=_sizes(checkout, data))


def workspace_tree(checkout: Checkout) -> str:
    """The workspace's files as a git tree (objects written, no ref or index of anyone's
    changed): what ``apply`` commits. Blocking."""
    if not checkout.root.is_dir():
        raise ReviewError(f"the workspace {checkout.root} is gone (removed or pruned)")
    with temporary_index(checkout) as env:
        checkout.run("add", "-A", "--", ".", env=env, what="recording the workspace")
        return checkout.run("write-tree", env=env).stdout.decode().strip()
