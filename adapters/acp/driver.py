"""ACP client specifics that are not the trait: configuration, the agent→client requests we
answer (permissions by the user's policy, file system only when enabled), and the handshake
parameters.

Agent → client requests:

* ``session/request_permission`` — answered by :attr:`AcpConfig.permission`: ``"deny"`` (the
  default: fail closed, the agent sees a rejection), ``"allow"``, ``"ask"`` (a person decides,
  through the run's approval book: :mod:`orchestrator.core.asking`; with nobody to ask, a
  rejection), or a callable given the tool call that returns ``True`` to allow. The option
  picked is the agent's own ``allow_once`` / ``reject_once`` (``allow_always`` for a person's
  "always", a session-named ``allow_always`` such as Hermes' ``allow_session`` for "the rest of
  this run"; falling back to any allow / reject option, else ``cancelled``: :func:`pick_option`). ACP's answer carries
  no message and no edited input: a person's message is not seen by the agent, and an edited
  input is refused (a rejection).
* ``fs/read_text_file`` and ``fs/write_text_file`` — only when :attr:`AcpConfig.allow_fs`;
  paths must lie inside the run's working directory (checked on the resolved path); otherwise
  the capability is not offered and the request gets JSON-RPC ``-32601``.
* ``terminal/*`` — never offered; ``-32601``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import attrs

from orchestrator.core.errors import ConfigError

from .._base import confined_path
from .._jsonrpc import as_dict, as_int, as_list, as_str
from .._process import DEFAULT_ENV_ALLOW, DEFAULT_SIGINT_GRACE, DEFAULT_SIGTERM_GRACE
from .dialect import PROTOCOL_VERSION

__all__ = [
    "AcpConfig",
    "PermissionPolicy",
    "fs_request",
    "initialize_params",
    "permission_outcome",
    "pick_option",
]

PermissionPolicy: TypeAlias = Literal["deny", "allow", "ask"] | Callable[[Mapping[str, Any]], bool]

_CLIENT_VERSION: Final = "0.1.0"
_MAX_READ_BYTES: Final = 4 * 1024 * 1024


@attrs.define
class AcpConfig:
    """How to start and talk to an ACP agent."""

    command: Sequence[str] = ()
    """The agent's argv, e.g. ``("gemini", "--acp")``; no shell."""
    binary: str | None = None
    """The agent's executable where a subclass knows its arguments (``hermes`` → ``acp``)."""
    launcher: Callable[[Sequence[str]], Sequence[str]] | None = None
    """Builds the whole argv instead (tests start a fake agent this way)."""
    env: Mapping[str, str] = attrs.field(factory=dict[str, str])
    """Extra environment for the agent (on top of the allow-listed variables)."""
    env_allow: Sequence[str] = DEFAULT_ENV_ALLOW
    model: str | None = None
    """Model for new sessions (``session/set_model``, where the agent supports it)."""
    permission: PermissionPolicy = "deny"
    allow_fs: bool = False
    """Offer ``fs/read_text_file``/``fs/write_text_file`` confined to the run's directory."""
    mcp_servers: Sequence[Mapping[str, Any]] = ()
    """MCP servers passed to ``session/new``/``session/load`` (ACP's own shape)."""
    handshake_timeout: float = 60.0
    cancel_grace: float = 5.0
    """How long a cancelled prompt may take to answer before the agent is terminated."""
    exit_wait: float = 3.0
    """How long the agent may take to exit after its stdin closes at the end of a run."""
    sigint_grace: float = DEFAULT_SIGINT_GRACE
    sigterm_grace: float = DEFAULT_SIGTERM_GRACE
    client_name: str = "ringleader"

    def __attrs_post_init__(self) -> None:
        if isinstance(self.permission, str) and self.permission not in ("deny", "allow", "ask"):
            raise ConfigError(
                f"permission must be 'deny', 'allow', 'ask' or a callable, not {self.permission!r}"
            )


def initialize_params(config: AcpConfig) -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {
            "fs": {"readTextFile": config.allow_fs, "writeTextFile": config.allow_fs},
            "terminal": False,
        },
        "clientInfo": {"name": config.client_name, "version": _CLIENT_VERSION},
    }


def permission_outcome(policy: PermissionPolicy, params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``session/request_permission`` result for ``params`` under ``policy``."""
    tool_call = as_dict(params.get("toolCall"))
    allow = policy == "allow" or (callable(policy) and bool(policy(tool_call)))
    return pick_option(params, allow)


def pick_option(
    params: Mapping[str, Any], allow: bool, *, always: bool = False, session: bool = False
) -> dict[str, Any]:
    """The ``session/request_permission`` result that allows or rejects, from the options the
    agent offered. Allowing picks ``allow_once``; ``always`` (a person's "always here") the
    agent's ``allow_always``, one that is not named for the session first; ``session`` (a
    person's "for the rest of this run") an ``allow_always`` named for the session (Hermes'
    ``allow_session``: ACP has no session kind), else ``allow_once``."""
    options = [as_dict(o) for o in as_list(params.get("options"))]
    options = [o for o in options if as_str(o.get("optionId"))]

    def kind(name: str, *, sessionish: bool | None = None) -> list[dict[str, Any]]:
        found = [o for o in options if o.get("kind") == name]
        if sessionish is None:
            return found
        return [o for o in found if _names_session(o) == sessionish]

    if not allow:
        ranked = kind("reject_once") + kind("reject_always")
    elif always:
        ranked = kind("allow_always", sessionish=False) + kind("allow_always") + kind("allow_once")
    elif session:
        ranked = kind("allow_always", sessionish=True) + kind("allow_once") + kind("allow_always")
    else:
        ranked = kind("allow_once") + kind("allow_always")
    if ranked:
        return {"outcome": {"outcome": "selected", "optionId": ranked[0]["optionId"]}}
    return {"outcome": {"outcome": "cancelled"}}


def _names_session(option: Mapping[str, Any]) -> bool:
    text = f"{as_str(option.get('optionId'))} {as_str(option.get('name'))}".lower()
    return "session" in text


def fs_request(method: str, params: Mapping[str, Any], root: Path) -> Any:
    """Carry out an ``fs/*`` request inside ``root`` (blocking I/O; run it in a thread).

    Raises ``ValueError`` for a path outside ``root`` or a bad request, ``OSError`` for I/O.
    """
    raw = as_str(params.get("path"))
    if not raw:
        raise ValueError("path is required")
    path = Path(raw)
    if path.is_absolute():
        try:
            key = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise ValueError(f"{raw} is outside the run's working directory") from None
    else:
        key = path.as_posix()
    target = confined_path(root, key)
    if target.exists() and not target.resolve().is_relative_to(root.resolve()):
        raise ValueError(f"{raw} leads outside the run's working directory")
    if method == "fs/read_text_file":
        data = target.read_bytes()[:_MAX_READ_BYTES].decode("utf-8", "replace")
        start = max(1, as_int(params.get("line")) or 1)
        limit = as_int(params.get("limit"))
        if start > 1 or limit is not None:
            lines = data.splitlines(keepends=True)[start - 1 :]
            data = "".join(lines[:limit] if limit is not None else lines)
        return {"content": data}
    if method == "fs/write_text_file":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(as_str(params.get("content")), encoding="utf-8")
        return None
    raise ValueError(f"unknown fs method {method}")
