"""Runtimes come from the ``ringleader.runtimes`` entry-point group: ours, and a third party's
throwaway package pip-installed into a temporary venv, which then shows up in ``ringleader
runtimes`` and runs with ``ringleader run`` (configured through the environment) without any
change to ringleader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest

from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import (
    ENTRY_POINT_GROUP,
    RuntimeRegistry,
    RuntimeSpec,
    discover_runtimes,
)

REPO = Path(__file__).resolve().parents[2]

PLUGIN_MODULE = '''
"""A third-party runtime: a scripted adapter under its own id, echoing its configuration."""

from adapters.scripted import ScriptedAdapter
from orchestrator.core.registry import RuntimeSpec


class ToyAdapter(ScriptedAdapter):
    id = "toy"


def make(config):
    text = f"toy says hi; model={config.model}"
    return ToyAdapter(
        [
            {"type": "init", "sessionId": "toy-session", "model": config.model or "toy-model"},
            {"type": "text", "text": text},
            {"type": "result", "ok": True, "summary": text},
        ]
    )


SPEC = RuntimeSpec(id="toy", factory=make, summary="a throwaway plugin")


def broken_import():
    raise RuntimeError("never loaded")
'''

PLUGIN_PYPROJECT = """
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "ringleader-toy-runtime"
version = "0.0.1"

[project.entry-points."ringleader.runtimes"]
toy = "ringleader_toy:SPEC"
toy-bare = "ringleader_toy:make"
toy-broken = "ringleader_toy_missing:SPEC"

[tool.hatch.build.targets.wheel]
include = ["ringleader_toy.py"]
"""


def test_our_runtimes_register_through_the_group() -> None:
    ours = [
        ep
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)
        if ep.dist and ep.dist.name == "ringleader"
    ]
    assert {ep.name for ep in ours} >= {"native", "claude-code", "codex", "scripted"}
    specs = {spec.id: spec for spec in discover_runtimes()}
    assert (
        specs["codex"].model_server is not None and specs["codex"].model_server.api == "responses"
    )
    assert specs["claude-code"].model_server is not None
    assert specs["native"].model_server is not None


def test_the_cli_does_not_import_adapters_by_name() -> None:
    for path in (REPO / "orchestrator" / "cli").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert (
            '"adapters' not in source
            and "from adapters" not in source
            and "import adapters" not in source
        ), path


def test_registry_binds_each_factory_to_its_config() -> None:
    seen: list[RuntimeConfig] = []

    def factory(config: RuntimeConfig) -> object:
        seen.append(config)
        raise ConfigError("stop here")

    spec = RuntimeSpec(id="x", factory=factory)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    registry = RuntimeRegistry.from_specs([spec], lambda rid: RuntimeConfig(model=f"{rid}-model"))
    with pytest.raises(ConfigError):
        registry.create("x")
    assert seen == [RuntimeConfig(model="x-model")]


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv that sees ringleader (through a site dir) with the toy plugin pip-installed."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "src"
    source.mkdir()
    (source / "ringleader_toy.py").write_text(PLUGIN_MODULE, encoding="utf-8")
    (source / "pyproject.toml").write_text(PLUGIN_PYPROJECT, encoding="utf-8")
    venv = root / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    # ringleader (editable) and its dependencies, from the test's own environment
    ours = sysconfig.get_paths()["purelib"]
    (Path(site) / "zz_ringleader_env.pth").write_text(
        f"import site; site.addsitedir({ours!r})\n", encoding="utf-8"
    )
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            str(source),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    return python


def cli(
    python: Path, *args: str, tmp: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp,
        env={**os.environ, "RINGLEADER_STATE_DIR": str(tmp / "state"), **(env or {})},
    )


def test_plugin_appears_in_runtimes_and_runs(plugin_venv: Path, tmp_path: Path) -> None:
    listing = cli(plugin_venv, "runtimes", tmp=tmp_path)
    assert listing.returncode == 0, listing.stderr
    ids = [line.split()[0] for line in listing.stdout.splitlines()[1:]]
    assert {"native", "claude-code", "codex", "scripted", "toy", "toy-bare", "toy-broken"} <= set(
        ids
    )
    assert ids.index("toy") > ids.index("scripted")  # ours first, then third parties
    broken = next(line for line in listing.stdout.splitlines() if line.startswith("toy-broken"))
    assert "failed to load" in broken

    run = cli(
        plugin_venv, "run", "--runtime", "toy", "--json", "hello",
        tmp=tmp_path, env={"RINGLEADER_TOY_MODEL": "from-env"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert events[-1]["kind"] == "done" and events[-1]["reason"] == "success"
    assert "toy says hi; model=from-env" in "".join(e.get("text", "") for e in events)

    bare = cli(plugin_venv, "run", "--runtime", "toy-bare", "--json", "hello", tmp=tmp_path)
    assert bare.returncode == 0, bare.stderr

    failed = cli(plugin_venv, "run", "--runtime", "toy-broken", "hello", tmp=tmp_path)
    assert failed.returncode == 2
    assert (
        "runtime plugin 'toy-broken' (ringleader_toy_missing:SPEC) failed to load" in failed.stderr
    )

    config = cli(plugin_venv, "config", tmp=tmp_path, env={"RINGLEADER_TOY_MODEL": "m"})
    assert "runtimes.toy.model" in config.stdout and "env RINGLEADER_TOY_MODEL" in config.stdout
