"""Third-party ACP agents as ready runtimes: ``--runtime acp:claude``, ``acp:codex``,
``acp:opencode``, ``acp:qwen`` and ``acp:gemini`` (docs/acp-agents.md).

Each preset is the generic ACP adapter with the agent's installed command
(``ringleader install acp-agents`` puts them under ``.runtimes/``) and the settings that point it
at a model endpoint (``runtimes."acp:NAME".base_url``, or ``run --model-server``):

===========  ====================================  ================================================
preset       agent (command)                       model endpoint
===========  ====================================  ================================================
acp:claude   claude-agent-acp                      ``ANTHROPIC_BASE_URL`` (Anthropic Messages)
acp:codex    codex-acp                             a Codex ``model_provider`` in
                                                   ``$CODEX_HOME/config.toml`` (Responses API)
acp:opencode ``opencode acp``                      a provider in ``OPENCODE_CONFIG_CONTENT``
                                                   (``@ai-sdk/openai-compatible``, Chat Completions)
acp:qwen     ``qwen --acp``                        ``OPENAI_BASE_URL`` (Chat Completions)
acp:gemini   ``gemini --acp``                      ``GOOGLE_GEMINI_BASE_URL`` (the Gemini API,
                                                   ``generateContent``)
===========  ====================================  ================================================

**Homes.** Every agent runs with its own ``HOME`` (and the agent's own config/state variables)
inside a per-identity home: the host's ``home_dir``, else ``<state_root>/<agent id>`` (default
``$RINGLEADER_STATE_DIR/acp-NAME``, else ``~/.local/state/ringleader/acp-NAME``), mode 0700 —
never the user's own ``~/.claude``, ``~/.codex``, ``~/.config/opencode``, ``~/.qwen`` or
``~/.gemini``. Sessions persist there, so ``session/load`` resumes them in a new process.

**Keys.** The key comes from the variable named by ``api_key_env`` (each preset has a default)
and is handed to the child in the variable the agent reads; it is never written to a file
(OpenCode's config names it as ``{env:NAME}``).

**Permissions.** Each agent is configured to *ask* before commands and edits, and the adapter's
policy answers (``deny`` by default; ``allow``; ``ask``: a person, through the run's approval
book). Codex answers a rejection by ending the turn (its only reject option is ``abort``), as
OpenCode and Qwen Code stop after a rejected call; Claude Code goes on with the refusal as the
tool's result.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import attrs
import trio

from orchestrator.core.adapter import Capabilities, HealthResult, NativeHomeClaim
from orchestrator.core.errors import ConfigError, RuntimeNotFoundError
from orchestrator.core.events import now_ms

from .._base import make_private_dir, write_private
from .._cli import ChildSpec
from .._runtimes import install_hint, runtime_binary, runtime_path_dirs
from .adapter import AcpAdapter, AcpRun, agent_state_root
from .driver import AcpConfig, PermissionPolicy

__all__ = [
    "PRESETS",
    "AcpPreset",
    "PresetAdapter",
    "PresetConfig",
    "codex_config_toml",
    "locate_agent",
    "opencode_config",
    "preset_adapter",
    "preset_env",
]

_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PROVIDER: Final = "ringleader"
"""The provider Codex's and OpenCode's configurations name for ``base_url``."""

Api = Literal["anthropic", "responses", "chat", "gemini"]
ConfigWriter = Callable[[str | None, str, str | None], str]
"""``(base_url, key variable, model)`` → an agent's configuration text (never the key)."""


