"""Hooks, skills and sub-agents: Glove's three extension primitives.

* A **hook** (``glove.define_hook(name, handler)``) binds a user-side ``/name`` directive. Its
  handler runs before the model with :class:`AgentControls`; it may return a
  :class:`HookResult` that rewrites the working text (``rewrite_text``) or ends the request
  without a model call (``short_circuit``).
* A **skill** (``glove.define_skill(name, handler, ...)``) binds ``/name`` too: its handler's text
  (or content parts) becomes a synthetic user message ``[Skill: name]`` marked
  ``is_skill_injection`` before the real one. With ``expose_to_agent`` the model can pull it
  itself through the auto-registered ``glove_invoke_skill`` tool.
* A **sub-agent** (``glove.define_sub_agent(name, factory, ...)``) is a runnable the model
  routes to through the auto-registered ``glove_invoke_subagent`` tool (``{name, prompt}``).
  The factory makes one on every call: a *built* child Glove, or any :class:`GloveRunnable` (an
  object with ``process_request(prompt, cancel)``: an external agent, an API proxy) whose result
  is an ``AskResult``, a ``ModelResponse``, an agent ``Message`` or a string. The parent's
  subscribers are attached to a child that takes subscribers, for the run (its events join the
  parent's stream, bracketed by ``subagent_invoked`` / ``subagent_completed``, always paired and
  closed with the sub-run's real status), the parent's cancel token is forwarded, and the child's
  final text is the tool result.

:func:`create_skill_invoke_tool` and :func:`create_sub_agent_invoke_tool` build the two dispatch
tools from a Glove's registrations (Glove's standalone helpers; a Glove registers them itself).

Directive parsing (:func:`parse_tokens`) looks only for ``/name`` tokens at the start of the text
or after whitespace and followed by whitespace or the end; only registered names bind (hooks win
over skills) and each bound token is replaced by the placeholder
``[invoked_extension__hook_<name>]`` / ``[invoked_extension__skill_<name>]``. Paths such as
``/usr/local/bin``, ``ping /me at 3pm`` with no ``me`` registered, ``@mentions`` and e-mail
addresses are left exactly as typed.
"""

from __future__ import annotations

import contextvars
import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, cast, runtime_checkable

import attrs
import trio
from pydantic import BaseModel, Field

from orchestrator.core.errors import AbortError

from .cancel import CancelToken
from .messages import ContentPart, Message, ToolResultData
from .models.base import ModelResponse
from .subscriber import (
    HookInvoked,
    SkillInvoked,
    SubagentCompleted,
    SubagentInvoked,
    SubscriberEvent,
)
from .tools import Tool, ToolContext

if TYPE_CHECKING:
    from .context import Context
    from .display import DisplayManagerAdapter
    from .executor import Executor
    from .glove import Glove
    from .loop import Agent
    from .observer import Observer
    from .prompt_machine import PromptMachine
    from .stores.base import Store

__all__ = [
    "CURRENT_SUBAGENT",
    "DIRECTIVE_PATTERN",
    "MAX_SUBAGENT_DEPTH",
    "SKILL_INVOKE_TOOL_NAME",
    "SUBAGENT_DISPATCH_TOOL_NAME",
    "AgentControls",
    "Directive",
    "Extensions",
    "GloveRunnable",
    "HookContext",
    "HookHandler",
    "HookResult",
    "ParsedTokens",
    "ShortCircuit",
    "Skill",
    "SkillContext",
    "SkillHandler",
    "SubAgent",
    "SubAgentFactory",
    "SubAgentFactoryContext",
    "create_skill_invoke_tool",
    "create_sub_agent_invoke_tool",
    "format_skill_message",
    "parse_tokens",
    "placeholder",
]

CURRENT_SUBAGENT: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "ringleader_current_subagent", default=()
)
"""The chain of sub-agent names the current task runs inside (``()``: the run's own agent).
Set around a sub-agent's run, so every subscriber event its child emits (from its own task
or the tasks it starts, which inherit the context) can be attributed to it."""

SUBAGENT_DISPATCH_TOOL_NAME = "glove_invoke_subagent"
SKILL_INVOKE_TOOL_NAME = "glove_invoke_skill"
MAX_SUBAGENT_DEPTH = 8
"""Sub-agents may dispatch sub-agents; a chain deeper than this gets an error result."""

