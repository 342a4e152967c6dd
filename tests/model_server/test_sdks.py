"""The official anthropic and openai SDKs (through httpx2) against the scripted model server."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from orchestrator.model_server import ModelServer, serve_model_server

TOOLS_MARKER = "[[scenario:tools]]"

SCRIPT: dict[str, Any] = {
    "conversations": [
        {
            "name": "tools",
            "marker": TOOLS_MARKER,
            "turns": [
                {
                    "reasoning": "I should list the files.",
                    "text": "Let me look.",
                    "tool_calls": [{"name": "Bash", "input": {"command": "ls -la"}}],
                    "usage": {"input_tokens": 120, "output_tokens": 20},
                },
                {
                    "text": "There are two files.",
                    "usage": {"input_tokens": 160, "output_tokens": 8},
                },
            ],
        },
        {"name": "text", "turns": [{"text": "Hello from the scripted model!", "chunk_chars": 4}]},
    ]
}

TOOL_DEF_ANTHROPIC = [
    {
        "name": "Bash",
        "description": "run",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]
TOOL_DEF_OPENAI_RESP = [
    {
        "type": "function",
        "name": "Bash",
        "description": "run",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]
TOOL_DEF_OPENAI_CHAT = [
    {
        "type": "function",
        "function": {
            "name": "Bash",
            "description": "run",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


def anthropic_client(server: ModelServer) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=server.url,
        api_key="sk-ant-test-0000000000",
        http_client=httpx2.AsyncClient(),
        max_retries=0,
    )


def openai_client(server: ModelServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=server.base_url,
        api_key="sk-test-0000000000",
        http_client=httpx2.AsyncClient(),
        max_retries=0,
    )


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_anthropic_text_and_tool_turns(stream: bool) -> None:
    async with serve_model_server(SCRIPT) as server:
        client = anthropic_client(server)
        if stream:
            async with client.messages.stream(
                model="claude-x", max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
            ) as s:
                deltas = [text async for text in s.text_stream]
                message = await s.get_final_message()
            assert len(deltas) > 1
        else:
            message = await client.messages.create(
                model="claude-x", max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
            )
        assert message.content[0].type == "text"
        assert message.content[0].text == "Hello from the scripted model!"
        assert message.stop_reason == "end_turn"

        history: list[Any] = [{"role": "user", "content": f"{TOOLS_MARKER} list files"}]
        kwargs: dict[str, Any] = {
            "model": "claude-x",
            "max_tokens": 2048,
            "tools": TOOL_DEF_ANTHROPIC,
        }
        if stream:
            async with client.messages.stream(messages=history, **kwargs) as s:
                first = await s.get_final_message()
        else:
            first = await client.messages.create(messages=history, **kwargs)
        assert first.stop_reason == "tool_use"
        kinds = [b.type for b in first.content]
        assert kinds == ["thinking", "text", "tool_use"]
        tool = first.content[2]
        assert tool.type == "tool_use"
        assert tool.name == "Bash"
        assert tool.input == {"command": "ls -la"}
        assert first.usage.input_tokens == 120
        history += [
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "a\nb"}],
            },
        ]
        second = await client.messages.create(messages=history, **kwargs)
        assert second.content[0].type == "text"
        assert second.content[0].text == "There are two files."
        await client.close()
    # secrets never reach the log
    assert all("sk-ant-test" not in json.dumps(r.headers) for r in server.requests)
    credential = (
        server.requests[0].headers.get("x-api-key") or server.requests[0].headers["authorization"]
    )
    assert credential == "[REDACTED]"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_openai_responses_text_and_tool_turns(stream: bool) -> None:
    async with serve_model_server(SCRIPT) as server:
        client = openai_client(server)
        if stream:
            async with client.responses.stream(model="gpt-x", input="hi") as s:
                deltas = [e.delta async for e in s if e.type == "response.output_text.delta"]
                response = await s.get_final_response()
            assert "".join(deltas) == "Hello from the scripted model!"
        else:
            response = await client.responses.create(model="gpt-x", input="hi")
        assert response.output_text == "Hello from the scripted model!"

        items: list[Any] = [{"role": "user", "content": f"{TOOLS_MARKER} list files"}]
        if stream:
            async with client.responses.stream(
                model="gpt-x", input=items, tools=TOOL_DEF_OPENAI_RESP
            ) as s:
                first = await s.get_final_response()
        else:
            first = await client.responses.create(
                model="gpt-x", input=items, tools=TOOL_DEF_OPENAI_RESP
            )
        calls = [o for o in first.output if o.type == "function_call"]
        assert [c.name for c in calls] == ["Bash"]
        assert json.loads(calls[0].arguments) == {"command": "ls -la"}
        assert any(o.type == "reasoning" for o in first.output)
        assert first.usage is not None
        assert first.usage.input_tokens == 120
        items += [c.model_dump() for c in calls] + [
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "a\nb"}
        ]
        second = await client.responses.create(
            model="gpt-x", input=items, tools=TOOL_DEF_OPENAI_RESP
        )
        assert second.output_text == "There are two files."
        await client.close()
    assert server.requests[0].headers["authorization"] == "[REDACTED]"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_openai_chat_text_and_tool_turns(stream: bool) -> None:
    async with serve_model_server(SCRIPT) as server:
        client = openai_client(server)
        messages: list[Any] = [{"role": "user", "content": "hi"}]
        if stream:
            chunks = [
                c
                async for c in await client.chat.completions.create(
                    model="gpt-x",
                    messages=messages,
                    stream=True,
                    stream_options={"include_usage": True},
                )
            ]
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert chunks[-1].usage is not None
        else:
            completion = await client.chat.completions.create(model="gpt-x", messages=messages)
            text = completion.choices[0].message.content or ""
        assert text == "Hello from the scripted model!"

        messages = [{"role": "user", "content": f"{TOOLS_MARKER} list files"}]
        if stream:
            chunks = [
                c
                async for c in await client.chat.completions.create(
                    model="gpt-x", messages=messages, tools=TOOL_DEF_OPENAI_CHAT, stream=True
                )
            ]
            deltas = [
                tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])
            ]
            name = next(d.function.name for d in deltas if d.function and d.function.name)
            arguments = "".join(d.function.arguments or "" for d in deltas if d.function)
            call_id = next(d.id for d in deltas if d.id)
            assert chunks[-1].choices[0].finish_reason == "tool_calls"
        else:
            completion = await client.chat.completions.create(
                model="gpt-x", messages=messages, tools=TOOL_DEF_OPENAI_CHAT
            )
            call = (completion.choices[0].message.tool_calls or [])[0]
            assert call.type == "function"
            name, arguments, call_id = call.function.name, call.function.arguments, call.id
        assert name == "Bash"
        assert json.loads(arguments) == {"command": "ls -la"}
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "a\nb"},
        ]
        second = await client.chat.completions.create(
            model="gpt-x", messages=messages, tools=TOOL_DEF_OPENAI_CHAT
        )
        assert second.choices[0].message.content == "There are two files."
        await client.close()


def fault_script(kind: str, **extra: Any) -> dict[str, Any]:
    return {
        "conversations": [
            {"name": "f", "turns": [{"text": "recovered", "fault": {"kind": kind, **extra}}]}
        ]
    }


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("rate_limit", anthropic.RateLimitError),
        ("server_error", anthropic.InternalServerError),
        ("overloaded", anthropic.OverloadedError),
        ("bad_request", anthropic.BadRequestError),
        ("authentication", anthropic.AuthenticationError),
    ],
)
async def test_anthropic_faults_raise_the_typed_errors_then_recover(
    kind: str, error: type[Exception]
) -> None:
    async with serve_model_server(fault_script(kind, retry_after=7)) as server:
        client = anthropic_client(server)
        with pytest.raises(error) as caught:
            await client.messages.create(
                model="m", max_tokens=1024, messages=[{"role": "user", "content": "x"}]
            )
        status = {
            "rate_limit": 429,
            "server_error": 500,
            "overloaded": 529,
            "bad_request": 400,
            "authentication": 401,
        }[kind]
        assert getattr(caught.value, "status_code", None) == status
        if kind == "rate_limit":
            assert caught.value.response.headers["retry-after"] == "7"  # type: ignore[attr-defined]
        ok = await client.messages.create(
            model="m", max_tokens=1024, messages=[{"role": "user", "content": "x"}]
        )
        assert ok.content[0].type == "text"
        await client.close()


@pytest.mark.parametrize(
    ("kind", "error", "status"),
    [
        ("rate_limit", openai.RateLimitError, 429),
        ("server_error", openai.InternalServerError, 500),
        ("overloaded", openai.InternalServerError, 503),
        ("bad_request", openai.BadRequestError, 400),
        ("authentication", openai.AuthenticationError, 401),
    ],
)
async def test_openai_faults_raise_the_typed_errors(
    kind: str, error: type[Exception], status: int
) -> None:
    async with serve_model_server(fault_script(kind, times=2)) as server:
        client = openai_client(server)
        with pytest.raises(error) as caught:
            await client.responses.create(model="m", input="x")
        assert getattr(caught.value, "status_code", None) == status
        with pytest.raises(error):  # the same fault on Chat Completions (its second time)
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        ok = await client.responses.create(model="m", input="x")  # N failures, then success
        assert ok.output_text == "recovered"
        await client.close()
    assert [r.status for r in server.requests] == [status, status, 200]
    if kind == "overloaded":
        assert server.requests[0].api == "responses"


async def test_anthropic_stream_cut_and_in_stream_error() -> None:
    script = {
        "conversations": [
            {
                "name": "cut",
                "marker": "[cut]",
                "turns": [
                    {
                        "text": "a long answer that is cut",
                        "fault": {"kind": "cut", "after_chunks": 4},
                    }
                ],
            },
            {
                "name": "err",
                "marker": "[err]",
                "turns": [
                    {
                        "text": "an answer that errs",
                        "fault": {"kind": "stream_error", "after_chunks": 4},
                    }
                ],
            },
        ]
    }
    async with serve_model_server(script) as server:
        client = anthropic_client(server)
        # the SDK surfaces a connection dropped mid-stream as the transport's own error
        with pytest.raises((anthropic.APIConnectionError, httpx2.RemoteProtocolError)):
            async with client.messages.stream(
                model="m", max_tokens=2048, messages=[{"role": "user", "content": "[cut]"}]
            ) as s:
                async for _ in s:
                    pass
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            async with client.messages.stream(
                model="m", max_tokens=2048, messages=[{"role": "user", "content": "[err]"}]
            ) as s:
                async for _ in s:
                    pass
        await client.close()


async def test_script_exhaustion_is_a_clear_error_and_malformed_requests_are_rejected() -> None:
    async with serve_model_server(
        {"conversations": [{"name": "once", "turns": [{"text": "only once"}]}]}
    ) as server:
        client = anthropic_client(server)
        await client.messages.create(
            model="m", max_tokens=1024, messages=[{"role": "user", "content": "x"}]
        )
        with pytest.raises(anthropic.BadRequestError, match="no turn 2"):
            await client.messages.create(
                model="m", max_tokens=1024, messages=[{"role": "user", "content": "x"}]
            )
        async with httpx2.AsyncClient() as http:
            bad = await http.post(f"{server.url}/v1/messages", json={"model": "m", "messages": []})
            assert bad.status_code == 400
            assert bad.json()["error"]["message"] == "max_tokens: Field required"
            garbage = await http.post(f"{server.url}/v1/messages", content=b"{not json")
            assert garbage.status_code == 400
            models = await http.get(f"{server.base_url}/models")
            assert models.json()["data"][0]["id"] == "scripted-model"
        await client.close()


async def test_tolerates_system_role_developer_messages_big_prompts_and_unknown_keys() -> None:
    script = {"conversations": [{"name": "c", "turns": [{"text": "fine"}, {"text": "fine again"}]}]}
    async with serve_model_server(script) as server:
        big = "x" * 50_000
        async with httpx2.AsyncClient() as http:
            r1 = await http.post(
                f"{server.url}/v1/messages?beta=true",
                headers={"authorization": "Bearer tok-1234567890"},
                json={
                    "model": "m",
                    "max_tokens": 4096,
                    "tools": [{"name": "t"}],
                    "unknown_key": 1,
                    "messages": [
                        {"role": "system", "content": "resumed"},
                        {"role": "user", "content": big},
                    ],
                },
            )
            assert r1.status_code == 200
            r2 = await http.post(
                f"{server.base_url}/responses",
                json={
                    "model": "m",
                    "tools": [{"type": "function", "name": "t"}],
                    "input": [
                        {"role": "developer", "content": "rules"},
                        {"role": "user", "content": big},
                    ],
                },
            )
            assert r2.status_code == 200
            assert r2.json()["output"][0]["content"][0]["text"] == "fine again"
    assert server.requests[0].headers["authorization"] == "[REDACTED]"
    assert server.requests[0].body_bytes > 50_000


async def test_prefix_reuse_and_side_requests() -> None:
    script = {"conversations": [{"name": "c", "turns": [{"text": "one"}, {"text": "two"}]}]}
    async with serve_model_server(script) as server:
        client = anthropic_client(server)
        history: list[Any] = [{"role": "user", "content": "start"}]
        tools = TOOL_DEF_ANTHROPIC
        first = await client.messages.create(
            model="m", max_tokens=4096, tools=tools, messages=history
        )
        title = await client.messages.create(
            model="m", max_tokens=64, messages=[{"role": "user", "content": "title please"}]
        )
        assert title.content[0].type == "text"
        assert title.content[0].text == "Scripted session"  # a side request consumes no turn
        history += [{"role": "assistant", "content": "one"}, {"role": "user", "content": "more"}]
        second = await client.messages.create(
            model="m", max_tokens=4096, tools=tools, messages=history
        )
        assert first.content[0].type == "text"
        assert second.content[0].type == "text"
        assert second.content[0].text == "two"
        await client.close()
    reuse = server.prefix_reuse("c")
    assert len(reuse) == 1
    assert 0 < reuse[0] < server.requests[-1].body_bytes
