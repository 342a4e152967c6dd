"""The native runtime's workspace tools: files and search, confined to the run's workspace.

``read_file``, ``write_file``, ``edit_file`` (exact, unique string replace), ``list_files``,
``glob`` and ``grep``; ``bash`` lives in :mod:`.shell`. :func:`workspace_tools` builds the set
for one run (:class:`~.adapter.NativeAdapter` does it from ``StartOpts.cwd``).

Confinement is checked **at open time**: every path is opened with
:func:`adapters._confine.open_beneath` (one ``openat`` per component relative to the directory
handle before it, ``O_NOFOLLOW``, symlinks resolved by hand and refused when they leave the
workspace), and directory walks (``glob``, ``grep``) use :func:`os.fwalk`, which never follows a
symlinked directory and checks each directory it enters is the one it listed. A symlink swapped
in between a check and a write cannot redirect the write.

Every failure is a typed error result the model can act on (``not_found``, ``invalid_input``,
``denied``, ``failed``), never an exception out of the run. Outputs are capped (head and tail
kept, the cut stated, :mod:`.output`); ``read_file`` pages by line (``offset``/``limit``) and its
cut names the lines to ask for.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, TypeVar

import attrs
import trio
from pydantic import BaseModel, Field

from orchestrator.core.errors import ConfigError

from .._confine import EscapeError, open_beneath, write_beneath
from .messages import ToolErrorKind, ToolResultData
from .output import DEFAULT_OUTPUT_LIMIT, cap_text
from .policy import WORKSPACE_WRITE, PermissionPolicy
from .shell import BashOptions, bash_tool
from .tools import Tool, ToolContext

__all__ = [
    "SKIPPED_DIRS",
    "WORKSPACE_TOOL_NAMES",
    "Workspace",
    "WorkspaceLimits",
    "file_tools",
    "fs_error",
    "glob_regex",
    "workspace_tools",
]

T = TypeVar("T")

SKIPPED_DIRS: Final = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
"""Directories ``glob`` and ``grep`` do not descend into (unless searched from inside one)."""


@attrs.frozen
class WorkspaceLimits:
    """Caps on what the workspace tools read and return."""

    output_bytes: int = DEFAULT_OUTPUT_LIMIT
    """Bytes of output a model sees per call (head and tail kept)."""
    read_lines: int = 2000
    """Lines ``read_file`` returns when no ``limit`` is given."""
    max_results: int = 500
    """Paths ``glob`` and matches ``grep`` return at most."""
    walk_entries: int = 200_000
    """Directory entries a ``glob`` or ``grep`` visits before it stops (and says so)."""
    grep_file_bytes: int = 8 * 1024 * 1024
    """Files larger than this are skipped by ``grep`` (and counted)."""
    line_chars: int = 400
    """A ``grep`` match line is shortened to this many characters."""


# -- errors -------------------------------------------------------------------------------------


def _err(message: str, kind: ToolErrorKind) -> ToolResultData:
    return ToolResultData(status="error", message=message, error_kind=kind)


def fs_error(exc: OSError | ValueError, path: str) -> ToolResultData:
    """A typed, model-readable error for a failed file operation on ``path``."""
    if isinstance(exc, EscapeError):
        return _err(
            f"{path!r} is outside the workspace ({exc.reason}); only paths inside it can be used.",
            "denied",
        )
    if isinstance(exc, ValueError):
        return _err(f"invalid path {path!r}: {exc}", "invalid_input")
    code = exc.errno
    if isinstance(exc, FileNotFoundError):
        return _err(f"{path!r} does not exist.", "not_found")
    if isinstance(exc, IsADirectoryError):
        return _err(f"{path!r} is a directory, not a file.", "invalid_input")
    if isinstance(exc, NotADirectoryError):
        return _err(f"a component of {path!r} is not a directory.", "invalid_input")
    if code == errno.ELOOP:
        return _err(f"{path!r}: too many levels of symbolic links.", "invalid_input")
    if isinstance(exc, PermissionError):
        return _err(f"{path!r}: permission denied by the file system.", "denied")
    return _err(f"{path!r}: {exc.strerror or exc}", "failed")


# -- glob patterns --------------------------------------------------------------------------------


def _segment_regex(seg: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = seg.find("]", i + 2 if i + 1 < len(seg) and seg[i + 1] in "!^" else i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = seg[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "{":
            j = seg.find("}", i)
            if j < 0:
                out.append(re.escape(c))
            else:
                alts = seg[i + 1 : j].split(",")
                out.append("(?:" + "|".join(_segment_regex(a) for a in alts) + ")")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a glob over ``/``-separated relative paths: ``*``, ``?``, ``[abc]``,
    ``{a,b}``, and ``**`` as a whole segment for any number of directories."""
    parts = [p for p in pattern.strip("/").split("/") if p not in ("", ".")]
    rx: list[str] = []
    for k, seg in enumerate(parts):
        last = k == len(parts) - 1
        if seg == "**":
            rx.append(".*" if last else "(?:[^/]+/)*")
        else:
            rx.append(_segment_regex(seg) + ("" if last else "/"))
    return re.compile("".join(rx) + r"\Z", re.DOTALL)


