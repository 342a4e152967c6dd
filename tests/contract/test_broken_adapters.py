"""Proof that the contract can fail: each broken adapter is caught by the named check."""

from __future__ import annotations

import pytest

from adapters.scripted import ScriptedAdapter
from contract import AdapterContract, ContractViolation, ScriptedHarness

from . import broken_adapters as broken


class FastContract(AdapterContract):
    deadline_s = 3.0
    abort_deadline_s = 3.0
    generated_shrink = False


CASES = [
    (broken.EventsAfterDone, "test_round_trip_ends_in_done_success", "done-last"),
    (broken.NeverClosesAfterDone, "test_nothing_after_done_and_stream_closes", "stream-closes"),
    (broken.SeqGap, "test_round_trip_ends_in_done_success", "seq-gapless"),
    (broken.RunIdBoundAtStart, "test_start_returns_unbound_handle", "run-id-late"),
    (broken.AbortEndsInError, "test_abort_has_side_effect_and_ends_aborted", "abort-ends-aborted"),
    (
        broken.ToolCallNeverClosed,
        "test_tool_call_closed_by_result_with_same_id",
        "tool-call-closed",
    ),
    (broken.DecreasingCost, "test_cost_is_cumulative_and_unknown_usd_is_none", "cost-cumulative"),
    (
        broken.UnknownUsdAsZero,
        "test_cost_is_cumulative_and_unknown_usd_is_none",
        "cost-usd-unknown",
    ),
    (broken.CrashesOnUnknownFrame, "test_unknown_native_frames_are_tolerated", "unknown-frames"),
    (broken.ErrorWithoutDone, "test_error_is_fatal_error_then_done_error", "error-then-done"),
    (broken.LeaksBetweenRuns, "test_two_runs_interleaved_stay_isolated", "runs-isolated"),
    (broken.NoStandInAtTerminal, "test_open_tool_call_closed_at_terminal", "tool-call-closed"),
    (broken.UsdPerTurn, "test_cost_usd_is_cumulative", "cost-cumulative"),
    (
        broken.DropsUnknownSilently,
        "test_unknown_native_frames_are_tolerated",
        "unknown-frames-surfaced",
    ),
    (broken.TsInSeconds, "test_round_trip_ends_in_done_success", "ts-epoch-ms"),
]

RAISING = [
    (broken.SetModelRaisesValueError, "test_set_model_has_side_effect", "set-model-side-effect"),
    (
        broken.AbortRaisesProcessLookupError,
        "test_abort_has_side_effect_and_ends_aborted",
        "abort-ends-aborted",
    ),
    (
        broken.WriteContextRaisesGroup,
        "test_write_context_has_side_effect",
        "write-context-side-effect",
    ),
]


@pytest.mark.parametrize(
    ("adapter_cls", "test_name", "check"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_contract_catches_broken_adapter(
    adapter_cls: type[ScriptedAdapter], test_name: str, check: str
) -> None:
    harness = broken.BrokenHarness(adapter_cls)
    with pytest.raises(ContractViolation) as caught:
        getattr(FastContract(), test_name)(harness)
    assert caught.value.check == check


@pytest.mark.parametrize(
    ("adapter_cls", "checks"),
    [
        (broken.SeqGap, {"seq-gapless"}),
        (broken.ToolCallNeverClosed, {"tool-call-closed"}),
        (broken.ErrorWithoutDone, {"error-then-done"}),
        (broken.NoStandInAtTerminal, {"tool-call-closed"}),
        (broken.TsInSeconds, {"ts-epoch-ms"}),
        (broken.AbortRaisesProcessLookupError, {"generated-sequences"}),
    ],
    ids=[
        "SeqGap",
        "ToolCallNeverClosed",
        "ErrorWithoutDone",
        "NoStandInAtTerminal",
        "TsInSeconds",
        "AbortRaises",
    ],
)
def test_generated_sequences_catch_broken_adapter(
    adapter_cls: type[ScriptedAdapter], checks: set[str]
) -> None:
    harness = broken.BrokenHarness(adapter_cls)
    with pytest.raises(ContractViolation) as caught:
        FastContract().test_generated_sequences_keep_every_invariant(harness)  # pyright: ignore[reportCallIssue]
    assert caught.value.check in checks


@pytest.mark.parametrize(
    ("adapter_cls", "test_name", "check"), RAISING, ids=[c[0].__name__ for c in RAISING]
)
def test_an_exception_inside_the_adapter_is_a_violation_with_its_cause(
    adapter_cls: type[ScriptedAdapter], test_name: str, check: str
) -> None:
    harness = broken.BrokenHarness(adapter_cls)
    with pytest.raises(ContractViolation) as caught:
        getattr(FastContract(), test_name)(harness)
    assert caught.value.check == check
    assert isinstance(caught.value.__cause__, ValueError | ProcessLookupError | OSError)
    assert "the adapter raised" in caught.value.detail


def test_a_harness_without_a_hung_runtime_answer_fails_the_protocol() -> None:
    class NoHungHook:
        label = "no-hung-hook"

        def __init__(self) -> None:
            self.frames = ScriptedHarness().frames

        def make_adapter(self) -> ScriptedAdapter:
            return ScriptedAdapter()

    with pytest.raises(ContractViolation) as caught:
        FastContract().test_health_answers_when_runtime_hangs(NoHungHook())  # pyright: ignore[reportArgumentType]
    assert caught.value.check == "harness-protocol"


def test_reference_adapter_passes_every_check_the_broken_ones_fail() -> None:
    harness = broken.BrokenHarness(ScriptedAdapter)
    for _, test_name, _ in CASES + RAISING:
        getattr(FastContract(), test_name)(harness)
