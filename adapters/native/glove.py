"""``Glove``: the builder and runnable facade over the loop.

::

    glove = (
        Glove(store=MemoryStore(), model=model, system_prompt="You are helpful.")
        .fold("get_weather", "Weather for a city.", CityInput, get_weather)
        .add_subscriber(printer)
        .build()
    )
    result = await glove.process_request("What is the weather in Tokyo?")

The same concepts as Glove with Pythonic names: ``fold`` registers a tool (pydantic input model;
``requires_permission``, ``un_abortable``, …) and is legal after ``build``; the tool list is
snapshotted per turn. ``set_model`` takes effect at the next model call, also mid-request.
``steer`` puts text into the live conversation. One request runs at a time per Glove (C#4); a
second concurrent ``process_request`` raises :class:`SessionBusyError`. An aborted request (its
cancel token fired, or a lifecycle hook stopped it) raises
:class:`~orchestrator.core.errors.AbortError`, whose ``result`` holds what it had reached.

Glove's parts are reachable and replaceable as its docs name them: ``glove.context``
(:class:`~.context.Context`), ``glove.observer`` (:class:`~.observer.Observer`, thresholds
settable at run time), ``glove.prompt_machine`` (:class:`~.prompt_machine.PromptMachine`),
``glove.executor``; ``display_manager`` is any :class:`~.display.DisplayManagerAdapter`.

The app layer (:mod:`.extensions`): ``define_hook``, ``define_skill`` and ``define_sub_agent``
(chainable, legal after ``build``) bind ``/name`` directives and the auto-registered
``glove_invoke_skill`` / ``glove_invoke_subagent`` tools. When the store has tasks or an inbox,
``glove_update_tasks`` and ``glove_post_to_inbox`` are registered too (:mod:`.tasks_inbox`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Self, TypeVar

import attrs
from pydantic import BaseModel

from orchestrator.core.approvals import ApprovalHandler
from tiers import AssembledPrompt, PromptTiers, assemble_tiers

from .cancel import CancelToken
from .compaction import CompactionConfig
from .context import Context
from .display import DisplayManagerAdapter
from .executor import Executor, PermissionHandler, PermissionRequest, Unhandled
from .extensions import (
    Extensions,
    HookHandler,
    Skill,
    SkillHandler,
    SubAgent,
    SubAgentFactory,
)
from .loop import Agent, AskResult, LoopConfig, raise_if_aborted
from .messages import ContentPart, Message, TokenCounter
from .models.base import ModelAdapter
from .observer import Observer
from .prompt_machine import PromptMachine
from .stores.base import Store
from .stores.memory import MemoryStore
from .subscriber import Notifier, Subscriber, SubscriberEvent, TextDeltaEvent
from .tasks_inbox import create_inbox_tool, create_task_tool
from .tools import HandOverFunction, Tool, ToolContext

__all__ = ["Glove", "SessionBusyError"]

InputT = TypeVar("InputT", bound=BaseModel)


class SessionBusyError(RuntimeError):
    """A request is already running on this Glove (one active run per session)."""


class Glove:
    def __init__(
        self,
        *,
        model: ModelAdapter,
        store: Store | None = None,
        display_manager: DisplayManagerAdapter | None = None,
        system_prompt: str | PromptTiers | AssembledPrompt = "",
        compaction_config: CompactionConfig | None = None,
        max_retries: int = 3,
        max_concurrency: int = 8,
        permission_handler: PermissionHandler | None = None,
        loop_config: LoopConfig | None = None,
        builtin_tools: bool = True,
        unhandled_approval: Unhandled = "raise",
    ) -> None:
        self._model = model
        self._store: Store = store or MemoryStore()
        self._display = display_manager
        self._system_prompt = _assemble(system_prompt)
        self._notifier = Notifier()
        cfg = loop_config or LoopConfig()
        if compaction_config is not None:
            cfg = attrs.evolve(cfg, compaction=compaction_config)
        self._config = cfg
        self._max_retries = max_retries
        self._max_concurrency = max_concurrency
        self._permission_handler = permission_handler
        self._unhandled: Unhandled = unhandled_approval
        self._tools: list[Tool[Any]] = []
        self._built = False
        self._busy = False
        self._builtin_tools = builtin_tools
        self._agent = self._make_agent()
        self._register_builtins()
        self._ext = Extensions(self)
        model.set_system_prompt(self._system_prompt)

    def _make_agent(self) -> Agent:
        handler = self._permission_handler
        if handler is None and self._display is not None:
            handler = self._ask_display
        executor = Executor(
            self._store,
            self._notifier,
            max_retries=self._max_retries,
            max_concurrency=self._max_concurrency,
            permission_handler=handler,
            unhandled=self._unhandled,
        )
        executor.context_extras = {"display": self._display, "glove": self}
        for t in self._tools:
            executor.register(t)
        return Agent(self._store, executor, self._notifier, lambda: self._model, self._config)

    def _register_builtins(self) -> None:
        """``glove_update_tasks`` / ``glove_post_to_inbox`` when the store supports them."""
        if not self._builtin_tools:
            return
        caps = self._store.capabilities
        if caps.tasks:
            self.add_tool(create_task_tool(self._store))
        if caps.inbox:
            self.add_tool(create_inbox_tool(self._store))

    async def _ask_display(self, request: PermissionRequest) -> bool:
        assert self._display is not None
        answer = await self._display.push_and_wait(
            {"tool_name": request.tool_name, "tool_input": request.tool_input},
            renderer="permission_request",
            tool_name=request.tool_name,
            tool_call_id=request.call_id,
        )
        return bool(answer)

    # -- builder ----------------------------------------------------------------------------

    def fold(
        self,
        name: str,
        description: str,
        input_model: type[InputT],
        do: Callable[[InputT, ToolContext], Awaitable[Any]],
        *,
        requires_permission: bool | Callable[[InputT], bool] = False,
        un_abortable: bool = False,
        parallel_safe: bool = False,
        idempotent: bool = False,
        max_retries: int | None = None,
        timeout_s: float | None = None,
    ) -> Self:
        """Register a tool (legal after :meth:`build`; takes effect at the next turn)."""
        return self.add_tool(
            Tool(
                name=name,
                description=description,
                do=do,
                input_model=input_model,
                requires_permission=requires_permission,
                un_abortable=un_abortable,
                parallel_safe=parallel_safe,
                idempotent=idempotent,
                max_retries=max_retries,
                timeout_s=timeout_s,
            )
        )

    def add_tool(self, tool: Tool[Any]) -> Self:
        self._tools = [t for t in self._tools if t.name != tool.name]
        self._tools.append(tool)
        self._agent.executor.register(tool)
        self._agent.tools_changed()
        return self

    def remove_tool(self, name: str) -> Self:
        """Unregister a tool by name (built-in ones included); takes effect at the next turn."""
        self._tools = [t for t in self._tools if t.name != name]
        self._agent.executor.unregister(name)
        self._agent.tools_changed()
        return self

    def add_subscriber(self, subscriber: Subscriber) -> Self:
        self._notifier.add(subscriber)
        return self

    def remove_subscriber(self, subscriber: Subscriber) -> Self:
        self._notifier.remove(subscriber)
        return self

    @property
    def subscribers(self) -> Sequence[Subscriber]:
        return self._notifier.snapshot()

    async def notify(self, event: SubscriberEvent) -> None:
        """Send an event to every subscriber (failures isolated)."""
        await self._notifier(event)

    # -- app layer: hooks, skills, sub-agents ---------------------------------------------------

    @property
    def extensions(self) -> Extensions:
        return self._ext

    def define_hook(self, name: str, handler: HookHandler) -> Self:
        """Bind the ``/name`` directive to ``handler`` (runs before the model)."""
        self._ext.define_hook(name, handler)
        return self

    def define_skill(
        self,
        name: str,
        handler: SkillHandler,
        *,
        description: str = "",
        expose_to_agent: bool = False,
    ) -> Self:
        """Bind ``/name`` to a skill; ``expose_to_agent`` lists it in ``glove_invoke_skill``."""
        self._ext.define_skill(Skill(name, handler, description, expose_to_agent))
        return self

    def define_sub_agent(
        self, name: str, factory: SubAgentFactory, *, description: str = ""
    ) -> Self:
        """Register a sub-agent the model reaches through ``glove_invoke_subagent``."""
        self._ext.define_sub_agent(SubAgent(name, factory, description))
        return self

    def build(self, store: Store | None = None) -> Self:
        """Mark the Glove runnable; a store passed here replaces the default one."""
        if store is not None and store is not self._store:
            self._store = store
            self._agent = self._make_agent()
            self._register_builtins()
        self._built = True
        return self

    # -- runnable ---------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        return self._store

    @property
    def model(self) -> ModelAdapter:
        return self._model

    @property
    def display_manager(self) -> DisplayManagerAdapter | None:
        return self._display

    @property
    def context(self) -> Context:
        return self._agent.context

    @property
    def observer(self) -> Observer:
        """Compaction thresholds and counters (``set_max_turns``, ``set_context_compaction_limit``,
        ``set_compaction_instructions`` take effect at the next check)."""
        return self._agent.observer

    @property
    def prompt_machine(self) -> PromptMachine:
        return self._agent.prompt_machine

    @property
    def executor(self) -> Executor:
        return self._agent.executor

    @property
    def tools(self) -> Sequence[Tool[Any]]:
        return tuple(self._tools)

    @property
    def agent(self) -> Agent:
        return self._agent

    @property
    def system_prompt(self) -> str | AssembledPrompt:
        return self._system_prompt

    def set_model(self, model: ModelAdapter) -> None:
        """Swap the model; the next model call uses it (also in the middle of a request)."""
        model.set_system_prompt(self._system_prompt)
        self._model = model
        self._agent.prompt_machine.set_model(model)

    def set_system_prompt(self, prompt: str | PromptTiers | AssembledPrompt) -> None:
        self._system_prompt = _assemble(prompt)
        self._model.set_system_prompt(self._system_prompt)

    def steer(self, text: str) -> None:
        """Put user text into the live conversation (next turn boundary; FIFO)."""
        self._agent.steer(text)

    @property
    def busy(self) -> bool:
        return self._busy

    async def process_request(
        self,
        request: str | Sequence[ContentPart],
        cancel: CancelToken | None = None,
        approvals: ApprovalHandler | None = None,
        *,
        hand_over: HandOverFunction | None = None,
    ) -> AskResult:
        """Run the directives (hooks, skills), append the user message and run the loop until
        text only or the cap; an abort raises :class:`~orchestrator.core.errors.AbortError`. A
        hook's ``short_circuit`` answers without the model. ``approvals`` overrides the Glove's
        approval handler for this request; ``hand_over`` reaches every tool."""
        result = await self.run_request(request, cancel, approvals, hand_over=hand_over)
        raise_if_aborted(result)
        return result

    async def run_request(
        self,
        request: str | Sequence[ContentPart],
        cancel: CancelToken | None = None,
        approvals: ApprovalHandler | None = None,
        *,
        hand_over: HandOverFunction | None = None,
    ) -> AskResult:
        """:meth:`process_request` that returns an abort as ``stop="aborted"`` (for hosts that
        report every outcome the same way) instead of raising."""
        message = _user_message(request)
        if not self._ext.parses:
            return await self._run(message, cancel, approvals, hand_over)
        if not self._built:
            raise RuntimeError("Call build() before process_request()")
        if self._busy:
            raise SessionBusyError(f"a request is already running on {self._store.identifier}")
        token = cancel or CancelToken()
        self._busy = True
        try:
            with token.scope():
                prepared = await self._ext.prepare(_raw_text(request), _media(request), token)
            if token.cancelled:
                return AskResult("aborted", "", None, TokenCounter(), 0)
            short = prepared.short_circuit
            if short is None:
                return await self._agent.run_request(
                    prepared.message, token, approvals, hand_over=hand_over
                )
            replies = (short.message,) if short.message is not None else ()
            if short.response is not None:
                replies = (short.response.to_message(),)
            await self._store.append_messages((prepared.message, *replies))
            text = "\n".join(m.text for m in replies if m.sender == "agent" and m.text)
            if text:
                await self.notify(TextDeltaEvent(text))
            usage = short.response.tokens if short.response is not None else TokenCounter()
            return AskResult("completed", text, short.response, usage, 0)
        finally:
            self._busy = False

    async def continue_request(
        self, cancel: CancelToken | None = None, approvals: ApprovalHandler | None = None
    ) -> AskResult:
        """Run the loop again on queued steers only (no new user message); an abort raises
        :class:`~orchestrator.core.errors.AbortError`."""
        result = await self._run(None, cancel, approvals)
        raise_if_aborted(result)
        return result

    async def compact(self) -> Message:
        """Force a compaction now (between requests)."""
        return await self._agent.compact()

    async def _run(
        self,
        message: Message | None,
        cancel: CancelToken | None,
        approvals: ApprovalHandler | None = None,
        hand_over: HandOverFunction | None = None,
    ) -> AskResult:
        if not self._built:
            raise RuntimeError("Call build() before process_request()")
        if self._busy:
            raise SessionBusyError(f"a request is already running on {self._store.identifier}")
        self._busy = True
        try:
            return await self._agent.run_request(message, cancel, approvals, hand_over=hand_over)
        finally:
            self._busy = False


def _assemble(prompt: str | PromptTiers | AssembledPrompt) -> str | AssembledPrompt:
    return assemble_tiers(prompt) if isinstance(prompt, PromptTiers) else prompt


def _raw_text(request: str | Sequence[ContentPart]) -> str:
    if isinstance(request, str):
        return request
    return "\n".join(p.text or "" for p in request if p.type == "text")


def _media(request: str | Sequence[ContentPart]) -> tuple[ContentPart, ...]:
    return () if isinstance(request, str) else tuple(p for p in request if p.type != "text")


def _user_message(request: str | Sequence[ContentPart]) -> Message:
    if isinstance(request, str):
        return Message(sender="user", text=request)
    parts = tuple(request)
    if any(p.cache for p in parts):  # cache tiers: kept apart, each with its own separators
        text = "".join(p.text or "" for p in parts if p.type == "text")
        return Message(sender="user", text=text, content=parts)
    text = "\n".join(p.text or "" for p in parts if p.type == "text")
    media = tuple(p for p in parts if p.type != "text")
    content = ((ContentPart(type="text", text=text),) if text else ()) + media
    return Message(sender="user", text=text or "[multimodal message]", content=content)
