"""OpenAI Chat Completions (and every OpenAI-compatible provider) on the official SDK.

Conversion: system first; agent → ``assistant`` (text + ``tool_calls`` with JSON-string arguments;
``reasoning_content`` echoed when ``echo_reasoning``); each tool result → one ``role: tool``
message; consecutive user messages are merged as content-part lists (never as
``"[object Object]"``). Streaming assembles tool-call fragments by index and emits each
``tool_use`` once the stream ends; usage comes from ``stream_options.include_usage``.
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
from .base import ModelResponse, PromptRequest

__all__ = ["OpenAIChatModel", "format_chat_messages"]


class OpenAIChatModel(OpenAISdkModel):
    """Chat Completions (see the module docstring)."""

    def __init__(
        self,
        model: str,
        *,
        echo_reasoning: bool = False,
        max_tokens_param: str = "max_completion_tokens",
        **options: Any,
    ) -> None:
        """``options`` as :class:`OpenAISdkModel`: ``api_key``, ``base_url``, ``max_tokens``,
        ``stream``, ``provider``, ``http_client``, ``client``."""
        super().__init__(model, **options)
        self.echo_reasoning = echo_reasoning
        self.max_tokens_param = max_tokens_param

    def build_params(self, request: PromptRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self._model,
            "messages": format_chat_messages(
                request.messages, self.system_text, echo_reasoning=self.echo_reasoning
            ),
            self.max_tokens_param: request.max_tokens or self.max_tokens,
        }
        if request.tools:
            params["tools"] = [_tool(t) for t in request.tools]
        return params

    def sdk_create(self) -> Any:
        return self._client.chat.completions.create

    async def call(self, params: dict[str, Any]) -> Any:
        return cast(Any, await self._client.chat.completions.create(**params))

    def response(self, raw: Any) -> ModelResponse:
        completion = raw
        choice = completion.choices[0]
        msg = choice.message
        calls = tuple(
            parse_arguments(c.function.name, c.function.arguments or "", c.id)
            for c in (msg.tool_calls or ())
        )
        return ModelResponse(
            text=msg.content or "",
            tool_calls=calls,
            tokens=_tokens(completion.usage),
            stop_reason=choice.finish_reason,
            model=completion.model or self._model,
            streamed=False,
        )

    async def streamed(self, params: dict[str, Any], notify: NotifyFn) -> ModelResponse:
        text: list[str] = []
        frags: dict[int, dict[str, Any]] = {}
        usage: Any = None
        finish: str | None = None
        model = self._model
        stream: Any = await self._client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = chunk.usage
                model = chunk.model or model
                for choice in chunk.choices or ():
                    delta = choice.delta
                    if delta is not None and delta.content:
                        text.append(delta.content)
                        await notify(TextDeltaEvent(delta.content))
                    reasoning = getattr(delta, "reasoning_content", None) if delta else None
                    if reasoning:
                        await notify(TextDeltaEvent(reasoning, "reasoning"))
                    for tc in (delta.tool_calls if delta is not None else None) or ():
                        frag = frags.setdefault(tc.index, {"id": "", "name": "", "args": []})
                        if tc.id:
                            frag["id"] = tc.id
                        if tc.function is not None:
                            if tc.function.name:
                                frag["name"] += tc.function.name
                            if tc.function.arguments:
                                frag["args"].append(tc.function.arguments)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        calls: list[ToolCall] = []
        for index in sorted(frags):
            frag = frags[index]
            # no id from the provider: parse_arguments gives a unique one (never call_{index},
            # which every turn would repeat)
            call = parse_arguments(frag["name"], "".join(frag["args"]), frag["id"])
            calls.append(call)
            await notify(ToolUseEvent(call.id, call.tool_name, call.input_args))
        return ModelResponse(
            text="".join(text),
            tool_calls=tuple(calls),
            tokens=_tokens(usage),
            stop_reason=finish,
            model=model,
            streamed=True,
        )


def _tokens(usage: Any) -> TokenCounter:
    if usage is None:
        return TokenCounter()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    return TokenCounter(
        tokens_in=usage.prompt_tokens or 0,
        tokens_out=usage.completion_tokens or 0,
        cache_read_input_tokens=cached,
    )


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.input_schema),
        },
    }


def _user_parts(msg: Message) -> list[dict[str, Any]]:
    if not msg.content:
        return [{"type": "text", "text": msg.text}] if msg.text else []
    parts: list[dict[str, Any]] = []
    for part in msg.content:
        if part.type == "text":
            if part.text:
                parts.append({"type": "text", "text": part.text})
        elif part.type == "image" and (url := data_url(part)):
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            parts.append({"type": "text", "text": f"[{part.type} attachment not supported]"})
    return parts


def format_chat_messages(
    messages: Sequence[Message], system: str = "", *, echo_reasoning: bool = False
) -> list[dict[str, Any]]:
    """Neutral history → Chat Completions ``messages`` (repaired and merged)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for msg in repair_history(messages):
        if msg.sender == "agent":
            entry: dict[str, Any] = {"role": "assistant", "content": msg.text or None}
            if msg.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.tool_name,
                            "arguments": c.input_args
                            if isinstance(c.input_args, str)
                            else json.dumps(c.input_args if c.input_args is not None else {}),
                        },
                    }
                    for c in msg.tool_calls
                ]
            elif not msg.text:
                continue
            if echo_reasoning and msg.reasoning:
                entry["reasoning_content"] = "".join(r.text for r in msg.reasoning)
            out.append(entry)
        elif msg.tool_results:
            for res in msg.tool_results:
                # render_data is deliberately never sent: only status, data and message are.
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": res.call_id,
                        "content": format_tool_result_content(res.result),
                    }
                )
        else:
            parts = _user_parts(msg)
            if not parts:
                continue
            prev = out[-1] if out else None
            if prev is not None and prev["role"] == "user":
                if isinstance(prev["content"], str):
                    prev["content"] = [{"type": "text", "text": prev["content"]}]
                prev["content"].extend(parts)
            elif len(parts) == 1 and parts[0]["type"] == "text":
                out.append({"role": "user", "content": parts[0]["text"]})
            else:
                out.append({"role": "user", "content": parts})
    return out
