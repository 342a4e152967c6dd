"""The Starlette app: routes each API to its dialect, applies the script and its faults, logs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import anthropic_api, openai_chat, openai_responses
from ._sse import Ids, as_dict
from .script import Fault, Turn, TurnUsage
from .state import ParsedRequest, Selection, ServerState

__all__ = ["StreamCut", "build_app"]


class StreamCut(Exception):
    """Raised inside a response stream to drop the connection mid-way (the ``cut`` fault)."""


def _openai_error(
    status: int, message: str, error_type: str, code: str | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": error_type, "param": None, "code": code}},
        status_code=status,
    )


def _anthropic_error(
    status: int, error_type: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        anthropic_api.error_body(error_type, message), status_code=status, headers=headers
    )


def build_app(state: ServerState) -> Starlette:
    ids = Ids()
    script = state.script

    def error(
        api: str, status: int, kind: str, message: str, headers: dict[str, str] | None = None
    ) -> JSONResponse:
        if api == "anthropic":
            return _anthropic_error(status, kind, message, headers)
        response = _openai_error(status, message, kind)
        if headers:
            response.headers.update(headers)
        return response

    def fault_response(api: str, fault: Fault) -> JSONResponse:
        message = fault.message
        match fault.kind:
            case "rate_limit":
                headers = (
                    {"retry-after": f"{fault.retry_after:g}"}
                    if fault.retry_after is not None
                    else {}
                )
                kind = "rate_limit_error" if api == "anthropic" else "rate_limit_exceeded"
                return error(api, 429, kind, message or "Rate limited (scripted)", headers)
            case "overloaded":
                if api == "anthropic":
                    return error(api, 529, "overloaded_error", message or "Overloaded (scripted)")
                return error(api, 503, "server_error", message or "Service unavailable (scripted)")
            case "bad_request":
                return error(api, 400, "invalid_request_error", message or "Bad request (scripted)")
            case _:
                kind = "api_error" if api == "anthropic" else "server_error"
                return error(api, 500, kind, message or "Internal server error (scripted)")

    async def stream(
        frames: list[bytes], turn: Turn, fault: Fault | None, api: str
    ) -> AsyncIterator[bytes]:
        for index, frame in enumerate(frames):
            if fault is not None and index >= fault.after_chunks:
                if fault.kind == "stream_error":
                    message = fault.message or "Overloaded (scripted, mid-stream)"
                    if api == "anthropic":
                        yield anthropic_api.stream_error(message)
                    elif api == "responses":
                        yield openai_responses.stream_error(message, script.model, ids)
                    else:
                        yield openai_chat.stream_error(message)
                    return
                raise StreamCut("scripted stream cut")
            if index and turn.chunk_delay_s:
                await trio.sleep(turn.chunk_delay_s)
            yield frame

    def answer(
        api: str, parsed: ParsedRequest, body: dict[str, Any], turn: Turn, fault: Fault | None
    ) -> Response:
        model = parsed.model or script.model
        if parsed.stream:
            if api == "anthropic":
                frames = anthropic_api.stream_frames(turn, model, ids)
            elif api == "responses":
                frames = openai_responses.stream_frames(turn, model, ids)
            else:
                options = as_dict(body.get("stream_options"))
                include = options is not None and bool(options.get("include_usage"))
                frames = openai_chat.stream_frames(turn, model, ids, include_usage=include)
            return StreamingResponse(
                stream(frames, turn, fault, api),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache", "request-id": ids.next("req")},
            )
        if fault is not None:  # a stream fault on a non-streamed request: the server errs
            return fault_response(api, Fault(kind="server_error"))
        if api == "anthropic":
            return JSONResponse(anthropic_api.message_json(turn, model, ids))
        if api == "responses":
            return JSONResponse(openai_responses.response_json(turn, model, ids))
        return JSONResponse(openai_chat.completion_json(turn, model, ids))

    async def handle(request: Request, api: str) -> Response:
        raw = await request.body()
        headers = dict(request.headers)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            state.log(
                path=request.url.path,
                headers=headers,
                raw_body=raw,
                body=None,
                api=api,
                selection=None,
            )
            return error(api, 400, "invalid_request_error", "The request body is not valid JSON.")
        dialect = {"anthropic": anthropic_api, "responses": openai_responses, "chat": openai_chat}[
            api
        ]
        problem = dialect.validate(body)
        if problem is not None:
            state.log(
                path=request.url.path,
                headers=headers,
                raw_body=raw,
                body=body,
                api=api,
                selection=None,
            )
            return error(api, 400, "invalid_request_error", problem)
        parsed = dialect.parse(body)
        selection: Selection = state.select(parsed)
        state.log(
            path=request.url.path,
            headers=headers,
            raw_body=raw,
            body=body,
            api=api,
            selection=selection,
        )
        if selection.side:
            side = Turn(text=script.side_reply, usage=TurnUsage(input_tokens=5, output_tokens=3))
            return answer(api, parsed, body, side, None)
        if selection.turn is None:
            return error(api, 400, "invalid_request_error", selection.error or "no scripted turn")
        turn = selection.turn
        if state.take_fault(selection):
            assert turn.fault is not None
            if turn.fault.kind in ("cut", "stream_error"):
                return answer(api, parsed, body, turn, turn.fault)
            return fault_response(api, turn.fault)
        state.advance(selection)
        return answer(api, parsed, body, turn, None)

    async def messages(request: Request) -> Response:
        return await handle(request, "anthropic")

    async def count_tokens(request: Request) -> Response:
        try:
            body: Any = json.loads(await request.body())
        except ValueError:
            return _anthropic_error(
                400, "invalid_request_error", "The request body is not valid JSON."
            )
        if not isinstance(body, dict):
            return _anthropic_error(
                400, "invalid_request_error", "body: Input should be a valid dictionary"
            )
        return JSONResponse(anthropic_api.count_tokens(body))  # pyright: ignore[reportUnknownArgumentType]

    async def responses(request: Request) -> Response:
        return await handle(request, "responses")

    async def chat(request: Request) -> Response:
        return await handle(request, "chat")

    async def models(request: Request) -> Response:
        await trio.lowlevel.checkpoint()
        model = script.model
        item = {
            "id": model,
            "object": "model",
            "type": "model",
            "created": 0,
            "owned_by": "ringleader",
            "display_name": model,
            "created_at": "2026-01-01T00:00:00Z",
        }
        return JSONResponse(
            {
                "object": "list",
                "data": [item],
                "has_more": False,
                "first_id": model,
                "last_id": model,
            }
        )

    async def hello(request: Request) -> Response:
        await trio.lowlevel.checkpoint()
        return JSONResponse({"ok": True})

    return Starlette(
        routes=[
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/api/hello", hello, methods=["GET", "HEAD"]),
        ]
    )
