"""How Codex is launched and spoken to: configuration, argv, environment, homes, JSON-RPC.

Everything here is about the *process*; the event mapping lives in :mod:`.normalize`.

* :class:`CodexProvider` — a custom model provider (``wire_api = "responses"``), the only way to
  point Codex at a local server: ``OPENAI_BASE_URL`` is ignored and ``openai_base_url`` tries
  WebSockets first (docs/runtimes.md §2.2, §6.2 #3). The API key travels in an environment variable
  named by ``env_key``, never on the command line.
* :func:`exec_argv` / :func:`app_server_argv` — the argv (no shell), with plugins and analytics
  off (no outbound traffic besides the model server), the sandbox as a ``-c`` override (``exec
  resume`` has no ``-s``), the prompt last after ``--`` (a prompt starting with ``-`` stays a
  prompt).
* :func:`run_env` — the allow-listed environment plus the run's own ``CODEX_HOME``, ``HOME`` and
  key; :func:`prepare_home` makes the per-run state directory (never under the system temp
  directory: Codex warns on every command there).
* :class:`JsonRpcClient` (the shared one, :mod:`adapters._jsonrpc`, without the ``"jsonrpc"``
  member Codex does not need) — requests with ids over the child's stdin, responses routed back by the
  adapter's reader (app-server, docs/runtimes.md §2.9).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, cast

import attrs

from orchestrator.core.adapter import RunMcpServer
from orchestrator.core.config import is_trusted
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import Usage

from .._jsonrpc import JsonRpcClient
from .._process import DEFAULT_ENV_ALLOW, child_env
from .dialect import as_dict, as_int
from .normalize import Price

__all__ = [
    "DEFAULT_KEY_ENV",
    "SANDBOX_HELPER",
    "ApprovalDecision",
    "ApprovalHandler",
    "CodexConfig",
    "CodexProvider",
    "JsonRpcClient",
    "Launcher",
    "Mode",
    "Sandbox",
    "app_server_argv",
    "ask_person",
    "common_overrides",
    "default_state_root",
    "exec_argv",
    "prepare_home",
    "provider_for",
    "run_env",
    "thread_total_usage",
    "under_system_temp",
    "with_sandbox_helper",
]

Mode: TypeAlias = Literal["exec", "app-server"]
Sandbox: TypeAlias = Literal["read-only", "workspace-write", "danger-full-access", "bypass"]
ApprovalDecision: TypeAlias = Literal["accept", "acceptForSession", "decline", "cancel", "ask"]
ApprovalHandler: TypeAlias = Callable[[str, Mapping[str, Any]], ApprovalDecision]
"""``(method, params) -> decision`` for an app-server approval request (``method`` is e.g.
``item/commandExecution/requestApproval``); ``"ask"`` asks a person (the run's approval book,
:mod:`orchestrator.core.asking`; with nobody to ask, the request is declined)."""
Launcher: TypeAlias = Callable[[Sequence[str]], Sequence[str]]
"""Turns Codex's arguments into the argv to run (default: the native binary first)."""

DEFAULT_KEY_ENV: Final = "RINGLEADER_CODEX_API_KEY"
PROVIDER_ID: Final = "ringleader"


def _toml(value: str) -> str:
    """A TOML basic string (JSON string syntax is valid TOML for these values)."""
    return json.dumps(value)


@attrs.frozen
class CodexProvider:
    """A custom Responses-API model provider for Codex (base URL and key)."""

    base_url: str
    """E.g. ``http://127.0.0.1:18080/v1``."""
    api_key: str | None = attrs.field(default=None, repr=False)
    """Sent as ``Authorization: Bearer …`` through the ``env_key`` variable (never in argv)."""
    env_key: str = DEFAULT_KEY_ENV
    request_max_retries: int | None = None
    """Codex's default is 4; each request retry multiplies the stream retries."""
    stream_max_retries: int | None = None
    """Codex's default is 5 (a persistent 500 then takes ~25 s and 30 requests)."""

    def overrides(self) -> list[str]:
        args = [
            "-c",
            f"model_provider={_toml(PROVIDER_ID)}",
            "-c",
            f"model_providers.{PROVIDER_ID}.name={_toml(PROVIDER_ID)}",
            "-c",
            f"model_providers.{PROVIDER_ID}.base_url={_toml(self.base_url)}",
            "-c",
            f'model_providers.{PROVIDER_ID}.wire_api="responses"',
            "-c",
            f"model_providers.{PROVIDER_ID}.env_key={_toml(self.env_key)}",
        ]
        if self.request_max_retries is not None:
            args += [
                "-c",
                f"model_providers.{PROVIDER_ID}.request_max_retries={self.request_max_retries}",
            ]
        if self.stream_max_retries is not None:
            args += [
                "-c",
                f"model_providers.{PROVIDER_ID}.stream_max_retries={self.stream_max_retries}",
            ]
        return args


