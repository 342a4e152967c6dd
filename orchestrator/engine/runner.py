"""Run a task on a runtime, end to end.

integration plan → home (ephemeral dir, persistent per-identity dir, or connected) → prompt from
``tiers`` → start → drain through a :class:`~orchestrator.engine.actor.RunActor` under a
:class:`~orchestrator.engine.supervisor.Supervisor` → watch cumulative usage against the context window
→ at a run boundary, rotate (``done{max_turns}``, or a failed run past the watermark) with a
handoff note, up to ``max_rotations``, optionally onto another runtime → one
:class:`TaskOutcome` (status, summary, usage and cost summed over every run).

Choices the original executor leaves open (documented here, tested in ``tests/orchestrator``):

* tokens for the watermark are the run's cumulative ``input + output`` tokens from its last
  ``cost`` (conservative: it over-estimates the live context, so rotation comes early, not late);
* a successful run never rotates; an aborted one never rotates;
* persistent homes live under ``<state_dir>/homes/<runtime>/<agent>`` (mode 0700); runs that
  share one run side by side (a runtime's ``max_runs`` limits how many run at once); ephemeral homes live under ``<state_dir>/runs/`` (not ``/tmp``: Codex
  refuses a home there) and are deleted when the run ends;
* the successor's session key is ``<base>:r<n>`` (the original executor's), retries append ``:a<n>``;
* the codec blob of the predecessor travels into ``record_rotation`` (the original executor drops it);
* :meth:`Runner.resume_task` continues a recorded session: it restores the run's codec blob on a
  fresh adapter, starts with ``resume_session_id`` from the session's origin working directory,
  and is logged as a new run whose outcome names the run it resumed (``resumedFrom``). Homes are
  per (runtime, agent): resume with the agent id of the original run so the runtime finds its
  session state there.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shutil
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from orchestrator.core.adapter import (
    RESUME_PROMPT,
    Capabilities,
    PromptImage,
    RunHandle,
    RunMcpServer,
    RuntimeAdapter,
    StartOpts,
    TaskHandle,
    TurnResumable,
)
from orchestrator.core.approvals import (
    APPROVALS_DB,
    ApprovalBook,
    ApprovalDecision,
    ApprovalRequest,
)
from orchestrator.core.config import AccountConfig
from orchestrator.core.errors import (
    CapabilityError,
    ConfigError,
    RingleaderError,
    RuntimeStartError,
    redact_secrets,
    single_exception,
)
from orchestrator.core.events import (
    ApprovalCall,
    DoneReason,
    EventFactory,
    RuntimeEvent,
    Usage,
    now_ms,
    valid_text,
)
from orchestrator.core.idle import (
    DEFAULT_RUN_SILENT_TIMEOUT_S,
    DEFAULT_RUN_STALL_TIMEOUT_S,
    IDLE_ABORT_GRACE_S,
)
from orchestrator.core.integration import RuntimeIntegrationPlan, resolve_runtime_integration
from orchestrator.core.lifetime import (
    ProcessRegistry,
    current_process_registry,
    default_state_dir,
    ensure_private_dir,
)
from orchestrator.core.quota import QuotaBook, readings_from, wants
from orchestrator.core.redact import register_env_secrets
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.core.sandbox import current_sandbox
from orchestrator.engine.accounts import HANDED_OFF, MOVE_ON, account_key, split_key, targets
from orchestrator.engine.actor import EventSink, RunActor, RunOutcome
from orchestrator.engine.endpoints import unreachable
from orchestrator.engine.eventlog import RunRecorder
from orchestrator.engine.followups import FollowupBook, joined
from orchestrator.engine.governance import Governance, RunGuard, SpendLedger
from orchestrator.engine.reviewloop.bootstrap import (
    SetupFailedError,
    register_workspace_secrets,
    run_workspace_script,
)
from orchestrator.engine.reviewloop.checkpoints import Checkpointer
from orchestrator.engine.rotation import (
    DEFAULT_ROTATION,
    RotationDefaults,
    RotationHandoff,
    RotationReason,
    RotationRecord,
    RotationTrigger,
    rotate_session,
    should_rotate,
)
from orchestrator.engine.supervisor import (
    RestartPolicy,
    RetryListener,
    RetryNotice,
    Supervisor,
    failure_reason,
)
from orchestrator.engine.unstarted import new_run_key, record_unstarted
from tiers import PromptTiers, assemble_tiers, date_stamp

__all__ = [
    "NullSink",
    "ResumeFrom",
    "RunRecord",
    "Runner",
    "TaskOutcome",
    "TaskSpec",
    "default_state_dir",
    "recoverable_tasks",
    "resumable_task",
]


LAST_SUMMARY_CHARS = 400
CONTINUE_PROMPT = "Continue where you left off."
QUEUED_ABORT = "aborted while queued for a free slot (max_runs)"
"""The message that continues a session parked at a rate limit."""


class NullSink:
    """A sink that keeps nothing (for runs nobody records)."""

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        await trio.lowlevel.checkpoint()


@attrs.frozen
class ResumeFrom:
    """A recorded session to continue (from the event log's session row of ``run_key``)."""

    run_key: str
    codec_blob: str | None = None
    native_session_id: str | None = None


@attrs.frozen
class TaskSpec:
    """What to do. ``context`` lands in the context tier, ``memory`` in the volatile tier."""

    task_id: str = attrs.field(converter=valid_text)
    title: str = attrs.field(converter=valid_text)
    """The prompt (text that enters the engine is made valid Unicode here: a lone surrogate
    from a JSON body becomes U+FFFD, so the log and every reader of it can encode it)."""
    description: str = attrs.field(default="", converter=valid_text)
    agent_id: str = "agent"
    team_id: str | None = None
    context: str = attrs.field(default="", converter=valid_text)
    memory: str = attrs.field(default="", converter=valid_text)
    model: str | None = None
    cwd: str | None = None
    max_turns: int | None = None
    child_tool_blocklist: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict[str, str], repr=False)
    resume: ResumeFrom | None = None
    """Continue this recorded session instead of starting a new one (see :meth:`Runner.resume_task`)."""
    rotate_to: str | None = None
    """Rotation successors start on this runtime (default: the runner's ``rotate_to``, else the
    same runtime); ``run_task(rotate_to=…)`` wins."""
    watermark: float | None = None
    """Rotate past this share of the context window (0–1; default: the runner's
    ``rotation.threshold_pct``)."""
    account: str | None = None
    """The account the runtime runs as (``[runtimes.<id>.accounts.<name>]``; ``None``: its
    default login or key); the quota meters are kept per account."""
    fallback: tuple[str, ...] = ()
    """Where the task goes, in order, when its target is held at a limit: another account
    (``NAME``), a runtime (``RUNTIME``) or both (``RUNTIME@NAME``); see
    :mod:`orchestrator.engine.accounts`."""
    outcome_fields: Mapping[str, Any] = attrs.field(factory=dict[str, Any], repr=False)
    """More fields for each of the task's runs rows in the event log (a chain's ``chain``,
    ``chainTask`` and ``dependsOn``: the board links chained runs by them)."""
    setup: str | None = None
    """A workspace setup script (``[workspace] setup``) run with ``sh -c`` in ``cwd`` before
    the agent starts; its output lines are the run's first ``status`` events, and a failure
    ends the run ``error{setup_failed}`` + ``done{error}`` with no agent started. Not run
    when the task resumes a session."""
    setup_timeout_s: float = 300.0
    resume_turn: int | None = None
    """With ``resume``: continue the session from the end of this turn of the resumed run (a
    fork; runtimes that can: :class:`~orchestrator.core.adapter.TurnResumable`), not from its
    end (``ringleader rewind``)."""
    resume_prompt_index: int = 0
    """Which of the session's prompts started the resumed run (0: the first; each run that
    resumed the session since added one)."""
    plan: bool = False
    """Plan mode: the first turn plans read-only; a person approves the plan (the approval book)
    before a turn with the normal policy carries it out on the same session, or rejects it
    with a message and gets a new plan (see :meth:`Runner._review_plan`)."""
    images: tuple[PromptImage, ...] = ()
    """Images that go with the prompt (``StartOpts.images``)."""
    mcp_servers: tuple[RunMcpServer, ...] = ()
    """MCP servers the runs connect to besides the configured ones (``StartOpts.mcp_servers``)."""
    fork: bool = False
    """With ``resume``: continue the session as a new one, the recorded one left as it was."""


