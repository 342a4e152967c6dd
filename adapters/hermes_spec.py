"""The Hermes runtime's spec: how ringleader builds it from its configuration
(registered in the ``ringleader.runtimes`` entry-point group, as a third party's runtime is).
The adapter is imported when a run is built, never when the spec is listed."""

from __future__ import annotations

from typing import Any

from adapters.builtin import key_envs, locate_pinned, refuse_unused
from orchestrator.core.adapter import RuntimeAdapter
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import ModelServerHook, RuntimeSpec

__all__ = ["HERMES"]


def _hermes(config: RuntimeConfig) -> RuntimeAdapter:
    from adapters.hermes import HermesAdapter, HermesConfig

    refuse_unused("hermes", config, "extra_args", "mode", "prices", "mcp_servers", "output_schema")
    if config.provider not in (None, "custom", "openai", "anthropic"):
        raise ConfigError(
            f"runtimes.hermes.provider: {config.provider!r} is not supported (point base_url at "
            "a Chat Completions endpoint, or provider='anthropic' for Anthropic Messages)"
        )
    options: dict[str, Any] = {}
    if config.model:
        options["model"] = config.model
    if config.permission in ("allow", "ask"):
        options["permission"] = config.permission
    return HermesAdapter(
        HermesConfig(
            base_url=config.base_url,
            api_mode="anthropic_messages" if config.provider == "anthropic" else "chat_completions",
            key_env=config.api_key_env or "OPENAI_API_KEY",
            binary=config.binary,
            **options,
        )
    )


HERMES = RuntimeSpec(
    id="hermes",
    factory=_hermes,
    model_server=ModelServerHook(
        api="chat",
        model="fake-model",
        tool_call={"name": "terminal", "input": {"command": "ls"}},
    ),
    key_envs=key_envs("OPENAI_API_KEY"),
    locate=lambda config: locate_pinned("hermes", config),
    summary="Hermes Agent over the Agent Client Protocol (hermes acp)",
    settings=frozenset({"binary", "model", "provider", "base_url", "api_key_env", "permission"}),
)