def default_state_root() -> Path:
    """Where per-run Codex homes go when the host gives none: ``$XDG_STATE_HOME`` (else
    ``~/.local/state``) ``/ringleader/codex`` — not the system temp directory."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ringleader" / "codex"


def _decline(method: str, params: Mapping[str, Any]) -> ApprovalDecision:
    return "decline"


def ask_person(method: str, params: Mapping[str, Any]) -> ApprovalDecision:
    """Ask a person about every approval request (see :data:`ApprovalHandler`)."""
    return "ask"


@attrs.frozen
class CodexConfig:
    """How the adapter runs Codex. Everything has a safe default; a run's ``StartOpts`` win
    where they overlap (model, cwd, home)."""

    mode: Mode = "app-server"
    """``app-server`` (the default: JSON-RPC over stdio; streamed text, clean interrupts,
    approvals a person can answer, steering with ``turn/steer``) or ``exec`` (one ``codex exec
    --json`` process per run: whole messages, abort by signal, no approvals, not steerable)."""
    binary: str | None = None
    """The Codex executable; ``None``: the native binary installed by ``scripts/install-runtimes``."""
    launcher: Launcher | None = None
    """Replaces the argv entirely (tests run a fake CLI with it)."""
    launcher_stdin: bool = False
    """Exec mode with a launcher: give the process a stdin pipe (a fake CLI fed by tests)."""
    provider: CodexProvider | None = None
    """The model provider; ``None``: taken from the run's ``env`` (``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY``, which Codex itself would ignore), else Codex's own configuration."""
    model: str | None = None
    """Default model (a slug Codex knows, e.g. ``gpt-5.5``; unknown slugs lose ``apply_patch``)."""
    sandbox: Sandbox = "workspace-write"
    approval_policy: str = "never"
    """App-server ``approvalPolicy`` (``never``, ``on-request``, ``on-failure``, ``untrusted``)."""
    approve: ApprovalHandler = _decline
    """Answers app-server approval requests (the user's policy); the default declines."""
    prices: Mapping[str, Price] = attrs.field(factory=dict[str, Price])
    """USD per million tokens by model; without an entry ``cost_usd`` is ``None``."""
    state_root: Path | None = None
    """Parent of per-run homes when ``StartOpts.home_dir`` is not given."""
    keep_homes: bool = False
    """Keep adapter-made per-run homes after the run (they are deleted by default)."""
    extra_config: Sequence[str] = ()
    """More ``key=value`` overrides, each passed as ``-c key=value``."""
    env_allow: Sequence[str] = DEFAULT_ENV_ALLOW
    sigint_grace: float = 3.0
    sigterm_grace: float = 3.0
    interrupt_grace: float = 5.0
    """App-server: how long ``turn/interrupt`` may take before the process is terminated."""
    client_name: str = "ringleader"
    handshake_timeout: float = 30.0
    """App-server: how long ``initialize`` → ``turn/start`` may take before the run fails."""

    def __attrs_post_init__(self) -> None:
        if self.mode not in ("exec", "app-server"):
            raise ConfigError(f"unknown codex mode {self.mode!r}")


def provider_for(config: CodexConfig, env: Mapping[str, str]) -> CodexProvider | None:
    """The run's provider: the configured one, else one built from ``OPENAI_BASE_URL``."""
    if config.provider is not None:
        return config.provider
    base_url = env.get("OPENAI_BASE_URL")
    if base_url:
        return CodexProvider(base_url=base_url, api_key=env.get("OPENAI_API_KEY"))
    return None


def common_overrides(
    config: CodexConfig, provider: CodexProvider | None, *, sandbox: bool = True
) -> list[str]:
    args = provider.overrides() if provider is not None else []
    args += ["--disable", "plugins", "-c", "analytics.enabled=false"]
    if sandbox and config.sandbox != "bypass":
        args += ["-c", f"sandbox_mode={_toml(config.sandbox)}"]
    for item in config.extra_config:
        args += ["-c", item]
    return args


_MCP_NAME: Final = re.compile(r"^[A-Za-z0-9_-]+$")


def mcp_overrides(servers: Sequence[RunMcpServer]) -> tuple[list[str], dict[str, str]]:
    """A run's own MCP servers as ``-c mcp_servers.<name>…`` overrides, and the environment
    they need: a server's ``env`` values and HTTP ``headers`` travel in Codex's environment
    (named by ``env_vars`` and ``env_http_headers``), never on its argv."""
    args: list[str] = []
    env: dict[str, str] = {}
    for index, server in enumerate(servers):
        if not _MCP_NAME.match(server.name):  # Codex splits -c keys on dots: no quoting
            raise ConfigError(
                f"MCP server name {server.name!r}: Codex takes letters, digits, '_' and '-' only"
            )
        key = f"mcp_servers.{server.name}"
        if server.url is not None:
            args += ["-c", f"{key}.url={_toml(server.url)}"]
            headers: list[str] = []
            for number, (header, value) in enumerate(server.headers.items()):
                variable = f"RINGLEADER_MCP_{index}_HEADER_{number}"
                env[variable] = value
                headers.append(f"{_toml(header)} = {_toml(variable)}")
            if headers:
                args += ["-c", f"{key}.env_http_headers={{{', '.join(headers)}}}"]
            continue
        if server.command is None:
            raise ConfigError(f"MCP server {server.name!r} has neither a command nor a url")
        args += ["-c", f"{key}.command={_toml(server.command)}"]
        args += ["-c", f"{key}.args=[{', '.join(_toml(a) for a in server.args)}]"]
        if server.env:
            env.update(server.env)
            names = ", ".join(_toml(name) for name in server.env)
            args += ["-c", f"{key}.env_vars=[{names}]"]
    return args, env


def untrusted_project(cwd: Path) -> list[str]:
    """``-c projects=…`` marking the run's directory (and the repository it is in) untrusted
    for Codex, unless the user trusted it (``ringleader trust``): Codex otherwise trusts the
    directory it runs in by itself and loads the repository's ``.codex/config.toml`` (its MCP
    servers are commands of the repository's choosing). ``[]`` for a trusted directory."""
    if is_trusted(cwd):
        return []
    here = cwd.resolve()
    dirs = [here]
    repo = next((d for d in (here, *here.parents) if (d / ".git").exists()), None)
    if repo is not None and repo != here:
        dirs.append(repo)  # Codex keys a project by its repository's root
    table = ", ".join(f'{_toml(str(d))} = {{ trust_level = "untrusted" }}' for d in dirs)
    return ["-c", f"projects={{ {table} }}"]


def exec_argv(
    config: CodexConfig,
    provider: CodexProvider | None,
    prompt: str,
    *,
    model: str | None,
    resume_thread: str | None = None,
    mcp: Sequence[str] = (),
) -> list[str]:
    """Codex's arguments for one ``exec`` run (the binary is added by the launcher); ``mcp``:
    :func:`mcp_overrides`."""
    args = ["exec"]
    if resume_thread:
        args.append("resume")
    args += ["--json", "--skip-git-repo-check", *common_overrides(config, provider), *mcp]
    if config.sandbox == "bypass":
        args.append("--dangerously-bypass-approvals-and-sandbox")
    if model:
        args += ["-m", model]
    args.append("--")
    if resume_thread:
        args.append(resume_thread)
    args.append(prompt)
    return args


def app_server_argv(
    config: CodexConfig, provider: CodexProvider | None, mcp: Sequence[str] = ()
) -> list[str]:
    """Codex's arguments for ``app-server`` (sandbox and model go in ``thread/start``)."""
    return ["app-server", *common_overrides(config, provider, sandbox=False), *mcp]


def run_env(
    config: CodexConfig,
    provider: CodexProvider | None,
    *,
    codex_home: Path,
    extra: Mapping[str, str],
) -> dict[str, str]:
    """The child's environment: allow-listed variables, the run's extras, its homes and key."""
    own = {k: v for k, v in extra.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    home = codex_home / "home"
    own["CODEX_HOME"] = str(codex_home)
    own["HOME"] = str(home)
    if provider is not None and provider.api_key is not None:
        own[provider.env_key] = provider.api_key
    return child_env(config.env_allow, own)


def prepare_home(home_dir: str | None, state_root: Path | None, run_name: str) -> tuple[Path, bool]:
    """The run's ``CODEX_HOME`` (created, mode 0700) and whether the adapter owns it (to delete).

    The host's ``home_dir`` is used as is (persistent, per identity); else a fresh directory
    under ``state_root``.
    """
    if home_dir:
        path = Path(home_dir)
        owned = False
    else:
        root = state_root or default_state_root()
        path = root / run_name
        owned = True
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    (path / "home").mkdir(exist_ok=True, mode=0o700)
    return path, owned


SANDBOX_HELPER = "codex-linux-sandbox"
"""The name Codex's shell sandbox runs itself under inside ``bwrap`` (the codex binary picks its
sandbox role from ``argv[0]``)."""


def with_sandbox_helper(env: dict[str, str], codex_home: Path, binary: Path) -> dict[str, str]:
    """``env`` with ``<CODEX_HOME>/bin/codex-linux-sandbox`` (a link to ``binary``) first on
    ``PATH``. Codex makes that link itself at startup, but refuses to when its home is under the
    system temp directory; its shell then fails inside bubblewrap ("bwrap: execvp
    codex-linux-sandbox"). Ours is in the run's own home (mode 0700), so it is always found."""
    folder = codex_home / "bin"
    folder.mkdir(mode=0o700, exist_ok=True)
    link = folder / SANDBOX_HELPER
    target = binary.resolve()
    if not link.is_symlink() or Path(os.readlink(link)) != target:
        tmp = folder / f".{SANDBOX_HELPER}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        tmp.replace(link)  # atomic: runs sharing the home never see it missing
    path = env.get("PATH") or os.defpath
    return env | {"PATH": f"{folder}{os.pathsep}{path}"}


def under_system_temp(path: Path) -> bool:
    """Whether ``path`` is inside the system temp directory (Codex warns about it)."""
    try:
        path.resolve().relative_to(Path(tempfile.gettempdir()).resolve())
    except ValueError:
        return False
    return True


def thread_total_usage(codex_home: Path, thread_id: str) -> Usage | None:
    """The thread's cumulative usage so far, from its rollout in ``codex_home`` (the last
    ``token_count`` event), or ``None`` if there is no rollout or no count (blocking I/O)."""
    sessions = codex_home / "sessions"
    if not sessions.is_dir() or not thread_id or "/" in thread_id:
        return None
    best: Usage | None = None
    for path in sorted(sessions.glob(f"*/*/*/rollout-*-{thread_id}.jsonl")):
        try:
            with path.open("rb") as f:
                for line in f:
                    if b'"token_count"' not in line:
                        continue
                    try:
                        data: Any = json.loads(line)
                    except ValueError:
                        continue
                    total = as_dict(as_dict(as_dict(data).get("payload")).get("info")).get(
                        "total_token_usage"
                    )
                    if isinstance(total, dict):
                        best = _usage(cast(dict[str, Any], total))
        except OSError:
            continue
    return best


def _usage(raw: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=as_int(raw.get("input_tokens")) or 0,
        output_tokens=as_int(raw.get("output_tokens")) or 0,
        cached_input_tokens=as_int(raw.get("cached_input_tokens")),
        cache_write_tokens=as_int(raw.get("cache_write_input_tokens")),
    )
