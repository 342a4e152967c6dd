"""The Gemini API dialect (``generativelanguage`` v1beta, as Gemini CLI speaks it through
``GOOGLE_GEMINI_BASE_URL``): ``POST /v1beta/models/MODEL:generateContent``,
``…:streamGenerateContent?alt=sse`` and ``…:countTokens``.

A request has ``contents`` (``user`` / ``model`` turns of ``parts``: ``text``,
``functionCall``, ``functionResponse``), ``systemInstruction``, ``tools``
(``functionDeclarations``) and ``generationConfig``; the model is in the path. A response is a
``GenerateContentResponse``: ``candidates[0].content.parts`` (``text``, ``text`` with
``thought: true`` for reasoning, ``functionCall {name, args, id}``), ``finishReason`` ``STOP``
and ``usageMetadata``. Streamed, each SSE ``data:`` line is one such response; the last one
carries the finish reason and the usage. Errors are ``{"error": {code, message, status}}``.
"""

from __future__ import annotations

from typing import Any

from orchestrator.model_server._sse import Ids, as_dict, as_list, sse
from orchestrator.model_server.script import Turn
from orchestrator.model_server.state import ParsedRequest

__all__ = [
    "STATUS",
    "count_tokens",
    "error_body",
    "parse",
    "response_json",
    "stream_error",
    "stream_frames",
    "validate",
]

STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
"""The ``error.status`` Google's APIs send with each HTTP status."""


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": STATUS.get(status, "UNKNOWN")}}


def _user_texts(body: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for raw in as_list(body.get("contents")):
        content = as_dict(raw)
        if content is None or content.get("role", "user") != "user":
            continue
        for part in as_list(content.get("parts")):
            block = as_dict(part)
            if block is not None and isinstance(block.get("text"), str):
                texts.append(block["text"])
    return texts


def _has_tools(body: dict[str, Any]) -> bool:
    return any(
        as_list((as_dict(t) or {}).get("functionDeclarations")) for t in as_list(body.get("tools"))
    )


def parse(body: dict[str, Any], model: str, *, stream: bool) -> ParsedRequest:
    config = as_dict(body.get("generationConfig")) or {}
    max_tokens = config.get("maxOutputTokens")
    return ParsedRequest(
        api="gemini",
        user_texts=tuple(_user_texts(body)),
        has_tools=_has_tools(body),
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        stream=stream,
        model=model,
    )


def validate(raw: Any) -> str | None:
    body = as_dict(raw)
    if body is None:
        return "Invalid JSON payload received. Expected an object."
    if not isinstance(body.get("contents"), list) or not body["contents"]:
        return "* GenerateContentRequest.contents: contents is not specified"
    return None


def _usage(turn: Turn) -> dict[str, Any]:
    usage = turn.usage
    data: dict[str, Any] = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.input_tokens + usage.output_tokens + usage.reasoning_tokens,
    }
    if usage.cached_input_tokens:
        data["cachedContentTokenCount"] = usage.cached_input_tokens
    if usage.reasoning_tokens:
        data["thoughtsTokenCount"] = usage.reasoning_tokens
    return data


def _calls(turn: Turn, ids: Ids) -> list[dict[str, Any]]:
    return [
        {
            "functionCall": {
                "id": call.id or ids.next("call"),
                "name": call.name,
                "args": call.input_object(),
            }
        }
        for call in turn.tool_calls
    ]


def _response(
    parts: list[dict[str, Any]], model: str, response_id: str, *, last: Turn | None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    data: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": model,
        "responseId": response_id,
    }
    if last is not None:
        candidate["finishReason"] = "STOP"
        data["usageMetadata"] = _usage(last)
    return data


def response_json(turn: Turn, model: str, ids: Ids) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if turn.reasoning:
        parts.append({"text": turn.reasoning, "thought": True})
    if turn.text:
        parts.append({"text": turn.text})
    parts += _calls(turn, ids)
    return _response(parts, model, ids.next("resp"), last=turn)


def stream_frames(turn: Turn, model: str, ids: Ids) -> list[bytes]:
    """The SSE frames of one streamed answer: reasoning and text in chunks, then the function
    calls whole (Gemini streams a call in one part), then the finish reason with the usage."""
    response_id = ids.next("resp")
    frames = [
        sse(_response([{"text": c, "thought": True}], model, response_id, last=None))
        for c in turn.chunks(turn.reasoning)
    ]
    frames += [
        sse(_response([{"text": c}], model, response_id, last=None)) for c in turn.chunks(turn.text)
    ]
    calls = _calls(turn, ids)
    if calls:
        frames.append(sse(_response(calls, model, response_id, last=None)))
    frames.append(sse(_response([{"text": ""}], model, response_id, last=turn)))
    return frames


def stream_error(message: str) -> bytes:
    return sse(error_body(503, message))


def count_tokens(body: dict[str, Any]) -> dict[str, Any]:
    """A rough count (4 characters a token) of the request's text."""
    chars = sum(len(t) for t in _user_texts(body))
    request = as_dict(body.get("generateContentRequest"))
    if request is not None:
        chars += sum(len(t) for t in _user_texts(request))
    return {"totalTokens": max(1, chars // 4)}
