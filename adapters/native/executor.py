"""The executor: runs one reply's tool calls and returns their results in call order.

Per call, in order (Glove's steps, with the Part C decisions):

1. lookup by name (case-insensitive); an unknown tool gets Glove's helpful error with near
   matches and the list of tools (C#11);
2. arguments that were not valid JSON get an ``invalid_input`` error the model can correct (C#12);
3. validation against the pydantic input model (or the raw JSON Schema of a bridged tool,
   with ``jsonschema``); a compact error naming each field (C#10);
4. permission, on the *validated* input, fail-closed (C#21): the tool's policy verdict
   (:mod:`.policy`) ``deny`` denies, ``allow`` runs, ``ask`` consults the store and the approval
   handler (the request's, else the executor's; :mod:`orchestrator.core.approvals`), which may
   approve (with an edited input, validated again), or reject with a message the model sees; a
   store without the permissions capability denies; an ``unset`` decision with no handler raises
   :class:`~orchestrator.core.errors.ToolApprovalRequiredError` (``unhandled="raise"``, the library
   default) or denies (``unhandled="deny"``, the adapter's);
5. run, with a per-tool timeout (C#16); a call that raises is retried with backoff up to the
   executor's ``max_retries`` (Glove's ``maxRetries``; a tool's own ``max_retries`` overrides it,
   ``0`` for a tool that must not repeat); an ``un_abortable`` tool runs to completion despite a
   cancel (Glove's rule; the request ends once it has).

Consecutive ``parallel_safe`` calls run concurrently (bounded by a ``trio.CapacityLimiter``;
with ``all_concurrent`` every call does, as Anvia's ``withToolConcurrency`` asks);
a tool that fails with a raised error cancels its running siblings, which get ``aborted``
results (C#14). Results are stored in call order and notified as they finish.

A cancel leaves :class:`ToolBatch` partially filled; :meth:`ToolBatch.close_open` synthesizes an
``aborted`` result for every call without one, so no ``tool_use`` is ever left dangling.
"""

from __future__ import annotations

import difflib
import logging
import math
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal, TypeAlias

import attrs
import trio
from pydantic import BaseModel, ValidationError

from orchestrator.core.approvals import (
    ApprovalDecision,
    ApprovalHandler,
    ApprovalRequest,
    BookHandler,
    RecordingHandler,
    as_decision,
)
from orchestrator.core.errors import ToolApprovalRequiredError

from .cancel import CancelToken
from .lifecycle import Lifecycle, RequestApproval, RunStopped
from .messages import ToolCall, ToolErrorKind, ToolResult, ToolResultData
from .stores.base import Store
from .subscriber import ApprovalRequested, NotifyFn, ToolUseResult
from .tools import (
    HandOverFunction,
    Tool,
    ToolContext,
    ToolInputError,
    format_validation_error,
    normalize_result,
)

__all__ = ["Executor", "PermissionHandler", "PermissionRequest", "ToolBatch", "Unhandled"]

_log = logging.getLogger(__name__)


PermissionRequest = ApprovalRequest
"""The request an approval handler gets (the older name of
:class:`orchestrator.core.approvals.ApprovalRequest`)."""
PermissionHandler: TypeAlias = ApprovalHandler
Unhandled: TypeAlias = Literal["raise", "deny"]
"""What an ``ask`` with no approval handler does (see the module docstring)."""


@attrs.define
class ToolBatch:
    """One reply's calls and the results gathered so far (index-aligned)."""

    calls: Sequence[ToolCall]
    results: list[ToolResult | None] = attrs.field(init=False)
    notified: list[bool] = attrs.field(init=False)
    stop: RunStopped | None = attrs.field(default=None, init=False)
    """Set when a lifecycle hook stopped the run during this batch."""

    def __attrs_post_init__(self) -> None:
        self.results = [None] * len(self.calls)
        self.notified = [False] * len(self.calls)

    def close_open(self, message: str = "Tool execution was aborted.") -> None:
        for i, call in enumerate(self.calls):
            if self.results[i] is None:
                self.results[i] = _result(call, "aborted", message, "aborted", 0.0)

    def done(self) -> list[ToolResult]:
        return [r for r in self.results if r is not None]


def _result(
    call: ToolCall, status: Any, message: str, kind: ToolErrorKind, duration_ms: float
) -> ToolResult:
    return ToolResult(
        tool_name=call.tool_name,
        call_id=call.id,
        result=ToolResultData(status=status, message=message, error_kind=kind),
        duration_ms=duration_ms,
    )


