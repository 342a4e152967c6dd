"""The OpenClaw runtime's spec: how ringleader builds it from its configuration
(registered in the ``ringleader.runtimes`` entry-point group, as a third party's runtime is).
The adapter is imported when a run is built, never when the spec is listed."""

from __future__ import annotations

from collections.abc import Sequence

from adapters.builtin import locate_pinned, refuse_unused
from orchestrator.core.adapter import RuntimeAdapter
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.lifetime import default_state_dir
from orchestrator.core.registry import ModelServerHook, RuntimeSpec

__all__ = ["OPENCLAW"]


_OPENCLAW_APIS: dict[str | None, str] = {
    None: "openai-completions",
    "openai": "openai-completions",
    "chat": "openai-completions",
    "responses": "openai-responses",
    "openai-responses": "openai-responses",
    "anthropic": "anthropic-messages",
}
_OPENCLAW_WRITE_TOOLS = ("exec", "process", "write", "edit", "apply_patch")


def _openclaw(config: RuntimeConfig) -> RuntimeAdapter:
    from adapters.openclaw import (
        GatewaySettings,
        ModelProvider,
        OpenClawAdapter,
        OpenClawConfig,
        ask_person,
    )

    refuse_unused("openclaw", config, "mode", "extra_args", "mcp_servers", "output_schema")
    base_url = config.base_url or ""
    if base_url.startswith(("ws://", "wss://")):
        # attach to a running gateway; api_key_env names the variable holding its token
        refuse_unused("openclaw", config, "binary", "prices")
        if config.permission not in (None, "ask"):
            raise ConfigError(
                f"runtimes.openclaw.permission: {config.permission!r} cannot apply to an attached "
                "gateway (its own tools.exec policy decides); only 'ask' does (its exec "
                "approvals go to a person)"
            )
        token = config.api_key()
        if token is None:
            raise ConfigError(
                "runtimes.openclaw.api_key_env: attaching to a gateway needs the variable "
                "holding its token"
            )
        approve = ask_person if config.permission == "ask" else None
        return OpenClawAdapter(OpenClawConfig(url=base_url, token=token, approve=approve))
    if config.provider not in _OPENCLAW_APIS:
        raise ConfigError(
            f"runtimes.openclaw.provider: {config.provider!r} is not one of "
            f"{', '.join(repr(k) for k in _OPENCLAW_APIS if k)}"
        )
    provider = None
    if base_url:
        model = (config.model or "").rpartition("/")[2]
        price = config.prices.get(config.model or "") if config.model else None
        provider = ModelProvider(
            base_url=base_url,
            api=_OPENCLAW_APIS[config.provider],  # pyright: ignore[reportArgumentType]
            api_key=config.api_key(),
            models=(model,) if model else ("default-model",),
            prices=(
                {"input": price.input, "output": price.output,
                 "cacheRead": price.cached_input or 0.0}
                if price is not None else None
            ),
        )  # fmt: skip
    ask = config.permission == "ask"
    if config.permission == "deny":
        deny = _OPENCLAW_WRITE_TOOLS
    elif ask:  # exec asks a person through the gateway's approvals; the others cannot ask
        deny = tuple(t for t in _OPENCLAW_WRITE_TOOLS if t != "exec")
    else:
        deny = ()
    # sessions outlive the process (recover, resume): kept in the state directory
    shared = default_state_dir() / "openclaw"
    settings = GatewaySettings(
        provider=provider,
        binary=config.binary,
        tool_deny=deny,
        exec_ask=ask,
        shared_state_dir=shared,
    )
    return OpenClawAdapter(OpenClawConfig(gateway=settings, approve=ask_person if ask else None))


async def _forget(config: RuntimeConfig, removed: Sequence[str], kept: Sequence[str]) -> int:
    """``ringleader prune``: delete from ``<state dir>/openclaw`` the OpenClaw sessions of the
    pruned runs that no kept run records (an attached gateway's sessions are its owner's)."""
    from adapters.openclaw import GatewaySettings
    from adapters.openclaw.forget import delete_sessions, gateway_keys

    shared = default_state_dir() / "openclaw"
    if (config.base_url or "").startswith(("ws://", "wss://")) or not shared.is_dir():
        return 0
    keys = sorted(gateway_keys(removed) - gateway_keys(kept))
    settings = GatewaySettings(binary=config.binary, shared_state_dir=shared)
    return await delete_sessions(settings, keys)


OPENCLAW = RuntimeSpec(
    id="openclaw",
    factory=_openclaw,
    model_server=ModelServerHook(
        api="chat",
        model="openclaw-model",
        tool_call={"name": "exec", "input": {"command": "ls"}},
    ),
    locate=lambda config: locate_pinned("openclaw", config),
    summary="OpenClaw over its gateway WebSocket (one shared gateway)",
    settings=frozenset(
        {"binary", "model", "provider", "base_url", "api_key_env", "permission", "prices"}
    ),
    forget_sessions=_forget,
)
