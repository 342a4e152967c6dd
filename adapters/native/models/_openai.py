"""What the OpenAI-SDK model adapters share (Responses, Chat Completions, every compatible
provider): the SDK client and :class:`OpenAISdkModel`. Only they import the OpenAI SDK."""

from __future__ import annotations

import httpx2
import openai

from ._common import SdkErrors, shared_http_client
from ._sdk import SdkModel

__all__ = ["OpenAISdkModel", "openai_client"]


def openai_client(
    api_key: str | None, base_url: str | None, http_client: httpx2.AsyncClient | None
) -> openai.AsyncOpenAI:
    """An OpenAI SDK client on the shared httpx2 client, SDK retries off."""
    return openai.AsyncOpenAI(
        api_key=api_key or "unused",
        base_url=base_url,
        http_client=http_client or shared_http_client(),
        max_retries=0,
    )


class OpenAISdkModel(SdkModel[openai.AsyncOpenAI]):
    """A model on the OpenAI SDK (Responses, Chat Completions, every compatible provider)."""

    sdk_errors = SdkErrors(openai.APIStatusError, openai.APIConnectionError, openai.APIError)

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 4096,
        stream: bool = True,
        provider: str = "openai",
        http_client: httpx2.AsyncClient | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        client = client or openai_client(api_key, base_url, http_client)
        super().__init__(model, client, provider=provider, max_tokens=max_tokens, stream=stream)
