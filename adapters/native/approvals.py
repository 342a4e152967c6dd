"""Tool approvals: the request a handler sees, the decisions it may give, and how each applies.

Anvia's approval rules (``../shared/seeds/anvia-core-agent.txt``), in Python:

* a handler is an async function of an :class:`ApprovalRequest`; it is set for the Glove (or
  the adapter) and may be **overridden per request** (``glove.process_request(...,
  approvals=handler)``): the request's handler wins;
* its decision is ``True`` / ``False``, an :class:`ApprovalDecision` (:func:`approve`,
  :func:`reject`) or the seed's mapping shape ``{"approved": bool, "reason"?,
  "reject_message"?}``;
* approved runs the tool — with the decision's **edited input** when it has one (validated
  again like the model's input);
* rejected skips the tool; the model sees ``reject_message``, else ``reason``, else
  ``"Tool approval was rejected."`` as the tool's (error) result;
* a call that needs approval with **no handler** raises
  :class:`~orchestrator.errors.ToolApprovalRequiredError` from the run (the library default);
  runs through :class:`~.adapter.NativeAdapter` keep the fail-closed default instead — the call
  is denied and the model is told so — unless the run has a durable approval book
  (:mod:`orchestrator.approvals`), where it waits for a person.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeAlias, cast

import attrs

__all__ = [
    "DEFAULT_REJECT_MESSAGE",
    "ApprovalDecision",
    "ApprovalHandler",
    "ApprovalRequest",
    "DecisionLike",
    "approve",
    "as_decision",
    "reject",
]

DEFAULT_REJECT_MESSAGE: Final = "Tool approval was rejected."


@attrs.frozen
class ApprovalRequest:
    """One tool call waiting for a decision (its input already validated)."""

    tool_name: str
    tool_input: Any
    """The validated input as JSON (what the tool would run with)."""
    call_id: str
    """The model's tool call id."""
    session_id: str = ""
    """The run's session (the native store's id)."""
    reason: str | None = None
    """Why it needs approval (the policy's ``ask``, or a hook's request)."""

    @property
    def id(self) -> str:
        """The approval's id: stable for the call of the session (``ringleader approve ID``)."""
        digest = hashlib.sha256(f"{self.session_id}\0{self.call_id}".encode()).hexdigest()
        return f"ap-{digest[:12]}"


@attrs.frozen
class ApprovalDecision:
    """A handler's answer. ``input`` (approve only) replaces the call's input."""

    approved: bool
    reason: str | None = None
    reject_message: str | None = None
    """What the model sees when rejected (wins over ``reason``)."""
    input: Mapping[str, Any] | None = None

    def rejection_text(self) -> str:
        return self.reject_message or self.reason or DEFAULT_REJECT_MESSAGE

    def to_json(self) -> dict[str, Any]:
        return {
            "approved": self.approved,
            "reason": self.reason,
            "rejectMessage": self.reject_message,
            "input": None if self.input is None else dict(self.input),
        }


DecisionLike: TypeAlias = bool | ApprovalDecision | Mapping[str, Any]
ApprovalHandler: TypeAlias = Callable[[ApprovalRequest], Awaitable[DecisionLike]]


def approve(
    reason: str | None = None, *, input: Mapping[str, Any] | None = None
) -> ApprovalDecision:
    """Run the tool (with ``input`` instead of the model's, when given)."""
    return ApprovalDecision(True, reason=reason, input=input)


def reject(message: str | None = None, *, reason: str | None = None) -> ApprovalDecision:
    """Skip the tool; the model sees ``message`` (else ``reason``, else the default text)."""
    return ApprovalDecision(False, reason=reason, reject_message=message)


def as_decision(value: DecisionLike) -> ApprovalDecision:
    """Any decision shape a handler may return, as an :class:`ApprovalDecision`."""
    if isinstance(value, ApprovalDecision):
        return value
    if isinstance(value, bool):
        return ApprovalDecision(value)
    data = value
    edited = data.get("input")
    return ApprovalDecision(
        approved=data.get("approved") is True,
        reason=_opt_str(data.get("reason")),
        reject_message=_opt_str(data.get("reject_message", data.get("rejectMessage"))),
        input=cast(Mapping[str, Any], edited) if isinstance(edited, Mapping) else None,
    )


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
