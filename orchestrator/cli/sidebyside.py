"""Run several jobs (a task on a runtime) side by side through :class:`LocalHost`, drawn by one
view, each recorded in the event log; then the comparison table. Part of the CLI (``run`` with
several ``--runtime``, ``batch``, ``demo``): the library never imports this module."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from pathlib import Path
from typing import TypeAlias

import attrs
import trio

from orchestrator.board.cards import CardKeeper
from orchestrator.cli.live import JsonView, Lane, PlainView, RichView, comparison_table, lane_key
from orchestrator.core.config import AccountConfig, WorkspaceConfig
from orchestrator.core.errors import RingleaderError, single_exception
from orchestrator.core.events import now_ms
from orchestrator.core.quota import QuotaBook
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.accounts import targets
from orchestrator.engine.actor import EventSink
from orchestrator.engine.chains import (
    ChainGate,
    StepResult,
    blocked_by,
    directory_diff,
    placeholders,
    record_skipped,
    render_prompt,
)
from orchestrator.engine.chains import workspace_diff as chain_diff
from orchestrator.engine.eventlog import EventLog, WorkspaceRow
from orchestrator.engine.feed import RecordingSink
from orchestrator.engine.governance import Governance
from orchestrator.engine.hosts import Host, LocalHost, TaskRef
from orchestrator.engine.review.diff import workspace_diff
from orchestrator.engine.review.git import Checkout
from orchestrator.engine.review.inplace import record_in_place
from orchestrator.engine.review.records import workspace_dir
from orchestrator.engine.reviewloop.bootstrap import run_workspace_script
from orchestrator.engine.runner import Runner, TaskOutcome, TaskSpec
from orchestrator.engine.supervisor import RetryListener
from orchestrator.engine.workspaces import (
    Workspace,
    changes_since,
    create_workspace,
    snapshot,
    workspace_changes,
)

__all__ = [
    "BoardStarter",
    "Job",
    "JobResult",
    "new_task_id",
    "prepare_workspaces",
    "run_jobs",
    "teardown_workspaces",
]

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
    depends_on: tuple[str, ...] = ()
    """Labels of the jobs this one waits for (a chain: see :mod:`orchestrator.engine.chains`);
    its task's title may hold their ``{{ LABEL.summary }}`` / ``.diff`` / ``.status``."""


@attrs.frozen
class JobResult:
    job: Job
    lane: Lane
    outcome: TaskOutcome | None
    error: Exception | None = None
    skipped: str | None = None
    """Why the job never started (a dependency did not succeed)."""

    @property
    def ok(self) -> bool:
        return self.outcome is not None and self.outcome.status == "success"

    @property
    def not_installed(self) -> bool:
        """The run could not start: its runtime is not installed."""
        return self.outcome is not None and self.outcome.error_code == "runtime_not_found"


def exit_code(results: Sequence[JobResult]) -> int:
    """0 when every run succeeded; 3 when the failures are all runtimes that are not
    installed (the exit code docs/guide/troubleshooting.md gives it); else 1."""
    if all(r.ok for r in results):
        return 0
    failed = [r for r in results if not r.ok]
    return 3 if all(r.not_installed for r in failed) else 1


async def prepare_workspaces(
    jobs: Sequence[Job], *, state_dir: Path, settings: WorkspaceConfig | None = None
) -> list[Job]:
    """Give every job its own workspace of its working directory (one after the other: git
    locks a repository's worktree list), and point its task there; with ``settings``, the
    task runs its ``setup`` script there before its agent starts."""
    prepared: list[Job] = []
    for job in jobs:
        origin = job.task.cwd or "."
        ws = await create_workspace(origin, job.label, state_dir=state_dir)
        task = attrs.evolve(job.task, cwd=str(ws.path))
        if settings is not None and settings.setup:
            task = attrs.evolve(task, setup=settings.setup, setup_timeout_s=settings.timeout_s)
        prepared.append(attrs.evolve(job, task=task, workspace=ws))
    return prepared


def _workspace_row(job: Job, ws: Workspace, group: str) -> WorkspaceRow:
    return WorkspaceRow(
        root=str(ws.root),
        task_id=job.task.task_id,
        runtime_id=job.runtime_id,
        label=job.label,
        group_id=group,
        kind=ws.kind,
        origin=str(ws.origin),
        path=str(ws.path),
        base=ws.base,
        git_dir=None if ws.git_dir is None else str(ws.git_dir),
        created_ms=now_ms(),
    )


