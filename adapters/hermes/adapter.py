"""The Hermes adapter: ``RuntimeAdapter`` (id ``hermes``) = the ACP adapter + Hermes specifics.

* **Home.** ``HERMES_HOME`` is per identity and persistent (the host's ``home_dir``, else
  ``<state_root>/<agent id>``), mode 0700, so sessions, memories and skills survive between
  runs and ``session/load`` resumes a session in a new process. ``HOME`` points inside it.
* **Config.** Each run writes ``config.yaml`` in that home from :class:`HermesConfig`: a custom
  provider at :attr:`HermesConfig.base_url` (Chat Completions, or Anthropic Messages with
  ``api_mode="anthropic_messages"``), the model, a context length (Hermes refuses below 64K),
  manual approvals (so dangerous commands come to our permission policy instead of Hermes'
  own "smart" mode), no environment probe, no lazy installs. The key is never written: the file
  says ``api_key: ${NAME}`` and the child gets that one variable (Hermes expands it).
* **A repository's files.** Hermes reads from the working directory only prompt text
  (``.hermes.md``/``HERMES.md``, ``AGENTS.md``, ``CLAUDE.md``, ``.cursorrules``); its config,
  ``.env``, hooks, MCP servers and skills come from ``HERMES_HOME`` (ours), and project plugins
  (``./.hermes/plugins``) load only with ``HERMES_ENABLE_PROJECT_PLUGINS``, which the child
  never gets. What did run a repository's code is its language servers (see
  :func:`hermes_config_yaml`): off unless the directory is trusted (``ringleader trust``).
* **Honest failures.** Hermes reports a model failure as ordinary assistant text with
  ``stopReason: end_turn`` and no ``usage`` (docs/runtimes.md §4.4). When a prompt ends that way, its
  session store (``state.db``) is read: if no assistant message was recorded after the prompt,
  the run fails with the text Hermes streamed (``error{server_error|rate_limited|auth_error|
  runtime_reported}`` + ``done{error}``).
* **Resume.** Loading an unknown session id answers ``{}`` (not an error): that is reported as
  ``session_not_found`` instead of prompting a session that does not exist.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, Literal

import attrs
import trio

from orchestrator.core.adapter import Capabilities, HealthResult, NativeHomeClaim
from orchestrator.core.config import is_trusted
from orchestrator.core.errors import ConfigError, RuntimeReportedError
from orchestrator.core.events import now_ms

from .._base import make_private_dir, write_private
from .._jsonrpc import as_dict, as_str
from ..acp import AcpAdapter, AcpConfig, AcpRun, PermissionPolicy
from ..acp.adapter import agent_state_root
from ..acp.dialect import usage_of

__all__ = ["HermesAdapter", "HermesConfig", "default_state_root", "hermes_config_yaml"]

_MIN_CONTEXT: Final = 65_536


def default_state_root() -> Path:
    """``$RINGLEADER_STATE_DIR/hermes`` (default ``~/.local/state/ringleader/hermes``)."""
    return agent_state_root("hermes")


@attrs.define
class HermesConfig:
    """Where Hermes' model lives and how its runs behave."""

    base_url: str | None = None
    """The model endpoint: Chat Completions base (``http://127.0.0.1:PORT/v1``), or the
    Anthropic base (``http://127.0.0.1:PORT``) with ``api_mode="anthropic_messages"``."""
    api_mode: Literal["chat_completions", "anthropic_messages"] = "chat_completions"
    model: str = "fake-model"
    key_env: str = "OPENAI_API_KEY"
    """The NAME of the environment variable holding the key (never the key itself)."""
    context_length: int = 131_072
    binary: str | None = None
    state_root: Path | None = None
    permission: PermissionPolicy = "deny"
    toolsets: tuple[str, ...] = ("hermes-cli",)
    api_max_retries: int | None = None
    """Hermes' retries of a failed model call (its default is 3)."""
    env: Mapping[str, str] = attrs.field(factory=dict[str, str])

    def __attrs_post_init__(self) -> None:
        if self.context_length < _MIN_CONTEXT:
            raise ConfigError(f"hermes needs context_length >= {_MIN_CONTEXT} (it refuses less)")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.key_env):
            raise ConfigError(f"key_env must be an environment variable name, not {self.key_env!r}")


