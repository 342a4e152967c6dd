"""The validated configuration: per-runtime settings from files and the environment.

Sources, lowest precedence first; a later source overrides an earlier one key by key:

1. the user config file, ``$XDG_CONFIG_HOME/ringleader/config.toml`` (else
   ``~/.config/ringleader/config.toml``);
2. ``ringleader.toml`` in the working directory;
3. the file given with ``--config FILE`` (it must exist);
4. environment variables ``RINGLEADER_<RUNTIME>_<FIELD>`` (runtime id upper-cased, ``-`` → ``_``;
   e.g. ``RINGLEADER_CODEX_MODEL``, ``RINGLEADER_CLAUDE_CODE_BASE_URL``; ``EXTRA_ARGS`` is split
   like a shell would).

The file format::

    [runtimes.codex]
    model = "gpt-5.5"
    base_url = "http://127.0.0.1:8080/v1"
    api_key_env = "MY_OPENAI_KEY"       # the NAME of the variable holding the key
    permission = "deny"                 # allow | ask | deny
    extra_args = ["model_reasoning_effort=low"]
    watermark = 80                      # rotate past 80% of the context window
    rotate_to = "claude-code"           # … onto this runtime

    [runtimes.codex.prices."gpt-5.5"]   # USD per million tokens
    input = 1.25
    output = 10.0
    cached_input = 0.125

    [runtimes.claude-code.accounts.work]  # another account (run --account work)
    home = "~/.claude-work"             # its config directory (holds its login)
    api_key_env = "WORK_ANTHROPIC_KEY"  # … or its key, by variable NAME

    [runtimes.native]
    output_schema = "answer.schema.json"  # the final answer: JSON matching this JSON Schema

    [runtimes.native.mcp_servers.files] # an MCP server of the native runtime (stdio)
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
    env_vars = ["GITHUB_TOKEN"]         # passed through from our environment (by NAME)

    [runtimes.native.mcp_servers.search]  # … or streamable HTTP
    url = "http://127.0.0.1:8931/mcp"
    headers_env = { Authorization = "SEARCH_AUTH" }  # header value from this variable

    [runtimes.native.hooks]             # /compact runs this function before the model
    compact = "myapp.hooks:compact"
    [runtimes.native.skills.concise]    # a /concise skill: a handler function …
    handler = "myapp.skills:concise"
    expose_to_agent = true
    [runtimes.native.skills.python-debug]  # … or a content skill directory (SKILL.md)
    dir = "docs/skills/python-debug"
    [runtimes.native.subagents.reviewer]   # a sub-agent: instructions, or a factory function
    factory = "myapp.agents:reviewer"

    [budget]                            # governance (see orchestrator.engine.governance)
    usd = 2.0                           # per task; run --budget-usd wins
    tokens = 500000                     # per task; run --budget-tokens wins
    wall_s = 900                        # per run; run --max-wall wins
    host_usd = 20.0                     # over every task of one `run`/`batch`
    allow_estimates = true              # list-price USD for runtimes that report only tokens

    [breaker]                           # opt-in circuit breakers
    failures = 3
    cooldown_s = 60
    fallback = { codex = "claude-code" }

    [workspace]                         # each new workspace of a side-by-side run or batch
    setup = "npm ci"                    # run there (sh -c) before the agent starts
    teardown = "docker compose down"    # run there after the task's runs end
    timeout_s = 600                     # each script's limit (default 300)

**A project's file is not the user's.** ``ringleader.toml`` in the working directory comes with
whatever repository was cloned there, so unless the user trusted that directory (``ringleader
trust DIR``: a ``[[trusted]]`` entry in the user config file; a trusted directory's
subdirectories are trusted too) it may only set what can neither redirect a key nor run code:
its ``binary``, ``base_url``, ``api_key_env``, ``extra_args``, ``mcp_servers``, ``hooks``,
``skills`` and ``subagents`` (native Python code by ``module:function``), a ``permission =
"allow"``, ``[workspace]`` ``setup``/``teardown``, ``[notify]`` ``urls`` (a server of its
choosing, and ``${NAME}`` fills in any of your variables), ``[sandbox]`` ``read``/``write`` and
a ``kind = "none"`` that would turn your sandbox off, its ``accounts``, ``prices`` (cheaper
prices would let runs spend past a USD budget) and ``[[schedule]]`` are ignored, one line each in
:attr:`LoadedConfig.ignored` saying which key and why (the CLI prints them). Its limits may only
be stricter than the user's: a ``[budget]`` value, a breaker's ``failures`` or a runtime's
``max_runs`` applies only where it is lower than the user's (or the user set none), a breaker's
``cooldown_s`` only where longer, a ``permission`` only where stricter, ``allow_estimates = true``
not over the user's ``false``, and a breaker ``fallback`` only for runtimes the user gave none.
The user config, ``--config FILE`` and the environment are the user's own. The same idea as Codex's trusted projects and VS Code's workspace trust.

A key itself is never accepted in a file (a field named like one, or a value shaped like one):
the file names the environment variable that holds it (``api_key_env``). Every problem is one
:class:`~orchestrator.core.errors.ConfigError` line naming the file, the key and what is wrong.

Each runtime's factory receives its resolved :class:`RuntimeConfig`; :meth:`RuntimeConfig.api_key`
reads the key from the environment when the adapter is built.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shlex
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, TypeVar, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs
from cronsim import CronSim, CronSimError
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from orchestrator.core.errors import ConfigError, redact_secrets

__all__ = [
    "CONFIG_FILE_NAME",
    "AccountConfig",
    "BreakerConfig",
    "BudgetConfig",
    "Config",
    "LoadedConfig",
    "McpServerConfig",
    "ModelPrice",
    "NotifyConfig",
    "NotifyEvent",
    "PermissionPolicyName",
    "RuntimeConfig",
    "SandboxConfig",
    "ScheduleConfig",
    "SkillConfig",
    "SubagentConfig",
    "WorkspaceConfig",
    "env_var_for",
    "is_trusted",
    "load_config",
    "trust_directory",
    "trusted_directories",
    "user_config_path",
]

CONFIG_FILE_NAME: Final = "ringleader.toml"
"""The per-project config file, looked up in the working directory."""

PermissionPolicyName: TypeAlias = Literal["allow", "ask", "deny"]
"""What a runtime does when its agent wants to write or run something: ``allow`` it, ``ask``
(with no way to ask, that denies), or ``deny`` it."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_FIELDS: Final = frozenset(
    {
        "api_key",
        "apikey",
        "key",
        "token",
        "secret",
        "password",
        "auth_token",
        "access_token",
        "bearer",
    }
)
_STRICT = ConfigDict(extra="forbid", frozen=True)
_M = TypeVar("_M", bound=BaseModel)


