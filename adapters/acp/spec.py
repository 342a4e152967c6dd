"""The ACP runtime's spec: how ringleader builds it from its configuration
(registered in the ``ringleader.runtimes`` entry-point group, as a third party's runtime is).
The adapter is imported when a run is built, never when the spec is listed."""

from __future__ import annotations

from adapters.builtin import refuse_unused
from orchestrator.core.adapter import RuntimeAdapter
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.registry import RuntimeSpec

__all__ = ["ACP"]


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
    summary="any Agent Client Protocol agent (runtimes.acp.binary + extra_args, e.g. gemini --acp)",
    settings=frozenset({"binary", "model", "api_key_env", "permission", "extra_args"}),
)