DIRECTIVE_PATTERN = re.compile(r"(^|\s)/([A-Za-z][\w-]*)(?=\s|$)", re.ASCII)
"""Glove's directive regex: ``/name`` at the start or after whitespace, then whitespace/end."""

_CLOSE_GRACE_S = 1.0

# -- parsing ---------------------------------------------------------------------------------


@attrs.frozen
class Directive:
    kind: Literal["hook", "skill"]
    name: str


@attrs.frozen
class ParsedTokens:
    text: str
    """The text with every bound ``/name`` replaced by its placeholder."""
    directives: tuple[Directive, ...]
    """Bound directives in document order (a repeated token appears each time)."""


def placeholder(kind: Literal["hook", "skill"], name: str) -> str:
    return f"[invoked_extension__{kind}_{name}]"


def parse_tokens(
    text: str, is_hook: Callable[[str], bool], is_skill: Callable[[str], bool]
) -> ParsedTokens:
    """Bind registered ``/name`` tokens (hooks first) and replace them with placeholders."""
    found: list[Directive] = []

    def bind(match: re.Match[str]) -> str:
        lead, name = match.group(1), match.group(2)
        if is_hook(name):
            found.append(Directive("hook", name))
            return lead + placeholder("hook", name)
        if is_skill(name):
            found.append(Directive("skill", name))
            return lead + placeholder("skill", name)
        return match.group(0)

    return ParsedTokens(DIRECTIVE_PATTERN.sub(bind, text), tuple(found))


def format_skill_message(name: str, injected: str | Sequence[ContentPart]) -> Message:
    """The synthetic user message a user-side skill becomes (``is_skill_injection``)."""
    label = f"[Skill: {name}]"
    if isinstance(injected, str):
        return Message(sender="user", text=f"{label}\n{injected}", is_skill_injection=True)
    parts = tuple(injected)
    joined = "\n".join(p.text or "" for p in parts if p.type == "text")
    return Message(
        sender="user",
        text=f"{label}\n{joined}" if joined else label,
        content=(ContentPart(type="text", text=label), *parts),
        is_skill_injection=True,
    )


# -- the primitives ---------------------------------------------------------------------------


@attrs.define(eq=False)
class AgentControls:
    """A hook's (and a skill's, a sub-agent factory's) handle on the agent's internals."""

    glove: Glove

    @property
    def store(self) -> Store:
        return self.glove.store

    @property
    def display_manager(self) -> DisplayManagerAdapter | None:
        return self.glove.display_manager

    @property
    def agent(self) -> Agent:
        """The loop."""
        return self.glove.agent

    @property
    def context(self) -> Context:
        return self.glove.context

    @property
    def observer(self) -> Observer:
        return self.glove.observer

    @property
    def prompt_machine(self) -> PromptMachine:
        return self.glove.prompt_machine

    @property
    def executor(self) -> Executor:
        return self.glove.agent.executor

    async def notify(self, event: SubscriberEvent) -> None:
        await self.glove.notify(event)

    async def force_compaction(self) -> None:
        """Summarize now, regardless of the thresholds (``compaction_start``/``_end`` fire)."""
        await self.glove.agent.compact()


@attrs.frozen
class ShortCircuit:
    """End the request without a model call: answer ``message`` (an agent message) or the
    messages of ``response``."""

    message: Message | None = None
    response: ModelResponse | None = None

    def __attrs_post_init__(self) -> None:
        if (self.message is None) == (self.response is None):
            raise ValueError("ShortCircuit needs exactly one of message or response")


@attrs.frozen
class HookResult:
    rewrite_text: str | None = None
    """Replaces the working text for later hooks, skills and the user message."""
    short_circuit: ShortCircuit | None = None


@attrs.frozen
class HookContext:
    name: str
    raw_text: str
    """The text exactly as the user sent it."""
    parsed_text: str
    """The working text: placeholders for bound directives, earlier rewrites applied."""
    controls: AgentControls
    cancel: CancelToken | None = None


HookHandler: TypeAlias = Callable[[HookContext], Awaitable[HookResult | None]]


@attrs.frozen
class SkillContext:
    name: str
    parsed_text: str
    """User side: the working text with placeholders. Agent side: ``args or ""``."""
    source: Literal["user", "agent"]
    controls: AgentControls
    args: str | None = None
    """Free-form arguments from the model (agent side only)."""


