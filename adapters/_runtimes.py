"""Where the real runtimes live once ``scripts/install-runtimes`` has installed them.

Each runtime is isolated under the runtimes directory (``RINGLEADER_RUNTIMES_DIR``, default
``.runtimes`` at the repository root) and its **native** binary is used directly, not the npm shim:

==============  ===================================================================================
claude-code     ``claude-code/node_modules/@anthropic-ai/claude-code-linux-<arch>[-musl]/claude``
                (the Bun-compiled ELF; no Node needed at run time)
codex           ``codex/node_modules/@openai/codex-linux-<arch>/vendor/<arch>-unknown-linux-musl/bin/codex``
                (static musl binary; the ``codex.js`` shim would add a Node process and ~70 ms)
hermes          ``hermes/venv/bin/hermes`` (its own venv; the script's shebang is that venv's Python)
openclaw        ``openclaw/app/node_modules/.bin/openclaw``; needs Node 24 first on ``PATH``:
                :func:`runtime_path_dirs` gives ``openclaw/node24/node_modules/node/bin``
==============  ===================================================================================

The third-party ACP agents behind ``--runtime acp:NAME`` (:mod:`adapters.acp.presets`):

================  =================================================================================
claude-agent-acp  ``claude-agent-acp/node_modules/.bin/claude-agent-acp`` (a Node script)
codex-acp         ``codex-acp/node_modules/@zed-industries/codex-acp-linux-<arch>/bin/codex-acp``
opencode          ``opencode/node_modules/opencode-linux-<arch>[-baseline]/bin/opencode``
qwen-code         ``qwen-code/app/node_modules/.bin/qwen``; needs Node >= 22 first on ``PATH``:
                  ``qwen-code/node24/node_modules/node/bin``
gemini-cli        ``gemini-cli/node_modules/.bin/gemini`` (a Node script)
================  =================================================================================
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Final

from orchestrator.core.errors import ConfigError, RuntimeNotFoundError
from orchestrator.core.installs import RUNTIMES_DIR_ENV as RUNTIMES_DIR_ENV
from orchestrator.core.installs import runtimes_dir as core_runtimes_dir

__all__ = [
    "PINNED_VERSIONS",
    "RUNTIME_IDS",
    "install_hint",
    "installed_spec",
    "runtime_binary",
    "runtime_path_dirs",
    "runtimes_dir",
]


PINNED_VERSIONS: Final[dict[str, str]] = {
    "claude-code": "2.1.330",
    "codex": "0.169.0",
    "hermes": "0.19.0",
    "openclaw": "2026.9.6",
    "claude-agent-acp": "0.23.1",
    "codex-acp": "0.16.0",
    "opencode": "1.18.33",
    "qwen-code": "0.24.4",
    "gemini-cli": "0.61.0",
}
"""The versions ``ringleader install`` (orchestrator/cli/install_runtimes.sh) installs (measured in docs/runtimes.md)."""

RUNTIME_IDS: Final = tuple(PINNED_VERSIONS)

_STAMP: Final = ".ringleader-installed"
_REPO_ROOT: Final = Path(__file__).resolve().parent.parent


def runtimes_dir() -> Path:
    """The runtimes directory (:func:`orchestrator.core.installs.runtimes_dir`)."""
    return core_runtimes_dir()


def install_hint(runtime_id: str, *, config_key: str | None = None) -> str:
    """How to install ``runtime_id`` (e.g. ``"run ringleader install claude-code"``), and how to
    use one already installed instead (``runtimes.<config_key>.binary``, default the same id)."""
    which = runtime_id if runtime_id in PINNED_VERSIONS else "RUNTIME"
    key = config_key or which
    if ":" in key:
        key = f'"{key}"'
    return f"run ringleader install {which} (or point runtimes.{key}.binary at an installed one)"


def installed_spec(runtime_id: str) -> str | None:
    """The package spec the installer recorded for ``runtime_id``, or ``None`` if not installed."""
    stamp = runtimes_dir() / runtime_id / _STAMP
    try:
        return stamp.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def runtime_binary(runtime_id: str) -> Path:
    """The native executable of ``runtime_id``.

    Raises:
        RuntimeNotFoundError: the runtime is not installed (``install_hint`` says how to install it).
        ConfigError: ``runtime_id`` is not one of :data:`RUNTIME_IDS`.
    """
    candidates = _candidates(runtime_id)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    hint = install_hint(runtime_id)
    raise RuntimeNotFoundError(
        f"{runtime_id} is not installed (looked for {candidates[0]}); {hint}",
        path=str(candidates[0]),
        install_hint=hint,
        adapter=runtime_id,
    )


def runtime_path_dirs(runtime_id: str) -> tuple[Path, ...]:
    """Directories to put first on the child's ``PATH`` (OpenClaw needs Node 24 there).

    Raises:
        RuntimeNotFoundError: a directory the runtime needs is missing.
        ConfigError: ``runtime_id`` is unknown.
    """
    if runtime_id not in PINNED_VERSIONS:
        raise ConfigError(f"unknown runtime {runtime_id!r}; known: {', '.join(RUNTIME_IDS)}")
    if runtime_id not in ("openclaw", "qwen-code"):
        return ()
    node = runtimes_dir() / runtime_id / "node24" / "node_modules" / "node" / "bin" / "node"
    if not (node.is_file() and os.access(node, os.X_OK)):
        hint = install_hint(runtime_id)
        raise RuntimeNotFoundError(
            f"Node 24 for {runtime_id} is not installed (looked for {node}); {hint}",
            path=str(node),
            install_hint=hint,
            adapter=runtime_id,
        )
    return (node.parent,)


def _arch() -> tuple[str, str]:
    """(npm platform arch, Rust target arch) of this machine."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return "x64", "x86_64"
    if machine in ("aarch64", "arm64"):
        return "arm64", "aarch64"
    return machine, machine


def _candidates(runtime_id: str) -> list[Path]:
    root = runtimes_dir() / runtime_id
    npm_arch, rust_arch = _arch()
    match runtime_id:
        case "claude-code":
            scope = root / "node_modules" / "@anthropic-ai"
            return [
                scope / f"claude-code-linux-{npm_arch}" / "claude",
                scope / f"claude-code-linux-{npm_arch}-musl" / "claude",
            ]
        case "codex":
            return [
                root
                / "node_modules"
                / "@openai"
                / f"codex-linux-{npm_arch}"
                / "vendor"
                / f"{rust_arch}-unknown-linux-musl"
                / "bin"
                / "codex"
            ]
        case "hermes":
            return [root / "venv" / "bin" / "hermes"]
        case "openclaw":
            return [root / "app" / "node_modules" / ".bin" / "openclaw"]
        case "claude-agent-acp":
            return [root / "node_modules" / ".bin" / "claude-agent-acp"]
        case "codex-acp":
            scope = root / "node_modules" / "@zed-industries"
            return [scope / f"codex-acp-linux-{npm_arch}" / "bin" / "codex-acp"]
        case "opencode":
            modules = root / "node_modules"
            return [
                modules / f"opencode-linux-{npm_arch}" / "bin" / "opencode",
                modules / f"opencode-linux-{npm_arch}-baseline" / "bin" / "opencode",
                modules / f"opencode-linux-{npm_arch}-musl" / "bin" / "opencode",
            ]
        case "qwen-code":
            return [root / "app" / "node_modules" / ".bin" / "qwen"]
        case "gemini-cli":
            return [root / "node_modules" / ".bin" / "gemini"]
        case _:
            raise ConfigError(f"unknown runtime {runtime_id!r}; known: {', '.join(RUNTIME_IDS)}")
