"""The adapter contract and the process fault group, exec mode."""

from __future__ import annotations

import pytest

from contract import AdapterContract, ProcessFaultContract

from .harness import CodexExecFaultHarness, CodexExecHarness


class TestCodexExecContract(AdapterContract):
    @pytest.fixture
    def harness(self) -> CodexExecHarness:
        return CodexExecHarness()


class TestCodexExecFaults(ProcessFaultContract):
    @pytest.fixture
    def fault_harness(self) -> CodexExecFaultHarness:
        return CodexExecFaultHarness()