# -- the workspace -------------------------------------------------------------------------------


def _rel(path: str) -> str:
    """A model-supplied path as a relative one (``/`` separators; absolute stays absolute)."""
    return path.replace("\\", "/") or "."


def _base(path: str) -> str:
    """A directory argument as the prefix of the paths shown ("" for the root)."""
    norm = posixpath.normpath(_rel(path))
    return "" if norm == "." else norm


def _join(base: str, name: str) -> str:
    return name if base in ("", ".") else f"{base}/{name}"


def _is_binary(sample: bytes) -> bool:
    return b"\x00" in sample


@attrs.define
class Workspace:
    """The run's workspace directory and the blocking file operations on it (run in a thread)."""

    root: str
    limits: WorkspaceLimits = attrs.field(factory=WorkspaceLimits)

    def _open(self, path: str, flags: int = os.O_RDONLY, **kw: Any) -> int:
        return open_beneath(self.root, _rel(path), flags, **kw)

    def _open_dir(self, path: str) -> int:
        return self._open(path, os.O_RDONLY | os.O_DIRECTORY)

    # read ------------------------------------------------------------------------------------

    def read(self, path: str, offset: int, limit: int | None) -> str:
        fd = self._open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", path)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            if _is_binary(f.read(8192)):
                return f"[{path} is a binary file of {st.st_size:,} bytes; not shown]"
            f.seek(0)
            want = limit if limit is not None else self.limits.read_lines
            lines: list[bytes] = []
            more = False
            for n, line in enumerate(f, start=1):
                if n < offset:
                    continue
                if len(lines) >= want:
                    more = True
                    break
                lines.append(line)
        if not lines:
            if offset > 1:
                return f"[{path} has fewer than {offset} lines]"
            return f"[{path} is empty]"
        text = b"".join(lines).decode("utf-8", "replace")
        end = offset + len(lines) - 1
        capped, cut = cap_text(text, self.limits.output_bytes)
        if cut is not None:
            first, last = cut[0] + offset - 1, cut[1] + offset - 1
            capped, _ = cap_text(
                text,
                self.limits.output_bytes,
                hint=f"read them with read_file offset={first} limit={last - first + 1}",
            )
        if more:
            capped += (
                f"\n[lines {offset}-{end} shown; the file goes on: read_file offset={end + 1}]"
            )
        elif offset > 1 or cut is not None:
            capped += f"\n[lines {offset}-{end} of {end}]"
        return capped

    # write -----------------------------------------------------------------------------------

    def write(self, path: str, content: str) -> str:
        data = content.encode("utf-8")
        created = write_beneath(self.root, _rel(path), data, mkdirs=True)
        return f"{'Created' if created else 'Overwrote'} {path} ({len(data):,} bytes)."

    def edit(self, path: str, old: str, new: str, replace_all: bool) -> str | ToolResultData:
        fd = self._open(path, os.O_RDWR | os.O_NONBLOCK)
        with os.fdopen(fd, "r+b") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            raw = f.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return _err(
                    f"{path!r} is not UTF-8 text; edit_file cannot edit it.", "invalid_input"
                )
            count = text.count(old)
            if count == 0:
                return _err(
                    f"old_string was not found in {path!r}. It must match the file exactly "
                    "(whitespace and indentation included); read the file first.",
                    "not_found",
                )
            if count > 1 and not replace_all:
                return _err(
                    f"old_string occurs {count} times in {path!r}. Add surrounding lines to make "
                    "it unique, or set replace_all to replace every occurrence.",
                    "invalid_input",
                )
            updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            f.seek(0)
            f.write(updated.encode("utf-8"))
            f.truncate()
        n = count if replace_all else 1
        return f"Edited {path}: {n} replacement{'s' if n != 1 else ''}."

    # listing and search ------------------------------------------------------------------------

    def list(self, path: str) -> str:
        fd = self._open_dir(path)
        try:
            entries: list[str] = []
            with os.scandir(fd) as it:
                for e in it:
                    if e.is_symlink():
                        try:
                            target = os.readlink(e.name, dir_fd=fd)
                        except OSError:
                            target = "?"
                        entries.append(f"{e.name} -> {target}")
                    elif e.is_dir(follow_symlinks=False):
                        entries.append(e.name + "/")
                    else:
                        entries.append(e.name)
        finally:
            os.close(fd)
        if not entries:
            return "(empty directory)"
        entries.sort()
        return cap_text("\n".join(entries), self.limits.output_bytes)[0]

    def _walk(
        self, path: str, stop: threading.Event
    ) -> Iterator[tuple[str, list[str], list[str], int]]:
        """``os.fwalk`` under ``path`` (as workspace-relative dir paths), pruning SKIPPED_DIRS."""
        top = self._open_dir(path)
        budget = self.limits.walk_entries
        base = _base(path)
        try:
            for dirpath, dirnames, filenames, dirfd in os.fwalk(".", dir_fd=top):
                if stop.is_set():
                    return
                budget -= len(dirnames) + len(filenames)
                if budget < 0:
                    raise _WalkBudget
                dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
                rel = dirpath[2:] if dirpath.startswith("./") else ""
                yield _join(base, rel) if rel else base, dirnames, sorted(filenames), dirfd
        finally:
            os.close(top)

    def glob(self, pattern: str, path: str, stop: threading.Event) -> str:
        rx = glob_regex(pattern)
        base = _base(path)
        found: list[str] = []
        cap = self.limits.max_results
        more = 0
        stopped = ""
        try:
            for dirpath, _dirs, files, _fd in self._walk(path, stop):
                for name in files:
                    full = _join(dirpath, name)
                    rel_to_base = full[len(base) + 1 :] if base else full
                    if rx.match(rel_to_base):
                        if len(found) < cap:
                            found.append(full)
                        else:
                            more += 1
        except _WalkBudget:
            stopped = f"\n[search stopped after {self.limits.walk_entries:,} entries]"
        if not found:
            return f"No files match {pattern!r} under {path!r}.{stopped}"
        more_note = f"\n[… and {more:,} more; narrow the pattern or the path]" if more else ""
        return cap_text("\n".join(found), self.limits.output_bytes)[0] + more_note + stopped

    def grep(
        self,
        rx: re.Pattern[str],
        path: str,
        include: str | None,
        max_results: int,
        stop: threading.Event,
    ) -> str:
        lim = self.limits
        include_rx = glob_regex(include) if include else None
        include_full = include is not None and "/" in include  # else matched on the name
        hits: list[str] = []
        more = skipped_big = 0
        stopped = ""

        def scan(fd: int, shown: str) -> None:
            nonlocal more, skipped_big
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    return
                if st.st_size > lim.grep_file_bytes:
                    skipped_big += 1
                    return
                data = f.read()
            if _is_binary(data[:8192]):
                return
            text = data.decode("utf-8", "replace")
            if rx.search(text) is None:
                return
            for n, line in enumerate(text.splitlines(), start=1):
                if rx.search(line):
                    if len(hits) >= max_results:
                        more += 1
                        continue
                    if len(line) > lim.line_chars:
                        line = line[: lim.line_chars] + " […]"
                    hits.append(f"{shown}:{n}:{line}")

        fd = self._open(path, os.O_RDONLY | os.O_NONBLOCK)
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            scan(fd, _base(path))
        else:
            os.close(fd)
            try:
                for dirpath, _dirs, files, dirfd in self._walk(path, stop):
                    for name in files:
                        shown = _join(dirpath, name)
                        if include_rx is not None and not include_rx.match(
                            shown if include_full else name
                        ):
                            continue
                        try:
                            ffd = os.open(
                                name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dirfd
                            )
                        except OSError:
                            continue  # a symlink (not followed) or gone meanwhile
                        scan(ffd, shown)
            except _WalkBudget:
                stopped = f"\n[search stopped after {lim.walk_entries:,} entries]"
        notes = ""
        if more:
            notes += f"\n[… and {more:,} more matches; narrow the pattern or the path]"
        if skipped_big:
            notes += f"\n[{skipped_big} file(s) over {lim.grep_file_bytes:,} bytes not searched]"
        if not hits:
            return f"No matches for {rx.pattern!r} under {path!r}.{notes}{stopped}"
        return cap_text("\n".join(hits), lim.output_bytes)[0] + notes + stopped


