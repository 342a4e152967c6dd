"""Anthropic Messages on the official SDK (streamed or not), with prompt-caching breakpoints.

Conversion: agent → ``assistant`` (thinking blocks with signatures echoed, text, ``tool_use``),
user tool results → ``tool_result`` blocks with ``is_error``; consecutive same-role messages are
merged; the history is repaired first (orphan calls patched, duplicate results dropped).
``render_data`` never leaves the process.

Caching: a system prompt assembled by ``tiers`` is sent as one block per tier with
``cache_control`` at each tier's breakpoint (the stable prefix), and the last block of the last
message is marked too; cache reads and writes are reported separately. ``tokens_in`` includes
cached tokens (Anthropic's ``input_tokens`` does not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias, cast

import anthropic
import httpx2
from anthropic.lib.bedrock import AsyncAnthropicBedrock

from adapters.native.messages import (
    ContentPart,
    Message,
    ReasoningBlock,
    TokenCounter,
    ToolCall,
    format_tool_result_content,
    repair_history,
)
from adapters.native.subscriber import NotifyFn, TextDeltaEvent, ToolUseEvent
from adapters.native.tools import ToolDefinition
from tiers import AssembledPrompt

from ._common import SdkErrors, parse_arguments, shared_http_client
from ._sdk import SdkModel
from .base import ModelResponse, PromptRequest, SpecificTool, SystemPrompt, ToolChoice

__all__ = ["AnthropicModel", "anthropic_client", "format_anthropic_messages", "system_blocks"]

_EPHEMERAL = {"type": "ephemeral"}


AnthropicClient: TypeAlias = anthropic.AsyncAnthropic | AsyncAnthropicBedrock
"""The first-party API, or Anthropic's models on AWS Bedrock (the SDK's Bedrock client)."""


def anthropic_client(
    api_key: str | None, base_url: str | None, http_client: httpx2.AsyncClient | None
) -> anthropic.AsyncAnthropic:
    """An Anthropic SDK client on the shared httpx2 client, SDK retries off."""
    return anthropic.AsyncAnthropic(
        api_key=api_key or "unset",
        base_url=base_url,
        http_client=http_client or shared_http_client(),
        max_retries=0,
    )


class AnthropicModel(SdkModel[AnthropicClient]):
    sdk_errors = SdkErrors(
        anthropic.APIStatusError, anthropic.APIConnectionError, anthropic.APIError
    )

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 8192,
        stream: bool = True,
        cache: bool = True,
        http_client: httpx2.AsyncClient | None = None,
        client: AnthropicClient | None = None,
        provider: str = "anthropic",
    ) -> None:
        client = client or anthropic_client(api_key, base_url, http_client)
        super().__init__(model, client, provider=provider, max_tokens=max_tokens, stream=stream)
        self.cache = cache

    max_temperature = 1.0

    def tool_choice_param(self, choice: ToolChoice) -> Any:
        if isinstance(choice, SpecificTool):
            return {"type": "tool", "name": choice.name}
        return {"type": "any" if choice == "required" else choice}

    def build_params(self, request: PromptRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self._model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": format_anthropic_messages(request.messages, cache=self.cache),
        }
        system = system_blocks(self._system, cache=self.cache)
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = [_tool(t) for t in request.tools]
        return params

    def sdk_create(self) -> Any:
        return self._client.messages.create

    async def call(self, params: dict[str, Any]) -> Any:
        return cast(Any, await self._client.messages.create(**params))

    def response(self, raw: Any) -> ModelResponse:
        message = raw
        text: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[ReasoningBlock] = []
        for block in message.content:
            kind = getattr(block, "type", "")
            if kind == "text":
                text.append(block.text)
            elif kind == "tool_use":
                calls.append(ToolCall(tool_name=block.name, input_args=block.input, id=block.id))
            elif kind == "thinking":
                reasoning.append(ReasoningBlock(text=block.thinking, signature=block.signature))
            elif kind == "redacted_thinking":
                reasoning.append(ReasoningBlock(redacted_data=block.data))
        return ModelResponse(
            text="".join(text),
            tool_calls=tuple(calls),
            tokens=_tokens(message.usage),
            stop_reason=message.stop_reason,
            model=getattr(message, "model", None) or self._model,
            reasoning=tuple(reasoning),
            streamed=False,
        )

    async def streamed(self, params: dict[str, Any], notify: NotifyFn) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[ReasoningBlock] = []
        blocks: dict[int, dict[str, Any]] = {}
        usage_in: Any = None
        output_tokens = 0
        stop_reason: str | None = None
        model = self._model
        stream: Any = await self._client.messages.create(**params, stream=True)
        async with stream:
            async for event in stream:
                kind = event.type
                if kind == "message_start":
                    usage_in = event.message.usage
                    output_tokens = getattr(usage_in, "output_tokens", 0) or 0
                    model = event.message.model or model
                elif kind == "content_block_start":
                    block = event.content_block
                    blocks[event.index] = {
                        "type": block.type,
                        "id": getattr(block, "id", ""),
                        "name": getattr(block, "name", ""),
                        "json": [],
                        "thinking": [],
                        "signature": None,
                        "data": getattr(block, "data", None),
                    }
                elif kind == "content_block_delta":
                    delta = event.delta
                    state = blocks.get(event.index)
                    if delta.type == "text_delta":
                        text.append(delta.text)
                        await notify(TextDeltaEvent(delta.text))
                    elif delta.type == "input_json_delta" and state is not None:
                        state["json"].append(delta.partial_json)
                    elif delta.type == "thinking_delta" and state is not None:
                        state["thinking"].append(delta.thinking)
                        await notify(TextDeltaEvent(delta.thinking, "reasoning"))
                    elif delta.type == "signature_delta" and state is not None:
                        state["signature"] = delta.signature
                elif kind == "content_block_stop":
                    state = blocks.pop(event.index, None)
                    if state is None:
                        continue
                    if state["type"] == "tool_use":
                        call = parse_arguments(state["name"], "".join(state["json"]), state["id"])
                        calls.append(call)
                        await notify(ToolUseEvent(call.id, call.tool_name, call.input_args))
                    elif state["type"] == "thinking":
                        reasoning.append(
                            ReasoningBlock(
                                text="".join(state["thinking"]), signature=state["signature"]
                            )
                        )
                    elif state["type"] == "redacted_thinking":
                        reasoning.append(ReasoningBlock(redacted_data=state["data"]))
                elif kind == "message_delta":
                    stop_reason = event.delta.stop_reason or stop_reason
                    if event.usage is not None:
                        output_tokens = event.usage.output_tokens or output_tokens
        tokens = _tokens(usage_in, output_tokens)
        return ModelResponse(
            text="".join(text),
            tool_calls=tuple(calls),
            tokens=tokens,
            stop_reason=stop_reason,
            model=model,
            reasoning=tuple(reasoning),
            streamed=True,
        )


def _tokens(usage: Any, output_tokens: int | None = None) -> TokenCounter:
    if usage is None:
        return TokenCounter(tokens_out=output_tokens or 0)
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    write = getattr(usage, "cache_creation_input_tokens", None) or 0
    base = getattr(usage, "input_tokens", 0) or 0
    out = output_tokens if output_tokens is not None else getattr(usage, "output_tokens", 0) or 0
    return TokenCounter(
        tokens_in=base + read + write,
        tokens_out=out,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=write,
    )


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


def system_blocks(system: SystemPrompt, *, cache: bool) -> list[dict[str, Any]]:
    """The system prompt as blocks; a tiered prompt is cut at its cache breakpoints."""
    if isinstance(system, str):
        return [{"type": "text", "text": system}] if system else []
    return _tiered_blocks(system, cache)


def _tiered_blocks(prompt: AssembledPrompt, cache: bool) -> list[dict[str, Any]]:
    raw = prompt.prompt.encode("utf-8", "surrogatepass")
    blocks: list[dict[str, Any]] = []
    start = 0
    for bp in prompt.cache_breakpoints:
        if bp.offset <= start:
            continue
        piece = raw[start : bp.offset].decode("utf-8", "surrogatepass")
        block: dict[str, Any] = {"type": "text", "text": piece}
        if cache and piece.strip():
            block["cache_control"] = dict(_EPHEMERAL)
        blocks.append(block)
        start = bp.offset
    rest = raw[start:].decode("utf-8", "surrogatepass")
    if rest.strip():
        blocks.append({"type": "text", "text": rest})
    return [b for b in blocks if b["text"].strip()]


def _content_blocks(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        src = part.source
        if part.type == "text":
            if part.text:
                block: dict[str, Any] = {"type": "text", "text": part.text}
                if part.cache and part.text.strip():
                    block["cache_control"] = dict(_EPHEMERAL)
                out.append(block)
        elif part.type in ("image", "document") and src is not None:
            source: dict[str, Any] = (
                {"type": "url", "url": src.url}
                if src.type == "url"
                else {"type": "base64", "media_type": src.media_type, "data": src.data}
            )
            out.append({"type": part.type, "source": source})
        else:
            out.append({"type": "text", "text": f"[{part.type} attachment not supported]"})
    return out


def _blocks(msg: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if msg.sender == "agent":
        for r in msg.reasoning or ():
            if r.redacted_data is not None:
                blocks.append({"type": "redacted_thinking", "data": r.redacted_data})
            elif r.signature:
                blocks.append({"type": "thinking", "thinking": r.text, "signature": r.signature})
        if msg.text:
            blocks.append({"type": "text", "text": msg.text})
        for call in msg.tool_calls or ():
            args = _json_object(call)
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.tool_name, "input": args}
            )
        return blocks
    if msg.tool_results:
        for res in msg.tool_results:
            # render_data is deliberately never sent: only status, data and message are.
            text = format_tool_result_content(res.result)
            content: Any = text
            if res.result.content:
                content = _content_blocks(res.result.content) or text
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": res.call_id}
            block["content"] = content
            if res.result.is_error:
                block["is_error"] = True
            blocks.append(block)
        return blocks
    if msg.content:
        return _content_blocks(msg.content)
    return [{"type": "text", "text": msg.text}] if msg.text else []


def _json_object(call: ToolCall) -> dict[str, Any]:
    value: object = call.input_args
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def format_anthropic_messages(
    messages: Sequence[Message], *, cache: bool = False
) -> list[dict[str, Any]]:
    """Neutral history → Messages API ``messages`` (repaired, merged, optionally cache-marked)."""
    out: list[dict[str, Any]] = []
    for msg in repair_history(messages):
        blocks = _blocks(msg)
        if not blocks:
            continue
        role = "assistant" if msg.sender == "agent" else "user"
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if cache and out:
        last = out[-1]["content"][-1]
        if last.get("type") not in ("thinking", "redacted_thinking"):
            last["cache_control"] = dict(_EPHEMERAL)
    return out
