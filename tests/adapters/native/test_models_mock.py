"""Model adapters through the real SDKs, with ``httpx2.MockTransport`` as the fake model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest
import trio
import trio.testing
from pydantic import BaseModel

from adapters.native.cancel import CancelToken
from adapters.native.glove import Glove
from adapters.native.messages import Message, ToolCall, ToolResult, ToolResultData
from adapters.native.models.anthropic import AnthropicModel, format_anthropic_messages
from adapters.native.models.base import ModelAdapter, ModelError
from adapters.native.models.openai_chat import OpenAIChatModel, format_chat_messages
from adapters.native.models.openai_responses import OpenAIResponsesModel
from adapters.native.models.providers import create_adapter, get_available_providers
from adapters.native.tools import ToolContext
from orchestrator.core.errors import ConfigError
from tiers import PromptTiers, assemble_tiers

from .conftest import Recorder

SECRET = "sk-ant-api03-SECRETSECRETSECRET"

# openai 3.54's AsyncStream breaks out of its SSE generator on "[DONE]" without closing it; under
# trio the abandoned generator is finalized with a ResourceWarning. Not ours to fix; ignored here.
SDK_SSE_LEAK = [
    pytest.mark.filterwarnings("ignore:Async generator 'openai._streaming:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2._models:ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]
pytestmark = SDK_SSE_LEAK

Handler = Callable[[httpx2.Request], Any]


def client(handler: Handler) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


def sse(events: list[dict[str, Any]], *, named: bool = True, done: bool = False) -> bytes:
    out: list[str] = []
    for e in events:
        if named:
            out.append(f"event: {e['type']}\n")
        out.append(f"data: {json.dumps(e)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def sse_response(body: bytes) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


class CityInput(BaseModel):
    city: str


async def weather(inp: CityInput, ctx: ToolContext) -> dict[str, Any]:
    return {"city": inp.city, "temp": 21}


def glove_for(model: ModelAdapter, rec: Recorder | None = None, **kw: Any) -> Glove:
    glove = Glove(model=model, system_prompt=kw.pop("system_prompt", "Be brief."), **kw)
    glove.fold("get_weather", "Weather for a city.", CityInput, weather, parallel_safe=True)
    if rec is not None:
        glove.add_subscriber(rec)
    return glove.build()


# -- Anthropic ----------------------------------------------------------------------------------


def anthropic_text(text: str, *, stop: str = "end_turn") -> list[dict[str, Any]]:
    return [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 90},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text[:3]},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text[3:]},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    ]


def anthropic_tools(*calls: tuple[str, str, str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [anthropic_text("x")[0]]
    for i, (cid, name, args) in enumerate(calls):
        events += [
            {
                "type": "content_block_start",
                "index": i,
                "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": i,
                "delta": {"type": "input_json_delta", "partial_json": args[:4]},
            },
            {
                "type": "content_block_delta",
                "index": i,
                "delta": {"type": "input_json_delta", "partial_json": args[4:]},
            },
            {"type": "content_block_stop", "index": i},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    return events


async def test_anthropic_streams_text_tools_and_caching_markers() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if len(bodies) == 1:
            return sse_response(
                sse(
                    anthropic_tools(
                        ("toolu_1", "get_weather", '{"city": "Tokyo"}'),
                        ("toolu_2", "get_weather", '{"city": "Osaka"}'),
                    )
                )
            )
        return sse_response(sse(anthropic_text("Both are 21.")))

    rec = Recorder()
    model = AnthropicModel("claude-test", api_key=SECRET, http_client=client(handler))
    tiers = assemble_tiers(PromptTiers(stable="You are ringleader.", context="Repo: x"))
    glove = glove_for(model, rec, system_prompt=tiers)
    result = await glove.process_request("weather?")
    assert result.text == "Both are 21."
    assert result.usage.tokens_in == 200  # input + cache reads, both calls
    assert result.usage.cache_read_input_tokens == 180
    assert [e.text for e in rec.of("text_delta")] == ["Bot", "h are 21."]
    assert [(e.id, e.input) for e in rec.of("tool_use")] == [
        ("toolu_1", {"city": "Tokyo"}),
        ("toolu_2", {"city": "Osaka"}),
    ]
    first, second = bodies
    assert [b["text"] for b in first["system"]] == ["You are ringleader.", "\n\nRepo: x"]
    assert all(b["cache_control"] == {"type": "ephemeral"} for b in first["system"])
    assert first["tools"][0]["name"] == "get_weather"
    assert first["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    results = second["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2"]
    assert json.loads(results[0]["content"]) == {"city": "Tokyo", "temp": 21}


async def test_anthropic_non_streaming_still_emits_deltas_and_tool_uses() -> None:
    calls = 0

    def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal calls
        calls += 1
        content: list[dict[str, Any]] = (
            [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Rome"}}]
            if calls == 1
            else [{"type": "text", "text": "Rome is 21."}]
        )
        return httpx2.Response(
            200,
            json={
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": content,
                "stop_reason": "tool_use" if calls == 1 else "end_turn",
                "usage": {"input_tokens": 5, "output_tokens": 3},
            },
        )

    rec = Recorder()
    model = AnthropicModel("claude-test", api_key=SECRET, stream=False, http_client=client(handler))
    result = await glove_for(model, rec).process_request("rome?")
    assert result.text == "Rome is 21."
    assert [e.name for e in rec.of("tool_use")] == ["get_weather"]
    assert [e.text for e in rec.of("text_delta")] == ["Rome is 21."]
    assert "model_response" in rec.types()


async def test_rate_limit_is_retried_after_retry_after(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hits: list[float] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        hits.append(trio.current_time())
        if len(hits) == 1:
            return httpx2.Response(
                429,
                headers={"retry-after": "3"},
                json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
            )
        return sse_response(sse(anthropic_text("ok now")))

    rec = Recorder()
    model = AnthropicModel("claude-test", api_key=SECRET, http_client=client(handler))
    result = await glove_for(model, rec).process_request("hi")
    assert result.text == "ok now"
    assert hits[1] - hits[0] == pytest.approx(3.0)
    assert rec.of("retry")[0].delay_s == 3.0


async def test_auth_error_is_typed_and_never_shows_the_key() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        assert SECRET in request.headers.get("authorization", request.headers.get("x-api-key", ""))
        return httpx2.Response(
            401, json={"type": "error", "error": {"message": f"invalid x-api-key {SECRET}"}}
        )

    model = AnthropicModel("claude-test", api_key=SECRET, http_client=client(handler))
    with pytest.raises(ModelError) as info:
        await glove_for(model).process_request("hi")
    assert info.value.code == "auth" and info.value.status == 401
    assert SECRET not in str(info.value) and SECRET not in repr(info.value.args)
    assert SECRET not in repr(model)


async def test_cancel_mid_stream_ends_aborted() -> None:
    started = trio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        events = anthropic_text("Hello there")
        yield sse(events[:3])
        started.set()
        await trio.sleep_forever()
        yield sse(events[3:])  # pragma: no cover

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=slow_body()
        )

    rec = Recorder()
    model = AnthropicModel("claude-test", api_key=SECRET, http_client=client(handler))
    glove = glove_for(model, rec)
    token = CancelToken()
    results: list[Any] = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            results.append(await glove.run_request("hi", token))

        nursery.start_soon(run)
        await started.wait()
        await trio.testing.wait_all_tasks_blocked()
        token.cancel()
    assert results[0].stop == "aborted"
    assert [e.text for e in rec.of("text_delta")] == ["Hel"]
    assert [m.sender for m in await glove.store.get_messages()] == ["user"]


def test_anthropic_formatting_repairs_merges_and_strips_render_data() -> None:
    history = [
        Message(sender="user", text="go"),
        Message(
            sender="agent",
            text="calling",
            tool_calls=(
                ToolCall(tool_name="t", input_args={"a": 1}, id="c1"),
                ToolCall(tool_name="t", input_args={"a": 2}, id="c2"),
            ),
        ),
        Message(
            sender="user",
            text="tool results",
            tool_results=(
                ToolResult(
                    tool_name="t",
                    call_id="c1",
                    result=ToolResultData(
                        status="error", message="bad", render_data={"secret": "ui-only"}
                    ),
                ),
            ),
        ),
        Message(sender="user", text="steer", is_steer=True),
    ]
    out = format_anthropic_messages(history)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    blocks = out[2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert blocks[0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": "Error: bad",
        "is_error": True,
    }
    assert blocks[1]["content"] == "Error: No result available"  # the orphan is patched
    assert "ui-only" not in json.dumps(out)


# -- OpenAI Chat Completions -------------------------------------------------------------------


def chat_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def chat_usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


async def test_chat_streams_parallel_tool_calls_assembled_by_index() -> None:
    bodies: list[dict[str, Any]] = []

    def tc(index: int, **kw: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **kw}]}

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        if len(bodies) == 1:
            chunks = [
                chat_chunk({"role": "assistant", "content": "Checking. "}),
                chat_chunk(
                    tc(
                        0,
                        id="a",
                        type="function",
                        function={"name": "get_weather", "arguments": '{"ci'},
                    )
                ),
                chat_chunk(
                    tc(
                        1,
                        id="b",
                        type="function",
                        function={"name": "get_weather", "arguments": '{"city"'},
                    )
                ),
                chat_chunk(tc(0, function={"arguments": 'ty": "Oslo"}'})),
                chat_chunk(tc(1, function={"arguments": ': "Bergen"}'})),
                chat_chunk({}, "tool_calls"),
                chat_usage(40, 12, cached=32),
            ]
        else:
            chunks = [chat_chunk({"content": "Cold."}), chat_chunk({}, "stop"), chat_usage(60, 2)]
        return sse_response(sse(chunks, named=False, done=True))

    rec = Recorder()
    model = OpenAIChatModel("gpt-test", api_key="sk-test-123456789", http_client=client(handler))
    result = await glove_for(model, rec).process_request("weather?")
    assert result.text == "Cold."
    assert result.usage.tokens_in == 100 and result.usage.cache_read_input_tokens == 32
    assert [(e.id, e.input) for e in rec.of("tool_use")] == [
        ("a", {"city": "Oslo"}),
        ("b", {"city": "Bergen"}),
    ]
    first, second = bodies
    assert first["stream_options"] == {"include_usage": True}
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert first["tools"][0]["function"]["name"] == "get_weather"
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["a", "b"]
    assistant = second["messages"][2]
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"city": "Oslo"}'


async def test_chat_malformed_arguments_become_a_correctable_error() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        if len(seen) == 1:
            return httpx2.Response(
                200,
                json={
                    "id": "c",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "gpt-test",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls",
                            "message": {
                                "role": "assistant",
                                "content": None,
                                "tool_calls": [
                                    {
                                        "id": "x",
                                        "type": "function",
                                        "function": {"name": "get_weather", "arguments": "{city:"},
                                    }
                                ],
                            },
                        }
                    ],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                },
            )
        return httpx2.Response(
            200,
            json={
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-test",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "sorry"},
                    }
                ],
            },
        )

    model = OpenAIChatModel("gpt-test", api_key="k", stream=False, http_client=client(handler))
    result = await glove_for(model).process_request("go")
    assert result.text == "sorry"
    tool_msg = seen[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and "not valid JSON" in tool_msg["content"]


def test_chat_formatting_merges_multimodal_users_without_object_object() -> None:
    from adapters.native.messages import ContentPart, ContentSource

    img = ContentPart(
        type="image", source=ContentSource(type="base64", media_type="image/png", data="AAA")
    )
    out = format_chat_messages(
        [
            Message(
                sender="user", text="look", content=(ContentPart(type="text", text="look"), img)
            ),
            Message(sender="user", text="and this"),
        ]
    )
    assert out == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
                {"type": "text", "text": "and this"},
            ],
        }
    ]


# -- OpenAI Responses --------------------------------------------------------------------------


def responses_events(text: str, calls: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    seq = 0
    for piece in (text[:2], text[2:]) if text else ():
        seq += 1
        events.append(
            {
                "type": "response.output_text.delta",
                "item_id": "m1",
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
                "sequence_number": seq,
            }
        )
    for i, (cid, name, args) in enumerate(calls):
        seq += 1
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": i + 1,
                "sequence_number": seq,
                "item": {
                    "type": "function_call",
                    "id": f"fc_{i}",
                    "call_id": cid,
                    "name": name,
                    "arguments": args,
                    "status": "completed",
                },
            }
        )
    events.append(
        {
            "type": "response.completed",
            "sequence_number": seq + 1,
            "response": {
                "id": "r",
                "object": "response",
                "created_at": 1,
                "model": "gpt-resp",
                "status": "completed",
                "output": [],
                "usage": {
                    "input_tokens": 20,
                    "output_tokens": 4,
                    "total_tokens": 24,
                    "input_tokens_details": {"cached_tokens": 16},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            },
        }
    )
    return events


async def test_responses_streams_text_and_function_calls() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        if len(bodies) == 1:
            return sse_response(
                sse(responses_events("On it", [("call_1", "get_weather", '{"city": "Lima"}')]))
            )
        return sse_response(sse(responses_events("Lima is 21.", [])))

    rec = Recorder()
    model = OpenAIResponsesModel(
        "gpt-resp", api_key="sk-test-123456789", http_client=client(handler)
    )
    result = await glove_for(model, rec).process_request("lima?")
    assert result.text == "Lima is 21."
    assert result.usage.tokens_in == 40 and result.usage.cache_read_input_tokens == 32
    assert [e.input for e in rec.of("tool_use")] == [{"city": "Lima"}]
    first, second = bodies
    assert first["instructions"] == "Be brief." and first["store"] is False
    assert first["tools"][0] == {
        "type": "function",
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": CityInput.model_json_schema(),
    }
    kinds = [item.get("type") for item in second["input"]]
    assert kinds == ["message", "message", "function_call", "function_call_output"]
    assert second["input"][-1]["call_id"] == "call_1"


async def test_responses_non_streaming() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200,
            json={
                "id": "r",
                "object": "response",
                "created_at": 1,
                "model": "gpt-resp",
                "status": "completed",
                "output": [
                    {
                        "type": "message",
                        "id": "m",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "Hi!", "annotations": []}],
                    }
                ],
                "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4},
            },
        )

    rec = Recorder()
    model = OpenAIResponsesModel("gpt-resp", api_key="k", stream=False, http_client=client(handler))
    result = await glove_for(model, rec).process_request("hi")
    assert result.text == "Hi!" and result.usage.tokens_in == 3
    assert [e.text for e in rec.of("text_delta")] == ["Hi!"]


async def test_server_error_is_retried_then_surfaced(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hits = 0

    def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal hits
        hits += 1
        return httpx2.Response(503, json={"error": {"message": "overloaded"}})

    model = OpenAIResponsesModel("gpt-resp", api_key="k", http_client=client(handler))
    with pytest.raises(ModelError) as info:
        await glove_for(model).process_request("hi")
    assert info.value.code == "overloaded"
    assert hits == 3  # one call plus two retries


# -- provider table ----------------------------------------------------------------------------


def test_create_adapter_provider_table() -> None:
    env = {"ANTHROPIC_API_KEY": SECRET, "OPENROUTER_API_KEY": "or-key"}
    anth = create_adapter(provider="anthropic", env=env)
    assert isinstance(anth, AnthropicModel) and anth.name == "anthropic:claude-sonnet-4-20250514"
    router = create_adapter(provider="openrouter", model="x/y", env=env)
    assert isinstance(router, OpenAIChatModel) and router.name == "openrouter:x/y"
    local = create_adapter(provider="ollama", model="llama3", env={})
    assert local.model == "llama3"
    openai = create_adapter(provider="openai", api_key="k", env={})
    assert isinstance(openai, OpenAIResponsesModel)
    chat = create_adapter(provider="openai", api_key="k", api="chat", env={})
    assert isinstance(chat, OpenAIChatModel)
    with pytest.raises(ConfigError, match="unknown provider"):
        create_adapter(provider="nope")
    with pytest.raises(ConfigError, match=r"\$GEMINI_API_KEY") as info:
        create_adapter(provider="gemini", env={})
    assert SECRET not in str(info.value)
    with pytest.raises(ConfigError, match="default model"):
        create_adapter(provider="lmstudio", env={})
    available = {p["id"]: p["available"] for p in get_available_providers(env)}
    assert available["anthropic"] and available["ollama"] and not available["openai"]


async def test_base_url_override_from_environment() -> None:
    urls: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        urls.append(str(request.url))
        return sse_response(sse(anthropic_text("hi there")))

    model = create_adapter(
        provider="anthropic",
        env={"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/x"},
        http_client=client(handler),
    )
    await glove_for(model).process_request("hi")
    assert urls == ["http://127.0.0.1:9/x/v1/messages"]
