"""The ACP runtime's spec, and the presets' (``acp:claude``, ``acp:codex``, ``acp:opencode``,
``acp:qwen``, ``acp:gemini``: :mod:`adapters.acp.presets`): how ringleader builds them from their
configuration (registered in the ``ringleader.runtimes`` entry-point group, as a third party's
runtime is).
The adapter is imported when a run is built, never when the spec is listed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.builtin import refuse_unused
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


def _preset_factory(name: str) -> Callable[[RuntimeConfig], RuntimeAdapter]:
    runtime_id = f"acp:{name}"

    def build(config: RuntimeConfig) -> RuntimeAdapter:
        from adapters.acp.presets import preset_adapter

        refuse_unused(
            runtime_id, config, "mode", "prices", "provider", "mcp_servers", "output_schema"
        )
        options: dict[str, Any] = {}
        if config.permission:
            options["permission"] = config.permission
        return preset_adapter(
            name,
            base_url=config.base_url,
            model=config.model,
            key_env=config.api_key_env,
            binary=config.binary,
            extra_args=config.extra_args,
            **options,
        )

    return build


def _preset_locate(name: str) -> Callable[[RuntimeConfig], Installed]:
    def locate(config: RuntimeConfig) -> Installed:
        from adapters._runtimes import PINNED_VERSIONS, installed_spec
        from adapters.acp.presets import PRESETS, locate_agent

        if config.binary:
            return Installed(config.binary, None)
        preset = PRESETS[name]
        path = locate_agent(preset)
        spec = installed_spec(preset.install_id)
        version = (
            spec.split("+", 1)[0].rsplit("@", 1)[-1]
            if spec
            else PINNED_VERSIONS.get(preset.install_id)
        )
        return Installed(str(path), version)

    return locate


def _preset_spec(
    name: str,
    summary: str,
    key_env: str,
    hook: ModelServerHook | None,
) -> RuntimeSpec:
    return RuntimeSpec(
        id=f"acp:{name}",
        factory=_preset_factory(name),
        model_server=hook,
        key_envs=lambda config: tuple(v for v in (config.api_key_env, key_env) if v),
        locate=_preset_locate(name),
        summary=summary,
        settings=frozenset(
            {"binary", "model", "base_url", "api_key_env", "permission", "extra_args"}
        ),
    )


ACP_CLAUDE = _preset_spec(
    "claude",
    "Claude Code through Zed's claude-agent-acp (ACP)",
    "ANTHROPIC_API_KEY",
    ModelServerHook(
        api="anthropic",
        model="claude-sonnet-4-6",
        tool_call={"name": "Bash", "input": {"command": "ls", "description": "List files"}},
    ),
)
ACP_CODEX = _preset_spec(
    "codex",
    "Codex through Zed's codex-acp (ACP)",
    "OPENAI_API_KEY",
    ModelServerHook(
        api="responses", model="gpt-5.5", tool_call={"name": "exec_command", "input": {"cmd": "ls"}}
    ),
)
ACP_OPENCODE = _preset_spec(
    "opencode",
    "OpenCode over ACP (opencode acp)",
    "OPENAI_API_KEY",
    ModelServerHook(
        api="chat",
        model="fake-model",
        tool_call={"name": "bash", "input": {"command": "ls", "description": "List files"}},
    ),
)
ACP_QWEN = _preset_spec(
    "qwen",
    "Qwen Code over ACP (qwen --acp)",
    "OPENAI_API_KEY",
    ModelServerHook(
        api="chat",
        model="fake-model",
        tool_call={"name": "run_shell_command", "input": {"command": "ls"}},
    ),
)
ACP_GEMINI = _preset_spec(
    "gemini",
    "Gemini CLI over ACP (gemini --acp)",
    "GEMINI_API_KEY",
    ModelServerHook(
        api="gemini",
        model="gemini-2.5-flash",
        tool_call={"name": "run_shell_command", "input": {"command": "ls"}},
    ),
)
