"""The adapter contract and the process fault group, app-server mode."""

from __future__ import annotations

import pytest

from contract import AdapterContract, ProcessFaultContract

from .harness import CodexAppFaultHarness, CodexAppHarness


class TestCodexAppServerContract(AdapterContract):
    @pytest.fixture
    def harness(self) -> CodexAppHarness:
        return CodexAppHarness()


class TestCodexAppServerFaults(ProcessFaultContract):
    @pytest.fixture
    def fault_harness(self) -> CodexAppFaultHarness:
        return CodexAppFaultHarness()
