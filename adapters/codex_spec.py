"""The Codex runtime's spec: how ringleader builds it from its configuration
(registered in the ``ringleader.runtimes`` entry-point group, as a third party's runtime is).
The adapter is imported when a run is built, never when the spec is listed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.builtin import key_envs, locate_pinned, refuse_unused
from orchestrator.core.adapter import RuntimeAdapter
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import ModelServerHook, RuntimeSpec

__all__ = ["CODEX"]


def _codex(config: RuntimeConfig) -> RuntimeAdapter:
    from adapters.codex import CodexAdapter, CodexConfig, CodexProvider, Price, ask_person

    refuse_unused("codex", config, "mcp_servers", "output_schema")
    if config.provider not in (None, "openai"):
        raise ConfigError(
            f"runtimes.codex.provider: {config.provider!r} is not supported (only 'openai'; "
            "point base_url at a Responses-API endpoint instead)"
        )
    mode = config.mode or "app-server"
    if mode not in ("exec", "app-server"):
        raise ConfigError(f"runtimes.codex.mode: {mode!r} is not one of 'exec', 'app-server'")
    for item in config.extra_args:
        if "=" not in item:
            raise ConfigError(
                f"runtimes.codex.extra_args: {item!r} is not a key=value override (each is "
                "passed to codex as -c key=value)"
            )
    provider = None
    if config.base_url:
        provider = CodexProvider(base_url=config.base_url, api_key=config.api_key())
    options: dict[str, Any] = {}
    match config.permission:
        case "allow":
            options |= {"sandbox": "workspace-write", "approve": _accept}
        case "deny":
            options |= {"sandbox": "read-only", "approval_policy": "never"}
        case "ask" if mode == "exec":  # exec cannot ask: its own rules, nothing escalated
            options["approval_policy"] = "on-request"
        case "ask":  # every command or change that is not known safe asks a person
            options |= {
                "sandbox": "workspace-write",
                "approval_policy": "untrusted",
                "approve": ask_person,
            }
        case None:
            pass
    prices = {
        model: Price(p.input, p.output, cached_input=p.cached_input)
        for model, p in config.prices.items()
    }
    return CodexAdapter(
        CodexConfig(
            mode=mode,
            binary=config.binary,
            provider=provider,
            model=config.model,
            prices=prices,
            extra_config=config.extra_args,
            **options,
        )
    )


def _accept(method: str, params: Mapping[str, Any]) -> Any:
    return "accept"


CODEX = RuntimeSpec(
    id="codex",
    factory=_codex,
    model_server=ModelServerHook(
        api="responses",
        model="gpt-5.5",
        tool_call={"name": "exec_command", "input": {"cmd": "ls"}},
    ),
    key_envs=key_envs("OPENAI_API_KEY"),
    locate=lambda config: locate_pinned("codex", config),
    summary="OpenAI Codex CLI (codex app-server; codex exec --json with mode = 'exec')",
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
            "prices",
        }
    ),
)
