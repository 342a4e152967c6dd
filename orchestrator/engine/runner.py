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
* persistent homes live under ``<state_dir>/homes/<runtime>/<agent>`` (mode 0700) and runs that
  share one are serialized; ephemeral homes live under ``<state_dir>/runs/`` (not ``/tmp``: Codex
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
    RunHandle,
    RuntimeAdapter,
    StartOpts,
    TaskHandle,
)
from orchestrator.core.approvals import APPROVALS_DB
from orchestrator.core.errors import (
    ConfigError,
    RingleaderError,
    RuntimeStartError,
    redact_secrets,
    single_exception,
)
from orchestrator.core.events import (
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
from orchestrator.core.lifetime import ProcessRegistry, current_process_registry, ensure_private_dir
from orchestrator.core.redact import register_env_secrets
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.actor import EventSink, RunActor, RunOutcome
from orchestrator.engine.endpoints import unreachable
from orchestrator.engine.eventlog import RunRecorder
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
from orchestrator.engine.supervisor import RestartPolicy, RetryListener, Supervisor, failure_reason
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
"""The message that continues a session parked at a rate limit."""


def default_state_dir() -> Path:
    """``$RINGLEADER_STATE_DIR``, else ``$XDG_STATE_HOME/ringleader``, else ``~/.local/state/ringleader``."""
    explicit = os.environ.get("RINGLEADER_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "ringleader"


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
    setup: str | None = None
    """A workspace setup script (``[workspace] setup``) run with ``sh -c`` in ``cwd`` before
    the agent starts; its output lines are the run's first ``status`` events, and a failure
    ends the run ``error{setup_failed}`` + ``done{error}`` with no agent started. Not run
    when the task resumes a session."""
    setup_timeout_s: float = 300.0


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
    on_retry: RetryListener | None = None
    """Told before the supervisor retries a run (``attempt 2/4: <reason>``)."""
    event_log: RunRecorder | None = None
    """Where runs and resumable sessions are recorded (events go through ``sink``)."""
    governance: Governance | None = None
    """Budgets, estimates and breakers (shared by this runner's copies: one host ledger)."""
    approvals: bool = False
    """Tool calls that need approval wait for a person in the state directory's
    :class:`~orchestrator.core.approvals.ApprovalBook` (else they are denied)."""
    checkpoints: bool = False
    """After every turn that changed files in a run's working directory, when that is a git
    worktree ringleader made (under ``<state_dir>/workspaces/``), record the state on
    ``refs/ringleader/checkpoints/<run>/<n>`` (see
    :mod:`orchestrator.engine.reviewloop.checkpoints`). A run in the person's own checkout is
    left alone."""
    versions: dict[str, str | None] = attrs.field(factory=dict[str, str | None], repr=False)
    """Each runtime's installed version, looked up once (shared by this runner's copies)."""
    home_locks: dict[str, trio.Lock] = attrs.field(factory=dict[str, trio.Lock], repr=False)
    """One lock per persistent home: runs sharing a home are serialized. Copies of this runner
    (``attrs.evolve``, as :class:`~orchestrator.engine.hosts.local.LocalHost` makes per task) share
    the table, so the serialization holds across all of a host's tasks."""

    # -- homes -------------------------------------------------------------------------------

    @asynccontextmanager
    async def _home(
        self, plan: RuntimeIntegrationPlan, runtime_id: str, agent_id: str
    ) -> AsyncGenerator[str | None]:
        kind = plan.home.kind
        if kind == "connected":
            yield None
            return
        if kind == "persistent":
            path = self.state_dir / "homes" / _safe(runtime_id) / _safe(agent_id)
            lock = self.home_locks.setdefault(str(path), trio.Lock())
            async with lock:
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

    # -- prompt ------------------------------------------------------------------------------

    def _opts(
        self,
        task: TaskSpec,
        session_key: str,
        note: str,
        home: str | None,
        resume_id: str | None = None,
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
            cache_breakpoints=tuple(bp.offset for bp in prompt.cache_breakpoints),
            approvals_db=str(self.state_dir / APPROVALS_DB) if self.approvals else None,
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
    ) -> tuple[RunOutcome, int, RunHandle]:
        current = first
        gov = self.governance
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

        supervisor = Supervisor(self.restart, on_retry=self.on_retry, park=park)

        async def attempt(n: int) -> RunOutcome:
            nonlocal current
            retry_checkpointer: Checkpointer | None = None
            if n > 0:
                if continue_from:  # parked at a rate limit: continue its session
                    resumed = attrs.evolve(task, title=CONTINUE_PROMPT, description="")
                    opts = self._opts(resumed, f"{session_key}:a{n}", note, home, continue_from[0])
                    continue_from.clear()
                else:
                    opts = self._opts(task, f"{session_key}:a{n}", note, home, resume_id)
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
            run_key = f"{current.session_key}:run-{uuid.uuid4().hex[:8]}"
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

            def on_event(event: RuntimeEvent) -> Awaitable[None] | None:
                first = record_session_once(event)
                second = checkpointer.observe(event, handle.run_id) if checkpointer else None
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
                on_event=(record_session_once if checkpointer is None else on_event)
                if log is not None or checkpointer is not None
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
                outcome = await actor.run()
            finally:
                actor.fence()
            if log is not None:
                await self._record(log, adapter, current, outcome, task, run_key, lineage)
            return outcome

        outcome = await supervisor.supervise(attempt)
        return outcome, supervisor.attempts, current

    async def _start_failed(
        self,
        adapter: RuntimeAdapter | str,
        run_session_key: str,
        session_key: str,
        exc: Exception,
    ) -> RunOutcome:
        """Record a run that could not start (binary missing, argv too long, spawn refused, a
        budget spent, a breaker open, …) as a logged run: ``error{fatal}`` + ``done{error}``
        through the sink, and its runs row. ``adapter``: the adapter, or the runtime id."""
        adapter_id = adapter if isinstance(adapter, str) else adapter.id
        run_key = f"{run_session_key}:run-{uuid.uuid4().hex[:8]}"
        code = exc.event_code if isinstance(exc, RingleaderError) else "runtime_start_failed"
        message = redact_secrets(f"{adapter_id} could not start: {exc}")
        make = EventFactory(run_id="", session_id=run_session_key, clock=self.clock)
        log = self.event_log
        if log is not None:
            await log.start_run(run_key, runtime_id=adapter_id, session_key=session_key)
        events = make.fail(message, code=code)
        await self.sink.deliver(run_key, events)
        outcome = RunOutcome(
            run_key=run_key,
            run_id=None,
            reason="error",
            summary=message,
            usage=None,
            cost_usd=None,
            error_code=code,
            error_message=message,
            events=len(events),
        )
        if log is not None:
            await log.finish_run(
                run_key,
                status="error",
                outcome={"reason": "error", "summary": message, "errorCode": code, "runId": None},
            )
        return outcome

    async def _checkpointer(self, task: TaskSpec) -> Checkpointer | None:
        """A checkpoint recorder for a run of ``task`` that is about to start (``None`` unless
        :attr:`checkpoints` is on and the task works in one of ringleader's git worktrees)."""
        if not self.checkpoints or not _in_workspaces(task.cwd, self.state_dir):
            await trio.lowlevel.checkpoint()
            return None
        return await Checkpointer.before_start(task.cwd, clock=self.clock)

    async def _setup(
        self, adapter_id: str, task: TaskSpec, session_key: str
    ) -> tuple[str, int] | RunOutcome:
        """Run the task's workspace setup script before its agent starts. Its output lines are
        the first ``status`` events of the task's first run (live, through the sink); returns
        that run's key and how many events it already has, or — the script failed — the
        outcome of the run it ended (``error{setup_failed}`` + ``done{error}``)."""
        assert task.setup is not None
        run_key = f"{session_key}:run-{uuid.uuid4().hex[:8]}"
        make = EventFactory(run_id="", session_id=session_key, clock=self.clock)
        log = self.event_log
        if log is not None:
            await log.start_run(run_key, runtime_id=adapter_id, session_key=session_key)
        sent = 0
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
        message = redact_secrets(result.describe("setup", task.setup_timeout_s))
        code = SetupFailedError.event_code
        events = make.fail(message, code=code)
        await self.sink.deliver(run_key, events)
        outcome = RunOutcome(
            run_key=run_key,
            run_id=None,
            reason="error",
            summary=message,
            usage=None,
            cost_usd=None,
            error_code=code,
            error_message=message,
            events=sent + len(events),
        )
        if log is not None:
            await log.finish_run(
                run_key,
                status="error",
                outcome={
                    "reason": "error",
                    "summary": message,
                    "errorCode": code,
                    "runId": None,
                    "title": task.title,
                },
            )
        return outcome

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
            return await self._run_task(runtime_id, task, rotate_to, max_rotations)
        except BaseExceptionGroup as group:
            leaf = single_exception(group)
            if leaf is not None:
                raise leaf from group
            raise
        finally:
            current_process_registry.reset(token)

    async def _run_task(
        self,
        runtime_id: str,
        task: TaskSpec,
        rotate_to: str | None,
        max_rotations: int | None,
    ) -> TaskOutcome:
        limit = self.rotation.max_rotations if max_rotations is None else max_rotations
        # keys configured by environment variable (ours or the task's) are redacted by value
        register_env_secrets(os.environ)
        register_env_secrets(task.env)
        # … and so are the secrets of the files a workspace was given (.env, .worktreeinclude)
        await trio.to_thread.run_sync(register_workspace_secrets, task.cwd)
        state_dir = self.state_dir
        await trio.to_thread.run_sync(lambda: ensure_private_dir(state_dir, tighten=True))
        rotate_to = rotate_to or task.rotate_to or self.rotate_to
        state = _TaskState()
        lineage: dict[str, Any] | None = None
        base_key = f"runtime:{runtime_id}:task:{task.task_id}"
        runtime = runtime_id
        gov = self.governance
        ledger = gov.task_ledger() if gov is not None else None
        if gov is not None:
            try:
                runtime = gov.admit(runtime_id, task.model)
            except RingleaderError as exc:  # its breaker is open and no fallback may start
                failed = await self._start_failed(runtime_id, base_key, base_key, exc)
                state.runs.append(RunRecord(runtime_id, base_key, failed, 1))
                return _final(state)
        async with AsyncExitStack() as stack:
            adapters: dict[str, RuntimeAdapter] = {}

            async def adapter_for(rid: str) -> RuntimeAdapter:
                if rid not in adapters:
                    adapters[rid] = await stack.enter_async_context(self.registry.create(rid))
                return adapters[rid]

            adapter = await adapter_for(runtime)
            caps = adapter.capabilities()
            session_key = base_key
            plan = resolve_runtime_integration(caps)
            home_cm = self._home(plan, runtime, task.agent_id)
            home = await stack.enter_async_context(home_cm)
            resume_id = await _restore(adapter, task.resume) if task.resume else None
            preset: tuple[str, int] | None = None
            if task.setup and task.resume is None:
                set_up = await self._setup(adapter.id, task, session_key)
                if isinstance(set_up, RunOutcome):  # it failed: no agent starts
                    state.runs.append(RunRecord(runtime, session_key, set_up, 1))
                    return _final(state)
                preset = set_up
            first_checkpointer = await self._checkpointer(task)
            try:
                if gov is not None and ledger is not None:
                    gov.check_start(runtime, caps, task.model, ledger)
                await _check_endpoint(self.registry.endpoint(runtime), runtime)
                handle = await adapter.start(
                    TaskHandle(task_id=task.task_id, team_id=task.team_id),
                    self._opts(task, session_key, "", home, resume_id),
                )
            except Exception as exc:
                # a start failure is a logged run ending in error, not an exception with no trace
                failed = await self._start_failed(adapter, session_key, session_key, exc)
                if gov is not None:
                    gov.record(runtime, task.model, ok=False, code=failed.error_code, reason="")
                if isinstance(exc, ConfigError):
                    raise  # the caller's own bad input: a typed error (and now in the log too)
                state.runs.append(RunRecord(runtime, session_key, failed, 1))
                return _final(state)
            while True:
                outcome, attempts, handle = await self._supervised_run(
                    adapter,
                    caps,
                    task,
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
                )
                preset = first_checkpointer = None
                resume_id = None  # a rotation successor starts a new session with the handoff
                record = RunRecord(runtime, session_key, outcome, attempts)
                state.runs.append(record)
                if gov is not None and outcome.reason != "aborted":
                    ok = outcome.reason != "error"
                    why = "" if ok else failure_reason(outcome)
                    gov.record(runtime, task.model, ok=ok, code=outcome.error_code, reason=why)
                reason = self._rotation_reason(outcome, caps, task.watermark)
                if reason is None or state.rotations >= limit:
                    break
                if _spent(gov, ledger):  # no rotation past a budget
                    break
                state.rotations += 1
                next_runtime = rotate_to or runtime
                next_adapter = await adapter_for(next_runtime)
                next_caps = next_adapter.capabilities()
                next_plan = resolve_runtime_integration(next_caps)
                next_home = home
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
                adapter, caps, runtime, session_key, home = (
                    next_adapter,
                    next_caps,
                    next_runtime,
                    next_key,
                    next_home,
                )
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
    recorded a resumable session and that no later run resumed yet, oldest first: what
    :meth:`~orchestrator.engine.hosts.local.LocalHost.recover` and ``ringleader recover`` continue."""
    rows = await log.runs()
    resumed = {row.outcome.get("resumedFrom") for row in rows if row.outcome}
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
