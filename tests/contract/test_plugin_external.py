"""The contract plugin works from a separate project that only installs ringleader.

Each project is one of the "Writing an adapter" examples (docs/guide/adapters.md), extracted
verbatim, so the documented adapters and harnesses are proven to pass the whole suite: the in-memory one
(:class:`AdapterContract`) and the child-process one (:class:`AdapterContract` and
:class:`ProcessFaultContract`, against a real fake CLI).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contract import AdapterContract, ProcessFaultContract

REPO = Path(__file__).resolve().parents[2]


def readme_example(marker: str) -> str:
    text = (REPO / "docs" / "guide" / "adapters.md").read_text(encoding="utf-8")
    block = re.search(
        rf"<!-- {marker}:start -->\s*```python\n(.*?)```\s*<!-- {marker}:end -->", text, re.S
    )
    assert block is not None, f"docs/guide/adapters.md lost its {marker} example"
    return block.group(1)


def _count(cls: type) -> int:
    return len([n for n in dir(cls) if n.startswith("test_")])


@pytest.mark.parametrize(
    ("marker", "filename", "expected", "skips"),
    [
        # the in-memory example declares no runtime that could hang: that check skips, by name
        ("writing-an-adapter", "test_echo_adapter.py", _count(AdapterContract), 1),
        (
            "writing-a-cli-adapter",
            "test_tally_adapter.py",
            _count(AdapterContract) + _count(ProcessFaultContract),
            0,
        ),
    ],
    ids=["in-memory", "child-process"],
)
def test_readme_adapter_passes_the_contract_in_a_throwaway_project(
    tmp_path: Path, marker: str, filename: str, expected: int, skips: int
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    source = readme_example(marker)
    assert source.startswith(f"# {filename}\n")
    (project / filename).write_text(source, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTEST_ADDOPTS"}}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "contract", "-rs"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    passed = re.search(r"(\d+) passed", output)
    skipped = re.search(r"(\d+) skipped", output)
    n_passed = int(passed.group(1) if passed else 0)
    n_skipped = int(skipped.group(1) if skipped else 0)
    assert (n_passed + n_skipped, n_skipped) == (expected, skips), output
    if skips:
        assert "declares no external runtime" in output, output
    # nothing of the author's working directory is written by the suite (hypothesis db, caches)
    assert sorted(p.name for p in project.iterdir()) == [filename], output
