"""The native adapter passes the whole adapter contract."""

import pytest

from contract import AdapterContract

from .harness import NativeHarness


class TestNativeAdapterContract(AdapterContract):
    # The loop waits for its tools: with a tool call open, a run can only be aborted.
    open_call_terminals = ("aborted",)

    @pytest.fixture
    def harness(self) -> NativeHarness:
        return NativeHarness()