PLAN_APPROVED = "The plan is approved. Carry it out now."
PLAN_REJECTED = "The plan was not approved: {message}\nMake a new plan."
MAX_PLAN_ROUNDS = 5
"""A task in plan mode asks for a new plan at most this many times."""


@attrs.frozen
class RunRecord:
    """One run of the task (the first, a retry's final attempt, or a rotation successor)."""

    runtime_id: str
    session_key: str
    outcome: RunOutcome
    attempts: int
    serialized_session: str | None = None


@attrs.frozen
class TaskOutcome:
    """The one final outcome of a task."""

    status: DoneReason
    summary: str
    usage: Usage
    cost_usd: float | None
    """USD summed over every run whose runtime reported it (None when none did)."""
    cost_complete: bool
    """False when some run's USD was unknown (then ``cost_usd`` is a lower bound)."""
    rotations: int
    runs: tuple[RunRecord, ...]
    error_code: str | None = None
    error_message: str | None = None


@attrs.define
class _TaskState:
    runs: list[RunRecord] = attrs.field(factory=list[RunRecord])
    rotations: int = 0
    note: str = ""


@attrs.define
class Runner:
    """Runs tasks on the runtimes of a registry (see the module docstring)."""

    registry: RuntimeRegistry
    sink: EventSink = attrs.field(factory=NullSink)
    state_dir: Path = attrs.field(factory=default_state_dir, converter=Path)
    rotation: RotationDefaults = DEFAULT_ROTATION
    restart: RestartPolicy = attrs.field(factory=RestartPolicy)
    idle_s: float = DEFAULT_RUN_SILENT_TIMEOUT_S
    grace_s: float = IDLE_ABORT_GRACE_S
    stall_s: float | None = DEFAULT_RUN_STALL_TIMEOUT_S
    """A run whose runtime keeps talking without progress this long ends ``error{stalled}``
    (see :attr:`RunActor.stall_s`; None: never)."""
    clock: Callable[[], int] = now_ms
    today: Callable[[], _dt.date] = lambda: _dt.datetime.now(_dt.UTC).date()
    record_rotation: Callable[[RotationRecord], Awaitable[None] | None] | None = None
    """Told of each rotation once the successor has started (the CLI shows it)."""
    rotate_to: str | None = None
    """The runtime a rotation starts its successor on when ``run_task`` names none (default:
    the same runtime)."""
    on_actor: Callable[[RunActor], None] | None = None
    """Called with each new actor (to abort, steer or watch it from outside)."""
    on_start: Callable[[trio.CancelScope], None] | None = None
    """Called with the scope of a task's start (before its first actor exists): cancelling it
    aborts a start still under way (a gateway booting, a model SDK importing); the run is
    logged as ``aborted``."""
    on_retry: RetryListener | None = None
    """Told before the supervisor retries a run (``attempt 2/4: <reason>``)."""
    event_log: RunRecorder | None = None
    """Where runs and resumable sessions are recorded (events go through ``sink``)."""
    governance: Governance | None = None
    """Budgets, estimates and breakers (shared by this runner's copies: one host ledger)."""
    approvals: bool = False
    """Tool calls that need approval wait for a person in the state directory's
    :class:`~orchestrator.core.approvals.ApprovalBook` (else they are denied)."""
    quota: QuotaBook | None = None
    """Where the rate-limit windows the runs report are kept (the quota meters: see
    :mod:`orchestrator.core.quota`); ``None``: not kept."""
    accounts: Mapping[str, AccountConfig] = attrs.field(factory=dict[str, AccountConfig])
    """The configured accounts by ``<runtime>@<name>`` (their homes; the registry builds their
    adapters under the same ids: :func:`~orchestrator.engine.accounts.register_accounts`)."""
    review_plans: bool = True
    """A plan-mode task's plan waits for a person in the approval book before a normal turn
    carries it out (``run --plan``); ``False``: the plan is the task's answer and the run ends
    there (``ringleader acp`` in its ``plan`` session mode: the editor decides what follows)."""
    followups: bool = False
    """Deliver the follow-ups queued for this runner's runs (``ringleader say``, see
    :mod:`orchestrator.engine.followups`): steered in at once when the runtime is steerable,
    else as the next turn on the same session when the run ends."""
    followup_poll_s: float = 0.5
    """How often a live steerable run looks for follow-ups."""
    checkpoints: bool = False
    """After every turn that changed files in a run's working directory, when that is a git
    worktree ringleader made (under ``<state_dir>/workspaces/``), record the state on
    ``refs/ringleader/checkpoints/<run>/<n>`` (see
    :mod:`orchestrator.engine.reviewloop.checkpoints`). A run in the person's own checkout is
    left alone."""
    versions: dict[str, str | None] = attrs.field(factory=dict[str, str | None], repr=False)
    """Each runtime's installed version, looked up once (shared by this runner's copies)."""
    run_limiters: dict[str, trio.CapacityLimiter] = attrs.field(
        factory=dict[str, trio.CapacityLimiter], repr=False
    )
    """One limiter per runtime with a limit (the registry's ``limit``, ``max_runs`` in the
    configuration): at most that many of its runs at once. Copies of this runner
    (``attrs.evolve``, as :class:`~orchestrator.engine.hosts.local.LocalHost` makes per task)
    share the table, so a limit holds across all of a host's tasks. Without a limit, runs of one
    runtime run side by side, a shared persistent home included (the runtimes keep each
    session apart in it)."""
    on_queued: Callable[[str], None] | None = None
    """Told why a task waits before it starts (``at most 1 native run at once``)."""
    _plan_rounds: dict[str, int] = attrs.field(factory=dict[str, int], repr=False)
    """Plans reviewed per session key (a task asks for a new plan at most MAX_PLAN_ROUNDS)."""

    # -- homes -------------------------------------------------------------------------------

    @asynccontextmanager
    async def _home(
        self, plan: RuntimeIntegrationPlan, runtime_id: str, agent_id: str
    ) -> AsyncGenerator[str | None]:
        kind = plan.home.kind
        if kind == "connected":
            yield None
            return
        account = self.accounts.get(runtime_id)
        own = account.home_path() if account is not None else None
        if kind == "persistent" or own is not None:
            path = own or self.state_dir / "homes" / _safe(runtime_id) / _safe(agent_id)
            await trio.to_thread.run_sync(
                lambda: path.mkdir(mode=0o700, parents=True, exist_ok=True)
            )
            yield str(path)
            return
        path = self.state_dir / "runs" / f"{_safe(runtime_id)}-{uuid.uuid4().hex[:12]}"
        await trio.to_thread.run_sync(lambda: path.mkdir(mode=0o700, parents=True))
        try:
            yield str(path)
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(lambda: shutil.rmtree(path, ignore_errors=True))

    async def _wait_for_a_slot(
        self, runtime: str, session_key: str, task: TaskSpec, stack: AsyncExitStack
    ) -> tuple[str, int] | RunOutcome | None:
        """Hold one of ``runtime``'s run slots until ``stack`` closes (accounts share their
        runtime's slots). No limit, or a free slot: at once (``None``). Otherwise the task's
        first run is logged now, as queued — ``status{queued}`` with the reason, through the
        sink, so the board (any process's) and the live view show it — and the task is told
        why (``on_queued``); when a slot frees that same run goes on: returns its key and how
        many events it has (the first run continues them). Aborted while it waits (the scope
        given to ``on_start``): the run ends ``done{aborted}`` at once and that outcome is
        returned; cancelled from outside: it ends ``done{aborted}`` and the cancellation goes
        on."""
        runtime_id = runtime.partition("@")[0]
        most = self.registry.limit(runtime_id)
        if most is None:
            return None
        limiter = self.run_limiters.setdefault(runtime_id, trio.CapacityLimiter(most))
        try:
            limiter.acquire_nowait()
        except trio.WouldBlock:
            pass
        else:
            stack.callback(limiter.release)
            await trio.lowlevel.checkpoint()
            return None
        plural = "run" if most == 1 else "runs"
        reason = f"at most {most} {runtime_id} {plural} at once (max_runs)"
        run_key = new_run_key(session_key)
        make = EventFactory(run_id="", session_id=session_key, clock=self.clock)
        log = self.event_log
        try:
            with trio.CancelScope() as waiting:
                if log is not None:
                    await log.start_run(run_key, runtime_id=runtime, session_key=session_key)
                await self.sink.deliver(run_key, [make.status("queued", detail=reason)])
                if self.on_start is not None:
                    self.on_start(waiting)  # an abort stops the wait
                if self.on_queued is not None:
                    self.on_queued(reason)
                await limiter.acquire()
                stack.callback(limiter.release)
        except BaseException:
            await self._start_aborted(runtime, session_key, task, (run_key, make.seq), QUEUED_ABORT)
            raise
        if waiting.cancelled_caught:
            return await self._start_aborted(
                runtime, session_key, task, (run_key, make.seq), QUEUED_ABORT
            )
        return run_key, make.seq

    # -- prompt ------------------------------------------------------------------------------

    def _opts(
        self,
        task: TaskSpec,
        session_key: str,
        note: str,
        home: str | None,
        resume_id: str | None = None,
        resume_at: str | None = None,
    ) -> StartOpts:
        context = "\n\n".join(part for part in (task.context, note) if part)
        volatile = "\n\n".join(
            part for part in (task.memory, f"Today: {date_stamp(self.today())}") if part
        )
        stable = (
            f"# Task: {task.title}\n\n{task.description}"
            if task.description
            else f"# Task: {task.title}"
        )
        prompt = assemble_tiers(PromptTiers(stable=stable, context=context, volatile=volatile))
        return StartOpts(
            agent_id=task.agent_id,
            session_key=session_key,
            message=prompt.prompt,
            model=task.model,
            cwd=task.cwd,
            home_dir=home,
            max_turns=task.max_turns,
            child_tool_blocklist=task.child_tool_blocklist,
            env=task.env,
            resume_session_id=resume_id,
            resume_at=resume_at if resume_id else None,
            cache_breakpoints=tuple(bp.offset for bp in prompt.cache_breakpoints),
            approvals_db=str(self.state_dir / APPROVALS_DB) if self.approvals else None,
            plan=task.plan,
            images=task.images,
            mcp_servers=task.mcp_servers,
            fork=task.fork and resume_id is not None,
        )

    # -- one run under supervision -----------------------------------------------------------

    async def _supervised_run(
        self,
        adapter: RuntimeAdapter,
        caps: Capabilities,
        task: TaskSpec,
        session_key: str,
        first: RunHandle,
        note: str,
        home: str | None,
        resume_id: str | None = None,
        lineage: Mapping[str, Any] | None = None,
        ledger: SpendLedger | None = None,
        endpoint: str | None = None,
        preset: tuple[str, int] | None = None,
        first_checkpointer: Checkpointer | None = None,
        resume_at: str | None = None,
        hand_off: bool = False,
    ) -> tuple[RunOutcome, int, RunHandle]:
        current = first
        gov = self.governance
        handed: list[int] = []  # the reset of a limit the task leaves for its next target
        guards: list[RunGuard | None] = []
        continue_from: list[str] = []  # the session a parked run continues from

        def park(outcome: RunOutcome) -> float | None:
            guard = guards[-1] if guards else None
            trip = guard.tripped if guard is not None else None
            if gov is None or trip is None or trip.resets_at_ms is None:
                return None
            if supervisor.parks >= gov.park.max_parks:
                return None
            session = current.run_id if caps.resume else None
            if outcome.produced_output and session is None:
                return None  # starting over would redo visible work
            wait = max(0.0, (trip.resets_at_ms - self.clock()) / 1000)
            if wait > gov.park.max_wait_s:
                return None
            continue_from[:] = [session] if session else []
            return wait

        def stop(outcome: RunOutcome) -> bool:
            guard = guards[-1] if guards else None
            trip = guard.tripped if guard is not None else None
            if not hand_off or trip is None or trip.resets_at_ms is None:
                return False
            handed.append(trip.resets_at_ms)
            return True

        supervisor = Supervisor(self.restart, on_retry=self.on_retry, park=park, stop=stop)

        async def attempt(n: int) -> RunOutcome:
            nonlocal current
            retry_checkpointer: Checkpointer | None = None
            if n > 0:
                if continue_from:  # parked at a rate limit: continue its session
                    resumed = attrs.evolve(task, title=CONTINUE_PROMPT, description="")
                    opts = self._opts(resumed, f"{session_key}:a{n}", note, home, continue_from[0])
                    continue_from.clear()
                else:
                    opts = self._opts(task, f"{session_key}:a{n}", note, home, resume_id, resume_at)
                retry_checkpointer = await self._checkpointer(task)  # before it can write
                try:
                    if gov is not None and ledger is not None:  # spent while backing off?
                        gov.check_start(adapter.id, caps, task.model, ledger)
                    await _check_endpoint(endpoint, adapter.id)  # gone while backing off?
                    current = await adapter.start(
                        TaskHandle(task_id=task.task_id, team_id=task.team_id), opts
                    )
                except Exception as exc:
                    await self._start_failed(adapter, opts.session_key, session_key, exc)
                    raise
            log = self.event_log
            handle = current
            # every attempt gets its own run key: re-running a task (after a crash, in another
            # process) never collides with, or overwrites, what an earlier attempt recorded
            run_key = new_run_key(current.session_key)
            offset = 0
            if n == 0 and preset is not None:  # its setup's status events came first
                run_key, offset = preset
            recorded = False

            def record_session_once(event: RuntimeEvent) -> Awaitable[None] | None:
                # As soon as the runtime has told us its id, the session is resumable: record it
                # (with the origin working directory) before the run goes any further. A plain
                # function: called for every event, it makes a coroutine only when it records.
                nonlocal recorded
                if recorded or log is None or not handle.run_id:
                    return None
                recorded = True
                return self._record_session(log, adapter, handle, task, run_key)

            if n > 0:
                checkpointer = retry_checkpointer
            elif first_checkpointer is not None:
                checkpointer = first_checkpointer
            else:  # a rotation successor: already started
                checkpointer = await self._checkpointer(task)
            if checkpointer is not None:
                checkpointer.run_key = run_key
            book = self.quota

            def on_event(event: RuntimeEvent) -> Awaitable[None] | None:
                first = record_session_once(event)
                second = checkpointer.observe(event, handle.run_id) if checkpointer else None
                if book is not None and wants(event):
                    first = self._record_quota(book, event, adapter.id, task.account, first)
                if first is None:
                    return second
                if second is None:
                    return first
                return _both(first, second)

            actor = RunActor(
                adapter=adapter,
                run_handle=current,
                run_key=run_key,
                sink=self.sink,
                capabilities=caps,
                idle_s=self.idle_s,
                grace_s=self.grace_s,
                stall_s=gov.stall_s if gov is not None and gov.stall_s else self.stall_s,
                clock=self.clock,
                on_event=(
                    record_session_once if checkpointer is None and book is None else on_event
                )
                if log is not None or checkpointer is not None or book is not None
                else None,
                guard=_guard(gov, adapter.id, caps, ledger, self.clock),
                endpoint=endpoint,
                seq_offset=offset,
            )
            guards.append(actor.guard)
            if self.on_actor is not None:
                self.on_actor(actor)
            if log is not None and not offset:
                await log.start_run(run_key, runtime_id=adapter.id, session_key=session_key)
            try:
                if self.followups and caps.steerable:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._steer_followups, actor, session_key)
                        outcome = await actor.run()
                        nursery.cancel_scope.cancel()
                else:
                    outcome = await actor.run()
            finally:
                actor.fence()
            if log is not None:
                await self._record(log, adapter, current, outcome, task, run_key, lineage)
            return outcome

        outcome = await supervisor.supervise(attempt)
        if handed:
            at = _dt.datetime.fromtimestamp(handed[-1] / 1000).strftime("%H:%M:%S")
            outcome = attrs.evolve(
                outcome,
                error_code=HANDED_OFF,
                error_message=f"rate limited until {at}; handed to the next target "
                f"({outcome.error_message or outcome.error_code or 'rate limited'})",
            )
        return outcome, supervisor.attempts, current

    # -- plan mode (run --plan) ----------------------------------------------------------------

    async def _plan_turn(
        self,
        adapter: RuntimeAdapter,
        caps: Capabilities,
        task: TaskSpec,
        session_key: str,
        handle: RunHandle,
        home: str | None,
        outcome: RunOutcome,
    ) -> tuple[TaskSpec, RunHandle, str] | None:
        """A person reviews the plan the run answered; the next turn on its session carries it
        out (approved: plan mode off) or makes a new one (rejected: with the person's message).
        ``None``: no session to continue, or too many rounds."""
        session = handle.run_id
        rounds = self._plan_rounds.get(session_key, 0) + 1
        self._plan_rounds[session_key] = rounds
        if not caps.resume or not session or rounds > MAX_PLAN_ROUNDS:
            return None
        decision = await self._review_plan(adapter.id, task, session_key, outcome, rounds)
        if decision.approved:
            turn = attrs.evolve(task, title=PLAN_APPROVED, description="", plan=False)
        else:
            message = decision.rejection_text()
            text = PLAN_REJECTED.format(message=message)
            turn = attrs.evolve(task, title=text, description="", plan=True)
        started = await adapter.start(
            TaskHandle(task_id=task.task_id, team_id=task.team_id),
            self._opts(turn, session_key, "", home, session),
        )
        return turn, started, session

    async def _review_plan(
        self, runtime_id: str, task: TaskSpec, session_key: str, outcome: RunOutcome, n: int
    ) -> ApprovalDecision:
        """The plan as an approval in the book, on a run of its own (``…:plan-N:run-…``) that
        waits (``status{waiting_approval}``) until a person decides it: ``ringleader approve``,
        the board or an ACP editor."""
        plan = outcome.text or outcome.summary
        review_key = f"{session_key}:plan-{n}:run-{uuid.uuid4().hex[:8]}"
        make = EventFactory(run_id=review_key, session_id=session_key, clock=self.clock)
        book = ApprovalBook.in_state_dir(self.state_dir)
        handler = book.handler(
            runtime_id=runtime_id,
            agent_id=task.agent_id,
            session_key=review_key,
            cwd=task.cwd or "",
        )
        request = ApprovalRequest(
            "plan", {"plan": plan}, f"plan-{n}", review_key, "approve the plan to carry it out"
        )
        log = self.event_log
        if log is not None:
            await log.start_run(review_key, runtime_id=runtime_id, session_key=session_key)
        await handler.record(request)
        call = ApprovalCall(
            id=request.id, tool_call_id=request.call_id, name="plan", input={"plan": plan},
            reason=request.reason,
        )  # fmt: skip
        await self.sink.deliver(
            review_key,
            [
                make.status("init", detail=f"plan {n} of {outcome.run_key}"),
                make.text_delta(plan),
                make.waiting_approval(call, detail=f"approval {request.id}: plan"),
            ],
        )
        try:
            decision = await handler(request)
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.sink.deliver(review_key, make.finish("aborted", "plan not reviewed"))
                if log is not None:
                    await log.finish_run(review_key, status="aborted", outcome={"title": "plan"})
            raise
        verdict = (
            "plan approved" if decision.approved else f"plan rejected: {decision.rejection_text()}"
        )
        await self.sink.deliver(review_key, make.finish("success", verdict))
        if log is not None:
            await log.finish_run(
                review_key,
                status="success",
                outcome={"reason": "success", "summary": verdict, "title": f"plan {n}"},
            )
        return decision

    async def _record_quota(
        self,
        book: QuotaBook,
        event: RuntimeEvent,
        runtime_id: str,
        account: str | None,
        first: Awaitable[None] | None,
    ) -> None:
        if first is not None:
            await first
        readings = readings_from(event, runtime_id, account, now_ms=self.clock())
        await trio.to_thread.run_sync(book.record, readings)

    # -- follow-ups (ringleader say) ---------------------------------------------------------

    async def _steer_followups(self, actor: RunActor, session_key: str) -> None:
        """While a steerable run goes on, steer in each follow-up queued for its session."""
        book = FollowupBook.in_state_dir(self.state_dir)
        while True:
            await trio.sleep(self.followup_poll_s)
            if not await book.has_queued(session_key):
                continue
            messages = await book.take(session_key, "steer")
            try:
                actor.steer(joined(messages))
            except Exception:
                await book.requeue(messages)
                raise

    async def _followup_turn(
        self,
        adapter: RuntimeAdapter,
        caps: Capabilities,
        task: TaskSpec,
        session_key: str,
        handle: RunHandle,
        home: str | None,
    ) -> tuple[TaskSpec, RunHandle, str] | None:
        """The next turn on the run's session with every follow-up queued for it (in order, in
        one turn), started; ``None`` when there is none (or the session cannot go on: the run
        recorded no session, or its runtime cannot resume; the messages stay queued)."""
        session = handle.run_id
        if not self.followups or not caps.resume or not session:
            return None
        book = FollowupBook.in_state_dir(self.state_dir)
        if not await book.has_queued(session_key):
            return None
        messages = await book.take(session_key, "turn")
        turn = attrs.evolve(task, title=joined(messages), description="")
        try:
            started = await adapter.start(
                TaskHandle(task_id=task.task_id, team_id=task.team_id),
                self._opts(turn, session_key, "", home, session),
            )
        except Exception:
            await book.requeue(messages)
            return None
        return turn, started, session

    async def _start_failed(
        self,
        adapter: RuntimeAdapter | str,
        run_session_key: str,
        session_key: str,
        exc: Exception,
        preset: tuple[str, int] | None = None,
    ) -> RunOutcome:
        """Record a run that could not start (binary missing, argv too long, spawn refused, a
        budget spent, a breaker open, …). ``adapter``: the adapter, or the runtime id.
        ``preset``: the run is already logged (queued) with this key and this many events."""
        adapter_id = adapter if isinstance(adapter, str) else adapter.id
        code = exc.event_code if isinstance(exc, RingleaderError) else "runtime_start_failed"
        run_key, offset = preset or (new_run_key(run_session_key), 0)
        return await record_unstarted(
            self.event_log,
            self.sink,
            runtime_id=adapter_id,
            session_key=session_key,
            summary=redact_secrets(f"{adapter_id} could not start: {exc}"),
            code=code,
            run_key=run_key,
            clock=self.clock,
            started=preset is not None,
            make=EventFactory(run_id="", session_id=run_session_key, clock=self.clock, seq=offset),
            prior_events=offset,
        )

    async def _checkpointer(self, task: TaskSpec) -> Checkpointer | None:
        """A checkpoint recorder for a run of ``task`` that is about to start (``None`` unless
        :attr:`checkpoints` is on and the task works in one of ringleader's git worktrees)."""
        if not self.checkpoints or not _in_workspaces(task.cwd, self.state_dir):
            await trio.lowlevel.checkpoint()
            return None
        return await Checkpointer.before_start(task.cwd, clock=self.clock)

    async def _setup(
        self,
        adapter_id: str,
        task: TaskSpec,
        session_key: str,
        preset: tuple[str, int] | None = None,
    ) -> tuple[str, int] | RunOutcome:
        """Run the task's workspace setup script before its agent starts. Its output lines are
        the first ``status`` events of the task's first run (live, through the sink; after its
        ``preset`` events when it was already logged, queued); returns that run's key and how
        many events it already has, or — the script failed — the outcome of the run it ended
        (``error{setup_failed}`` + ``done{error}``)."""
        assert task.setup is not None
        run_key, sent = preset or (new_run_key(session_key), 0)
        make = EventFactory(run_id="", session_id=session_key, clock=self.clock, seq=sent)
        log = self.event_log
        if log is not None and preset is None:
            await log.start_run(run_key, runtime_id=adapter_id, session_key=session_key)
        send, receive = trio.open_memory_channel[str](256)
        cwd = task.cwd or os.getcwd()

        async def forward() -> None:
            nonlocal sent
            async with receive:
                async for line in receive:
                    batch: list[RuntimeEvent] = [make.status("running", detail=f"setup: {line}")]
                    sent += len(batch)
                    await self.sink.deliver(run_key, batch)

        def on_line(line: str) -> None:
            with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
                send.send_nowait(line)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(forward)
            first: list[RuntimeEvent] = [make.status("running", detail=f"setup: $ {task.setup}")]
            sent += 1
            await self.sink.deliver(run_key, first)
            async with send:
                result = await run_workspace_script(
                    task.setup, cwd, timeout_s=task.setup_timeout_s, on_line=on_line
                )
        if result.ok:
            return run_key, sent
        return await record_unstarted(
            log,
            self.sink,
            runtime_id=adapter_id,
            session_key=session_key,
            summary=redact_secrets(result.describe("setup", task.setup_timeout_s)),
            code=SetupFailedError.event_code,
            title=task.title,
            run_key=run_key,
            started=True,
            make=make,
            prior_events=sent,
        )

    async def _start_aborted(
        self,
        adapter_id: str,
        session_key: str,
        task: TaskSpec,
        preset: tuple[str, int] | None = None,
        summary: str | None = None,
    ) -> RunOutcome:
        """Record a run aborted before its runtime had started (Ctrl-C during a gateway's
        boot, or while queued for a slot). ``preset``: the run is already logged with this
        key and this many events."""
        run_key, offset = preset or (new_run_key(session_key), 0)
        return await record_unstarted(
            self.event_log,
            self.sink,
            runtime_id=adapter_id,
            session_key=session_key,
            summary=summary or f"aborted while {adapter_id} was starting",
            code=None,
            title=task.title,
            clock=self.clock,
            run_key=run_key,
            started=preset is not None,
            make=EventFactory(run_id="", session_id=session_key, clock=self.clock, seq=offset),
            prior_events=offset,
        )

    async def _record(
        self,
        log: RunRecorder,
        adapter: RuntimeAdapter,
        run: RunHandle,
        outcome: RunOutcome,
        task: TaskSpec,
        run_key: str,
        lineage: Mapping[str, Any] | None = None,
    ) -> None:
        await self._record_session(log, adapter, run, task, run_key)
        await log.finish_run(
            run_key,
            status=outcome.reason,
            outcome={
                "reason": outcome.reason,
                "summary": outcome.summary,
                "usage": outcome.usage.model_dump(by_alias=True) if outcome.usage else None,
                "costUsd": outcome.cost_usd,
                "errorCode": outcome.error_code,
                "runId": outcome.run_id,
                "resumedFrom": task.resume.run_key if task.resume is not None else None,
                "title": task.title,
                **({"account": task.account} if task.account else {}),
                **task.outcome_fields,
                **(lineage or {}),
                "runtimeVersion": await self._version(adapter.id),
                **_drift(outcome),
            },
        )

    async def _version(self, runtime_id: str) -> str | None:
        """The installed version of the runtime (what ``ringleader doctor`` shows per run);
        looked up once per runtime by this runner and its copies."""
        versions = self.versions
        if runtime_id not in versions:
            versions[runtime_id] = await trio.to_thread.run_sync(self.registry.version, runtime_id)
        return versions[runtime_id]

    async def _record_session(
        self,
        log: RunRecorder,
        adapter: RuntimeAdapter,
        run: RunHandle,
        task: TaskSpec,
        run_key: str,
    ) -> None:
        codec = adapter.session_codec
        blob: str | None = None
        if codec is not None:
            try:
                blob = await codec.serialize(run)
            except Exception:
                blob = None
        await log.record_session(
            run.session_key,
            runtime_id=adapter.id,
            native_session_id=run.run_id,
            codec_blob=blob,
            origin_cwd=task.cwd,
            run_key=run_key,
            agent_id=task.agent_id,
        )

    # -- the task ------------------------------------------------------------------------------

    async def run_task(
        self,
        runtime_id: str,
        task: TaskSpec,
        *,
        rotate_to: str | None = None,
        max_rotations: int | None = None,
    ) -> TaskOutcome:
        """Run ``task`` on ``runtime_id``; rotate (onto ``rotate_to`` if given) when it runs out.

        A single error from inside (a runtime that cannot start, a bad configuration) is raised
        as itself, not wrapped in exception groups.
        """
        # children are recorded under the state dir; those of a dead orchestrator are reaped
        registry = ProcessRegistry(self.state_dir / "procs")
        await trio.to_thread.run_sync(registry.reap)
        token = current_process_registry.set(registry)
        try:
            return await self._run_targets(runtime_id, task, rotate_to, max_rotations)
        except BaseExceptionGroup as group:
            leaf = single_exception(group)
            if leaf is not None:
                raise leaf from group
            raise
        finally:
            current_process_registry.reset(token)

    async def _run_targets(
        self,
        runtime_id: str,
        task: TaskSpec,
        rotate_to: str | None,
        max_rotations: int | None,
    ) -> TaskOutcome:
        """The task on its target, moving on through its fallbacks while a target is held at
        a limit (see :mod:`orchestrator.engine.accounts`); the last one parks as usual."""
        if "@" in runtime_id and task.account is None:  # ``claude-code@work`` names both
            runtime_id, account = split_key(runtime_id)
            task = attrs.evolve(task, account=account)
        found = targets(runtime_id, task.account, task.fallback, self.accounts)
        if len(found) == 1:
            return await self._run_task(runtime_id, task, rotate_to, max_rotations)
        done: list[TaskOutcome] = []
        for index, (rid, account) in enumerate(found):
            last = index == len(found) - 1
            key = account_key(rid, account)
            target = attrs.evolve(task, account=account, fallback=())
            held = None
            if not last and self.quota is not None:
                held = await trio.to_thread.run_sync(
                    self.quota.limited_until, rid, account, self.clock()
                )
            if held is not None:
                at = _dt.datetime.fromtimestamp(held / 1000).strftime("%H:%M:%S")
                await self._moving_on(index, found, f"{key} is held by a rate limit until {at}")
                continue
            outcome = await self._run_task(rid, target, rotate_to, max_rotations, hand_off=not last)
            done.append(outcome)
            if last or outcome.error_code not in MOVE_ON:
                break
            await self._moving_on(index, found, outcome.error_message or str(outcome.error_code))
        return _merge(done)

    async def _moving_on(self, index: int, found: list[tuple[str, str | None]], why: str) -> None:
        if self.on_retry is None:
            return
        nxt = account_key(*found[index + 1])
        notice = RetryNotice(index + 2, len(found), f"{why}; moving to {nxt}", 0.0)
        result = self.on_retry(notice)
        if result is not None:
            await result

    async def _run_task(
        self,
        runtime_id: str,
        task: TaskSpec,
        rotate_to: str | None,
        max_rotations: int | None,
        hand_off: bool = False,
    ) -> TaskOutcome:
        limit = self.rotation.max_rotations if max_rotations is None else max_rotations
        # keys configured by environment variable (ours or the task's) are redacted by value
        register_env_secrets(os.environ)
        register_env_secrets(task.env)
        # … and so are the secrets of the files a workspace was given (.env, .worktreeinclude)
        if task.cwd is not None:
            await trio.to_thread.run_sync(register_workspace_secrets, task.cwd)
        state_dir = self.state_dir
        await trio.to_thread.run_sync(lambda: ensure_private_dir(state_dir, tighten=True))
        rotate_to = rotate_to or task.rotate_to or self.rotate_to
        state = _TaskState()
        lineage: dict[str, Any] | None = None
        base_key = f"runtime:{runtime_id}:task:{task.task_id}"
        # an account is its own registry entry (and breaker): ``<runtime>@<name>``
        keyed = account_key(runtime_id, task.account)
        runtime = keyed
        gov = self.governance
        ledger = gov.task_ledger() if gov is not None else None
        if gov is not None:
            try:
                runtime = gov.admit(keyed, task.model)
            except RingleaderError as exc:  # its breaker is open and no fallback may start
                failed = await self._start_failed(runtime_id, base_key, base_key, exc)
                state.runs.append(RunRecord(keyed, base_key, failed, 1))
                return _final(state)
            if runtime != keyed:  # the configured breaker fallback: that runtime's own account
                task = attrs.evolve(task, account=None)
        async with AsyncExitStack() as stack:
            session_key = base_key
            queued = await self._wait_for_a_slot(runtime, session_key, task, stack)
            if isinstance(queued, RunOutcome):  # aborted while it waited for a slot
                state.runs.append(RunRecord(runtime, session_key, queued, 1))
                return _final(state)
            preset: tuple[str, int] | None = queued  # the run it logged as queued goes on
            adapters: dict[str, RuntimeAdapter] = {}

            async def adapter_for(rid: str) -> RuntimeAdapter:
                if rid not in adapters:
                    adapters[rid] = await stack.enter_async_context(self.registry.create(rid))
                return adapters[rid]

            try:
                adapter = await adapter_for(runtime)
                caps = adapter.capabilities()
                plan = resolve_runtime_integration(caps)
                home_cm = self._home(plan, runtime, task.agent_id)
                home: str | None = await stack.enter_async_context(home_cm)
                template = self.registry.sandbox
                if template is not None:  # its children see its workspace and home, writable
                    policy = template.with_paths(writable=[p for p in (home, task.cwd) if p])
                    stack.callback(current_sandbox.reset, current_sandbox.set(policy))
                resume_id = await _restore(adapter, task.resume) if task.resume else None
                resume_at = await _resume_point(adapter, task, resume_id, home)
                if task.setup and task.resume is None:
                    queued = None  # from here the setup records how its run ends
                    set_up = await self._setup(adapter.id, task, session_key, preset)
                    if isinstance(set_up, RunOutcome):  # it failed: no agent starts
                        state.runs.append(RunRecord(runtime, session_key, set_up, 1))
                        return _final(state)
                    preset = set_up
                first_checkpointer = await self._checkpointer(task)
            except Exception as exc:
                if queued is not None:  # the queued run ends (error + done) before this goes up
                    with trio.CancelScope(shield=True):
                        await self._start_failed(runtime, session_key, session_key, exc, queued)
                raise
            handle: RunHandle | None = None
            try:
                if task.plan and not caps.plan_mode:
                    raise CapabilityError(
                        f"runtime {adapter.id!r} has no plan mode (Claude Code, Codex, the "
                        "native runtime and ACP agents with a plan session mode do); run it "
                        "without --plan",
                        actor_id=session_key,
                    )
                if gov is not None and ledger is not None:
                    gov.check_start(runtime, caps, task.model, ledger)
                await _check_endpoint(self.registry.endpoint(runtime), runtime)
                with trio.CancelScope() as starting:
                    if self.on_start is not None:
                        self.on_start(starting)
                    handle = await adapter.start(
                        TaskHandle(task_id=task.task_id, team_id=task.team_id),
                        self._opts(task, session_key, "", home, resume_id, resume_at),
                    )
            except Exception as exc:
                # a start failure is a logged run ending in error, not an exception with no trace
                failed = await self._start_failed(adapter, session_key, session_key, exc, preset)
                if gov is not None:
                    gov.record(runtime, task.model, ok=False, code=failed.error_code, reason="")
                if isinstance(exc, ConfigError):
                    raise  # the caller's own bad input: a typed error (and now in the log too)
                state.runs.append(RunRecord(runtime, session_key, failed, 1))
                return _final(state)
            if handle is None:  # aborted while it started
                aborted = await self._start_aborted(adapter.id, session_key, task, preset)
                state.runs.append(RunRecord(runtime, session_key, aborted, 1))
                return _final(state)
            turn_task = task  # a follow-up turn's prompt is the person's messages
            while True:
                outcome, attempts, handle = await self._supervised_run(
                    adapter,
                    caps,
                    turn_task,
                    session_key,
                    handle,
                    state.note,
                    home,
                    resume_id,
                    lineage,
                    ledger,
                    self.registry.endpoint(runtime),
                    preset,
                    first_checkpointer,
                    resume_at,
                    hand_off,
                )
                preset = first_checkpointer = resume_at = None
                resume_id = None  # a rotation successor starts a new session with the handoff
                planning = turn_task.plan
                turn_task = attrs.evolve(task, plan=planning)  # plan rounds stay in plan mode
                record = RunRecord(runtime, session_key, outcome, attempts)
                state.runs.append(record)
                if gov is not None and outcome.reason != "aborted":
                    ok = outcome.reason != "error"
                    why = "" if ok else failure_reason(outcome)
                    gov.record(runtime, task.model, ok=ok, code=outcome.error_code, reason=why)
                reason = self._rotation_reason(outcome, caps, task.watermark)
                if turn_task.plan and outcome.reason == "success" and self.review_plans:
                    turn = await self._plan_turn(
                        adapter, caps, turn_task, session_key, handle, home, outcome
                    )
                    if turn is None:
                        break
                    turn_task, handle, resume_id = turn  # the same session, on the person's word
                    lineage = {"planOf": outcome.run_key}
                    continue
                if reason is None or state.rotations >= limit:
                    turn = await self._followup_turn(
                        adapter, caps, turn_task, session_key, handle, home
                    )
                    if turn is None:
                        break
                    turn_task, handle, resume_id = turn  # the next turn, on the same session
                    lineage = {"followupOf": outcome.run_key}
                    continue
                if _spent(gov, ledger):  # no rotation past a budget
                    break
                state.rotations += 1
                next_runtime: str = rotate_to or runtime
                next_adapter = await adapter_for(next_runtime)
                next_caps = next_adapter.capabilities()
                next_plan = resolve_runtime_integration(next_caps)
                next_home: str | None = home
                if next_runtime != runtime:
                    next_home = await stack.enter_async_context(
                        self._home(next_plan, next_runtime, task.agent_id)
                    )
                next_key = f"{base_key}:r{state.rotations}"
                usage = outcome.usage or Usage()
                handoff = RotationHandoff(
                    task_id=task.task_id,
                    predecessor_session_key=session_key,
                    predecessor_session_id=handle.run_id,
                    reason=reason,
                    last_summary=_compact(outcome.text or outcome.summary)[:LAST_SUMMARY_CHARS],
                    tokens_used=usage.input_tokens + usage.output_tokens,
                    rotation_index=state.rotations,
                    context_window_tokens=caps.context_window_tokens,
                )

                async def restart(note: str) -> RunHandle:
                    state.note = note
                    opts = self._opts(task, next_key, note, next_home)  # noqa: B023
                    try:
                        return await next_adapter.start(  # noqa: B023 - awaited in this iteration
                            TaskHandle(task_id=task.task_id, team_id=task.team_id), opts
                        )
                    except Exception as exc:
                        # the successor could not start: a logged run (error + done{error}),
                        # then the error goes up as a first start failure does
                        await self._start_failed(next_adapter, next_key, next_key, exc)  # noqa: B023
                        raise

                serialized: list[str | None] = []

                async def record_rotation(rec: RotationRecord) -> None:
                    serialized.append(rec.serialized)  # noqa: B023 - awaited within this iteration
                    if self.record_rotation is not None:
                        result = self.record_rotation(rec)
                        if result is not None:
                            await result

                handle = await rotate_session(
                    adapter=adapter,
                    current=handle,
                    handoff=handoff,
                    restart=restart,
                    record_rotation=record_rotation,
                )
                if serialized:
                    state.runs[-1] = attrs.evolve(record, serialized_session=serialized[0])
                # the event log links the successor's run to its predecessor's
                lineage = {
                    "rotatedFrom": outcome.run_key,
                    "rotation": state.rotations,
                    "rotationReason": reason,
                    "handoffNoteBytes": len(state.note.encode("utf-8", "surrogatepass")),
                    "tokensUsed": handoff.tokens_used,
                    "contextWindowTokens": handoff.context_window_tokens,
                }
                adapter, caps, runtime, session_key = (
                    next_adapter,
                    next_caps,
                    next_runtime,
                    next_key,
                )
                home = next_home
        return _final(state)

    async def resume_task(
        self,
        run_key: str,
        prompt: str,
        *,
        task_id: str | None = None,
        agent_id: str = "agent",
        model: str | None = None,
        **task_fields: Any,
    ) -> TaskOutcome:
        """Continue the session recorded by run ``run_key`` with ``prompt``, on the same runtime,
        from the session's origin working directory; logged as a new run linked to the old one.

        Raises:
            ConfigError: no event log, or ``run_key`` recorded no resumable session.
        """
        log = self.event_log
        if log is None:
            raise ConfigError("resuming a run needs the runner's event log")
        runtime_id, task = await resumable_task(
            log, run_key, prompt, task_id=task_id, agent_id=agent_id, model=model, **task_fields
        )
        return await self.run_task(runtime_id, task)

    def _rotation_reason(
        self, outcome: RunOutcome, caps: Capabilities, watermark: float | None = None
    ) -> RotationReason | None:
        if outcome.reason == "max_turns":
            return "max_turns"
        if outcome.reason in ("success", "aborted"):
            return None
        if outcome.error_code in _GOVERNED:  # a budget ended it: rotating would spend more
            return None
        usage = outcome.usage or Usage()
        trigger = RotationTrigger(
            tokens_used=usage.input_tokens + usage.output_tokens,
            context_window=caps.context_window_tokens or 0,
            threshold_pct=self.rotation.threshold_pct if watermark is None else watermark,
        )
        return "context_watermark" if should_rotate(trigger) else None


