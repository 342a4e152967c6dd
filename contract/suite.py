"""The adapter contract suite: subclass :class:`AdapterContract`, provide a ``harness`` fixture.

::

    from contract import AdapterContract

    class TestMyAdapter(AdapterContract):
        @pytest.fixture
        def harness(self) -> MyHarness:
            return MyHarness()

Every test is a plain (synchronous) pytest test that runs its body under :func:`trio.run`, so the
suite works in any project, with or without pytest-trio. Every failure is a
:class:`~contract.invariants.ContractViolation` whose ``check`` names the rule that broke; an
exception raised inside the adapter (a ``ValueError``, a ``ProcessLookupError``, an exception
group) comes out as a violation of the rule the test was checking, with the original as its
``__cause__``.

Adapters that drive a child process also give their harness ``child_pids(run)`` (the suite then
checks, at each ``done``, that the run's children are gone and reaped) and subclass
:class:`ProcessFaultContract` with a ``fault_harness`` fixture (see
:class:`~contract.harness.ProcessFaultHarness`).

Hypothesis keeps its example database in a temporary directory (removed at exit), never in the
project's working directory.
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Generator, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any, ClassVar, cast

import pytest
import trio
import trio.lowlevel
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import configuration as hypothesis_configuration
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from orchestrator.core.adapter import (
    HEALTH_TIMEOUT_S,
    Capabilities,
    EventStream,
    HealthResult,
    RunHandle,
    RuntimeAdapter,
)
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import (
    Cost,
    Done,
    ErrorEvent,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
)

from .fake_cli import clear_grandchild_records, grandchild_pids, hang_switch
from .harness import AdapterTestHarness, ProcessFaultHarness
from .invariants import ContractViolation, check_stream, violation

__all__ = ["AdapterContract", "ProcessFaultContract", "collect_run"]

Body = Callable[[RuntimeAdapter], Awaitable[None]]

LATE_SUBSCRIBE_CLOSE_S = 1.0
"""After ``done``, a new ``events(run)`` subscription must end within this many seconds."""

_HYPOTHESIS_DIR = tempfile.mkdtemp(prefix="ringleader-contract-hypothesis-")
atexit.register(shutil.rmtree, _HYPOTHESIS_DIR, True)
_HYPOTHESIS_DB = DirectoryBasedExampleDatabase(os.path.join(_HYPOTHESIS_DIR, "examples"))


@contextmanager
def _hypothesis_home() -> Generator[None]:
    """Point hypothesis's own storage (its constants cache) at the temporary directory while the
    suite's generated test runs, so nothing lands in the author's working directory; an explicit
    ``HYPOTHESIS_STORAGE_DIRECTORY`` is respected, and the previous home is restored."""
    if os.getenv("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    previous = vars(hypothesis_configuration).get("__hypothesis_home_directory")
    hypothesis_configuration.set_hypothesis_home_dir(_HYPOTHESIS_DIR)
    try:
        yield
    finally:
        hypothesis_configuration.set_hypothesis_home_dir(previous)


async def collect_run(
    stream: EventStream, *, deadline_s: float, cap: int = 500
) -> list[RuntimeEvent]:
    """Collect until ``done`` (then require the stream to close by itself), the end, or ``cap``.

    Raises a ``ContractViolation`` if the stream does not finish within ``deadline_s``
    (``finishes-in-time``), stays open after ``done`` (``stream-closes``) or delivers an event
    after it (``done-last``).
    """
    events: list[RuntimeEvent] = []
    try:
        with trio.fail_after(deadline_s):
            async for event in stream:
                events.append(event)
                if isinstance(event, Done) or len(events) >= cap:
                    break
    except trio.TooSlowError:
        await stream.aclose()
        raise violation(
            "finishes-in-time",
            f"no done within {deadline_s}s; got [{', '.join(e.kind for e in events)}]",
        ) from None
    if events and isinstance(events[-1], Done):
        try:
            with trio.fail_after(1.0):
                extra = await anext(aiter(stream), None)
        except trio.TooSlowError:
            await stream.aclose()
            raise violation("stream-closes", "a one-shot stream stayed open after done") from None
        if extra is not None:
            await stream.aclose()
            raise violation("done-last", f"event {extra.kind} delivered after done")
    await stream.aclose()
    return events


# ------------------------------------------------------------------------------ running a body


def _run(body: Callable[[], Awaitable[None]], rule: str) -> None:
    """Run ``body`` under trio; whatever escapes comes out as a :class:`ContractViolation`.

    A violation (even inside exception groups) is raised as it is; any other exception becomes a
    violation of ``rule`` (the rule the test checks) with the original as its cause.
    """
    try:
        trio.run(body)
    except ContractViolation:
        raise
    except BaseExceptionGroup as group:
        found = _first_violation(group)
        if found is not None:
            raise found from group
        leaf = _single_leaf(group)
        if not isinstance(leaf, Exception):
            raise
        raise violation(rule, f"the adapter raised {_describe(leaf)}") from leaf
    except trio.TooSlowError as exc:
        raise violation(rule, "a step of the test did not finish in time") from exc
    except Exception as exc:
        raise violation(rule, f"the adapter raised {_describe(exc)}") from exc


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in cast(tuple[BaseException, ...], error.exceptions):  # pyright: ignore[reportUnknownMemberType]
            yield from _leaves(inner)
    else:
        yield error


def _first_violation(error: BaseException) -> ContractViolation | None:
    return next((e for e in _leaves(error) if isinstance(e, ContractViolation)), None)


def _single_leaf(error: BaseException) -> BaseException:
    current: BaseException = error
    while isinstance(current, BaseExceptionGroup):
        inner = cast(tuple[BaseException, ...], current.exceptions)  # pyright: ignore[reportUnknownMemberType]
        if len(inner) != 1:
            break
        current = inner[0]
    return cast(BaseException, current)  # pyright: ignore[reportUnknownVariableType]


@contextmanager
def _within(seconds: float, rule: str, what: str) -> Generator[None]:
    """``trio.fail_after`` whose timeout is a violation of ``rule``."""
    try:
        with trio.fail_after(seconds):
            yield
    except trio.TooSlowError:
        raise violation(rule, f"{what} took longer than {seconds}s") from None


# ------------------------------------------------------------------------------ processes


def _proc_state(pid: int) -> str | None:
    """``None`` if ``pid`` is gone (reaped), else its state letter (``Z``: a zombie; ``?``:
    alive, state unknown)."""
    try:
        os.kill(pid, 0)
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return "?"
    fields = stat[stat.rfind(b")") + 2 :].split(b" ", 1)
    return fields[0].decode("ascii", "replace") if fields and fields[0] else "?"


async def check_children_gone(
    pids: Sequence[int],
    *,
    grace_s: float,
    when: str,
    grandchildren: Sequence[int] = (),
) -> None:
    """Wait up to ``grace_s`` for every process in ``pids`` to be gone *and reaped*, and every
    grandchild to be gone (a grandchild's zombie is its new parent's business).

    Raises ``no-orphans`` for one still running, ``no-zombies`` for a child that exited but was
    never reaped (waited for) by the adapter.
    """
    deadline = trio.current_time() + grace_s
    delay = 0.005
    while True:
        running = [p for p in pids if _proc_state(p) is not None]
        running += [g for g in grandchildren if _proc_state(g) not in (None, "Z", "X")]
        if not running or trio.current_time() >= deadline:
            break
        await trio.sleep(delay)
        delay = min(delay * 2, 0.05)
    for pid in running:
        state = _proc_state(pid)
        if state is None:
            continue
        kind = "grandchild" if pid in grandchildren else "child"
        if state == "Z" and kind == "child":
            raise violation(
                "no-zombies",
                f"child {pid} exited but was never reaped {grace_s}s after {when} "
                "(the adapter must wait for its child before or right after done)",
            )
        if state not in ("Z", "X"):
            raise violation(
                "no-orphans", f"{kind} {pid} still running {grace_s}s after {when} (state {state})"
            )


def _done_label(events: Sequence[RuntimeEvent]) -> str:
    last = events[-1] if events else None
    return f"done{{{last.reason}}}" if isinstance(last, Done) else "the end of the stream"


class AdapterContract:
    """The contract every adapter keeps. Subclass it and override the ``harness`` fixture.

    The harness protocol is :class:`~contract.harness.AdapterTestHarness`; two of its members
    matter beyond frames:

    * ``child_pids(run)`` — for adapters that start child processes: the pids serving only this
      run. At every ``done`` the suite waits up to :attr:`reap_grace_s` for each to be gone and
      reaped (``no-orphans``: still running; ``no-zombies``: exited but never waited for).
    * ``make_hung_adapter()`` — an adapter whose runtime never answers, for the hung-runtime
      health check; return ``None`` to declare that the adapter has no external runtime that can
      hang (the check is then skipped, with that reason). Harnesses with ``child_pids`` may leave
      it out: the default hangs every fake CLI (:func:`contract.fake_cli.hang_switch`) while
      ``health()`` runs on a normal adapter. A harness with neither fails ``harness-protocol``.

    A second ``events(run)`` after ``done`` is allowed and must end (close) within
    :data:`LATE_SUBSCRIBE_CLOSE_S` (1 s), carrying no second terminal.
    """

    deadline_s: ClassVar[float] = 15.0
    """How long one run may take to reach ``done`` in these tests."""
    abort_deadline_s: ClassVar[float] = 10.0
    """How long ``abort`` may take to surface ``done{aborted}``."""
    reap_grace_s: ClassVar[float] = 2.0
    """How long after ``done`` a run's child processes may take to be gone and reaped."""
    generated_examples: ClassVar[int] = 25
    """How many frame sequences the generated test tries."""
    generated_shrink: ClassVar[bool] = True
    """Shrink a failing generated sequence to a minimal one (slower, clearer report)."""
    _harness: Any = None
    open_call_terminals: ClassVar[tuple[str, ...]] = ("final", "error", "aborted")
    """Terminals the runtime can reach with a tool call still open. An in-process loop that waits
    for its tools can only be aborted then: such an adapter narrows this to ``("aborted",)``."""

    @pytest.fixture
    def harness(self) -> AdapterTestHarness:
        pytest.fail("override the `harness` fixture in your AdapterContract subclass")

    # -- helpers -------------------------------------------------------------------------------

    def run_with(
        self, harness: AdapterTestHarness, body: Body, rule: str = "adapter-raised"
    ) -> None:
        """Run ``body`` with a fresh, entered adapter; anything raised is a violation of
        ``rule``."""

        async def main() -> None:
            adapter = harness.make_adapter()
            self._harness = harness
            async with adapter:
                await body(adapter)

        _run(main, rule)

    async def _collect(
        self, stream: EventStream, run: RunHandle, *, deadline_s: float | None = None
    ) -> list[RuntimeEvent]:
        """Collect to ``done``, then check the run's children are gone (before any close)."""
        events = await collect_run(stream, deadline_s=deadline_s or self.deadline_s)
        await self._check_run_children(run, events)
        return events

    async def _check_run_children(self, run: RunHandle, events: list[RuntimeEvent]) -> None:
        child_pids = getattr(self._harness, "child_pids", None)
        if child_pids is None or not events or not isinstance(events[-1], Done):
            return
        pids = [int(p) for p in child_pids(run)]
        await check_children_gone(pids, grace_s=self.reap_grace_s, when=_done_label(events))

    async def _terminal(
        self, harness: AdapterTestHarness, adapter: RuntimeAdapter, run: RunHandle, terminal: str
    ) -> None:
        """Drive ``run`` to ``terminal``: a final frame, an error frame, or abort()."""
        frames = harness.frames
        if terminal == "final":
            await harness.emit(frames.final("finished"), run)
        elif terminal == "error":
            await harness.emit(frames.error("generated failure"), run)
        else:
            with _within(self.abort_deadline_s, "abort-in-time", "abort()"):
                await adapter.abort(run)
            await harness.emit(frames.aborted(), run)

    # -- the original executor's nine tests --------------------------------------------------------------

    def test_stable_id_and_participant_kind(self, harness: AdapterTestHarness) -> None:
        adapter = harness.make_adapter()
        adapter_id = cast(object, adapter.id)
        if not isinstance(adapter_id, str) or not adapter_id:
            raise violation("identity", f"id must be a non-empty string, got {adapter.id!r}")
        if adapter.participant_kind not in ("agent", "human"):
            raise violation("identity", f"participant_kind {adapter.participant_kind!r}")
        if harness.make_adapter().id != adapter.id:
            raise violation("identity", "id differs between two adapters of the same harness")

    def test_capabilities_well_formed(self, harness: AdapterTestHarness) -> None:
        adapter = harness.make_adapter()  # not entered: capabilities() must need nothing running
        try:
            caps = cast(object, adapter.capabilities())
            if not isinstance(caps, Capabilities):
                raise violation("capabilities", f"capabilities() returned {type(caps).__name__}")
            if caps != adapter.capabilities():
                raise violation("capabilities", "capabilities() is not stable between calls")
            if caps.context_window_tokens is not None and caps.context_window_tokens < 0:
                raise violation("capabilities", "negative context window")
            Capabilities.model_validate_json(caps.model_dump_json())
        except ContractViolation:
            raise
        except Exception as exc:
            raise violation("capabilities", f"capabilities() raised {_describe(exc)}") from exc

    def test_health_within_2s(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            began = trio.current_time()
            with trio.move_on_after(HEALTH_TIMEOUT_S + 0.5):
                result = cast(object, await adapter.health())
                if not isinstance(result, HealthResult):
                    raise violation("health", f"health() returned {type(result).__name__}")
                if trio.current_time() - began > HEALTH_TIMEOUT_S:
                    raise violation("health", "health() took longer than 2 s")
                return
            raise violation("health", "health() did not answer within 2 s")

        self.run_with(harness, body, "health")

    def test_start_returns_unbound_handle(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            if run.adapter_id != adapter.id:
                raise violation("start-handle", f"adapter_id {run.adapter_id!r} != {adapter.id!r}")
            if run.run_id is not None:
                raise violation(
                    "run-id-late", f"start() bound run_id {run.run_id!r}; it must be None"
                )
            if not run.session_key:
                raise violation("start-handle", "empty session key")
            await adapter.abort(run)

        self.run_with(harness, body, "start-handle")

    def test_round_trip_ends_in_done_success(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("hello"), run)
            await harness.emit(harness.frames.final("hello world"), run)
            events = await self._collect(stream, run)
            check_stream(events)
            if not any(isinstance(e, TextDelta) and "hello" in e.text for e in events):
                raise violation("text-delta", "the delta 'hello' never arrived as text-delta")
            last = events[-1]
            if not (isinstance(last, Done) and last.reason == "success"):
                raise violation("done-reason", f"expected done{{success}}, got {last!r}")

        self.run_with(harness, body, "round-trip")

    def test_binds_run_id_late(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            if run.run_id is not None:
                raise violation("run-id-late", "run_id bound at start()")
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("x"), run)
            with _within(self.deadline_s, "finishes-in-time", "the first event"):
                first = await anext(aiter(stream))
            if run.run_id is None:
                raise violation("run-id-late", "run_id still None after the first event")
            if first.run_id != run.run_id:
                raise violation(
                    "run-id-bound", f"event run id {first.run_id!r} != handle {run.run_id!r}"
                )
            await stream.aclose()
            await adapter.abort(run)

        self.run_with(harness, body, "run-id-late")

    def test_abort_has_side_effect_and_ends_aborted(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("partial"), run)
            await trio.lowlevel.checkpoint()
            await self._terminal(harness, adapter, run, "aborted")
            events = await self._collect(stream, run, deadline_s=self.abort_deadline_s)
            self._check_aborted(events)
            if not any("abort" in c.method.lower() for c in harness.recorded_calls()):
                raise violation("abort-side-effect", "abort() issued no recorded abort call")

        self.run_with(harness, body, "abort-ends-aborted")

    def test_set_model_has_side_effect(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            await adapter.set_model(run, "contract-model-x")
            if not any(
                "contract-model-x" in json.dumps(c.params, default=str)
                for c in harness.recorded_calls()
            ):
                raise violation("set-model-side-effect", "set_model() left no recorded call")
            await adapter.abort(run)

        self.run_with(harness, body, "set-model-side-effect")

    def test_write_context_has_side_effect(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            await adapter.write_context(run, "NOTES.md", "contract-context-y")
            if not any(
                "contract-context-y" in json.dumps(c.params, default=str)
                for c in harness.recorded_calls()
            ):
                raise violation(
                    "write-context-side-effect", "write_context() left no recorded call"
                )
            await adapter.abort(run)

        self.run_with(harness, body, "write-context-side-effect")

    # -- what the original executor never checks -----------------------------------------------------

    def test_write_context_confined_to_workspace(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            for key in ("../escape.md", "/etc/escape.md", "a/../../escape.md"):
                try:
                    await adapter.write_context(run, key, "nope")
                except ConfigError:
                    continue
                raise violation("write-context-confined", f"key {key!r} was accepted")
            await adapter.abort(run)

        self.run_with(harness, body, "write-context-confined")

    def test_tool_call_closed_by_result_with_same_id(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            frames = harness.frames
            await harness.emit(frames.tool_call("Bash", {"command": "ls"}, "tc-1"), run)
            await harness.emit(frames.tool_result("tc-1", "Bash", "a.txt\nb.txt"), run)
            await harness.emit(frames.final("listed"), run)
            events = await self._collect(stream, run)
            check_stream(events)
            calls = [e for e in events if isinstance(e, ToolCall)]
            results = [e for e in events if isinstance(e, ToolResult)]
            if not calls or calls[0].name != "Bash" or calls[0].input != {"command": "ls"}:
                raise violation(
                    "tool-call", f"expected tool-call Bash {{command: ls}}, got {calls}"
                )
            if not results or results[0].tool_call_id != calls[0].tool_call_id:
                raise violation("tool-call-closed", "tool-result does not carry the call's id")
            if "a.txt" not in results[0].output or results[0].is_error:
                raise violation("tool-result", f"tool output lost: {results[0]!r}")

        self.run_with(harness, body, "tool-call-closed")

    def test_open_tool_call_closed_at_terminal(self, harness: AdapterTestHarness) -> None:
        """A run that ends, fails or is aborted with a tool call open closes it with a stand-in
        ``tool-result{is_error}`` before ``done``."""
        for terminal in self.open_call_terminals:

            async def body(adapter: RuntimeAdapter, terminal: str = terminal) -> None:
                run = await harness.start(adapter)
                stream = adapter.events(run)
                frames = harness.frames
                await harness.emit(frames.tool_call("Bash", {"command": "sleep 9"}, "tc-open"), run)
                seen: list[RuntimeEvent] = []
                with _within(self.deadline_s, "tool-call", "the tool call's event"):
                    async for event in stream:
                        seen.append(event)
                        if isinstance(event, ToolCall | Done):
                            break
                if not any(isinstance(e, ToolCall) and e.tool_call_id == "tc-open" for e in seen):
                    raise violation("tool-call", f"expected tool-call tc-open, got {seen}")
                await self._terminal(harness, adapter, run, terminal)
                events = seen + await self._collect(stream, run)
                check_stream(events)
                stand_in = [
                    e for e in events if isinstance(e, ToolResult) and e.tool_call_id == "tc-open"
                ]
                if not stand_in or not stand_in[0].is_error:
                    raise violation(
                        "tool-call-closed",
                        f"a tool call open at {terminal} was not closed by a tool-result{{is_error}}",
                    )
                self._check_reason(events, terminal)

            self.run_with(harness, body, "tool-call-closed")

    def test_error_is_fatal_error_then_done_error(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("working"), run)
            await harness.emit(harness.frames.error("model exploded"), run)
            events = await self._collect(stream, run)
            check_stream(events)
            errors = [e for e in events if isinstance(e, ErrorEvent)]
            if not errors or not errors[-1].fatal or "model exploded" not in errors[-1].message:
                raise violation(
                    "error-then-done", f"expected a fatal error with the message, got {errors}"
                )
            last = events[-1]
            if not (isinstance(last, Done) and last.reason == "error"):
                raise violation("error-then-done", f"expected done{{error}} last, got {last!r}")

        self.run_with(harness, body, "error-then-done")

    def test_nothing_after_done_and_stream_closes(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.final("finished"), run)
            await harness.emit(harness.frames.delta("too late"), run)
            events = await self._collect(stream, run)  # requires the stream to close after done
            check_stream(events)
            if any(isinstance(e, TextDelta) and "too late" in e.text for e in events):
                raise violation("done-last", "an event emitted after done was delivered")

        self.run_with(harness, body, "done-last")

    def test_cost_is_cumulative_and_unknown_usd_is_none(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            frames = harness.frames
            await harness.emit(frames.cost(10, 5, None), run)
            await harness.emit(frames.cost(30, 9, None), run)
            await harness.emit(frames.final("done"), run)
            events = await self._collect(stream, run)
            check_stream(events)
            costs = [e for e in events if isinstance(e, Cost)]
            if not costs:
                raise violation("cost", "no cost event for reported usage")
            if costs[-1].usage.input_tokens < 30 or costs[-1].usage.output_tokens < 9:
                raise violation(
                    "cost-cumulative", f"last cost is not cumulative: {costs[-1].usage!r}"
                )
            if any(c.cost_usd is not None and not c.estimated for c in costs):
                raise violation("cost-usd-unknown", "unknown USD was reported as a number")

        self.run_with(harness, body, "cost-cumulative")

    def test_cost_usd_is_cumulative(self, harness: AdapterTestHarness) -> None:
        """USD, when the runtime reports it, is the run's running total, like the tokens: a
        runtime reporting ``$0.05`` then ``$0.06`` so far ends with ``$0.06``, not ``$0.01``.
        (A runtime that never reports USD gives ``None`` on every event and passes.)"""

        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            frames = harness.frames
            await harness.emit(frames.cost(10, 5, 0.05), run)
            await harness.emit(frames.cost(30, 9, 0.06), run)
            await harness.emit(frames.final("done"), run)
            events = await self._collect(stream, run)
            check_stream(events)  # USD never decreasing
            costs = [e for e in events if isinstance(e, Cost)]
            reported = [c for c in costs if c.cost_usd is not None and not c.estimated]
            if not reported:
                return
            last = reported[-1].cost_usd
            if last is None or abs(last - 0.06) > 1e-9:
                raise violation(
                    "cost-cumulative",
                    f"cumulative USD 0.05 then 0.06 ended as {[c.cost_usd for c in costs]} "
                    "(USD must be the running total, not per turn)",
                )
            done = events[-1]
            if isinstance(done, Done) and done.cost_usd is not None and done.cost_usd + 1e-9 < last:
                raise violation("cost-cumulative", f"done carries USD {done.cost_usd} < {last}")

        self.run_with(harness, body, "cost-cumulative")

    def _check_reason(self, events: list[RuntimeEvent], terminal: str) -> None:
        expected = {"final": "success", "error": "error", "aborted": "aborted"}[terminal]
        last = events[-1]
        if not (isinstance(last, Done) and last.reason == expected):
            rule = "abort-ends-aborted" if terminal == "aborted" else "done-reason"
            raise violation(rule, f"{terminal} ended in {last!r}, expected done{{{expected}}}")
        if terminal == "aborted" and any(isinstance(e, ErrorEvent) and e.fatal for e in events):
            raise violation("abort-ends-aborted", "an abort produced a fatal error event")

    def _check_aborted(self, events: list[RuntimeEvent]) -> None:
        check_stream(events)
        self._check_reason(events, "aborted")

    def test_abort_before_any_output(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await self._terminal(harness, adapter, run, "aborted")
            self._check_aborted(await self._collect(stream, run, deadline_s=self.abort_deadline_s))

        self.run_with(harness, body, "abort-ends-aborted")

    def test_abort_twice_is_idempotent(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("partial"), run)
            with _within(self.abort_deadline_s, "abort-in-time", "abort() twice"):
                await adapter.abort(run)
                await adapter.abort(run)
            await harness.emit(harness.frames.aborted(), run)
            self._check_aborted(await self._collect(stream, run, deadline_s=self.abort_deadline_s))

        self.run_with(harness, body, "abort-idempotent")

    def test_abort_after_done_is_harmless(self, harness: AdapterTestHarness) -> None:
        """Also: a second ``events(run)`` after ``done`` ends within 1 s with no new terminal."""

        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.final("all good"), run)
            events = await self._collect(stream, run)
            with _within(self.abort_deadline_s, "abort-in-time", "abort() after done"):
                await adapter.abort(run)
            check_stream(events)
            if not (isinstance(events[-1], Done) and events[-1].reason == "success"):
                raise violation("abort-after-done", "abort after done changed the outcome")
            late = adapter.events(run)
            with _within(
                LATE_SUBSCRIBE_CLOSE_S, "late-subscribe-closes", "a second events() after done"
            ):
                extra = [e async for e in late]
            if any(isinstance(e, Done) and e.reason != "success" for e in extra):
                raise violation("abort-after-done", "abort after done produced a second terminal")

        self.run_with(harness, body, "abort-after-done")

    def test_two_runs_interleaved_stay_isolated(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run_a = await harness.start(adapter, "contract:run-a")
            stream_a = adapter.events(run_a)
            run_b = await harness.start(adapter, "contract:run-b")
            stream_b = adapter.events(run_b)
            frames = harness.frames
            await harness.emit(frames.delta("alpha-1 "), run_a)
            await harness.emit(frames.delta("beta-1 "), run_b)
            await harness.emit(frames.delta("alpha-2"), run_a)
            await harness.emit(frames.final("beta done"), run_b)
            await harness.emit(frames.final("alpha done"), run_a)
            events_b = await self._collect(stream_b, run_b)
            check_stream(events_b)
            text_b = "".join(e.text for e in events_b if isinstance(e, TextDelta))
            if "alpha" in text_b or "beta-1" not in text_b:
                raise violation("runs-isolated", f"run b saw {text_b!r}")
            events_a = await self._collect(stream_a, run_a)
            check_stream(events_a)
            text_a = "".join(e.text for e in events_a if isinstance(e, TextDelta))
            if "beta" in text_a or "alpha-1" not in text_a or "alpha-2" not in text_a:
                raise violation("runs-isolated", f"run a saw {text_a!r}")
            if run_a.run_id == run_b.run_id:
                raise violation("runs-isolated", "two runs share one run id")

        self.run_with(harness, body, "runs-isolated")

    def test_unknown_native_frames_are_tolerated(self, harness: AdapterTestHarness) -> None:
        """Unknown frames never break a run, and are surfaced: a ``status`` event whose detail
        mentions the unknown frame (``"unknown"`` in it), not dropped silently."""

        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            try:
                await harness.emit(harness.frames.unknown(), run)
                await harness.emit(harness.frames.delta("still here"), run)
                await harness.emit(harness.frames.unknown(), run)
            except Exception as exc:
                raise violation("unknown-frames", f"an unknown frame raised {exc!r}") from exc
            await harness.emit(harness.frames.final("ok"), run)
            events = await self._collect(stream, run)
            check_stream(events)
            if not (isinstance(events[-1], Done) and events[-1].reason == "success"):
                raise violation("unknown-frames", f"an unknown frame broke the run: {events[-1]!r}")
            if not any(isinstance(e, TextDelta) and "still here" in e.text for e in events):
                raise violation("unknown-frames", "text after an unknown frame was lost")
            if not any(
                isinstance(e, Status) and e.detail and "unknown" in e.detail.lower() for e in events
            ):
                raise violation(
                    "unknown-frames-surfaced",
                    "unknown frames were dropped silently: no status event with a detail "
                    "mentioning them",
                )

        self.run_with(harness, body, "unknown-frames")

    def test_health_answers_when_runtime_hangs(self, harness: AdapterTestHarness) -> None:
        """``health()`` answers within 2 s, not healthy, when the runtime never answers.

        The hung adapter comes from the harness's ``make_hung_adapter()``; for child-process
        harnesses (with ``child_pids``) without one, the default hangs every fake CLI while
        ``health()`` runs on a normal adapter."""
        make_hung = getattr(harness, "make_hung_adapter", None)
        by_default = make_hung is None
        if make_hung is None:
            if getattr(harness, "child_pids", None) is None:
                raise violation(
                    "harness-protocol",
                    "the harness has no make_hung_adapter(): give one returning an adapter whose "
                    "runtime never answers, or returning None if the adapter has no external "
                    "runtime that can hang",
                )
            make_hung = harness.make_adapter
        adapter = cast("RuntimeAdapter | None", make_hung())
        if adapter is None:
            pytest.skip("the harness declares no external runtime that could hang")
        how = (
            " (every fake CLI hung by the default; if health() starts no fake CLI, give the "
            "harness make_hung_adapter())"
            if by_default
            else ""
        )

        async def main() -> None:
            assert adapter is not None
            async with adapter:
                with hang_switch() if by_default else nullcontext():
                    began = trio.current_time()
                    with trio.move_on_after(HEALTH_TIMEOUT_S + 1.0):
                        result = cast(object, await adapter.health())
                        if not isinstance(result, HealthResult):
                            raise violation("health", f"health() returned {type(result).__name__}")
                        if trio.current_time() - began > HEALTH_TIMEOUT_S + 0.1:
                            raise violation(
                                "health", f"health() took longer than 2 s on a hung runtime{how}"
                            )
                        if result.ok:
                            raise violation("health", f"a hung runtime was reported healthy{how}")
                        return
                    raise violation("health", f"health() hung with the runtime{how}")

        _run(main, "health")

    def test_generated_sequences_keep_every_invariant(self, harness: AdapterTestHarness) -> None:
        """Hypothesis-generated frame sequences (text, closed and open tool calls, cumulative
        usage with and without USD, unknown frames) ending in each terminal."""
        terminals = self.open_call_terminals

        phases = [Phase.explicit, Phase.reuse, Phase.generate]
        if self.generated_shrink:
            phases.append(Phase.shrink)

        @settings(
            max_examples=self.generated_examples,
            phases=phases,
            deadline=None,
            database=_HYPOTHESIS_DB,
            report_multiple_bugs=False,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        )
        @given(
            ops=st.lists(
                st.one_of(
                    st.tuples(st.just("delta"), st.text(min_size=1, max_size=12)),
                    st.tuples(st.just("tool"), st.sampled_from(["Bash", "Read", "Edit"])),
                    st.tuples(st.just("open-tool"), st.sampled_from(["Bash", "Read"])),
                    st.tuples(st.just("cost"), st.integers(0, 500)),
                    st.tuples(st.just("unknown"), st.none()),
                ),
                max_size=12,
            ),
            terminal=st.sampled_from(["final", "error", "aborted"]),
            usd_known=st.booleans(),
        )
        def generated(ops: list[tuple[str, Any]], terminal: str, usd_known: bool) -> None:
            opened = [op for op, _ in ops if op == "open-tool"]
            assume(not opened or terminal in terminals)
            self._generated_run(harness, ops, terminal, usd_known)

        try:
            with _hypothesis_home():
                generated()
        except ContractViolation:
            raise
        except BaseExceptionGroup as group:
            found = _first_violation(group)
            if found is not None:
                raise found from group
            raise violation(
                "generated-sequences", f"hypothesis raised {_describe(group)}"
            ) from group
        except Exception as exc:
            raise violation("generated-sequences", f"hypothesis raised {_describe(exc)}") from exc

    def _generated_run(
        self, harness: AdapterTestHarness, ops: list[tuple[str, Any]], terminal: str, usd: bool
    ) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            frames = harness.frames
            sent_text: list[str] = []
            tokens = 0
            for n, (op, arg) in enumerate(ops):
                if op == "delta":
                    sent_text.append(arg)
                    await harness.emit(frames.delta(arg), run)
                elif op == "tool":
                    call_id = f"tc-{n}"
                    await harness.emit(frames.tool_call(arg, {"n": n}, call_id), run)
                    await harness.emit(frames.tool_result(call_id, arg, f"out-{n}"), run)
                elif op == "open-tool":
                    # check_stream: every call that arrived is closed before done
                    await harness.emit(frames.tool_call(arg, {"n": n}, f"tc-open-{n}"), run)
                elif op == "cost":
                    tokens += arg
                    await harness.emit(
                        frames.cost(tokens, tokens // 2, tokens / 10_000 if usd else None), run
                    )
                else:
                    await harness.emit(frames.unknown(), run)
            await self._terminal(harness, adapter, run, terminal)
            events = await self._collect(stream, run)
            check_stream(events)
            self._check_reason(events, terminal)
            reported = [
                e.cost_usd
                for e in events
                if isinstance(e, Cost) and e.cost_usd is not None and not e.estimated
            ]
            if reported and abs(reported[-1] - tokens / 10_000) > 1e-9:
                raise violation(
                    "cost-cumulative",
                    f"USD reported as {reported}; the running total sent was {tokens / 10_000}",
                )
            got = "".join(
                e.text for e in events if isinstance(e, TextDelta) and e.channel == "assistant"
            )
            if terminal != "aborted" and got != "".join(sent_text):
                raise violation("text-preserved", f"text {''.join(sent_text)!r} arrived as {got!r}")

        self.run_with(harness, body, "generated-sequences")


class ProcessFaultContract:
    """Faults of a child process: each ends in a typed error (or abort) and one ``done``, and no
    child outlives its run. Subclass and override the ``fault_harness`` fixture.

    What each fault requires (``fault`` as passed to ``start_faulty``):

    ===========================  =============================================================
    ``truncated-line``           ``error{protocol_error | runtime_exited}`` then ``done{error}``
    ``truncated-line-exit-0``    the same: a lost frame is never a success, whatever the exit
                                 code (``runtime_exited``: a protocol that expects more output
                                 may report the exit itself)
    ``over-cap-line``            ``error{line_too_long}`` (fatal or not: the adapter decides),
                                 and the run still ends in ``done``
    ``exit-nonzero``             ``error{runtime_exited}`` then ``done{error}``
    ``stall`` + abort            ``done{aborted}``
    ``ignore-sigint`` + abort    ``done{aborted}`` (the escalation reaches SIGTERM)
    ``grandchild`` + abort       ``done{aborted}``, and the grandchild the runtime forked is gone
    ===========================  =============================================================

    For every fault, at ``done`` (before the adapter is closed) the run's child is gone and
    reaped within :attr:`reap_grace_s` (``no-orphans`` / ``no-zombies``), and so is any
    grandchild; after the adapter is closed, nothing it spawned is left.
    """

    deadline_s: ClassVar[float] = 20.0
    abort_deadline_s: ClassVar[float] = 12.0
    reap_grace_s: ClassVar[float] = 2.0
    """How long after ``done`` the run's child (and grandchildren) may take to be gone."""

    @pytest.fixture
    def fault_harness(self) -> ProcessFaultHarness:
        pytest.fail("override the `fault_harness` fixture in your ProcessFaultContract subclass")

    def _fault_run(
        self, fault_harness: ProcessFaultHarness, fault: str, *, abort: bool
    ) -> list[RuntimeEvent]:
        events: list[RuntimeEvent] = []
        clear_grandchild_records()

        async def main() -> None:
            adapter = fault_harness.make_adapter()
            async with adapter:
                run = await fault_harness.start_faulty(adapter, fault)
                stream = adapter.events(run)
                if fault == "grandchild":
                    await self._wait_for_grandchild()
                if abort:
                    await trio.sleep(0.3)
                    with _within(self.abort_deadline_s, "abort-in-time", f"abort() ({fault})"):
                        await adapter.abort(run)
                events.extend(await collect_run(stream, deadline_s=self.deadline_s))
                # at done, before the adapter is closed (closing would reap and kill for it)
                await check_children_gone(
                    fault_harness.spawned_pids(),
                    grace_s=self.reap_grace_s,
                    when=f"{_done_label(events)} ({fault})",
                    grandchildren=grandchild_pids(),
                )
            await check_children_gone(
                fault_harness.spawned_pids(),
                grace_s=0.5,
                when=f"the adapter was closed ({fault})",
                grandchildren=grandchild_pids(),
            )

        _run(main, f"fault-{fault}")
        check_stream(events)
        return events

    async def _wait_for_grandchild(self) -> None:
        with _within(self.deadline_s, "finishes-in-time", "the fake CLI's grandchild to start"):
            while not grandchild_pids():  # noqa: ASYNC110 - a file another process writes
                await trio.sleep(0.01)

    @staticmethod
    def _error_codes(events: list[RuntimeEvent]) -> set[str | None]:
        return {e.code for e in events if isinstance(e, ErrorEvent)}

    def _expect_failure(self, events: list[RuntimeEvent], codes: set[str], fault: str) -> None:
        last = events[-1]
        if not (isinstance(last, Done) and last.reason == "error"):
            raise violation("fault-ends-in-error", f"{fault}: expected done{{error}}, got {last!r}")
        if not (self._error_codes(events) & codes):
            raise violation(
                "fault-typed-error",
                f"{fault}: expected an error code in {sorted(codes)}, got {self._error_codes(events)}",
            )

    def _expect_aborted(self, events: list[RuntimeEvent], fault: str) -> None:
        last = events[-1]
        if not (isinstance(last, Done) and last.reason == "aborted"):
            raise violation("abort-ends-aborted", f"{fault} + abort ended in {last!r}")

    def test_truncated_line(self, fault_harness: ProcessFaultHarness) -> None:
        events = self._fault_run(fault_harness, "truncated-line", abort=False)
        self._expect_failure(events, {"protocol_error", "runtime_exited"}, "truncated-line")

    def test_truncated_line_exit_0(self, fault_harness: ProcessFaultHarness) -> None:
        events = self._fault_run(fault_harness, "truncated-line-exit-0", abort=False)
        self._expect_failure(events, {"protocol_error", "runtime_exited"}, "truncated-line-exit-0")

    def test_over_cap_line(self, fault_harness: ProcessFaultHarness) -> None:
        events = self._fault_run(fault_harness, "over-cap-line", abort=False)
        if "line_too_long" not in self._error_codes(events):
            raise violation("fault-typed-error", "an over-cap line gave no line_too_long error")
        if not isinstance(events[-1], Done):
            raise violation("ends-in-done", "an over-cap line ended the stream without done")

    def test_exit_nonzero_mid_stream(self, fault_harness: ProcessFaultHarness) -> None:
        events = self._fault_run(fault_harness, "exit-nonzero", abort=False)
        self._expect_failure(events, {"runtime_exited"}, "exit-nonzero")

    def test_stall_then_abort(self, fault_harness: ProcessFaultHarness) -> None:
        self._expect_aborted(self._fault_run(fault_harness, "stall", abort=True), "stall")

    def test_ignore_sigint_then_abort(self, fault_harness: ProcessFaultHarness) -> None:
        events = self._fault_run(fault_harness, "ignore-sigint", abort=True)
        self._expect_aborted(events, "ignore-sigint")

    def test_grandchild_then_abort(self, fault_harness: ProcessFaultHarness) -> None:
        events = self._fault_run(fault_harness, "grandchild", abort=True)
        self._expect_aborted(events, "grandchild")
        if not grandchild_pids():
            raise violation("fault-grandchild", "the fake CLI's grandchild was never recorded")


def contract_workdir() -> str:
    """A fresh temporary working directory for harnesses that need one."""
    return tempfile.mkdtemp(prefix="ringleader-contract-")
