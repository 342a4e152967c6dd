"""OpenAI Chat Completions dialect: ``POST /v1/chat/completions``, streamed and not."""

from __future__ import annotations

import json
import time
from typing import Any

from orchestrator.model_server._sse import Ids, as_dict, sse, user_texts
from orchestrator.model_server.script import Turn
from orchestrator.model_server.state import ParsedRequest

__all__ = ["completion_json", "parse", "stream_error", "stream_frames", "validate"]


def parse(body: dict[str, Any]) -> ParsedRequest:
    texts = user_texts(body.get("messages"))
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    return ParsedRequest.of("chat", body, texts, max_tokens)


def validate(raw: Any) -> str | None:
    body = as_dict(raw)
    if body is None:
        return "Invalid body: expected a JSON object."
    if not isinstance(body.get("model"), str):
        return "you must provide a model parameter"
    if not isinstance(body.get("messages"), list):
        return "Missing required parameter: 'messages'."
    return None


def _tool_calls(turn: Turn, ids: Ids) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id or ids.next("call"),
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.input_object())},
        }
        for call in turn.tool_calls
    ]


def _usage(turn: Turn) -> dict[str, Any]:
    return {
        "prompt_tokens": turn.usage.input_tokens,
        "completion_tokens": turn.usage.output_tokens,
        "total_tokens": turn.usage.input_tokens + turn.usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": turn.usage.cached_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": turn.usage.reasoning_tokens},
    }


def completion_json(turn: Turn, model: str, ids: Ids) -> dict[str, Any]:
    calls = _tool_calls(turn, ids)
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    if calls:
        message["tool_calls"] = calls
    return {
        "id": ids.next("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage(turn),
    }


def stream_frames(turn: Turn, model: str, ids: Ids, *, include_usage: bool) -> list[bytes]:
    chunk_id = ids.next("chatcmpl")
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(
            {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
                ],
            }
        )

    frames = [chunk({"role": "assistant", "content": ""})]
    frames.extend(chunk({"reasoning_content": c}) for c in turn.chunks(turn.reasoning))
    frames.extend(chunk({"content": c}) for c in turn.chunks(turn.text))
    for index, call in enumerate(_tool_calls(turn, ids)):
        function = call["function"]
        frames.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": function["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        frames.extend(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": c}}]})
            for c in turn.chunks(function["arguments"])
        )
    frames.append(chunk({}, "tool_calls" if turn.tool_calls else "stop"))
    if include_usage:
        frames.append(
            sse(
                {
                    "id": chunk_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": _usage(turn),
                }
            )
        )
    frames.append(sse("[DONE]"))
    return frames


def stream_error(message: str) -> bytes:
    return sse({"error": {"message": message, "type": "server_error", "param": None, "code": None}})
