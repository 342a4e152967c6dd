"""One agent run: :class:`AgentRequest` (Anvia's single-use ``PromptRequest``) on the native loop.

``agent.prompt(x)`` makes a request; ``max_turns(n)`` configures it; ``send()`` runs it to a
:class:`PromptResponse`, ``stream()`` runs it while yielding the agent stream events
(:mod:`.events`). A request runs once: a second ``send``/``stream`` raises.

The run is the Glove loop (:class:`adapters.native.loop.Agent`) over a per-run store that starts
with the stateless history (or the session's stored history) and whose ``append_messages`` is
the choke point where the run's new messages are collected and the session's save policy is
applied; a per-run executor runs the agent's tools. So a run has every guarantee of the native
loop: model retries, an exact turn cap, cancellation that closes every open tool call with a
result at cancel time, typed tool errors with ``is_error``.

Outcomes: completed → the response; the turn cap reached → :class:`MaxTurnsError` (``send``) or
``done{max_turns}`` (``stream``); :meth:`AgentRequest.cancel` (or closing the stream early) →
:class:`PromptCancelledError` or ``done{cancelled}``; any other failure propagates (``send``) or
ends the stream with ``error`` then ``done{error}``. Whatever the failure, a session run records
it with ``record_error``.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeAlias

import attrs
import trio

from adapters.native.cancel import CancelToken
from adapters.native.compaction import CompactionConfig
from adapters.native.executor import Executor
from adapters.native.lifecycle import LifecycleHooks, ModelMiddleware
from adapters.native.loop import Agent as Loop
from adapters.native.loop import LoopConfig
from adapters.native.messages import Message, TokenCounter, ToolCall, format_tool_result_content
from adapters.native.stores.memory import MemoryStore
from adapters.native.subscriber import (
    ModelResponseEvent,
    SubscriberEvent,
    TextDeltaEvent,
    ToolUseEvent,
    ToolUseResult,
    TurnStart,
)
from orchestrator.core.approvals import ApprovalHandler
from orchestrator.core.errors import (
    AgentOptionsError,
    MaxTurnsError,
    PromptCancelledError,
    single_exception,
)

from .events import (
    AgentDone,
    AgentError,
    AgentFinal,
    AgentReasoningDelta,
    AgentStreamEvent,
    AgentTextDelta,
    AgentToolCall,
    AgentToolResult,
    AgentTurnEnd,
    AgentTurnStart,
)
from .memory import MemoryWriter

if TYPE_CHECKING:
    from .agent import AgentSession, AnviaAgent

__all__ = ["MAX_AGENT_DEPTH", "AgentRequest", "PromptResponse", "RequestState"]

RequestState: TypeAlias = Literal["idle", "running", "completed", "errored", "cancelled"]
MAX_AGENT_DEPTH = 8
"""Agents called as tools nest at most this deep (C#28)."""
STREAM_BUFFER = 64
RECORD_GRACE_S = 5.0


@attrs.frozen
class PromptResponse:
    """A completed run: the final answer's text, the usage of every model call, and the run's
    new messages (not the prior history)."""

    output: str
    usage: TokenCounter
    messages: tuple[Message, ...]
    run_id: str
    structured: Any = None
    """The validated answer when the agent has an ``output_schema`` (an instance of the pydantic
    model, or the JSON value), else ``None``."""


def validate_max_turns(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AgentOptionsError(f"max_turns must be a non-negative integer, got {value!r}")
    return value


class AgentRequest:
    """A single-use run of an agent (see the module docstring)."""

    def __init__(
        self,
        agent: AnviaAgent,
        prompt: Message,
        history: Sequence[Message] = (),
        session: AgentSession | None = None,
    ) -> None:
        self._agent = agent
        self._prompt = prompt
        self._history = tuple(history)
        self._session = session
        self._max_turns = agent.default_max_turns
        self._state: RequestState = "idle"
        self._token = CancelToken()
        self._cancel_reason: str | None = None
        self._steers: list[str] = []
        self._approvals: ApprovalHandler | None = None
        self._hooks: tuple[LifecycleHooks, ...] = agent.hooks
        self._middlewares: tuple[ModelMiddleware, ...] = agent.middlewares
        self._loop: Loop | None = None
        self._run_id = ""
        self._usage = TokenCounter()
        self.depth = 0
        """How deep this run is nested in agents called as tools."""

    @property
    def state(self) -> RequestState:
        return self._state

    @property
    def prompt(self) -> Message:
        return self._prompt

    @property
    def usage(self) -> TokenCounter:
        """Every model call of the run so far, agents called as tools included (set when the
        run ends)."""
        return self._usage

    def max_turns(self, max_turns: int) -> Self:
        """At most ``max_turns`` model calls (exact; Anvia allows ``max_turns + 2``)."""
        self._max_turns = validate_max_turns(max_turns)
        return self

    def approvals(self, handler: ApprovalHandler) -> Self:
        """Decide this request's tool approvals with ``handler`` (overrides the agent's)."""
        self._approvals = handler
        return self

    def with_hook(self, hook: LifecycleHooks) -> Self:
        """This request's lifecycle hook, replacing the agent's (Anvia's ``withHook``)."""
        self._hooks = (hook,)
        return self

    def with_middleware(self, middleware: ModelMiddleware) -> Self:
        """One more model-call middleware, after the agent's and earlier ones."""
        self._middlewares = (*self._middlewares, middleware)
        return self

    def with_middlewares(self, middlewares: Sequence[ModelMiddleware]) -> Self:
        self._middlewares = (*self._middlewares, *middlewares)
        return self

    def cancel(self, reason: str = "cancelled") -> None:
        """Cancel the run (from inside trio); it ends with :class:`PromptCancelledError`."""
        if self._cancel_reason is None:
            self._cancel_reason = reason
        self._token.cancel()

    def steer(self, text: str) -> bool:
        """Queue user text for the running request (applied at the next turn boundary, FIFO);
        False once the request is over."""
        if self._state in ("completed", "errored", "cancelled"):
            return False
        if self._loop is not None:
            self._loop.steer(text)
        else:
            self._steers.append(text)
        return True

    async def send(self) -> PromptResponse:
        """Run to the end (see the module docstring for the errors)."""
        return await self._execute(None)

    @asynccontextmanager
    async def stream(self) -> AsyncGenerator[AsyncIterator[AgentStreamEvent]]:
        """``async with request.stream() as events: async for event in events: ...``.

        Leaving the block before ``done`` cancels the run (it still closes every open tool call).
        """
        send, receive = trio.open_memory_channel[AgentStreamEvent](STREAM_BUFFER)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._stream_into, send)
                try:
                    yield _Batched(receive)
                finally:
                    if self._state in ("idle", "running"):
                        self.cancel("stream closed")
                    await receive.aclose()
        except BaseExceptionGroup as group:
            one = single_exception(group)  # the caller's own error, not wrapped in our group
            if one is not None:
                raise one from None
            raise

    async def _stream_into(self, send: trio.MemorySendChannel[AgentStreamEvent]) -> None:
        async def emit(event: AgentStreamEvent) -> None:
            # the consumer may have left: the run is being cancelled then
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                try:
                    send.send_nowait(event)  # no scheduling round per event (the loop has its own)
                except trio.WouldBlock:
                    await send.send(event)  # the consumer lags: backpressure

        run_id = ""
        async with send:
            try:
                response = await self._execute(emit)
                run_id = response.run_id
                final = AgentFinal(
                    run_id, response.output, response.usage, response.messages, response.structured
                )
                await emit(final)
                await emit(AgentDone(run_id, "completed"))
            except MaxTurnsError as exc:
                await emit(AgentDone(self._run_id, "max_turns", max_turns=exc.max_turns))
            except PromptCancelledError as exc:
                await emit(AgentDone(self._run_id, "cancelled", cancel_reason=exc.reason))
            except Exception as exc:
                await emit(AgentError(exc, self._usage))
                await emit(AgentDone(self._run_id, "error"))

    # -- the run -------------------------------------------------------------------------------

    async def _execute(self, emit: _Emit | None) -> PromptResponse:
        if self._state != "idle":
            raise AgentOptionsError(
                "this request has already been used; make a new one with agent.prompt(...)"
            )
        self._state = "running"
        if self._session is None:
            return await self._run(emit, self._history)
        async with self._session.active() as stored:
            return await self._run(emit, (*stored, *self._history))

    async def _run(self, emit: _Emit | None, history: Sequence[Message]) -> PromptResponse:
        run = _Run(self, emit, history)
        self._run_id = run.run_id
        writer = run.writer
        try:
            async with self._agent.connected(run.executor.register):
                result = await run.ask()
        except BaseException as exc:
            self._state = "cancelled" if isinstance(exc, trio.Cancelled) else "errored"
            if writer is not None:
                with trio.move_on_after(RECORD_GRACE_S, shield=True):
                    await writer.failed(exc)
            raise
        self._usage = result.usage + run.child_usage
        error: MaxTurnsError | PromptCancelledError | None = None
        if result.stop == "max_turns":
            error = MaxTurnsError(self._max_turns, run.chat_history(), self._prompt)
        elif result.stop == "aborted":
            reason = result.cancel_reason or self._cancel_reason or "cancelled"
            error = PromptCancelledError(reason, run.chat_history())
        if error is not None:
            self._state = "cancelled" if isinstance(error, PromptCancelledError) else "errored"
            if writer is not None:
                with trio.move_on_after(RECORD_GRACE_S, shield=True):
                    await writer.failed(error)
            raise error
        if writer is not None:
            await writer.completed()
        self._state = "completed"
        output = result.response.text if result.response is not None else ""
        return PromptResponse(
            output, self._usage, tuple(run.new_messages), run.run_id, result.output
        )


class _Batched:
    """The stream's events: what is buffered is handed over without a scheduling round per
    event (the producer and the consumer each yield once per batch, not once per event)."""

    def __init__(self, receive: trio.MemoryReceiveChannel[AgentStreamEvent]) -> None:
        self._receive = receive

    def __aiter__(self) -> _Batched:
        return self

    async def __anext__(self) -> AgentStreamEvent:
        try:
            return self._receive.receive_nowait()
        except trio.WouldBlock:
            pass
        except trio.EndOfChannel:
            raise StopAsyncIteration from None
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None


class _Emit(Protocol):
    async def __call__(self, event: AgentStreamEvent) -> None: ...


class _RunStore(MemoryStore):
    """The run's store: the history, then every new message through :meth:`_Run.appended`."""

    def __init__(self, run: _Run, history: Sequence[Message]) -> None:
        super().__init__(f"anvia-{run.run_id}")
        self._messages.extend(history)
        self._run = run

    async def append_messages(self, messages: Sequence[Message]) -> None:
        await super().append_messages(messages)
        await self._run.appended(messages)


class _Run:
    """The per-run state: store, executor, loop, and the subscriber-to-stream translation."""

    def __init__(
        self, request: AgentRequest, emit: _Emit | None, history: Sequence[Message]
    ) -> None:
        agent = request._agent  # pyright: ignore[reportPrivateUsage]
        self.request = request
        self.agent = agent
        self.run_id = uuid.uuid4().hex
        self.emit = emit
        self.turn = 0
        self.depth = request.depth
        self.new_messages: list[Message] = []
        self.child_usage = TokenCounter()
        """Usage of agents called as tools during this run (rolled into the run's, C#28)."""
        self._internal_ids: dict[str, str] = {}
        self._args: dict[str, str] = {}
        session = request._session  # pyright: ignore[reportPrivateUsage]
        self.writer: MemoryWriter | None = None
        if session is not None:
            assert agent.memory is not None
            self.writer = MemoryWriter(
                agent.memory, session.context, self.run_id, agent.save_policy
            )
        self.store = _RunStore(self, history)
        handler = request._approvals or agent.approvals  # pyright: ignore[reportPrivateUsage]
        self.executor = executor = Executor(
            self.store, self.notify, permission_handler=handler, max_retries=0
        )  # Anvia runs a tool once
        for tool in agent.run_tools():
            executor.register(tool)
        executor.context_extras = {"run": self}
        config = LoopConfig(
            compaction=CompactionConfig(max_turns=None, compaction_context_limit=None),
            max_model_calls=request._max_turns,  # pyright: ignore[reportPrivateUsage]
            max_tokens=agent.max_tokens,
            model_options=agent.model_options,
            hooks=request._hooks,  # pyright: ignore[reportPrivateUsage]
            middlewares=request._middlewares,  # pyright: ignore[reportPrivateUsage]
            output_schema=agent.output_schema,
            output_retries=agent.output_retries,
        )
        self.loop = Loop(self.store, executor, self.notify, agent.bound_model, config)
        self.loop.prepare_turn = agent.turn_preparer(executor.register)
        for text in request._steers:  # pyright: ignore[reportPrivateUsage]
            self.loop.steer(text)
        request._loop = self.loop  # pyright: ignore[reportPrivateUsage]

    @property
    def streaming(self) -> bool:
        return self.emit is not None

    async def ask(self) -> Any:
        request = self.request
        return await self.loop.run_request(request.prompt, request._token)  # pyright: ignore[reportPrivateUsage]

    def chat_history(self) -> list[Message]:
        return list(self.store._messages)  # pyright: ignore[reportPrivateUsage]

    async def appended(self, messages: Sequence[Message]) -> None:
        self.new_messages.extend(messages)
        if self.writer is not None:
            await self.writer.appended(messages)

    def internal_call_id(self, call_id: str) -> str:
        known = self._internal_ids.get(call_id)
        if known is None:
            known = self._internal_ids[call_id] = uuid.uuid4().hex
        return known

    async def notify(self, event: SubscriberEvent) -> None:
        emit = self.emit
        if emit is None:
            return
        if isinstance(event, TurnStart):
            self.turn = event.turn
            messages = self.store._messages  # pyright: ignore[reportPrivateUsage]
            prompt = messages[-1] if messages else self.request.prompt
            await emit(AgentTurnStart(event.turn, prompt, tuple(messages[:-1])))
        elif isinstance(event, TextDeltaEvent):
            if event.channel == "reasoning":
                await emit(AgentReasoningDelta(self.turn, event.text))
            else:
                await emit(AgentTextDelta(self.turn, event.text))
        elif isinstance(event, ToolUseEvent):
            self._args[event.id] = _json(event.input)
            self.internal_call_id(event.id)
            call = ToolCall(tool_name=event.name, input_args=event.input, id=event.id)
            await emit(AgentToolCall(self.turn, call))
        elif isinstance(event, ModelResponseEvent):
            await emit(
                AgentTurnEnd(
                    self.turn, event.text, event.tool_calls, event.stop_reason, event.tokens
                )
            )
        elif isinstance(event, ToolUseResult):
            await emit(
                AgentToolResult(
                    self.turn,
                    event.tool_name,
                    event.call_id,
                    self.internal_call_id(event.call_id),
                    self._args.get(event.call_id, "{}"),
                    format_tool_result_content(event.result),
                    event.result.is_error,
                )
            )


def _json(value: Any) -> str:
    try:
        return json.dumps({} if value is None else value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
