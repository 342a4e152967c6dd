"""The runtimes ringleader ships, as :class:`~orchestrator.registry.RuntimeSpec` objects.

``pyproject.toml`` registers each one in the ``ringleader.runtimes`` entry-point group (the same
group third-party runtimes use), so the CLI finds ours exactly as it finds theirs. Each factory
takes the runtime's resolved :class:`~orchestrator.config.RuntimeConfig` and imports its adapter
lazily: a runtime whose module or binary is missing never breaks the others, and listing the
runtimes stays fast.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from orchestrator.adapter import RuntimeAdapter, StartOpts
from orchestrator.config import RuntimeConfig, SubagentConfig
from orchestrator.errors import ConfigError
from orchestrator.registry import Installed, ModelServerHook, RuntimeRegistry, RuntimeSpec

if TYPE_CHECKING:
    from .native.mcp import McpServer
    from .native.structured import OutputSchema

__all__ = [
    "ACP",
    "BUILTIN_RUNTIMES",
    "CLAUDE_CODE",
    "CODEX",
    "HERMES",
    "NATIVE",
    "OPENCLAW",
    "SCRIPTED",
    "builtin_registry",
]


_NATIVE_ONLY = ("skills_dir", "subagents")


def _refuse(runtime_id: str, config: RuntimeConfig, *fields: str) -> None:
    """Settings a runtime has no use for are an error, not silently ignored (the native app
    layer's settings on any other runtime included)."""
    for field in (*fields, *(_NATIVE_ONLY if runtime_id != "native" else ())):
        value: Any = getattr(config, field)
        if value:
            raise ConfigError(
                f"runtimes.{runtime_id}.{field}: not used by the {runtime_id} runtime"
            )


# -- native ------------------------------------------------------------------------------------


def _native(config: RuntimeConfig) -> RuntimeAdapter:
    from .native import NativeAdapter, PermissionPolicy, Price, PriceTable, create_adapter
    from .native.models.base import ModelAdapter

    _refuse("native", config, "binary", "extra_args", "mode")
    key = config.api_key()
    if config.api_key_env and key is None:
        raise ConfigError(
            f"runtimes.native.api_key_env: the variable {config.api_key_env} is not set"
        )

    def model_factory(opts: StartOpts) -> ModelAdapter:
        env: dict[str, str] = {**os.environ, **opts.env}
        provider = config.provider or env.get("RINGLEADER_NATIVE_PROVIDER", "anthropic")
        model = opts.model or config.model
        if model and ":" in model:
            provider, model = model.split(":", 1)
        return create_adapter(
            provider=provider, model=model or None, api_key=key, base_url=config.base_url, env=env
        )

    prices = PriceTable()
    for model, price in config.prices.items():
        prices.add(model, Price(price.input, price.output, cache_read=price.cached_input))

    # the workspace tools ship by default (confined to the run's cwd); `permission` sets what
    # writes and bash may do (default: the native `workspace-write` policy, bash asks)
    perm = config.permission
    policy = PermissionPolicy() if perm is None else PermissionPolicy(write=perm, bash=perm)
    return NativeAdapter(
        model_factory=model_factory,
        prices=prices,
        permissions=policy,
        mcp_servers=_mcp_servers(config),
        skills_dir=config.skills_dir or ".claude/skills",
        app=_subagents_app(config.subagents, model_factory) if config.subagents else None,
        output_schema=_output_schema(config),
    )


def _subagents_app(
    subagents: Mapping[str, SubagentConfig], model_factory: Callable[[StartOpts], Any]
) -> Callable[[Any, StartOpts], None]:
    """The app setup that defines the configured sub-agents on each run's Glove: each call
    builds a fresh child Glove (its own model client, its instructions as system prompt)."""
    from .native.extensions import SubAgentFactoryContext
    from .native.glove import Glove

    def app(glove: Glove, opts: StartOpts) -> None:
        for name, sub in subagents.items():

            def factory(_ctx: SubAgentFactoryContext, sub: SubagentConfig = sub) -> Glove:
                model = model_factory(opts.model_copy(update={"model": sub.model or opts.model}))
                return Glove(model=model, system_prompt=sub.instructions).build()

            description = sub.description or sub.instructions.strip().splitlines()[0]
            glove.define_sub_agent(name, factory, description=description)

    return app


def _output_schema(config: RuntimeConfig) -> OutputSchema | None:
    """``runtimes.native.output_schema``: the JSON Schema file, read and checked now."""
    from .native.structured import OutputSchema

    path = config.output_schema
    if not path:
        return None
    where = "runtimes.native.output_schema"
    try:
        schema: Any = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {path} ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(f"{where}: {path} is not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise ConfigError(f"{where}: {path} must hold a JSON Schema object")
    try:
        return OutputSchema.of(cast(dict[str, Any], schema))
    except ValueError as exc:
        raise ConfigError(f"{where}: {path}: {exc}") from None


def _mcp_servers(config: RuntimeConfig) -> list[McpServer]:
    """``runtimes.native.mcp_servers`` as the native runtime's server specs; a variable the
    configuration names (``env_vars``, ``headers_env``) must be set."""
    from .native.mcp import McpHttpServer, McpStdioServer

    servers: list[McpServer] = []
    for name, server in config.mcp_servers.items():
        where = f"runtimes.native.mcp_servers.{name}"
        for var in (*server.env_vars, *server.headers_env.values()):
            if var not in os.environ:
                raise ConfigError(f"{where}: the variable {var} is not set")
        options = server.model_dump(include={"permission", "start_timeout_s", "call_timeout_s"})
        spec: McpServer
        if server.url is not None:
            spec = McpHttpServer(name, server.url, headers=server.resolved_headers(), **options)
        else:
            assert server.command is not None
            env = server.resolved_env()
            spec = McpStdioServer(
                name, server.command, server.args, env=env, cwd=server.cwd, **options
            )
        servers.append(spec)
    return servers


def _native_keys(config: RuntimeConfig) -> tuple[str, ...]:
    from .native.models.providers import PROVIDERS

    provider = config.provider or os.environ.get("RINGLEADER_NATIVE_PROVIDER", "anthropic")
    spec = PROVIDERS.get(provider)
    env_var = spec.env_var if spec is not None and spec.requires_api_key else None
    return tuple(v for v in (config.api_key_env, env_var) if v)


NATIVE = RuntimeSpec(
    id="native",
    factory=_native,
    model_server=ModelServerHook(
        api="anthropic",
        model="claude-haiku-4-5",
        provider="anthropic",
        tool_call={"name": "list_files", "input": {"path": "."}},
    ),
    key_envs=_native_keys,
    summary="ringleader's in-process agent loop",
)

# -- claude-code -----------------------------------------------------------------------------

_CLAUDE_WRITE_TOOLS = ("Bash", "Edit", "Write", "MultiEdit", "NotebookEdit")


def _claude_code(config: RuntimeConfig) -> RuntimeAdapter:
    from .claude_code import ClaudeCodeAdapter, ClaudeCodeConfig, allow_all, deny_all

    _refuse("claude-code", config, "prices", "mcp_servers", "output_schema")
    if config.provider not in (None, "anthropic"):
        raise ConfigError(
            f"runtimes.claude-code.provider: {config.provider!r} is not supported (only "
            "'anthropic'; point base_url at an Anthropic-compatible endpoint instead)"
        )
    mode = config.mode or "one-shot"
    if mode not in ("one-shot", "long-lived"):
        raise ConfigError(
            f"runtimes.claude-code.mode: {mode!r} is not one of 'one-shot', 'long-lived'"
        )
    options: dict[str, Any] = {}
    if config.permission == "allow":
        options |= {
            "permission_mode": "acceptEdits",
            "allowed_tools": _CLAUDE_WRITE_TOOLS,
            "permission_policy": allow_all,
        }
    else:  # ask (nobody to ask) and deny: the CLI's own rules, every prompt denied
        options["permission_policy"] = deny_all
    return ClaudeCodeAdapter(
        ClaudeCodeConfig(
            mode=mode,
            binary=config.binary,
            model=config.model,
            base_url=config.base_url,
            api_key=config.api_key(),
            extra_args=config.extra_args,
            **options,
        )
    )


def _claude_keys(config: RuntimeConfig) -> tuple[str, ...]:
    return tuple(v for v in (config.api_key_env, "ANTHROPIC_API_KEY") if v)


def _locate(runtime_id: str, config: RuntimeConfig) -> Installed:
    from ._runtimes import PINNED_VERSIONS, installed_spec, runtime_binary

    if config.binary:
        return Installed(config.binary, None)
    path = runtime_binary(runtime_id)
    spec = installed_spec(runtime_id)
    # the stamp is "pkg@version", or for openclaw "openclaw@version+node@version"
    version = spec.split("+", 1)[0].rsplit("@", 1)[-1] if spec else PINNED_VERSIONS.get(runtime_id)
    return Installed(str(path), version)


CLAUDE_CODE = RuntimeSpec(
    id="claude-code",
    factory=_claude_code,
    model_server=ModelServerHook(
        api="anthropic",
        model="claude-sonnet-4-6",
        tool_call={"name": "Bash", "input": {"command": "ls", "description": "List the files"}},
    ),
    key_envs=_claude_keys,
    locate=lambda config: _locate("claude-code", config),
    summary="Claude Code (claude -p, stream-json)",
)

# -- codex -------------------------------------------------------------------------------------


def _codex(config: RuntimeConfig) -> RuntimeAdapter:
    from .codex import CodexAdapter, CodexConfig, CodexProvider, Price

    _refuse("codex", config, "mcp_servers", "output_schema")
    if config.provider not in (None, "openai"):
        raise ConfigError(
            f"runtimes.codex.provider: {config.provider!r} is not supported (only 'openai'; "
            "point base_url at a Responses-API endpoint instead)"
        )
    mode = config.mode or "exec"
    if mode not in ("exec", "app-server"):
        raise ConfigError(f"runtimes.codex.mode: {mode!r} is not one of 'exec', 'app-server'")
    for item in config.extra_args:
        if "=" not in item:
            raise ConfigError(
                f"runtimes.codex.extra_args: {item!r} is not a key=value override (each is "
                "passed to codex as -c key=value)"
            )
    provider = None
    if config.base_url:
        provider = CodexProvider(base_url=config.base_url, api_key=config.api_key())
    options: dict[str, Any] = {}
    match config.permission:
        case "allow":
            options |= {"sandbox": "workspace-write", "approve": _accept}
        case "deny":
            options |= {"sandbox": "read-only", "approval_policy": "never"}
        case "ask":  # nobody to ask: requests are declined
            options["approval_policy"] = "on-request"
        case None:
            pass
    prices = {
        model: Price(p.input, p.output, cached_input=p.cached_input)
        for model, p in config.prices.items()
    }
    return CodexAdapter(
        CodexConfig(
            mode=mode,
            binary=config.binary,
            provider=provider,
            model=config.model,
            prices=prices,
            extra_config=config.extra_args,
            **options,
        )
    )


def _accept(method: str, params: Mapping[str, Any]) -> Any:
    return "accept"


def _codex_keys(config: RuntimeConfig) -> tuple[str, ...]:
    return tuple(v for v in (config.api_key_env, "OPENAI_API_KEY") if v)


CODEX = RuntimeSpec(
    id="codex",
    factory=_codex,
    model_server=ModelServerHook(
        api="responses",
        model="gpt-5.5",
        tool_call={"name": "exec_command", "input": {"cmd": "ls"}},
    ),
    key_envs=_codex_keys,
    locate=lambda config: _locate("codex", config),
    summary="OpenAI Codex CLI (codex exec --json)",
)

# -- openclaw ----------------------------------------------------------------------------------

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
    from .openclaw import GatewaySettings, ModelProvider, OpenClawAdapter, OpenClawConfig

    _refuse("openclaw", config, "mode", "extra_args", "mcp_servers", "output_schema")
    base_url = config.base_url or ""
    if base_url.startswith(("ws://", "wss://")):
        # attach to a running gateway; api_key_env names the variable holding its token
        _refuse("openclaw", config, "binary", "prices", "permission")
        token = config.api_key()
        if token is None:
            raise ConfigError(
                "runtimes.openclaw.api_key_env: attaching to a gateway needs the variable "
                "holding its token"
            )
        return OpenClawAdapter(OpenClawConfig(url=base_url, token=token))
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
    deny = _OPENCLAW_WRITE_TOOLS if config.permission in ("deny", "ask") else ()
    settings = GatewaySettings(provider=provider, binary=config.binary, tool_deny=deny)
    return OpenClawAdapter(OpenClawConfig(gateway=settings))


OPENCLAW = RuntimeSpec(
    id="openclaw",
    factory=_openclaw,
    model_server=ModelServerHook(
        api="chat",
        model="openclaw-model",
        tool_call={"name": "exec", "input": {"command": "ls"}},
    ),
    locate=lambda config: _locate("openclaw", config),
    summary="OpenClaw over its gateway WebSocket (one shared gateway)",
)

# -- hermes ------------------------------------------------------------------------------------


def _hermes(config: RuntimeConfig) -> RuntimeAdapter:
    from .hermes import HermesAdapter, HermesConfig

    _refuse("hermes", config, "extra_args", "mode", "prices", "mcp_servers", "output_schema")
    if config.provider not in (None, "custom", "openai", "anthropic"):
        raise ConfigError(
            f"runtimes.hermes.provider: {config.provider!r} is not supported (point base_url at "
            "a Chat Completions endpoint, or provider='anthropic' for Anthropic Messages)"
        )
    options: dict[str, Any] = {}
    if config.model:
        options["model"] = config.model
    if config.permission == "allow":
        options["permission"] = "allow"
    return HermesAdapter(
        HermesConfig(
            base_url=config.base_url,
            api_mode="anthropic_messages" if config.provider == "anthropic" else "chat_completions",
            key_env=config.api_key_env or "OPENAI_API_KEY",
            binary=config.binary,
            **options,
        )
    )


HERMES = RuntimeSpec(
    id="hermes",
    factory=_hermes,
    model_server=ModelServerHook(
        api="chat",
        model="fake-model",
        tool_call={"name": "terminal", "input": {"command": "ls"}},
    ),
    key_envs=lambda config: tuple(v for v in (config.api_key_env, "OPENAI_API_KEY") if v),
    locate=lambda config: _locate("hermes", config),
    summary="Hermes Agent over the Agent Client Protocol (hermes acp)",
)

# -- acp ---------------------------------------------------------------------------------------


def _acp(config: RuntimeConfig) -> RuntimeAdapter:
    from .acp import AcpAdapter, AcpConfig

    _refuse("acp", config, "mode", "prices", "base_url", "provider", "mcp_servers", "output_schema")
    command = (config.binary, *config.extra_args) if config.binary else ()
    return AcpAdapter(
        AcpConfig(
            command=command,
            model=config.model,
            permission="allow" if config.permission == "allow" else "deny",
        )
    )


ACP = RuntimeSpec(
    id="acp",
    factory=_acp,
    summary="any Agent Client Protocol agent (runtimes.acp.binary + extra_args, e.g. gemini "
    "--experimental-acp)",
)

# -- scripted ----------------------------------------------------------------------------------


SCRIPTED_SCRIPT_ENV = "RINGLEADER_SCRIPTED_SCRIPT"
"""A JSON file of scripted frames (a list) the ``scripted`` runtime replays instead of its
canned hello (demos of the board, tests of a served process)."""


def _scripted_script(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as handle:
            frames = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{SCRIPTED_SCRIPT_ENV}={path}: cannot load the script: {exc}") from None
    if not isinstance(frames, list) or not all(isinstance(f, dict) for f in frames):  # pyright: ignore[reportUnknownVariableType]
        raise ConfigError(f"{SCRIPTED_SCRIPT_ENV}={path}: the script must be a JSON list of frames")
    session = f"scripted-{uuid.uuid4().hex}"  # a fresh session id per adapter: unique run ids
    return [
        {**f, "sessionId": session} if f.get("type") == "init" else dict(f)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        for f in frames  # pyright: ignore[reportUnknownVariableType]
    ]


def _scripted(config: RuntimeConfig) -> RuntimeAdapter:
    from .scripted import ScriptedAdapter

    script_file = os.environ.get(SCRIPTED_SCRIPT_ENV)
    if script_file:
        return ScriptedAdapter(_scripted_script(script_file))
    return ScriptedAdapter(
        [
            # a fresh session id per adapter (the CLI builds one per run): unique run ids
            {
                "type": "init",
                "sessionId": f"scripted-{uuid.uuid4().hex}",
                "model": "scripted-model",
            },
            {"type": "text", "text": "Hello from the scripted runtime."},
            {"type": "usage", "inputTokens": 12, "outputTokens": 6, "costUsd": None},
            {"type": "result", "ok": True, "summary": "Hello from the scripted runtime."},
        ]
    )


SCRIPTED = RuntimeSpec(
    id="scripted", factory=_scripted, summary="a canned in-memory run (no model at all)"
)

BUILTIN_RUNTIMES: tuple[RuntimeSpec, ...] = (
    NATIVE,
    CLAUDE_CODE,
    CODEX,
    OPENCLAW,
    HERMES,
    ACP,
    SCRIPTED,
)
"""ringleader's own runtimes, in the order ``ringleader runtimes`` lists them."""


def builtin_registry() -> RuntimeRegistry:
    """A registry with ringleader's own runtimes, default configuration (the CLI discovers
    runtimes through the entry-point group instead, third parties' included)."""
    return RuntimeRegistry.from_specs(BUILTIN_RUNTIMES)