class _WalkBudget(Exception):
    pass


# -- the tools -----------------------------------------------------------------------------------


class ReadFileInput(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    offset: int = Field(default=1, ge=1, description="First line to read (1-based).")
    limit: int | None = Field(
        default=None, ge=1, description="How many lines to read (default: up to 2000)."
    )


class WriteFileInput(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")


class EditFileInput(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    old_string: str = Field(
        min_length=1, description="Exact text to replace; must occur exactly once."
    )
    new_string: str = Field(description="The replacement text.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )


class ListFilesInput(BaseModel):
    path: str = Field(default=".", description="Directory relative to the workspace root.")


class GlobInput(BaseModel):
    pattern: str = Field(
        min_length=1,
        description="Glob such as '*.py', 'src/**/*.ts' or '**/test_*.{py,txt}' "
        "(use **/ to match in subdirectories).",
    )
    path: str = Field(default=".", description="Directory to search from, relative to the root.")


class GrepInput(BaseModel):
    pattern: str = Field(min_length=1, description="Regular expression (Python syntax).")
    path: str = Field(
        default=".", description="File or directory to search, relative to the workspace root."
    )
    include: str | None = Field(
        default=None, description="Only files matching this glob (e.g. '*.py' or 'src/**/*.py')."
    )
    ignore_case: bool = Field(default=False, description="Case-insensitive matching.")
    max_results: int = Field(default=200, ge=1, le=5000, description="Matches to return at most.")


async def _in_thread(fn: Callable[[threading.Event], T]) -> T:
    """Run a blocking walk in a thread; a cancel abandons it and tells it to stop."""
    stop = threading.Event()
    try:
        return await trio.to_thread.run_sync(fn, stop, abandon_on_cancel=True)
    finally:
        stop.set()


async def _fs(path: str, fn: Callable[[], T]) -> T | ToolResultData:
    try:
        return await trio.to_thread.run_sync(fn)
    except (OSError, ValueError) as exc:
        return fs_error(exc, path)


def file_tools(ws: Workspace) -> list[Tool[Any]]:
    """The six file tools on ``ws`` (no permission verdicts set: see :func:`workspace_tools`)."""

    async def read_file(inp: ReadFileInput, ctx: ToolContext) -> Any:
        return await _fs(inp.path, lambda: ws.read(inp.path, inp.offset, inp.limit))

    async def write_file(inp: WriteFileInput, ctx: ToolContext) -> Any:
        return await _fs(inp.path, lambda: ws.write(inp.path, inp.content))

    async def edit_file(inp: EditFileInput, ctx: ToolContext) -> Any:
        if inp.old_string == inp.new_string:
            return _err("old_string and new_string are the same; nothing to do.", "invalid_input")
        return await _fs(
            inp.path, lambda: ws.edit(inp.path, inp.old_string, inp.new_string, inp.replace_all)
        )

    async def list_files(inp: ListFilesInput, ctx: ToolContext) -> Any:
        return await _fs(inp.path, lambda: ws.list(inp.path))

    async def glob(inp: GlobInput, ctx: ToolContext) -> Any:
        try:
            return await _in_thread(lambda stop: ws.glob(inp.pattern, inp.path, stop))
        except (OSError, ValueError) as exc:
            return fs_error(exc, inp.path)
        except re.error as exc:
            return _err(f"invalid glob {inp.pattern!r}: {exc}", "invalid_input")

    async def grep(inp: GrepInput, ctx: ToolContext) -> Any:
        try:
            rx = re.compile(inp.pattern, re.IGNORECASE if inp.ignore_case else 0)
        except re.error as exc:
            return _err(f"invalid regular expression {inp.pattern!r}: {exc}", "invalid_input")
        if inp.include:
            try:
                glob_regex(inp.include)
            except re.error as exc:
                return _err(f"invalid include glob {inp.include!r}: {exc}", "invalid_input")
        try:
            return await _in_thread(
                lambda stop: ws.grep(rx, inp.path, inp.include, inp.max_results, stop)
            )
        except (OSError, ValueError) as exc:
            return fs_error(exc, inp.path)

    return [
        Tool(
            name="read_file",
            description="Read a text file in the workspace. Long files are paged by line: "
            "use offset and limit to read further.",
            do=read_file,
            input_model=ReadFileInput,
            parallel_safe=True,
        ),
        Tool(
            name="write_file",
            description="Create or overwrite a file in the workspace with the given content "
            "(parent directories are created).",
            do=write_file,
            input_model=WriteFileInput,
            max_retries=0,  # a write is never repeated behind the model's back
        ),
        Tool(
            name="edit_file",
            description="Replace an exact string in a workspace file. old_string must occur "
            "exactly once (or set replace_all).",
            do=edit_file,
            input_model=EditFileInput,
            max_retries=0,  # a write is never repeated behind the model's back
        ),
        Tool(
            name="list_files",
            description="List the entries of a workspace directory (directories end with /).",
            do=list_files,
            input_model=ListFilesInput,
            parallel_safe=True,
        ),
        Tool(
            name="glob",
            description="Find files in the workspace whose path matches a glob pattern. "
            f"Skips {', '.join(sorted(SKIPPED_DIRS))} unless searched from inside one.",
            do=glob,
            input_model=GlobInput,
            parallel_safe=True,
        ),
        Tool(
            name="grep",
            description="Search file contents in the workspace with a regular expression; "
            "prints path:line:text. Binary files and symlinks are skipped.",
            do=grep,
            input_model=GrepInput,
            parallel_safe=True,
        ),
    ]


WORKSPACE_TOOL_NAMES: Final = (
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "glob",
    "grep",
    "bash",
)
"""The built-in tools, in the order a model sees them."""


def workspace_tools(
    root: str | os.PathLike[str],
    *,
    policy: PermissionPolicy = WORKSPACE_WRITE,
    limits: WorkspaceLimits | None = None,
    bash: BashOptions | None = None,
    names: Sequence[str] | None = None,
) -> list[Tool[Any]]:
    """The built-in tools confined to ``root``, each carrying ``policy``'s verdict.

    ``names`` picks a subset (unknown names raise :class:`~orchestrator.core.errors.ConfigError`); ``bash`` and ``limits`` tune
    the shell and the output caps.
    """
    ws = Workspace(os.fspath(root), limits or WorkspaceLimits())
    if names is not None:
        unknown = sorted(set(names) - set(WORKSPACE_TOOL_NAMES))
        if unknown:
            raise ConfigError(
                f"unknown workspace tool(s) {', '.join(unknown)}; "
                f"known: {', '.join(WORKSPACE_TOOL_NAMES)}"
            )
    wanted = set(WORKSPACE_TOOL_NAMES if names is None else names)
    tools = [t for t in file_tools(ws) if t.name in wanted]
    if "bash" in wanted:
        tools.append(bash_tool(ws.root, bash))
    for t in tools:
        t.permission = policy.decision_for(t.name)
    return tools
