"""How ringleader builds the echo runtime from its configuration: the object the
``ringleader.runtimes`` entry point names (``echo = "ringleader_echo.spec:SPEC"``)."""

from __future__ import annotations

from orchestrator.core import RuntimeConfig, RuntimeSpec
from ringleader_echo.adapter import EchoAdapter, EchoConfig

__all__ = ["SPEC"]


def make(config: RuntimeConfig) -> EchoAdapter:
    # config: the runtime's settings from ringleader.toml ([runtimes.echo]) and the environment
    # (RINGLEADER_ECHO_BINARY); `binary` points it at another build of the agent
    if config.binary:
        binary = config.binary
        return EchoAdapter(EchoConfig(argv=lambda args: [binary, *args]))
    return EchoAdapter()


SPEC = RuntimeSpec(
    id="echo",
    factory=make,
    summary="an example third-party runtime: a tiny echo agent run as a child process",
    settings=frozenset({"binary"}),  # any other [runtimes.echo] setting is refused
)
