"""The examples use ringleader only through its public names: what a package re-exports
(``from .module import Name as Name``) or what a module lists in its ``__all__``; never a
private module (``adapters._cli``) or a name a module keeps to itself."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from .kit import EXAMPLES, REPO

OURS = ("orchestrator", "adapters", "contract", "tiers")
SOURCES = sorted(p for p in EXAMPLES.rglob("*.py") if "__pycache__" not in p.parts)


def our_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for each import of ringleader's packages (name None: `import m`)."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in OURS:
                found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, alias.name, None)
                for alias in node.names
                if alias.name.split(".")[0] in OURS
            ]
    return found


def test_there_are_examples_to_check() -> None:
    assert len(SOURCES) >= 6
    assert sum(len(our_imports(p)) for p in SOURCES) >= 20


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_an_example_imports_only_public_names(path: Path) -> None:
    problems: list[str] = []
    for line, module_name, name in our_imports(path):
        where = f"{path.relative_to(REPO)}:{line}"
        if any(part.startswith("_") for part in module_name.split(".")):
            problems.append(f"{where}: {module_name} is private")
            continue
        module = importlib.import_module(module_name)
        if name is None:
            continue
        public = getattr(module, "__all__", None)
        if public is not None:
            if name not in public:
                problems.append(f"{where}: {module_name}.{name} is not in its __all__")
        elif name.startswith("_") or not hasattr(module, name):
            problems.append(f"{where}: {module_name} does not re-export {name}")
    assert problems == []
