"""An in-process scripted model: the test double for the loop (C#54).

It replays *steps*; each :meth:`ScriptedModel.prompt` consumes steps until a terminal one:

* :class:`Reply` — the model's answer (text, tool calls, tokens, stop reason); terminal;
* :class:`Fail` — raise a :class:`~.base.ModelError` (fault injection: 429, 5xx …); terminal;
* :class:`Delta` — stream a text delta and keep going (the reply's text is the deltas + its own);
* :class:`Usage` — cumulative usage so far; the next terminal step reports the difference;
* :class:`Emit` — notify an arbitrary subscriber event (e.g. an unknown one);
* :class:`Sleep` — wait (use ``autojump_clock`` in tests);
* a callable ``(PromptRequest) -> Reply`` — answer from the request.

Every request is recorded in :attr:`ScriptedModel.requests`. When the script runs out the model
either answers ``exhausted_text`` (default) or, with ``wait=True``, waits for :meth:`push`
(the contract harness drives runs that way).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

import attrs
import trio

from adapters.native.messages import ReasoningBlock, TokenCounter, ToolCall
from adapters.native.subscriber import NotifyFn, SubscriberEvent, TextDeltaEvent, ToolUseEvent

from .base import ModelError, ModelOptions, ModelResponse, PromptRequest, SystemPrompt

__all__ = ["Delta", "Emit", "Fail", "Reply", "ScriptedModel", "Sleep", "Step", "Usage"]


@attrs.frozen
class Reply:
    text: str = ""
    tool_calls: Sequence[ToolCall | tuple[str, Any]] = ()
    tokens_in: int = 10
    tokens_out: int = 5
    cache_read: int = 0
    cache_write: int = 0
    stop_reason: str | None = None
    reasoning: str = ""


@attrs.frozen
class Fail:
    error: ModelError


@attrs.frozen
class Delta:
    text: str


@attrs.frozen
class Usage:
    input_tokens: int
    output_tokens: int


@attrs.frozen
class Emit:
    event: SubscriberEvent


@attrs.frozen
class Sleep:
    seconds: float


Step: TypeAlias = Reply | Fail | Delta | Usage | Emit | Sleep | Callable[[PromptRequest], Reply]


class ScriptedModel:
    """See the module docstring. ``stream`` picks streamed (deltas) or one-shot replies."""

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        model: str = "scripted-model",
        stream: bool = True,
        wait: bool = False,
        exhausted_text: str = "done",
        record: bool = True,
    ) -> None:
        self._steps: deque[Step] = deque(steps)
        self._model = model
        self.stream = stream
        self.wait = wait
        self.exhausted_text = exhausted_text
        self.record = record
        self.requests: list[PromptRequest] = []
        self.system_prompt: SystemPrompt = ""
        self._ids = itertools.count(1)
        self._arrived = trio.Event()
        self._reported = (0, 0)
        self._cumulative = (0, 0)

    @property
    def name(self) -> str:
        return f"scripted:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    def set_system_prompt(self, prompt: SystemPrompt) -> None:
        self.system_prompt = prompt

    def check_options(self, options: ModelOptions) -> None:
        """Every request option is accepted (and recorded with the request)."""
        del options

    def with_model(self, model: str) -> ScriptedModel:
        """Shares the script (and its queue) with the original."""
        clone = object.__new__(ScriptedModel)
        clone.__dict__.update(self.__dict__)
        clone._model = model
        return clone

    def push(self, *steps: Step) -> None:
        self._steps.extend(steps)
        self._arrived.set()

    @property
    def remaining(self) -> int:
        return len(self._steps)

    async def _next(self) -> Step | None:
        while not self._steps:
            if not self.wait:
                return None
            self._arrived = trio.Event()
            await self._arrived.wait()
        return self._steps.popleft()

    async def prompt(self, request: PromptRequest, notify: NotifyFn) -> ModelResponse:
        if self.record:
            self.requests.append(request)
        text: list[str] = []
        while True:
            step = await self._next()
            if step is None:
                return await self._reply(Reply(text=self.exhausted_text), text, notify)
            if isinstance(step, Delta):
                text.append(step.text)
                if self.stream:
                    await notify(TextDeltaEvent(step.text))
                else:
                    await trio.lowlevel.checkpoint()
            elif isinstance(step, Usage):
                self._cumulative = (step.input_tokens, step.output_tokens)
            elif isinstance(step, Emit):
                await notify(step.event)
            elif isinstance(step, Sleep):
                await trio.sleep(step.seconds)
            elif isinstance(step, Fail):
                await trio.lowlevel.checkpoint()
                raise step.error
            elif isinstance(step, Reply):
                return await self._reply(step, text, notify)
            else:
                return await self._reply(step(request), text, notify)

    async def _reply(self, step: Reply, before: list[str], notify: NotifyFn) -> ModelResponse:
        calls = tuple(
            c
            if isinstance(c, ToolCall) and c.id
            else ToolCall(
                tool_name=c.tool_name if isinstance(c, ToolCall) else c[0],
                input_args=c.input_args if isinstance(c, ToolCall) else c[1],
                id=f"call_{next(self._ids)}",
                parse_error=c.parse_error if isinstance(c, ToolCall) else None,
            )
            for c in step.tool_calls
        )
        if self.stream:
            if step.reasoning:
                await notify(TextDeltaEvent(step.reasoning, "reasoning"))
            if step.text:
                await notify(TextDeltaEvent(step.text))
            for c in calls:
                await notify(ToolUseEvent(c.id, c.tool_name, c.input_args))
        tokens_in, tokens_out = step.tokens_in, step.tokens_out
        if self._cumulative != self._reported:
            tokens_in = self._cumulative[0] - self._reported[0]
            tokens_out = self._cumulative[1] - self._reported[1]
            self._reported = self._cumulative
        return ModelResponse(
            text="".join(before) + step.text,
            tool_calls=calls,
            tokens=TokenCounter(
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cache_read_input_tokens=step.cache_read,
                cache_creation_input_tokens=step.cache_write,
            ),
            stop_reason=step.stop_reason or ("tool_use" if calls else "end_turn"),
            model=self._model,
            reasoning=(ReasoningBlock(text=step.reasoning),) if step.reasoning else (),
            streamed=self.stream,
        )