SkillHandler: TypeAlias = Callable[[SkillContext], Awaitable[str | Sequence[ContentPart]]]


@attrs.frozen
class Skill:
    name: str
    handler: SkillHandler
    description: str = ""
    expose_to_agent: bool = False


@attrs.frozen
class SubAgentFactoryContext:
    name: str
    prompt: str
    parent_store: Store
    parent_controls: AgentControls


@runtime_checkable
class GloveRunnable(Protocol):
    """What a sub-agent factory may return (Glove's ``IGloveRunnable``): a built Glove, or any
    object that runs a prompt. Its result may be an ``AskResult``, a ``ModelResponse``, an agent
    ``Message`` (or anything with ``messages``, whose last agent message is taken) or a string;
    an abort should raise :class:`~orchestrator.core.errors.AbortError`. A runnable with
    ``add_subscriber`` / ``remove_subscriber`` gets the parent's subscribers for its run."""

    async def process_request(self, request: str, cancel: CancelToken | None = None) -> Any: ...


SubAgentFactory: TypeAlias = Callable[
    [SubAgentFactoryContext], "Awaitable[GloveRunnable] | GloveRunnable"
]


@attrs.frozen
class SubAgent:
    name: str
    factory: SubAgentFactory
    description: str = ""


class _InvokeSkillInput(BaseModel):
    name: str = Field(description="The skill to invoke.")
    args: str | None = Field(default=None, description="Optional free-form arguments.")


class _InvokeSubagentInput(BaseModel):
    name: str = Field(description="The sub-agent to run.")
    prompt: str = Field(
        description="A self-contained task: the sub-agent does not see this conversation."
    )


# -- the registry and dispatch ----------------------------------------------------------------


@attrs.frozen
class Prepared:
    """What the directives of one request produced."""

    message: Message
    """The real user message (placeholders, rewrites, ``pre_modified_text``)."""
    short_circuit: ShortCircuit | None = None


