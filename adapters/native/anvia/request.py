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

Configuration per request: ``max_turns``, ``approvals``, ``with_hook``, ``with_middleware(s)``,
``with_tool_concurrency(n)`` (up to ``n`` of a turn's tool calls run at once; default one at a
time, or concurrently for tools marked ``parallel_safe``), ``with_trace(options)``
(:mod:`.observe`). ``AgentRequest.from_agent(agent, prompt)`` is ``agent.prompt(prompt)``.
``readable_stream(nursery)`` starts the run in ``nursery`` and gives its events as a receive
channel (closing it early cancels the run). Streaming needs a model that can stream: ``stream()``
and ``readable_stream()`` on a model made with ``stream=False`` raise
:class:`~orchestrator.core.errors.AgentOptionsError` (Anvia throws an ``Error``), before anything
runs. Every run's events also reach the agent's observers and event store (:mod:`.observe`).

Outcomes: completed → the response; the turn cap reached → :class:`MaxTurnsError` (``send``) or
``done{max_turns}`` (``stream``); :meth:`AgentRequest.cancel` (or closing the stream early) →
:class:`PromptCancelledError` or ``done{cancelled}``; any other failure propagates (``send``) or
ends the stream with ``error`` then ``done{error}``. Whatever the failure, a session run records
it with ``record_error``.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeAlias, cast

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
    AgentToolEvent,
    AgentToolResult,
    AgentTurnEnd,
    AgentTurnStart,
)
from .memory import MemoryWriter
from .observe import AgentEventRecord, AgentTraceInfo, AgentTraceOptions

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
    trace: AgentTraceInfo | None = None
    """Set when the request was made ``with_trace``."""


