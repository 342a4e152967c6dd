"""The adapter contract suite: subclass :class:`AdapterContract`, provide a ``harness`` fixture.

::

    from contract import AdapterContract

    class TestMyAdapter(AdapterContract):
        @pytest.fixture
        def harness(self) -> MyHarness:
            return MyHarness()

Every test is a plain (synchronous) pytest test that runs its body under :func:`trio.run`, so the
suite works in any project, with or without pytest-trio. Each failure is a
:class:`~contract.invariants.ContractViolation` naming the rule that broke.

Adapters that drive a child process also subclass :class:`ProcessFaultContract` with a
``fault_harness`` fixture (see :class:`~contract.harness.ProcessFaultHarness`).
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, cast

import pytest
import trio
import trio.lowlevel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.adapter import (
    HEALTH_TIMEOUT_S,
    Capabilities,
    EventStream,
    HealthResult,
    RuntimeAdapter,
)
from orchestrator.errors import ConfigError
from orchestrator.events import (
    Cost,
    Done,
    ErrorEvent,
    RuntimeEvent,
    TextDelta,
    ToolCall,
    ToolResult,
)

from .harness import AdapterTestHarness, ProcessFaultHarness
from .invariants import check_stream, violation

__all__ = ["AdapterContract", "ProcessFaultContract", "collect_run"]

Body = Callable[[RuntimeAdapter], Awaitable[None]]


async def collect_run(
    stream: EventStream, *, deadline_s: float, cap: int = 500
) -> list[RuntimeEvent]:
    """Collect until ``done`` (then require the stream to close by itself), the end, or ``cap``.

    Raises a ``ContractViolation`` if the stream does not finish within ``deadline_s`` or stays
    open after ``done``.
    """
    events: list[RuntimeEvent] = []
    try:
        with trio.fail_after(deadline_s):
            async for event in stream:
                events.append(event)
                if isinstance(event, Done) or len(events) >= cap:
                    break
    except trio.TooSlowError:
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


def _run(body: Callable[[], Awaitable[None]]) -> None:
    """Run ``body`` under trio; a lone violation inside exception groups is raised bare."""
    try:
        trio.run(body)
    except BaseExceptionGroup as group:
        leaf = _single_leaf(group)
        if isinstance(leaf, AssertionError):
            raise leaf from group
        raise


def _single_leaf(error: BaseException) -> BaseException:
    current: BaseException = error
    while isinstance(current, BaseExceptionGroup):
        inner = cast(tuple[BaseException, ...], current.exceptions)  # pyright: ignore[reportUnknownMemberType]
        if len(inner) != 1:
            break
        current = inner[0]
    return cast(BaseException, current)  # pyright: ignore[reportUnknownVariableType]


class AdapterContract:
    """The contract every adapter keeps. Subclass it and override the ``harness`` fixture."""

    deadline_s: ClassVar[float] = 15.0
    """How long one run may take to reach ``done`` in these tests."""
    abort_deadline_s: ClassVar[float] = 10.0
    """How long ``abort`` may take to surface ``done{aborted}``."""

    @pytest.fixture
    def harness(self) -> AdapterTestHarness:
        pytest.fail("override the `harness` fixture in your AdapterContract subclass")

    # -- helpers -------------------------------------------------------------------------------

    def run_with(self, harness: AdapterTestHarness, body: Body) -> None:
        async def main() -> None:
            adapter = harness.make_adapter()
            async with adapter:
                await body(adapter)

        _run(main)

    async def _collect(self, stream: EventStream) -> list[RuntimeEvent]:
        return await collect_run(stream, deadline_s=self.deadline_s)

    # -- the reference's nine tests --------------------------------------------------------------

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
        caps = cast(object, adapter.capabilities())
        if not isinstance(caps, Capabilities):
            raise violation("capabilities", f"capabilities() returned {type(caps).__name__}")
        if caps != adapter.capabilities():
            raise violation("capabilities", "capabilities() is not stable between calls")
        if caps.context_window_tokens is not None and caps.context_window_tokens < 0:
            raise violation("capabilities", "negative context window")
        Capabilities.model_validate_json(caps.model_dump_json())

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

        self.run_with(harness, body)

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

        self.run_with(harness, body)

    def test_round_trip_ends_in_done_success(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("hello"), run)
            await harness.emit(harness.frames.final("hello world"), run)
            events = await self._collect(stream)
            check_stream(events)
            if not any(isinstance(e, TextDelta) and "hello" in e.text for e in events):
                raise violation("text-delta", "the delta 'hello' never arrived as text-delta")
            last = events[-1]
            if not (isinstance(last, Done) and last.reason == "success"):
                raise violation("done-reason", f"expected done{{success}}, got {last!r}")

        self.run_with(harness, body)

    def test_binds_run_id_late(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            if run.run_id is not None:
                raise violation("run-id-late", "run_id bound at start()")
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("x"), run)
            with trio.fail_after(self.deadline_s):
                first = await anext(aiter(stream))
            if run.run_id is None:
                raise violation("run-id-late", "run_id still None after the first event")
            if first.run_id != run.run_id:
                raise violation(
                    "run-id-bound", f"event run id {first.run_id!r} != handle {run.run_id!r}"
                )
            await stream.aclose()
            await adapter.abort(run)

        self.run_with(harness, body)

    def test_abort_has_side_effect_and_ends_aborted(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("partial"), run)
            await trio.lowlevel.checkpoint()
            with trio.fail_after(self.abort_deadline_s):
                await adapter.abort(run)
            await harness.emit(harness.frames.aborted(), run)
            events = await collect_run(stream, deadline_s=self.abort_deadline_s)
            self._check_aborted(events)
            if not any("abort" in c.method.lower() for c in harness.recorded_calls()):
                raise violation("abort-side-effect", "abort() issued no recorded abort call")

        self.run_with(harness, body)

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

        self.run_with(harness, body)

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

        self.run_with(harness, body)

    # -- what the reference never checks -----------------------------------------------------

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

        self.run_with(harness, body)

    def test_tool_call_closed_by_result_with_same_id(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            frames = harness.frames
            await harness.emit(frames.tool_call("Bash", {"command": "ls"}, "tc-1"), run)
            await harness.emit(frames.tool_result("tc-1", "Bash", "a.txt\nb.txt"), run)
            await harness.emit(frames.final("listed"), run)
            events = await self._collect(stream)
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

        self.run_with(harness, body)

    def test_error_is_fatal_error_then_done_error(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("working"), run)
            await harness.emit(harness.frames.error("model exploded"), run)
            events = await self._collect(stream)
            check_stream(events)
            errors = [e for e in events if isinstance(e, ErrorEvent)]
            if not errors or not errors[-1].fatal or "model exploded" not in errors[-1].message:
                raise violation(
                    "error-then-done", f"expected a fatal error with the message, got {errors}"
                )
            last = events[-1]
            if not (isinstance(last, Done) and last.reason == "error"):
                raise violation("error-then-done", f"expected done{{error}} last, got {last!r}")

        self.run_with(harness, body)

    def test_nothing_after_done_and_stream_closes(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.final("finished"), run)
            await harness.emit(harness.frames.delta("too late"), run)
            events = await self._collect(stream)  # requires the stream to close after done
            check_stream(events)
            if any(isinstance(e, TextDelta) and "too late" in e.text for e in events):
                raise violation("done-last", "an event emitted after done was delivered")

        self.run_with(harness, body)

    def test_cost_is_cumulative_and_unknown_usd_is_none(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            frames = harness.frames
            await harness.emit(frames.cost(10, 5, None), run)
            await harness.emit(frames.cost(30, 9, None), run)
            await harness.emit(frames.final("done"), run)
            events = await self._collect(stream)
            check_stream(events)
            costs = [e for e in events if isinstance(e, Cost)]
            if not costs:
                raise violation("cost", "no cost event for reported usage")
            if costs[-1].usage.input_tokens < 30 or costs[-1].usage.output_tokens < 9:
                raise violation(
                    "cost-cumulative", f"last cost is not cumulative: {costs[-1].usage!r}"
                )
            if any(c.cost_usd is not None for c in costs):
                raise violation("cost-usd-unknown", "unknown USD was reported as a number")

        self.run_with(harness, body)

    def _check_aborted(self, events: list[RuntimeEvent]) -> None:
        check_stream(events)
        last = events[-1]
        if not (isinstance(last, Done) and last.reason == "aborted"):
            raise violation("abort-ends-aborted", f"expected done{{aborted}}, got {last!r}")
        if any(isinstance(e, ErrorEvent) and e.fatal for e in events):
            raise violation("abort-ends-aborted", "an abort produced a fatal error event")

    def test_abort_before_any_output(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            with trio.fail_after(self.abort_deadline_s):
                await adapter.abort(run)
            await harness.emit(harness.frames.aborted(), run)
            self._check_aborted(await collect_run(stream, deadline_s=self.abort_deadline_s))

        self.run_with(harness, body)

    def test_abort_twice_is_idempotent(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.delta("partial"), run)
            with trio.fail_after(self.abort_deadline_s):
                await adapter.abort(run)
                await adapter.abort(run)
            await harness.emit(harness.frames.aborted(), run)
            self._check_aborted(await collect_run(stream, deadline_s=self.abort_deadline_s))

        self.run_with(harness, body)

    def test_abort_after_done_is_harmless(self, harness: AdapterTestHarness) -> None:
        async def body(adapter: RuntimeAdapter) -> None:
            run = await harness.start(adapter)
            stream = adapter.events(run)
            await harness.emit(harness.frames.final("all good"), run)
            events = await self._collect(stream)
            with trio.fail_after(self.abort_deadline_s):
                await adapter.abort(run)
            check_stream(events)
            if not (isinstance(events[-1], Done) and events[-1].reason == "success"):
                raise violation("abort-after-done", "abort after done changed the outcome")
            late = adapter.events(run)
            with trio.fail_after(1.0):
                extra = [e async for e in late]
            if any(isinstance(e, Done) and e.reason != "success" for e in extra):
                raise violation("abort-after-done", "abort after done produced a second terminal")

        self.run_with(harness, body)

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
            events_b = await self._collect(stream_b)
            check_stream(events_b)
            text_b = "".join(e.text for e in events_b if isinstance(e, TextDelta))
            if "alpha" in text_b or "beta-1" not in text_b:
                raise violation("runs-isolated", f"run b saw {text_b!r}")
            events_a = await self._collect(stream_a)
            check_stream(events_a)
            text_a = "".join(e.text for e in events_a if isinstance(e, TextDelta))
            if "beta" in text_a or "alpha-1" not in text_a or "alpha-2" not in text_a:
                raise violation("runs-isolated", f"run a saw {text_a!r}")
            if run_a.run_id == run_b.run_id:
                raise violation("runs-isolated", "two runs share one run id")

        self.run_with(harness, body)

    def test_unknown_native_frames_are_tolerated(self, harness: AdapterTestHarness) -> None:
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
            events = await self._collect(stream)
            check_stream(events)
            if not (isinstance(events[-1], Done) and events[-1].reason == "success"):
                raise violation("unknown-frames", f"an unknown frame broke the run: {events[-1]!r}")
            if not any(isinstance(e, TextDelta) and "still here" in e.text for e in events):
                raise violation("unknown-frames", "text after an unknown frame was lost")

        self.run_with(harness, body)

    def test_health_answers_when_runtime_hangs(self, harness: AdapterTestHarness) -> None:
        make_hung = getattr(harness, "make_hung_adapter", None)
        if make_hung is None:
            pytest.skip("the harness has no make_hung_adapter(); nothing to hang")

        async def main() -> None:
            adapter: RuntimeAdapter = make_hung()
            async with adapter:
                began = trio.current_time()
                with trio.move_on_after(HEALTH_TIMEOUT_S + 1.0):
                    result = await adapter.health()
                    if trio.current_time() - began > HEALTH_TIMEOUT_S + 0.1:
                        raise violation("health", "health() took longer than 2 s on a hung runtime")
                    if result.ok:
                        raise violation("health", "a hung runtime was reported healthy")
                    return
                raise violation("health", "health() hung with the runtime")

        _run(main)

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.differing_executors,  # one method, many adapters' subclasses: by design
        ],
    )
    @given(
        ops=st.lists(
            st.one_of(
                st.tuples(st.just("delta"), st.text(min_size=1, max_size=12)),
                st.tuples(st.just("tool"), st.sampled_from(["Bash", "Read", "Edit"])),
                st.tuples(st.just("cost"), st.integers(0, 500)),
                st.tuples(st.just("unknown"), st.none()),
            ),
            max_size=12,
        ),
        terminal=st.sampled_from(["final", "error", "aborted"]),
    )
    def test_generated_sequences_keep_every_invariant(
        self, harness: AdapterTestHarness, ops: list[tuple[str, Any]], terminal: str
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
                elif op == "cost":
                    tokens += arg
                    await harness.emit(frames.cost(tokens, tokens // 2, None), run)
                else:
                    await harness.emit(frames.unknown(), run)
            if terminal == "final":
                await harness.emit(frames.final("".join(sent_text)), run)
            elif terminal == "error":
                await harness.emit(frames.error("generated failure"), run)
            else:
                await adapter.abort(run)
                await harness.emit(frames.aborted(), run)
            events = await self._collect(stream)
            check_stream(events)
            last = events[-1]
            assert isinstance(last, Done)
            expected = {"final": "success", "error": "error", "aborted": "aborted"}[terminal]
            if last.reason != expected:
                raise violation("done-reason", f"{terminal} frame ended in done{{{last.reason}}}")
            got = "".join(
                e.text for e in events if isinstance(e, TextDelta) and e.channel == "assistant"
            )
            if terminal != "aborted" and got != "".join(sent_text):
                raise violation("text-preserved", f"text {''.join(sent_text)!r} arrived as {got!r}")

        self.run_with(harness, body)


class ProcessFaultContract:
    """Faults of a child process: each ends in a typed error (or abort) and one ``done``, and no
    child outlives its run. Subclass and override the ``fault_harness`` fixture."""

    deadline_s: ClassVar[float] = 20.0
    abort_deadline_s: ClassVar[float] = 12.0

    @pytest.fixture
    def fault_harness(self) -> ProcessFaultHarness:
        pytest.fail("override the `fault_harness` fixture in your ProcessFaultContract subclass")

    def _fault_run(
        self, fault_harness: ProcessFaultHarness, fault: str, *, abort: bool
    ) -> list[RuntimeEvent]:
        events: list[RuntimeEvent] = []

        async def main() -> None:
            adapter = fault_harness.make_adapter()
            async with adapter:
                run = await fault_harness.start_faulty(adapter, fault)
                stream = adapter.events(run)
                if abort:
                    await trio.sleep(0.3)
                    with trio.fail_after(self.abort_deadline_s):
                        await adapter.abort(run)
                events.extend(await collect_run(stream, deadline_s=self.deadline_s))

        _run(main)
        check_stream(events)
        for pid in fault_harness.spawned_pids():
            if _alive(pid):
                raise violation("no-orphans", f"child {pid} outlived its run ({fault})")
        return events

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

    def test_truncated_line(self, fault_harness: ProcessFaultHarness) -> None:
        events = self._fault_run(fault_harness, "truncated-line", abort=False)
        self._expect_failure(events, {"protocol_error", "runtime_exited"}, "truncated-line")

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
        events = self._fault_run(fault_harness, "stall", abort=True)
        last = events[-1]
        if not (isinstance(last, Done) and last.reason == "aborted"):
            raise violation("abort-ends-aborted", f"stall + abort ended in {last!r}")

    def test_ignore_sigint_then_abort(self, fault_harness: ProcessFaultHarness) -> None:
        events = self._fault_run(fault_harness, "ignore-sigint", abort=True)
        last = events[-1]
        if not (isinstance(last, Done) and last.reason == "aborted"):
            raise violation("abort-ends-aborted", f"ignore-sigint + abort ended in {last!r}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno != errno.ESRCH
    return True


def contract_workdir() -> str:
    """A fresh temporary working directory for harnesses that need one."""
    return tempfile.mkdtemp(prefix="ringleader-contract-")
