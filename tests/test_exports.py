"""Every package says each public name once, as ``from .module import Name as Name`` (no
``__all__`` in a package, no lazy tables): the name is defined in that module's ``__all__``, and
the package's public namespace is exactly what it re-exports or defines. Packages come from this
checkout, and the app-safe packages never pull in the test kit."""

from __future__ import annotations

import ast
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
PACKAGES = sorted(
    str(p.parent.relative_to(REPO)).replace("/", ".")
    for top in TOP_LEVEL
    for p in (REPO / top).rglob("__init__.py")
)
# adapters.native (the model SDKs) is checked in the fresh interpreter below as well
SLOW = {
    "adapters.native",
    "adapters.native.anvia",
    "adapters.native.models",
    "adapters.native.stores",
}


def public_names(package: types.ModuleType) -> set[str]:
    """Names defined at the package's top level that are not private and not submodules."""
    return {
        name
        for name, value in vars(package).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"  # from __future__ import annotations
    }


def said_once(package: str) -> tuple[dict[str, str], set[str]]:
    """The package's ``__init__.py``: each re-exported name → its module, and names it defines."""
    path = REPO.joinpath(*package.split(".")) / "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exported: dict[str, str] = {}
    defined: set[str] = set()
    nodes = list(tree.body)
    for node in list(nodes):  # `try: <extra's imports> else: <names>` (contract without its extra)
        if isinstance(node, ast.Try):
            nodes += [*node.body, *node.orelse]
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = package.split(".")[: len(package.split(".")) - max(node.level - 1, 0)]
            module = (
                ".".join([*base, *([node.module] if node.module else [])])
                if node.level
                else node.module or ""
            )
            for alias in node.names:
                if alias.asname is not None and not alias.asname.startswith("_"):
                    assert alias.asname == alias.name, f"{package}: {alias.name} as {alias.asname}"
                    assert alias.asname not in exported, f"{package}: {alias.name} said twice"
                    exported[alias.asname] = module
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                assert not (isinstance(target, ast.Name) and target.id == "__all__"), (
                    f"{package}: a package says its names once, in its imports, not in __all__"
                )
                if isinstance(target, ast.Name) and not target.id.startswith("_"):
                    defined.add(target.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            assert node.name != "__getattr__", f"{package}: no lazy name tables"
            if not node.name.startswith("_"):
                defined.add(node.name)
    return exported, defined


@pytest.mark.parametrize("name", [p for p in PACKAGES if p not in SLOW])
def test_each_name_is_said_once(name: str) -> None:
    exported, defined = said_once(name)
    package = importlib.import_module(name)
    assert public_names(package) == set(exported) | defined
    for attr, module_name in exported.items():
        module = importlib.import_module(module_name)
        assert getattr(package, attr) is getattr(module, attr), attr
        # a re-export names something its module exports
        assert attr in getattr(module, "__all__", [attr]), f"{attr} not in {module_name}.__all__"


def test_orchestrator_itself_exports_nothing() -> None:
    exported, defined = said_once("orchestrator")
    assert exported == {} and defined == set()


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_packages_come_from_this_checkout(name: str) -> None:
    package = importlib.import_module(name)
    path = Path(str(package.__file__)).resolve()
    assert path.is_relative_to(REPO), f"{name} imported from {path}, not from {REPO}"
    assert path == REPO / name / "__init__.py"
    assert (REPO / name / "py.typed").is_file()


FRESH_INTERPRETER = """
import importlib, json, sys, types

app_safe, modules, slow = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
for name in app_safe:
    importlib.import_module(name)
report = {
    "test_kit": sorted(
        m for m in sys.modules
        if m in ("pytest", "_pytest", "hypothesis", "contract") or m.startswith("contract.")
    ),
    "files": {name: sys.modules[name].__file__ for name in app_safe},
}
report["native_public"] = {
    package: sorted(
        n for n, v in vars(sys.modules[package]).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType) and n != "annotations"
    )
    for package in slow
}
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
    app_safe = [*APP_SAFE, "orchestrator.core", "orchestrator.engine", "adapters.native"]
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            FRESH_INTERPRETER,
            json.dumps(app_safe),
            json.dumps(modules),
            json.dumps(sorted(SLOW)),
        ],
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


@pytest.mark.parametrize("name", sorted(SLOW))
def test_native_packages_say_each_name_once(name: str, fresh_interpreter: dict[str, Any]) -> None:
    exported, defined = said_once(name)
    assert fresh_interpreter["native_public"][name] == sorted(set(exported) | defined)


def test_every_module_imports_in_a_fresh_interpreter(fresh_interpreter: dict[str, Any]) -> None:
    assert fresh_interpreter["import_failures"] == {}
