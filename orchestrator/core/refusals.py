"""Tool calls that did not run because they were refused, read from a run's normalized events.

A run whose agent wanted to write but was refused can still end ``success`` (the agent decides
what to do with a refusal), with nothing changed: a person reading "files changed 0" needs to
know why. Every runtime reports a refused call as a ``tool-result{is_error}``; what marks it as
a refusal rather than a failure is the text the refusing side wrote, or the decision a person
made (``status{running}`` naming it, after ``status{waiting_approval}``). :class:`Refusals`
folds a run's events and counts each refused call once (by its ``toolCallId``):

* **needs approval** — nobody was asked: Claude Code's own refusal ("… needs approval. …",
  ``system/permission_denied``), ours when a run has nobody to ask
  (:data:`~orchestrator.core.asking.NO_ONE_TO_ASK`), the native runtime's fail-closed default,
  :data:`NEEDS_APPROVAL_MARK`;
* **denied** — a person or a policy said no: a decision ``approval ID: TOOL denied``, our
  :data:`~orchestrator.core.approvals.DEFAULT_REJECT_MESSAGE`, the native runtime's
  ``Permission denied for tool "…"``, OpenClaw's ``Exec denied``, Codex's declined item
  (its normalizer writes ``[declined]``).

Where the runtime's own text says neither, its normalizer marks the output
(:data:`DECLINED_MARK`, :data:`NEEDS_APPROVAL_MARK`): Codex's declined items, an ACP agent's
calls whose permission request the adapter refused, and Claude Code's calls our permission
policy denied (Claude Code returns only the policy's message).

A plain failure (``bash: x: Permission denied``, a non-zero exit) is not a refusal. Used by the
CLI's lanes (the side-by-side summary) and the board's cards (``orchestrator/board/projection.py``
keeps the fold's state in each card) — the same fold for every runtime and every surface.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from orchestrator.core.events import RuntimeEvent, Status, ToolResult

__all__ = ["DECLINED_MARK", "NEEDS_APPROVAL_MARK", "Refusals"]

DECLINED_MARK: Final = "[declined]"
"""What a normalizer writes first in the output of a call its runtime declined without a text
of its own (Codex's ``status: declined``; an ACP agent's call whose permission was denied)."""
NEEDS_APPROVAL_MARK: Final = "[needs approval]"
"""Likewise for a call refused because nobody could be asked (an ACP agent's call whose
permission request had nobody to answer it)."""

_NEEDS_APPROVAL: Final = re.compile(r"\bneeds (?:a person's )?approval\b", re.IGNORECASE)
_DENIED: Final = re.compile(
    r"Tool approval was rejected\.|Permission denied for tool \"|\bExec denied\b|"
    + re.escape(DECLINED_MARK)
)
_DECISION: Final = re.compile(r"^approval (\S+): .+ denied\b")


@attrs.define(eq=False)
class Refusals:
    """The refused tool calls of one run (see the module docstring); :meth:`apply` each event."""

    needs_approval: set[str] = attrs.field(factory=set[str])
    """Calls refused because nobody was asked (their ``toolCallId``)."""
    denied: set[str] = attrs.field(factory=set[str])
    """Calls a person or a policy denied."""
    _asked: dict[str, str] = attrs.field(factory=dict[str, str])
    """Approval id → the call it asked about (from ``status{waiting_approval}``)."""

    @classmethod
    def resume(
        cls, needs_approval: Iterable[str], denied: Iterable[str], asked: Iterable[tuple[str, str]]
    ) -> Refusals:
        """A fold that goes on from a kept state (:attr:`needs_approval`, :attr:`denied`,
        :attr:`asked`): the board keeps it in its cards (``orchestrator/board/projection.py``)."""
        fold = cls(set(needs_approval), set(denied))
        fold._asked.update(asked)
        return fold

    @property
    def asked(self) -> Mapping[str, str]:
        """Approval id → the call it asked about (what :meth:`resume` takes back)."""
        return self._asked

    @staticmethod
    def concerns(event: RuntimeEvent) -> bool:
        """Whether :meth:`apply` may change anything for ``event`` (a failed call, a status that
        asks or decides): a fold kept elsewhere (the board's cards) skips the rest cheaply."""
        if isinstance(event, ToolResult):
            return event.is_error
        if isinstance(event, Status):
            return event.approval is not None or _DECISION.match(event.detail or "") is not None
        return False

    def apply(self, event: RuntimeEvent) -> None:
        if isinstance(event, Status):
            if event.approval is not None:
                self._asked[event.approval.id] = event.approval.tool_call_id
            decision = _DECISION.match(event.detail or "")
            if decision is not None:
                approval_id = decision.group(1)
                call = self._asked.get(approval_id, f"approval:{approval_id}")
                self.needs_approval.discard(call)
                self.denied.add(call)
        elif isinstance(event, ToolResult) and event.is_error:
            call = event.tool_call_id
            if call in self.denied or call in self.needs_approval:
                return
            if _NEEDS_APPROVAL.search(event.output):
                self.needs_approval.add(call)
            elif _DENIED.search(event.output):
                self.denied.add(call)

    @property
    def count(self) -> int:
        return len(self.needs_approval) + len(self.denied)

    def summary(self) -> str | None:
        """``2 tool calls refused (needs approval), 1 denied``; ``None`` when none was."""
        if not self.count:
            return None
        needs, denied = len(self.needs_approval), len(self.denied)
        calls = f"tool call{'s' if (needs or denied) > 1 else ''}"
        if needs and denied:
            return f"{needs} {calls} refused (needs approval), {denied} denied"
        if needs:
            return f"{needs} {calls} refused (needs approval)"
        return f"{denied} {calls} denied"

    def hint(self, *, board: bool = False) -> str | None:
        """:meth:`summary` with what a person can do about it (``board``: as the board says it,
        on a card or a run page); ``None`` when nothing was refused."""
        said = self.summary()
        if said is None:
            return None
        if not self.needs_approval:
            return f"{said} (by a person or a permission policy)"
        if board:
            return (
                f"{said}: nobody was asked. Start the task from this board (`ringleader serve` "
                "asks you here) or with `ringleader run --approvals wait`, and a person decides "
                "each call"
            )
        return (
            f"{said} — run with --approvals wait and a person decides each one "
            "(`ringleader approvals`, `ringleader approve`, the board)"
        )
