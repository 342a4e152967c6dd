"""The native adapter passes the whole adapter contract."""

import pytest

from contract import AdapterContract

from .harness import NativeHarness


class TestNativeAdapterContract(AdapterContract):
    @pytest.fixture
    def harness(self) -> NativeHarness:
        return NativeHarness()
