"""The adapter contract and the process fault group for the generic ACP adapter."""

from __future__ import annotations

import pytest

from contract import AdapterContract, ProcessFaultContract

from .harness import AcpFaultHarness, AcpHarness


class TestAcpContract(AdapterContract):
    @pytest.fixture
    def harness(self) -> AcpHarness:
        return AcpHarness()


class TestAcpFaults(ProcessFaultContract):
    @pytest.fixture
    def fault_harness(self) -> AcpFaultHarness:
        return AcpFaultHarness()
