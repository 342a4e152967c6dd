"""pytest plugin (entry point ``ringleader_contract``) for the adapter contract suite.

Loaded by pytest in any project that installs ringleader. It makes pytest rewrite the suite's
assertions (so failures show values) and adds a ``contract`` marker to every contract test,
so ``pytest -m contract`` runs just the contract of every adapter in a project.
"""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("contract.suite", "contract.invariants")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "contract: a ringleader adapter contract test")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from .suite import AdapterContract, ProcessFaultContract

    for item in items:
        cls = getattr(item, "cls", None)
        if isinstance(cls, type) and issubclass(cls, AdapterContract | ProcessFaultContract):
            item.add_marker(pytest.mark.contract)