def hermes_config_yaml(config: HermesConfig, cwd: Path, *, project_code: bool = False) -> str:
    """The ``config.yaml`` a run writes into its ``HERMES_HOME`` (no secret in it).

    ``project_code``: the directory is trusted (``ringleader trust``). Otherwise Hermes'
    language servers stay off (``lsp.enabled: false``): after each file edit in a git
    repository Hermes starts them against the repository (``agent/lsp/servers.py``), and
    they run the repository's code — pyright the interpreter its ``pyrightconfig.json`` or
    ``.venv`` names, rust-analyzer its build scripts, typescript-language-server its
    ``node_modules/typescript``."""
    lines = [
        "model:",
        "  provider: custom",
        f"  default: {_yaml_str(config.model)}",
        f"  base_url: {_yaml_str(config.base_url or '')}",
        f"  api_key: ${{{config.key_env}}}",
        f"  context_length: {config.context_length}",
    ]
    if config.api_mode == "anthropic_messages":
        lines.append("  api_mode: anthropic_messages")
    lines += [
        f"toolsets: [{', '.join(_yaml_str(t) for t in config.toolsets)}]",
        "terminal:",
        "  backend: local",
        f"  cwd: {_yaml_str(str(cwd))}",
        "approvals:",
        "  mode: manual",
        "agent:",
        "  environment_probe: false",
        *(
            [f"  api_max_retries: {config.api_max_retries}"]
            if config.api_max_retries is not None
            else []
        ),
        "security:",
        "  allow_lazy_installs: false",
        *([] if project_code else ["lsp:", "  enabled: false"]),
        "",
    ]
    return "\n".join(lines)


def _yaml_str(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


class HermesAdapter(AcpAdapter):
    """Hermes behind the trait (see the module docstring). Use as ``async with HermesAdapter()``."""

    id = "hermes"

    def __init__(
        self, config: HermesConfig | None = None, *, clock: Callable[[], int] = now_ms
    ) -> None:
        self.hermes = config or HermesConfig()
        super().__init__(
            AcpConfig(
                binary=self.hermes.binary,
                model=self.hermes.model,
                permission=self.hermes.permission,
            ),
            clock=clock,
        )

    def capabilities(self) -> Capabilities:
        return (
            super()
            .capabilities()
            .model_copy(
                update={
                    "mcp": True,
                    "models": (self.hermes.model,),
                    "context_window_tokens": self.hermes.context_length,
                    "native_home": NativeHomeClaim(scope="per-identity", persist=True),
                    "native_skills": "preserve",
                    "native_memory": "preserve",
                    "plan_mode": False,  # its session modes are approval policies
                }
            )
        )

    def argv(self, args: Sequence[str]) -> list[str]:
        if self.config.launcher is not None:
            return list(self.config.launcher(args))
        return [self.binary(), "acp", *args]

    async def probe_health(self) -> HealthResult:
        return await self.probe_installed()

    async def prepare_run(self, run: AcpRun) -> None:
        config = self.hermes
        if not config.base_url:
            raise ConfigError(
                "hermes needs a model endpoint: set runtimes.hermes.base_url (ringleader.toml) "
                "or run with --model-server"
            )
        home = self.identity_home(run, config.state_root or default_state_root())
        await trio.to_thread.run_sync(make_private_dir, home)
        run.home = home
        await trio.Path(run.cwd).mkdir(parents=True, exist_ok=True)
        text = hermes_config_yaml(
            attrs.evolve(config, model=run.state.model or config.model),
            run.cwd,
            project_code=await trio.to_thread.run_sync(is_trusted, run.cwd),
        )
        await trio.to_thread.run_sync(write_private, home / "config.yaml", text)
        key = run.opts.env.get(config.key_env) or os.environ.get(config.key_env) or "unset"
        run.env.update(
            {
                **config.env,
                "HERMES_HOME": str(home),
                "HOME": str(home),
                "HERMES_DISABLE_LAZY_INSTALLS": "1",
                config.key_env: key,
            }
        )

    async def check_loaded(self, run: AcpRun, result: object) -> None:
        await trio.lowlevel.checkpoint()
        if not as_dict(result):
            raise RuntimeReportedError(
                f"hermes has no session {run.resume} in its home",
                code="session_not_found",
                adapter=self.id,
                session_key=run.opts.session_key,
            )

    async def judge_end(self, run: AcpRun, result: object) -> bool:
        data = as_dict(result)
        if as_str(data.get("stopReason")) != "end_turn" or usage_of(data) is not None:
            await trio.lowlevel.checkpoint()
            return False
        answered = await trio.to_thread.run_sync(
            _assistant_answered, run.home, run.session_id or ""
        )
        return answered is False

    def failure_code(self, text: str) -> str:
        return _failure_code(text)


def _failure_code(text: str) -> str:
    if re.search(r"\bHTTP 429\b|rate.?limit", text, re.IGNORECASE):
        return "rate_limited"
    if re.search(r"\bHTTP (401|403)\b", text):
        return "auth_error"
    if re.search(r"\bHTTP 5\d\d\b", text):
        return "server_error"
    return "runtime_reported"


def _assistant_answered(home: Path | None, session_id: str) -> bool | None:
    """Whether Hermes recorded an assistant message after the session's last user message
    (``None`` when its store cannot tell)."""
    if home is None or not session_id:
        return None
    db = home / "state.db"
    if not db.is_file():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0) as conn:
            rows = conn.execute(
                "SELECT role FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT 50",
                (session_id,),
            ).fetchall()
    except sqlite3.Error:
        return None
    for (role,) in rows:
        if role == "assistant":
            return True
        if role == "user":
            return False
    return None
