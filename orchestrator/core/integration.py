"""Capability-driven integration plans: where a runtime's home lives and what the host preserves.

:func:`resolve_runtime_integration` is pure and follows the original executor branch for branch (docs/architecture.md, Lineage):

* ``connected-substrate`` → the runtime owns its state: ``home = connected``, nothing to preserve,
  gateway channels only when the runtime claims ``native_channels == "gateway"``.
* anything else (``wrapped-oneshot`` — the default — and ``native`` alike) → a persistent
  per-identity home only when the runtime claims ``native_home = {scope: per-identity, persist:
  true}``, else an ephemeral one; skills and memory are preserved only inside a persistent home
  (a preserve claim in a throwaway home degrades safe); never gateway channels.
* ``co_run_scheduler`` is always ``False``: the host scheduler owns when to run.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import BaseModel

from orchestrator.core.adapter import Capabilities
from orchestrator.core.events import WIRE_CONFIG

__all__ = [
    "ConnectedHome",
    "EphemeralHome",
    "IntegrationHome",
    "PersistentHome",
    "RuntimeIntegrationPlan",
    "resolve_runtime_integration",
]


class PersistentHome(BaseModel):
    """A home directory kept across runs, one per identity (agent)."""

    model_config = WIRE_CONFIG
    kind: Literal["persistent"] = "persistent"
    scope: Literal["per-identity"] = "per-identity"


class EphemeralHome(BaseModel):
    """A fresh home directory for each run, deleted afterwards."""

    model_config = WIRE_CONFIG
    kind: Literal["ephemeral"] = "ephemeral"


class ConnectedHome(BaseModel):
    """The runtime is a live substrate that owns its own state (e.g. an OpenClaw gateway)."""

    model_config = WIRE_CONFIG
    kind: Literal["connected"] = "connected"


IntegrationHome: TypeAlias = PersistentHome | EphemeralHome | ConnectedHome


class RuntimeIntegrationPlan(BaseModel):
    """What the host does around a runtime's runs."""

    model_config = WIRE_CONFIG

    home: IntegrationHome
    preserve_skills: bool
    """The host keeps the runtime's on-disk skills intact across runs."""
    preserve_memory: bool
    """The host keeps the runtime's on-disk memory intact across runs."""
    use_gateway_channels: bool
    """Deliveries ride the runtime's own live channels."""
    co_run_scheduler: Literal[False] = False
    """Always False: the host scheduler owns when to run."""


def resolve_runtime_integration(caps: Capabilities) -> RuntimeIntegrationPlan:
    """The integration plan for a runtime with these capabilities (pure)."""
    runtime_class = caps.runtime_class or "wrapped-oneshot"
    if runtime_class == "connected-substrate":
        return RuntimeIntegrationPlan(
            home=ConnectedHome(),
            preserve_skills=False,
            preserve_memory=False,
            use_gateway_channels=caps.native_channels == "gateway",
        )
    home_claim = caps.native_home
    persistent = (
        home_claim is not None and home_claim.persist and home_claim.scope == "per-identity"
    )
    return RuntimeIntegrationPlan(
        home=PersistentHome() if persistent else EphemeralHome(),
        preserve_skills=persistent and caps.native_skills == "preserve",
        preserve_memory=persistent and caps.native_memory == "preserve",
        use_gateway_channels=False,
    )
