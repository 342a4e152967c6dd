"""The scripted reference adapter passes the whole contract."""

import pytest

from contract import AdapterContract, ScriptedHarness


class TestScriptedAdapterContract(AdapterContract):
    @pytest.fixture
    def harness(self) -> ScriptedHarness:
        return ScriptedHarness()