async def resumable_task(
    log: RunRecorder,
    run_key: str,
    prompt: str,
    *,
    task_id: str | None = None,
    agent_id: str = "agent",
    model: str | None = None,
    **task_fields: Any,
) -> tuple[str, TaskSpec]:
    """``(runtime id, task)`` continuing the session run ``run_key`` recorded (``"last"``: the
    newest run that recorded one), from the session's origin working directory, as the identity
    it ran as (``agent_id`` only for a session recorded without one).

    Raises:
        ConfigError: no such run, or it recorded no resumable session.
    """
    if run_key == "last":
        for run in reversed(await log.runs()):
            found = await log.get_session(run.run_key)
            if found is not None and (found.codec_blob or found.native_session_id):
                run_key = run.run_key
                break
        else:
            raise ConfigError("the event log has no resumable run yet")
    session = await log.get_session(run_key)
    if session is None or not (session.codec_blob or session.native_session_id):
        raise ConfigError(
            f"run {run_key!r} recorded no resumable session (see `ringleader replay --list`)"
        )
    task = TaskSpec(
        task_id=task_id or uuid.uuid4().hex[:8],
        title=prompt,
        agent_id=session.agent_id or agent_id,
        model=model,
        cwd=session.origin_cwd,
        resume=ResumeFrom(run_key, session.codec_blob, session.native_session_id),
        **task_fields,
    )
    return session.runtime_id, task