class ModelPrice(BaseModel):
    """USD per million tokens for one model."""

    model_config = _STRICT
    input: float = Field(ge=0)
    """USD per million input tokens."""
    output: float = Field(ge=0)
    """USD per million output tokens."""
    cached_input: float | None = Field(default=None, ge=0)
    """Cache reads; ``None``: the runtime's own rule."""


class McpServerConfig(BaseModel):
    """One MCP server (the native runtime's ``mcp_servers.<name>``): ``command`` (stdio) or
    ``url`` (streamable HTTP). Secrets come from the environment by variable NAME."""

    model_config = _STRICT
    command: str | None = None
    """A stdio server's command (or give ``url``)."""
    args: tuple[str, ...] = ()
    """Its arguments."""
    env: dict[str, str] = Field(default_factory=dict[str, str])
    """Plain variables for a stdio server (no secrets: use ``env_vars``)."""
    env_vars: tuple[str, ...] = ()
    """Names of our environment variables passed through to a stdio server."""
    cwd: str | None = None
    """A stdio server's working directory (default: the run's)."""
    url: str | None = None
    """A streamable HTTP server's URL, ``http://`` or ``https://`` (or give ``command``)."""
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    """Plain headers for an HTTP server (no secrets: use ``headers_env``)."""
    headers_env: dict[str, str] = Field(default_factory=dict[str, str])
    """Header name → the NAME of the environment variable holding its value."""
    permission: PermissionPolicyName = "allow"
    """Calls of its tools: ``allow`` (configuring a server is consent), ``ask`` or ``deny``."""
    start_timeout_s: float = Field(default=30.0, gt=0)
    """Start, handshake and tool listing must finish within this, or the run fails
    (``error{mcp_start_failed}``)."""
    call_timeout_s: float | None = Field(default=None, gt=0)
    """Each tool call's limit (a ``timeout`` error result); default: none."""

    @field_validator("env_vars")
    @classmethod
    def _env_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @field_validator("headers_env")
    @classmethod
    def _header_env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value.values():
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of command (stdio) or url (streamable HTTP)")
        stdio_only = ("args", "env", "env_vars", "cwd")
        http_only = ("headers", "headers_env")
        for field in http_only if self.command is not None else stdio_only:
            if getattr(self, field):
                transport = "a stdio" if self.command is not None else "an HTTP"
                raise ValueError(f"{field} is not used by {transport} server")
        return self

    def resolved_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``env`` plus the ``env_vars`` that are set in ``environ`` (default: ours)."""
        src = os.environ if environ is None else environ
        return {**self.env, **{n: src[n] for n in self.env_vars if n in src}}

    def resolved_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``headers`` plus each ``headers_env`` header whose variable is set."""
        src = os.environ if environ is None else environ
        return {**self.headers, **{h: src[n] for h, n in self.headers_env.items() if n in src}}

    def describe(self) -> str:
        if self.url is not None:
            return self.url
        return shlex.join([self.command or "", *self.args])


_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def _import_path(value: str | None) -> str | None:
    if value is not None and not _IMPORT_PATH.match(value):
        raise ValueError(f"{value!r} is not a module:function import path")
    return value


class SubagentConfig(BaseModel):
    """``[runtimes.native.subagents.<name>]``: a sub-agent the native runtime's model can hand a
    self-contained job to (``glove_invoke_subagent``): either ``instructions`` (it answers with a
    model call of its own, no tools) or a ``factory`` (``module:function``, Glove's sub-agent
    factory: it returns a runnable); its events travel in the run's stream tagged
    ``agentId: <name>``."""

    model_config = _STRICT
    instructions: str | None = Field(default=None, min_length=1)
    """Its system prompt."""
    factory: str | None = None
    """``module:function`` of a sub-agent factory (given the factory context)."""
    description: str = ""
    """What the parent model is told it is for (default: the first line of ``instructions``)."""
    model: str | None = None
    """Its model (default: the run's)."""

    @field_validator("factory")
    @classmethod
    def _factory_path(cls, value: str | None) -> str | None:
        return _import_path(value)

    @model_validator(mode="after")
    def _one_kind(self) -> SubagentConfig:
        if (self.instructions is None) == (self.factory is None):
            raise ValueError("give exactly one of instructions or factory")
        return self

    def describe(self) -> str:
        first = (self.instructions or "").strip().splitlines()[0] if self.instructions else ""
        model = f" (model {self.model})" if self.model else ""
        kind = f"factory {self.factory}: " if self.factory else ""
        return f"{kind}{self.description or first}{model}"


