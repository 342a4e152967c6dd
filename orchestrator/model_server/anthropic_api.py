"""Anthropic Messages dialect: ``POST /v1/messages`` (also ``?beta=true``), streamed and not.

A stream is ``message_start, ping``, then per content block (thinking, text, tool_use in that
order) ``content_block_start``, its deltas (``thinking_delta`` + ``signature_delta``,
``text_delta``, ``input_json_delta``) and ``content_block_stop``, then ``message_delta``
(``stop_reason`` ``tool_use`` or ``end_turn``, ``usage.output_tokens``) and ``message_stop``.
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.model_server._sse import Ids, as_dict, sse, user_texts
from orchestrator.model_server.script import Turn
from orchestrator.model_server.state import ParsedRequest

__all__ = [
    "count_tokens",
    "error_body",
    "message_json",
    "parse",
    "stream_error",
    "stream_frames",
    "validate",
]


def parse(body: dict[str, Any]) -> ParsedRequest:
    texts = user_texts(body.get("messages"))
    return ParsedRequest.of("anthropic", body, texts, body.get("max_tokens"))


def validate(raw: Any) -> str | None:
    """The real API's complaint about a malformed body, or None."""
    body = as_dict(raw)
    if body is None:
        return "body: Input should be a valid dictionary"
    if not isinstance(body.get("model"), str):
        return "model: Field required"
    if not isinstance(body.get("messages"), list):
        return "messages: Field required"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    return None


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def _usage(turn: Turn, *, output: int) -> dict[str, Any]:
    return {
        "input_tokens": turn.usage.input_tokens,
        "output_tokens": output,
        "cache_read_input_tokens": turn.usage.cached_input_tokens,
        "cache_creation_input_tokens": 0,
    }


def _blocks(turn: Turn, ids: Ids) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.reasoning:
        blocks.append(
            {"type": "thinking", "thinking": turn.reasoning, "signature": "scripted-signature"}
        )
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for call in turn.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id or ids.next("toolu"),
                "name": call.name,
                "input": call.input_object(),
            }
        )
    return blocks


def message_json(turn: Turn, model: str, ids: Ids) -> dict[str, Any]:
    return {
        "id": ids.next("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(turn, ids),
        "stop_reason": "tool_use" if turn.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": _usage(turn, output=turn.usage.output_tokens),
    }


def stream_frames(turn: Turn, model: str, ids: Ids) -> list[bytes]:
    """The SSE frames of one streamed turn, in the real API's order."""
    frames = [
        sse(
            {
                "type": "message_start",
                "message": {
                    "id": ids.next("msg"),
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _usage(turn, output=1),
                },
            },
            "message_start",
        ),
        sse({"type": "ping"}, "ping"),
    ]
    for index, block in enumerate(_blocks(turn, ids)):
        kind = block["type"]
        if kind == "thinking":
            start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": c} for c in turn.chunks(turn.reasoning)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": c} for c in turn.chunks(turn.text)]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            arguments = json.dumps(block["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": c} for c in turn.chunks(arguments)
            ]
        frames.append(
            sse(
                {"type": "content_block_start", "index": index, "content_block": start},
                "content_block_start",
            )
        )
        frames.extend(
            sse({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta")
            for d in deltas
        )
        frames.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    frames.append(
        sse(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if turn.tool_calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": turn.usage.output_tokens},
            },
            "message_delta",
        )
    )
    frames.append(sse({"type": "message_stop"}, "message_stop"))
    return frames


def stream_error(message: str) -> bytes:
    return sse(error_body("overloaded_error", message), "error")


def count_tokens(body: dict[str, Any]) -> dict[str, Any]:
    """A deterministic estimate: about four bytes of request per token."""
    size = len(json.dumps(body.get("messages", [])) + json.dumps(body.get("system", "")))
    return {"input_tokens": max(1, size // 4)}