async def recoverable_tasks(
    log: RunRecorder, prompt: str = RESUME_PROMPT
) -> list[tuple[str, TaskSpec]]:
    """``(runtime id, task)`` for every run left ``interrupted`` (its orchestrator died) that
    recorded a resumable session and that no later run resumed yet (a resume that ended in
    error does not count), oldest first: what
    :meth:`~orchestrator.engine.hosts.local.LocalHost.recover` and ``ringleader recover`` continue."""
    rows = await log.runs()
    # a resume that failed (its runtime could not go on: no key, no model) does not use up the
    # recovery: `recover` again tries again
    resumed = {
        row.outcome.get("resumedFrom") for row in rows if row.outcome and row.status != "error"
    }
    found: list[tuple[str, TaskSpec]] = []
    for row in rows:
        if row.status != "interrupted" or row.run_key in resumed:
            continue
        session = await log.get_session(row.run_key)
        if session is None or not (session.codec_blob or session.native_session_id):
            continue
        found.append(await resumable_task(log, row.run_key, prompt))
    return found


async def _check_endpoint(endpoint: str | None, runtime_id: str) -> None:
    """Fail fast when the runtime's endpoint is on this machine and nothing listens there (a
    logged run ending in error, never retried: see :mod:`orchestrator.engine.endpoints`)."""
    why = await unreachable(endpoint)
    if why is not None:
        raise RuntimeStartError(why, adapter=runtime_id)


