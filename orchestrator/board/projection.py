"""The board's projection: a run's events → its card (column, phase, tokens, cost, last line).

Pure: :func:`apply` folds one event into a :class:`Card` (no I/O, no clock), :func:`project`
folds a whole stream, and :class:`Board` keeps one card per run key over the log's interleaved
events. The board page (``orchestrator/board/static/board.js``) applies the same rules to the
live SSE feed; ``GET /board`` serves this module's projection of the log, so a page that loads
the snapshot and then follows the feed shows the same board as one that watched from the start.

Columns: ``queued`` (a run with no event yet, or only ``status{queued}``: waiting for a free
slot under its runtime's ``max_runs``, the reason in :attr:`Card.waiting_for`), ``running`` (events, no ``done``), ``waiting``
(running, with a tool call waiting for a person's approval — an overlay the hosting process
knows, see :func:`column_of`), and one terminal column per ending: ``done`` (``done{success}`` or
``done{max_turns}``: the run ended normally; the runner may rotate it), ``failed``
(``done{error}``), ``aborted`` (``done{aborted}``), ``interrupted`` (``done{error}`` after an
``error{code: interrupted}`` — the log closed a run whose owner process died). The first ``done``
fixes the column: anything after it is counted but changes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias, cast, get_args

import attrs

from orchestrator.core.events import (
    Cost,
    Done,
    ErrorEvent,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
    assert_exhaustive,
)
from orchestrator.core.refusals import Refusals
from orchestrator.engine.eventlog import LoggedEvent

__all__ = [
    "COLUMNS",
    "TERMINAL_COLUMNS",
    "Board",
    "BoardColumn",
    "Card",
    "apply",
    "card_from_cache",
    "card_to_cache",
    "column_of",
    "project",
]

BoardColumn: TypeAlias = Literal[
    "queued", "running", "waiting", "done", "failed", "aborted", "interrupted"
]
COLUMNS: tuple[BoardColumn, ...] = (
    "queued",
    "running",
    "waiting",
    "done",
    "failed",
    "aborted",
    "interrupted",
)
TERMINAL_COLUMNS: frozenset[BoardColumn] = frozenset({"done", "failed", "aborted", "interrupted"})

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""Line breaks as the page's JavaScript splits them (not ``str.splitlines``'s wider set)."""

LAST_LINE_CHARS = 200
"""The card keeps at most this much of the last line of assistant text."""


@attrs.frozen
class Card:
    """One run's card. ``cost_usd`` is ``None`` while no ``cost``/``done`` reported a price
    (shown as unknown, never as 0); ``estimated`` marks a derived (list-price) figure."""

    run_key: str
    column: BoardColumn = "queued"
    phase: str = "queued"
    reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    estimated: bool = False
    started_ts: int | None = None
    updated_ts: int | None = None
    ended_ts: int | None = None
    last_line: str = ""
    text_tail: str = ""
    """The end of the assistant text (``2 * LAST_LINE_CHARS``), where the last line comes from."""
    events: int = 0
    open_tool_calls: tuple[str, ...] = ()
    error: str | None = None
    error_code: str | None = None
    after_done: int = 0
    """Events that arrived after the run's ``done`` (a broken stream; ignored)."""
    waiting_for: str | None = None
    """While queued: why the run waits (``status{queued}``'s detail); ``None`` once it runs."""
    refused_needs_approval: tuple[str, ...] = ()
    """The run's tool calls refused because nobody was asked (sorted ``toolCallId``s): the
    state of :class:`~orchestrator.core.refusals.Refusals`, the fold the CLI's done line uses."""
    refused_denied: tuple[str, ...] = ()
    """The calls a person or a policy denied (likewise)."""
    approval_calls: tuple[tuple[str, str], ...] = ()
    """Approval id → the call it asked about, as the refusal fold keeps them (sorted pairs)."""

    @property
    def terminal(self) -> bool:
        return self.column in TERMINAL_COLUMNS

    @property
    def refusals(self) -> Refusals:
        """The refused calls as :class:`~orchestrator.core.refusals.Refusals` (a fresh fold)."""
        return Refusals.resume(
            self.refused_needs_approval, self.refused_denied, self.approval_calls
        )

    def refusals_json(self) -> dict[str, Any] | None:
        """What the card says of refused calls (``None``: none was): the counts, the CLI's
        summary and the board's hint (:meth:`~orchestrator.core.refusals.Refusals.hint`)."""
        fold = self.refusals
        summary = fold.summary()
        if summary is None:
            return None
        return {
            "needsApproval": len(fold.needs_approval),
            "denied": len(fold.denied),
            "summary": summary,
            "hint": fold.hint(board=True),
        }

    def to_json(self) -> dict[str, Any]:
        """The card with the wire's camelCase names (what ``GET /board`` serves)."""
        return {
            "runKey": self.run_key,
            "column": self.column,
            "phase": self.phase,
            "reason": self.reason,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "costUsd": self.cost_usd,
            "estimated": self.estimated,
            "startedTs": self.started_ts,
            "updatedTs": self.updated_ts,
            "endedTs": self.ended_ts,
            "lastLine": self.last_line,
            "textTail": self.text_tail,
            "events": self.events,
            "openToolCalls": list(self.open_tool_calls),
            "error": self.error,
            "errorCode": self.error_code,
            "waitingFor": self.waiting_for,
            "refusals": self.refusals_json(),
        }


