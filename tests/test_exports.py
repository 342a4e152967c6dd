"""Every package's public API is exactly its ``__all__``, it comes from this checkout, and the
app-safe packages never pull in the test kit."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
TOP_LEVEL = ["orchestrator", "adapters", "tiers", "contract"]
APP_SAFE = ["orchestrator", "adapters", "tiers"]
# sub-packages that are cheap to import here; adapters.native (the model SDKs) is checked in the
# fresh interpreter below, which imports everything anyway
SUBPACKAGES = [
    "orchestrator.hosts",
    "orchestrator.governance",
    "contract.model_server",
    "adapters.native.anvia",
    "adapters.acp",
    "adapters.hermes",
    "adapters.openclaw",
]


def public_names(package: types.ModuleType) -> set[str]:
    """Names defined at the package's top level that are not private and not submodules."""
    return {
        name
        for name, value in vars(package).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"  # from __future__ import annotations
    }


@pytest.mark.parametrize("name", TOP_LEVEL + SUBPACKAGES)
def test_all_is_exactly_the_public_names(name: str) -> None:
    package = importlib.import_module(name)
    exported: list[str] = list(package.__all__)
    assert len(exported) == len(set(exported)), "duplicates in __all__"
    for attr in exported:  # `contract` resolves its names lazily (its suite needs pytest)
        getattr(package, attr)
    assert sorted(exported) == sorted(public_names(package))
    for attr in exported:
        assert hasattr(package, attr), attr
        assert getattr(package, attr) is not None, attr


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_star_import_gives_exactly_all(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from {name} import *", namespace)
    namespace.pop("__builtins__")
    assert set(namespace) == set(importlib.import_module(name).__all__)


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_packages_come_from_this_checkout(name: str) -> None:
    package = importlib.import_module(name)
    path = Path(str(package.__file__)).resolve()
    assert path.is_relative_to(REPO), f"{name} imported from {path}, not from {REPO}"
    assert path == REPO / name / "__init__.py"
    assert (REPO / name / "py.typed").is_file()


FRESH_INTERPRETER = """
import importlib, json, sys, types

app_safe, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for name in app_safe:
    importlib.import_module(name)
report = {
    "test_kit": sorted(
        m for m in sys.modules
        if m in ("pytest", "_pytest", "hypothesis", "contract") or m.startswith("contract.")
    ),
    "files": {name: sys.modules[name].__file__ for name in app_safe},
}
native = sys.modules["adapters.native"]
report["native_all"] = sorted(native.__all__)
report["native_public"] = sorted(
    n for n, v in vars(native).items()
    if not n.startswith("_") and not isinstance(v, types.ModuleType) and n != "annotations"
)
report["native_unresolved"] = [n for n in native.__all__ if getattr(native, n, None) is None]
failures = {}
for name in modules:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failures[name] = repr(exc)
report["import_failures"] = failures
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def fresh_interpreter() -> dict[str, Any]:
    """One fresh interpreter: import the app-safe packages first, then every module."""
    modules = sorted(
        str(p.relative_to(REPO).with_suffix("")).replace("/", ".").removesuffix(".__init__")
        for pkg in TOP_LEVEL
        for p in (REPO / pkg).rglob("*.py")
        if p.name != "__main__.py"
    )
    app_safe = [*APP_SAFE, "orchestrator.hosts", "adapters.native"]
    result = subprocess.run(
        [sys.executable, "-c", FRESH_INTERPRETER, json.dumps(app_safe), json.dumps(modules)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_app_safe_packages_never_import_pytest_or_contract(
    fresh_interpreter: dict[str, Any],
) -> None:
    assert fresh_interpreter["test_kit"] == []
    for name, file in fresh_interpreter["files"].items():
        assert Path(file).resolve().is_relative_to(REPO), name


def test_native_all_is_exactly_its_public_names(fresh_interpreter: dict[str, Any]) -> None:
    assert fresh_interpreter["native_all"] == fresh_interpreter["native_public"]
    assert fresh_interpreter["native_unresolved"] == []


def test_every_module_imports_in_a_fresh_interpreter(fresh_interpreter: dict[str, Any]) -> None:
    assert fresh_interpreter["import_failures"] == {}