async def _resume_point(
    adapter: RuntimeAdapter, task: TaskSpec, resume_id: str | None, home: str | None
) -> str | None:
    """The runtime's marker for the end of ``task.resume_turn`` of the resumed session (``None``
    when the task continues from the session's end).

    Raises:
        CapabilityError: the runtime cannot continue a session from an earlier turn.
        ConfigError: that turn is not in the session's transcript.
    """
    turn = task.resume_turn
    if turn is None or resume_id is None or task.resume is None:
        return None
    if not isinstance(adapter, TurnResumable):
        raise CapabilityError(
            f"runtime {adapter.id!r} cannot continue a session from an earlier turn",
            actor_id=task.resume.run_key,
        )
    index = task.resume_prompt_index
    point = await trio.to_thread.run_sync(
        lambda: adapter.resume_point(resume_id, turn, home_dir=home, prompt_index=index)
    )
    if point is None:
        raise ConfigError(
            f"run {task.resume.run_key!r}: turn {turn} of its session is not in "
            f"{adapter.id}'s transcript"
        )
    return point


async def _restore(adapter: RuntimeAdapter, resume: ResumeFrom) -> str:
    """The native session id to resume: restored through the adapter's codec (which may also
    remember the session's origin directory), else the recorded native id."""
    codec = adapter.session_codec
    if codec is not None and resume.codec_blob:
        try:
            handle = await codec.restore(resume.codec_blob)
        except Exception as exc:
            raise ConfigError(
                f"run {resume.run_key!r}: its recorded session cannot be restored by "
                f"{adapter.id}: {type(exc).__name__}: {exc}"
            ) from None
        if handle.run_id:
            return handle.run_id
    if resume.native_session_id:
        return resume.native_session_id
    raise ConfigError(f"run {resume.run_key!r} recorded no session id to resume")


