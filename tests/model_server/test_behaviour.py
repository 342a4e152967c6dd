"""Conversation selection, side requests, stream faults and aborts, the request log, auth, routes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pydantic
import pytest
import trio

from orchestrator.model_server import ModelServer, Script, load_script, serve_model_server


def anthropic_client(
    server: ModelServer, key: str = "sk-ant-test-0000000000"
) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=server.url, api_key=key, http_client=httpx2.AsyncClient(), max_retries=0
    )


def openai_client(server: ModelServer, key: str = "sk-test-0000000000") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=server.base_url, api_key=key, http_client=httpx2.AsyncClient(), max_retries=0
    )


TOOLS = [{"type": "function", "function": {"name": "terminal", "parameters": {"type": "object"}}}]


async def test_session_headers_keep_apart_sessions_with_the_same_first_user_text() -> None:
    script = {
        "conversations": [
            {"name": "a", "turns": [{"text": "a1"}, {"text": "a2"}]},
            {"name": "b", "turns": [{"text": "b1"}, {"text": "b2"}]},
        ]
    }
    env = "<environment_context>cwd=/ws</environment_context>"  # Codex's boilerplate first text
    async with serve_model_server(script) as server, httpx2.AsyncClient() as http:

        async def ask(session: str, prompt: str) -> str:
            reply = await http.post(
                f"{server.base_url}/responses",
                headers={"session-id": session, "authorization": "Bearer sk-x"},
                json={
                    "model": "gpt-5.5",
                    "tools": [{"type": "function", "name": "exec_command"}],
                    "input": [
                        {"role": "developer", "content": "base prompt"},
                        {"role": "user", "content": [{"type": "input_text", "text": env}]},
                        {"role": "user", "content": [{"type": "input_text", "text": prompt}]},
                    ],
                },
            )
            return str(reply.json()["output"][0]["content"][0]["text"])

        assert await ask("thread-1", "one") == "a1"
        assert await ask("thread-2", "two") == "b1"
        assert await ask("thread-1", "one") == "a2"
        assert await ask("thread-2", "two") == "b2"
    assert [r.session for r in server.requests] == ["thread-1", "thread-2"] * 2
    assert server.requests[0].roles == ["developer", "user", "user"]
    assert server.requests[0].tools == ["exec_command"]


async def test_tool_less_side_requests_consume_no_turn() -> None:
    marker = "[[scenario:hermes]]"
    script = {
        "conversations": [
            {
                "name": "hermes",
                "marker": marker,
                "turns": [
                    {"text": "", "tool_calls": [{"name": "terminal", "input": {"command": "ls"}}]},
                    {"text": "done"},
                ],
            }
        ],
        "side_reply": "A Title",
    }
    async with serve_model_server(script) as server:
        client = openai_client(server)
        history: list[Any] = [
            {"role": "system", "content": "You are Hermes."},
            {"role": "user", "content": f"{marker} list the files"},
        ]
        first = await client.chat.completions.create(model="m", messages=history, tools=TOOLS)
        assert first.choices[0].finish_reason == "tool_calls"
        # Hermes' title call: no tools, no max_tokens, a temperature, the marker in its text
        title = await client.chat.completions.create(
            model="m",
            temperature=0.3,
            messages=[
                {"role": "system", "content": "Generate a short, descriptive title (3-7 words)"},
                {"role": "user", "content": f"User: {marker} list the files\n\nAssistant: "},
            ],
        )
        assert title.choices[0].message.content == "A Title"
        # an unknown auxiliary call in the same conversation: tool-less after tools were offered
        aux = await client.chat.completions.create(model="m", messages=history)
        assert aux.choices[0].message.content == "A Title"
        call = (first.choices[0].message.tool_calls or [])[0]
        history += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "a\nb"},
        ]
        second = await client.chat.completions.create(model="m", messages=history, tools=TOOLS)
        assert second.choices[0].message.content == "done"
        await client.close()
    assert [r.side for r in server.requests] == [False, True, True, False]
    assert [r.turn for r in server.requests] == [0, None, None, 1]
    # side requests are not part of the conversation's prefix-reuse figures
    assert len(server.prefix_reuse("hermes")) == 1


async def test_no_conversation_left_is_a_clear_error() -> None:
    script = {"conversations": [{"name": "only", "turns": [{"text": "hi"}]}]}
    async with serve_model_server(script) as server:
        client = anthropic_client(server)
        kwargs: dict[str, Any] = {"model": "m", "max_tokens": 4096}
        await client.messages.create(messages=[{"role": "user", "content": "one"}], **kwargs)
        with pytest.raises(anthropic.BadRequestError, match="no conversation left"):
            await client.messages.create(messages=[{"role": "user", "content": "two"}], **kwargs)
        await client.close()


async def test_responses_custom_tool_call_streams_like_codex_apply_patch() -> None:
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"
    script = {
        "conversations": [
            {
                "name": "patch",
                "turns": [
                    {
                        "reasoning": "A patch will do.",
                        "tool_calls": [{"name": "apply_patch", "kind": "custom", "input": patch}],
                        "chunk_chars": 7,
                    },
                    {"text": "Patched."},
                ],
            }
        ]
    }
    tools: Any = [{"type": "custom", "name": "apply_patch", "description": "edit files"}]
    async with serve_model_server(script) as server:
        client = openai_client(server)
        items: list[Any] = [
            {"role": "developer", "content": "rules"},
            {"role": "user", "content": "add hello.txt"},
        ]
        async with client.responses.stream(model="gpt-5.5", input=items, tools=tools) as s:
            kinds = [e.type async for e in s]
            first = await s.get_final_response()
        deltas = kinds.count("response.custom_tool_call_input.delta")
        assert deltas == -(-len(patch) // 7)
        assert "response.custom_tool_call_input.done" in kinds
        assert kinds[0] == "response.created"
        assert kinds[-1] == "response.completed"
        call = next(o for o in first.output if o.type == "custom_tool_call")
        assert call.name == "apply_patch"
        assert call.input == patch
        items += [
            call.model_dump(exclude_none=True),
            {"type": "custom_tool_call_output", "call_id": call.call_id, "output": "Success."},
        ]
        second = await client.responses.create(model="gpt-5.5", input=items, tools=tools)
        assert second.output_text == "Patched."
        await client.close()


async def test_openai_stream_faults_surface_as_the_sdk_reports_them() -> None:
    def turn(kind: str) -> dict[str, Any]:
        return {"text": "an answer long enough to cut", "fault": {"kind": kind, "after_chunks": 3}}

    script = {
        "conversations": [
            {"name": f"{api}-{kind}", "marker": f"[{api}-{kind}]", "turns": [turn(kind)]}
            for api in ("resp", "chat")
            for kind in ("cut", "stream_error")
        ]
    }
    async with serve_model_server(script) as server:
        client = openai_client(server)
        with pytest.raises(openai.APIConnectionError):
            async with client.responses.stream(model="m", input="[resp-cut]") as s:
                async for _ in s:
                    pass
        async with client.responses.stream(model="m", input="[resp-stream_error]") as s:
            events = [e async for e in s]
        failed = events[-1]
        assert failed.type == "response.failed"
        assert failed.response.error is not None
        assert "mid-stream" in failed.response.error.message
        assert failed.response.id == events[0].response.id  # type: ignore[union-attr]
        with pytest.raises(openai.APIConnectionError):
            async for _ in await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "[chat-cut]"}], stream=True
            ):
                pass
        with pytest.raises(openai.APIError, match="mid-stream"):
            async for _ in await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "[chat-stream_error]"}],
                stream=True,
            ):
                pass
        await client.close()
    assert [r.outcome for r in server.requests] == ["cut", "stream_error"] * 2


async def test_claude_style_non_streaming_retry_after_a_mid_stream_error_gets_the_turn() -> None:
    script = {
        "conversations": [
            {"name": "c", "turns": [{"text": "recovered", "fault": {"kind": "stream_error"}}]}
        ]
    }
    async with serve_model_server(script) as server:
        client = anthropic_client(server)
        kwargs: dict[str, Any] = {
            "model": "m",
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": "go"}],
        }
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            async with client.messages.stream(**kwargs) as s:
                async for _ in s:
                    pass
        message = await client.messages.create(**kwargs)  # stream: false
        assert message.content[0].type == "text"
        assert message.content[0].text == "recovered"
        await client.close()


async def test_a_slow_stream_records_the_client_going_away() -> None:
    script = {
        "conversations": [
            {
                "name": "slow",
                "turns": [{"text": "tick " * 200, "chunk_chars": 5, "chunk_delay_s": 0.02}],
            }
        ]
    }
    async with serve_model_server(script) as server:
        client = anthropic_client(server)
        with trio.fail_after(5):
            async with client.messages.stream(
                model="m", max_tokens=4096, messages=[{"role": "user", "content": "go"}]
            ) as s:
                async for text in s.text_stream:
                    assert text == "tick "
                    break  # the client aborts after the first delta
            await client.close()
            assert await server.settled(server.requests[0]) == "disconnected"


async def test_api_key_is_enforced_when_the_script_names_one() -> None:
    script = {
        "api_key": "sk-right",
        "conversations": [{"name": "c", "turns": [{"text": "in"}] * 2}],
    }
    async with serve_model_server(script) as server:
        wrong = anthropic_client(server, key="sk-wrong")
        with pytest.raises(anthropic.AuthenticationError):
            await wrong.messages.create(
                model="m", max_tokens=4096, messages=[{"role": "user", "content": "x"}]
            )
        await wrong.close()
        right = anthropic_client(server, key="sk-right")  # x-api-key
        await right.messages.create(
            model="m", max_tokens=4096, messages=[{"role": "user", "content": "x"}]
        )
        await right.close()
        bearer = openai_client(server, key="sk-right")  # Authorization: Bearer
        await bearer.responses.create(model="m", input="x")
        await bearer.close()
    assert [r.status for r in server.requests] == [401, 200, 200]


async def test_request_log_file_redacts_secrets_and_records_shape(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    script = {"conversations": [{"name": "c", "turns": [{"text": "one"}, {"text": "two"}]}]}
    secret = "sk-ant-very-secret-0000"
    async with serve_model_server(script, log_path=log) as server, httpx2.AsyncClient() as http:
        history: list[Any] = [{"role": "user", "content": "start"}]
        body: dict[str, Any] = {"model": "m", "max_tokens": 4096, "messages": history}
        headers = {
            "x-api-key": secret,
            "cookie": f"session={secret}",
            "x-auth-token": secret,
            "x-claude-code-session-id": "s-1",
            "user-agent": "claude-cli/2.1.330 (external, sdk-cli)",
        }
        url = f"{server.url}/v1/messages?beta=true"
        one = json.dumps(body).encode()
        first = await http.post(url, content=one, headers=headers)
        assert first.json()["content"][0]["text"] == "one"
        history += [{"role": "assistant", "content": "one"}, {"role": "user", "content": "more"}]
        two = json.dumps(body).encode()
        await http.post(url, content=two, headers=headers)
        raw = [
            (await http.post(f"{server.url}/v1/messages/count_tokens", json=body)).status_code,
            (await http.get(f"{server.base_url}/models/claude-x")).json()["id"],
            (await http.head(f"{server.url}/api/hello")).status_code,
        ]
        assert raw == [200, "claude-x", 200]
    text = log.read_text()
    assert secret not in text
    assert secret not in json.dumps([r.headers for r in server.requests])
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["api"] for line in lines] == [
        "anthropic",
        "anthropic",
        "count_tokens",
        "models",
        "hello",
    ]
    first_line = lines[0]
    assert first_line["path"] == "/v1/messages"
    assert first_line["headers"]["x-api-key"] == "[REDACTED]"
    assert first_line["headers"]["cookie"] == "[REDACTED]"
    assert first_line["headers"]["x-auth-token"] == "[REDACTED]"
    assert first_line["user_agent"].startswith("claude-cli/")
    assert first_line["session"] == "s-1"
    assert first_line["body_keys"] == ["max_tokens", "messages", "model"]
    assert first_line["roles"] == ["user"]
    assert first_line["outcome"] == "answered"
    assert lines[1]["roles"] == ["user", "assistant", "user"]
    # the exact prefix-reuse figure: the second body repeats the first up to its closing "]"
    shared = next(i for i, (x, y) in enumerate(zip(one, two, strict=False)) if x != y)
    assert server.prefix_reuse("c") == [shared]
    assert lines[1]["prefix_reuse_bytes"] == shared


async def test_unknown_routes_and_methods_answer_json_errors() -> None:
    async with serve_model_server({"conversations": []}) as server:
        client = anthropic_client(server)
        with pytest.raises(anthropic.NotFoundError):
            await client.beta.files.list()
        await client.close()
        async with httpx2.AsyncClient() as http:
            missing = await http.post(f"{server.base_url}/embeddings", json={})
            assert missing.status_code == 404
            assert missing.json()["error"]["code"] == "unknown_url"
            wrong = await http.get(f"{server.base_url}/responses")
            assert wrong.status_code == 405
            assert wrong.json()["error"]["type"] == "invalid_request_error"
            no_model = await http.post(f"{server.base_url}/chat/completions", json={"messages": []})
            assert no_model.status_code == 400
            assert no_model.json()["error"]["message"] == "you must provide a model parameter"


async def test_count_tokens_through_the_sdk() -> None:
    async with serve_model_server({"conversations": []}) as server:
        client = anthropic_client(server)
        counted = await client.messages.count_tokens(
            model="m", messages=[{"role": "user", "content": "x" * 400}]
        )
        assert counted.input_tokens > 100
        await client.close()


def test_script_validation_and_toml(tmp_path: Path) -> None:
    with pytest.raises(pydantic.ValidationError, match="custom tool call takes a string"):
        Script.model_validate(
            {
                "conversations": [
                    {"name": "c", "turns": [{"tool_calls": [{"name": "p", "kind": "custom"}]}]}
                ]
            }
        )
    with pytest.raises(pydantic.ValidationError, match="unique"):
        Script.model_validate(
            {"conversations": [{"name": "c", "turns": []}, {"name": "c", "turns": []}]}
        )
    with pytest.raises(pydantic.ValidationError):
        Script.model_validate({"conversations": [], "unknown": 1})
    path = tmp_path / "s.toml"
    path.write_text(
        'model = "m"\n'
        "[[conversations]]\n"
        'name = "t"\n'
        'marker = "[[t]]"\n'
        "[[conversations.turns]]\n"
        'text = "hi"\n'
        "[[conversations.turns.tool_calls]]\n"
        'name = "Bash"\n'
        'input = { command = "ls" }\n'
        "[conversations.turns.fault]\n"
        'kind = "rate_limit"\n'
        "times = 2\n"
    )
    script = load_script(path)
    turn = script.conversations[0].turns[0]
    assert turn.tool_calls[0].input == {"command": "ls"}
    assert turn.fault is not None
    assert turn.fault.times == 2


async def test_a_fault_sends_its_extra_headers_and_error_fields() -> None:
    """How a test makes a real CLI see a provider's own rate-limit signals (Codex's usage limit
    with its ``x-codex-primary-*`` window; Anthropic's ``anthropic-ratelimit-*`` headers)."""
    fault = {
        "kind": "rate_limit",
        "retry_after": 3,
        "error": {"type": "usage_limit_reached", "resets_at": 1795673691},
        "headers": {"x-codex-primary-reset-at": "1795673691"},
    }
    script = {"conversations": [{"name": "c", "turns": [{"text": "later", "fault": fault}]}]}
    async with serve_model_server(script) as server, httpx2.AsyncClient() as http:
        body = {"model": "m", "input": "hi"}
        first = await http.post(f"{server.base_url}/responses", json=body)
        assert first.status_code == 429
        assert first.headers["retry-after"] == "3"
        assert first.headers["x-codex-primary-reset-at"] == "1795673691"
        error = first.json()["error"]
        assert error["type"] == "usage_limit_reached" and error["resets_at"] == 1795673691
        assert error["code"] == "rate_limit_exceeded"  # the dialect's own fields stay
        second = await http.post(f"{server.base_url}/responses", json=body)
        assert second.status_code == 200
