"""One run = one actor: it pumps its adapter's events through the idle guard into a sink, and
takes messages (abort, set_model, write_context, steer) through a mailbox.

Guarantees on top of the adapter's own contract:

* the sink sees exactly one ``done`` per run, last: a stream that ends without one (a silent
  runtime cut by the idle guard, an adapter bug) gets ``error`` + ``done{error}``, or
  ``done{aborted}`` if an abort was asked for, with ``seq`` continuing gaplessly;
* events reach the sink in batches (one sink call per burst, not per event; a producer still
  publishing frame by frame is batched too, see ``_QUIET``);
* ``steer`` is refused with :class:`~orchestrator.core.errors.CapabilityError` unless the runtime is
  ``steerable``; messages to a finished or fenced actor raise
  :class:`~orchestrator.core.errors.MailboxClosedError`;
* a fenced actor (replaced by a successor) never delivers another event to the sink;
* a connection failure the runtime reports without saying where names the runtime's endpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal, Protocol

import attrs
import trio

from orchestrator.core.adapter import STEER_KEY, Capabilities, RunHandle, RuntimeAdapter
from orchestrator.core.drift import missing_fields, unknown_frame_type
from orchestrator.core.errors import CapabilityError, MailboxClosedError
from orchestrator.core.events import (
    Cost,
    Done,
    DoneReason,
    ErrorEvent,
    EventFactory,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    Usage,
    now_ms,
)
from orchestrator.core.idle import (
    DEFAULT_RUN_SILENT_TIMEOUT_S,
    IDLE_ABORT_GRACE_S,
    IdleGuard,
    with_idle_timeout,
)
from orchestrator.core.redact import StreamRedactor
from orchestrator.engine.endpoints import name_endpoint
from orchestrator.engine.governance.budget import RunGuard

__all__ = [
    "EventSink",
    "RunActor",
    "RunOutcome",
]

_log = logging.getLogger(__name__)

_BATCH = 256
_QUIET = 2
"""Scheduler rounds without a new event after which a batch goes to the sink (trio runs a
round's tasks in random order: one round may pass before a producer that is still going)."""


class EventSink(Protocol):
    """Where a run's events go (the event log first, then subscribers)."""

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None: ...


@attrs.frozen
class RunOutcome:
    """How one run ended."""

    run_key: str
    run_id: str | None
    reason: DoneReason
    summary: str
    usage: Usage | None
    cost_usd: float | None
    error_code: str | None = None
    error_message: str | None = None
    events: int = 0
    idled: bool = False
    text: str = ""
    """The assistant text the run streamed (the handoff's "last progress" prefers it)."""
    produced_output: bool = False
    """True once the run streamed text or called a tool (a retry would redo visible work)."""
    unknown_frames: tuple[str, ...] = ()
    """Frame types the runtime sent that its adapter does not know (drift; see
    ``orchestrator.core.drift``)."""
    missing_fields: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """``(frame, fields)``: frames that came without fields their adapter expects (drift)."""


@attrs.frozen
class _Message:
    kind: Literal["abort", "set_model", "write_context"]
    key: str = ""
    value: str = ""


@attrs.define(eq=False)
class RunActor:
    """The actor of one run (see the module docstring). Drive it with :meth:`run`."""

    adapter: RuntimeAdapter
    run_handle: RunHandle
    run_key: str
    sink: EventSink
    capabilities: Capabilities
    idle_s: float = DEFAULT_RUN_SILENT_TIMEOUT_S
    grace_s: float = IDLE_ABORT_GRACE_S
    clock: Callable[[], int] = now_ms
    on_event: Callable[[RuntimeEvent], Awaitable[None] | None] | None = None
    """Called for each event before its batch goes to the sink (the runner records the session
    as soon as the runtime has told its id, so a crash right after still leaves it resumable)."""
    guard: RunGuard | None = None
    """Budgets: it sees every batch before the sink and may cut the run short (the run then
    ends ``error{budget_exceeded}`` + ``done{error}``; see :mod:`orchestrator.engine.governance`)."""
    endpoint: str | None = None
    """The runtime's model endpoint: a connection failure it reports without saying where gets
    it appended (see :mod:`orchestrator.engine.endpoints`)."""
    seq_offset: int = 0
    """Added to every event's ``seq``: the run's first events came from elsewhere (a workspace
    setup's ``status`` lines, :meth:`~orchestrator.engine.runner.Runner._setup`)."""
    fenced: bool = attrs.field(init=False, default=False)
    finished: trio.Event = attrs.field(init=False, factory=trio.Event)
    _abort_requested: bool = attrs.field(init=False, default=False)
    _send: trio.MemorySendChannel[_Message] = attrs.field(init=False)
    _receive: trio.MemoryReceiveChannel[_Message] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[_Message](64)

    # -- mailbox -------------------------------------------------------------------------------

    def _post(self, message: _Message) -> None:
        if self.finished.is_set() or self.fenced:
            raise MailboxClosedError(f"run {self.run_key} has finished", actor_id=self.run_key)
        try:
            self._send.send_nowait(message)
        except trio.WouldBlock:
            raise MailboxClosedError(
                f"mailbox of {self.run_key} is full", actor_id=self.run_key
            ) from None

    def abort(self) -> None:
        """Ask the run to stop; it ends in ``done{aborted}``. Idempotent while running."""
        if self.finished.is_set():
            return
        if not self._abort_requested:
            self._abort_requested = True
            self._post(_Message("abort"))

    def set_model(self, model: str) -> None:
        self._post(_Message("set_model", value=model))

    def write_context(self, key: str, value: str) -> None:
        self._post(_Message("write_context", key=key, value=value))

    def steer(self, text: str) -> None:
        """Inject ``text`` into the live conversation (steerable runtimes only)."""
        if not self.capabilities.steerable:
            raise CapabilityError(
                f"runtime {self.adapter.id!r} is not steerable; use the task's mailbox instead",
                actor_id=self.run_key,
            )
        self._post(_Message("write_context", key=STEER_KEY, value=text))

    def fence(self) -> None:
        """Stop delivering events: a successor has replaced this run."""
        self.fenced = True

    # -- the run ---------------------------------------------------------------------------------

    async def _serve_mailbox(self) -> None:
        async for message in self._receive:
            try:
                match message.kind:
                    case "abort":
                        await self.adapter.abort(self.run_handle)
                    case "set_model":
                        await self.adapter.set_model(self.run_handle, message.value)
                    case "write_context":
                        await self.adapter.write_context(
                            self.run_handle, message.key, message.value
                        )
            except Exception:
                _log.warning("%s: %s failed", self.run_key, message.kind, exc_info=True)

    async def run(self) -> RunOutcome:
        """Drain the run to its end; returns its outcome. The adapter must already be started."""
        seen = 0
        last_seq = self.seq_offset
        done: Done | None = None
        fatal: ErrorEvent | None = None
        cost: Cost | None = None
        text: list[str] = []
        unknown: list[str] = []
        missing: list[tuple[str, tuple[str, ...]]] = []
        produced = False
        stream = self.adapter.events(self.run_handle)

        async def on_idle() -> None:
            await self.adapter.abort(self.run_handle)

        guard = self.guard
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._serve_mailbox)
            if guard is not None and guard.wall_s is not None:
                nursery.start_soon(self._wall_clock, guard, guard.wall_s)
            # the one choke point: every event is redacted here, before the sink (the event log,
            # then subscribers) and before the outcome, runs table and handoff notes see it
            redactor = StreamRedactor()
            async with with_idle_timeout(
                stream, on_idle=on_idle, idle_s=self.idle_s, grace_s=self.grace_s
            ) as guarded:
                # one pull takes every event the stream holds (up to _BATCH): one sink call
                # per burst, and no timer for events that were already waiting
                while done is None:
                    try:
                        raw = await guarded.next_batch(_BATCH)
                    except StopAsyncIteration:
                        break
                    # a producer that is still going (one publish per frame: a CLI streaming
                    # tokens one line per read) adds to the batch while we yield: keep taking
                    # until _QUIET rounds add nothing (a burst that has ended costs two rounds,
                    # tens of µs; a steady stream goes to the log in batches, not one by one)
                    quiet = 0
                    while len(raw) < _BATCH and type(raw[-1]) is not Done and quiet < _QUIET:
                        await trio.lowlevel.cancel_shielded_checkpoint()
                        more = guarded.take_ready(_BATCH - len(raw))
                        if more:
                            raw += more
                            quiet = 0
                        else:
                            quiet += 1
                    if self.seq_offset:
                        shift = self.seq_offset
                        raw = [e.model_copy(update={"seq": e.seq + shift}) for e in raw]
                    kinds = list(map(type, raw))  # (``type() is``, not isinstance: 3× cheaper)
                    if Done in kinds:
                        raw = raw[: kinds.index(Done) + 1]  # nothing after the terminal
                    seen += len(raw)
                    last_seq = raw[-1].seq
                    endpoint = self.endpoint
                    if endpoint is not None and ErrorEvent in kinds:
                        raw = [
                            name_endpoint(e, endpoint) if type(e) is ErrorEvent else e for e in raw
                        ]
                    batch = redactor.push_all(raw)
                    if guard is not None:
                        batch = guard.screen(batch)
                    for event in batch:
                        if type(event) is TextDelta:
                            if event.channel == "assistant":
                                text.append(event.text)
                                produced = True
                        elif type(event) is ToolCall:
                            produced = True
                        elif type(event) is Cost:
                            cost = event
                        elif type(event) is ErrorEvent:
                            if event.fatal:
                                fatal = event
                        elif type(event) is Done:
                            done = event
                        elif type(event) is Status and event.detail is not None:
                            frame_type = unknown_frame_type(event.detail)  # drift: O(1)
                            if frame_type is not None:
                                unknown.append(frame_type)
                            else:
                                gap = missing_fields(event.detail)
                                if gap is not None:
                                    missing.append(gap)
                    # a run waiting for a person's approval is not silent
                    last = raw[-1]
                    guarded.paused = type(last) is Status and last.phase == "waiting_approval"
                    await self._deliver(batch)
                    if guard is not None and guard.tripped is not None and done is None:
                        await self._stop(guarded)
                        break
                idled = guarded.idled
            held = redactor.flush()  # a delta held back at a stream that ended without done
            for event in held:
                if isinstance(event, TextDelta) and event.channel == "assistant":
                    text.append(event.text)
                    produced = True
            await self._deliver(held)
            if done is None:
                if guard is not None and guard.tripped is not None:
                    last_seq = max([guard.last_seq, *(e.seq for e in held)])
                done, fatal = await self._synthesize_terminal(last_seq, text, idled, fatal)
            self.finished.set()
            self._send.close()
            nursery.cancel_scope.cancel()
        usage = done.usage if done.usage is not None else (cost.usage if cost else None)
        cost_usd = done.cost_usd if done.cost_usd is not None else (cost.cost_usd if cost else None)
        return RunOutcome(
            run_key=self.run_key,
            run_id=self.run_handle.run_id,
            reason=done.reason,
            summary=done.summary or "".join(text),
            usage=usage,
            cost_usd=cost_usd,
            error_code=fatal.code if fatal else None,
            error_message=fatal.message if fatal else None,
            events=seen,
            idled=idled,
            produced_output=produced,
            text="".join(text),
            unknown_frames=tuple(dict.fromkeys(unknown)),
            missing_fields=tuple(dict.fromkeys(missing)),
        )

    async def _wall_clock(self, guard: RunGuard, wall_s: float) -> None:
        await trio.sleep(wall_s)
        guard.trip_wall()
        await self.adapter.abort(self.run_handle)

    async def _stop(self, guarded: IdleGuard[RuntimeEvent]) -> None:
        """A budget tripped: abort the run, and drain what the runtime still sends (dropped)
        for at most the abort grace, so its process is gone before the run's terminal."""
        try:
            await self.adapter.abort(self.run_handle)
        except Exception:
            _log.warning("%s: abort after a budget trip failed", self.run_key, exc_info=True)
        with trio.move_on_after(self.grace_s):
            while True:
                try:
                    rest = await guarded.next_batch(_BATCH)
                except StopAsyncIteration:
                    break
                if any(isinstance(e, Done) for e in rest):
                    break

    async def _deliver(self, batch: list[RuntimeEvent]) -> None:
        if self.fenced or not batch:
            return
        if self.on_event is not None:
            for event in batch:
                result = self.on_event(event)
                if result is not None:
                    await result
        await self.sink.deliver(self.run_key, batch)

    async def _synthesize_terminal(
        self, last_seq: int, text: list[str], idled: bool, fatal: ErrorEvent | None
    ) -> tuple[Done, ErrorEvent | None]:
        make = EventFactory(
            run_id=self.run_handle.run_id or self.run_key,
            session_id=self.run_handle.session_key,
            clock=self.clock,
            seq=last_seq,
        )
        summary = "".join(text)
        trip = self.guard.tripped if self.guard is not None else None
        if trip is not None:
            assert self.guard is not None
            make.open_tool_calls = dict(self.guard.open_tool_calls)
            events: list[RuntimeEvent] = []
            if trip.resets_at_ms is not None:  # a rate limit that says when it resets
                detail = f"resets at {trip.resets_at_ms // 1000}"
                events.append(make.rate_limited(detail, trip.resets_at_ms))
            events += make.fail(trip.message, code=trip.code, summary=summary or trip.message)
            fatal = next((e for e in events if isinstance(e, ErrorEvent)), fatal)
        elif self._abort_requested:
            events = make.finish("aborted", summary)
        else:
            if idled:
                message = f"runtime silent for {self.idle_s:g}s; run ended by the idle guard"
                code = "runtime_silent"
            else:
                message = "the runtime's event stream ended without a done event"
                code = "stream_ended"
            events = make.fail(message, code=code, summary=summary or message)
            fatal = next((e for e in events if isinstance(e, ErrorEvent)), fatal)
        await self._deliver(list(events))
        done = events[-1]
        assert isinstance(done, Done)
        return done, fatal
