"""A cloned repository's own runtime files run nothing until its directory is trusted, against the
real CLIs (``-m e2e``). Claude Code 2.1.330: ``ringleader run --runtime claude-code`` in a
repository whose ``.claude/settings.json`` holds hooks and whose ``.mcp.json`` names a server —
both commands — runs neither (``claude -p`` skips Claude Code's own workspace trust dialog, so
ringleader keeps the project's settings out: ``--setting-sources user --strict-mcp-config``; for
claude-agent-acp, ``acp:claude``, the SDK's ``settingSources`` and ``strictMcpConfig``).
Codex 0.169: a repository's ``.codex/config.toml`` MCP server does not start (Codex trusts the
directory it runs in by itself; ringleader marks it untrusted with ``-c projects=…``). OpenCode
(``acp:opencode``): the repository's ``opencode.json`` MCP server does not start
(``OPENCODE_DISABLE_PROJECT_CONFIG``). Once ``ringleader trust`` names the directory, each CLI
reads its files as usual."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters._runtimes import install_hint, runtime_binary
from orchestrator.core.errors import RuntimeNotFoundError

pytestmark = pytest.mark.e2e


def ringleader(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def installed(runtime: str) -> None:
    try:
        runtime_binary(runtime)
    except RuntimeNotFoundError as exc:
        pytest.fail(f"{runtime} is not installed: {install_hint(runtime)} ({exc})")


@pytest.mark.parametrize("runtime", ["claude-code", "acp:claude"])
def test_a_cloned_repositorys_claude_hooks_and_mcp_servers_run_only_once_trusted(
    runtime: str, tmp_path: Path
) -> None:
    if runtime == "claude-code":
        installed(runtime)
    repo = tmp_path / "clone"
    (repo / ".claude").mkdir(parents=True)
    ran = tmp_path / "ran"
    ran.mkdir()
    hook = {"hooks": [{"type": "command", "command": f"touch {ran}/hook"}]}
    settings = {"hooks": {"SessionStart": [hook], "UserPromptSubmit": [hook]}}
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    server = {"command": "sh", "args": ["-c", f"touch {ran}/mcp; sleep 5"]}
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"pwn": server}}))
    script = tmp_path / "script.json"
    turns = [{"text": "hello"}] * 4
    script.write_text(
        json.dumps({"model": "claude-sonnet-4-6", "conversations": [{"name": "c", "turns": turns}]})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    args = ("run", "--runtime", runtime, "--model-server", str(script), "--json", "hi")
    untrusted = ringleader(*args, cwd=repo, env=env)
    assert untrusted.returncode == 0, untrusted.stderr
    assert sorted(p.name for p in ran.iterdir()) == [], "the repository's commands ran"
    trusted = ringleader("trust", str(repo), cwd=tmp_path, env=env)
    assert trusted.returncode == 0, trusted.stderr
    again = ringleader(*args, cwd=repo, env=env)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in ran.iterdir()) == ["hook", "mcp"]  # its own settings, trusted


def test_a_cloned_repositorys_codex_config_runs_nothing_until_trusted(tmp_path: Path) -> None:
    installed("codex")
    repo = tmp_path / "clone"
    (repo / ".codex").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    ran = tmp_path / "ran"
    ran.mkdir()
    (repo / ".codex" / "config.toml").write_text(
        f'[mcp_servers.pwn]\ncommand = "sh"\nargs = ["-c", "touch {ran}/mcp; sleep 5"]\n'
    )
    script = tmp_path / "script.json"
    turns = [{"text": "hello"}] * 4
    script.write_text(
        json.dumps({"model": "gpt-5.5", "conversations": [{"name": "c", "turns": turns}]})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    args = ("run", "--runtime", "codex", "--model-server", str(script), "--json", "hi")
    untrusted = ringleader(*args, cwd=repo, env=env)
    assert untrusted.returncode == 0, untrusted.stderr
    assert sorted(p.name for p in ran.iterdir()) == [], "the repository's MCP server started"
    trusted = ringleader("trust", str(repo), cwd=tmp_path, env=env)
    assert trusted.returncode == 0, trusted.stderr
    again = ringleader(*args, cwd=repo, env=env)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in ran.iterdir()) == ["mcp"]  # its own config, trusted


def test_a_cloned_repositorys_opencode_config_runs_nothing_until_trusted(tmp_path: Path) -> None:
    """``acp:opencode``: the repository's ``opencode.json`` MCP server starts only once trusted
    (``OPENCODE_DISABLE_PROJECT_CONFIG`` otherwise)."""
    repo = tmp_path / "clone"
    repo.mkdir()
    ran = tmp_path / "ran"
    ran.mkdir()
    server = {"type": "local", "command": ["sh", "-c", f"touch {ran}/mcp; sleep 5"]}
    (repo / "opencode.json").write_text(json.dumps({"mcp": {"pwn": {**server, "enabled": True}}}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"conversations": [{"name": "c", "turns": [{"text": "hi"}] * 4}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    args = ("run", "--runtime", "acp:opencode", "--model-server", str(script), "--json", "hi")
    untrusted = ringleader(*args, cwd=repo, env=env)
    assert untrusted.returncode == 0, untrusted.stderr
    assert sorted(p.name for p in ran.iterdir()) == [], "the repository's MCP server started"
    assert ringleader("trust", str(repo), cwd=tmp_path, env=env).returncode == 0
    again = ringleader(*args, cwd=repo, env=env)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in ran.iterdir()) == ["mcp"]  # its own config, trusted
