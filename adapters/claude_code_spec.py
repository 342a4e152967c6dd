"""The Claude Code runtime's spec: how ringleader builds it from its configuration
(registered in the ``ringleader.runtimes`` entry-point group, as a third party's runtime is).
The adapter is imported when a run is built, never when the spec is listed."""

from __future__ import annotations

from typing import Any

from adapters.builtin import key_envs, locate_pinned, refuse_unused
from orchestrator.core.adapter import RuntimeAdapter
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import ModelServerHook, RuntimeSpec

__all__ = ["CLAUDE_CODE"]


_CLAUDE_WRITE_TOOLS = ("Bash", "Edit", "Write", "MultiEdit", "NotebookEdit")


def _claude_code(config: RuntimeConfig) -> RuntimeAdapter:
    from adapters.claude_code import (
        ClaudeCodeAdapter,
        ClaudeCodeConfig,
        allow_all,
        ask_all,
        deny_all,
    )

    refuse_unused("claude-code", config, "prices", "mcp_servers", "output_schema")
    if config.provider not in (None, "anthropic"):
        raise ConfigError(
            f"runtimes.claude-code.provider: {config.provider!r} is not supported (only "
            "'anthropic'; point base_url at an Anthropic-compatible endpoint instead)"
        )
    # asking needs the long-lived mode's permission prompts: it is the default with ``ask``
    mode = config.mode or ("long-lived" if config.permission == "ask" else "one-shot")
    if mode not in ("one-shot", "long-lived"):
        raise ConfigError(
            f"runtimes.claude-code.mode: {mode!r} is not one of 'one-shot', 'long-lived'"
        )
    options: dict[str, Any] = {}
    if config.permission == "allow":
        options |= {
            "permission_mode": "acceptEdits",
            "allowed_tools": _CLAUDE_WRITE_TOOLS,
            "permission_policy": allow_all,
        }
    elif config.permission == "ask" and mode == "long-lived":
        # the CLI's own rules allow read-only tools; every other prompt asks a person (the
        # run's approval book; with none, the prompt is denied)
        options["permission_policy"] = ask_all
    else:  # deny, or ask in one-shot mode (no prompts to answer): every prompt denied
        options["permission_policy"] = deny_all
    return ClaudeCodeAdapter(
        ClaudeCodeConfig(
            mode=mode,
            binary=config.binary,
            model=config.model,
            base_url=config.base_url,
            api_key=config.api_key(),
            extra_args=config.extra_args,
            **options,
        )
    )


CLAUDE_CODE = RuntimeSpec(
    id="claude-code",
    factory=_claude_code,
    model_server=ModelServerHook(
        api="anthropic",
        model="claude-sonnet-4-6",
        tool_call={"name": "Bash", "input": {"command": "ls", "description": "List the files"}},
    ),
    key_envs=key_envs("ANTHROPIC_API_KEY"),
    locate=lambda config: locate_pinned("claude-code", config),
    summary="Claude Code (claude -p, stream-json)",
    settings=frozenset(
        {
            "binary",
            "model",
            "provider",
            "base_url",
            "api_key_env",
            "permission",
            "mode",
            "extra_args",
        }
    ),
)
