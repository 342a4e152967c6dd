"""The model-adapter protocol, its request/response shapes, and the normalized model error.

A model adapter turns a :class:`PromptRequest` into one :class:`ModelResponse`. While it works it
may ``notify`` subscribers: ``text_delta`` per chunk and ``tool_use`` per completed call when
streaming, then ``model_response_complete`` (or one ``model_response`` when not streaming). The
loop emits the deltas and tool uses itself for non-streamed replies, so UIs see the same events
either way. Cancellation is trio's: the adapter's call is cancelled with the run.

Errors are normalized to :class:`ModelError` with a ``code`` (auth, rate_limit, overloaded,
bad_request, context_overflow, network, unknown) the loop's retry policy and the runtime adapter
understand; messages are redacted and never include a key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import attrs

from adapters.native.messages import Message, ReasoningBlock, TokenCounter, ToolCall
from adapters.native.subscriber import NotifyFn
from adapters.native.tools import ToolDefinition
from orchestrator.core.errors import redact_secrets
from tiers import AssembledPrompt

__all__ = [
    "ModelAdapter",
    "ModelError",
    "ModelErrorCode",
    "ModelOptions",
    "ModelResponse",
    "PromptRequest",
    "SpecificTool",
    "SystemPrompt",
    "ToolChoice",
    "classify_status",
]

ModelErrorCode: TypeAlias = Literal[
    "auth",
    "rate_limit",
    "overloaded",
    "bad_request",
    "context_overflow",
    "network",
    "unreachable",
    "unknown",
]
"""``unreachable``: connection refused by a loopback address (nothing listens on this machine;
not retried). ``network``: any other connection failure (retried)."""
SystemPrompt: TypeAlias = str | AssembledPrompt

_TRANSIENT = frozenset({"rate_limit", "overloaded", "network"})


class ModelError(Exception):
    """A failed model call (picklable; ``retry_after`` in seconds when the provider said)."""

    def __init__(
        self,
        message: str,
        code: ModelErrorCode = "unknown",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(redact_secrets(message), code, status, retry_after)
        self.code: ModelErrorCode = code
        self.status = status
        self.retry_after = retry_after

    def __str__(self) -> str:
        return str(self.args[0])

    @property
    def transient(self) -> bool:
        return self.code in _TRANSIENT


_OVERFLOW = re.compile(
    r"context (overflow|length|window|limit)|prompt (is )?too (large|long)|maximum context"
    r"|exceeds? .{0,40}context|too many tokens|reduce the length",
    re.IGNORECASE,
)


def classify_status(status: int | None, message: str = "") -> ModelErrorCode:
    """HTTP status (and message) → code, like the original executor's router."""
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    if status is not None and (status == 529 or status >= 500):
        return "overloaded"
    if _OVERFLOW.search(message):
        return "context_overflow"
    if status in (400, 404, 409, 413, 422):
        return "bad_request"
    return "unknown"


@attrs.frozen
class SpecificTool:
    """``tool_choice`` that forces one named tool."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | SpecificTool


@attrs.frozen
class ModelOptions:
    """Per-request sampling options a model adapter may accept (the Anvia agent's
    ``temperature``, ``tool_choice`` and ``additional_params``). An adapter that accepts them
    has ``check_options(options)``, which raises :class:`~orchestrator.core.errors.ConfigError` for
    what it cannot send; an adapter without it accepts none."""

    temperature: float | None = None
    tool_choice: ToolChoice | None = None
    additional_params: Mapping[str, Any] | None = None
    """Merged into the provider's request body as they are (``extra_body``)."""

    def set_names(self) -> list[str]:
        """The options that are set, by name."""
        return [
            name
            for name in ("temperature", "tool_choice", "additional_params")
            if getattr(self, name) is not None
        ]


_NO_OPTIONS = ModelOptions()


@attrs.frozen
class PromptRequest:
    messages: Sequence[Message]
    tools: Sequence[ToolDefinition] = ()
    max_tokens: int | None = None
    options: ModelOptions = _NO_OPTIONS


@attrs.frozen
class ModelResponse:
    """One model call's outcome (Glove's ``ModelPromptResult`` plus the stop reason)."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    tokens: TokenCounter = attrs.field(factory=TokenCounter)
    stop_reason: str | None = None
    model: str = ""
    reasoning: tuple[ReasoningBlock, ...] = ()
    streamed: bool = False
    """True when the adapter already notified text deltas and tool uses."""

    def to_message(self) -> Message:
        return Message(
            sender="agent",
            text=self.text,
            tool_calls=self.tool_calls or None,
            reasoning=self.reasoning or None,
            stop_reason=self.stop_reason,
        )


@runtime_checkable
class ModelAdapter(Protocol):
    @property
    def name(self) -> str:
        """``provider:model``."""
        ...

    @property
    def model(self) -> str: ...

    def set_system_prompt(self, prompt: SystemPrompt) -> None: ...
    def with_model(self, model: str) -> ModelAdapter:
        """The same provider, client and system prompt, another model."""
        ...

    async def prompt(self, request: PromptRequest, notify: NotifyFn) -> ModelResponse: ...
