"""examples/echo_runtime: a third-party runtime package. Installed (pip, --no-deps) into a
throwaway venv that sees ringleader, it shows up in `ringleader runtimes`, runs its agent as a
child process through `ringleader run`, and its adapter passes the whole contract suite."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from contract import AdapterContract, ProcessFaultContract

from .kit import clean_env, example_copy, ringleader


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the venv's python, the package's folder): the example pip-installed into a fresh venv
    whose site sees ringleader and its dependencies from this test's environment."""
    root = tmp_path_factory.mktemp("echo-runtime")
    package = example_copy("echo_runtime", root)  # pip builds in the tree: not in the repo
    venv = root / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    ours = sysconfig.get_paths()["purelib"]
    (Path(site) / "zz_ringleader_env.pth").write_text(
        f"import site; site.addsitedir({ours!r})\n", encoding="utf-8"
    )
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    done = subprocess.run(
        [*pip, "--no-deps", str(package)],  # hatchling comes from pip's configured index
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return python, package


def test_ringleader_runtimes_lists_it_after_its_own(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    python, _ = installed
    listing = ringleader("runtimes", cwd=tmp_path, env=clean_env(tmp_path), python=python)
    assert listing.returncode == 0, listing.stderr
    rows = {line.split()[0]: line for line in listing.stdout.splitlines()[1:]}
    ids = list(rows)
    assert "echo" in ids and ids.index("echo") > ids.index("scripted")  # ours first
    # healthy (`agent.py --version` answered), located with its version, no key needed
    assert rows["echo"].split()[1] == "ok", rows["echo"]
    assert "ringleader_echo/agent.py (echo-agent 0.1.0)" in rows["echo"]
    assert "not needed" in rows["echo"]

    # a configured binary that does not exist: not installed, and a run says so in one line
    env = clean_env(tmp_path, RINGLEADER_ECHO_BINARY="no-such-echo-agent")
    missing = ringleader("runtimes", cwd=tmp_path, env=env, python=python)
    assert missing.returncode == 0, missing.stderr
    row = next(line for line in missing.stdout.splitlines() if line.startswith("echo "))
    assert "no: not installed" in row and "RuntimeNotFoundError" in row, row
    run = ringleader(
        "run", "--runtime", "echo", "--json", "hi", cwd=tmp_path, env=env, python=python
    )
    assert run.returncode == 3, run.stderr  # 3: a runtime that is not installed
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert [e["kind"] for e in events] == ["error", "done"]
    assert events[0]["code"] == "runtime_not_found" and "no-such-echo-agent" in events[0]["message"]
    assert events[1]["reason"] == "error"


def test_ringleader_run_drives_its_agent_as_a_child_process(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    python, _ = installed
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("a file the agent lists\n")
    run = ringleader(
        "run", "--runtime", "echo", "--json", "hello there",
        cwd=work, env=clean_env(tmp_path), python=python,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    events: list[dict[str, Any]] = [json.loads(line) for line in run.stdout.splitlines()]
    assert [e["kind"] for e in events] == [
        "status", "tool-call", "tool-result", "text-delta", "cost", "done",
    ]  # fmt: skip
    assert events[0]["runId"].startswith("echo-")  # bound from the agent's hello
    assert (events[1]["name"], events[1]["input"]) == ("list_dir", {"path": "."})
    assert "notes.md" in events[2]["output"]  # it ran in the run's working directory
    # the agent echoes the prompt as ringleader assembled it (the task, then its context)
    answer = events[3]["text"]
    assert answer.startswith("You said: ") and "hello there" in answer
    assert events[4]["usage"]["inputTokens"] == len(answer.split()) - 2
    assert events[4]["costUsd"] is None  # the agent reports no price: unknown, never 0
    assert (events[5]["reason"], events[5]["summary"]) == ("success", answer)


def test_its_adapter_passes_the_contract_suite(installed: tuple[Path, Path]) -> None:
    python, package = installed
    result = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-m", "contract"],
        cwd=package, capture_output=True, text=True, timeout=400, check=False,
        env=clean_env(package.parent),
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    passed = re.search(r"(\d+) passed", output)
    expected = sum(
        1
        for cls in (AdapterContract, ProcessFaultContract)
        for name in dir(cls)
        if name.startswith("test_")
    )
    assert passed is not None and int(passed.group(1)) == expected, output
    assert "skipped" not in output and "failed" not in output, output