def _last_line(tail: str) -> str:
    """The last non-empty line of ``tail`` (capped from the left): the lines split as
    :data:`_LINE_BREAK` splits them, walked from the end (no split of the whole tail per
    delta)."""
    end = len(tail)
    while end > 0:
        start = max(tail.rfind("\n", 0, end), tail.rfind("\r", 0, end)) + 1
        line = tail[start:end]
        if line.strip():
            return line[-LAST_LINE_CHARS:]
        end = start - 1
    return ""


def _refused(card: Card, event: RuntimeEvent) -> dict[str, Any]:
    """The card's refusal fields after ``event`` (:class:`~orchestrator.core.refusals.Refusals`
    applied to the state the card keeps); none changed: ``{}``."""
    if not Refusals.concerns(event):
        return {}
    fold = card.refusals
    fold.apply(event)
    if (
        fold.needs_approval == set(card.refused_needs_approval)
        and fold.denied == set(card.refused_denied)
        and fold.asked == dict(card.approval_calls)
    ):
        return {}
    return {
        "refused_needs_approval": tuple(sorted(fold.needs_approval)),
        "refused_denied": tuple(sorted(fold.denied)),
        "approval_calls": tuple(sorted(fold.asked.items())),
    }


def _ending(reason: str, error_code: str | None) -> BoardColumn:
    if reason == "aborted":
        return "aborted"
    if reason == "error":
        return "interrupted" if error_code == "interrupted" else "failed"
    return "done"


def apply(card: Card, event: RuntimeEvent) -> Card:
    """``card`` after ``event`` (pure)."""
    if card.terminal:
        return attrs.evolve(card, after_done=card.after_done + 1, events=card.events + 1)
    if card.column == "queued" and type(event) is Status and event.phase == "queued":
        return attrs.evolve(
            card, events=card.events + 1, updated_ts=event.ts, waiting_for=event.detail
        )
    started = card.started_ts if card.started_ts is not None else event.ts
    if isinstance(event, TextDelta):  # most events: one copy of the card, not two
        running = "running" if card.column == "queued" else card.column
        if event.channel == "reasoning":
            return attrs.evolve(
                card,
                events=card.events + 1,
                started_ts=started,
                updated_ts=event.ts,
                column=running,
                phase="thinking",
            )
        tail = (card.text_tail + event.text)[-2 * LAST_LINE_CHARS :]
        return attrs.evolve(
            card,
            events=card.events + 1,
            started_ts=started,
            updated_ts=event.ts,
            column=running,
            phase="running" if card.phase == "queued" else card.phase,
            text_tail=tail,
            last_line=_last_line(tail),
        )
    base = attrs.evolve(
        card,
        events=card.events + 1,
        started_ts=started,
        updated_ts=event.ts,
        column="running" if card.column == "queued" else card.column,
        phase="running" if card.phase == "queued" else card.phase,
        waiting_for=None,
    )
    match event:
        case ToolCall():
            calls = card.open_tool_calls
            if event.tool_call_id not in calls:
                calls = (*calls, event.tool_call_id)
            return attrs.evolve(base, open_tool_calls=calls, phase=f"tool: {event.name}")
        case ToolResult():
            calls = tuple(c for c in card.open_tool_calls if c != event.tool_call_id)
            return attrs.evolve(
                base, open_tool_calls=calls, phase="running", **_refused(card, event)
            )
        case Status():
            return attrs.evolve(base, phase=event.phase, **_refused(card, event))
        case Cost():
            return attrs.evolve(
                base,
                input_tokens=max(card.input_tokens, event.usage.input_tokens),
                output_tokens=max(card.output_tokens, event.usage.output_tokens),
                cost_usd=event.cost_usd if event.cost_usd is not None else card.cost_usd,
                estimated=event.estimated if event.cost_usd is not None else card.estimated,
            )
        case ErrorEvent():
            return attrs.evolve(base, error=event.message, error_code=event.code)
        case Done():
            usage = event.usage
            return attrs.evolve(
                base,
                column=_ending(event.reason, card.error_code),
                phase=event.reason,
                reason=event.reason,
                ended_ts=event.ts,
                open_tool_calls=(),
                input_tokens=max(card.input_tokens, usage.input_tokens if usage else 0),
                output_tokens=max(card.output_tokens, usage.output_tokens if usage else 0),
                cost_usd=event.cost_usd if event.cost_usd is not None else card.cost_usd,
            )
        case _:
            assert_exhaustive(event)