async def _count_changes(ws: Workspace, lane: Lane) -> None:
    """The lane's files and lines changed: the review diff against the workspace's starting
    commit, else (no git) the copy's file count against its baseline."""
    if ws.base is None:
        lane.files_changed = await workspace_changes(ws)
        return
    await _count_diff(Checkout(ws.root, ws.base, ws.git_dir), lane)


async def _count_diff(checkout: Checkout, lane: Lane) -> None:
    try:
        diff = await trio.to_thread.run_sync(workspace_diff, checkout)
    except RingleaderError as exc:
        lane.files_changed = f"unknown ({exc})"
        return
    n = len(diff.files)
    lane.files_changed = "none" if not n else f"{n} file{'s' if n != 1 else ''}"
    lane.lines_changed = f"+{diff.added} -{diff.removed}" if n else "-"


async def _record_start(log: EventLog, job: Job, group: str) -> WorkspaceRow | None:
    """Record where an in-place run starts (a git checkout's working tree as a commit); a
    failure only costs the diff, never the run. A resumed turn records nothing: it continues
    the run it resumes, whose start its diff is against (found by its session's folder)."""
    if job.task.resume is not None:
        return None
    try:
        return await record_in_place(
            log,
            cwd=job.task.cwd or os.getcwd(),
            task_id=job.task.task_id,
            runtime_id=job.runtime_id,
            label=job.label,
            group_id=group,
        )
    except RingleaderError:
        return None


async def teardown_workspaces(
    jobs: Sequence[Job], settings: WorkspaceConfig | None, notice: Callable[[str], None]
) -> None:
    """Run the ``teardown`` script in each job's workspace (one after the other), each line of
    its output given to ``notice`` as ``[label] · teardown: …``; a failure is said, not
    raised (the runs have ended)."""
    if settings is None or not settings.teardown:
        return
    for job in jobs:
        if job.workspace is None:
            continue
        label = job.label
        notice(f"[{label}] · teardown: $ {settings.teardown}")
        result = await run_workspace_script(
            settings.teardown,
            job.workspace.path,
            timeout_s=settings.timeout_s,
            on_line=lambda line, label=label: notice(f"[{label}] · teardown: {line}"),
        )
        if not result.ok:
            notice(f"[{label}] ! {result.describe('teardown', settings.timeout_s)}")


async def _warm_up(
    registry: RuntimeRegistry,
    ready: Mapping[str, trio.Event],
    models: Mapping[str, Sequence[str | None]],
) -> None:
    """Build (and close) one adapter of each runtime of ``ready``, side by side, setting its
    event when done (or when this is cancelled): a runtime's runs wait for their own runtime's
    warm-up only, so importing the native runtime's model SDKs (seconds on a busy machine) in a
    worker thread never holds back a CLI's start (issue 37: the side-by-side start). ``models``:
    each runtime's runs' models (what its warm-up imports depends on them: the native
    runtime's provider). A runtime that cannot be built fails in its run."""
    try:
        async with trio.open_nursery() as nursery:
            for runtime_id, event in sorted(ready.items()):
                wanted = models.get(runtime_id, (None,))
                nursery.start_soon(_warm_one, registry, runtime_id, event, wanted)
    finally:
        for event in ready.values():
            event.set()


async def _warm_one(
    registry: RuntimeRegistry, runtime_id: str, ready: trio.Event, models: Sequence[str | None]
) -> None:
    try:
        # a runtime's imports at a run's start (the native loop's model SDK: seconds on a busy
        # machine, during which no sibling run is drained) happen here, in a worker thread,
        # before its runs start: only what its runs' models use (an Anthropic model: no openai)
        for model in dict.fromkeys(models):
            with contextlib.suppress(Exception):
                await trio.to_thread.run_sync(
                    registry.preload, runtime_id, model, abandon_on_cancel=True
                )
        try:
            adapter = registry.create(runtime_id)
        except Exception:
            return
        with contextlib.suppress(Exception):
            await adapter.aclose()
    finally:
        ready.set()


STARTING_NOTE_S = 5.0
"""A run with no event this long after it was submitted is said to be still starting."""

_SLOW_STARTS = {
    "openclaw": "OpenClaw's gateway is booting (its first start takes about a minute)",
    "hermes": "Hermes is loading",
}


