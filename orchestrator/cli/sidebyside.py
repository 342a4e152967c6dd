"""Run several jobs (a task on a runtime) side by side through :class:`LocalHost`, drawn by one
view, each recorded in the event log; then the comparison table. Part of the CLI (``run`` with
several ``--runtime``, ``batch``, ``demo``): the library never imports this module."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from pathlib import Path
from typing import TypeAlias

import attrs
import trio

from orchestrator.cli.live import JsonView, Lane, PlainView, RichView, comparison_table, lane_key
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.actor import EventSink
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import RecordingSink
from orchestrator.engine.governance import Governance
from orchestrator.engine.hosts import Host, LocalHost, TaskRef
from orchestrator.engine.runner import Runner, TaskOutcome, TaskSpec
from orchestrator.engine.supervisor import RetryListener
from orchestrator.engine.workspaces import (
    Workspace,
    changes_since,
    create_workspace,
    snapshot,
    workspace_changes,
)

__all__ = ["BoardStarter", "Job", "JobResult", "new_task_id", "prepare_workspaces", "run_jobs"]

BoardStarter: TypeAlias = Callable[
    [EventLog, LocalHost, Callable[[str], None]], AbstractAsyncContextManager[object]
]
"""Serves a board over the log and the host's runs while they run (``run --board``); its
notices (the URL) go to the given callable, which prints them above a live view."""


def new_task_id(name: str = "") -> str:
    """A task id unique across invocations (run keys in the event log never collide)."""
    suffix = uuid.uuid4().hex[:8]
    return f"{name}-{suffix}" if name else suffix


@attrs.frozen
class Job:
    """One task on one runtime. ``label`` names it in the view and the table."""

    label: str
    runtime_id: str
    task: TaskSpec
    workspace: Workspace | None = None


@attrs.frozen
class JobResult:
    job: Job
    lane: Lane
    outcome: TaskOutcome | None
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is not None and self.outcome.status == "success"

    @property
    def not_installed(self) -> bool:
        """The run could not start: its runtime is not installed."""
        return self.outcome is not None and self.outcome.error_code == "runtime_not_found"


def exit_code(results: Sequence[JobResult]) -> int:
    """0 when every run succeeded; 3 when the failures are all runtimes that are not
    installed (the README's exit code for it); else 1."""
    if all(r.ok for r in results):
        return 0
    failed = [r for r in results if not r.ok]
    return 3 if all(r.not_installed for r in failed) else 1


async def prepare_workspaces(jobs: Sequence[Job], *, state_dir: Path) -> list[Job]:
    """Give every job its own workspace of its working directory (one after the other: git
    locks a repository's worktree list), and point its task there."""
    prepared: list[Job] = []
    for job in jobs:
        origin = job.task.cwd or "."
        ws = await create_workspace(origin, job.label, state_dir=state_dir)
        prepared.append(
            attrs.evolve(job, task=attrs.evolve(job.task, cwd=str(ws.path)), workspace=ws)
        )
    return prepared


_NATIVE_SDKS = ("anthropic", "openai")


async def _warm_up(registry: RuntimeRegistry, runtime_ids: set[str]) -> None:
    """Build (and close) one adapter of each runtime first, so importing a runtime's modules
    (the model SDKs take seconds on a busy machine) is not counted as the first run's time to
    first event, nor stalls its siblings. A runtime that cannot be built fails in its run."""
    if "native" in runtime_ids:
        # the native loop imports its model SDK when a run starts, on the trio thread: seconds
        # on a busy machine, during which no sibling run is drained. Import them here, in a
        # worker thread, before any clock runs.
        for module in _NATIVE_SDKS:
            with contextlib.suppress(ImportError):
                await trio.to_thread.run_sync(
                    importlib.import_module, module, abandon_on_cancel=True
                )
    for runtime_id in sorted(runtime_ids):
        try:
            adapter = registry.create(runtime_id)
        except Exception:
            continue
        with contextlib.suppress(Exception):
            await adapter.aclose()


def _command_started() -> float:
    """When the ``ringleader`` command started (its module was imported), on trio's clock."""
    from orchestrator.cli.main import STARTED

    return trio.current_time() - (time.perf_counter() - STARTED)


def _notice(view: JsonView | PlainView | RichView) -> Callable[[str], None]:
    """Where a notice goes: above the live view at a terminal (written past it, the view's
    next redraw would overwrite it), else a line on stderr (stdout holds the events)."""
    if isinstance(view, RichView):
        return view.note

    def to_stderr(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    return to_stderr


async def _run_all(
    host: Host,
    jobs: Sequence[Job],
    lanes: Sequence[Lane],
    outcomes: list[TaskOutcome | None],
    errors: list[Exception | None],
    limiter: trio.CapacityLimiter,
) -> None:
    """Submit every job to ``host`` (at most ``limiter`` at once); fill in each one's outcome
    or error and finish its lane."""

    async def one(index: int) -> None:
        job, lane = jobs[index], lanes[index]
        async with limiter:
            lane.started = trio.current_time()
            lane.phase = "starting"
            ref = host.submit(job.runtime_id, job.task)
            if isinstance(ref, TaskRef):  # a run over its runtime's limit is shown waiting

                def show(reason: str, lane: Lane = lane) -> None:
                    lane.phase = f"queued: {reason}"

                ref.on_wait = show
            try:
                outcomes[index] = await ref.outcome()
            except Exception as exc:
                errors[index] = exc
                lane.error = " ".join(str(exc).split())
            lane.finish("error", trio.current_time())

    async with trio.open_nursery() as nursery:
        for index in range(len(jobs)):
            nursery.start_soon(one, index)


async def run_jobs(
    registry: RuntimeRegistry,
    jobs: Sequence[Job],
    view: JsonView | PlainView | RichView,
    *,
    state_dir: Path,
    limit: int | None = None,
    estimates: bool = False,
    on_host: Callable[[Host], None] | None = None,
    on_retry: RetryListener | None = None,
    make_host: Callable[[Runner], Host] = LocalHost,
    governance: Governance | None = None,
    sinks: Sequence[EventSink] = (),
    board: BoardStarter | None = None,
    approvals: bool = False,
) -> list[JobResult]:
    """Run ``jobs``, at most ``limit`` at once (all by default); print the comparison table
    (not in JSON mode). A job that raises (its runtime is not installed, say) fails alone.
    ``estimates``: every dollar figure is a list-price estimate (the demo: nothing is billed).
    ``make_host``: where the runs live (:class:`LocalHost`, or a ``RayHost`` for ``--ray``).
    ``approvals``: tool calls that need approval wait in the state directory's approval book."""
    lanes: list[Lane] = []
    began = _command_started()
    for job in jobs:
        lane = view.add_lane(job.label, job.runtime_id, lane_key(job.runtime_id, job.task.task_id))
        lane.command_started = began
        lane.phase = "queued"
        lane.estimated = estimates
        if job.workspace is not None:
            lane.workspace, lane.workspace_kind = str(job.workspace.path), job.workspace.kind
        lanes.append(lane)
    # a run in the working directory itself: what it changes there is counted too
    in_place = [
        await snapshot(job.task.cwd or os.getcwd(), exclude=[state_dir])
        if job.workspace is None
        else None
        for job in jobs
    ]
    outcomes: list[TaskOutcome | None] = [None] * len(jobs)
    errors: list[Exception | None] = [None] * len(jobs)
    limiter = trio.CapacityLimiter(max(1, limit or len(jobs) or 1))
    async with EventLog.open(state_dir / "events.db") as log:
        runner = Runner(
            registry,
            sink=RecordingSink(log, extra=[view, *sinks]),
            state_dir=state_dir,
            event_log=log,
            on_retry=on_retry,
            record_rotation=view.rotated,
            governance=governance,
            approvals=approvals,
        )
        async with view.active(), make_host(runner) as host, AsyncExitStack() as boards:
            if on_host is not None:  # e.g. Ctrl-C aborts the host's runs
                on_host(host)
            if board is not None and isinstance(host, LocalHost):  # `run --board` (not --ray)
                # entered before the jobs' nursery opens, so it closes after that nursery
                # (a board opened inside it and closed outside it misnests their scopes)
                await boards.enter_async_context(board(log, host, _notice(view)))
            async with trio.open_nursery() as warming:  # a Ctrl-C (host.abort_all) ends it

                async def stop_on_abort() -> None:
                    await host.aborting.wait()
                    warming.cancel_scope.cancel()

                warming.start_soon(stop_on_abort)
                await _warm_up(registry, {job.runtime_id for job in jobs})
                warming.cancel_scope.cancel()
            await _run_all(host, jobs, lanes, outcomes, errors, limiter)
    for job, lane, before in zip(jobs, lanes, in_place, strict=True):
        if job.workspace is not None:
            lane.files_changed = await workspace_changes(job.workspace)
        elif before is not None:
            lane.files_changed = await changes_since(before)
    results = [
        JobResult(job, lane, outcome, error)
        for job, lane, outcome, error in zip(jobs, lanes, outcomes, errors, strict=True)
    ]
    if view.console is not None:
        console = view.console
        console.print()
        console.print(comparison_table(lanes))
        for result in results:
            if result.error is not None:
                console.print(
                    f"{result.job.label}: {result.lane.error}", markup=False, highlight=False
                )
        if any(job.workspace is not None for job in jobs):
            kinds = sorted({job.workspace.kind for job in jobs if job.workspace is not None})
            console.print(
                f"each run worked in its own {' / '.join(kinds)} (kept; see the workspace column)",
                markup=False,
                highlight=False,
            )
    return results
