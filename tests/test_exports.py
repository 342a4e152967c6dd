"""Every package's public API is re-exported from its ``__init__`` and lives in this checkout."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = [
    "orchestrator",
    "adapters",
    "tiers",
    "contract",
    "adapters.native",
    "contract.model_server",
    "orchestrator.hosts",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(package.__all__)
    public = {
        attr
        for attr, value in vars(package).items()
        if not attr.startswith("_")
        and not isinstance(value, types.ModuleType)
        and attr != "annotations"
    }
    assert public == set(exported)
    for attr in exported:
        assert getattr(package, attr) is not None


@pytest.mark.parametrize("name", ["orchestrator", "adapters", "tiers", "contract"])
def test_packages_come_from_this_checkout(name: str) -> None:
    package = importlib.import_module(name)
    assert Path(str(package.__file__)).resolve().is_relative_to(REPO)
    assert (REPO / name / "py.typed").is_file()


def test_app_safe_packages_never_import_the_test_kit() -> None:
    code = (
        "import sys, orchestrator, adapters, tiers, adapters.native, orchestrator.hosts;"
        "bad = [m for m in ('pytest', 'hypothesis', 'contract') if m in sys.modules];"
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    )
    assert result.stdout.strip() == ""


def test_every_module_imports_in_a_fresh_interpreter() -> None:
    modules = [
        str(p.relative_to(REPO).with_suffix("")).replace("/", ".")
        for pkg in ["orchestrator", "adapters", "tiers", "contract"]
        for p in (REPO / pkg).rglob("*.py")
    ]
    modules = [m.removesuffix(".__init__") for m in modules if not m.endswith("__main__")]
    code = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)"
    subprocess.run([sys.executable, "-c", code, *modules], check=True, cwd="/", timeout=120)
