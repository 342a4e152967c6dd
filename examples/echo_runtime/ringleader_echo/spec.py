"""How ringleader builds the echo runtime from its configuration: the object the
``ringleader.runtimes`` entry point names (``echo = "ringleader_echo.spec:SPEC"``)."""

from __future__ import annotations

import shutil

from orchestrator.core import Installed, RuntimeConfig, RuntimeNotFoundError, RuntimeSpec
from ringleader_echo.adapter import AGENT, EchoAdapter, EchoConfig
from ringleader_echo.agent import VERSION

__all__ = ["SPEC"]


def make(config: RuntimeConfig) -> EchoAdapter:
    # config: the runtime's settings from ringleader.toml ([runtimes.echo]) and the environment
    # (RINGLEADER_ECHO_BINARY); `binary` points it at another build of the agent
    if config.binary:
        binary = config.binary
        return EchoAdapter(EchoConfig(argv=lambda args: [binary, *args]))
    return EchoAdapter()


def locate(config: RuntimeConfig) -> Installed:
    """Where the agent is, for `ringleader runtimes` (a missing one: RuntimeNotFoundError)."""
    if config.binary is None:
        return Installed(str(AGENT), VERSION)
    found = shutil.which(config.binary)
    if found is None:
        raise RuntimeNotFoundError(
            f"echo agent {config.binary!r} not found", path=config.binary, adapter="echo"
        )
    return Installed(found, None)  # another build: its version is whatever it says


SPEC = RuntimeSpec(
    id="echo",
    factory=make,
    summary="an example third-party runtime: a tiny echo agent run as a child process",
    settings=frozenset({"binary"}),  # any other [runtimes.echo] setting is refused
    locate=locate,
)
