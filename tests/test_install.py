"""A plain install works: the built wheel, no extras, in a fresh venv without pytest, runs
``ringleader demo`` and ``ringleader model-server``; and the contract plugin, next to pytest
without hypothesis, never breaks pytest and says what to install when the suite is used.

The venv is installed offline from a wheelhouse kept in ``$RINGLEADER_TEST_WHEELHOUSE`` (default:
``<tmp>/ringleader-test-wheelhouse``), filled once from the package index the first time (or when
a dependency is missing from it), so a run takes seconds, not minutes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
WHEELHOUSE = Path(
    os.environ.get("RINGLEADER_TEST_WHEELHOUSE")
    or Path(tempfile.gettempdir()) / "ringleader-test-wheelhouse"
)


def pip(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def clean_env(**extra: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    return {**env, "NO_COLOR": "1", **extra}


def fill_wheelhouse(*requirements: str) -> None:
    """Download ``requirements`` and their dependencies into the wheelhouse. Our own wheel is
    never kept there: pip resolves a wheel already in the wheel dir from *that* file, so a stale
    ``ringleader-0.1.0`` would hide a dependency added since (and shadow the fresh build)."""
    for stale in WHEELHOUSE.glob("ringleader-*.whl"):
        stale.unlink(missing_ok=True)
    fill = pip("wheel", "--quiet", "--wheel-dir", str(WHEELHOUSE), *requirements)
    for ours in WHEELHOUSE.glob("ringleader-*.whl"):
        ours.unlink(missing_ok=True)
    assert fill.returncode == 0, fill.stderr


def offline_install(venv: Path, dist: Path, *requirements: str) -> subprocess.CompletedProcess[str]:
    return pip(
        "--python",
        str(venv / "bin" / "python"),
        "install",
        "--quiet",
        "--no-compile",
        "--no-index",
        "--find-links",
        str(WHEELHOUSE),
        "--find-links",
        str(dist),
        *requirements,
    )


def build_wheel(dist: Path) -> Path:
    """ringleader's wheel, built (with hatchling from the wheelhouse) into ``dist``."""
    built = pip("wheel", "--quiet", "--no-deps", "--no-index", "--find-links", str(WHEELHOUSE),
                "--wheel-dir", str(dist), str(REPO))  # fmt: skip
    if built.returncode != 0:
        fill_wheelhouse(str(REPO), "hatchling", "pytest")
        built = pip("wheel", "--quiet", "--no-deps", "--no-index", "--find-links",
                    str(WHEELHOUSE), "--wheel-dir", str(dist), str(REPO))  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("ringleader-*.whl")
    return wheel


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A fresh venv with only the wheel and its dependencies; what the demo and the model
    server did there, before anything else was installed."""
    root = tmp_path_factory.mktemp("plain-install")
    dist = root / "dist"
    wheel = build_wheel(dist)
    venv = root / "venv"
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    installed = offline_install(venv, dist, "ringleader")
    if installed.returncode != 0:  # a dependency the wheelhouse lacks: fill it, once
        fill_wheelhouse(str(wheel), "pytest")
        installed = offline_install(venv, dist, "ringleader")
    assert installed.returncode == 0, installed.stderr
    bin_dir = venv / "bin"
    work = root / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n", encoding="utf-8")
    state = root / "state"
    env = clean_env(RINGLEADER_STATE_DIR=str(state), RINGLEADER_RUNTIMES_DIR=str(root / "none"))
    has_pytest = subprocess.run(
        [str(bin_dir / "python"), "-c", "import pytest"], capture_output=True, check=False
    )
    demo = subprocess.run(
        [str(bin_dir / "ringleader"), "demo"],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=240,
        check=False,
    )
    script = work / "script.json"
    script.write_text('{"conversations": [{"name": "c", "turns": [{"text": "hi"}]}]}')
    with subprocess.Popen(
        [str(bin_dir / "ringleader"), "model-server", "--script", str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as server:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        server.send_signal(signal.SIGINT)
        _, server_err = server.communicate(timeout=30)
    return {
        "venv": venv,
        "dist": dist,
        "env": env,
        "has_pytest": has_pytest.returncode == 0,
        "demo": demo,
        "url": url,
        "server_rc": server.returncode,
        "server_err": server_err,
    }


def test_plain_install_runs_the_demo_and_the_model_server(plain: dict[str, Any]) -> None:
    assert not plain["has_pytest"], "the plain install pulled in pytest"
    demo: subprocess.CompletedProcess[str] = plain["demo"]
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "Traceback" not in demo.stdout + demo.stderr
    assert "✓ list_files" in demo.stdout
    assert "done: success" in demo.stdout
    assert plain["url"].startswith("http://127.0.0.1:"), plain["server_err"]
    assert plain["server_rc"] == 0, plain["server_err"]
    assert "Traceback" not in plain["server_err"]


def test_contract_plugin_loads_without_hypothesis(plain: dict[str, Any], tmp_path: Path) -> None:
    venv: Path = plain["venv"]
    added = offline_install(venv, plain["dist"], "pytest")
    assert added.returncode == 0, added.stderr
    python = str(venv / "bin" / "python")
    assert subprocess.run([python, "-c", "import hypothesis"], check=False).returncode != 0
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_plain.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")

    def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
            cwd=folder,
            capture_output=True,
            text=True,
            env=plain["env"],
            timeout=120,
            check=False,
        )

    ok = pytest_in(project)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "1 passed" in ok.stdout
    markers = pytest_in(project, "--markers")
    assert "contract: a ringleader adapter contract test" in markers.stdout  # the plugin loaded
    (project / "test_uses_suite.py").write_text("from contract import AdapterContract\n")
    used = pytest_in(project)
    assert used.returncode != 0
    assert "pip install 'ringleader[contract]'" in used.stdout + used.stderr


def test_the_wheel_ships_the_boards_static_files_and_the_highlighter_licence(
    plain: dict[str, Any],
) -> None:
    """Every file of the board's static folder is in the wheel, the vendored highlight.js (and
    its licence) included: the board needs no build step and no network."""
    (wheel,) = Path(plain["dist"]).glob("ringleader-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    static = REPO / "orchestrator" / "board" / "static"
    wanted = {
        p.relative_to(REPO).as_posix()
        for p in static.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert "orchestrator/board/static/vendor/highlight/highlight.min.js" in wanted
    assert "orchestrator/board/static/vendor/highlight/LICENSE" in wanted
    assert wanted <= names, sorted(wanted - names)
