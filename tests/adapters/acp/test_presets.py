"""The ACP agent presets (``--runtime acp:NAME``): registered and listed, what each agent is
given (homes, endpoint, key by variable name only), a missing agent's install line, and run keys
whose runtime id holds a colon. The real agents are driven in tests/e2e/test_acp_agents.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.acp.presets import (
    PRESETS,
    PresetConfig,
    codex_config_toml,
    opencode_config,
    preset_adapter,
    preset_env,
)
from adapters.builtin import builtin_registry, builtin_runtimes
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError, RuntimeNotFoundError
from orchestrator.engine import notify, otel

PRESET_IDS = ["acp:claude", "acp:codex", "acp:opencode", "acp:qwen", "acp:gemini"]


def test_every_preset_is_a_registered_runtime() -> None:
    specs = {spec.id: spec for spec in builtin_runtimes()}
    assert all(rid in specs for rid in PRESET_IDS)
    registry = builtin_registry()
    for rid in PRESET_IDS:
        assert registry.create(rid).id == rid
    # each can be pointed at the scripted model server (--model-server), in its own API
    hooks = [specs[r].model_server for r in PRESET_IDS]
    apis = [h.api if h else None for h in hooks]
    assert apis == ["anthropic", "responses", "chat", "chat", "gemini"]


def test_the_entry_points_register_the_presets() -> None:
    text = (Path(__file__).resolve().parents[3] / "pyproject.toml").read_text()
    for rid in PRESET_IDS:
        assert f'"{rid}" = "adapters.acp_spec:' in text


def test_a_setting_the_preset_cannot_use_is_refused() -> None:
    spec = next(s for s in builtin_runtimes() if s.id == "acp:qwen")
    with pytest.raises(ConfigError, match=r"runtimes\.acp:qwen\.provider"):
        spec.create(RuntimeConfig(provider="openai"))


def test_codex_gets_a_local_provider_by_key_name_and_asks_before_commands() -> None:
    toml = codex_config_toml("http://127.0.0.1:9/v1", "MY_KEY", "gpt-5.5")
    assert 'model_provider = "ringleader"' in toml
    assert 'base_url = "http://127.0.0.1:9/v1"' in toml and 'env_key = "MY_KEY"' in toml
    assert 'approval_policy = "untrusted"' in toml
    assert 'exclude = ["MY_KEY"]' in toml and "shell_snapshot = false" in toml
    bare = codex_config_toml(None, "OPENAI_API_KEY", None)
    assert "model_provider" not in bare and "base_url" not in bare


def test_opencode_names_the_key_variable_never_the_key() -> None:
    config = opencode_config("http://127.0.0.1:9/v1", "MY_KEY", "m1")
    provider = config["provider"]["ringleader"]
    assert provider["options"] == {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{env:MY_KEY}"}
    assert config["model"] == "ringleader/m1"
    assert config["permission"]["bash"] == "ask"
    assert "provider" not in opencode_config(None, "K", "anthropic/claude-x")


def test_each_agent_gets_its_own_home_and_endpoint(tmp_path: Path) -> None:
    home = tmp_path / "h"
    claude = preset_env(
        PresetConfig(PRESETS["claude"], base_url="http://127.0.0.1:9"), home, "k", None
    )
    assert claude["HOME"] == str(home) and claude["CLAUDE_CONFIG_DIR"] == str(home / ".claude")
    assert claude["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert claude["ANTHROPIC_API_KEY"] == "k"
    qwen = preset_env(
        PresetConfig(PRESETS["qwen"], base_url="http://127.0.0.1:9/v1"), home, "k", "m"
    )
    assert qwen["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1" and qwen["OPENAI_MODEL"] == "m"
    opencode = preset_env(
        PresetConfig(PRESETS["opencode"], base_url="http://127.0.0.1:9/v1", key_env="OC"),
        home,
        "k",
        "m",
    )
    assert opencode["OC"] == "k" and opencode["XDG_CONFIG_HOME"].startswith(str(home))
    # its background install of @opencode-ai/plugin would otherwise reach the npm registry
    assert opencode["npm_config_offline"] == "true"
    assert (
        "k"
        not in json.loads(opencode["OPENCODE_CONFIG_CONTENT"])["provider"]["ringleader"][
            "options"
        ].values()
    )
    gemini = preset_env(
        PresetConfig(PRESETS["gemini"], base_url="http://127.0.0.1:9"), home, "k", None
    )
    assert gemini["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"


def test_a_missing_agent_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RINGLEADER_RUNTIMES_DIR", str(tmp_path))
    adapter = preset_adapter("codex")
    with pytest.raises(RuntimeNotFoundError) as info:
        adapter.binary()
    assert info.value.install_hint == (
        'run ringleader install codex-acp (or point runtimes."acp:codex".binary at an '
        "installed one)"
    )
    assert str(tmp_path) in str(info.value)


def test_a_bad_key_variable_is_refused() -> None:
    with pytest.raises(ConfigError, match="environment variable name"):
        preset_adapter("qwen", key_env="not a name")


def test_run_keys_with_a_colon_in_the_runtime_id() -> None:
    key = "runtime:acp:claude:task:1a2b:run-3c4d"
    assert notify._runtime_of(key) == "acp:claude"  # pyright: ignore[reportPrivateUsage]
    assert notify._base_key(key) == "runtime:acp:claude:task:1a2b"  # pyright: ignore[reportPrivateUsage]
    assert otel._runtime_of(key) == "acp:claude"  # pyright: ignore[reportPrivateUsage]
    plain = "runtime:codex:task:1a2b:run-3c4d"
    assert notify._runtime_of(plain) == "codex"  # pyright: ignore[reportPrivateUsage]
    assert notify._base_key(plain) == "runtime:codex:task:1a2b"  # pyright: ignore[reportPrivateUsage]


def test_the_installer_knows_the_acp_agents(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "install", "acp-agent"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "unknown runtime 'acp-agent'" in line
    for name in ("claude-agent-acp", "codex-acp", "opencode", "qwen-code", "gemini-cli"):
        assert name in line
    script = Path(__file__).resolve().parents[3] / "orchestrator" / "cli" / "install_runtimes.sh"
    text = script.read_text()
    assert "ACP_AGENTS=(claude-agent-acp codex-acp opencode qwen-code gemini-cli)" in text


def test_runtimes_lists_the_presets_with_their_install_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "runtimes"],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "RINGLEADER_RUNTIMES_DIR": str(tmp_path / "none"),
            "COLUMNS": "400",
            "NO_COLOR": "1",
        },
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    for rid in PRESET_IDS:
        install_id = PRESETS[rid.removeprefix("acp:")].install_id
        assert f"ringleader install {install_id}" in lines[rid]
        assert f'runtimes."{rid}".binary' in lines[rid]
