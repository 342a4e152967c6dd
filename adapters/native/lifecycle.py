"""Lifecycle hooks and model-call middlewares of the native loop (C#24, C#25).

A **hook** is a controller at one of the seed's points; subclass :class:`LifecycleHooks` and
override the points you need (the others cost nothing)::

    class Guard(LifecycleHooks):
        async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
            if info.tool_name == "bash" and "rm -rf" in str(info.args):
                return SkipTool("rm -rf is not allowed here")  # the model sees the reason
            return None  # None: carry on

The points, in the order a run meets them (Anvia's ``PromptHook`` names in snake_case;
``completion`` is ``model`` here):

============================ =============================================== ===================
point                        when                                            may return
============================ =============================================== ===================
``on_run_start``             before the first turn (the prompt is stored)    ``StopRun``
``on_turn_start``            each turn, before its model call is built       ``StopRun``
``on_model_call``            the request is built, before the middlewares    ``StopRun``
``on_model_response``        the reply is in (after the middlewares)         ``StopRun``
``on_model_error``           the model call failed (retries spent)           ``StopRun``
``on_turn_end``              the reply is stored and its usage counted       ``StopRun``
``on_tool_call``             before a call is validated and run              ``RewriteInput``,
                                                                             ``SkipTool``,
                                                                             ``ReplaceResult``,
                                                                             ``StopRun``
``on_tool_result``           a call ended with a success result              ``ReplaceResult``,
                                                                             ``StopRun``
``on_tool_error``            a call ended with an error result               ``ReplaceResult``,
                                                                             ``StopRun``
``on_run_end``               the final answer is in (validated, if a schema) ``StopRun``
``on_run_error``             the run is failing with an exception            ``StopRun``
============================ =============================================== ===================

Returning ``None`` continues. Hooks run in the order given; at a point the first ``StopRun``
(or ``SkipTool`` / ``ReplaceResult`` before a call) ends the chain, while ``RewriteInput`` and
``ReplaceResult`` after a call are chained: the next hook sees the rewritten input or the
replaced result.

* ``StopRun(reason)`` stops the run there, as a cancel does (a reply stopped at
  ``on_model_response`` is dropped: not stored, its tools not run, its usage counted): every open tool call gets a
  result stored (a call that already ran keeps its real one), the request ends with
  ``stop="aborted"`` and ``AskResult.cancel_reason`` says which hook stopped it and why (the
  adapter ends the run with ``done{aborted}``; Anvia raises ``PromptCancelledError``). From
  ``on_run_error`` it turns the failure into such a stop instead of the exception.
* ``SkipTool(reason)`` does not run the call: its result is an error (``denied``) whose text is
  the reason, which the model sees (Anvia's ``skip``).
* ``RewriteInput(args)`` replaces the call's arguments; the tool's validation still applies.
* ``ReplaceResult(value)`` before a call answers it without running the tool; after a call it
  replaces the result. ``value`` is anything a tool may return (text, JSON, a
  :class:`~.messages.ToolResultData`).

``on_tool_result`` / ``on_tool_error`` also run for skipped and answered calls, so the result
hooks see every result. A hook that raises fails the run with its exception. Observers stay
separate: hooks are controllers, subscribers only watch; every action a hook takes is reported
to the subscribers as a :class:`~.subscriber.HookActionEvent` (a ``status`` detail on the
adapter's stream).

A **middleware** wraps each turn's model call (not the compaction call), outermost first::

    async def timing(call: ModelCall, call_next: CallNext) -> ModelResponse:
        began = trio.current_time()
        response = await call_next(call.request)  # or a changed request: attrs.evolve(...)
        log.info("turn %d took %.3fs", call.turn, trio.current_time() - began)
        return response  # or a changed response, or one made without calling the model

It may change the request (messages, tools), replace the response, or answer without calling
the model. Retries of a transient failure happen inside ``call_next`` (the same request is
re-sent; middlewares and hooks do not run again). A response that streamed has already been
shown: replace one with ``attrs.evolve(response, text=...)`` to change what is stored and
answered without showing the text a second time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, get_args

import attrs

from .messages import Message, TokenCounter, ToolCall, ToolResultData
from .models.base import ModelResponse, PromptRequest
from .subscriber import HookActionEvent, NotifyFn
from .tools import normalize_result

__all__ = [
    "CallNext",
    "HookPoint",
    "Lifecycle",
    "LifecycleHooks",
    "ModelCall",
    "ModelErrorInfo",
    "ModelMiddleware",
    "ModelResponseInfo",
    "ReplaceResult",
    "RequestApproval",
    "RewriteInput",
    "RunAction",
    "RunControl",
    "RunEndInfo",
    "RunErrorInfo",
    "RunStartInfo",
    "RunStopped",
    "SkipTool",
    "StopRun",
    "ToolCallAction",
    "ToolCallControl",
    "ToolCallInfo",
    "ToolResultAction",
    "ToolResultInfo",
    "TurnEndInfo",
    "TurnStartInfo",
    "cancel_prompt",
    "create_hook",
    "request_tool_approval",
    "run_control",
    "skip_tool",
    "tool_call_control",
]

# -- what a hook may return ------------------------------------------------------------------


@attrs.frozen
class StopRun:
    """Stop the run here (Anvia's ``run.cancel(reason)`` / ``tool.cancel(reason)``)."""

    reason: str


@attrs.frozen
class SkipTool:
    """Do not run the call; the model sees ``reason`` as its (error) result."""

    reason: str


@attrs.frozen
class RequestApproval:
    """Ask the run's approval handler before the call runs, whatever the policy says (Anvia's
    ``tool.requestApproval``; a policy ``deny`` still denies): ``reason`` goes with the request,
    ``reject_message`` is what the model sees when a rejection gives none. With no handler the
    library run raises ``ToolApprovalRequiredError`` (:mod:`orchestrator.core.approvals`)."""

    reason: str | None = None
    reject_message: str | None = None


@attrs.frozen
class RewriteInput:
    """Run the call with these arguments instead (validated like the model's)."""

    args: Any


@attrs.frozen
class ReplaceResult:
    """Answer the call with this result (before it runs) or replace its result (after)."""

    result: Any


RunAction: TypeAlias = StopRun | None
ToolCallAction: TypeAlias = (
    RewriteInput | SkipTool | ReplaceResult | StopRun | RequestApproval | None
)
ToolResultAction: TypeAlias = ReplaceResult | StopRun | None

# -- Anvia's control objects and helpers ---------------------------------------------------------


class RunControl:
    """Anvia's ``RunControl`` (``info.run`` at every run, turn and model point):
    ``continue_()`` goes on (``continue`` is a Python keyword), ``cancel(reason)`` stops."""

    def continue_(self) -> None:
        return None

    def cancel(self, reason: str) -> StopRun:
        return StopRun(reason)


class ToolCallControl:
    """Anvia's ``ToolCallControl`` (``info.tool`` at ``on_tool_call``)."""

    def run(self) -> None:
        return None

    def skip(self, reason: str) -> SkipTool:
        return SkipTool(reason)

    def cancel(self, reason: str) -> StopRun:
        return StopRun(reason)

    def request_approval(
        self, reason: str | None = None, reject_message: str | None = None
    ) -> RequestApproval:
        return RequestApproval(reason, reject_message)


run_control = RunControl()
"""Anvia's ``runControl``."""
tool_call_control = ToolCallControl()
"""Anvia's ``toolCallControl``."""


def cancel_prompt(reason: str) -> StopRun:
    """Anvia's ``cancelPrompt``: the action that stops the run with ``reason``."""
    return StopRun(reason)


def skip_tool(reason: str) -> SkipTool:
    """Anvia's ``skipTool``: the model sees ``reason`` instead of the tool's result."""
    return SkipTool(reason)


def request_tool_approval(
    reason: str | None = None, reject_message: str | None = None
) -> RequestApproval:
    """Anvia's ``requestToolApproval``."""
    return RequestApproval(reason, reject_message)


_H = TypeVar("_H", bound="LifecycleHooks")


def create_hook(hook: _H) -> _H:
    """Anvia's ``createHook``: the hook as it is (typed; a place to hang one inline)."""
    return hook


class _HasRun:
    @property
    def run(self) -> RunControl:
        """Anvia's run control: ``info.run.cancel("why")`` stops the run."""
        return run_control


# -- what a hook is told ----------------------------------------------------------------------


@attrs.frozen
class RunStartInfo(_HasRun):
    prompt: Message | None
    """The request's user message (``None`` when a run continues on steers only)."""
    history: Sequence[Message]
    """The conversation before the prompt (what the model will see of it)."""
    max_turns: int


@attrs.frozen
class TurnStartInfo(_HasRun):
    turn: int
    """1-based: the number of this turn's model call within the request."""
    messages: Sequence[Message]
    """What the model is about to be sent (the last one is this turn's prompt)."""


@attrs.frozen
class ModelCall(_HasRun):
    """A turn's model call, as hooks and middlewares see it."""

    turn: int
    request: PromptRequest
    model: str
    """``provider:model``."""


@attrs.frozen
class ModelResponseInfo(_HasRun):
    turn: int
    request: PromptRequest
    response: ModelResponse


@attrs.frozen
class ModelErrorInfo(_HasRun):
    turn: int
    request: PromptRequest
    error: Exception


@attrs.frozen
class TurnEndInfo(_HasRun):
    turn: int
    response: ModelResponse


@attrs.frozen
class ToolCallInfo:
    turn: int
    tool_name: str
    call_id: str
    args: Any
    """The arguments as the model sent them (or as an earlier hook rewrote them)."""

    @property
    def tool(self) -> ToolCallControl:
        """Anvia's tool control: ``info.tool.skip("why")``, ``.request_approval(...)``."""
        return tool_call_control


@attrs.frozen
class ToolResultInfo(_HasRun):
    turn: int
    tool_name: str
    call_id: str
    args: Any
    """The effective arguments (after any rewrite)."""
    result: ToolResultData
    """The result so far (after any earlier hook's replacement)."""


@attrs.frozen
class RunEndInfo(_HasRun):
    output: str
    """The final answer's text."""
    value: Any
    """The validated structured output when the run has an output schema, else ``None``."""
    usage: TokenCounter
    turns: int


@attrs.frozen
class RunErrorInfo(_HasRun):
    error: Exception
    usage: TokenCounter
    turns: int


HookPoint: TypeAlias = Literal[
    "on_run_start",
    "on_turn_start",
    "on_model_call",
    "on_model_response",
    "on_model_error",
    "on_turn_end",
    "on_tool_call",
    "on_tool_result",
    "on_tool_error",
    "on_run_end",
    "on_run_error",
]
_POINTS: tuple[HookPoint, ...] = get_args(HookPoint)


class LifecycleHooks:
    """Subclass and override the points you need (see the module docstring)."""

    async def on_run_start(self, info: RunStartInfo) -> RunAction:
        return None

    async def on_turn_start(self, info: TurnStartInfo) -> RunAction:
        return None

    async def on_model_call(self, info: ModelCall) -> RunAction:
        return None

    async def on_model_response(self, info: ModelResponseInfo) -> RunAction:
        return None

    async def on_model_error(self, info: ModelErrorInfo) -> RunAction:
        return None

    async def on_turn_end(self, info: TurnEndInfo) -> RunAction:
        return None

    async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
        return None

    async def on_tool_result(self, info: ToolResultInfo) -> ToolResultAction:
        return None

    async def on_tool_error(self, info: ToolResultInfo) -> ToolResultAction:
        return None

    async def on_run_end(self, info: RunEndInfo) -> RunAction:
        return None

    async def on_run_error(self, info: RunErrorInfo) -> RunAction:
        return None


CallNext: TypeAlias = Callable[[PromptRequest], Awaitable[ModelResponse]]


class ModelMiddleware(Protocol):
    """Wraps a turn's model call: ``await call_next(request)`` calls the next one inward."""

    async def __call__(self, call: ModelCall, call_next: CallNext) -> ModelResponse: ...


class RunStopped(Exception):
    """Raised inside the loop when a hook returns :class:`StopRun` (the loop catches it).

    ``result`` is the stopping call's real result when a hook stopped after the call ran."""

    def __init__(self, point: HookPoint, reason: str, result: ToolResultData | None = None):
        super().__init__(f"stopped by {point}: {reason}")
        self.point: HookPoint = point
        self.reason = reason
        self.result = result
        self.response: ModelResponse | None = None
        """The reply ``on_model_response`` stopped on (not stored; its usage is counted)."""


# -- the runner ---------------------------------------------------------------------------------


class Lifecycle:
    """Runs a loop's hooks and middlewares (only the points some hook overrides)."""

    def __init__(
        self, hooks: Sequence[LifecycleHooks] = (), middlewares: Sequence[ModelMiddleware] = ()
    ) -> None:
        self._at: dict[HookPoint, tuple[LifecycleHooks, ...]] = {
            point: tuple(h for h in hooks if _overrides(h, point)) for point in _POINTS
        }
        self.approval_requests: dict[str, RequestApproval] = {}
        """Calls a hook asked approval for (by call id), taken by the executor."""
        self.middlewares = tuple(middlewares)
        self.wraps_model = bool(self.middlewares) or any(
            self._at[p] for p in ("on_model_call", "on_model_response", "on_model_error")
        )
        self.tool_hooks = any(
            self._at[p] for p in ("on_tool_call", "on_tool_result", "on_tool_error")
        )
        self.turn = 0
        self.notify: NotifyFn | None = None

    def has(self, point: HookPoint) -> bool:
        return bool(self._at[point])

    async def run(self, point: HookPoint, info: Any) -> None:
        """Call a run-level point's hooks in order; raise :class:`RunStopped` on a stop."""
        for hook in self._at[point]:
            action = await getattr(hook, point)(info)
            if isinstance(action, StopRun):
                await self._report(point, "stop", action.reason)
                raise RunStopped(point, action.reason)

    async def stop_on_error(self, info: RunErrorInfo) -> RunStopped | None:
        """``on_run_error``: the stop a hook turned the failure into, if any."""
        try:
            await self.run("on_run_error", info)
        except RunStopped as stop:
            return stop
        return None

    async def model_call(self, call: ModelCall, send: CallNext) -> ModelResponse:
        """``on_model_call``, the middlewares around ``send``, then ``on_model_response``
        (``on_model_error`` when it raises)."""
        await self.run("on_model_call", call)
        chain = send
        for middleware in reversed(self.middlewares):
            chain = _wrap(middleware, call, chain)
        try:
            response = await chain(call.request)
        except Exception as exc:
            await self.run("on_model_error", ModelErrorInfo(call.turn, call.request, exc))
            raise
        try:
            await self.run(
                "on_model_response", ModelResponseInfo(call.turn, call.request, response)
            )
        except RunStopped as stop:
            stop.response = response  # dropped, but its usage still counts
            raise
        return response

    async def before_tool(self, call: ToolCall) -> Any | ToolResultData:
        """``on_tool_call``: the effective arguments, or the result that answers the call."""
        args = call.input_args
        for hook in self._at["on_tool_call"]:
            action = await hook.on_tool_call(ToolCallInfo(self.turn, call.tool_name, call.id, args))
            match action:
                case None:
                    continue
                case RewriteInput():
                    args = action.args
                    await self._report("on_tool_call", "rewrite_input", call.tool_name)
                case SkipTool():
                    await self._report("on_tool_call", "skip", f"{call.tool_name}: {action.reason}")
                    return ToolResultData(
                        status="error", message=action.reason, error_kind="denied"
                    )
                case ReplaceResult():
                    await self._report("on_tool_call", "replace_result", call.tool_name)
                    return normalize_result(action.result)
                case StopRun():
                    await self._report("on_tool_call", "stop", action.reason)
                    raise RunStopped("on_tool_call", action.reason)
                case RequestApproval():
                    await self._report("on_tool_call", "request_approval", call.tool_name)
                    self.approval_requests[call.id] = action
        return args

    async def after_tool(self, call: ToolCall, args: Any, result: ToolResultData) -> ToolResultData:
        """``on_tool_result`` (or ``on_tool_error``): the result, possibly replaced."""
        point: HookPoint = "on_tool_error" if result.is_error else "on_tool_result"
        for hook in self._at[point]:
            info = ToolResultInfo(self.turn, call.tool_name, call.id, args, result)
            action = await getattr(hook, point)(info)
            if isinstance(action, ReplaceResult):
                result = normalize_result(action.result)
                await self._report(point, "replace_result", call.tool_name)
            elif isinstance(action, StopRun):
                await self._report(point, "stop", action.reason)
                raise RunStopped(point, action.reason, result)
        return result

    async def _report(
        self,
        point: HookPoint,
        action: Literal["stop", "skip", "rewrite_input", "replace_result", "request_approval"],
        detail: str,
    ) -> None:
        if self.notify is not None:
            await self.notify(HookActionEvent(point, action, detail))


def _overrides(hook: LifecycleHooks, point: HookPoint) -> bool:
    return getattr(type(hook), point) is not getattr(LifecycleHooks, point)


def _wrap(middleware: ModelMiddleware, call: ModelCall, inner: CallNext) -> CallNext:
    async def step(request: PromptRequest) -> ModelResponse:
        return await middleware(attrs.evolve(call, request=request), inner)

    return step
