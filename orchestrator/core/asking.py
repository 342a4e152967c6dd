"""Asking a person about a runtime's tool call: the one mechanism every adapter whose runtime
asks before acting uses (Claude Code's ``control_request{can_use_tool}`` in long-lived mode,
Codex's app-server ``item/*/requestApproval``, ACP's ``session/request_permission``).

The adapter's configured policy says ``allow``, ``deny`` or ``ask``; for ``ask`` it hands the call
to :meth:`ToolAsker.ask`, which

1. answers from a standing grant of the run or of the runtime in this directory (a decision
   given with scope ``run`` or ``always``, see :data:`~orchestrator.core.approvals.DecisionScope`);
2. with no approval book for the run (``StartOpts.approvals_db`` unset: nobody to ask) denies,
   saying so to the model (fail-closed);
3. otherwise records the call in the book (:class:`~orchestrator.core.approvals.ApprovalBook`),
   emits ``status{waiting_approval}`` carrying it, waits for a decision from ``ringleader
   approve``, the board or an ACP editor, emits ``status{running}`` naming the decision, and
   returns it. The adapter answers the runtime in its own protocol (allow, deny with the
   message, or allow with the edited input).

A run that ends while a call waits (abort, the process gone) cancels its entry. The native
runtime asks the same book through :class:`~orchestrator.core.approvals.BookHandler` directly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final, Protocol

import attrs
import trio

from orchestrator.core.approvals import (
    ApprovalBook,
    ApprovalDecision,
    ApprovalRequest,
    BookHandler,
    reject,
)
from orchestrator.core.events import ApprovalCall, EventFactory, RuntimeEvent

__all__ = ["NO_ONE_TO_ASK", "RUN_ENDED", "EventSink", "ToolAsker"]

NO_ONE_TO_ASK: Final = (
    "This tool call needs a person's approval and nobody can be asked in this run "
    "(start it with --approvals wait, or from `ringleader serve`)."
)
RUN_ENDED: Final = "The run ended before the approval was decided."


class EventSink(Protocol):
    """Where a run's events go (an adapter's ``RunEmitter`` is one)."""

    @property
    def factory(self) -> EventFactory: ...
    @property
    def finished(self) -> trio.Event: ...
    def publish(self, events: Iterable[RuntimeEvent]) -> Awaitable[None]: ...


@attrs.define(eq=False)
class ToolAsker:
    """One run's way to ask a person about its runtime's tool calls (see the module docstring)."""

    handler: BookHandler | None
    """The run's handler on the approval book; ``None``: nobody to ask (every ask denies)."""
    sink: EventSink

    @classmethod
    def for_run(
        cls,
        sink: EventSink,
        *,
        approvals_db: str | None,
        runtime_id: str,
        agent_id: str,
        session_key: str,
        cwd: str,
    ) -> ToolAsker:
        handler = None
        if approvals_db:
            handler = ApprovalBook(approvals_db).handler(
                runtime_id=runtime_id, agent_id=agent_id, session_key=session_key, cwd=cwd
            )
        return cls(handler, sink)

    async def ask(
        self, tool: str, tool_input: Any, call_id: str, *, reason: str | None = None
    ) -> ApprovalDecision:
        """A person's decision on one call (see the module docstring)."""
        make = self.sink.factory
        handler = self.handler
        if handler is None:
            await trio.lowlevel.checkpoint()
            return reject(NO_ONE_TO_ASK)
        request = ApprovalRequest(
            tool, tool_input, call_id, make.run_id or handler.run.session_key, reason
        )
        standing = await handler.standing(request)
        if standing is not None:
            return standing
        await handler.record(request)  # decidable before it is announced
        call = ApprovalCall(
            id=request.id, tool_call_id=call_id, name=tool, input=tool_input, reason=reason
        )
        await self._emit(
            lambda: make.waiting_approval(call, detail=f"approval {request.id}: {tool}")
        )
        decision: ApprovalDecision | None = None
        async with trio.open_nursery() as nursery:

            async def wait() -> None:
                nonlocal decision
                decision = await handler(request)
                nursery.cancel_scope.cancel()

            async def watch() -> None:
                await self.sink.finished.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(wait)
            nursery.start_soon(watch)
        if decision is None:
            return reject(RUN_ENDED)
        verb = "allowed" if decision.approved else "denied"
        reach = {"once": "", "run": " for the rest of the run", "always": " always here"}
        detail = f"approval {request.id}: {tool} {verb}{reach[decision.scope]}"
        await self._emit(lambda: make.status("running", detail=detail))
        return decision

    async def _emit(self, event: Callable[[], RuntimeEvent]) -> None:
        """Publish one event, made only while the run goes on (a made event takes a ``seq``)."""
        if not self.sink.finished.is_set():
            await self.sink.publish([event()])
