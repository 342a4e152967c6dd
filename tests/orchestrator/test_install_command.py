"""``ringleader install RUNTIME…`` (issue 34 item 9): the pinned installer is in the package, so a
pip user can run it; ``runtimes`` says how to install a runtime or point at one already there.
(No test installs from the registries: an installed runtime is found installed.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.core.installs import runtimes_dir


def ringleader(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, NO_COLOR="1", **env),
        check=False,
    )


def test_an_unknown_runtime_is_one_line() -> None:
    result = ringleader("install", "claude")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("ringleader: install: unknown runtime 'claude'")


def test_installing_an_installed_runtime_says_so_with_its_version() -> None:
    if not (runtimes_dir() / "codex" / ".ringleader-installed").is_file():
        pytest.skip("codex is not installed here (scripts/install-runtimes codex)")
    result = ringleader("install", "codex", RINGLEADER_RUNTIMES_DIR=str(runtimes_dir()))
    assert result.returncode == 0, result.stderr
    assert f"installing codex into {runtimes_dir()}" in result.stderr
    assert "codex: @openai/codex@" in result.stderr and "already installed" in result.stderr
    assert "codex-cli " in result.stdout


def test_runtimes_says_how_to_install_or_point_at_a_binary(tmp_path: Path) -> None:
    result = ringleader("runtimes", RINGLEADER_RUNTIMES_DIR=str(tmp_path / "none"), COLUMNS="400")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("codex"))
    assert "ringleader install codex" in line
    assert "runtimes.codex.binary" in line


def test_the_installer_ships_in_the_package() -> None:
    import orchestrator.cli

    script = Path(orchestrator.cli.__file__).with_name("install_runtimes.sh")
    assert script.is_file() and "CODEX_VERSION=" in script.read_text()