_GOVERNED = frozenset({"budget_exceeded", "cost_unknown"})


def _in_workspaces(cwd: str | None, state_dir: Path) -> bool:
    """Whether ``cwd`` is inside a workspace ringleader made (``<state_dir>/workspaces/``)."""
    if cwd is None:
        return False
    try:
        Path(cwd).resolve().relative_to((state_dir / "workspaces").resolve())
    except ValueError:
        return False
    return True


async def _both(first: Awaitable[None], second: Awaitable[None]) -> None:
    await first
    await second


def _drift(outcome: RunOutcome) -> dict[str, Any]:
    """The outcome row's ``drift``: unknown frame types and frames missing expected fields."""
    drift: dict[str, Any] = {}
    if outcome.unknown_frames:
        drift["unknownFrameTypes"] = dict.fromkeys(outcome.unknown_frames, 1)
    if outcome.missing_fields:
        drift["missingFields"] = {label: list(fields) for label, fields in outcome.missing_fields}
    return {"drift": drift} if drift else {}


def _guard(
    gov: Governance | None,
    runtime_id: str,
    caps: Capabilities,
    ledger: SpendLedger | None,
    clock: Callable[[], int],
) -> RunGuard | None:
    if gov is None or ledger is None:
        return None
    return gov.guard(runtime_id, caps, ledger, clock)


