"""The adapter contract on the real OpenClaw adapter attached to a fake gateway (a real
WebSocket server speaking the Gateway protocol)."""

from __future__ import annotations

import pytest

from contract import AdapterContract

from .harness import OpenClawHarness


class TestOpenClawContract(AdapterContract):
    @pytest.fixture
    def harness(self) -> OpenClawHarness:
        return OpenClawHarness()
