"""A cloned repository's own runtime files run nothing until its directory is trusted, against the
real CLIs (``-m e2e``). Claude Code 2.1.330: ``ringleader run --runtime claude-code`` in a
repository whose ``.claude/settings.json`` holds hooks and whose ``.mcp.json`` names a server —
both commands — runs neither (``claude -p`` skips Claude Code's own workspace trust dialog, so
ringleader keeps the project's settings out: ``--setting-sources user --strict-mcp-config``; for
claude-agent-acp, ``acp:claude``, the SDK's ``settingSources`` and ``strictMcpConfig``).
Codex 0.169: a repository's ``.codex/config.toml`` MCP server does not start (Codex trusts the
directory it runs in by itself; ringleader marks it untrusted with ``-c projects=…``). OpenCode
(``acp:opencode``): the repository's ``opencode.json`` MCP server does not start
(``OPENCODE_DISABLE_PROJECT_CONFIG``). Hermes 0.19.0: the language servers it starts after a
file edit do not run the interpreter a repository's ``pyrightconfig.json`` names (``lsp.enabled:
false``). OpenClaw 2026.9.6: a repository's ``.env`` does not reach its exec tool's commands (the
gateway starts in its state directory). Once ``ringleader trust`` names the directory, each CLI
reads its files as usual."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def test_a_cloned_repositorys_code_runs_in_hermes_language_servers_only_once_trusted(
    tmp_path: Path,
) -> None:
    """Hermes starts language servers against the repository after each file edit
    (``agent/lsp/servers.py``), and pyright runs the interpreter the repository names
    (``pyrightconfig.json``'s venv): the repository's own program. Untrusted: ``lsp.enabled:
    false`` in the generated config, and it never runs."""
    installed("hermes")
    bin_dir = Path(sys.executable).parent  # pyright, a development dependency, is here
    if not (bin_dir / "pyright-langserver").exists():
        pytest.fail(f"pyright-langserver is not in {bin_dir}: scripts/setup installs it")
    if shutil.which("node") is None:  # pyright's bundled server runs on it
        pytest.fail("node is not on PATH")
    repo = tmp_path / "clone"
    (repo / ".venv" / "bin").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    ran = tmp_path / "ran"
    ran.mkdir()
    python = repo / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\ntouch {ran}/python\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (repo / "pyrightconfig.json").write_text(json.dumps({"venvPath": ".", "venv": ".venv"}))
    # the agent writes a Python file, then waits (at most 15 s) for the repository's program
    wait = f"for i in $(seq 75); do [ -e {ran}/python ] && break; sleep 0.2; done; echo waited"
    turns: list[Any] = [
        {"tool_calls": [{"name": "write_file", "input": {"path": "x.py", "content": "x = 1\n"}}]},
        {"tool_calls": [{"name": "terminal", "input": {"command": wait}}]},
        *[{"text": "done"}] * 3,  # and any further call Hermes makes
    ]
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"model": "fake-model", "conversations": [{"name": "c", "turns": turns}]})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "PATH": os.pathsep.join([str(bin_dir), env.get("PATH", os.defpath)]),
    }
    user = tmp_path / "xdg" / "ringleader" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[runtimes.hermes]\npermission = "allow"\n')  # yours: edits need no person
    args = ("run", "--runtime", "hermes", "--model-server", str(script), "--json", "hi")
    untrusted = ringleader(*args, cwd=repo, env=env)
    assert untrusted.returncode == 0, untrusted.stderr
    assert (repo / "x.py").read_text() == "x = 1\n"  # the edit that starts them was made
    assert sorted(p.name for p in ran.iterdir()) == [], "the repository's program ran"
    assert ringleader("trust", str(repo), cwd=tmp_path, env=env).returncode == 0
    again = ringleader(*args, cwd=repo, env=env)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in ran.iterdir()) == ["python"]  # its language servers, trusted


def test_a_cloned_repositorys_dotenv_reaches_openclaw_commands_only_once_trusted(
    tmp_path: Path,
) -> None:
    """OpenClaw loads ``.env`` from its working directory into the environment every command
    of its exec tool inherits; its blocklist lets ``PERLLIB`` through, so the repository's Perl
    ran on a ``shasum``. Untrusted: the gateway starts in its own state directory and the
    repository's ``.env`` is not read (the agent still works in the repository)."""
    installed("openclaw")
    if shutil.which("shasum") is None:
        pytest.fail("shasum (perl) is not installed")
    repo = tmp_path / "clone"
    (repo / "perl").mkdir(parents=True)
    ran = tmp_path / "ran"
    ran.mkdir()
    (repo / "perl" / "strict.pm").write_text(f'open(my $f, ">", "{ran}/perl"); close($f); 1;\n')
    (repo / ".env").write_text(f"PERLLIB={repo / 'perl'}\n")
    turns: list[Any] = [
        {"tool_calls": [{"name": "exec", "input": {"command": "shasum /dev/null > sum.txt"}}]},
        *[{"text": "done"}] * 3,  # and any further call OpenClaw makes
    ]
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"model": "openclaw-model", "conversations": [{"name": "c", "turns": turns}]})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    args = ("run", "--runtime", "openclaw", "--model-server", str(script), "--json", "hi")
    untrusted = ringleader(*args, cwd=repo, env=env)
    assert untrusted.returncode == 0, untrusted.stderr
    assert (repo / "sum.txt").read_text().startswith("da39a3ee")  # ran, in the repository
    assert sorted(p.name for p in ran.iterdir()) == [], "the repository's Perl ran"
    assert ringleader("trust", str(repo), cwd=tmp_path, env=env).returncode == 0
    again = ringleader(*args, cwd=repo, env=env)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in ran.iterdir()) == ["perl"]  # its own .env, trusted