async def _say_starting(lane: Lane, job: Job, note: Callable[[str], None]) -> None:
    """Say what a run that shows nothing yet is doing: once after :data:`STARTING_NOTE_S`,
    again every 15 s."""
    await trio.sleep(STARTING_NOTE_S)
    while lane.first_event is None and not lane.done:
        waited = trio.current_time() - lane.started
        what = _SLOW_STARTS.get(job.runtime_id, f"{job.runtime_id} is starting")
        note(f"ringleader: [{job.label}] {what}; no event yet after {waited:.0f} s")
        await trio.sleep(15)


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
    skips: list[str | None],
    log: EventLog,
    recording: EventSink,
    note: Callable[[str], None] | None = None,
    ready: Mapping[str, trio.Event] | None = None,
) -> None:
    """Submit every job to ``host`` (at most ``limiter`` at once) once the jobs it depends on
    succeeded (a chain: else it is skipped, and recorded so); fill in each one's outcome or
    error and finish its lane."""
    gate = ChainGate()
    diffs_wanted = {
        ref for job in jobs for ref, field in placeholders(job.task.title) if field == "diff"
    }

    async def one(index: int) -> None:
        job, lane = jobs[index], lanes[index]
        result: StepResult | None = None
        try:
            task = job.task
            if job.depends_on:
                lane.phase = f"waiting for {', '.join(job.depends_on)}"
                done = await gate.wait(job.depends_on)
                why = blocked_by(job.label, job.depends_on, done)
                if why is not None:
                    await record_skipped(
                        log,
                        recording,
                        runtime_id=job.runtime_id,
                        task_id=task.task_id,
                        reason=why,
                        outcome_fields=task.outcome_fields,
                        title=task.title,
                    )
                    skips[index] = lane.error = why
                    lane.outcome, lane.phase = "skipped", "skipped"
                    lane.ended = lane.started = trio.current_time()
                    result = StepResult("skipped", reason=why)
                    return
                task = attrs.evolve(task, title=render_prompt(task.title, gate.results))
            outcome: TaskOutcome | None = None
            if ready is not None and job.runtime_id in ready:
                await ready[job.runtime_id].wait()  # its runtime's warm-up (see _warm_up)
            async with limiter:
                lane.started = trio.current_time()
                lane.phase = "starting"
                ref = host.submit(job.runtime_id, task)
                if isinstance(ref, TaskRef):  # a run over its runtime's limit is shown waiting

                    def show(reason: str, lane: Lane = lane) -> None:
                        lane.phase = f"queued: {reason}"

                    ref.on_wait = show
                try:
                    async with trio.open_nursery() as watching:
                        if note is not None:
                            watching.start_soon(_say_starting, lane, job, note)
                        try:
                            outcome = outcomes[index] = await ref.outcome()
                        finally:
                            watching.cancel_scope.cancel()
                except Exception as exc:
                    errors[index] = exc
                    # the watching nursery wraps what the run raised: say the error, not the group
                    lane.error = " ".join(str(single_exception(exc) or exc).split())
                lane.finish("error", trio.current_time())
            if outcome is None:
                result = StepResult("error", reason=lane.error or "it raised")
            else:
                diff = ""
                if job.label in diffs_wanted and outcome.status == "success":
                    diff = await _diff_of(job)
                reason = outcome.error_message or outcome.error_code or ""
                result = StepResult(outcome.status, outcome.summary, diff, reason)
        finally:
            gate.finish(job.label, result or StepResult("error", reason="cancelled"))

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
    group_id: str | None = None,
    accounts: Mapping[str, AccountConfig] | None = None,
) -> list[JobResult]:
    """Run ``jobs``, at most ``limit`` at once (all by default); print the comparison table
    (not in JSON mode). A job that raises (its runtime is not installed, say) fails alone.
    ``estimates``: every dollar figure is a list-price estimate (the demo: nothing is billed).
    ``make_host``: where the runs live (:class:`LocalHost`, or a ``RayHost`` for ``--ray``).
    ``approvals``: tool calls that need approval wait in the state directory's approval book.
    ``group_id``: names the jobs' workspaces as one task in the event log (``ringleader compare
    GROUP``; default: a new id)."""
    lanes: list[Lane] = []
    began = _command_started()
    for job in jobs:
        lane = view.add_lane(job.label, job.runtime_id, lane_key(job.runtime_id, job.task.task_id))
        lane.command_started = began
        lane.phase = "queued"
        lane.estimated = estimates
        others = targets(job.runtime_id, job.task.account, job.task.fallback, accounts or {})
        lane.also = tuple(  # the runs of its fallback runtimes are its runs too
            lane_key(rid, job.task.task_id) for rid, _ in others if rid != job.runtime_id
        )
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
    skips: list[str | None] = [None] * len(jobs)
    limiter = trio.CapacityLimiter(max(1, limit or len(jobs) or 1))
    group = group_id or new_task_id()
    async with EventLog.open(state_dir / "events.db") as log:
        for job in jobs:
            if job.workspace is not None:
                await log.record_workspace(_workspace_row(job, job.workspace, group))
        # a run in the person's own checkout: where it started, so `diff` shows what it changed
        starts = [
            await _record_start(log, job, group) if job.workspace is None else None for job in jobs
        ]
        keeper = CardKeeper()  # the board's cards of these runs, kept in the log at the end
        runner = Runner(
            registry,
            sink=RecordingSink(log, extra=[view, *sinks, keeper]),
            state_dir=state_dir,
            event_log=log,
            on_retry=on_retry,
            record_rotation=view.rotated,
            governance=governance,
            approvals=approvals,
            followups=True,  # `ringleader say` reaches these runs
            checkpoints=True,
            quota=QuotaBook.in_state_dir(state_dir),
            accounts=accounts or {},
        )
        async with view.active(), make_host(runner) as host, AsyncExitStack() as boards:
            if on_host is not None:  # e.g. Ctrl-C aborts the host's runs
                on_host(host)
            if board is not None and isinstance(host, LocalHost):  # `run --board` (not --ray)
                # entered before the jobs' nursery opens, so it closes after that nursery
                # (a board opened inside it and closed outside it misnests their scopes)
                await boards.enter_async_context(board(log, host, _notice(view)))
            ready = {job.runtime_id: trio.Event() for job in jobs}
            models: dict[str, list[str | None]] = {}
            for job in jobs:
                models.setdefault(job.runtime_id, []).append(job.task.model)
            warming = trio.CancelScope()  # a Ctrl-C (host.abort_all) ends the warm-up

            async def warm_up() -> None:
                with warming:
                    await _warm_up(registry, ready, models)

            async def stop_on_abort() -> None:
                await host.aborting.wait()
                warming.cancel()

            async with trio.open_nursery() as aside:
                aside.start_soon(warm_up)
                aside.start_soon(stop_on_abort)
                await _run_all(
                    host,
                    jobs,
                    lanes,
                    outcomes,
                    errors,
                    limiter,
                    skips,
                    log,
                    runner.sink,
                    _notice(view),
                    ready,
                )
                aside.cancel_scope.cancel()  # the runs ended: the watcher (and any warm-up) too
        # the next board that opens reads none of these runs' events (a card that missed an
        # event is not kept: the board folds that run itself)
        with contextlib.suppress(Exception):
            await keeper.keep(log)
    for job, lane, before, start in zip(jobs, lanes, in_place, starts, strict=True):
        if job.workspace is not None:
            await _count_changes(job.workspace, lane)
        elif start is not None and start.base is not None:
            await _count_diff(Checkout(Path(workspace_dir(start)), start.base), lane)
        elif before is not None:
            lane.files_changed = await changes_since(before)
    results = [
        JobResult(job, lane, outcome, error, skip)
        for job, lane, outcome, error, skip in zip(
            jobs, lanes, outcomes, errors, skips, strict=True
        )
    ]
    if view.console is not None:
        console = view.console
        console.print()
        console.print(comparison_table(lanes))
        for result in results:
            if result.error is not None or result.skipped is not None:
                console.print(
                    f"{result.job.label}: {result.lane.error}", markup=False, highlight=False
                )
            elif (refused := result.lane.refusals.hint()) is not None:  # why nothing changed
                console.print(f"{result.job.label}: {refused}", markup=False, highlight=False)
        if any(job.workspace is not None for job in jobs):
            kinds = sorted({job.workspace.kind for job in jobs if job.workspace is not None})
            console.print(
                f"each run worked in its own {' / '.join(kinds)} (kept; see the workspace column)"
                f": `ringleader compare {group}` shows what each changed, `ringleader apply "
                f"{group}/LABEL` lands one, `ringleader workspaces --prune` removes them",
                markup=False,
                highlight=False,
            )
    return results


async def _diff_of(job: Job) -> str:
    """What ``job`` changed: its workspace's diff, or its directory's against git ``HEAD``."""
    if job.workspace is not None:
        return await chain_diff(job.workspace)
    return await directory_diff(job.task.cwd or ".")
