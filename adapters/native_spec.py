"""The native runtime's spec: how ringleader builds it from its configuration
(registered in the ``ringleader.runtimes`` entry-point group, as a third party's runtime is).
The adapter is imported when a run is built, never when the spec is listed."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from adapters.builtin import refuse_unused
from orchestrator.core.adapter import RuntimeAdapter, StartOpts
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import InboxHook, InboxItemRow, ModelServerHook, RuntimeSpec

if TYPE_CHECKING:
    from adapters.native.mcp import McpServer
    from adapters.native.structured import OutputSchema

__all__ = ["NATIVE"]


def _native(config: RuntimeConfig) -> RuntimeAdapter:
    from adapters.native import NativeAdapter, PermissionPolicy, Price, PriceTable, create_adapter
    from adapters.native.app_config import config_app
    from adapters.native.models.base import ModelAdapter
    from adapters.native.models.providers import canonical_provider

    refuse_unused("native", config, "binary", "extra_args", "mode")
    key = config.api_key()
    if config.api_key_env and key is None:
        raise ConfigError(
            f"runtimes.native.api_key_env: the variable {config.api_key_env} is not set"
        )

    def model_factory(opts: StartOpts) -> ModelAdapter:
        env: dict[str, str] = {**os.environ, **opts.env}
        configured, provider, model = _provider(config, opts.model, env)
        # the configured key and URL belong to the configured provider: a model naming another
        # provider (`--model ollama:x`, the board's form) gets that provider's own key and URL
        # from the environment, never ours
        ours = canonical_provider(provider) == canonical_provider(configured)
        return create_adapter(
            provider=provider,
            model=model or None,
            api_key=key if ours else None,
            base_url=config.base_url if ours else None,
            env=env,
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
        skill_dirs={n: s.dir for n, s in config.skills.items() if s.dir is not None},
        app=config_app(config.hooks, config.skills, config.subagents, model_factory),
        output_schema=_output_schema(config),
    )


def _provider(
    config: RuntimeConfig, model: str | None, env: Mapping[str, str]
) -> tuple[str, str, str | None]:
    """(the configured provider, the run's provider, its model): ``--model provider:model``
    names another provider than the configured one (``runtimes.native.provider``, else
    ``$RINGLEADER_NATIVE_PROVIDER``, else ``anthropic``)."""
    configured = config.provider or env.get("RINGLEADER_NATIVE_PROVIDER", "anthropic")
    provider, model = configured, model or config.model
    if model and ":" in model:
        provider, model = model.split(":", 1)
    return configured, provider, model


def _preload(config: RuntimeConfig, model: str | None) -> None:
    """The adapter, and the model module (with its SDK) of the provider a run on ``model``
    uses: an Anthropic run imports the anthropic SDK only, an OpenAI one the openai SDK only."""
    from adapters.native import NativeAdapter
    from adapters.native.models.providers import model_class

    _, provider, _ = _provider(config, model, os.environ)
    model_class(provider)
    del NativeAdapter  # imported for the import: the adapter's modules load in this thread


def _output_schema(config: RuntimeConfig) -> OutputSchema | None:
    """``runtimes.native.output_schema``: the JSON Schema file, read and checked now."""
    from adapters.native.structured import OutputSchema

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
    from adapters.native.mcp import McpHttpServer, McpStdioServer

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
    from adapters.native.models.providers import PROVIDERS

    provider = config.provider or os.environ.get("RINGLEADER_NATIVE_PROVIDER", "anthropic")
    spec = PROVIDERS.get(provider)
    env_var = spec.env_var if spec is not None and spec.requires_api_key else None
    return tuple(v for v in (config.api_key_env, env_var) if v)


def _session_dbs(state_dir: Path) -> list[Path]:
    """Every native session database of a state directory (one per agent home)."""
    return sorted((state_dir / "homes" / "native").glob("*/native/sessions.db"))


def _inbox_items(state_dir: Path, run_id: str | None) -> list[InboxItemRow]:
    from adapters.native.stores.sqlite import list_inbox_items

    return [
        InboxItemRow(
            run_id=session,
            item_id=item.id,
            tag=item.tag,
            request=item.request,
            status=item.status,
            blocking=item.blocking,
            response=item.response,
            created_at=item.created_at,
            resolved_at=item.resolved_at,
        )
        for db in _session_dbs(state_dir)
        for session, item in list_inbox_items(db, run_id)
    ]


def _resolve_inbox(state_dir: Path, run_id: str, item_id: str, response: str) -> bool:
    from adapters.native.stores.sqlite import resolve_inbox_item

    return any(resolve_inbox_item(db, run_id, item_id, response) for db in _session_dbs(state_dir))


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
    inbox=InboxHook(list_items=_inbox_items, resolve=_resolve_inbox),
    preload=_preload,
    # in-process: no binary, command line or mode
    settings=frozenset(
        {
            "model",
            "provider",
            "base_url",
            "api_key_env",
            "permission",
            "skills_dir",
            "hooks",
            "skills",
            "subagents",
            "mcp_servers",
            "output_schema",
            "prices",
        }
    ),
)
