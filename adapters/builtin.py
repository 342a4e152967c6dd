"""What ringleader's own runtimes share: the check that refuses settings a runtime has no use
for, where a pinned CLI is installed, and the registry of all of them.

Each runtime's spec lives beside its adapter's package (``adapters/<runtime>_spec.py``, not
inside it: importing a module of the package would import the package, and with it the adapter;
the scripted one is ``adapters/scripted_spec.py``); ``pyproject.toml`` registers each in the ``ringleader.runtimes``
entry-point group (the group third-party runtimes use), so the CLI finds ours exactly as it finds
theirs. Each factory imports its adapter lazily: a runtime whose module or binary is missing never
breaks the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import Installed, RuntimeRegistry, RuntimeSpec

__all__ = [
    "builtin_registry",
    "builtin_runtimes",
    "key_envs",
    "locate_pinned",
    "pinned_version",
    "refuse_unused",
]


_NATIVE_ONLY = ("skills_dir", "subagents", "hooks", "skills")


def refuse_unused(runtime_id: str, config: RuntimeConfig, *fields: str) -> None:
    """Settings a runtime has no use for are an error, not silently ignored (the native app
    layer's settings on any other runtime included)."""
    for field in (*fields, *(_NATIVE_ONLY if runtime_id != "native" else ())):
        value: Any = getattr(config, field)
        if value:
            raise ConfigError(
                f"runtimes.{runtime_id}.{field}: not used by the {runtime_id} runtime"
            )


def key_envs(default: str) -> Callable[[RuntimeConfig], tuple[str, ...]]:
    """Where a runtime's key can be: the configured ``api_key_env``, then ``default``."""
    return lambda config: tuple(v for v in (config.api_key_env, default) if v)


def locate_pinned(runtime_id: str, config: RuntimeConfig) -> Installed:
    from adapters._runtimes import runtime_binary

    if config.binary:
        return Installed(config.binary, None)
    return Installed(str(runtime_binary(runtime_id)), pinned_version(runtime_id))


def pinned_version(install_id: str) -> str | None:
    """The installed version of a pinned CLI (from its install stamp, else its pin)."""
    from adapters._runtimes import PINNED_VERSIONS, installed_spec

    spec = installed_spec(install_id)
    # the stamp is "pkg@version", or for openclaw "openclaw@version+node@version"
    return spec.split("+", 1)[0].rsplit("@", 1)[-1] if spec else PINNED_VERSIONS.get(install_id)


def builtin_runtimes() -> tuple[RuntimeSpec, ...]:
    """ringleader's own runtimes, in the order ``ringleader runtimes`` lists them."""
    from adapters.acp_spec import ACP, ACP_CLAUDE, ACP_CODEX, ACP_GEMINI, ACP_OPENCODE, ACP_QWEN
    from adapters.claude_code_spec import CLAUDE_CODE
    from adapters.codex_spec import CODEX
    from adapters.hermes_spec import HERMES
    from adapters.native_spec import NATIVE
    from adapters.openclaw_spec import OPENCLAW
    from adapters.scripted_spec import SCRIPTED

    return (
        NATIVE,
        CLAUDE_CODE,
        CODEX,
        OPENCLAW,
        HERMES,
        ACP,
        ACP_CLAUDE,
        ACP_CODEX,
        ACP_OPENCODE,
        ACP_QWEN,
        ACP_GEMINI,
        SCRIPTED,
    )


def builtin_registry() -> RuntimeRegistry:
    """A registry with ringleader's own runtimes, default configuration (the CLI discovers
    runtimes through the entry-point group instead, third parties' included)."""
    return RuntimeRegistry.from_specs(builtin_runtimes())