class SkillConfig(BaseModel):
    """``[runtimes.native.skills.<name>]``: a ``/name`` skill of the native runtime, either a
    handler (``module:function``, Glove's skill handler) or a content skill directory (its
    ``SKILL.md`` and section files, relative to the run's working directory or absolute)."""

    model_config = _STRICT
    handler: str | None = None
    """A handler skill's ``module:function`` (or give ``dir``)."""
    dir: str | None = None
    """A content skill's directory (or give ``handler``)."""
    description: str = ""
    """What the model is told (a handler skill exposed to it; a content skill's front matter
    wins)."""
    expose_to_agent: bool = False
    """A handler skill the model may call through ``glove_invoke_skill``."""

    @field_validator("handler")
    @classmethod
    def _handler_path(cls, value: str | None) -> str | None:
        return _import_path(value)

    @model_validator(mode="after")
    def _one_kind(self) -> SkillConfig:
        if (self.handler is None) == (self.dir is None):
            raise ValueError("give exactly one of handler or dir")
        return self

    def describe(self) -> str:
        what = f"handler {self.handler}" if self.handler else f"dir {self.dir}"
        exposed = " (exposed to the agent)" if self.expose_to_agent else ""
        return f"{what}{exposed}"


class AccountConfig(BaseModel):
    """``[runtimes.<id>.accounts.<name>]``: another account of the runtime (a second
    subscription login, a team key). A run with ``--account NAME`` (or a task's ``account``)
    uses its ``home`` as the runtime's config directory (Claude Code's ``CLAUDE_CONFIG_DIR``,
    Codex's ``CODEX_HOME``; default: a home of its own under the state directory, where you log
    in once) and its ``api_key_env`` / ``base_url`` / ``model`` over the runtime's."""

    model_config = _STRICT
    home: str | None = None
    """The account's config directory (``~`` is expanded); it holds its login."""
    api_key_env: str | None = None
    """The NAME of the environment variable holding this account's key (never the key)."""
    base_url: str | None = None
    """This account's endpoint, over the runtime's."""
    model: str | None = None
    """This account's model, over the runtime's."""

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and (redact_secrets(value) != value or not _ENV_NAME.match(value)):
            raise ValueError(f"{value!r} is not an environment variable name")
        return value

    def home_path(self) -> Path | None:
        return Path(self.home).expanduser() if self.home else None


