"""The provider table and ``create_adapter`` (Glove's ``providers.ts``, plus the original executor's list).

Each provider names its wire format, base URL, API-key variable, default model and output limit.
``create_adapter(provider=…)`` picks the adapter class; the base URL can be overridden by
argument or by ``<PROVIDER>_BASE_URL`` in the environment; the key comes from the argument or
the provider's variable. Unknown providers, a missing model or a missing key raise
:class:`~orchestrator.core.errors.ConfigError` (whose message never contains a key).

``bedrock`` is Anthropic's models on AWS Bedrock through the ``anthropic`` SDK's Bedrock client
(``AsyncAnthropicBedrock``), with the standard AWS variables: ``AWS_REGION`` (or
``AWS_DEFAULT_REGION``) and ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (plus
``AWS_SESSION_TOKEN``), or ``AWS_PROFILE``, for SigV4-signed requests, or a Bedrock API key in
``AWS_BEARER_TOKEN_BEDROCK``; ``BEDROCK_BASE_URL`` overrides the endpoint. The SDK signs and
decodes Bedrock's event streams with ``botocore``: install the ``bedrock`` extra
(``pip install 'ringleader[bedrock]'``, i.e. ``anthropic[bedrock]``).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs
import httpx2

from orchestrator.core.errors import ConfigError

from .base import ModelAdapter

if TYPE_CHECKING:
    from anthropic.lib.bedrock import AsyncAnthropicBedrock

# The model classes (and with them the anthropic and openai SDKs, ~1 s of imports) load when a
# model is created, not when the runtime is listed.

__all__ = [
    "PROVIDERS",
    "ProviderSpec",
    "canonical_provider",
    "create_adapter",
    "get_available_providers",
    "model_class",
]

WireFormat: TypeAlias = Literal["anthropic", "openai-chat", "openai-responses", "bedrock"]


@attrs.frozen
class ProviderSpec:
    id: str
    name: str
    format: WireFormat
    base_url: str | None
    env_var: str | None
    default_model: str | None
    default_max_tokens: int = 8192
    requires_api_key: bool = True
    echo_reasoning: bool = False

    @property
    def base_url_env(self) -> str:
        return f"{self.id.upper()}_BASE_URL"


def _p(*args: object, **kw: object) -> ProviderSpec:
    return ProviderSpec(*args, **kw)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


PROVIDERS: dict[str, ProviderSpec] = {
    p.id: p
    for p in (
        _p("openai", "OpenAI", "openai-responses", None, "OPENAI_API_KEY", "gpt-4.1", 4096),
        _p(
            "anthropic",
            "Anthropic",
            "anthropic",
            None,
            "ANTHROPIC_API_KEY",
            "claude-sonnet-4-20250514",
        ),
        _p(
            "openrouter",
            "OpenRouter",
            "openai-chat",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            "anthropic/claude-sonnet-4",
        ),
        _p(
            "gemini",
            "Google Gemini",
            "openai-chat",
            "https://generativelanguage.googleapis.com/v1beta/openai/",
            "GEMINI_API_KEY",
            "gemini-2.5-flash",
        ),
        _p(
            "minimax",
            "MiniMax",
            "openai-chat",
            "https://api.minimax.io/v1",
            "MINIMAX_API_KEY",
            "MiniMax-M2.5",
        ),
        _p(
            "kimi",
            "Moonshot Kimi",
            "openai-chat",
            "https://api.moonshot.ai/v1",
            "MOONSHOT_API_KEY",
            "kimi-k2.5",
        ),
        _p(
            "glm",
            "Zhipu GLM",
            "openai-chat",
            "https://open.bigmodel.cn/api/paas/v4/",
            "ZHIPUAI_API_KEY",
            "glm-4-plus",
            4096,
        ),
        _p(
            "mimo",
            "Xiaomi MiMo",
            "openai-chat",
            None,
            "MIMO_API_KEY",
            "mimo-v2.5",
            echo_reasoning=True,
        ),
        _p("xai", "xAI", "openai-chat", "https://api.x.ai/v1", "XAI_API_KEY", "grok-4"),
        _p(
            "groq",
            "Groq",
            "openai-chat",
            "https://api.groq.com/openai/v1",
            "GROQ_API_KEY",
            "llama-3.3-70b-versatile",
        ),
        _p(
            "mistral",
            "Mistral",
            "openai-chat",
            "https://api.mistral.ai/v1",
            "MISTRAL_API_KEY",
            "mistral-large-latest",
        ),
        _p(
            "together",
            "Together",
            "openai-chat",
            "https://api.together.xyz/v1",
            "TOGETHER_API_KEY",
            "meta-llama/Llama-3.3-70B-Instruct-Turbo",
        ),
        _p(
            "cerebras",
            "Cerebras",
            "openai-chat",
            "https://api.cerebras.ai/v1",
            "CEREBRAS_API_KEY",
            "llama-3.3-70b",
        ),
        _p(
            "deepseek",
            "DeepSeek",
            "openai-chat",
            "https://api.deepseek.com/v1",
            "DEEPSEEK_API_KEY",
            "deepseek-chat",
            echo_reasoning=True,
        ),
        _p(
            "ollama",
            "Ollama",
            "openai-chat",
            "http://localhost:11434/v1",
            None,
            None,
            4096,
            requires_api_key=False,
        ),
        _p(
            "lmstudio",
            "LM Studio",
            "openai-chat",
            "http://localhost:1234/v1",
            None,
            None,
            4096,
            requires_api_key=False,
        ),
        _p(
            "bedrock",
            "AWS Bedrock",
            "bedrock",
            None,
            "AWS_ACCESS_KEY_ID",
            "anthropic.claude-3-5-sonnet-20241022-v2:0",
        ),
    )
}
"""Provider id → spec. ``moonshot`` and ``google`` are accepted as aliases."""

_ALIASES = {"moonshot": "kimi", "google": "gemini"}


def canonical_provider(name: str) -> str:
    """A provider id with its alias resolved (``google`` → ``gemini``, ``moonshot`` → ``kimi``)."""
    name = name.strip().lower()
    return _ALIASES.get(name, name)


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def model_class(provider: str, api: Literal["chat", "responses"] | None = None) -> type[Any] | None:
    """The model adapter class :func:`create_adapter` builds for ``provider``, imported (and with
    it that provider's SDK, and no other); ``None`` for an unknown provider."""
    spec = PROVIDERS.get(_ALIASES.get(provider, provider))
    if spec is None:
        return None
    if spec.format in ("anthropic", "bedrock"):
        from .anthropic import AnthropicModel

        return AnthropicModel
    if (spec.format if api is None else f"openai-{api}") == "openai-responses":
        from .openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel
    from .openai_chat import OpenAIChatModel

    return OpenAIChatModel


def create_adapter(
    *,
    provider: str,
    model: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    max_tokens: int | None = None,
    stream: bool = True,
    api: Literal["chat", "responses"] | None = None,
    http_client: httpx2.AsyncClient | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelAdapter:
    """A model adapter for ``provider`` (see the module docstring)."""
    spec = PROVIDERS.get(_ALIASES.get(provider, provider))
    if spec is None:
        raise ConfigError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
    environ = _env(env)
    if spec.format == "bedrock":
        name = model or spec.default_model or ""
        url = base_url or environ.get(spec.base_url_env)
        limit = max_tokens or spec.default_max_tokens
        from .anthropic import AnthropicModel

        client = bedrock_client(environ, api_key, url, http_client)
        return AnthropicModel(
            name, max_tokens=limit, stream=stream, client=client, provider=spec.id
        )
    name = model or spec.default_model
    if not name:
        raise ConfigError(f"provider {spec.id!r} has no default model; pass model=")
    key = api_key or (environ.get(spec.env_var) if spec.env_var else None)
    if spec.requires_api_key and not key:
        raise ConfigError(f"provider {spec.id!r} needs an API key in ${spec.env_var}")
    url = base_url or environ.get(spec.base_url_env) or spec.base_url
    if spec.id == "mimo" and not url:
        url = environ.get("MIMO_DEFAULT_BASE_URL")
        if not url:
            raise ConfigError("provider 'mimo' needs $MIMO_BASE_URL")
    limit = max_tokens or spec.default_max_tokens
    if spec.format == "anthropic":
        from .anthropic import AnthropicModel

        return AnthropicModel(
            name,
            api_key=key,
            base_url=url,
            max_tokens=limit,
            stream=stream,
            http_client=http_client,
            provider=spec.id,
        )
    wire = spec.format if api is None else f"openai-{api}"
    if wire == "openai-responses":
        from .openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(
            name,
            api_key=key,
            base_url=url,
            max_tokens=limit,
            stream=stream,
            provider=spec.id,
            http_client=http_client,
        )
    from .openai_chat import OpenAIChatModel

    official = spec.id == "openai" and not (base_url or environ.get(spec.base_url_env))
    return OpenAIChatModel(
        name,
        api_key=key,
        base_url=url,
        max_tokens=limit,
        stream=stream,
        provider=spec.id,
        echo_reasoning=spec.echo_reasoning,
        max_tokens_param="max_completion_tokens" if official else "max_tokens",
        http_client=http_client,
    )


def bedrock_client(
    environ: Mapping[str, str],
    api_key: str | None = None,
    base_url: str | None = None,
    http_client: httpx2.AsyncClient | None = None,
) -> AsyncAnthropicBedrock:
    """The SDK's Bedrock client from the standard AWS variables (see the module docstring)."""
    if importlib.util.find_spec("botocore") is None:
        raise ConfigError(
            "provider 'bedrock' needs the AWS SDK the anthropic Bedrock client signs with: "
            "pip install 'ringleader[bedrock]'"
        )
    from anthropic.lib.bedrock import AsyncAnthropicBedrock

    from ._common import shared_http_client

    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    if not region:
        raise ConfigError("provider 'bedrock' needs a region in $AWS_REGION or $AWS_DEFAULT_REGION")
    common: dict[str, Any] = {
        "aws_region": region,
        "base_url": base_url,
        "http_client": http_client or shared_http_client(),
        "max_retries": 0,
    }
    bearer = api_key or environ.get("AWS_BEARER_TOKEN_BEDROCK")
    if bearer:
        return AsyncAnthropicBedrock(api_key=bearer, **common)
    access, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    profile = environ.get("AWS_PROFILE")
    if not ((access and secret) or profile):
        raise ConfigError(
            "provider 'bedrock' needs AWS credentials: $AWS_ACCESS_KEY_ID and "
            "$AWS_SECRET_ACCESS_KEY (and $AWS_SESSION_TOKEN), $AWS_PROFILE, or "
            "$AWS_BEARER_TOKEN_BEDROCK"
        )
    return AsyncAnthropicBedrock(
        aws_access_key=access if access and secret else None,
        aws_secret_key=secret if access and secret else None,
        aws_session_token=environ.get("AWS_SESSION_TOKEN") if access and secret else None,
        aws_profile=None if access and secret else profile,
        **common,
    )


def get_available_providers(env: Mapping[str, str] | None = None) -> list[dict[str, object]]:
    """Every provider with whether it is usable from the environment (keys are never shown)."""
    environ = _env(env)
    out: list[dict[str, object]] = []
    for spec in PROVIDERS.values():
        usable = not spec.requires_api_key or bool(spec.env_var and environ.get(spec.env_var))
        if spec.format == "bedrock":
            usable = usable or bool(environ.get("AWS_BEARER_TOKEN_BEDROCK"))
        out.append(
            {
                "id": spec.id,
                "name": spec.name,
                "available": usable,
                "default_model": spec.default_model,
                "format": spec.format,
            }
        )
    return out
