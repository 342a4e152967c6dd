"""Task chains: tasks that start when the tasks they depend on are done.

* :func:`check_graph` validates a set of tasks' ``depends_on`` before anything starts: an unknown
  id or a cycle is one :class:`~orchestrator.core.errors.ConfigError` naming it (a cycle is
  spelled out: ``a → b → a``); it returns an order in which every task comes after its
  dependencies.
* A dependent's prompt may name its dependencies' results with placeholders
  ``{{ ID.summary }}`` (the final summary), ``{{ ID.diff }}`` (what the task changed in its
  workspace, as a unified diff against where it started) and ``{{ ID.status }}``;
  :func:`check_placeholders` refuses, before anything starts, a placeholder that is not one of
  these or that names a task which is not among the task's (transitive) dependencies, and
  :func:`render_prompt` fills them in.
* :class:`ChainGate` is what the tasks of one chain wait on: each task :meth:`~ChainGate.finish`\\ es
  with a :class:`StepResult`, and :meth:`~ChainGate.wait` returns the results of a task's
  dependencies once all are in. A dependency that did not succeed (failed, aborted, or itself
  skipped) skips its dependents: :func:`blocked_by` says why, and :func:`record_skipped` writes
  the skipped task to the event log as a run of its own (``error{dependency_skipped}`` +
  ``done{error}``, runs row status ``skipped`` with the reason), so the log says what happened
  to every task of the chain.

The graph knows nothing about hosts: the caller submits a task once :meth:`ChainGate.wait`
returns, to a ``LocalHost`` or a ``RayHost`` alike.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import attrs
import trio

from orchestrator.core.errors import ConfigError
from orchestrator.core.git import run_git
from orchestrator.engine.actor import EventSink
from orchestrator.engine.eventlog import RunRecorder
from orchestrator.engine.review.diff import workspace_diff as review_diff
from orchestrator.engine.review.git import Checkout
from orchestrator.engine.unstarted import record_unstarted
from orchestrator.engine.workspaces import COPY_IGNORED, Workspace

__all__ = [
    "DEPENDENCY_SKIPPED",
    "DIFF_MAX_CHARS",
    "PLACEHOLDER_FIELDS",
    "ChainGate",
    "StepResult",
    "StepStatus",
    "blocked_by",
    "check_graph",
    "check_placeholders",
    "directory_diff",
    "placeholders",
    "record_skipped",
    "render_prompt",
    "workspace_diff",
]

DEPENDENCY_SKIPPED: Final = "dependency_skipped"
"""The ``error.code`` of a task skipped because a dependency did not succeed."""
DIFF_MAX_CHARS: Final = 60_000
"""A ``{{ ID.diff }}`` longer than this is cut, and says how much was left out."""
PLACEHOLDER_FIELDS: Final = ("summary", "diff", "status")

StepStatus: TypeAlias = Literal["success", "max_turns", "aborted", "error", "skipped"]

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_REFERENCE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*?)\.([a-z]+)\s*$")


@attrs.frozen
class StepResult:
    """How one task of a chain ended: its status, summary and diff; ``reason`` says why it was
    skipped or failed."""

    status: StepStatus
    summary: str = ""
    diff: str = ""
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "success"


# -- the graph ---------------------------------------------------------------------------------


def check_graph(depends_on: Mapping[str, Sequence[str]], *, where: str = "batch") -> list[str]:
    """An order of the ids in which each comes after its dependencies (ties in the given order).

    Raises:
        ConfigError: a dependency on an unknown id, on itself, or a cycle (spelled out).
    """
    for task_id, deps in depends_on.items():
        for dep in deps:
            if dep == task_id:
                raise ConfigError(f"{where}: task {task_id!r} depends on itself")
            if dep not in depends_on:
                known = ", ".join(map(repr, depends_on))
                raise ConfigError(
                    f"{where}: task {task_id!r} depends on {dep!r}, which is not a task here "
                    f"(tasks: {known})"
                )
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(task_id: str) -> None:
        mark = state.get(task_id)
        if mark == 2:
            return
        if mark == 1:
            cycle = [*path[path.index(task_id) :], task_id]
            raise ConfigError(
                f"{where}: the tasks depend on each other in a cycle: {' → '.join(cycle)}"
            )
        state[task_id] = 1
        path.append(task_id)
        for dep in depends_on[task_id]:
            visit(dep)
        path.pop()
        state[task_id] = 2
        order.append(task_id)

    for task_id in depends_on:
        visit(task_id)
    return order


def ancestors(depends_on: Mapping[str, Sequence[str]], task_id: str) -> set[str]:
    """Every task ``task_id`` depends on, directly or through others (the graph is acyclic)."""
    found: set[str] = set()
    stack = list(depends_on.get(task_id, ()))
    while stack:
        dep = stack.pop()
        if dep not in found:
            found.add(dep)
            stack.extend(depends_on.get(dep, ()))
    return found


def placeholders(template: str) -> list[tuple[str, str]]:
    """The ``(id, field)`` of every well-formed ``{{ ID.FIELD }}`` in ``template``."""
    found: list[tuple[str, str]] = []
    for match in _PLACEHOLDER.finditer(template):
        ref = _REFERENCE.match(match.group(1))
        if ref is not None:
            found.append((ref.group(1), ref.group(2)))
    return found


def check_placeholders(
    depends_on: Mapping[str, Sequence[str]],
    prompts: Mapping[str, str],
    *,
    where: str = "batch",
) -> None:
    """Refuse a placeholder that is malformed, names an unknown field, or names a task that is
    not among the task's dependencies (its result would not be there yet).

    Raises:
        ConfigError: naming the task and the placeholder.
    """
    for task_id, template in prompts.items():
        before = ancestors(depends_on, task_id)
        for match in _PLACEHOLDER.finditer(template):
            text = match.group(0)
            ref = _REFERENCE.match(match.group(1))
            if ref is None:
                raise ConfigError(
                    f"{where}: task {task_id!r}: {text} is not a placeholder; write "
                    f"{{{{ ID.summary }}}}, {{{{ ID.diff }}}} or {{{{ ID.status }}}}"
                )
            dep, field = ref.group(1), ref.group(2)
            if field not in PLACEHOLDER_FIELDS:
                raise ConfigError(
                    f"{where}: task {task_id!r}: {text}: unknown field {field!r} "
                    f"(known: {', '.join(PLACEHOLDER_FIELDS)})"
                )
            if dep not in before:
                raise ConfigError(
                    f"{where}: task {task_id!r}: {text} names {dep!r}, which is not among its "
                    f"dependencies (add it to depends_on)"
                )


def render_prompt(template: str, results: Mapping[str, StepResult]) -> str:
    """``template`` with each ``{{ ID.FIELD }}`` replaced by that dependency's result (an empty
    diff reads ``(no changes)``, an empty summary ``(no summary)``)."""

    def one(match: re.Match[str]) -> str:
        ref = _REFERENCE.match(match.group(1))
        if ref is None or ref.group(1) not in results:
            return match.group(0)
        result = results[ref.group(1)]
        field = ref.group(2)
        if field == "summary":
            return result.summary or "(no summary)"
        if field == "diff":
            return result.diff or "(no changes)"
        if field == "status":
            return result.status
        return match.group(0)

    return _PLACEHOLDER.sub(one, template)


def blocked_by(task_id: str, deps: Iterable[str], results: Mapping[str, StepResult]) -> str | None:
    """Why ``task_id`` must be skipped (a dependency that did not succeed), or ``None``."""
    for dep in deps:
        result = results[dep]
        if result.ok:
            continue
        if result.status == "skipped":
            return f"skipped: its dependency {dep!r} was skipped ({result.reason})"
        why = f": {result.reason}" if result.reason else ""
        return f"skipped: its dependency {dep!r} ended {result.status}{why}"
    return None


@attrs.define(eq=False)
class ChainGate:
    """The results of a chain's tasks as they finish; dependents wait here (see the module
    docstring). Every task must :meth:`finish` exactly once (also when it raised), or its
    dependents wait forever."""

    _done: dict[str, trio.Event] = attrs.field(factory=dict[str, trio.Event])
    results: dict[str, StepResult] = attrs.field(factory=dict[str, StepResult])

    def _event(self, task_id: str) -> trio.Event:
        return self._done.setdefault(task_id, trio.Event())

    def finish(self, task_id: str, result: StepResult) -> None:
        if task_id in self.results:
            return
        self.results[task_id] = result
        self._event(task_id).set()

    async def wait(self, deps: Iterable[str]) -> dict[str, StepResult]:
        """The results of ``deps``, once every one of them has finished."""
        wanted = list(deps)
        for dep in wanted:
            await self._event(dep).wait()
        return {dep: self.results[dep] for dep in wanted}


async def record_skipped(
    log: RunRecorder | None,
    sink: EventSink,
    *,
    runtime_id: str,
    task_id: str,
    reason: str,
    outcome_fields: Mapping[str, Any] | None = None,
    title: str | None = None,
) -> str:
    """Write a skipped task to the log as a run of its own: ``error{dependency_skipped}`` +
    ``done{error}`` through ``sink`` (views and the log see it like any run), runs row status
    ``skipped``. Returns its run key."""
    outcome = await record_unstarted(
        log,
        sink,
        runtime_id=runtime_id,
        session_key=f"runtime:{runtime_id}:task:{task_id}",
        summary=reason,
        code=DEPENDENCY_SKIPPED,
        status="skipped",
        title=title,
        outcome_fields=outcome_fields,
    )
    return outcome.run_key


# -- what a task changed -----------------------------------------------------------------------


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_git(args, cwd, text=True, errors="replace")


def _cut(diff: str) -> str:
    if len(diff) <= DIFF_MAX_CHARS:
        return diff
    left = len(diff) - DIFF_MAX_CHARS
    return diff[:DIFF_MAX_CHARS] + f"\n[diff cut: {left} more characters]\n"


def _git_diff(root: Path) -> str | None:
    """Everything changed in the git checkout at ``root`` against ``HEAD``, new files included
    (``git add -A`` first, as ``workspace_changes`` counts them); ``None`` outside git."""
    if _git("rev-parse", "--verify", "--quiet", "HEAD", cwd=root).returncode != 0:
        return None
    _git("add", "-A", cwd=root)
    shown = _git("diff", "--cached", "--no-color", "--no-ext-diff", "HEAD", cwd=root)
    return shown.stdout if shown.returncode == 0 else None


def _read_lines(path: Path) -> list[str] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return []
    if b"\0" in data[:8192]:
        return None  # binary
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def _copy_diff(origin: Path, copy: Path) -> str:
    """A unified diff from ``origin`` to its temporary ``copy`` (what the run changed there)."""

    def files(root: Path) -> set[str]:
        found: set[str] = set()
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d not in COPY_IGNORED]
            for name in names:
                found.add(str(Path(folder, name).relative_to(root)))
        return found

    before, after = files(origin), files(copy)
    parts: list[str] = []
    for rel in sorted(before | after):
        old = _read_lines(origin / rel) if rel in before else []
        new = _read_lines(copy / rel) if rel in after else []
        if old == new:
            continue
        if old is None or new is None:
            parts.append(f"Binary file {rel} differs\n")
            continue
        parts.extend(
            difflib.unified_diff(
                old,
                new,
                fromfile=f"a/{rel}" if rel in before else "/dev/null",
                tofile=f"b/{rel}" if rel in after else "/dev/null",
            )
        )
    return "".join(parts)


def _workspace_diff(ws: Workspace) -> str:
    if ws.base is not None:
        # the review's diff: against the workspace's starting commit (a copy's snapshot), in a
        # temporary index (the agent's own index is left alone)
        changed = review_diff(Checkout(ws.root, ws.base, ws.git_dir))
        return _cut("".join(f.patch for f in changed.files))
    if ws.kind == "git worktree":
        return _cut(_git_diff(ws.root) or "")
    return _cut(_copy_diff(ws.origin, ws.root))


async def workspace_diff(ws: Workspace) -> str:
    """What a run changed in its workspace, as a unified diff against where it started (a git
    worktree: the review's diff against its starting commit, ``orchestrator/engine/review/``,
    new files included; a temporary copy: against the directory it was copied from). Cut at
    :data:`DIFF_MAX_CHARS`."""
    return await trio.to_thread.run_sync(_workspace_diff, ws)


async def directory_diff(path: str | Path) -> str:
    """For a task without a workspace: ``git diff`` of its directory against ``HEAD`` (empty
    outside git: there is no start to compare with)."""

    def run() -> str:
        where = Path(path)
        top = _git("rev-parse", "--show-toplevel", cwd=where)
        if top.returncode != 0:
            return ""
        shown = _git("diff", "--no-color", "--no-ext-diff", "HEAD", "--", ".", cwd=where)
        return _cut(shown.stdout) if shown.returncode == 0 else ""

    return await trio.to_thread.run_sync(run)
