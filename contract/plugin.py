"""pytest plugin (entry point ``ringleader_contract``) for the adapter contract suite.

Loaded by pytest in any project that installs ringleader, so it must never break pytest: it
imports nothing beyond pytest itself (no hypothesis; the suite needs ``ringleader[contract]``).
It makes pytest rewrite the suite's assertions (so failures show values) and adds a
``contract`` marker to every contract test, so ``pytest -m contract`` runs just the contract of
every adapter in a project.
"""

from __future__ import annotations

import sys

import pytest

pytest.register_assert_rewrite("contract.suite", "contract.invariants")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "contract: a ringleader adapter contract test")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A project whose tests use the suite has imported it while collecting; one that has not
    # has no contract tests, and importing the suite here would need its optional dependencies.
    suite = sys.modules.get("contract.suite")
    if suite is None:
        return
    bases: tuple[type, ...] = (suite.AdapterContract, suite.ProcessFaultContract)
    for item in items:
        cls = getattr(item, "cls", None)
        if isinstance(cls, type) and issubclass(cls, bases):
            item.add_marker(pytest.mark.contract)
