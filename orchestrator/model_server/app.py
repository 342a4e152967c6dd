"""The Starlette app: routes each API to its dialect, applies the script and its faults, logs.

Routes: ``POST /v1/messages`` (any query, e.g. ``?beta=true``), ``POST
/v1/messages/count_tokens``, ``POST /v1/responses``, ``POST /v1/chat/completions``, ``GET
/v1/models`` and ``/v1/models/{id}``, ``POST /v1beta/models/MODEL:generateContent``,
``:streamGenerateContent`` and ``:countTokens`` (the Gemini API), and ``GET|HEAD /api/hello``
(Claude Code's preconnect).
Anything else gets a JSON 404/405 shaped like the real APIs' errors. Every request is logged.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping
from pathlib import Path
from typing import Any

import trio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Send

from orchestrator.model_server import anthropic_api, gemini_api, openai_chat, openai_responses
from orchestrator.model_server._sse import Ids, as_dict
from orchestrator.model_server.script import Fault, Turn, TurnUsage
from orchestrator.model_server.state import LoggedRequest, ParsedRequest, ServerState, session_of

__all__ = ["StreamCut", "build_app"]


class StreamCut(Exception):
    """Raised inside a response stream to drop the connection mid-way (the ``cut`` fault)."""


def _openai_error(
    status: int,
    message: str,
    error_type: str,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": error_type, "param": None, "code": code}},
        status_code=status,
        headers=headers,
    )


def _anthropic_error(
    status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        anthropic_api.error_body(error_type, message), status_code=status, headers=headers
    )


def _error(
    api: str, status: int, kind: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """An error in the dialect's shape; ``kind`` is the Anthropic ``error.type``."""
    if api == "anthropic":
        return _anthropic_error(status, kind, message, headers)
    if api == "gemini":
        return JSONResponse(gemini_api.error_body(status, message), status, headers=headers)
    openai_type, code = {
        "invalid_request_error": ("invalid_request_error", None),
        "authentication_error": ("invalid_request_error", "invalid_api_key"),
        "not_found_error": ("invalid_request_error", "unknown_url"),
        "rate_limit_error": ("requests", "rate_limit_exceeded"),
        "overloaded_error": ("server_error", "server_is_overloaded"),
    }.get(kind, ("server_error", None))
    return _openai_error(status, message, openai_type, code, headers)


def _fault_response(api: str, fault: Fault) -> JSONResponse:
    response = _fault_body(api, fault)
    if fault.error:
        body = json.loads(bytes(response.body))
        body["error"] = {**body["error"], **fault.error}
        kept = {
            k: v for k, v in response.headers.items() if k not in ("content-length", "content-type")
        }
        response = JSONResponse(body, status_code=response.status_code, headers=kept)
    response.headers.update(fault.headers)
    return response


