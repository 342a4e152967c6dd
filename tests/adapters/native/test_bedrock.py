"""Issue 36, models: Bedrock through the ``anthropic`` SDK's Bedrock client (SigV4 from the
standard AWS variables, or a Bedrock API key), with ``httpx2.MockTransport`` as AWS; and the
Anthropic default model is the seed's (``glove-core-api.txt``: ``claude-sonnet-4-20250514``)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

import httpx2
import pytest

from adapters.native.glove import Glove
from adapters.native.models.providers import PROVIDERS, create_adapter, get_available_providers
from orchestrator.core.errors import ConfigError

from .conftest import Recorder
from .test_models_mock import SDK_SSE_LEAK, anthropic_text

pytest.importorskip("botocore", reason="the bedrock extra (anthropic[bedrock]) is not installed")

pytestmark = SDK_SSE_LEAK

SEED_MODEL = "anthropic.claude-3-5-sonnet-20241022-v2:0"
AWS = {
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_SESSION_TOKEN": "session-token-example",
    "AWS_REGION": "eu-west-1",
}


def message(text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": SEED_MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": 4},
    }


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value
    )


def event_stream(events: list[dict[str, Any]]) -> bytes:
    """Bedrock's ``invoke-with-response-stream`` body: AWS event-stream frames, each a
    ``chunk`` whose payload carries one Anthropic stream event, base64-encoded."""
    out = b""
    for event in events:
        payload = json.dumps({"bytes": base64.b64encode(json.dumps(event).encode()).decode()})
        headers = (
            _header(":event-type", "chunk")
            + _header(":content-type", "application/json")
            + _header(":message-type", "event")
        )
        body = payload.encode()
        total = 12 + len(headers) + len(body) + 4
        prelude = struct.pack(">II", total, len(headers))
        head = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
        out += head + struct.pack(">I", zlib.crc32(head))
    return out


async def test_bedrock_is_supported_through_the_anthropic_sdks_bedrock_client_with_aws_credentials() -> (
    None
):
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=message("Tokyo is 21."))

    transport = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    # the seed's createAdapter({ provider: "bedrock" }) with the standard AWS variables
    model = create_adapter(provider="bedrock", stream=False, env=AWS, http_client=transport)
    assert model.name == f"bedrock:{SEED_MODEL}"  # the seed's default Bedrock model
    glove = Glove(model=model, system_prompt="You are a helpful assistant.").build()
    result = await glove.process_request("What is the weather in Tokyo?")
    assert result.text == "Tokyo is 21." and result.usage.tokens_in == 12
    [request] = seen
    assert str(request.url) == (
        f"https://bedrock-runtime.eu-west-1.amazonaws.com/model/{SEED_MODEL}/invoke"
    )
    auth = request.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/") and auth.count(
        "/eu-west-1/bedrock/aws4_request"
    )  # SigV4 for bedrock in the region
    assert request.headers["x-amz-security-token"] == "session-token-example"
    body = json.loads(request.content)
    assert "anthropic_version" in body and "model" not in body  # the model is in the path
    assert body["messages"][-1]["content"][-1]["text"] == "What is the weather in Tokyo?"


async def test_bedrock_streams_its_event_stream_and_takes_a_bedrock_api_key() -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(
            200,
            headers={"content-type": "application/vnd.amazon.eventstream"},
            content=event_stream(anthropic_text("Hello there")),
        )

    transport = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    env = {"AWS_BEARER_TOKEN_BEDROCK": "bedrock-api-key", "AWS_DEFAULT_REGION": "us-east-1"}
    model = create_adapter(provider="bedrock", env=env, http_client=transport)
    recorder = Recorder()
    glove = Glove(model=model).add_subscriber(recorder).build()
    result = await glove.process_request("hi")
    assert result.text == "Hello there"
    assert [e.text for e in recorder.of("text_delta")] == ["Hel", "lo there"]
    assert seen[0].url.path == f"/model/{SEED_MODEL}/invoke-with-response-stream"
    assert seen[0].headers["authorization"] == "Bearer bedrock-api-key"


def test_bedrock_without_region_or_credentials_is_one_clear_config_error() -> None:
    with pytest.raises(ConfigError, match=r"needs a region in \$AWS_REGION"):
        create_adapter(provider="bedrock", env={"AWS_ACCESS_KEY_ID": "AKIA"})
    with pytest.raises(ConfigError, match="needs AWS credentials") as caught:
        create_adapter(provider="bedrock", env={"AWS_REGION": "eu-west-1"})
    assert "AKIA" not in str(caught.value)
    listed = {p["id"]: p["available"] for p in get_available_providers(AWS)}
    assert listed["bedrock"] is True


def test_the_anthropic_default_model_is_the_seeds() -> None:
    assert PROVIDERS["anthropic"].default_model == "claude-sonnet-4-20250514"
    model = create_adapter(provider="anthropic", env={"ANTHROPIC_API_KEY": "k"})
    assert model.name == "anthropic:claude-sonnet-4-20250514"
