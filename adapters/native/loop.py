"""``Agent.ask``: the loop — prompt → tool calls → execute → feed results → repeat.

One request, in order:

1. resolved inbox items are injected as one persisted user message (and marked consumed); a
   transient reminder of blocking pending items is spliced before the last message on every call;
2. compaction is considered (a turn boundary), then the user message is appended;
3. each turn: pending steers are appended as user messages (FIFO, ``steer_applied``); the turn cap
   is checked (an exact cap of ``max_model_calls`` model calls, the final answer included); the model is
   called on the context view with a per-turn snapshot of the tool list; the reply is stored and
   its usage counted; a reply without tool calls ends the request — unless a steer arrived while
   it was being generated, in which case the loop goes on so the steer lands (the original executor loses
   it); otherwise the tools run and their results are stored as one user message;
4. every model call goes through the :class:`~.prompt_machine.PromptMachine` (transient errors
   retried with full-jitter backoff, ``Retry-After`` honoured, unless the call already streamed
   something, C#43); the :class:`~.observer.Observer` counts each turn and its tokens in the store
   and compacts when a threshold of ``compaction_config`` is passed (:mod:`.compaction`);
5. a reply truncated by the output limit (``max_tokens``) with no tool calls is continued, not
   taken as the answer (C#2); truncated tool calls fail validation and the model corrects them;
6. lifecycle hooks run at the run, turn, model-call and tool boundaries and middlewares wrap each
   turn's model call (:mod:`.lifecycle`); with an ``output_schema`` the final answer is validated
   and a mismatch is sent back to the model a bounded number of times (:mod:`.structured`).

A cancel (``CancelToken``) ends the request: any tool call already stored gets its results (real
or synthetic ``aborted``) stored *at abort time* (C#41), in a shielded scope with a short grace,
and every one is notified. :meth:`Agent.ask` then raises
:class:`~orchestrator.core.errors.AbortError` (as does a lifecycle hook's stop);
:meth:`Agent.run_request` returns the outcome with ``stop="aborted"`` instead.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, TypeAlias

import attrs
import trio

from orchestrator.core.approvals import ApprovalHandler
from orchestrator.core.errors import AbortError, OutputValidationError

from .cancel import CancelToken
from .compaction import CompactionConfig
from .context import Context
from .executor import Executor, ToolBatch
from .lifecycle import (
    Lifecycle,
    LifecycleHooks,
    ModelCall,
    ModelMiddleware,
    RunEndInfo,
    RunErrorInfo,
    RunStartInfo,
    RunStopped,
    TurnEndInfo,
    TurnStartInfo,
)
from .messages import InboxItem, Message, TokenCounter
from .models.base import ModelAdapter, ModelOptions, ModelResponse, PromptRequest
from .observer import Compaction, Observer
from .prompt_machine import PromptMachine, announce
from .stores.base import Store
from .structured import OutputMismatch, OutputSchema, as_output_schema, retry_message
from .subscriber import (
    NotifyFn,
    OutputRetryEvent,
    SteerApplied,
    TokenConsumption,
    ToolUseResult,
    TurnStart,
)
from .tools import HandOverFunction, ToolDefinition

__all__ = [
    "DEFAULT_MAX_MODEL_CALLS",
    "Agent",
    "AskResult",
    "LoopConfig",
    "PrepareTurn",
    "StopReason",
]

DEFAULT_MAX_MODEL_CALLS = 120

StopReason: TypeAlias = Literal["completed", "max_turns", "aborted"]

_TRUNCATED = frozenset({"max_tokens", "length", "max_output_tokens"})
CONTINUE_PROMPT = "[Your previous reply was cut off by the output token limit. Continue exactly where it stopped.]"
REPAIR_GRACE_S = 5.0


@attrs.frozen
class LoopConfig:
    compaction: CompactionConfig = attrs.field(factory=CompactionConfig)
    max_model_calls: int = DEFAULT_MAX_MODEL_CALLS
    """Exact cap of model calls per request (the final answer included); reaching it ends the
    request with ``stop="max_turns"``. Separate from ``compaction.max_turns``, which only says
    when to compact."""
    model_retries: int = 2
    retry_base_s: float = 1.0
    retry_max_s: float = 30.0
    max_tokens: int | None = None
    continue_on_max_tokens: bool = True
    hooks: Sequence[LifecycleHooks] = ()
    """Lifecycle hooks, called in this order at each point (:mod:`.lifecycle`)."""
    middlewares: Sequence[ModelMiddleware] = ()
    """Wrap each turn's model call, the first outermost (:mod:`.lifecycle`)."""
    output_schema: OutputSchema | None = attrs.field(default=None, converter=as_output_schema)
    """The final answer must match it (a pydantic model class or a JSON Schema; :mod:`.structured`)."""
    output_retries: int = 2
    """How many times a non-matching answer is sent back to the model before the request fails."""
    model_options: ModelOptions = attrs.field(factory=ModelOptions)
    """Temperature, tool choice and additional parameters sent with every turn's model call."""