def _spent(gov: Governance | None, ledger: SpendLedger | None) -> bool:
    if gov is None or ledger is None:
        return False
    return ledger.exhausted() is not None or gov.host_ledger.exhausted() is not None


def _merge(outcomes: list[TaskOutcome]) -> TaskOutcome:
    """The outcomes of one task on its successive targets as one: the last one's status, every
    run, usage and cost summed."""
    last = outcomes[-1]
    if len(outcomes) == 1:
        return last
    state = _TaskState(
        runs=[run for outcome in outcomes for run in outcome.runs],
        rotations=sum(o.rotations for o in outcomes),
    )
    return attrs.evolve(_final(state), summary=last.summary, status=last.status)


def _final(state: _TaskState) -> TaskOutcome:
    last = state.runs[-1].outcome
    total = Usage()
    usd: float | None = None
    complete = True
    for record in state.runs:
        outcome = record.outcome
        if outcome.usage is not None:
            total = total + outcome.usage
        if outcome.cost_usd is None:
            complete = False
        else:
            usd = (usd or 0.0) + outcome.cost_usd
    return TaskOutcome(
        status=last.reason,
        summary=last.summary,
        usage=total,
        cost_usd=usd,
        cost_complete=complete,
        rotations=state.rotations,
        runs=tuple(state.runs),
        error_code=last.error_code,
        error_message=last.error_message,
    )


def _compact(text: str) -> str:
    return " ".join(text.split())


def _safe(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return cleaned.strip(".") or "_"