@attrs.define(eq=False)
class Extensions:
    """One Glove's hooks, skills and sub-agents (see the module docstring)."""

    glove: Glove
    hooks: dict[str, HookHandler] = attrs.field(factory=dict[str, HookHandler])
    skills: dict[str, Skill] = attrs.field(factory=dict[str, Skill])
    subagents: dict[str, SubAgent] = attrs.field(factory=dict[str, SubAgent])
    depth: int = 0
    """How deep this Glove runs in a chain of sub-agents (0 for a top-level agent)."""

    @property
    def controls(self) -> AgentControls:
        return AgentControls(self.glove)

    @property
    def parses(self) -> bool:
        return bool(self.hooks or self.skills)

    # -- registration --------------------------------------------------------------------------

    def define_hook(self, name: str, handler: HookHandler) -> None:
        _check_name(name)
        self.hooks[name] = handler

    def define_skill(self, skill: Skill) -> None:
        _check_name(skill.name)
        self.skills[skill.name] = skill
        if skill.expose_to_agent or any(s.expose_to_agent for s in self.skills.values()):
            self.glove.add_tool(self.skill_tool())

    def define_sub_agent(self, subagent: SubAgent) -> None:
        if not subagent.name:
            raise ValueError("a sub-agent needs a name")
        self.subagents[subagent.name] = subagent
        self.glove.add_tool(self.subagent_tool())

    # -- user side -----------------------------------------------------------------------------

    async def prepare(
        self, raw_text: str, media: Sequence[ContentPart], cancel: CancelToken
    ) -> Prepared:
        """Parse directives, run hooks then skills (persisting skill messages), build the
        user message. Hooks and skills run in document order."""
        parsed = parse_tokens(raw_text, self.hooks.__contains__, self.skills.__contains__)
        text = parsed.text
        rewritten = False
        controls = self.controls
        notify = self.glove.notify
        for d in parsed.directives:
            if d.kind != "hook" or d.name not in self.hooks:
                continue
            await notify(HookInvoked(d.name))
            result = await self.hooks[d.name](HookContext(d.name, raw_text, text, controls, cancel))
            if result is None:
                continue
            if result.rewrite_text is not None and result.rewrite_text != text:
                text = result.rewrite_text
                rewritten = True
            if result.short_circuit is not None:
                return Prepared(
                    _user_message(text, media, raw_text if rewritten else None),
                    result.short_circuit,
                )
        injections: list[Message] = []
        for d in parsed.directives:
            skill = self.skills.get(d.name) if d.kind == "skill" else None
            if skill is None:
                continue
            await notify(SkillInvoked(d.name, "user"))
            injected = await skill.handler(SkillContext(d.name, text, "user", controls))
            injections.append(format_skill_message(d.name, injected))
        if injections:
            await self.glove.store.append_messages(injections)
        return Prepared(_user_message(text, media, raw_text if rewritten else None))

    # -- agent side: glove_invoke_skill --------------------------------------------------------

    def skill_tool(self) -> Tool[_InvokeSkillInput]:
        """``glove_invoke_skill`` listing the exposed skills (see :func:`create_skill_invoke_tool`)."""
        exposed = [s for s in self.skills.values() if s.expose_to_agent]
        lines = [f"- {s.name}: {s.description or '(no description)'}" for s in exposed]
        description = (
            "Invoke one of the skills below to pull its instructions or context into this "
            "turn; its content comes back as the tool result. Pass optional free-form `args`.\n"
            "Available skills:\n" + "\n".join(lines)
        )
        return Tool(
            name=SKILL_INVOKE_TOOL_NAME,
            description=description,
            do=self._invoke_skill,
            input_model=_InvokeSkillInput,
        )

    async def _invoke_skill(self, value: _InvokeSkillInput, ctx: ToolContext) -> ToolResultData:
        del ctx
        skill = self.skills.get(value.name)
        if skill is None or not skill.expose_to_agent:
            return ToolResultData(
                status="error",
                data=None,
                message=f"Skill {value.name} is not available",
                error_kind="not_found",
            )
        await self.glove.notify(SkillInvoked(skill.name, "agent", value.args))
        injected = await skill.handler(
            SkillContext(skill.name, value.args or "", "agent", self.controls, value.args)
        )
        if isinstance(injected, str):
            content = injected or "[skill produced no text content]"
            return ToolResultData(status="success", data={"skill": skill.name, "content": content})
        parts = tuple(injected)
        joined = "\n".join(p.text or "" for p in parts if p.type == "text")
        return ToolResultData(
            status="success",
            data={"skill": skill.name, "content": joined or "[non-text skill content]"},
            render_data=[p.model_dump(mode="json", exclude_none=True) for p in parts],
        )

    # -- agent side: glove_invoke_subagent -----------------------------------------------------

    def subagent_tool(self) -> Tool[_InvokeSubagentInput]:
        """``glove_invoke_subagent`` listing the sub-agents (see
        :func:`create_sub_agent_invoke_tool`)."""
        lines = [
            f"- {s.name}: {s.description or '(no description)'}" for s in self.subagents.values()
        ]
        description = (
            "Run a sub-agent on a task and get its final answer back. The sub-agent does NOT see "
            "this conversation: `prompt` must be self-contained. When the user @-mentions one "
            "of these names (e.g. @name), route that request through this tool.\n"
            "Available sub-agents:\n" + "\n".join(lines)
        )
        return Tool(
            name=SUBAGENT_DISPATCH_TOOL_NAME,
            description=description,
            do=self._invoke_subagent,
            input_model=_InvokeSubagentInput,
        )

    async def _invoke_subagent(
        self, value: _InvokeSubagentInput, ctx: ToolContext
    ) -> ToolResultData:
        sub = self.subagents.get(value.name)
        if sub is None:
            names = ", ".join(self.subagents) or "(none)"
            return _error(f'Subagent "{value.name}" is not registered. Use one of: {names}.')
        notify = self.glove.notify
        await notify(SubagentInvoked(sub.name, value.prompt))
        result = _error(f'Subagent "{sub.name}" run was cancelled.', "aborted")
        try:
            result = await self._run_subagent(sub, value.prompt, ctx.cancel)
        finally:
            if result.status == "success":
                close = SubagentCompleted(sub.name, "success")
            else:
                close = SubagentCompleted(sub.name, "error", result.message)
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + _CLOSE_GRACE_S
                await notify(close)
        return result

    async def _run_subagent(
        self, sub: SubAgent, prompt: str, cancel: CancelToken | None
    ) -> ToolResultData:
        if self.depth + 1 > MAX_SUBAGENT_DEPTH:
            return _error(
                f'Subagent "{sub.name}" not started: sub-agents are nested more than '
                f"{MAX_SUBAGENT_DEPTH} deep."
            )
        factory_ctx = SubAgentFactoryContext(sub.name, prompt, self.glove.store, self.controls)
        try:
            made = sub.factory(factory_ctx)
            child: Any = await made if inspect.isawaitable(made) else made
        except Exception as exc:
            return _error(f'Subagent "{sub.name}" factory threw: {exc}')
        if not callable(getattr(child, "process_request", None)):
            return _error(
                f'Subagent "{sub.name}" factory returned {type(child).__name__}, which has no '
                "process_request"
            )
        ext = getattr(child, "extensions", None)
        if isinstance(ext, Extensions):
            ext.depth = self.depth + 1
        attached: list[Any] = []
        add = getattr(child, "add_subscriber", None)
        remove = getattr(child, "remove_subscriber", None)
        if callable(add) and callable(remove):
            present: Sequence[Any] = getattr(child, "subscribers", ())
            attached = [s for s in self.glove.subscribers if s not in present]
            for subscriber in attached:
                add(subscriber)
        chain = CURRENT_SUBAGENT.set((*CURRENT_SUBAGENT.get(), sub.name))
        try:
            outcome = await child.process_request(prompt, cancel)
        except AbortError as exc:
            return _error(f'Subagent "{sub.name}" run aborted: {exc.reason}', "aborted")
        except Exception as exc:
            return _error(f'Subagent "{sub.name}" failed: {type(exc).__name__}: {exc}')
        finally:
            CURRENT_SUBAGENT.reset(chain)
            if callable(remove):
                for subscriber in attached:
                    remove(subscriber)
        return _sub_result(sub.name, outcome)


