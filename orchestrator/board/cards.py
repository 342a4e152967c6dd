"""The board's cards kept in the event log (``run_cards``), so that opening the board does not
fold every event of every run (issue 37: a board of 1,000 runs and a 100,000-event run took
6.9 s to first paint, every event folded at each open).

Two writers keep them: a board, for every run it folded when it opened (:func:`load_cards`),
and ``ringleader run``, for the runs it ran (:class:`CardKeeper`, a sink beside the event log:
it folds each event as it is delivered and keeps the cards when the runs have ended). A card is
used only while it is valid: it covers the run's events up to its gid, and the events after
that gid are folded on top of it.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from orchestrator.board.projection import Board, Card, apply, card_from_cache, card_to_cache
from orchestrator.core.events import RuntimeEvent
from orchestrator.engine.eventlog import EventLog

__all__ = ["CardKeeper", "card_of", "load_cards"]


async def load_cards(log: EventLog, board: Board, page: int = 5000) -> None:
    """Bring a new ``board`` to the log's last event run by run: each run's card kept in the
    log when it is still valid, then only the run's events after it folded — none for a run
    that ended before the last open. The cards folded here are kept for the next open."""
    upto = await log.last_gid()
    kept: list[tuple[str, int, str]] = []
    for entry in await log.run_cards():
        card: Card | None = None
        start = 0
        if entry.card is not None and entry.card_gid is not None and entry.card_gid <= upto:
            card = card_from_cache(entry.card)
            if card is not None and card.run_key == entry.run_key:
                start = entry.card_gid
            else:
                card = None
        card = card if card is not None else board.cards.get(entry.run_key, Card(entry.run_key))
        last = start
        while last < min(entry.last_gid, upto):
            batch = await log.read_since(last, limit=page, run_key=entry.run_key)
            for item in batch:
                if item.gid > upto:
                    break
                card = apply(card, item.event)
                last = item.gid
            if len(batch) < page or (batch and batch[-1].gid > upto):
                break
        board.cards[entry.run_key] = card
        if last > start:
            kept.append((entry.run_key, last, card_to_cache(card)))
    board.cursor = max(board.cursor, upto)
    if kept:
        await log.save_run_cards(kept)


async def card_of(log: EventLog, run_key: str, upto: int, page: int = 5000) -> Card:
    """``run_key``'s card over its events up to gid ``upto``: the card the log keeps when it
    covers no more than that, then the run's events after it folded (and that card kept)."""
    card, start = Card(run_key), 0
    for entry in await log.run_cards():
        if entry.run_key != run_key:
            continue
        if entry.card is not None and entry.card_gid is not None and entry.card_gid <= upto:
            kept = card_from_cache(entry.card)
            if kept is not None and kept.run_key == run_key:
                card, start = kept, entry.card_gid
        break
    last = start
    while last < upto:
        batch = await log.read_since(last, limit=page, run_key=run_key)
        for item in batch:
            if item.gid > upto:
                break
            card, last = apply(card, item.event), item.gid
        if len(batch) < page or (batch and batch[-1].gid > upto):
            break
    if last > start:
        await log.save_run_cards([(run_key, last, card_to_cache(card))])
    return card


@attrs.define
class CardKeeper:
    """An event sink (after the event log: ``RecordingSink(log, extra=[…, keeper])``) that folds
    each run's card as its events are delivered; :meth:`keep` writes them to the log, so the
    next board that opens reads none of these runs' events."""

    cards: dict[str, Card] = attrs.field(factory=dict[str, Card])

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        card = self.cards.get(run_key) or Card(run_key)
        for event in events:
            card = apply(card, event)
        self.cards[run_key] = card

    async def keep(self, log: EventLog, only: Iterable[str] | None = None) -> int:
        """Keep the cards of the runs folded here (``only``: of these run keys) in ``log``, each
        as covering the run's last event — only if it folded every event the log holds of the
        run (a card that missed one is not kept; a board folds that run itself). Returns how
        many were kept."""
        wanted = set(self.cards if only is None else only) & set(self.cards)
        if not wanted:
            return 0
        kept: list[tuple[str, int, str]] = []
        for entry in await log.run_cards():
            card = self.cards.get(entry.run_key)
            if entry.run_key in wanted and card is not None and card.events == entry.last_seq:
                kept.append((entry.run_key, entry.last_gid, card_to_cache(card)))
        if kept:
            await log.save_run_cards(kept)
        return len(kept)
