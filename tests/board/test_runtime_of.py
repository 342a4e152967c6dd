"""The board's ``runtimeOf`` (orchestrator/board/static/common.js) reads a run key's runtime id,
one holding a colon too (``runtime:acp:claude:task:…``), run by Node on the module itself."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

COMMON = Path(__file__).resolve().parents[2] / "orchestrator" / "board" / "static" / "common.js"


def test_runtime_of_takes_ids_with_a_colon() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (scripts/install-runtimes needs it too)")
    keys = [
        "runtime:acp:claude:task:1a2b:run-3c4d",
        "runtime:codex:task:1a2b:run-3c4d",
        "runtime:native:task:1a2b",
        "not-a-run-key",
    ]
    # the module reads the page (its token) when loaded: a bare stand-in page for Node
    page = (
        "globalThis.location = {hash: '', pathname: '/', search: ''};"
        "globalThis.sessionStorage = {getItem: () => null, setItem: () => {}};"
        "globalThis.history = {replaceState: () => {}};"
        "globalThis.document = {querySelector: () => null};"
    )
    script = (
        f"{page} const {{ runtimeOf }} = await import({json.dumps(COMMON.as_uri())});"
        f"console.log(JSON.stringify({json.dumps(keys)}.map(runtimeOf)));"
    )
    done = subprocess.run(
        [
            node,
            "--experimental-detect-module",
            "--no-warnings",
            "--input-type=module",
            "-e",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["acp:claude", "codex", "native", ""]