class PrepareTurn(Protocol):
    """Called before each turn's model call with the turn number, the messages and the tool
    definitions; returns what the model gets (dynamic context and tools are evaluated here)."""

    async def __call__(
        self, turn: int, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> tuple[Sequence[Message], Sequence[ToolDefinition]]: ...


@attrs.frozen
class AskResult:
    """How a request ended. ``usage`` sums every model call of the request (compaction too)."""

    stop: StopReason
    text: str
    """The last non-empty reply text."""
    response: ModelResponse | None
    usage: TokenCounter
    turns: int
    output: Any = None
    """The validated structured output (an instance of the pydantic model, or the JSON value)
    when the loop has an ``output_schema``; else ``None``."""
    cancel_reason: str | None = None
    """Why a hook stopped the request (``stop="aborted"``), e.g. ``on_tool_call: no rm -rf``."""


class Agent:
    """The loop over a store, an executor and the current model (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        executor: Executor,
        notify: NotifyFn,
        get_model: Callable[[], ModelAdapter],
        config: LoopConfig | None = None,
    ) -> None:
        self.store = store
        self.executor = executor
        self.notify = notify
        self.get_model = get_model
        self.config = config or LoopConfig()
        self._steers: deque[str] = deque()
        self.context = Context(store)
        self.prompt_machine = PromptMachine(
            get_model,
            self.context,
            notify=notify,
            retries=self.config.model_retries,
            retry_base_s=self.config.retry_base_s,
            retry_max_s=self.config.retry_max_s,
            max_tokens=self.config.max_tokens,
        )
        self.observer = Observer.from_config(
            store, self.context, self.prompt_machine, self.config.compaction
        )
        self._tool_defs: tuple[ToolDefinition, ...] | None = None
        self.lifecycle = Lifecycle(self.config.hooks, self.config.middlewares)
        self.lifecycle.notify = notify
        self.prepare_turn: PrepareTurn | None = None

    # -- steering ------------------------------------------------------------------------------

    def steer(self, text: str) -> None:
        """Queue user text for the live conversation; applied at the next turn boundary."""
        self._steers.append(text)

    @property
    def pending_steers(self) -> int:
        return len(self._steers)

    def tools_changed(self) -> None:
        self._tool_defs = None

    def tool_definitions(self) -> tuple[ToolDefinition, ...]:
        if self._tool_defs is None:
            defs = [t.definition for t in self.executor.tools]
            self._tool_defs = tuple(sorted(defs, key=lambda d: d.name))
        return self._tool_defs

    # -- the loop ------------------------------------------------------------------------------

    async def ask(
        self,
        message: Message | None,
        hand_over: HandOverFunction | None = None,
        token: CancelToken | None = None,
        approvals: ApprovalHandler | None = None,
    ) -> AskResult:
        """Glove's ``Agent.ask``: run one request; raises
        :class:`~orchestrator.core.errors.AbortError` when it is aborted (its ``result`` is
        the outcome so far)."""
        result = await self.run_request(message, token, approvals, hand_over=hand_over)
        raise_if_aborted(result)
        return result

    async def run_request(
        self,
        message: Message | None,
        token: CancelToken | None = None,
        approvals: ApprovalHandler | None = None,
        *,
        hand_over: HandOverFunction | None = None,
    ) -> AskResult:
        """Run one request (``message=None`` continues with queued steers only) and return how
        it ended, an abort included; ``approvals`` overrides the executor's approval handler for
        this request, ``hand_over`` is given to every tool (``ToolContext.hand_over``)."""
        token = token or CancelToken()
        store = self.store
        state = _AskState(approvals=approvals, hand_over=hand_over)
        life = self.lifecycle
        with token.scope() as scope:
            try:
                await self._finish_pending_calls(token, state)
                reminder = await self._inbox_prelude()
                await self._maybe_compact(token, state)
                if life.has("on_run_start"):
                    history = await store.get_context_messages()
                    max_turns = self.config.max_model_calls
                    await life.run("on_run_start", RunStartInfo(message, history, max_turns))
                if message is not None:
                    await store.append_messages((message,))
                await self._turns(token, state, reminder)
                if state.stop == "completed" and life.has("on_run_end"):
                    info = RunEndInfo(state.text, state.output, state.usage, state.turns)
                    await life.run("on_run_end", info)
            except RunStopped as stop:
                state.stopped(stop)
                if stop.response is not None:
                    await self._count_dropped(stop.response, state)
            except Exception as exc:
                if not life.has("on_run_error"):
                    raise
                stop = await life.stop_on_error(RunErrorInfo(exc, state.usage, state.turns))
                if stop is None:
                    raise
                state.stopped(stop)
            finally:
                if state.open_batch is not None:
                    await self._repair(state.open_batch, token)
        if scope.cancelled_caught or (token.cancelled and state.stop != "completed"):
            state.stop = "aborted"
        return AskResult(
            state.stop,
            state.text,
            state.last,
            state.usage,
            state.turns,
            state.output,
            state.cancel_reason,
        )

    async def _turns(self, token: CancelToken, state: _AskState, reminder: Message | None) -> None:
        store, notify, executor = self.store, self.notify, self.executor
        cfg, life = self.config, self.lifecycle
        max_turns = cfg.max_model_calls
        while True:
            await trio.lowlevel.checkpoint()  # one cancel point and scheduling point per turn
            if self._steers:
                await self._apply_steers()
            if state.turns >= max_turns:
                state.stop = "max_turns"
                return
            model = self.get_model()
            messages: Sequence[Message] = await store.get_context_messages()
            if reminder is not None and messages:
                messages = [*messages[:-1], reminder, messages[-1]]
            if cfg.output_schema is not None:
                messages = [*messages, cfg.output_schema.instruction]
            turn = life.turn = state.turns + 1
            await notify(TurnStart(turn, model.name))
            if life.has("on_turn_start"):
                await life.run("on_turn_start", TurnStartInfo(turn, messages))
            tools: Sequence[ToolDefinition] = self.tool_definitions()
            if self.prepare_turn is not None:
                messages, tools = await self.prepare_turn(turn, messages, tools)
            response = await self._call_model(
                model, messages, tools, options=cfg.model_options, turn=turn
            )
            state.turns += 1
            state.last = response
            tokens = response.tokens
            state.usage = state.usage + tokens
            if response.text:
                state.text = response.text
            await announce(response, model, notify)
            await store.append_messages((response.to_message(),))
            calls = response.tool_calls
            if calls:
                state.open_batch = ToolBatch(calls)
            await self.observer.add_tokens_consumed(tokens)
            await self.observer.turn_complete()
            await notify(
                TokenConsumption(tokens, state.usage, response.model or model.model, "turn")
            )
            if life.has("on_turn_end"):
                await life.run("on_turn_end", TurnEndInfo(turn, response))
            if not calls:
                if cfg.continue_on_max_tokens and response.stop_reason in _TRUNCATED:
                    await store.append_messages((Message(sender="user", text=CONTINUE_PROMPT),))
                    continue
                if self._steers:
                    continue  # a steer arrived during the final turn: let it land
                if cfg.output_schema is not None and not await self._accept_output(response, state):
                    continue  # the model was told what was wrong with its answer
                state.stop = "completed"
                return
            batch = state.open_batch
            assert batch is not None
            await executor.execute(
                batch,
                token,
                store.identifier,
                life if life.tool_hooks else None,
                approvals=state.approvals,
                hand_over=state.hand_over,
            )
            await store.append_messages(
                (Message(sender="user", text="tool results", tool_results=tuple(batch.done())),)
            )
            state.open_batch = None
            await self._maybe_compact(token, state)

    async def _apply_steers(self) -> None:
        steers = [
            Message(sender="user", text=self._steers.popleft(), is_steer=True)
            for _ in range(len(self._steers))
        ]
        await self.store.append_messages(steers)
        await self.notify(SteerApplied(len(steers)))

    async def _call_model(
        self,
        model: ModelAdapter,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        notify: NotifyFn | None = None,
        options: ModelOptions | None = None,
        turn: int | None = None,
    ) -> ModelResponse:
        """One model call with retries; a turn's call (``turn`` set) runs through the hooks
        and middlewares around it (:meth:`.Lifecycle.model_call`)."""
        target = notify or self.notify
        request = PromptRequest(
            messages=messages,
            tools=tools,
            max_tokens=self.config.max_tokens,
            options=options or ModelOptions(),
        )
        if turn is not None and self.lifecycle.wraps_model:
            call = ModelCall(turn, request, model.name)
            pm = self.prompt_machine
            return await self.lifecycle.model_call(call, lambda r: pm.send(r, target, model))
        return await self.prompt_machine.send(request, target, model)

    async def _finish_pending_calls(self, token: CancelToken, state: _AskState) -> None:
        """A session that ended while its last reply's tool calls ran (its process exited while
        one waited for an approval) gets them run now — a durable approval handler answers from
        its record — and their results stored, before anything is appended after them."""
        history = await self.store.get_context_messages()
        last = history[-1] if history else None
        if last is None or last.sender != "agent" or not last.tool_calls:
            return
        state.open_batch = ToolBatch(last.tool_calls)
        life = self.lifecycle
        await self.executor.execute(
            state.open_batch,
            token,
            self.store.identifier,
            life if life.tool_hooks else None,
            approvals=state.approvals,
            hand_over=state.hand_over,
        )
        await self.store.append_messages(
            (
                Message(
                    sender="user", text="tool results", tool_results=tuple(state.open_batch.done())
                ),
            )
        )
        state.open_batch = None

    async def _count_dropped(self, response: ModelResponse, state: _AskState) -> None:
        """Count the usage of a reply a hook stopped on (it is not stored)."""
        state.usage = state.usage + response.tokens
        await self.store.add_tokens(response.tokens)
        model = response.model or self.get_model().model
        await self.notify(TokenConsumption(response.tokens, state.usage, model, "turn"))

    async def _accept_output(self, response: ModelResponse, state: _AskState) -> bool:
        """Validate the final answer against the output schema; on a mismatch tell the model
        what was wrong and return False (raises once the retries are spent)."""
        schema = self.config.output_schema
        assert schema is not None
        try:
            state.output = schema.parse(response.text)
        except OutputMismatch as exc:
            state.output_failures += 1
            if state.output_failures > self.config.output_retries:
                raise OutputValidationError(
                    exc.problems, state.output_failures, response.text
                ) from None
            await self.store.append_messages((retry_message(exc.problems),))
            await self.notify(OutputRetryEvent(state.output_failures, exc.problems))
            return False
        return True

    # -- repair, inbox, compaction -----------------------------------------------------------

    async def _repair(self, batch: ToolBatch, token: CancelToken) -> None:
        """Store results for every call of an interrupted batch (shielded, short grace)."""
        batch.close_open()
        with token.shield(REPAIR_GRACE_S):
            await self.store.append_messages(
                (Message(sender="user", text="tool results", tool_results=tuple(batch.done())),)
            )
            for i, result in enumerate(batch.results):
                if result is not None and not batch.notified[i]:
                    batch.notified[i] = True
                    await self.notify(
                        ToolUseResult(
                            result.tool_name,
                            result.call_id,
                            result.result,
                            result.duration_ms or 0.0,
                        )
                    )

    async def _inbox_prelude(self) -> Message | None:
        store = self.store
        if not store.capabilities.inbox:
            return None
        resolved = await store.get_resolved_inbox_items()
        if resolved:
            lines = [f"[Inbox: {len(resolved)} item(s) resolved]"]
            lines += [
                f'- [{i.tag}] Request: "{i.request}" -> Response: "{i.response}" '
                f"(resolved {i.resolved_at})"
                for i in resolved
            ]
            await store.append_messages((Message(sender="user", text="\n".join(lines)),))
            for item in resolved:
                await store.update_inbox_item(item.id, status="consumed")
        items = await store.get_inbox_items()
        blocking = [i for i in items if i.status == "pending" and i.blocking]
        return _blocking_reminder(blocking) if blocking else None

    async def _maybe_compact(self, token: CancelToken, state: _AskState) -> None:
        del token
        done = await self.observer.try_compaction()
        if done is not None:
            await self._count_compaction(done, state)

    async def compact(self, state: _AskState | None = None) -> Message:
        """Summarize now and append the marker (also callable from hooks and hosts)."""
        done = await self.observer.run_compaction_now()
        await self._count_compaction(done, state)
        return done.summary

    async def _count_compaction(self, done: Compaction, state: _AskState | None) -> None:
        """The summary call's usage: in the request's total and a ``token_consumption`` event
        (not in the store's counters, which compaction has just reset)."""
        tokens = done.response.tokens
        total = tokens
        if state is not None:
            state.usage = state.usage + tokens
            total = state.usage
        model = done.response.model or self.get_model().model
        await self.notify(TokenConsumption(tokens, total, model, "compaction"))


@attrs.define
class _AskState:
    stop: StopReason = "aborted"
    text: str = ""
    last: ModelResponse | None = None
    usage: TokenCounter = attrs.field(factory=TokenCounter)
    turns: int = 0
    open_batch: ToolBatch | None = None
    approvals: ApprovalHandler | None = None
    output: Any = None
    output_failures: int = 0
    cancel_reason: str | None = None
    hand_over: HandOverFunction | None = None

    def stopped(self, stop: RunStopped) -> None:
        self.stop = "aborted"
        self.cancel_reason = f"{stop.point}: {stop.reason}"


def _blocking_reminder(items: Sequence[InboxItem]) -> Message:
    lines = [
        f"[Inbox: {len(items)} blocking item(s) still pending — you cannot proceed with actions "
        "that depend on these results]"
    ]
    lines += [f"- [{i.tag}] {i.request} (posted {i.created_at})" for i in items]
    return Message(sender="user", text="\n".join(lines))


def raise_if_aborted(result: AskResult) -> None:
    """Glove's rule: an aborted request raises :class:`~orchestrator.core.errors.AbortError`
    (the reason is the hook's, when a lifecycle hook stopped it)."""
    if result.stop == "aborted":
        raise AbortError(result.cancel_reason or "Request aborted", result)
