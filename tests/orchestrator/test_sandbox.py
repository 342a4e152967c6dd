"""``[sandbox] kind = "bubblewrap"`` (issue 34, a sandbox for every run): a real ``ringleader
run`` whose native bash tool tries to read a file planted in a fake home and to write outside
its workspace — both refused — while writing in its workspace works and the run succeeds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.core.sandbox import SandboxPolicy, probe, wrap

SECRET = "TOPSECRET-planted-in-the-fake-home"


@pytest.fixture
def bwrap() -> None:
    why = probe()
    if why is not None:  # scripts/test installs it (scripts/install-bubblewrap)
        pytest.skip(why)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside /tmp (the sandbox's private /tmp would hide it anyway): the fake home
    and the target of the escape live here, so only the sandbox's rules can refuse them."""
    path = Path(tempfile.mkdtemp(prefix="ringleader-sandbox-test-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


TOOLS: dict[str, tuple[str, str, dict[str, str]]] = {
    "native": ("bash", "command", {}),
    "claude-code": ("Bash", "command", {"description": "try things"}),
    "codex": ("exec_command", "cmd", {}),
    "openclaw": ("exec", "command", {}),
    "hermes": ("terminal", "command", {}),
}
"""Per runtime: its shell tool, the input field of the command, other input fields."""


@pytest.mark.parametrize(
    "runtime",
    [
        "native",
        pytest.param("claude-code", marks=pytest.mark.e2e),
        pytest.param("codex", marks=pytest.mark.e2e),
        pytest.param("openclaw", marks=pytest.mark.e2e),
        pytest.param("hermes", marks=pytest.mark.e2e),
    ],
)
def test_a_shell_tool_cannot_read_the_home_or_write_outside(
    bwrap: None, outside: Path, tmp_path: Path, runtime: str
) -> None:
    """Each runtime's shell tool in the sandbox: the planted secret in the (fake) home is not
    readable, a write outside the workspace fails, a write inside works, the run succeeds."""
    home = outside / "home"
    home.mkdir()
    (home / "secret.txt").write_text(SECRET + "\n")
    escape = outside / "escape.txt"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command = f"cat {home}/secret.txt; echo pwned > {escape}; echo fine > inside.txt; echo end"
    tool, field, more = TOOLS[runtime]
    call = {"name": tool, "input": {field: command, **more}}
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "conversations": [
                    {
                        "name": "c",
                        "turns": [{"text": "trying", "tool_calls": [call]}, {"text": "finished"}],
                    }
                ]
            }
        )
    )
    config = tmp_path / "ringleader.toml"
    config.write_text(
        f'[sandbox]\nkind = "bubblewrap"\n\n[runtimes.{runtime}]\npermission = "allow"\n'
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RINGLEADER_") or k == "RINGLEADER_RUNTIMES_DIR"
    }
    env |= {"HOME": str(home), "RINGLEADER_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "orchestrator.cli", "--config", str(config), "run"),
            *("--runtime", runtime, "--model-server", str(script), "--json", "go"),
        ],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [result] = [e for e in events if e["kind"] == "tool-result"]
    assert SECRET not in result["output"]  # the home is hidden
    assert "secret.txt: No such file or directory" in result["output"]
    assert "end" in result["output"]
    assert not escape.exists()  # outside the workspace: read-only
    assert (workspace / "inside.txt").read_text() == "fine\n"  # the workspace is writable
    assert events[-1]["kind"] == "done" and events[-1]["reason"] == "success"


def test_other_runs_and_the_state_directory_are_invisible(bwrap: None, tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "workspaces" / "other-run").mkdir(parents=True)
    (state / "workspaces" / "other-run" / "their.txt").write_text("theirs\n")
    mine = state / "homes" / "native" / "cli"
    mine.mkdir(parents=True)
    work = tmp_path / "ws"
    work.mkdir()
    policy = SandboxPolicy(hidden=(str(state),), writable=(str(mine),), bwrap="bwrap")
    argv = wrap(
        policy,
        ["sh", "-c", f"ls {state}/workspaces; echo x > {mine}/note; echo y > here"],
        str(work),
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert "other-run" not in done.stdout
    assert (mine / "note").read_text() == "x\n" and (work / "here").read_text() == "y\n"


def test_without_bubblewrap_the_probe_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    why = probe()
    assert why is not None and "not installed" in why


def _ringleader(
    tmp_path: Path, *args: str, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"RINGLEADER_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    if path is not None:
        env["PATH"] = path
    config = tmp_path / "ringleader.toml"
    config.write_text('[sandbox]\nkind = "bubblewrap"\n')
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "--config", str(config), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_doctor_says_whether_the_sandbox_works_here(bwrap: None, tmp_path: Path) -> None:
    works = _ringleader(tmp_path, "doctor")
    assert "sandbox: bubblewrap works here; on" in works.stdout, works.stdout
    missing = _ringleader(tmp_path, "doctor", path="/nonexistent")
    assert "sandbox: bubblewrap (bwrap) is not installed" in missing.stdout
    assert "runs are not confined" in missing.stdout


def test_without_bubblewrap_a_run_goes_on_unconfined_saying_so_once(tmp_path: Path) -> None:
    done = _ringleader(tmp_path, "run", "--runtime", "scripted", "hi", path="/nonexistent")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "sandbox off" in line]
    assert len(lines) == 1 and "not confined" in lines[0], done.stderr
