"""Streamed frames always reassemble into the scripted turn, in every dialect (property tests)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.model_server import (
    ToolCallSpec,
    Turn,
    anthropic_api,
    openai_chat,
    openai_responses,
)
from orchestrator.model_server._sse import Ids

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
calls = st.builds(
    ToolCallSpec,
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True),
    input=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
)
custom_calls = st.builds(
    ToolCallSpec, name=st.just("apply_patch"), kind=st.just("custom"), input=st.text(max_size=200)
)
turns = st.builds(
    Turn,
    text=st.text(max_size=300),
    reasoning=st.text(max_size=100),
    tool_calls=st.lists(calls | custom_calls, max_size=3).map(tuple),
    chunk_chars=st.integers(min_value=1, max_value=40),
)


def events(frames: list[bytes]) -> list[tuple[str | None, Any]]:
    """(event name, decoded data) of each frame; every frame is one complete SSE event."""
    decoded: list[tuple[str | None, Any]] = []
    for frame in frames:
        text = frame.decode()
        assert text.endswith("\n\n")
        fields = dict(line.split(": ", 1) for line in text.strip("\n").split("\n"))
        data = fields["data"]
        decoded.append((fields.get("event"), data if data == "[DONE]" else json.loads(data)))
    return decoded


@settings(max_examples=40, deadline=None)
@given(turns)
def test_anthropic_stream_reassembles(turn: Turn) -> None:
    stream = events(anthropic_api.stream_frames(turn, "m", Ids()))
    assert all(name == data["type"] for name, data in stream)
    kinds = [data["type"] for _, data in stream]
    assert kinds[:2] == ["message_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    text, thinking, arguments = "", "", dict[int, str]()
    for _, data in stream:
        delta = data.get("delta", {})
        match delta.get("type"):
            case "text_delta":
                text += delta["text"]
            case "thinking_delta":
                thinking += delta["thinking"]
            case "input_json_delta":
                arguments[data["index"]] = arguments.get(data["index"], "") + delta["partial_json"]
            case _:
                pass
    assert text == turn.text
    assert thinking == turn.reasoning
    assert [json.loads(a) for a in arguments.values()] == [
        c.input_object() for c in turn.tool_calls
    ]
    stop = stream[-2][1]["delta"]["stop_reason"]
    assert stop == ("tool_use" if turn.tool_calls else "end_turn")
    message = anthropic_api.message_json(turn, "m", Ids())
    assert [b["type"] for b in message["content"]] == [
        data["content_block"]["type"] for _, data in stream if data["type"] == "content_block_start"
    ]


@settings(max_examples=40, deadline=None)
@given(turns)
def test_responses_stream_reassembles(turn: Turn) -> None:
    stream = events(openai_responses.stream_frames(turn, "m", Ids()))
    assert [data["sequence_number"] for _, data in stream] == list(range(len(stream)))
    assert all(name == data["type"] for name, data in stream)
    assert stream[0][1]["type"] == "response.created"
    done = stream[-1][1]
    assert done["type"] == "response.completed"
    assert done["response"]["id"] == stream[0][1]["response"]["id"]
    text, reasoning, arguments = "", "", dict[int, str]()
    for _, data in stream:
        match data["type"]:
            case "response.output_text.delta":
                text += data["delta"]
            case "response.reasoning_summary_text.delta":
                reasoning += data["delta"]
            case "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta":
                index = data["output_index"]
                arguments[index] = arguments.get(index, "") + data["delta"]
            case _:
                pass
    assert text == turn.text
    assert reasoning == turn.reasoning
    calls = [c for c in turn.tool_calls if c.arguments()]  # an empty custom input has no deltas
    assert list(arguments.values()) == [c.arguments() for c in calls]
    output = done["response"]["output"]
    assert [o["type"] for o in output if o["type"].endswith("call")] == [
        "custom_tool_call" if c.kind == "custom" else "function_call" for c in turn.tool_calls
    ]


@settings(max_examples=40, deadline=None)
@given(turns, st.booleans())
def test_chat_stream_reassembles(turn: Turn, include_usage: bool) -> None:
    stream = events(openai_chat.stream_frames(turn, "m", Ids(), include_usage=include_usage))
    assert stream[-1][1] == "[DONE]"
    chunks = [data for _, data in stream[:-1]]
    assert (chunks[-1].get("usage") is not None) == include_usage
    text, reasoning, arguments = "", "", dict[int, str]()
    for chunk in chunks:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            text += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or ""
            for call in delta.get("tool_calls", []):
                index = call["index"]
                arguments[index] = arguments.get(index, "") + call["function"]["arguments"]
    assert text == turn.text
    assert reasoning == turn.reasoning
    assert [json.loads(a) for a in arguments.values()] == [
        c.input_object() for c in turn.tool_calls
    ]
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == ("tool_calls" if turn.tool_calls else "stop")


@given(st.text(max_size=500), st.integers(min_value=1, max_value=64))
def test_chunks_cover_the_text_in_order(text: str, size: int) -> None:
    pieces = Turn(chunk_chars=size).chunks(text)
    assert "".join(pieces) == text
    assert all(0 < len(p) <= size for p in pieces)
    assert len(pieces) == -(-len(text) // size)
