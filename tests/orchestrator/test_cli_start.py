"""``ringleader runtimes`` starts light (#12: under 1 s): it builds every runtime and asks for its
health, but imports nothing only other commands or a run need. Deterministic (which modules got
imported), so a regression shows here, not as a flaky timing; the time itself is the bench row
``cli-start-runtimes`` (``python -m bench --only cli-start``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = (
    "mcp",  # the MCP client: most of a second of CPU; imported when a run opens its servers
    "mcp_types",
    "anthropic",  # model SDKs: imported when a native run starts
    "openai",
    "starlette",  # the board server
    "hypercorn",
    "ray",
    "opentelemetry",
    "rich.live",
    "orchestrator.board.server",
    "orchestrator.acp.server",
    "orchestrator.cli.sidebyside",
    "orchestrator.engine.hosts",
    "orchestrator.engine.otel",
)

PROBE = f"""
import contextlib, io, json, sys
from orchestrator.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["runtimes"])
print(json.dumps({{"code": code, "table": out.getvalue(),
                  "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def test_runtimes_imports_nothing_heavy(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "RINGLEADER_STATE_DIR": str(tmp_path)}
    if "RINGLEADER_RUNTIMES_DIR" in os.environ:
        env["RINGLEADER_RUNTIMES_DIR"] = os.environ["RINGLEADER_RUNTIMES_DIR"]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["code"] == 0
    assert "native" in result["table"] and "claude-code" in result["table"]
    assert result["heavy"] == []


def _probe(tmp_path: Path, code: str) -> dict[str, object]:
    """Run ``code`` (which prints one JSON line last) in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "NO_COLOR": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


ADAPTER_MODULES = (
    "adapters.native",
    "adapters.claude_code",
    "adapters.codex",
    "adapters.openclaw",
    "adapters.hermes",
)
"""The runtimes' packages (``adapters`` itself, with the shared child-process driver, is
imported by every spec; so is ``adapters.acp``: the ACP presets' specs are made from their
table, ``adapters/acp/presets.py``, which lives in the ACP package — about 60 ms)."""


def test_discovery_imports_no_adapter(tmp_path: Path) -> None:
    """Finding the runtimes (every command does) loads their specs, not their adapters: a
    ``run --runtime claude-code`` never pays for importing the native loop or OpenClaw's
    client (#37)."""
    result = _probe(
        tmp_path,
        f"""
import json, sys
from orchestrator.core.registry import discover_runtimes
ids = [spec.id for spec in discover_runtimes()]
print(json.dumps({{"ids": ids, "loaded": [m for m in {ADAPTER_MODULES!r} if m in sys.modules]}}))
""",
    )
    assert {"native", "claude-code", "codex", "openclaw", "hermes", "acp", "acp:claude"} <= set(
        result["ids"]  # pyright: ignore[reportArgumentType]
    )
    assert result["loaded"] == []


RUN_PROBE = """
import contextlib, io, json, sys
from orchestrator.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main({argv!r})
lines = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{{")]
print(json.dumps({{"code": code, "kinds": [line.get("kind") for line in lines],
                  "modules": [m for m in {watch!r} if m in sys.modules]}}))
"""


def test_native_anthropic_run_imports_no_openai(tmp_path: Path) -> None:
    """A native run on an Anthropic model (the default provider, against the built-in model
    server) imports the anthropic SDK and never the openai one (0.4–0.9 s of CPU, #37)."""
    argv = ["run", "--runtime", "native", "--model-server", "--json", "say hi"]
    result = _probe(tmp_path, RUN_PROBE.format(argv=argv, watch=("anthropic", "openai")))
    assert result["code"] == 0
    assert result["kinds"][-1] == "done"  # pyright: ignore[reportIndexIssue]
    assert result["modules"] == ["anthropic"]


def test_run_without_serving_imports_no_server(tmp_path: Path) -> None:
    """A run with neither ``--board`` nor ``--model-server`` imports no HTTP server (hypercorn),
    nor the board's or the model server's app, nor a model SDK it does not use."""
    watch = (
        "hypercorn",
        "orchestrator.board.server",
        "orchestrator.model_server",
        "anthropic",
        "openai",
        *ADAPTER_MODULES,
    )
    argv = ["run", "--runtime", "scripted", "--json", "say hi"]
    result = _probe(tmp_path, RUN_PROBE.format(argv=argv, watch=watch))
    assert result["code"] == 0
    assert result["kinds"][-1] == "done"  # pyright: ignore[reportIndexIssue]
    assert result["modules"] == []


def test_native_preload_imports_its_providers_sdk_only(tmp_path: Path) -> None:
    """The warm-up of a side-by-side run imports, for the native runtime, the SDK of the
    provider its model names (``--model openai:…``), not both."""
    result = _probe(
        tmp_path,
        """
import json, sys
from adapters.native_spec import NATIVE
from orchestrator.core.config import RuntimeConfig
assert NATIVE.preload is not None
NATIVE.preload(RuntimeConfig(), "openai:gpt-4.1")
print(json.dumps({"sdks": [m for m in ("anthropic", "openai") if m in sys.modules],
                  "adapter": "adapters.native.adapter" in sys.modules}))
""",
    )
    assert result == {"sdks": ["openai"], "adapter": True}