def project(run_key: str, events: Iterable[RuntimeEvent]) -> Card:
    """The card of ``run_key`` after ``events`` (in order)."""
    card = Card(run_key)
    for event in events:
        card = apply(card, event)
    return card


CACHE_VERSION = 2
"""The layout of :func:`card_to_cache`'s JSON; a card kept in another layout is folded again."""

_CACHED_FIELDS = tuple(field.name for field in attrs.fields(Card))


def card_to_cache(card: Card) -> str:
    """``card`` as the JSON the event log keeps (``run_cards``): every field, so
    :func:`card_from_cache` gives back an equal card."""
    body: dict[str, Any] = {"v": CACHE_VERSION}
    for name in _CACHED_FIELDS:
        value = getattr(card, name)
        body[name] = list(cast(tuple[str, ...], value)) if isinstance(value, tuple) else value
    return json.dumps(body, separators=(",", ":"))


def card_from_cache(raw: str) -> Card | None:
    """The card :func:`card_to_cache` made, or ``None`` when ``raw`` is not one (another
    layout, a damaged row): the run's events are then folded again."""
    try:
        body: Any = json.loads(raw)
        if not isinstance(body, dict) or cast(dict[str, Any], body).get("v") != CACHE_VERSION:
            return None
        fields = cast(dict[str, Any], body)
        values = {name: fields[name] for name in _CACHED_FIELDS}
        if values["column"] not in get_args(BoardColumn) or not isinstance(values["run_key"], str):
            return None
        for name in ("open_tool_calls", "refused_needs_approval", "refused_denied"):
            values[name] = tuple(str(v) for v in values[name])
        values["approval_calls"] = tuple((str(a), str(c)) for a, c in values["approval_calls"])
        return Card(**values)
    except (ValueError, KeyError, TypeError):
        return None


def column_of(card: Card, pending_approvals: Iterable[str] = ()) -> BoardColumn:
    """The card's column, with the pending approvals (tool call ids) laid over it: a running run
    whose last status is ``waiting_approval``, or with an open tool call that waits for a person,
    is ``waiting``."""
    asked = card.phase == "waiting_approval" or set(card.open_tool_calls).intersection(
        pending_approvals
    )
    if card.column == "running" and asked:
        return "waiting"
    return card.column


@attrs.define
class Board:
    """Every run's card, fed with the log's events in ``gid`` order (live or replayed).

    Idempotent per ``gid``: an event at or below :attr:`cursor` was already applied and is
    skipped, so a resumed feed that repeats an event cannot count it twice."""

    cards: dict[str, Card] = attrs.field(factory=dict[str, Card])
    cursor: int = 0

    def add_run(self, run_key: str) -> Card:
        """The card of ``run_key`` (a queued card if it has no event yet)."""
        card = self.cards.get(run_key)
        if card is None:
            card = self.cards[run_key] = Card(run_key)
        return card

    def apply(self, item: LoggedEvent) -> bool:
        """Apply one logged event; False when it was already applied (``gid <= cursor``)."""
        if item.gid <= self.cursor:
            return False
        self.cursor = item.gid
        self.cards[item.run_key] = apply(self.add_run(item.run_key), item.event)
        return True

    def apply_all(self, items: Iterable[LoggedEvent]) -> None:
        for item in items:
            self.apply(item)

    def columns(self, pending_approvals: Iterable[str] = ()) -> Mapping[BoardColumn, list[Card]]:
        """Cards by column (every column present, possibly empty), in insertion order."""
        pending = set(pending_approvals)
        out: dict[BoardColumn, list[Card]] = {c: [] for c in COLUMNS}
        for card in self.cards.values():
            out[column_of(card, pending)].append(card)
        return out