@attrs.frozen
class AcpPreset:
    """One third-party ACP agent: how it is installed, started, given its home and pointed at a
    model. What differs between the agents is data here, not code."""

    name: str
    """``claude`` → runtime id ``acp:claude``."""
    install_id: str
    """What ``ringleader install`` calls it (its folder under ``.runtimes/``)."""
    summary: str
    """Its line in ``ringleader runtimes``."""
    args: tuple[str, ...]
    """Arguments after the binary that start ACP on stdio."""
    api: Api
    """The API the agent speaks to its model endpoint."""
    key_env: str
    """The variable the key is read from by default (``api_key_env`` overrides), and the one the
    agent is given it in unless ``key_by_name``."""
    local_model: str
    """The model ``run --model-server`` uses."""
    tool_call: Mapping[str, Any]
    """The tool call ``run --model-server``'s built-in script makes (the agent's shell)."""
    key_by_name: bool = False
    """The agent's configuration names the key's variable: it gets the key under the configured
    name (``api_key_env``), not under ``key_env``."""
    base_url_env: str | None = None
    """The variable the agent reads its endpoint from (``None``: its configuration has it)."""
    model_env: str | None = None
    """The variable the agent reads its model from."""
    dirs: Mapping[str, str] = attrs.field(factory=dict[str, str])
    """The agent's own state variables → their folders in the home."""
    quiet: Mapping[str, str] = attrs.field(factory=dict[str, str])
    """Variables that stop update checks, telemetry and downloads (offline but for the model)."""
    config: ConfigWriter | None = None
    """The agent's configuration, written to ``config_file`` in the home or handed over in the
    variable ``config_env``."""
    config_file: str | None = None
    config_env: str | None = None
    model_by_session: bool = False
    """The model is applied with ``session/set_model``; otherwise the agent is given it in its
    configuration (its ids are its own: ``ringleader/MODEL``, ``$runtime|openai|MODEL``)."""
    sandbox_helper: str | None = None
    """The agent's folder in the home where the link ``codex-linux-sandbox`` (to its binary) is
    made: Codex's shell sandbox runs the binary under that name inside bubblewrap, and Codex
    will not make the link itself in a home under the system temp directory."""

    @property
    def runtime_id(self) -> str:
        return f"acp:{self.name}"


# -- what each agent is given -----------------------------------------------------------------


def codex_config_toml(base_url: str | None, key_env: str, model: str | None) -> str:
    """codex-acp's ``$CODEX_HOME/config.toml``: a custom Responses-API provider at ``base_url``
    (the key through ``env_key``, never written), every non-trusted command asked about, the
    workspace writable."""
    lines: list[str] = []
    if model:
        lines.append(f"model = {json.dumps(model)}")
    if base_url:
        lines.append(f"model_provider = {json.dumps(_PROVIDER)}")
    lines += ['approval_policy = "untrusted"', 'sandbox_mode = "workspace-write"']
    # the agent's commands never see the key, and no shell snapshot (which records the
    # environment) is written into the home
    lines += [
        "",
        "[shell_environment_policy]",
        f"exclude = [{json.dumps(key_env)}]",
        "",
        "[features]",
        "shell_snapshot = false",
    ]
    if base_url:
        lines += [
            "",
            f"[model_providers.{_PROVIDER}]",
            f"name = {json.dumps(_PROVIDER)}",
            f"base_url = {json.dumps(base_url)}",
            'wire_api = "responses"',
            f"env_key = {json.dumps(key_env)}",
            "request_max_retries = 1",
            "stream_max_retries = 1",
        ]
    return "\n".join(lines) + "\n"


def opencode_config(base_url: str | None, key_env: str, model: str | None) -> dict[str, Any]:
    """OpenCode's configuration (``OPENCODE_CONFIG_CONTENT``): with a ``base_url``, one
    OpenAI-compatible provider there whose key is ``{env:NAME}``; commands and edits ask."""
    config: dict[str, Any] = {
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "ask", "edit": "ask", "webfetch": "ask"},
    }
    if base_url:
        name = model or "default"
        config["provider"] = {
            _PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "ringleader",
                "options": {"baseURL": base_url, "apiKey": f"{{env:{key_env}}}"},
                "models": {name: {"name": name, "tool_call": True}},
            }
        }
        config["model"] = config["small_model"] = f"{_PROVIDER}/{name}"
    elif model:
        config["model"] = model
    return config


def _settings_json(settings: Mapping[str, Any]) -> ConfigWriter:
    """A fixed ``settings.json`` (the endpoint, key and model come in variables)."""
    text = json.dumps(settings, indent=2)
    return lambda base_url, key_env, model: text


