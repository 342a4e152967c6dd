"""Proof that the contract catches process bugs: each broken child-process adapter is caught by
the named check, and the same checks pass on :class:`RawCli` with every switch right."""

from __future__ import annotations

import contextlib
import os
import signal

import pytest

from contract import AdapterContract, ContractViolation, ProcessFaultContract
from contract.fake_cli import grandchild_pids

from . import broken_cli_adapters as broken


class FastContract(AdapterContract):
    deadline_s = 5.0
    abort_deadline_s = 5.0
    reap_grace_s = 1.0


class FastFaults(ProcessFaultContract):
    deadline_s = 8.0
    abort_deadline_s = 5.0
    reap_grace_s = 1.0


def _kill_grandchildren() -> None:
    for pid in grandchild_pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


CONTRACT_CASES = [
    (broken.ZombieAfterDone, "test_round_trip_ends_in_done_success", "no-zombies"),
    (broken.RunningAfterAbort, "test_abort_has_side_effect_and_ends_aborted", "no-orphans"),
    (broken.UnboundedHealth, "test_health_answers_when_runtime_hangs", "health"),
    (broken.HealthRaisesWhenHung, "test_health_answers_when_runtime_hangs", "health"),
]

FAULT_CASES = [
    (broken.SignalsOnlyThePid, "test_grandchild_then_abort", "no-orphans"),
    (broken.RunningAfterAbort, "test_stall_then_abort", "no-orphans"),
    (broken.TruncatedExit0IsSuccess, "test_truncated_line_exit_0", "fault-ends-in-error"),
]


@pytest.mark.parametrize(
    ("adapter_cls", "test_name", "check"),
    CONTRACT_CASES,
    ids=[f"{c[0].__name__}-{c[2]}" for c in CONTRACT_CASES],
)
def test_contract_catches_broken_cli_adapter(
    adapter_cls: type[broken.RawCli], test_name: str, check: str
) -> None:
    with pytest.raises(ContractViolation) as caught:
        getattr(FastContract(), test_name)(broken.RawCliHarness(adapter_cls))
    assert caught.value.check == check, caught.value


def test_a_health_check_that_raises_comes_out_as_the_rule_with_its_cause() -> None:
    with pytest.raises(ContractViolation) as caught:
        FastContract().test_health_answers_when_runtime_hangs(
            broken.RawCliHarness(broken.HealthRaisesWhenHung)
        )
    assert caught.value.check == "health"
    assert type(caught.value.__cause__).__name__ == "TooSlowError"


@pytest.mark.parametrize(
    ("adapter_cls", "test_name", "check"),
    FAULT_CASES,
    ids=[f"{c[0].__name__}-{c[2]}" for c in FAULT_CASES],
)
def test_fault_group_catches_broken_cli_adapter(
    adapter_cls: type[broken.RawCli], test_name: str, check: str
) -> None:
    try:
        with pytest.raises(ContractViolation) as caught:
            getattr(FastFaults(), test_name)(broken.RawCliFaultHarness(adapter_cls))
    finally:
        _kill_grandchildren()
    assert caught.value.check == check, caught.value


@pytest.mark.parametrize("test_name", sorted({c[1] for c in CONTRACT_CASES}))
def test_raw_cli_passes_the_checks_its_mutants_fail(test_name: str) -> None:
    getattr(FastContract(), test_name)(broken.RawCliHarness())


@pytest.mark.parametrize("test_name", sorted({c[1] for c in FAULT_CASES}))
def test_raw_cli_passes_the_faults_its_mutants_fail(test_name: str) -> None:
    getattr(FastFaults(), test_name)(broken.RawCliFaultHarness())