def _fault_body(api: str, fault: Fault) -> JSONResponse:
    message = fault.message
    match fault.kind:
        case "rate_limit":
            headers = (
                {"retry-after": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            )
            return _error(
                api, 429, "rate_limit_error", message or "Rate limited (scripted)", headers
            )
        case "overloaded":
            if api == "anthropic":
                return _error(api, 529, "overloaded_error", message or "Overloaded (scripted)")
            return _error(
                api, 503, "overloaded_error", message or "The server is overloaded (scripted)."
            )
        case "bad_request":
            return _error(api, 400, "invalid_request_error", message or "Bad request (scripted)")
        case "authentication":
            return _error(api, 401, "authentication_error", message or "invalid x-api-key")
        case _:
            return _error(api, 500, "api_error", message or "Internal server error (scripted)")


class _ClosingStream(StreamingResponse):
    """A streaming response that closes its generator when the client goes away, so the
    generator's ``finally`` (which records the outcome) runs now, not at garbage collection."""

    def __init__(
        self,
        content: AsyncGenerator[bytes],
        *,
        media_type: str,
        headers: Mapping[str, str],
    ) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self._generator = content

    async def stream_response(self, send: Send) -> None:
        try:
            await super().stream_response(send)
        finally:
            with trio.CancelScope(shield=True):
                await self._generator.aclose()


HOLD_MAX_S = 600.0
"""The longest a turn's ``hold_file`` holds its stream (a test that never releases it ends)."""


async def held(release: Path) -> None:
    """Wait until ``release`` exists (a scripted turn's ``hold_file``), at most ``HOLD_MAX_S``."""
    with trio.move_on_after(HOLD_MAX_S):
        while True:  # a file another process creates: polled (no event to wait on)
            if await trio.to_thread.run_sync(release.exists):
                return
            await trio.sleep(0.05)


def _api_of(path: str) -> str:
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith("/v1/responses"):
        return "responses"
    if path.startswith("/v1beta/"):
        return "gemini"
    return "chat"


def build_app(state: ServerState) -> Starlette:
    ids = Ids()
    script = state.script

    def reply(entry: LoggedRequest, response: Response) -> Response:
        state.finish(
            entry, "answered" if response.status_code < 400 else "error", response.status_code
        )
        return response

    async def stream(
        entry: LoggedRequest,
        frames: list[bytes],
        turn: Turn,
        fault: Fault | None,
        api: str,
        model: str,
        response_id: str,
    ) -> AsyncGenerator[bytes]:
        ended = False
        try:
            for index, frame in enumerate(frames):
                if fault is not None and index >= fault.after_chunks:
                    if fault.kind == "stream_error":
                        message = fault.message or "Overloaded (scripted, mid-stream)"
                        if api == "anthropic":
                            yield anthropic_api.stream_error(message)
                        elif api == "responses":
                            yield openai_responses.stream_error(message, model, response_id, index)
                        elif api == "gemini":
                            yield gemini_api.stream_error(message)
                        else:
                            yield openai_chat.stream_error(message)
                        ended = True
                        state.finish(entry, "stream_error")
                        return
                    ended = True
                    state.finish(entry, "cut")
                    raise StreamCut("scripted stream cut")
                if index and turn.chunk_delay_s:
                    await trio.sleep(turn.chunk_delay_s)
                if turn.hold_file is not None and index == turn.hold_after:
                    await held(Path(turn.hold_file))
                yield frame
            ended = True
            state.finish(entry, "completed")
        finally:
            if not ended:
                state.finish(entry, "disconnected")

    async def answer(
        entry: LoggedRequest,
        api: str,
        parsed: ParsedRequest,
        body: dict[str, Any],
        turn: Turn,
        fault: Fault | None,
    ) -> Response:
        model = parsed.model or script.model
        if turn.delay_s:
            await trio.sleep(turn.delay_s)
        if parsed.stream:
            response_id = ids.next("resp") if api == "responses" else ""
            if api == "anthropic":
                frames = anthropic_api.stream_frames(turn, model, ids)
            elif api == "responses":
                frames = openai_responses.stream_frames(turn, model, ids, response_id)
            elif api == "gemini":
                frames = gemini_api.stream_frames(turn, model, ids)
            else:
                options = as_dict(body.get("stream_options"))
                include = options is not None and bool(options.get("include_usage"))
                frames = openai_chat.stream_frames(turn, model, ids, include_usage=include)
            state.finish(entry, "streaming", 200)
            return _ClosingStream(
                stream(entry, frames, turn, fault, api, model, response_id),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache", "request-id": ids.next("req")},
            )
        if fault is not None:  # a stream fault on a non-streamed request: the server errs
            return reply(entry, _fault_response(api, Fault(kind="server_error")))
        if api == "anthropic":
            content = anthropic_api.message_json(turn, model, ids)
        elif api == "responses":
            content = openai_responses.response_json(turn, model, ids)
        elif api == "gemini":
            content = gemini_api.response_json(turn, model, ids)
        else:
            content = openai_chat.completion_json(turn, model, ids)
        return reply(entry, JSONResponse(content, headers={"request-id": ids.next("req")}))

    def authorized(headers: Mapping[str, str]) -> bool:
        key = script.api_key
        return key is None or key in (
            headers.get("x-api-key"),
            headers.get("x-goog-api-key"),
            headers.get("authorization", "").removeprefix("Bearer ").strip(),
        )

    def log_plain(request: Request, raw: bytes, body: Any, api: str) -> LoggedRequest:
        return state.log(
            path=request.url.path,
            headers=dict(request.headers),
            raw_body=raw,
            body=body,
            api=api,
            selection=None,
        )

    async def handle(
        request: Request, api: str, parse: Callable[[dict[str, Any]], ParsedRequest] | None = None
    ) -> Response:
        raw = await request.body()
        headers = dict(request.headers)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            entry = log_plain(request, raw, None, api)
            message = "The request body is not valid JSON."
            return reply(entry, _error(api, 400, "invalid_request_error", message))
        if not authorized(headers):
            entry = log_plain(request, raw, body, api)
            return reply(entry, _error(api, 401, "authentication_error", "invalid x-api-key"))
        dialect = {
            "anthropic": anthropic_api,
            "responses": openai_responses,
            "chat": openai_chat,
            "gemini": gemini_api,
        }[api]
        problem = dialect.validate(body)
        if problem is not None:
            entry = log_plain(request, raw, body, api)
            return reply(entry, _error(api, 400, "invalid_request_error", problem))
        parsed = parse(body) if parse is not None else dialect.parse(body)
        selection = state.select(
            parsed,
            session=session_of(headers),
            body_text=raw.decode("utf-8", "replace"),
        )
        entry = state.log(
            path=request.url.path,
            headers=headers,
            raw_body=raw,
            body=body,
            api=api,
            selection=selection,
        )
        if selection.side:
            side = Turn(text=script.side_reply, usage=TurnUsage(input_tokens=5, output_tokens=3))
            return await answer(entry, api, parsed, body, side, None)
        if selection.turn is None:
            message = selection.error or "no scripted turn"
            return reply(entry, _error(api, 400, "invalid_request_error", message))
        turn = selection.turn
        if state.take_fault(selection):
            assert turn.fault is not None
            if turn.fault.kind in ("cut", "stream_error"):
                return await answer(entry, api, parsed, body, turn, turn.fault)
            return reply(entry, _fault_response(api, turn.fault))
        state.advance(selection)
        return await answer(entry, api, parsed, body, turn, None)

    async def messages(request: Request) -> Response:
        return await handle(request, "anthropic")

    async def count_tokens(request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            entry = log_plain(request, raw, None, "count_tokens")
            message = "The request body is not valid JSON."
            return reply(entry, _anthropic_error(400, "invalid_request_error", message))
        entry = log_plain(request, raw, body, "count_tokens")
        if not authorized(request.headers):
            return reply(entry, _anthropic_error(401, "authentication_error", "invalid x-api-key"))
        content = as_dict(body)
        if content is None:
            message = "body: Input should be a valid dictionary"
            return reply(entry, _anthropic_error(400, "invalid_request_error", message))
        return reply(entry, JSONResponse(anthropic_api.count_tokens(content)))

    async def responses(request: Request) -> Response:
        return await handle(request, "responses")

    async def chat(request: Request) -> Response:
        return await handle(request, "chat")

    async def gemini(request: Request) -> Response:
        """``/v1beta/models/MODEL:METHOD`` (generateContent, streamGenerateContent, countTokens)."""
        model, _, method = str(request.path_params["target"]).rpartition(":")
        if method in ("generateContent", "streamGenerateContent") and model:
            stream = method == "streamGenerateContent"
            return await handle(
                request, "gemini", lambda body: gemini_api.parse(body, model, stream=stream)
            )
        raw = await request.body()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        entry = log_plain(request, raw, body, "gemini")
        if method != "countTokens" or not model:
            message = f"POST {request.url.path}: no such method"
            return reply(entry, _error("gemini", 404, "not_found_error", message))
        if not authorized(request.headers):
            return reply(entry, _error("gemini", 401, "authentication_error", "invalid API key"))
        return reply(entry, JSONResponse(gemini_api.count_tokens(as_dict(body) or {})))

    def model_item(model: str) -> dict[str, Any]:
        return {
            "id": model,
            "object": "model",
            "type": "model",
            "created": 0,
            "owned_by": "ringleader",
            "display_name": model,
            "created_at": "2026-01-01T00:00:00Z",
        }

    async def models(request: Request) -> Response:
        await trio.lowlevel.checkpoint()
        entry = log_plain(request, b"", None, "models")
        model = script.model
        listing = {
            "object": "list",
            "data": [model_item(model)],
            "has_more": False,
            "first_id": model,
            "last_id": model,
        }
        return reply(entry, JSONResponse(listing))

    async def model(request: Request) -> Response:
        await trio.lowlevel.checkpoint()
        entry = log_plain(request, b"", None, "models")
        return reply(entry, JSONResponse(model_item(str(request.path_params["model_id"]))))

    async def hello(request: Request) -> Response:
        await trio.lowlevel.checkpoint()
        entry = log_plain(request, b"", None, "hello")
        return reply(entry, JSONResponse({"ok": True}))

    async def http_error(request: Request, exc: Exception) -> Response:
        await trio.lowlevel.checkpoint()
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        api = _api_of(request.url.path)
        entry = log_plain(request, b"", None, api)
        kind = "not_found_error" if status == 404 else "invalid_request_error"
        message = f"{request.method} {request.url.path}: " + (
            "no such route" if status == 404 else "method not allowed"
        )
        return reply(entry, _error(api, status, kind, message))

    return Starlette(
        routes=[
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", model, methods=["GET"]),
            Route("/v1beta/models/{target:path}", gemini, methods=["POST"]),
            Route("/api/hello", hello, methods=["GET", "HEAD"]),
        ],
        exception_handlers={404: http_error, 405: http_error},
    )