def _sub_result(name: str, outcome: Any) -> ToolResultData:
    """The tool result for what a sub-run returned (its real status)."""
    stop = getattr(outcome, "stop", None)
    if stop == "aborted":  # a runnable that reports an abort instead of raising
        reason = getattr(outcome, "cancel_reason", None) or "Request aborted"
        return _error(f'Subagent "{name}" run aborted: {reason}', "aborted")
    if stop == "max_turns":
        return _error(f'Subagent "{name}" stopped at its cap of model calls before answering.')
    text = _final_text(outcome)
    if text is None:
        return _error(
            f'Subagent "{name}" returned {type(outcome).__name__}, not a result with text.'
        )
    content = text or "[subagent produced no text content]"
    return ToolResultData(status="success", data={"subagent": name, "content": content})


def _final_text(outcome: Any) -> str | None:
    """The last agent text of a sub-run's result (``None`` when it has none to give)."""
    if isinstance(outcome, str):
        return outcome
    if isinstance(outcome, Message):
        return outcome.text
    messages = getattr(outcome, "messages", None)
    if isinstance(messages, Sequence) and not isinstance(messages, str):
        agent_texts = [
            m.text
            for m in cast(Sequence[Any], messages)
            if isinstance(m, Message) and m.sender == "agent"
        ]
        return agent_texts[-1] if agent_texts else ""
    text = getattr(outcome, "text", None)
    return text if isinstance(text, str) else None


def create_skill_invoke_tool(glove: Glove) -> Tool[Any]:
    """Glove's ``createSkillInvokeTool``: ``glove_invoke_skill`` over the Glove's exposed skills
    (the tool a Glove registers itself once a skill is exposed)."""
    return glove.extensions.skill_tool()


def create_sub_agent_invoke_tool(glove: Glove) -> Tool[Any]:
    """Glove's ``createSubAgentInvokeTool``: ``glove_invoke_subagent`` over the Glove's
    sub-agents (the tool a Glove registers itself with its first sub-agent)."""
    return glove.extensions.subagent_tool()


def _error(message: str, kind: Literal["failed", "aborted"] = "failed") -> ToolResultData:
    return ToolResultData(status="error", message=message, error_kind=kind)


def _check_name(name: str) -> None:
    if not re.fullmatch(r"[A-Za-z][\w-]*", name, re.ASCII):
        raise ValueError(f"{name!r} cannot be a /directive: a letter, then letters, digits, _ or -")


def _user_message(text: str, media: Sequence[ContentPart], original: str | None) -> Message:
    if not media:
        return Message(sender="user", text=text, pre_modified_text=original)
    content = ((ContentPart(type="text", text=text),) if text else ()) + tuple(media)
    return Message(
        sender="user",
        text=text or "[multimodal message]",
        content=content,
        pre_modified_text=original,
    )