def can_stream(model: object) -> bool:
    """False for a model adapter that was made not to stream (``stream=False``)."""
    return getattr(model, "stream", True) is not False


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
        self._tool_concurrency: int | None = None
        self._trace: AgentTraceOptions | None = None
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

    @classmethod
    def from_agent(
        cls, agent: AnviaAgent, prompt: str | Message | Sequence[Message]
    ) -> AgentRequest:
        """Anvia's ``PromptRequest.fromAgent``: the same as ``agent.prompt(prompt)``."""
        return agent.prompt(prompt)

    def with_tool_concurrency(self, concurrency: int) -> Self:
        """Run up to ``concurrency`` of a turn's tool calls at once (results keep call order)."""
        value = cast(object, concurrency)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise AgentOptionsError(
                f"tool concurrency must be a positive integer, got {concurrency!r}"
            )
        self._tool_concurrency = concurrency
        return self

    def with_trace(self, trace: AgentTraceOptions | None = None) -> Self:
        """Trace this run: its response and ``final`` event carry an ``AgentTraceInfo``."""
        self._trace = trace or AgentTraceOptions()
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
        observers = self._observers(None)
        if observers is None:
            return await self._execute(None)
        return await self._drive(observers)

    def _check_streaming(self) -> None:
        model = self._agent.model
        if not can_stream(model):
            raise AgentOptionsError(
                f"model {model.name} cannot stream (it was made with stream=False); "
                "use send(), or a streaming model"
            )

    def readable_stream(
        self, nursery: trio.Nursery, *, max_buffer: int = STREAM_BUFFER
    ) -> trio.MemoryReceiveChannel[AgentStreamEvent]:
        """Anvia's ``readableStream``: start the run in ``nursery`` and return its events as a
        channel that ends after ``done``; closing the channel before that cancels the run."""
        self._check_streaming()
        send, receive = trio.open_memory_channel[AgentStreamEvent](max_buffer)
        nursery.start_soon(self._stream_into, send)
        return receive

    @asynccontextmanager
    async def stream(self) -> AsyncGenerator[AsyncIterator[AgentStreamEvent]]:
        """``async with request.stream() as events: async for event in events: ...``.

        Leaving the block before ``done`` cancels the run (it still closes every open tool call).
        """
        self._check_streaming()
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
        closed = False

        async def emit(event: AgentStreamEvent) -> None:
            nonlocal closed
            # the consumer may have left: the run is being cancelled then
            try:
                send.send_nowait(event)  # no scheduling round per event (the loop has its own)
            except trio.WouldBlock:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await send.send(event)  # the consumer lags: backpressure
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                if not closed and self._state in ("idle", "running"):
                    closed = True
                    self.cancel("stream closed")  # a readable stream closed by its reader

        async with send:
            with contextlib.suppress(Exception):  # every outcome is in the stream already
                await self._drive(self._observers(emit) or emit, streaming=True)

    def _observers(self, consumer: _Emit | None) -> _Emit | None:
        """The run's event sink: the consumer (a stream), then the agent's observers and event
        store as records; ``None`` when there is nobody to tell."""
        agent = self._agent
        if not agent.observed:
            return consumer
        store, include = agent.event_store, agent.event_store_include

        async def fan_out(event: AgentStreamEvent) -> None:
            if consumer is not None:
                await consumer(event)
            record = _record(self._run_id, agent, event)
            for registration in agent.observers:
                await registration.deliver(record)
            if store is not None and (include == "all" or record.nested):
                await store.append(record)

        return fan_out

    async def _drive(self, emit: _Emit, *, streaming: bool = False) -> PromptResponse:
        """Run with ``emit`` told every event, the terminal ones included (``final`` then
        ``done``, or ``error``/``done``); the outcome is returned or raised as by ``send``."""
        try:
            response = await self._execute(emit, streaming=streaming)
        except MaxTurnsError as exc:
            await emit(AgentDone(self._run_id, "max_turns", max_turns=exc.max_turns))
            raise
        except PromptCancelledError as exc:
            await emit(AgentDone(self._run_id, "cancelled", cancel_reason=exc.reason))
            raise
        except Exception as exc:
            await emit(AgentError(exc, self._usage))
            await emit(AgentDone(self._run_id, "error"))
            raise
        final = AgentFinal(
            response.run_id,
            response.output,
            response.usage,
            response.messages,
            response.structured,
            response.trace,
        )
        await emit(final)
        await emit(AgentDone(response.run_id, "completed"))
        return response

    # -- the run -------------------------------------------------------------------------------

    async def _execute(self, emit: _Emit | None, *, streaming: bool = False) -> PromptResponse:
        if self._state != "idle":
            raise AgentOptionsError(
                "this request has already been used; make a new one with agent.prompt(...)"
            )
        self._state = "running"
        if self._session is None:
            return await self._run(emit, self._history, streaming)
        async with self._session.active() as stored:
            return await self._run(emit, (*stored, *self._history), streaming)

    async def _run(
        self, emit: _Emit | None, history: Sequence[Message], streaming: bool = False
    ) -> PromptResponse:
        started = time.time()
        run = _Run(self, emit, history, streaming)
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
        trace: AgentTraceInfo | None = None
        if self._trace is not None:
            trace = AgentTraceInfo(
                trace_id=self._trace.trace_id or uuid.uuid4().hex,
                span_id=run.run_id,
                agent_id=self._agent.id,
                name=self._trace.name,
                started_at=started,
                ended_at=time.time(),
                metadata=dict(self._trace.metadata),
            )
        return PromptResponse(
            output, self._usage, tuple(run.new_messages), run.run_id, result.output, trace
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
        self,
        request: AgentRequest,
        emit: _Emit | None,
        history: Sequence[Message],
        streaming: bool = False,
    ) -> None:
        agent = request._agent  # pyright: ignore[reportPrivateUsage]
        self.request = request
        self.agent = agent
        self.run_id = uuid.uuid4().hex
        self.emit = emit
        self._streaming = streaming
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
        concurrency = request._tool_concurrency  # pyright: ignore[reportPrivateUsage]
        if concurrency is not None and concurrency > 1:
            executor.limiter = trio.CapacityLimiter(concurrency)
            executor.all_concurrent = True
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
        """A consumer reads this run's stream (child agents then forward their events)."""
        return self._streaming and self.emit is not None

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


def _record(run_id: str, agent: AnviaAgent, event: AgentStreamEvent) -> AgentEventRecord:
    """The stream event as an attributed record (a child's: the child agent and its call)."""
    if isinstance(event, AgentToolEvent):
        return AgentEventRecord(
            run_id,
            event.agent_id,
            event,
            agent_name=event.agent_name,
            turn=event.turn,
            tool_name=event.tool_name,
            tool_call_id=event.tool_call_id,
            internal_call_id=event.internal_call_id,
        )
    if isinstance(event, AgentToolResult):
        return AgentEventRecord(
            run_id,
            agent.id,
            event,
            agent_name=agent.name,
            turn=event.turn,
            tool_name=event.tool_name,
            tool_call_id=event.tool_call_id,
            internal_call_id=event.internal_call_id,
        )
    turn: Any = getattr(event, "turn", None)
    return AgentEventRecord(run_id, agent.id, event, agent_name=agent.name, turn=turn)
