"""The adapter contract (both modes) and the process fault group, on a fake Claude Code."""

from __future__ import annotations

import pytest

from contract import AdapterContract, ProcessFaultContract

from .harness import ClaudeFaultHarness, ClaudeLiveHarness, ClaudeOneShotHarness


class TestClaudeCodeOneShotContract(AdapterContract):
    @pytest.fixture
    def harness(self) -> ClaudeOneShotHarness:
        return ClaudeOneShotHarness()


class TestClaudeCodeLongLivedContract(AdapterContract):
    @pytest.fixture
    def harness(self) -> ClaudeLiveHarness:
        return ClaudeLiveHarness()


class TestClaudeCodeFaults(ProcessFaultContract):
    @pytest.fixture
    def fault_harness(self) -> ClaudeFaultHarness:
        return ClaudeFaultHarness()
