"""``PromptMachine``: one model call — messages and tools in, the reply out, events to subscribers.

::

    pm = PromptMachine(model, Context(store), "You are a helpful assistant.")
    pm.add_subscriber(printer)
    response = await pm.run(messages, tools)  # text, tool calls, tokens

The loop (:class:`~.loop.Agent`) makes every model call through its prompt machine, so the retry
rule lives here: a call that fails with a transient error (429, 5xx, network) is retried with
full-jitter backoff (``Retry-After`` honoured) unless it already streamed something (C#43).
``run`` with a cancel token raises :class:`~orchestrator.core.errors.AbortError` when the token
fires during the call.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import trio

from orchestrator.core.errors import AbortError

from .cancel import CancelToken
from .context import Context
from .messages import Message
from .models.base import (
    ModelAdapter,
    ModelError,
    ModelOptions,
    ModelResponse,
    PromptRequest,
    SystemPrompt,
)
from .subscriber import (
    ModelResponseEvent,
    Notifier,
    NotifyFn,
    RetryEvent,
    Subscriber,
    SubscriberEvent,
    TextDeltaEvent,
    ToolUseEvent,
)
from .tools import ToolDefinition

__all__ = ["PromptMachine", "announce"]


class PromptMachine:
    """Prompts the current model (see the module docstring).

    ``model`` is a model adapter, or a function giving the current one (the loop passes its
    Glove's, so ``set_model`` reaches the next call). ``notify`` is where events go besides the
    subscribers added here (the Glove's fan-out)."""

    def __init__(
        self,
        model: ModelAdapter | Callable[[], ModelAdapter],
        ctx: Context | None = None,
        system_prompt: SystemPrompt | None = None,
        *,
        notify: NotifyFn | None = None,
        retries: int = 2,
        retry_base_s: float = 1.0,
        retry_max_s: float = 30.0,
        max_tokens: int | None = None,
    ) -> None:
        if isinstance(model, ModelAdapter):
            self._model: ModelAdapter | None = model
            self._get_model: Callable[[], ModelAdapter] | None = None
        else:
            self._model, self._get_model = None, model
        self.ctx = ctx
        self.retries = retries
        self.retry_base_s = retry_base_s
        self.retry_max_s = retry_max_s
        self.max_tokens = max_tokens
        self._upstream = notify
        self._subscribers = Notifier()
        if system_prompt is not None:
            self.model.set_system_prompt(system_prompt)

    @property
    def model(self) -> ModelAdapter:
        if self._model is not None:
            return self._model
        assert self._get_model is not None
        return self._get_model()

    def set_model(self, model: ModelAdapter) -> None:
        """Use ``model`` from the next call on (a machine built on a function keeps asking it
        unless a model is set here)."""
        self._model = model

    def add_subscriber(self, subscriber: Subscriber) -> None:
        """Receive this machine's model events (``text_delta``, ``tool_use``, ``model_response``
        / ``model_response_complete``, retries)."""
        self._subscribers.add(subscriber)

    def remove_subscriber(self, subscriber: Subscriber) -> None:
        self._subscribers.remove(subscriber)

    async def notify(self, event: SubscriberEvent) -> None:
        if self._upstream is not None:
            await self._upstream(event)
        await self._subscribers(event)

    async def run(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition] = (),
        cancel: CancelToken | None = None,
        *,
        options: ModelOptions | None = None,
    ) -> ModelResponse:
        """Prompt the model once (with the retry rule); its events go to the subscribers, then
        ``model_response`` (``model_response_complete`` after a stream)."""
        request = PromptRequest(
            messages=messages,
            tools=tools,
            max_tokens=self.max_tokens,
            options=options or ModelOptions(),
        )
        model = self.model
        if cancel is None:
            response = await self.send(request, model=model)
            await announce(response, model, self.notify)
            return response
        with cancel.scope() as scope:
            response = await self.send(request, model=model)
            await announce(response, model, self.notify)
            return response
        assert scope.cancelled_caught
        raise AbortError("Model call aborted")

    async def send(
        self,
        request: PromptRequest,
        notify: NotifyFn | None = None,
        model: ModelAdapter | None = None,
    ) -> ModelResponse:
        """One call of ``request`` with retries; the model's events go to ``notify`` (default:
        this machine's subscribers), retry notices always to the subscribers."""
        target = notify or self.notify
        model = model or self.model
        attempt = 0
        while True:
            progressed = False

            async def tracking(event: SubscriberEvent) -> None:
                nonlocal progressed
                if event.type in ("text_delta", "tool_use"):
                    progressed = True
                await target(event)

            try:
                return await model.prompt(request, tracking)
            except ModelError as err:
                if not err.transient or progressed or attempt >= self.retries:
                    raise
                attempt += 1
                if err.retry_after is not None:
                    delay = min(err.retry_after, self.retry_max_s)
                else:
                    delay = random.uniform(0, min(self.retry_max_s, self.retry_base_s * 2**attempt))
                await self.notify(RetryEvent(attempt, delay, f"{err.code}: {err}"))
                await trio.sleep(delay)


async def announce(response: ModelResponse, model: ModelAdapter, notify: NotifyFn) -> None:
    """After a call: a reply that was not streamed is told as one ``text_delta`` and its
    ``tool_use`` events, then ``model_response`` (or ``model_response_complete`` after a
    stream), as the seed's event contract says."""
    if not response.streamed:
        if response.text:
            await notify(TextDeltaEvent(response.text))
        for call in response.tool_calls:
            await notify(ToolUseEvent(call.id, call.tool_name, call.input_args))
    await notify(
        ModelResponseEvent(
            response.text,
            response.tool_calls,
            response.stop_reason,
            response.tokens,
            response.model or model.model,
            "model_response_complete" if response.streamed else "model_response",
        )
    )
