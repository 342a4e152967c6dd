"""OpenAI Responses on the official SDK (streamed or not), stateless (``store=False``).

Conversion: the system prompt is ``instructions``; user text → ``input_text`` parts; agent text →
an ``assistant`` message with ``output_text``; each call → a ``function_call`` item; each result →
a ``function_call_output`` item. Streaming: ``response.output_text.delta`` gives text deltas, each
``response.output_item.done`` of type ``function_call`` gives a complete ``tool_use``, and
``response.completed`` (or ``response.incomplete``) gives usage and the stop reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from adapters.native.messages import (
    Message,
    TokenCounter,
    ToolCall,
    format_tool_result_content,
    repair_history,
)
from adapters.native.subscriber import NotifyFn, TextDeltaEvent, ToolUseEvent
from adapters.native.tools import ToolDefinition

from ._common import data_url, parse_arguments
from ._openai import OpenAISdkModel
from .base import ModelError, ModelResponse, PromptRequest, SpecificTool, ToolChoice

__all__ = ["OpenAIResponsesModel", "format_responses_input"]


class OpenAIResponsesModel(OpenAISdkModel):
    """OpenAI Responses, stateless (see the module docstring)."""

    def tool_choice_param(self, choice: ToolChoice) -> Any:
        if isinstance(choice, SpecificTool):
            return {"type": "function", "name": choice.name}
        return choice

    def build_params(self, request: PromptRequest) -> dict[str, Any]:
        system = self.system_text
        params: dict[str, Any] = {
            "model": self._model,
            "input": format_responses_input(request.messages),
            "max_output_tokens": request.max_tokens or self.max_tokens,
            "store": False,
        }
        if system:
            params["instructions"] = system
        if request.tools:
            params["tools"] = [_tool(t) for t in request.tools]
        return params

    def sdk_create(self) -> Any:
        return self._client.responses.create

    async def call(self, params: dict[str, Any]) -> Any:
        return cast(Any, await self._client.responses.create(**params))

    def response(self, raw: Any) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        for item in raw.output or ():
            _collect(item, text, calls)
        return self._result(raw, "".join(text), calls, streamed=False)

    async def streamed(self, params: dict[str, Any], notify: NotifyFn) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        final: Any = None
        stream: Any = await self._client.responses.create(**params, stream=True)
        async with stream:
            async for event in stream:
                kind = event.type
                if kind == "response.output_text.delta":
                    text.append(event.delta)
                    await notify(TextDeltaEvent(event.delta))
                elif kind in (
                    "response.reasoning_text.delta",
                    "response.reasoning_summary_text.delta",
                ):
                    await notify(TextDeltaEvent(event.delta, "reasoning"))
                elif kind == "response.output_item.done":
                    item = event.item
                    if getattr(item, "type", "") == "function_call":
                        call = parse_arguments(item.name, item.arguments or "", item.call_id)
                        calls.append(call)
                        await notify(ToolUseEvent(call.id, call.tool_name, call.input_args))
                elif kind in ("response.completed", "response.incomplete"):
                    final = event.response
                elif kind in ("response.failed", "error"):
                    raise _stream_error(event)
        return self._result(final, "".join(text), calls, streamed=True)

    def _result(
        self, response: Any, text: str, calls: list[ToolCall], *, streamed: bool
    ) -> ModelResponse:
        usage = getattr(response, "usage", None)
        tokens = TokenCounter()
        if usage is not None:
            details = getattr(usage, "input_tokens_details", None)
            tokens = TokenCounter(
                tokens_in=usage.input_tokens or 0,
                tokens_out=usage.output_tokens or 0,
                cache_read_input_tokens=(getattr(details, "cached_tokens", 0) or 0)
                if details is not None
                else 0,
            )
        stop = "tool_calls" if calls else "stop"
        incomplete = getattr(response, "incomplete_details", None)
        if getattr(response, "status", None) == "incomplete" and incomplete is not None:
            stop = getattr(incomplete, "reason", None) or "incomplete"
        return ModelResponse(
            text=text,
            tool_calls=tuple(calls),
            tokens=tokens,
            stop_reason=stop,
            model=getattr(response, "model", None) or self._model,
            streamed=streamed,
        )


def _stream_error(event: Any) -> ModelError:
    err = getattr(getattr(event, "response", None), "error", None) or event
    message = getattr(err, "message", None) or "the response failed"
    return ModelError(f"response failed: {message}", "unknown")


def _collect(item: Any, text: list[str], calls: list[ToolCall]) -> None:
    kind = getattr(item, "type", "")
    if kind == "message":
        for part in item.content or ():
            if getattr(part, "type", "") == "output_text":
                text.append(part.text)
    elif kind == "function_call":
        calls.append(parse_arguments(item.name, item.arguments or "", item.call_id))


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": dict(tool.input_schema),
    }


def format_responses_input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Neutral history → Responses ``input`` items (repaired)."""
    out: list[dict[str, Any]] = []
    for msg in repair_history(messages):
        if msg.sender == "agent":
            if msg.text:
                out.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": msg.text}],
                    }
                )
            for c in msg.tool_calls or ():
                args = (
                    c.input_args
                    if isinstance(c.input_args, str)
                    else json.dumps(c.input_args if c.input_args is not None else {})
                )
                out.append(
                    {
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.tool_name,
                        "arguments": args,
                    }
                )
        elif msg.tool_results:
            for res in msg.tool_results:
                # render_data is deliberately never sent: only status, data and message are.
                out.append(
                    {
                        "type": "function_call_output",
                        "call_id": res.call_id,
                        "output": format_tool_result_content(res.result),
                    }
                )
        else:
            parts: list[dict[str, Any]] = []
            for part in msg.content or ():
                if part.type == "text" and part.text:
                    parts.append({"type": "input_text", "text": part.text})
                elif part.type == "image" and (url := data_url(part)):
                    parts.append({"type": "input_image", "image_url": url})
                elif part.type != "text":
                    parts.append(
                        {"type": "input_text", "text": f"[{part.type} attachment not supported]"}
                    )
            if not msg.content and msg.text:
                parts.append({"type": "input_text", "text": msg.text})
            if parts:
                out.append({"type": "message", "role": "user", "content": parts})
    return out
