"""The contract plugin works from a separate project that only installs ringleader.

The project is the README's "Writing an adapter" example, extracted verbatim, so the README's
adapter and harness are proven to pass the whole suite.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from contract import AdapterContract

REPO = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(
        r"<!-- writing-an-adapter:start -->\s*```python\n(.*?)```\s*<!-- writing-an-adapter:end -->",
        text,
        re.S,
    )
    assert block is not None, "README lost its 'Writing an adapter' example"
    return block.group(1)


def test_readme_adapter_passes_the_contract_in_a_throwaway_project(tmp_path: Path) -> None:
    project = tmp_path / "echo_project"
    project.mkdir()
    (project / "test_echo_adapter.py").write_text(readme_example(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTEST_ADDOPTS"}}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "contract"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    expected = len([n for n in dir(AdapterContract) if n.startswith("test_")])
    passed = re.search(r"(\d+) passed", output)
    skipped = re.search(r"(\d+) skipped", output)
    total = int(passed.group(1) if passed else 0) + int(skipped.group(1) if skipped else 0)
    assert total == expected, output
    # only the optional hung-runtime check may skip (the example has no make_hung_adapter)
    assert int(skipped.group(1) if skipped else 0) <= 1, output
