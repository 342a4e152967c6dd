"""Locating installed runtimes; missing ones raise RuntimeNotFoundError with the install command."""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path

import pytest

from adapters import _runtimes
from adapters._process import child_env, open_child
from adapters._runtimes import install_hint, installed_spec, runtime_binary, runtime_path_dirs
from orchestrator.core.errors import ConfigError, RuntimeNotFoundError


def test_missing_runtime_raises_with_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RINGLEADER_RUNTIMES_DIR", str(tmp_path))
    for rid in _runtimes.RUNTIME_IDS:
        with pytest.raises(RuntimeNotFoundError) as info:
            runtime_binary(rid)
        assert info.value.install_hint == (
            f"run ringleader install {rid} (or point runtimes.{rid}.binary at an installed one)"
        )
        assert f"ringleader install {rid}" in str(info.value)
        assert info.value.path is not None
        assert info.value.path.startswith(str(tmp_path))
        assert pickle.loads(pickle.dumps(info.value)).install_hint == info.value.install_hint
        assert installed_spec(rid) is None
    with pytest.raises(RuntimeNotFoundError):
        runtime_path_dirs("openclaw")


def test_finds_native_binaries_under_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RINGLEADER_RUNTIMES_DIR", str(tmp_path))
    monkeypatch.setattr(_runtimes.platform, "machine", lambda: "x86_64")
    paths = {
        "claude-code": "claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude",
        "codex": "codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
        "hermes": "hermes/venv/bin/hermes",
        "openclaw": "openclaw/app/node_modules/.bin/openclaw",
    }
    for rid, rel in paths.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True)
        p.write_bytes(b"")
        with pytest.raises(RuntimeNotFoundError):  # present but not executable
            runtime_binary(rid)
        p.chmod(0o755)
        assert runtime_binary(rid) == p
    node = tmp_path / "openclaw/node24/node_modules/node/bin/node"
    node.parent.mkdir(parents=True)
    node.write_bytes(b"")
    node.chmod(0o755)
    assert runtime_path_dirs("openclaw") == (node.parent,)
    assert runtime_path_dirs("codex") == ()
    (tmp_path / "codex" / ".ringleader-installed").write_text("@openai/codex@0.169.0")
    assert installed_spec("codex") == "@openai/codex@0.169.0"


def test_default_dir_is_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RINGLEADER_RUNTIMES_DIR", raising=False)
    root = Path(_runtimes.__file__).resolve().parent.parent
    assert _runtimes.runtimes_dir() == root / ".runtimes"
    assert (root / "scripts" / "install-runtimes").is_file()
    assert os.access(root / "scripts" / "install-runtimes", os.X_OK)


def test_unknown_runtime() -> None:
    with pytest.raises(ConfigError):
        runtime_binary("nope")
    with pytest.raises(ConfigError):
        runtime_path_dirs("nope")
    assert install_hint("nope").startswith("run ringleader install RUNTIME")


_VERSION_PREFIX = {
    "claude-code": b"2.1.330 (Claude Code)",
    "codex": b"codex-cli 0.169.0",
    "hermes": b"Hermes Agent v0.19.0",
    "openclaw": b"OpenClaw 2026.9.6",
}


@pytest.mark.e2e
@pytest.mark.parametrize("rid", sorted(_VERSION_PREFIX))
async def test_installed_runtime_reports_its_version(rid: str, tmp_path: Path) -> None:
    """The real, pinned binary answers ``--version`` through the shared driver, offline."""
    binary = runtime_binary(rid)  # fails with "run scripts/install-runtimes <rid>" if missing
    home = tmp_path / "home"
    home.mkdir()
    path = os.pathsep.join([*map(str, runtime_path_dirs(rid)), os.environ.get("PATH", "")])
    extra = {
        "HOME": str(home),
        "TMPDIR": str(tmp_path),
        "PATH": path,
        "CLAUDE_CONFIG_DIR": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CODEX_HOME": str(home),
        "HERMES_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(home),
        "OPENCLAW_NO_AUTO_UPDATE": "1",
    }
    # `hermes --version` asks PyPI for updates unless a fresh answer is cached in HERMES_HOME.
    (home / ".update_check").write_text(
        json.dumps({"ts": time.time(), "behind": 0, "rev": None, "ver": "0.19.0"})
    )
    async with open_child(
        [binary, "--version"],
        env=child_env(extra=extra),
        adapter=rid,
        install_hint=install_hint(rid),
    ) as child:
        lines = [f async for f in child.lines() if isinstance(f, bytes)]
        assert await child.wait() == 0, child.stderr_tail
    assert any(line.startswith(_VERSION_PREFIX[rid]) for line in lines), lines