class Executor:
    """Holds the tool registry and runs batches (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        notify: NotifyFn,
        *,
        max_retries: int = 3,
        max_concurrency: int = 8,
        permission_handler: PermissionHandler | None = None,
        retry_backoff_s: float = 0.2,
        unhandled: Unhandled = "raise",
    ) -> None:
        self.store = store
        self.notify = notify
        self.max_retries = max_retries
        self.limiter = trio.CapacityLimiter(max_concurrency)
        self.permission_handler = permission_handler
        self.unhandled: Unhandled = unhandled
        self.retry_backoff_s = retry_backoff_s
        self._tools: dict[str, Tool[Any]] = {}
        self._by_lower: dict[str, Tool[Any]] = {}
        self.context_extras: dict[str, Any] = {}
        self.all_concurrent = False
        """Run every call of a batch concurrently (bounded by ``limiter``), not only
        ``parallel_safe`` ones."""

    # -- registry ------------------------------------------------------------------------------

    def register(self, tool: Tool[Any]) -> None:
        self._tools[tool.name] = tool
        self._by_lower[tool.name.lower()] = tool

    def unregister(self, name: str) -> None:
        tool = self._tools.pop(name, None)
        if tool is not None:
            self._by_lower.pop(name.lower(), None)

    @property
    def tools(self) -> Sequence[Tool[Any]]:
        return tuple(self._tools.values())

    def lookup(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name) or self._by_lower.get(name.lower())

    def unknown_tool_message(self, name: str) -> str:
        names = sorted(self._tools)
        if not names:
            return f"No tool called {name} exists. No tools are registered."
        low = name.lower()
        near = [n for n in names if low in n.lower() or n.lower() in low]
        near += [n for n in difflib.get_close_matches(name, names, n=3) if n not in near]
        hint = f" Did you mean {' or '.join(near[:3])}?" if near else ""
        return f"No tool called {name} exists.{hint} Available tools: {', '.join(names)}."

    # -- execution -------------------------------------------------------------------------------

    async def execute(
        self,
        batch: ToolBatch,
        token: CancelToken,
        session: str = "",
        hooks: Lifecycle | None = None,
        *,
        approvals: ApprovalHandler | None = None,
        hand_over: HandOverFunction | None = None,
        interrupted: bool = False,
    ) -> None:
        """Fill ``batch.results`` (call order); ``approvals`` overrides the executor's approval
        handler for this batch, ``hand_over`` reaches every tool as ``ToolContext.hand_over``. Raises ``Cancelled`` on a cancel, batch partial,
        :class:`~.lifecycle.RunStopped` when a tool hook stops the run (the calls not started
        are left open for the loop to close), and ``ToolApprovalRequiredError``.

        ``interrupted``: the calls were left unanswered by a process that stopped (a resumed
        session): one that needed no approval may have been running then, so it is not run
        again — the model is told it was interrupted; one that asks for approval goes to the
        handler (a durable book answers it from its record)."""
        run = _Run(
            token,
            session,
            hooks,
            approvals or self.permission_handler,
            hand_over=hand_over,
            interrupted=interrupted,
        )
        calls = batch.calls
        i = 0
        while i < len(calls):
            if batch.stop is not None:
                raise batch.stop
            j = i + 1
            tool = self.lookup(calls[i].tool_name)
            if self.all_concurrent:
                j = len(calls)
            elif tool is not None and tool.parallel_safe:
                while j < len(calls):
                    nxt = self.lookup(calls[j].tool_name)
                    if nxt is None or not nxt.parallel_safe:
                        break
                    j += 1
            if j - i == 1:
                await self._run_and_record(batch, i, run)
            else:
                await self._run_group(batch, range(i, j), run)
            i = j
        if batch.stop is not None:
            raise batch.stop

    async def _run_group(self, batch: ToolBatch, indices: range, run: _Run) -> None:
        failed: list[int] = []
        unapproved: list[ToolApprovalRequiredError] = []

        async def one(index: int) -> None:
            async with self.limiter:
                try:
                    result = await self._run_and_record(batch, index, run)
                except ToolApprovalRequiredError as exc:
                    unapproved.append(exc)
                    nursery.cancel_scope.cancel()
                    return
            if batch.stop is not None:
                nursery.cancel_scope.cancel()  # siblings stay open: the loop closes them
            elif result.result.error_kind == "failed":
                failed.append(index)
                nursery.cancel_scope.cancel()

        async with trio.open_nursery() as nursery:
            for index in indices:
                nursery.start_soon(one, index)
        if unapproved:
            raise unapproved[0]
        if failed and batch.stop is None:
            culprit = batch.calls[failed[0]]
            for index in indices:
                if batch.results[index] is None:
                    call = batch.calls[index]
                    res = _result(
                        call,
                        "aborted",
                        f"Cancelled because sibling call {culprit.id} ({culprit.tool_name}) failed.",
                        "aborted",
                        0.0,
                    )
                    batch.results[index] = res
                    batch.notified[index] = True
                    await self._notify(res)

    async def _run_and_record(self, batch: ToolBatch, index: int, run: _Run) -> ToolResult:
        call = batch.calls[index]
        began = trio.current_time()
        if run.hooks is None:
            data = await self._run_one(call, run)
        else:
            try:
                data = await self._run_hooked(call, run, run.hooks)
            except RunStopped as stop:
                batch.stop = stop
                data = stop.result or _aborted(
                    f"Not run: the run was stopped ({stop.point}: {stop.reason})."
                )
        result = ToolResult(
            tool_name=call.tool_name,
            call_id=call.id,
            result=data,
            duration_ms=round((trio.current_time() - began) * 1000, 3),
        )
        batch.results[index] = result
        batch.notified[index] = True
        await self._notify(result)
        return result

    async def _notify(self, result: ToolResult) -> None:
        await self.notify(
            ToolUseResult(
                result.tool_name, result.call_id, result.result, result.duration_ms or 0.0
            )
        )

    async def _run_hooked(self, call: ToolCall, run: _Run, hooks: Lifecycle) -> ToolResultData:
        """``on_tool_call`` (rewrite, skip, answer, stop), the call, then ``on_tool_result`` /
        ``on_tool_error`` (replace, stop) — :mod:`.lifecycle`."""
        args = await hooks.before_tool(call)
        asked = hooks.approval_requests.pop(call.id, None)
        if isinstance(args, ToolResultData):
            data = args
            args = call.input_args
        elif args is call.input_args:
            data = await self._run_one(call, run, asked)
        else:
            rewritten = call.model_copy(update={"input_args": args, "parse_error": None})
            data = await self._run_one(rewritten, run, asked)
        return await hooks.after_tool(call, args, data)

    async def _run_one(
        self, call: ToolCall, run: _Run, asked: RequestApproval | None = None
    ) -> ToolResultData:
        tool = self.lookup(call.tool_name)
        if tool is None:
            return _error(self.unknown_tool_message(call.tool_name), "not_found")
        if call.parse_error is not None:
            return _error(
                f"The arguments for tool {tool.name!r} are not valid JSON ({call.parse_error}). "
                "Send a JSON object that matches the tool's schema.",
                "invalid_input",
            )
        try:
            value = tool.validate(call.input_args)
        except (ValidationError, ToolInputError, TypeError) as exc:
            return _error(format_validation_error(tool.name, exc), "invalid_input")
        decision = tool.permission_decision(value)
        if asked is not None and decision != "deny":
            decision = "ask"  # a hook asked for approval (a policy deny still denies)
        if decision == "deny":
            return _error(
                f'Permission denied for tool "{tool.name}": the permission policy of this run '
                "does not allow it.",
                "denied",
            )
        if run.interrupted and decision == "allow":
            return _error(
                f"The {tool.name} call was interrupted: the process running it stopped before it "
                "finished, and it was not run again (its effects, if any, may be partial). Check "
                "the state and run it again if it is still needed.",
                "aborted",
            )
        if decision == "ask":
            book = run.handler if isinstance(run.handler, BookHandler) else None
            asked_for = None
            if book is not None:
                key_input = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
                asked_for = ApprovalRequest(tool.name, key_input, call.id, run.session)
                if run.interrupted and await book.started(asked_for):
                    return _interrupted_approved(tool.name)
            verdict = await self._check_permission(tool, value, call, run, asked)
            if isinstance(verdict, ToolResultData):
                return verdict
            if verdict is not None:  # approved with an edited input: validated like the model's
                try:
                    value = tool.validate(dict(verdict))
                except (ValidationError, ToolInputError, TypeError) as exc:
                    return _error(format_validation_error(tool.name, exc), "invalid_input")
            if book is not None and asked_for is not None:
                # durable before it runs: a resume after a crash reports it, never re-runs it
                await book.mark_started(asked_for)
        return await self._run_with_retries(tool, value, call, run)

    async def _check_permission(
        self, tool: Tool[Any], value: Any, call: ToolCall, run: _Run, asked: RequestApproval | None
    ) -> ToolResultData | Mapping[str, Any] | None:
        """``None`` to run as is, an edited input to run with, or the result that denies. A
        hook's request is asked every time (no remembered decision)."""
        store = self.store
        if not store.capabilities.permissions:
            return _error(
                f'Permission denied for tool "{tool.name}": the store cannot record approvals.',
                "denied",
            )
        key_input = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        status = "unset" if asked else await store.get_permission(tool.name, key_input)
        if run.interrupted and status == "granted":
            # approved before the stop (this input is remembered): it ran without waiting, and
            # may have been running when the process stopped — never run it again
            return _interrupted_approved(tool.name)
        if status == "unset":
            reason = asked.reason if asked else None
            request = ApprovalRequest(tool.name, key_input, call.id, run.session, reason)
            if run.handler is None:
                if self.unhandled == "raise":
                    raise ToolApprovalRequiredError(
                        f'tool "{tool.name}" needs approval and no approval handler is configured',
                        request=request,
                    )
                return _error(
                    f'Permission denied for tool "{tool.name}": it needs approval and no '
                    "approval handler is configured.",
                    "denied",
                )
            standing = None
            if isinstance(run.handler, BookHandler) and asked is None:
                standing = await run.handler.standing(request)  # a run or always grant
            if standing is not None:
                if run.interrupted and standing.approved:  # it ran at once: maybe still running
                    return _interrupted_approved(tool.name)
                return _apply(standing)
            if isinstance(run.handler, RecordingHandler):  # decidable before it is announced
                await run.handler.record(request)
            await self.notify(ApprovalRequested(request))
            decision = as_decision(await run.handler(request))
            if asked is None and decision.input is None:  # a plain decision is remembered
                status = "granted" if decision.approved else "denied"
                await store.set_permission(tool.name, status, key_input)
            if asked is not None and not (decision.reject_message or decision.reason):
                # the seed's order: the decision's message, its reason, then the request's
                decision = attrs.evolve(decision, reject_message=asked.reject_message)
            return _apply(decision)
        if status == "granted":
            return None
        return _error(
            f'Permission denied for tool "{tool.name}". The user has not granted permission '
            "to run this tool.",
            "denied",
        )

    async def _run_with_retries(
        self, tool: Tool[Any], value: Any, call: ToolCall, run: _Run
    ) -> ToolResultData:
        token, session = run.token, run.session
        retries = self.max_retries if tool.max_retries is None else tool.max_retries
        ctx = ToolContext(
            call_id=call.id,
            tool_name=tool.name,
            idempotency_key=f"{session}:{call.id}",
            display=self.context_extras.get("display"),
            glove=self.context_extras.get("glove"),
            cancel=token,
            run=self.context_extras.get("run"),
            hand_over=run.hand_over,
        )
        attempt = 0
        while True:
            attempt += 1
            ctx.attempt = attempt
            shield: AbstractContextManager[Any] = (
                token.shield(math.inf) if tool.un_abortable else nullcontext()
            )
            try:
                out: Any = _NOTHING
                with shield as shield_scope:
                    if tool.timeout_s is not None:
                        with trio.move_on_after(tool.timeout_s) as timer:
                            out = await tool.do(value, ctx)
                        if timer.cancelled_caught:
                            return _error(
                                f"Tool {tool.name!r} timed out after {tool.timeout_s:g}s.",
                                "timeout",
                            )
                    else:
                        out = await tool.do(value, ctx)
                if out is _NOTHING or (shield_scope is not None and shield_scope.cancelled_caught):
                    return _aborted(f"Tool {tool.name!r} did not finish within its abort grace.")
                return normalize_result(out)
            except Exception as exc:
                if attempt <= retries:
                    await trio.sleep(self.retry_backoff_s * (2 ** (attempt - 1)))
                    continue
                _log.debug("tool %s failed", tool.name, exc_info=True)
                return _error(
                    f"Tool {tool.name!r} raised {type(exc).__name__}: {exc} "
                    f"(after {attempt} attempt{'s' if attempt != 1 else ''}).",
                    "failed",
                )


_NOTHING: Any = object()


@attrs.frozen
class _Run:
    """What every call of one ``execute`` shares."""

    token: CancelToken
    session: str
    hooks: Lifecycle | None
    handler: ApprovalHandler | None
    hand_over: HandOverFunction | None = None
    interrupted: bool = False


def _interrupted_approved(tool: str) -> ToolResultData:
    """The result of an approved call a stopped process had started (a resumed session)."""
    return _error(
        f"The {tool} call was interrupted: it had been approved and had started when the "
        "process running it stopped, and it was not run again (its effects, if any, may be "
        "partial). Check the state and run it again if it is still needed.",
        "aborted",
    )


def _apply(decision: ApprovalDecision) -> ToolResultData | Mapping[str, Any] | None:
    if not decision.approved:
        return _error(decision.rejection_text(), "denied")
    return decision.input


def _error(message: str, kind: ToolErrorKind) -> ToolResultData:
    return ToolResultData(status="error", message=message, error_kind=kind)


def _aborted(message: str) -> ToolResultData:
    return ToolResultData(status="aborted", message=message, error_kind="aborted")