_QWEN_SETTINGS: Final = {
    # the OpenAI-compatible auth (``OPENAI_*`` variables), approvals asked (``default`` mode), no
    # updates, statistics, telemetry or background memory agents
    "security": {"auth": {"selectedType": "openai"}},
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
    "tools": {"approvalMode": "default"},
}
_GEMINI_SETTINGS: Final = {
    # the API-key auth, no updates or telemetry
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


PRESETS: Final[dict[str, AcpPreset]] = {
    p.name: p
    for p in (
        AcpPreset(
            name="claude",
            install_id="claude-agent-acp",
            summary="Claude Code through Zed's claude-agent-acp (ACP)",
            args=(),
            api="anthropic",
            key_env="ANTHROPIC_API_KEY",
            local_model="claude-sonnet-4-6",
            tool_call={"name": "Bash", "input": {"command": "ls", "description": "List files"}},
            base_url_env="ANTHROPIC_BASE_URL",
            dirs={"CLAUDE_CONFIG_DIR": ".claude"},
            quiet={
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1",
            },
            model_by_session=True,
        ),
        AcpPreset(
            name="codex",
            install_id="codex-acp",
            summary="Codex through Zed's codex-acp (ACP)",
            args=(),
            api="responses",
            key_env="OPENAI_API_KEY",
            local_model="gpt-5.5",
            tool_call={"name": "exec_command", "input": {"cmd": "ls"}},
            key_by_name=True,
            dirs={"CODEX_HOME": ".codex"},
            config=codex_config_toml,
            config_file=".codex/config.toml",
            sandbox_helper=".codex",
        ),
        AcpPreset(
            name="opencode",
            install_id="opencode",
            summary="OpenCode over ACP (opencode acp)",
            args=("acp",),
            api="chat",
            key_env="OPENAI_API_KEY",
            local_model="fake-model",
            tool_call={"name": "bash", "input": {"command": "ls", "description": "List files"}},
            key_by_name=True,
            dirs={
                "XDG_CONFIG_HOME": ".config",
                "XDG_DATA_HOME": ".local/share",
                "XDG_STATE_HOME": ".local/state",
                "XDG_CACHE_HOME": ".cache",
            },
            quiet={
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                "OPENCODE_DISABLE_SHARE": "1",
                "OPENCODE_DISABLE_CLAUDE_CODE": "1",
                # OpenCode installs @opencode-ai/plugin into each config directory in the
                # background through its embedded npm: offline, that finds nothing and is skipped
                "npm_config_offline": "true",
            },
            config=lambda base_url, key_env, model: json.dumps(
                opencode_config(base_url, key_env, model)
            ),
            config_env="OPENCODE_CONFIG_CONTENT",
        ),
        AcpPreset(
            name="qwen",
            install_id="qwen-code",
            summary="Qwen Code over ACP (qwen --acp)",
            args=("--acp",),
            api="chat",
            key_env="OPENAI_API_KEY",
            local_model="fake-model",
            tool_call={"name": "run_shell_command", "input": {"command": "ls"}},
            base_url_env="OPENAI_BASE_URL",
            model_env="OPENAI_MODEL",
            config=_settings_json(_QWEN_SETTINGS),
            config_file=".qwen/settings.json",
        ),
        AcpPreset(
            name="gemini",
            install_id="gemini-cli",
            summary="Gemini CLI over ACP (gemini --acp)",
            args=("--acp",),
            api="gemini",
            key_env="GEMINI_API_KEY",
            local_model="gemini-2.5-flash",
            tool_call={"name": "run_shell_command", "input": {"command": "ls"}},
            base_url_env="GOOGLE_GEMINI_BASE_URL",
            model_env="GEMINI_MODEL",
            config=_settings_json(_GEMINI_SETTINGS),
            config_file=".gemini/settings.json",
        ),
    )
}
"""The presets by name (``acp:NAME``)."""


@attrs.define
class PresetConfig:
    """One preset's settings (from ``[runtimes."acp:NAME"]``)."""

    preset: AcpPreset
    base_url: str | None = None
    """The model endpoint (Anthropic base without ``/v1``; OpenAI bases with ``/v1``)."""
    model: str | None = None
    key_env: str | None = None
    """The NAME of the variable holding the key (default: the preset's)."""
    binary: str | None = None
    extra_args: tuple[str, ...] = ()
    permission: PermissionPolicy = "deny"
    state_root: Path | None = None
    env: Mapping[str, str] = attrs.field(factory=dict[str, str])
    handshake_timeout: float = 60.0
    cancel_grace: float = 5.0

    def __attrs_post_init__(self) -> None:
        if self.key_env is not None and not _ENV_NAME.fullmatch(self.key_env):
            raise ConfigError(f"key_env must be an environment variable name, not {self.key_env!r}")

    @property
    def key_variable(self) -> str:
        return self.key_env or self.preset.key_env


def preset_env(config: PresetConfig, home: Path, key: str, model: str | None) -> dict[str, str]:
    """The agent's own variables for a run in ``home`` with ``model`` (its key included, under
    the name the agent reads)."""
    preset = config.preset
    env = {"HOME": str(home), **preset.quiet}
    env |= {name: str(home / folder) for name, folder in preset.dirs.items()}
    env[config.key_variable if preset.key_by_name else preset.key_env] = key
    if preset.base_url_env and config.base_url:
        env[preset.base_url_env] = config.base_url
    if preset.model_env and model:
        env[preset.model_env] = model
    if preset.config_env and preset.config:
        env[preset.config_env] = preset.config(config.base_url, config.key_variable, model)
    return env


def _make_home(home: Path, config: PresetConfig, model: str | None) -> None:
    """Create the private home and the agent's settings file, if it reads one (no secret)."""
    make_private_dir(home)
    preset = config.preset
    if preset.config_file and preset.config:
        path = home / preset.config_file
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private(path, preset.config(config.base_url, config.key_variable, model))


class PresetAdapter(AcpAdapter):
    """A third-party ACP agent behind the trait (see the module docstring); its runtime id is
    its preset's."""

    def __init__(self, config: PresetConfig, *, clock: Callable[[], int] = now_ms) -> None:
        self.id = config.preset.runtime_id
        self.preset_config = config
        self.preset = config.preset
        super().__init__(
            AcpConfig(
                binary=config.binary,
                model=config.model,
                permission=config.permission,
                env=dict(config.env),
                handshake_timeout=config.handshake_timeout,
                cancel_grace=config.cancel_grace,
            ),
            clock=clock,
        )

    def capabilities(self) -> Capabilities:
        claim = NativeHomeClaim(scope="per-identity", persist=True)
        return super().capabilities().model_copy(update={"native_home": claim})

    def hint(self) -> str:
        return install_hint(self.preset.install_id, config_key=self.id)

    def binary(self) -> str:
        return self.config.binary or str(locate_agent(self.preset))

    def argv(self, args: Sequence[str]) -> list[str]:
        if self.config.launcher is not None:
            return list(self.config.launcher(args))
        config = self.preset_config
        return [self.binary(), *self.preset.args, *config.extra_args, *args]

    def model_by_session(self) -> bool:
        return self.preset.model_by_session

    def spec(self, args: Sequence[str], env: Mapping[str, str], **kw: Any) -> ChildSpec:
        return attrs.evolve(super().spec(args, env, **kw), install_hint=self.hint())

    async def probe_health(self) -> HealthResult:
        return await self.probe_installed()

    async def prepare_run(self, run: AcpRun) -> None:
        config = self.preset_config
        preset = self.preset
        home = self.identity_home(run, config.state_root or agent_state_root(f"acp-{preset.name}"))
        model = run.state.model
        await trio.to_thread.run_sync(_make_home, home, config, model)
        run.home = home
        name = config.key_variable
        key = run.opts.env.get(name) or config.env.get(name) or os.environ.get(name) or ""
        own = preset_env(config, home, key or "unset", model)
        path = run.env.get("PATH") or os.environ.get("PATH") or os.defpath
        dirs = [str(d) for d in runtime_path_dirs(preset.install_id)] if not config.binary else []
        if dirs:
            path = own["PATH"] = os.pathsep.join([*dirs, path])
        run.env.update(own)
        if preset.sandbox_helper is not None and self.config.launcher is None:
            from ..codex.driver import with_sandbox_helper

            binary = Path(await trio.to_thread.run_sync(self.binary))
            run.env.update(
                await trio.to_thread.run_sync(
                    with_sandbox_helper, {"PATH": path}, home / preset.sandbox_helper, binary
                )
            )
        if self.config.launcher is None:
            await trio.to_thread.run_sync(self.binary)  # missing: one clear line with the hint


def locate_agent(preset: AcpPreset) -> Path:
    """The installed agent's executable.

    Raises:
        RuntimeNotFoundError: not installed (the message says how to install it, or how to
            point ``runtimes."acp:NAME".binary`` at one already installed).
    """
    try:
        return runtime_binary(preset.install_id)
    except RuntimeNotFoundError as exc:
        hint = install_hint(preset.install_id, config_key=preset.runtime_id)
        raise RuntimeNotFoundError(
            f"{preset.install_id} (the {preset.runtime_id} agent) is not installed (looked for "
            f"{exc.path}); {hint}",
            path=exc.path,
            install_hint=hint,
            adapter=preset.runtime_id,
        ) from None


def preset_adapter(name: str, **settings: Any) -> PresetAdapter:
    """The adapter for preset ``name`` (``claude``, ``codex``, …) with ``settings``
    (:class:`PresetConfig`'s fields)."""
    try:
        preset = PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown ACP preset {name!r}; known: {', '.join(PRESETS)}") from None
    return PresetAdapter(PresetConfig(preset=preset, **settings))
