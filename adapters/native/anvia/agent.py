"""``AnviaAgent``: the Anvia agent surface (``@anvia/core`` 0.26 ``Agent``) on the native loop.

Named ``AnviaAgent`` because ``adapters.native.Agent`` is already the Glove loop it runs on; its
request is ``AgentRequest`` because ``PromptRequest`` is the model adapters' request.

::

    agent = AnviaAgent(id="support", model=model, instructions="Be brief.", tools=[weather])
    response = await agent.prompt("Weather in Oslo?").send()
    async with agent.prompt("And Tokyo?").stream() as events:
        async for event in events: ...
    session = agent.session("user-42")          # needs memory=InMemoryAgentMemory() or SQLite

The agent is immutable (``attrs.evolve(agent, temperature=0.2)`` gives a changed copy). Options
are validated when it is built: ``id`` must be a non-empty string once trimmed (else
:class:`AgentOptionsError`, which is also a ``TypeError`` as the seed says); ``temperature``,
``tool_choice`` and ``additional_params`` are checked by the model adapter (``check_options``),
and refused — naming the model and the option — by an adapter that cannot send them.

Calls: ``prompt(str | Message | list[Message])`` (a list: the last message is the prompt, the rest
a stateless history), ``session(id)``, ``as_tool(name, ...)``, ``get_tool(name)`` and
``call_tool(name, args_json)``. Each turn the agent sends its instructions (plus the skill
set's listing) as the system prompt, its static context then the dynamic context as documents,
and its tools then the dynamic tools (:mod:`.retrieval`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import attrs
from pydantic import BaseModel, Field

from adapters.native.cancel import CancelToken
from adapters.native.executor import Executor, ToolBatch
from adapters.native.glove import SessionBusyError
from adapters.native.lifecycle import LifecycleHooks, ModelMiddleware
from adapters.native.loop import PrepareTurn
from adapters.native.mcp import McpServer, open_mcp_servers
from adapters.native.messages import Message, ToolCall, format_tool_result_content
from adapters.native.models.base import ModelAdapter, ModelOptions, ToolChoice
from adapters.native.stores.memory import MemoryStore
from adapters.native.structured import OutputSchema, OutputSpec, as_output_schema
from adapters.native.subscriber import discard
from adapters.native.tools import Tool, ToolContext, ToolDefinition
from orchestrator.core.approvals import ApprovalHandler
from orchestrator.core.errors import (
    AgentOptionsError,
    ConfigError,
    MaxTurnsError,
    PromptCancelledError,
    ToolCallError,
    single_exception,
)

from .events import AgentDone, AgentError, AgentFinal, AgentToolEvent
from .memory import SAVE_POLICIES, AgentMemory, MemoryContext, SavePolicy
from .observe import (
    AgentEventStore,
    AgentEventStoreInclude,
    AgentObserver,
    ObserverFn,
    ObserverRegistration,
    as_registrations,
)
from .request import MAX_AGENT_DEPTH, AgentRequest, validate_max_turns
from .retrieval import (
    Document,
    DynamicContext,
    DynamicTools,
    query_text,
    render_documents,
)
from .skills import SkillSet
from .toolset import ToolSet

__all__ = ["DEFAULT_MAX_TURNS", "AgentSession", "AgentToolInput", "AnviaAgent"]

DEFAULT_MAX_TURNS = 20


def _valid_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise AgentOptionsError(f"agent id must be a non-empty string, got {value!r}")
    return value.strip()


def _instructions(value: str | Sequence[str] | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return "\n\n".join(block for block in value if block)


def _tools(value: Sequence[Tool[Any]] | ToolSet) -> tuple[Tool[Any], ...]:
    by_name: dict[str, Tool[Any]] = {}
    for tool in value:  # a duplicate name replaces the earlier tool, keeping its place
        by_name[tool.name] = tool
    return tuple(by_name.values())


def _max_turns(_inst: object, attr: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AgentOptionsError(f"{attr.name} must be a non-negative integer, got {value!r}")


def _output_schema(value: OutputSpec | None) -> OutputSchema | None:
    try:
        return as_output_schema(value)
    except ValueError as exc:
        raise AgentOptionsError(f"output_schema: {exc}") from exc


def _save_policy(_inst: object, _attr: object, value: object) -> None:
    if value not in SAVE_POLICIES:
        raise AgentOptionsError(f"save_policy must be one of {', '.join(SAVE_POLICIES)}")


def _optional_positive(_inst: object, attr: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise AgentOptionsError(f"{attr.name} must be a positive integer, got {value!r}")


class AgentToolInput(BaseModel):
    prompt: str = Field(description="The prompt to send to the agent.")


@attrs.frozen(kw_only=True)
class AnviaAgent:
    """An immutable agent configuration around one model (see the module docstring)."""

    id: str = attrs.field(converter=_valid_id)
    model: ModelAdapter
    name: str | None = None
    description: str | None = None
    instructions: str | None = attrs.field(default=None, converter=_instructions)
    """The system prompt (a list of blocks is joined with blank lines)."""
    static_context: tuple[Document, ...] = attrs.field(default=(), converter=tuple)
    temperature: float | None = None
    max_tokens: int | None = attrs.field(default=None, validator=_optional_positive)
    additional_params: dict[str, Any] | None = None
    """Sent with every model call as they are (``extra_body``) by adapters that support them."""
    tools: tuple[Tool[Any], ...] = attrs.field(default=(), converter=_tools)
    tool_choice: ToolChoice | None = None
    default_max_turns: int = attrs.field(default=DEFAULT_MAX_TURNS, validator=_max_turns)
    """Model calls per run at most (an exact cap)."""
    dynamic_contexts: tuple[DynamicContext, ...] = attrs.field(default=(), converter=tuple)
    dynamic_tools: tuple[DynamicTools, ...] = attrs.field(default=(), converter=tuple)
    skills: SkillSet | None = None
    memory: AgentMemory | None = None
    save_policy: SavePolicy = attrs.field(default="message", validator=_save_policy)
    approvals: ApprovalHandler | None = None
    """Decides tool calls that need approval (``AgentBuilder.approvals``); a request's
    ``approvals(...)`` overrides it; with neither such a call raises
    :class:`~orchestrator.core.errors.ToolApprovalRequiredError` (:mod:`orchestrator.core.approvals`)."""
    hooks: tuple[LifecycleHooks, ...] = attrs.field(default=(), converter=tuple)
    """Lifecycle hooks of every run (:mod:`adapters.native.lifecycle`); a request's
    ``with_hook`` replaces them. A hook's ``StopRun`` ends the run in PromptCancelledError."""
    middlewares: tuple[ModelMiddleware, ...] = attrs.field(default=(), converter=tuple)
    """Wrap every turn's model call, the first outermost; a request's come after these."""
    output_schema: OutputSchema | None = attrs.field(default=None, converter=_output_schema)
    """A pydantic model class or a JSON Schema the final answer must match (validated, with
    ``output_retries`` retries telling the model what was wrong; :mod:`adapters.native.structured`).
    The value is ``PromptResponse.structured``."""
    output_retries: int = attrs.field(default=2, validator=_max_turns)
    mcp_servers: tuple[McpServer, ...] = attrs.field(default=(), converter=tuple)
    """MCP servers each run connects to (started before its first turn, stopped when it ends);
    their tools are ``mcp__<server>__<tool>`` (:mod:`adapters.native.mcp`)."""
    observers: tuple[ObserverRegistration, ...] = attrs.field(
        default=(), converter=as_registrations
    )
    """Told every event of every run (:mod:`.observe`)."""
    event_store: AgentEventStore | None = None
    """Records every run's events for replay by run id (:mod:`.observe`)."""
    event_store_include: AgentEventStoreInclude = "all"
    _bound: ModelAdapter = attrs.field(init=False, repr=False, eq=False)
    _active: set[str] = attrs.field(init=False, repr=False, eq=False, factory=set[str])

    def __attrs_post_init__(self) -> None:
        options = self.model_options
        names = options.set_names()
        if names:
            check = getattr(self.model, "check_options", None)
            if check is None:
                raise AgentOptionsError(
                    f"model {self.model.name} does not accept {', '.join(names)} "
                    "(its adapter has no check_options); remove them or use an adapter that "
                    "supports them"
                )
            try:
                check(options)
            except ConfigError as exc:
                raise AgentOptionsError(str(exc)) from exc
        memory = cast(object, self.memory)
        if memory is not None and not isinstance(memory, AgentMemory):
            raise AgentOptionsError("memory must implement AgentMemory (load, append, clear, …)")
        bound = self.model.with_model(self.model.model)
        bound.set_system_prompt(self.system_prompt)
        object.__setattr__(self, "_bound", bound)

    # -- what a run uses ----------------------------------------------------------------------

    @property
    def tool_set(self) -> ToolSet:
        """The agent's tools as a :class:`~.toolset.ToolSet` (Anvia's ``toolSet``)."""
        return ToolSet(self.tools)

    @property
    def observed(self) -> bool:
        """Whether runs have somewhere to send their events besides a stream's consumer."""
        return bool(self.observers) or self.event_store is not None

    def with_observer(self, observer: AgentObserver | ObserverFn) -> AnviaAgent:
        return attrs.evolve(self, observers=(*self.observers, ObserverRegistration(observer)))

    @property
    def model_options(self) -> ModelOptions:
        return ModelOptions(self.temperature, self.tool_choice, self.additional_params)

    @property
    def system_prompt(self) -> str:
        """The instructions, then the skill set's instructions."""
        blocks = [self.instructions or ""]
        if self.skills is not None:
            blocks.append(self.skills.instructions)
        return "\n\n".join(b for b in blocks if b)

    def bound_model(self) -> ModelAdapter:
        """The agent's own copy of its model, carrying its system prompt."""
        return self._bound

    def run_tools(self) -> tuple[Tool[Any], ...]:
        """The static tools a run registers (the agent's, then the skill set's)."""
        skill_tools = self.skills.tools if self.skills is not None else ()
        return _tools([*self.tools, *skill_tools])

    def turn_preparer(self, register: Callable[[Tool[Any]], None]) -> PrepareTurn | None:
        """The per-turn step of a run: static and dynamic context, dynamic tools (retrieved
        tools are given to ``register`` so the run can execute them)."""
        if not (self.static_context or self.dynamic_contexts or self.dynamic_tools):
            return None
        registered: set[str] = set()
        static_names = {t.name for t in self.run_tools()}

        async def prepare(
            turn: int, messages: Sequence[Message], tools: Sequence[ToolDefinition]
        ) -> tuple[Sequence[Message], Sequence[ToolDefinition]]:
            del turn
            query = query_text(messages)
            documents = list(self.static_context)
            for dynamic in self.dynamic_contexts:
                documents += await dynamic.documents(query)
            defs = [d for d in tools if d.name not in registered or d.name in static_names]
            seen = {d.name for d in defs}
            for dynamic in self.dynamic_tools:
                for tool in await dynamic.tools(query):
                    if tool.name in seen:
                        continue
                    seen.add(tool.name)
                    defs.append(tool.definition)
                    if tool.name not in static_names:
                        registered.add(tool.name)
                        register(tool)
            if documents:
                messages = [render_documents(documents), *messages]
            return messages, defs

        return prepare

    @asynccontextmanager
    async def connected(self, register: Callable[[Tool[Any]], None]) -> AsyncGenerator[None]:
        """The agent's MCP servers for one run, their tools given to ``register`` (none: a
        no-op). A server that cannot start raises :class:`McpStartError`."""
        if not self.mcp_servers:
            yield
            return
        try:
            async with open_mcp_servers(self.mcp_servers) as hub:
                for tool in hub.tools:
                    register(tool)
                yield
        except BaseExceptionGroup as group:
            one = single_exception(group)  # the run's own error, not wrapped in the hub's group
            if one is not None:
                raise one from None
            raise

    # -- calls -------------------------------------------------------------------------------

    def prompt(self, prompt: str | Message | Sequence[Message]) -> AgentRequest:
        """A new single-use request; a message list is a stateless history + its last message."""
        if isinstance(prompt, str):
            return AgentRequest(self, Message(sender="user", text=prompt))
        if isinstance(prompt, Message):
            return AgentRequest(self, prompt)
        messages = list(prompt)
        if not messages:
            raise AgentOptionsError("prompt(messages) needs at least one message")
        return AgentRequest(self, messages[-1], messages[:-1])

    def session(
        self,
        session_id: str,
        *,
        user_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> AgentSession:
        """A durable conversation on the agent's memory."""
        if self.memory is None:
            raise AgentOptionsError(f"agent {self.id!r} has no memory; pass memory=... to build it")
        if not session_id.strip():
            raise AgentOptionsError("session id must be a non-empty string")
        return AgentSession(self, MemoryContext(session_id.strip(), user_id, metadata))

    def get_tool(self, tool_name: str) -> Tool[Any] | None:
        """A static tool by name, else one of the dynamic tool sets'."""
        for tool in self.run_tools():
            if tool.name == tool_name:
                return tool
        for dynamic in self.dynamic_tools:
            tool = dynamic.get(tool_name)
            if tool is not None:
                return tool
        return None

    async def call_tool(self, tool_name: str, args: str, context: ToolContext | None = None) -> str:
        """Run one tool with JSON ``args`` as the model would; its text, or :class:`ToolCallError`
        (an unknown tool, invalid JSON or input, a denial, a raised error)."""
        tool = self.get_tool(tool_name)
        if tool is None:
            raise ToolCallError(f"Tool not found: {tool_name}", tool_name, "not_found")
        try:
            value: Any = json.loads(args) if args.strip() else {}
            parse_error = None
        except json.JSONDecodeError as exc:
            value, parse_error = args, str(exc)
        call_id = context.call_id if context is not None else "call_tool"
        executor = Executor(MemoryStore(), discard, permission_handler=self.approvals)
        executor.register(tool)
        if context is not None:
            executor.context_extras = {"run": context.run}
        batch = ToolBatch(
            [ToolCall(tool_name=tool.name, input_args=value, id=call_id, parse_error=parse_error)]
        )
        await executor.execute(
            batch, context.cancel if context and context.cancel else CancelToken()
        )
        result = batch.done()[0].result
        text = format_tool_result_content(result)
        if result.is_error:
            raise ToolCallError(text, tool_name, result.error_kind or "failed")
        return text

    def as_tool(
        self,
        name: str,
        *,
        description: str | None = None,
        max_turns: int | None = None,
        stream: bool = False,
    ) -> Tool[AgentToolInput]:
        """This agent as a tool ``{prompt}`` → its output. With ``stream=True`` and a streaming
        parent run, every child event is forwarded as ``agent_tool_event``. The child runs
        statelessly; its errors become the tool's error result (the parent goes on)."""
        if max_turns is not None:
            validate_max_turns(max_turns)
        agent = self

        async def run_child(value: AgentToolInput, ctx: ToolContext) -> str:
            parent = ctx.run
            depth = getattr(parent, "depth", 0) + 1
            if depth > MAX_AGENT_DEPTH:
                raise AgentOptionsError(f"agents nest at most {MAX_AGENT_DEPTH} deep")
            request = agent.prompt(value.prompt)
            if max_turns is not None:
                request.max_turns(max_turns)
            request.depth = depth
            try:
                return await self._child_output(request, name, ctx, stream)
            finally:
                if parent is not None:
                    parent.child_usage += request.usage

        return Tool(
            name=name,
            description=description or self.description or f"Prompt the {name} agent.",
            do=run_child,
            input_model=AgentToolInput,
        )

    async def _child_output(
        self, request: AgentRequest, name: str, ctx: ToolContext, stream: bool
    ) -> str:
        parent = ctx.run
        if not (stream and getattr(parent, "streaming", False)):
            return (await request.send()).output
        agent = self
        output = ""
        failure: BaseException | None = None
        async with request.stream() as events:
            async for event in events:
                await parent.emit(
                    AgentToolEvent(
                        parent.turn,
                        name,
                        ctx.call_id,
                        parent.internal_call_id(ctx.call_id),
                        agent.id,
                        agent.name,
                        event,
                    )
                )
                if isinstance(event, AgentFinal):
                    output = event.output
                elif isinstance(event, AgentError):
                    failure = event.error
                elif isinstance(event, AgentDone) and event.reason == "max_turns":
                    failure = MaxTurnsError(event.max_turns or 0, (), request.prompt)
                elif isinstance(event, AgentDone) and event.reason == "cancelled":
                    failure = PromptCancelledError(event.cancel_reason or "cancelled")
        if failure is not None:  # raised out here, not from inside the stream's nursery
            raise failure
        return output


@attrs.define
class AgentSession:
    """A durable conversation: ``prompt`` loads the stored history first and saves the run's
    messages by the agent's save policy; one run at a time per session."""

    agent: AnviaAgent
    context: MemoryContext

    def prompt(self, prompt: str | Message) -> AgentRequest:
        """A request that loads the stored history first (no message lists: see the class)."""
        value = cast(object, prompt)
        if isinstance(value, str):
            message = Message(sender="user", text=value)
        elif isinstance(value, Message):
            message = value
        else:
            raise AgentOptionsError(
                "session prompts take a string or one message; use agent.prompt(messages) "
                "for an explicit stateless transcript"
            )
        return AgentRequest(self.agent, message, session=self)

    async def messages(self) -> list[Message]:
        memory = self.agent.memory
        assert memory is not None
        return await memory.load(self.context)

    async def clear(self) -> None:
        memory = self.agent.memory
        assert memory is not None
        await memory.clear(self.context)

    @asynccontextmanager
    async def active(self) -> AsyncGenerator[list[Message]]:
        """Hold the session for one run and give its stored history."""
        key = self.context.scope_key
        active = self.agent._active  # pyright: ignore[reportPrivateUsage]
        if key in active:
            raise SessionBusyError(f"session {self.context.session_id!r} is already running")
        active.add(key)
        try:
            yield await self.messages()
        finally:
            active.discard(key)
