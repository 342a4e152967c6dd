"""OpenAI Responses dialect: ``POST /v1/responses``, streamed and not (what Codex speaks).

A stream is ``response.created, response.in_progress``, then per output item (reasoning, message,
function or custom tool calls in that order) ``response.output_item.added``, its parts and deltas
(``reasoning_summary_part.*`` / ``reasoning_summary_text.*``, ``content_part.*`` /
``output_text.*``, ``function_call_arguments.*``, ``custom_tool_call_input.*``) and
``response.output_item.done``, then ``response.completed`` with ``response.usage``. Every event
has a ``sequence_number``. Codex needs no ``instructions`` field and replays the full history.
"""

from __future__ import annotations

import time
from typing import Any

from orchestrator.model_server._sse import Ids, as_dict, sse, user_texts
from orchestrator.model_server.script import Turn
from orchestrator.model_server.state import ParsedRequest

__all__ = ["parse", "response_json", "stream_error", "stream_frames", "validate"]


def parse(body: dict[str, Any]) -> ParsedRequest:
    texts: list[str] = []
    items = body.get("input")
    if isinstance(items, str):
        texts.append(items)
    texts.extend(user_texts(items, ("input_text", "text")))
    return ParsedRequest.of("responses", body, texts, body.get("max_output_tokens"))


def validate(raw: Any) -> str | None:
    body = as_dict(raw)
    if body is None:
        return "Invalid body: expected a JSON object."
    if not isinstance(body.get("model"), str):
        return "Missing required parameter: 'model'."
    if "input" not in body:
        return "Missing required parameter: 'input'."
    return None


def _items(turn: Turn, ids: Ids) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": ids.next("rs"),
                "summary": [{"type": "summary_text", "text": turn.reasoning}],
            }
        )
    if turn.text:
        items.append(
            {
                "type": "message",
                "id": ids.next("msg"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for call in turn.tool_calls:
        if call.kind == "custom":
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": ids.next("ctc"),
                    "call_id": call.id or ids.next("call"),
                    "name": call.name,
                    "input": call.arguments(),
                    "status": "completed",
                }
            )
        else:
            items.append(
                {
                    "type": "function_call",
                    "id": ids.next("fc"),
                    "call_id": call.id or ids.next("call"),
                    "name": call.name,
                    "arguments": call.arguments(),
                    "status": "completed",
                }
            )
    return items


def _response(
    turn: Turn, model: str, response_id: str, *, status: str, output: list[dict[str, Any]]
) -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "usage": {
            "input_tokens": turn.usage.input_tokens,
            "input_tokens_details": {"cached_tokens": turn.usage.cached_input_tokens},
            "output_tokens": turn.usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": turn.usage.reasoning_tokens},
            "total_tokens": turn.usage.input_tokens + turn.usage.output_tokens,
        }
        if done
        else None,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
    }


def response_json(turn: Turn, model: str, ids: Ids) -> dict[str, Any]:
    return _response(turn, model, ids.next("resp"), status="completed", output=_items(turn, ids))


def stream_frames(turn: Turn, model: str, ids: Ids, response_id: str | None = None) -> list[bytes]:
    """The SSE frames of one streamed turn, in the real API's order."""
    response_id = response_id or ids.next("resp")
    items = _items(turn, ids)
    seq = 0
    frames: list[bytes] = []

    def emit(event: dict[str, Any]) -> None:
        nonlocal seq
        event["sequence_number"] = seq
        seq += 1
        frames.append(sse(event, str(event["type"])))

    emit(
        {
            "type": "response.created",
            "response": _response(turn, model, response_id, status="in_progress", output=[]),
        }
    )
    emit(
        {
            "type": "response.in_progress",
            "response": _response(turn, model, response_id, status="in_progress", output=[]),
        }
    )
    for index, item in enumerate(items):
        kind = item["type"]
        if kind == "reasoning":
            emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "summary": []},
                }
            )
            part = {"type": "summary_text", "text": ""}
            emit(
                {
                    "type": "response.reasoning_summary_part.added",
                    "item_id": item["id"],
                    "output_index": index,
                    "summary_index": 0,
                    "part": part,
                }
            )
            for chunk in turn.chunks(turn.reasoning):
                emit(
                    {
                        "type": "response.reasoning_summary_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "summary_index": 0,
                        "delta": chunk,
                    }
                )
            emit(
                {
                    "type": "response.reasoning_summary_text.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "summary_index": 0,
                    "text": turn.reasoning,
                }
            )
            emit(
                {
                    "type": "response.reasoning_summary_part.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "summary_index": 0,
                    "part": {"type": "summary_text", "text": turn.reasoning},
                }
            )
        elif kind == "message":
            emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            empty: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
            emit(
                {
                    "type": "response.content_part.added",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "part": empty,
                }
            )
            for chunk in turn.chunks(turn.text):
                emit(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": chunk,
                        "logprobs": [],
                    }
                )
            emit(
                {
                    "type": "response.output_text.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "text": turn.text,
                    "logprobs": [],
                }
            )
            emit(
                {
                    "type": "response.content_part.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "part": item["content"][0],
                }
            )
        elif kind == "custom_tool_call":
            emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "input": "", "status": "in_progress"},
                }
            )
            for chunk in turn.chunks(item["input"]):
                emit(
                    {
                        "type": "response.custom_tool_call_input.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "delta": chunk,
                    }
                )
            emit(
                {
                    "type": "response.custom_tool_call_input.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "input": item["input"],
                }
            )
        else:
            emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                }
            )
            for chunk in turn.chunks(item["arguments"]):
                emit(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "delta": chunk,
                    }
                )
            emit(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "arguments": item["arguments"],
                    "name": item["name"],
                }
            )
        emit({"type": "response.output_item.done", "output_index": index, "item": item})
    emit(
        {
            "type": "response.completed",
            "response": _response(turn, model, response_id, status="completed", output=items),
        }
    )
    return frames


def stream_error(message: str, model: str, response_id: str, sequence_number: int = 0) -> bytes:
    """A ``response.failed`` event for the streamed response ``response_id``
    (``sequence_number``: the frames already sent)."""
    response = _response_failed(model, response_id, message)
    return sse(
        {"type": "response.failed", "sequence_number": sequence_number, "response": response},
        "response.failed",
    )


def _response_failed(model: str, response_id: str, message: str) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "failed",
        "model": model,
        "output": [],
        "error": {"code": "server_error", "message": message},
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
