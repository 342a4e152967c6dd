"""The ACP runtime's spec, and the presets' (``acp:claude``, ``acp:codex``, ``acp:opencode``,
``acp:qwen``, ``acp:gemini``: :mod:`adapters.acp.presets`): how ringleader builds them from their
configuration (registered in the ``ringleader.runtimes`` entry-point group, as a third party's
runtime is). Each preset's spec is made from its row in the presets' table."""

from __future__ import annotations

from typing import Any

from adapters.acp.presets import PRESETS, AcpPreset, locate_agent, preset_adapter
from adapters.builtin import key_envs, pinned_version, refuse_unused
from orchestrator.core.adapter import RuntimeAdapter
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.registry import Installed, ModelServerHook, RuntimeSpec

__all__ = ["ACP", "ACP_CLAUDE", "ACP_CODEX", "ACP_GEMINI", "ACP_OPENCODE", "ACP_QWEN"]


def _acp(config: RuntimeConfig) -> RuntimeAdapter:
    from adapters.acp import AcpAdapter, AcpConfig

    refuse_unused(
        "acp", config, "mode", "prices", "base_url", "provider", "mcp_servers", "output_schema"
    )
    command = (config.binary, *config.extra_args) if config.binary else ()
    return AcpAdapter(
        AcpConfig(
            command=command,
            model=config.model,
            permission=config.permission or "deny",
        )
    )


ACP = RuntimeSpec(
    id="acp",
    factory=_acp,
    summary="any Agent Client Protocol agent (--acp-command 'opencode acp', or runtimes.acp.binary "
    "+ extra_args; ready ones: acp:claude, acp:codex, acp:opencode, acp:qwen, acp:gemini)",
    settings=frozenset({"binary", "model", "api_key_env", "permission", "extra_args"}),
)


def _preset_spec(preset: AcpPreset) -> RuntimeSpec:
    """A preset's spec, from its row in :data:`adapters.acp.presets.PRESETS`."""
    runtime_id = preset.runtime_id

    def build(config: RuntimeConfig) -> RuntimeAdapter:
        refuse_unused(
            runtime_id, config, "mode", "prices", "provider", "mcp_servers", "output_schema"
        )
        options: dict[str, Any] = {}
        if config.permission:
            options["permission"] = config.permission
        return preset_adapter(
            preset.name,
            base_url=config.base_url,
            model=config.model,
            key_env=config.api_key_env,
            binary=config.binary,
            extra_args=config.extra_args,
            **options,
        )

    def locate(config: RuntimeConfig) -> Installed:
        if config.binary:
            return Installed(config.binary, None)
        return Installed(str(locate_agent(preset)), pinned_version(preset.install_id))

    return RuntimeSpec(
        id=runtime_id,
        factory=build,
        model_server=ModelServerHook(
            api=preset.api, model=preset.local_model, tool_call=preset.tool_call
        ),
        key_envs=key_envs(preset.key_env),
        locate=locate,
        summary=preset.summary,
        settings=frozenset(
            {"binary", "model", "base_url", "api_key_env", "permission", "extra_args"}
        ),
    )


ACP_CLAUDE = _preset_spec(PRESETS["claude"])
ACP_CODEX = _preset_spec(PRESETS["codex"])
ACP_OPENCODE = _preset_spec(PRESETS["opencode"])
ACP_QWEN = _preset_spec(PRESETS["qwen"])
ACP_GEMINI = _preset_spec(PRESETS["gemini"])
