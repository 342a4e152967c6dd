"""The import rule of ``docs/architecture.md``, read from the source (ast), never by importing.

Layers, lowest first: ``tiers`` (no ringleader imports) → ``orchestrator.core`` → ``adapters`` →
``orchestrator.engine`` → the surfaces (``orchestrator.model_server``, ``orchestrator.board``,
``orchestrator.acp``, ``orchestrator.cli``), with ``contract`` (the adapter authors' test kit)
beside the adapters. A violation fails with ``file:line``, the import and the rule it breaks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("orchestrator", "adapters", "tiers", "contract")
SURFACES = (
    "orchestrator.board",
    "orchestrator.acp",
    "orchestrator.mcp",
    "orchestrator.cli",
    "orchestrator.model_server",
)
OURS = (*PACKAGES, "tests", "bench")


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    module: str
    """The absolute module imported (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    dynamic: bool = False
    """Loaded through importlib with a literal name."""

    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            for alias in node.names:  # the names say what is used: `from orchestrator import x`
                yield Import(path, node.lineno, f"{module}.{alias.name}")
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (
                    isinstance(node.func, ast.Name)
                    and node.func.id in ("import_module", "__import__")
                )
            )
        ):
            yield Import(path, node.lineno, node.args[0].value, dynamic=True)


def under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def layer_of(module: str) -> str:
    """The layer a module of ours belongs to."""
    for surface in SURFACES:
        if under(module, surface):
            return surface
    for name in ("orchestrator.core", "orchestrator.engine", "adapters", "tiers", "contract"):
        if under(module, name):
            return name
    if module == "orchestrator":
        return "orchestrator"
    raise AssertionError(f"{module} is in no layer: orchestrator/ holds only its sub-packages")


ALLOWED: dict[str, tuple[str, ...]] = {
    "tiers": ("tiers",),
    "orchestrator.core": ("orchestrator.core", "tiers"),
    "adapters": ("adapters", "orchestrator.core", "tiers"),
    "contract": ("contract", "orchestrator.core", "orchestrator.model_server", "adapters", "tiers"),
    "orchestrator.engine": ("orchestrator.engine", "orchestrator.core", "tiers"),
    "orchestrator.model_server": ("orchestrator.model_server", "orchestrator.core"),
    "orchestrator.board": (
        "orchestrator.board",
        "orchestrator.engine",
        "orchestrator.core",
        "tiers",
    ),
    "orchestrator.acp": ("orchestrator.acp", "orchestrator.engine", "orchestrator.core", "tiers"),
    "orchestrator.mcp": ("orchestrator.mcp", "orchestrator.engine", "orchestrator.core", "tiers"),
    "orchestrator.cli": (
        "orchestrator.cli",
        "orchestrator.board",
        "orchestrator.acp",
        "orchestrator.mcp",
        "orchestrator.model_server",
        "orchestrator.engine",
        "orchestrator.core",
        "tiers",
    ),
    "orchestrator": (),
}
"""What each layer may import of ours. The CLI and the engine reach the adapters only through the
registry (the ``ringleader.runtimes`` entry points), never by import."""

RULES = {
    "tiers": "tiers imports nothing of ringleader's",
    "orchestrator.core": "the core imports nothing above it",
    "adapters": "adapters import only orchestrator.core (and adapters/, tiers)",
    "contract": "the contract kit imports only the core, the model server and adapters",
    "orchestrator.engine": "the engine imports only the core: never a surface, never an adapter",
    "orchestrator.model_server": "the model server imports only the core",
    "orchestrator.board": "a surface imports the engine and the core, not another surface",
    "orchestrator.acp": "a surface imports the engine and the core, not another surface",
    "orchestrator.mcp": "a surface imports the engine and the core, not another surface",
    "orchestrator.cli": "the CLI imports the layers below it, never an adapter (the registry finds them)",
    "orchestrator": "orchestrator/__init__.py re-exports nothing",
}


def violations(paths: list[Path]) -> list[str]:
    found: list[str] = []
    for path in paths:
        layer = layer_of(module_name(path))
        for imp in imports_of(path):
            if not under(imp.module, *OURS) or imp.module == "orchestrator.__version__":
                continue  # not ours, or the distribution's version (orchestrator/__init__.py)
            if imp.dynamic:
                found.append(
                    f"{imp.where()}: importlib loads {imp.module}: import it (no importlib of our own modules)"
                )
                continue
            if under(imp.module, "tests", "bench"):
                found.append(
                    f"{imp.where()}: imports {imp.module}: no package imports tests or bench"
                )
                continue
            if not under(imp.module, *ALLOWED[layer]):
                found.append(f"{imp.where()}: imports {imp.module}: {RULES[layer]}")
    return found


def sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def test_every_import_follows_the_layer_rule() -> None:
    found = violations(sources())
    assert not found, "import rule broken:\n" + "\n".join(found)


def test_orchestrator_holds_only_its_layers() -> None:
    root = REPO / "orchestrator"
    modules = sorted(p.name for p in root.glob("*.py"))
    assert modules == ["__init__.py"], modules
    packages = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert packages == ["acp", "board", "cli", "core", "engine", "mcp", "model_server"]


@pytest.mark.parametrize(
    ("where", "source", "expected"),
    [
        (
            "adapters/planted.py",
            "from orchestrator.engine.actor import RunActor\n",
            "adapters import only orchestrator.core",
        ),
        (
            "orchestrator/core/planted.py",
            "from orchestrator.engine import runner\n",
            "the core imports nothing above it",
        ),
        (
            "orchestrator/engine/planted.py",
            "from ..board.server import board_app\n",
            "never a surface",
        ),
        ("orchestrator/engine/planted.py", "import adapters.native\n", "never an adapter"),
        (
            "orchestrator/board/planted.py",
            "from orchestrator.cli.main import main\n",
            "not another surface",
        ),
        (
            "orchestrator/cli/planted.py",
            "from tests.fixtures import x\n",
            "no package imports tests or bench",
        ),
        (
            "orchestrator/cli/planted.py",
            "import importlib\nm = importlib.import_module('orchestrator.model_server')\n",
            "no importlib of our own modules",
        ),
        (
            "tiers/planted.py",
            "def f():\n    from orchestrator.core import events\n",
            "tiers imports nothing",
        ),
    ],
)
def test_a_planted_violation_fails_with_file_line_and_rule(
    where: str, source: str, expected: str
) -> None:
    """The checker itself: each rule catches a planted import, naming file:line and the rule."""
    path = REPO / where
    assert not path.exists()
    path.write_text(source, encoding="utf-8")
    try:
        found = violations([path])
    finally:
        path.unlink()
    assert len(found) == 1, found
    line = (
        source.count(
            "\n", 0, source.index("import" if "importlib" not in source else "import_module")
        )
        + 1
    )
    assert found[0].startswith(f"{where}:{line}: "), found
    assert expected in found[0], found


def test_allowed_imports_pass() -> None:
    path = REPO / "adapters" / "planted_ok.py"
    path.write_text(
        "from orchestrator.core.events import EventFactory\nfrom adapters._json import json_object\n"
        "from tiers import PromptTiers\nimport trio\n",
        encoding="utf-8",
    )
    try:
        assert violations([path]) == []
    finally:
        path.unlink()