class RuntimeConfig(BaseModel):
    """One runtime's settings. ``None`` everywhere means "the runtime's own default"."""

    model_config = _STRICT

    binary: str | None = None
    """The executable to run (CLI runtimes); default: the one ``scripts/install-runtimes`` put
    under ``.runtimes/``."""
    model: str | None = None
    """The default model (``run --model`` wins)."""
    provider: str | None = None
    """The model provider (native: ``anthropic``, ``openai``, ``openrouter``, …)."""
    base_url: str | None = None
    """Where the runtime sends model requests (a proxy, a local server)."""
    api_key_env: str | None = None
    """The NAME of the environment variable holding the API key (never the key)."""
    permission: PermissionPolicyName | None = None
    """Writes and commands: ``allow``, ``ask`` (denies when nobody can be asked) or ``deny``."""
    mode: str | None = None
    """Runtime-specific (claude-code: ``one-shot`` | ``long-lived``; codex: ``exec`` |
    ``app-server``)."""
    extra_args: tuple[str, ...] = ()
    """More arguments for the runtime's command line (codex: ``key=value`` overrides)."""
    max_runs: int | None = Field(default=None, ge=1)
    """At most this many runs of this runtime at once (a run over it waits, shown queued with
    the reason); default: no limit, runs of one runtime run side by side."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict[str, ModelPrice])
    """USD per million tokens by model, for runtimes that do not report cost themselves."""
    watermark: float | None = Field(default=None, gt=0, le=100)
    """Rotation: a run that ends short (max turns, or a failure) past this percentage of the
    context window continues in a fresh session with a handoff note (default 85; ``run
    --watermark`` wins)."""
    rotate_to: str | None = None
    """Rotation: the runtime the fresh session starts on (default: the same; ``run
    --rotate-to`` wins)."""
    skills_dir: str | None = None
    """Native: where content skills live (``<name>/SKILL.md``), relative to the run's working
    directory or absolute (default ``.claude/skills``; ``run --skills-dir`` wins)."""
    subagents: dict[str, SubagentConfig] = Field(default_factory=dict[str, SubagentConfig])
    """Native: sub-agents by name (``run --subagent NAME=INSTRUCTIONS`` adds one)."""
    hooks: dict[str, str] = Field(default_factory=dict[str, str])
    """Native: ``/name`` hooks by name, each a ``module:function`` import path."""
    skills: dict[str, SkillConfig] = Field(default_factory=dict[str, SkillConfig])
    """Native: ``/name`` skills by name (a handler, or a content skill directory)."""
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict[str, McpServerConfig])
    """MCP servers by name (native); their tools are ``mcp__<name>__<tool>``."""
    output_schema: str | None = None
    """A JSON Schema file (native; relative to the working directory): the final answer must
    be JSON matching it; a mismatch goes back to the model (twice at most), then the run fails
    with ``error{output_invalid}``."""
    accounts: dict[str, AccountConfig] = Field(default_factory=dict[str, AccountConfig])
    """More accounts of this runtime by name (``--account NAME``; see :class:`AccountConfig`)."""

    def for_account(self, name: str) -> RuntimeConfig:
        """These settings as account ``name`` has them (its key variable, URL and model over
        the runtime's).

        Raises:
            ConfigError: no such account.
        """
        account = self.accounts.get(name)
        if account is None:
            known = ", ".join(self.accounts) or "none configured"
            raise ConfigError(f"no account {name!r} (accounts: {known})")
        values = {
            k: v
            for k, v in account.model_dump().items()
            if k in ("api_key_env", "base_url", "model") and v is not None
        }
        return self.model_copy(update={**values, "accounts": {}})

    @field_validator("hooks")
    @classmethod
    def _hook_paths(cls, value: dict[str, str]) -> dict[str, str]:
        for path in value.values():
            _import_path(path)
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if redact_secrets(value) != value:
            raise ValueError(
                "looks like an API key; give the NAME of the environment variable that holds "
                "it (e.g. OPENAI_API_KEY)"
            )
        if not _ENV_NAME.match(value):
            raise ValueError(f"{value!r} is not an environment variable name")
        return value

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key from the environment variable named by :attr:`api_key_env` (``None`` when
        no variable is named or it is unset)."""
        if not self.api_key_env:
            return None
        env = os.environ if environ is None else environ
        return env.get(self.api_key_env) or None


class BudgetConfig(BaseModel):
    """``[budget]``: limits per task (``usd``, ``tokens``), per run (``wall_s``) and over every
    task of one invocation (``host_usd``, ``host_tokens``)."""

    model_config = _STRICT
    usd: float | None = Field(default=None, gt=0)
    """USD per task (every run of it: retries and rotations count); ``--budget-usd`` wins."""
    tokens: int | None = Field(default=None, gt=0)
    """Tokens per task, input + output; ``--budget-tokens`` wins."""
    wall_s: float | None = Field(default=None, gt=0)
    """Seconds per run; ``--max-wall`` wins."""
    host_usd: float | None = Field(default=None, gt=0)
    """USD over every task of one ``run`` or ``batch`` invocation."""
    host_tokens: int | None = Field(default=None, gt=0)
    """Tokens over every task of one ``run`` or ``batch`` invocation."""
    allow_estimates: bool = False
    """Check USD budgets with list-price estimates for runtimes that report only tokens
    (``--allow-estimates``)."""


class BreakerConfig(BaseModel):
    """``[breaker]``: circuit breakers per runtime (per provider for native); off unless set."""

    model_config = _STRICT
    failures: int = Field(default=3, ge=1)
    """Failed tasks in a row (after their retries) that open a runtime's breaker."""
    cooldown_s: float = Field(default=60.0, gt=0)
    """How long an open breaker fails tasks fast; then one trial task may start."""
    fallback: dict[str, str] = Field(default_factory=dict[str, str])
    """Runtime → the runtime its tasks go to while its breaker is open."""


class WorkspaceConfig(BaseModel):
    """``[workspace]``: scripts run (``sh -c``) in each new workspace of a side-by-side run or a
    batch, with the workspace as working directory: ``setup`` before the agent starts (a failure
    fails that run with ``error{setup_failed}``), ``teardown`` after the task's runs end; each
    is stopped after ``timeout_s`` seconds."""

    model_config = _STRICT
    setup: str | None = None
    """Run in each new workspace before the agent starts."""
    teardown: str | None = None
    """Run in each workspace once the task's runs have ended."""
    timeout_s: float = Field(default=300.0, gt=0)
    """Each script's limit in seconds."""


NotifyEvent: TypeAlias = Literal["waiting_approval", "rate_limited", "error", "done"]
"""A change of a run's state a person may want to hear about."""
_URL_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class NotifyConfig(BaseModel):
    """``[notify]``: tell a person when a run needs them, through Apprise URLs (ntfy, Slack,
    Discord, Telegram, email, ``json://`` webhooks, …). A URL names secrets only by variable:
    ``${NAME}`` is replaced by the value of environment variable ``NAME`` when a notification is
    sent (``tgram://${TG_BOT_TOKEN}/${TG_CHAT_ID}``); a URL with a literal key is refused."""

    model_config = _STRICT
    urls: tuple[str, ...] = ()
    """Apprise URLs to notify; ``${NAME}`` stands for environment variable ``NAME``."""
    events: tuple[NotifyEvent, ...] = ("waiting_approval", "rate_limited", "error", "done")
    """The changes of a run's state that notify (default: all)."""
    board_url: str = "http://127.0.0.1:8765"
    """Where the board is served: the notification links to the run's page there."""

    def resolved_urls(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The URLs with each ``${NAME}`` replaced (a URL naming an unset variable is left out)."""
        env = os.environ if environ is None else environ
        found: list[str] = []
        for url in self.urls:
            names = _URL_VAR.findall(url)
            if all(env.get(n) for n in names):
                found.append(_URL_VAR.sub(lambda m: env[m.group(1)], url))
        return found


class SandboxConfig(BaseModel):
    """``[sandbox]``: confine every run's children with bubblewrap (off unless set; see
    :mod:`orchestrator.core.sandbox`)."""

    model_config = _STRICT
    kind: Literal["none", "bubblewrap"] = "none"
    """``bubblewrap`` confines every child process a run starts; ``none`` does not."""
    read: tuple[str, ...] = ()
    """More paths a run may read although under the hidden home (``~/.gitconfig``)."""
    write: tuple[str, ...] = ()
    """More paths a run may change (a shared cache)."""


_SECTIONS: Final = ("budget", "breaker", "workspace", "notify", "sandbox")


class ScheduleConfig(BaseModel):
    """``[[schedule]]``: a task that ``ringleader serve`` runs on a cron schedule (see
    ``orchestrator/engine/schedule.py``). The task's fields are a batch file task's."""

    model_config = _STRICT
    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """Names the schedule (its lines, ``ringleader schedules``, its runs' rows)."""
    cron: str = Field(min_length=1)
    """A five-field cron expression (minute hour day-of-month month day-of-week), e.g.
    ``"0 3 * * 1-5"``."""
    timezone: str = "UTC"
    """An IANA time zone name the expression is read in (``Europe/Riga``); default UTC."""
    catch_up: bool = False
    """Run once at start-up when a firing was missed while the server was down (a missed
    firing is always reported)."""
    overlap: bool = False
    """Let a firing start while the previous one still runs (default: it is skipped, and
    reported)."""
    prompt: str = Field(min_length=1)
    """The task's prompt."""
    runtime: str = Field(min_length=1)
    """The runtime it runs on (see ``ringleader runtimes``)."""
    model: str | None = None
    """Its model (default: the runtime's)."""
    cwd: str = "."
    """Relative to the directory ``ringleader serve`` runs in."""
    workspace: bool = True
    """Run in a workspace of its own (``false``: in ``cwd`` itself)."""
    account: str | None = None
    """The runtime's account it runs as (``[runtimes.ID.accounts.NAME]``)."""
    fallback: tuple[str, ...] = ()
    """Where it goes while its account is held at a limit: accounts, runtimes or both
    (``codex@team``), tried in order."""

    @model_validator(mode="after")
    def _valid(self) -> ScheduleConfig:
        if not self.prompt.strip():
            raise ValueError("prompt is empty")
        if len(self.cron.split()) != 5:
            raise ValueError(
                f"cron {self.cron!r}: give five fields (minute hour day month weekday)"
            )
        try:
            zone = ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {self.timezone!r} (an IANA name)") from None
        try:
            CronSim(self.cron, datetime.datetime.now(zone))
        except CronSimError as exc:
            raise ValueError(f"cron {self.cron!r}: {exc}") from None
        return self


class Config(BaseModel):
    """The whole configuration: settings per runtime id, and governance."""

    model_config = _STRICT
    runtimes: dict[str, RuntimeConfig] = Field(default_factory=dict[str, RuntimeConfig])
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    breaker: BreakerConfig | None = None
    schedule: tuple[ScheduleConfig, ...] = ()
    """``[[schedule]]`` entries of every file (a later file's entry replaces one with its id)."""
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    notify: NotifyConfig = Field(default_factory=NotifyConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)

    def runtime(self, runtime_id: str) -> RuntimeConfig:
        """The settings of ``runtime_id`` (all defaults when the configuration names none)."""
        return self.runtimes.get(runtime_id) or RuntimeConfig()


_FIELDS: Final = tuple(RuntimeConfig.model_fields)
_TABLE_FIELDS: Final = ("prices", "mcp_servers", "subagents", "hooks", "skills", "accounts")
"""Fields that are tables keyed by name (a model, a server): merged entry by entry."""
_ENV_FIELDS: Final = tuple(f for f in _FIELDS if f not in _TABLE_FIELDS)


def env_var_for(runtime_id: str, field: str) -> str:
    """The environment variable that overrides ``field`` of ``runtime_id``
    (``env_var_for("claude-code", "base_url") == "RINGLEADER_CLAUDE_CODE_BASE_URL"``)."""
    slug = re.sub(r"[^A-Za-z0-9]", "_", runtime_id).upper()
    return f"RINGLEADER_{slug}_{field.upper()}"


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/ringleader/config.toml``, else ``~/.config/ringleader/config.toml``."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / "ringleader" / "config.toml"


@attrs.frozen
class LoadedConfig:
    """The effective configuration and where each value came from."""

    config: Config
    sources: Mapping[str, str]
    """``"runtimes.<id>.<field>"`` (prices: ``…prices.<model>``) → the file path or
    ``env NAME`` that set it. Absent keys are defaults."""
    files: tuple[Path, ...] = ()
    """The files that were read, lowest precedence first."""
    ignored: tuple[str, ...] = ()
    """One line per key of an untrusted project file that was ignored, saying why."""

    def runtime(self, runtime_id: str) -> RuntimeConfig:
        return self.config.runtime(runtime_id)

    def with_runtime(self, runtime_id: str, source: str, **values: Any) -> LoadedConfig:
        """A copy with ``values`` set on ``runtime_id`` (e.g. ``--model-server`` pointing a
        runtime at the built-in model server), recorded as coming from ``source``."""
        current = self.config.runtime(runtime_id)
        updated = RuntimeConfig.model_validate(current.model_dump() | values)
        runtimes = dict(self.config.runtimes) | {runtime_id: updated}
        sources = dict(self.sources) | {f"runtimes.{runtime_id}.{k}": source for k in values}
        config = self.config.model_copy(update={"runtimes": runtimes})
        return LoadedConfig(config, sources, self.files, self.ignored)

    def describe(self, runtime_ids: Iterable[str] = ()) -> list[tuple[str, str, str]]:
        """``(key, value, source)`` rows for every runtime named in the configuration or in
        ``runtime_ids``; values are redacted and an ``api_key_env`` says whether it is set."""
        rows: list[tuple[str, str, str]] = []
        ids = list(dict.fromkeys([*self.config.runtimes, *runtime_ids]))
        for runtime_id in ids:
            cfg = self.config.runtime(runtime_id)
            for field in _FIELDS:
                key = f"runtimes.{runtime_id}.{field}"
                if field == "accounts":
                    for name, account in cfg.accounts.items():
                        entry_key = f"{key}.{name}"
                        parts = [f"home={account.home or '(own, in the state directory)'}"]
                        if account.api_key_env:
                            state = "set" if os.environ.get(account.api_key_env) else "not set"
                            parts.append(f"api_key_env={account.api_key_env} ({state})")
                        parts += [
                            f"{k}={v}"
                            for k, v in (("base_url", account.base_url), ("model", account.model))
                            if v
                        ]
                        shown = redact_secrets(", ".join(parts))
                        rows.append((entry_key, shown, self.sources.get(entry_key, "default")))
                    continue
                if field in ("mcp_servers", "subagents", "skills"):  # entries that describe()
                    entries: Mapping[str, McpServerConfig | SubagentConfig | SkillConfig] = getattr(
                        cfg, field
                    )
                    for name, entry in entries.items():
                        entry_key = f"{key}.{name}"
                        shown = redact_secrets(entry.describe())
                        rows.append((entry_key, shown, self.sources.get(entry_key, "default")))
                    continue
                if field == "hooks":
                    for name, path in cfg.hooks.items():
                        hook_key = f"{key}.{name}"
                        rows.append((hook_key, path, self.sources.get(hook_key, "default")))
                    continue
                if field == "prices":
                    for model, price in cfg.prices.items():
                        price_key = f"{key}.{model}"
                        text = ", ".join(
                            f"{k}={v}" for k, v in price.model_dump().items() if v is not None
                        )
                        rows.append((price_key, text, self.sources.get(price_key, "default")))
                    continue
                value: Any = getattr(cfg, field)
                if field == "api_key_env" and value:
                    shown = f"{value} ({'set' if cfg.api_key() else 'not set'})"
                elif field == "extra_args":
                    shown = shlex.join(value) if value else "-"
                else:
                    shown = "-" if value is None else str(value)
                rows.append((key, redact_secrets(shown), self.sources.get(key, "default")))
        return rows


def load_config(
    config_file: str | os.PathLike[str] | None = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    runtime_ids: Iterable[str] = (),
) -> LoadedConfig:
    """The effective configuration (see the module docstring for the sources and their order).

    ``runtime_ids``: runtimes whose ``RINGLEADER_<RUNTIME>_<FIELD>`` variables are read (the
    runtimes named in a file are always included).

    Raises:
        ConfigError: one line naming the file (or variable), the key and the problem.
    """
    env = os.environ if environ is None else environ
    paths: list[Path] = []
    user = user_config_path(env)
    if user.is_file():
        paths.append(user)
    local = Path(cwd if cwd is not None else os.getcwd()) / CONFIG_FILE_NAME
    if local.is_file():
        paths.append(local)
    untrusted: Path | None = None
    if local.is_file() and not is_trusted(local.parent, env):
        untrusted = local
    if config_file is not None:
        explicit = Path(config_file)
        if not explicit.is_file():
            raise ConfigError(f"{explicit}: config file not found")
        if explicit.resolve() not in {p.resolve() for p in paths}:
            paths.append(explicit)
        else:  # named explicitly: it wins even over a later default file
            paths = [p for p in paths if p.resolve() != explicit.resolve()] + [explicit]
    merged: dict[str, dict[str, Any]] = {}
    sections: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    schedules: dict[str, ScheduleConfig] = {}
    ignored: list[str] = []
    for path in paths:
        explicit_file = config_file is not None and path == paths[-1]  # --config: the user's
        project = path == untrusted and not explicit_file
        data, tables = _read_file(path, user=path == user, ignored=ignored if project else None)
        found = _schedules(path, sources)
        if project and found:  # a repository does not schedule work on its own
            ignored.append(
                f"{path}: ignored [[schedule]] {', '.join(found)}: this directory is not trusted "
                f"and it would run tasks of the repository's choosing on a schedule (trust it "
                f"with `ringleader trust {path.parent}`)"
            )
            found = {}
        schedules.update(found)
        if project:  # limits: only stricter than yours (what you set none of, it may set)
            _no_looser(path, data, tables, merged, sections, sources, ignored)
        _merge(merged, sources, data, str(path))
        for name, table in tables.items():  # key by key, a later file wins
            sections.setdefault(name, {}).update(table)
            sources.update({f"{name}.{key}": str(path) for key in table})
    ids = list(dict.fromkeys([*merged, *runtime_ids]))
    for runtime_id in ids:
        for field in _ENV_FIELDS:
            name = env_var_for(runtime_id, field)
            raw = env.get(name)
            if raw is None or raw == "":
                continue
            value: Any = _env_value(name, field, raw)
            _validate_one(f"env {name}", runtime_id, {field: value})
            merged.setdefault(runtime_id, {})[field] = value
            sources[f"runtimes.{runtime_id}.{field}"] = f"env {name}"
    config = _validate(Config, {"runtimes": merged, **sections}, "the merged configuration")
    config = config.model_copy(update={"schedule": tuple(schedules.values())})
    return LoadedConfig(config, sources, tuple(paths), tuple(ignored))


# -- trusted project directories ---------------------------------------------------------------

_TRUSTED_TABLE: Final = "trusted"

_UNTRUSTED_REASONS: Final = {
    "binary": "it would run a program of the repository's choosing",
    "base_url": "it would send model requests, and the key with them, to another server",
    "api_key_env": "it would choose which of your environment variables is sent as a key",
    "extra_args": "it would change the runtime's command line (which can run code or "
    "redirect requests)",
    "mcp_servers": "it would start programs or send your environment's values as headers",
    "hooks": "it would import and run Python code of the repository's choosing",
    "skills": "it would import and run Python code of the repository's choosing",
    "accounts": "it would choose an account's config directory, key variable or server",
    "prices": "lower prices would make runs look cheaper than they are, so they could spend "
    "past your USD budgets (your prices and the shipped table apply)",
}

_LOWER_IS_STRICTER: Final = {
    "budget": ("usd", "tokens", "wall_s", "host_usd", "host_tokens"),
    "breaker": ("failures",),
}
"""Limits an untrusted project may only lower; ``breaker.cooldown_s`` it may only lengthen."""
_PERMISSION_ORDER: Final = ("deny", "ask", "allow")


def trusted_directories(environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The directories the user trusted (``[[trusted]] directory = "…"`` in the user config)."""
    path = user_config_path(environ)
    if not path.is_file():
        return ()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return ()  # reading the file for real reports the problem
    entries: Any = data.get(_TRUSTED_TABLE, [])
    if not isinstance(entries, list):
        return ()
    found: list[Path] = []
    for entry in cast(list[Any], entries):
        if isinstance(entry, dict):
            directory = cast(dict[str, Any], entry).get("directory")
            if isinstance(directory, str) and directory:
                found.append(Path(directory))
    return tuple(found)


def is_trusted(directory: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``directory`` (or a directory above it) was trusted with ``ringleader trust``."""
    here = Path(directory).resolve()
    return any(here == t or t in here.parents for t in trusted_directories(environ))


def trust_directory(
    directory: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> tuple[Path, bool]:
    """Record ``directory`` as trusted in the user config file (appending a ``[[trusted]]``
    entry: the rest of the file is left as it is); ``(resolved directory, newly trusted)``."""
    here = Path(directory).resolve()
    if not here.is_dir():
        raise ConfigError(f"{directory}: not a directory")
    if here in trusted_directories(environ):
        return here, False
    path = user_config_path(environ)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    entry = f"[[{_TRUSTED_TABLE}]]\ndirectory = {json.dumps(str(here))}\n"
    entry = ("" if not text else "\n" if text.endswith("\n") else "\n\n") + entry
    try:
        tomllib.loads(text + entry)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path}: fix this file first: {exc}") from None
    with path.open("a", encoding="utf-8") as f:
        f.write(entry)
    return here, True


def _schedules(path: Path, sources: dict[str, str]) -> dict[str, ScheduleConfig]:
    """The ``[[schedule]]`` entries of ``path`` (already validated by ``_read_file``) by id."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = _validate(Config, {"schedule": data.get("schedule", [])}, str(path)).schedule
    found: dict[str, ScheduleConfig] = {}
    for entry in entries:
        if entry.id in found:
            raise ConfigError(f"{path}: schedule id {entry.id!r} appears twice")
        found[entry.id] = entry
        sources[f"schedule.{entry.id}"] = str(path)
    return found


# -- internals -------------------------------------------------------------------------------


def _read_file(
    path: Path, *, user: bool = False, ignored: list[str] | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """One file's runtimes and sections. ``user``: the user config (where ``[[trusted]]``
    lives); ``ignored``: the file is an untrusted project's — what it may not set is left out
    and said there."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    if _TRUSTED_TABLE in data:
        if not user:
            raise ConfigError(
                f"{path}: {_TRUSTED_TABLE}: trusted directories are recorded in the user config "
                f"only ({user_config_path()}; `ringleader trust DIR` adds one)"
            )
        del data[_TRUSTED_TABLE]
    _refuse_secrets(path, data, ())
    config = _validate(Config, data, str(path))
    # keep only what the file set, so lower-precedence files still show through
    runtimes: dict[str, dict[str, Any]] = {}
    raw_runtimes: dict[str, Any] = data.get("runtimes", {})
    for runtime_id, table in raw_runtimes.items():
        parsed = config.runtime(runtime_id)
        kept: dict[str, Any] = {}
        for field in _FIELDS:
            if field not in table:
                continue
            value = getattr(parsed, field)
            reason = _UNTRUSTED_REASONS.get(field)
            if field == "subagents" and ignored is not None:
                # instructions are only text; a factory is Python of the repository's choosing
                for name, sub in list(value.items()):
                    if sub.factory:
                        ignored.append(
                            f"{path}: ignored runtimes.{runtime_id}.subagents.{name}: this "
                            f"directory is not trusted and its factory would import and run "
                            f"Python code of the repository's choosing (trust it with "
                            f"`ringleader trust {path.parent}`)"
                        )
                        value = {k: v for k, v in value.items() if k != name}
            if field == "permission" and value == "allow":
                reason = "it would let the agent write and run commands without asking"
            if ignored is not None and reason is not None:
                ignored.append(
                    f"{path}: ignored runtimes.{runtime_id}.{field}: this directory is not "
                    f"trusted and {reason} (trust it with `ringleader trust {path.parent}`)"
                )
                continue
            kept[field] = value
        runtimes[runtime_id] = kept
    tables = {name: dict(data[name]) for name in _SECTIONS if isinstance(data.get(name), dict)}
    notify = tables.get("notify")
    if ignored is not None and notify is not None and "urls" in notify:
        # a URL of the repository's choosing, with ${NAME} filled from your environment
        del notify["urls"]
        ignored.append(
            f"{path}: ignored notify.urls: this directory is not trusted and it would send your "
            f"runs' news, and any environment variable's value named in a URL, to a server of "
            f"the repository's choosing (trust it with `ringleader trust {path.parent}`)"
        )
    sandbox = tables.get("sandbox")
    if ignored is not None and sandbox is not None and sandbox.get("kind") == "none":
        del sandbox["kind"]  # turning the sandbox on is anyone's to ask; off is the user's
        ignored.append(
            f"{path}: ignored sandbox.kind: this directory is not trusted and it would turn "
            f"off the sandbox your configuration asks for (trust it with "
            f"`ringleader trust {path.parent}`)"
        )
    if ignored is not None and sandbox is not None:
        for field in ("read", "write"):  # more paths open to the agents: the user's to say
            if field in sandbox:
                del sandbox[field]
                ignored.append(
                    f"{path}: ignored sandbox.{field}: this directory is not trusted and it would "
                    f"open more of your files to the agents (trust it with "
                    f"`ringleader trust {path.parent}`)"
                )
    workspace = tables.get("workspace")
    if ignored is not None and workspace is not None:
        for field in ("setup", "teardown"):  # shell commands run in every workspace
            if field in workspace:
                del workspace[field]
                ignored.append(
                    f"{path}: ignored workspace.{field}: this directory is not trusted and it "
                    f"would run a command of the repository's choosing (trust it with "
                    f"`ringleader trust {path.parent}`)"
                )
    return runtimes, tables


def _no_looser(
    path: Path,
    runtimes: dict[str, dict[str, Any]],
    tables: dict[str, dict[str, Any]],
    merged: Mapping[str, Mapping[str, Any]],
    sections: Mapping[str, Mapping[str, Any]],
    sources: Mapping[str, str],
    ignored: list[str],
) -> None:
    """Leave out what an untrusted project file (``runtimes`` and ``tables``, as read by
    :func:`_read_file`) sets looser than the files before it (yours): a budget or a breaker's
    ``failures`` higher, a breaker's ``cooldown_s`` shorter, ``allow_estimates`` on where you
    set it off, a breaker ``fallback`` other than yours, a runtime's ``max_runs`` higher or its
    ``permission`` more permissive. What you set none of, it may set; one line each in
    ``ignored``."""
    trust = f"(trust it with `ringleader trust {path.parent}`)"

    def refuse(key: str, value: Any, why: str) -> None:
        ignored.append(
            f"{path}: ignored {key} = {value!r}: this directory is not trusted and it would "
            f"{why} (from {sources.get(key, 'your configuration')}) {trust}"
        )

    for name, table in tables.items():
        if name not in ("budget", "breaker") or name not in sections:
            continue  # you set no such section: the project's applies
        yours = sections[name]
        mine: BaseModel = (BudgetConfig if name == "budget" else BreakerConfig).model_validate(
            yours
        )
        theirs: BaseModel = (BudgetConfig if name == "budget" else BreakerConfig).model_validate(
            table
        )
        for field in list(table):
            value: Any = getattr(theirs, field)
            limit: Any = getattr(mine, field)
            key = f"{name}.{field}"
            if field == "fallback":  # yours stand; the project's fill in runtimes you left out
                theirs_fb, yours_fb = cast(dict[str, str], value), cast(dict[str, str], limit)
                for runtime_id, target in theirs_fb.items():
                    if runtime_id in yours_fb and target != yours_fb[runtime_id]:
                        refuse(
                            f"{key}.{runtime_id}",
                            target,
                            f"replace your fallback {yours_fb[runtime_id]!r}",
                        )
                table[field] = theirs_fb | yours_fb
            elif field in _LOWER_IS_STRICTER[name] and limit is not None and value > limit:
                refuse(key, value, f"raise your limit of {limit}")
                del table[field]
            elif field == "cooldown_s" and value < limit:
                refuse(key, value, f"shorten your breaker's cooldown of {limit} s")
                del table[field]
            elif field == "allow_estimates" and value and field in yours and not limit:
                refuse(key, value, "allow the list-price estimates you turned off")
                del table[field]
    for runtime_id, fields in runtimes.items():
        yours_rt = merged.get(runtime_id, {})
        key = f"runtimes.{runtime_id}"
        cap = yours_rt.get("max_runs")
        if "max_runs" in fields and cap is not None and fields["max_runs"] > cap:
            refuse(f"{key}.max_runs", fields.pop("max_runs"), f"raise your limit of {cap}")
        permission = yours_rt.get("permission")
        if (
            "permission" in fields
            and permission is not None
            and _PERMISSION_ORDER.index(fields["permission"]) > _PERMISSION_ORDER.index(permission)
        ):
            refuse(
                f"{key}.permission",
                fields.pop("permission"),
                f"let the agent do more than your permission {permission!r} allows",
            )


def _refuse_secrets(path: Path, data: Any, where: tuple[str, ...]) -> None:
    if isinstance(data, dict):
        for key, value in data.items():  # pyright: ignore[reportUnknownVariableType]
            here = (*where, str(key))  # pyright: ignore[reportUnknownArgumentType]
            dotted = ".".join(here)
            if str(key).lower() in _SECRET_FIELDS:  # pyright: ignore[reportUnknownArgumentType]
                raise ConfigError(
                    f"{path}: {dotted}: keys are not allowed in a config file; put the key in an "
                    f"environment variable and set api_key_env to its name"
                )
            _refuse_secrets(path, value, here)
    elif isinstance(data, str) and redact_secrets(data) != data:
        raise ConfigError(
            f"{path}: {'.'.join(where)}: the value looks like an API key; keys are not allowed "
            f"in a config file (name the environment variable with api_key_env)"
        )
    elif isinstance(data, list):
        for index, item in enumerate(data):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            _refuse_secrets(path, item, (*where, f"[{index}]"))


def _merge(
    merged: dict[str, dict[str, Any]],
    sources: dict[str, str],
    data: dict[str, dict[str, Any]],
    source: str,
) -> None:
    for runtime_id, fields in data.items():
        target = merged.setdefault(runtime_id, {})
        for field, value in fields.items():
            if field in _TABLE_FIELDS:
                table: dict[str, Any] = dict(target.get(field, {}))
                for name, entry in value.items():
                    table[name] = entry
                    sources[f"runtimes.{runtime_id}.{field}.{name}"] = source
                target[field] = table
            else:
                target[field] = value
                sources[f"runtimes.{runtime_id}.{field}"] = source


def _env_value(name: str, field: str, raw: str) -> Any:
    if field == "extra_args":
        try:
            return tuple(shlex.split(raw))
        except ValueError as exc:
            raise ConfigError(f"env {name}: runtimes extra_args: {exc}") from None
    return raw


def _validate_one(source: str, runtime_id: str, values: dict[str, Any]) -> None:
    _validate(Config, {"runtimes": {runtime_id: values}}, source)


def _validate(model: type[_M], data: Any, source: str) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        key = ".".join(str(part) for part in first["loc"]) or "(top level)"
        problem = _problem(first)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: {key}: {problem}{more}") from None


def _problem(error: Any) -> str:
    kind = str(error.get("type", ""))
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "literal_error":
        return redact_secrets(str(error.get("msg", "invalid value")))
    message = str(error.get("msg", "invalid value"))
    message = message.removeprefix("Value error, ")
    return redact_secrets(message)
