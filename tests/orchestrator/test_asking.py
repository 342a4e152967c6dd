"""The core "ask a person" mechanism every asking adapter uses (:mod:`orchestrator.core.asking`):
nobody to ask denies, a waiting call is in the book before it is announced, a decision comes
back with its status, scoped decisions become grants that answer later calls, and a run that
ends while a call waits cancels the entry. Real SQLite books in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs
import pytest
import trio

from orchestrator.cli.approvals import decision_from_args
from orchestrator.core.approvals import ApprovalBook, RunInfo, approve, as_decision, reject
from orchestrator.core.asking import NO_ONE_TO_ASK, RUN_ENDED, ToolAsker
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import EventFactory, RuntimeEvent, Status


@attrs.define(eq=False)
class Sink:
    """A run's events, as an adapter's emitter would publish them."""

    factory: EventFactory = attrs.field(factory=lambda: EventFactory(run_id="sess-1"))
    finished: trio.Event = attrs.field(factory=trio.Event)
    events: list[RuntimeEvent] = attrs.field(factory=list[RuntimeEvent])
    published: trio.Event = attrs.field(factory=trio.Event)

    async def publish(self, events: Iterable[RuntimeEvent]) -> None:
        self.events.extend(events)
        self.published.set()
        self.published = trio.Event()
        await trio.lowlevel.checkpoint()

    async def waiting(self) -> Status:
        """The first ``status{waiting_approval}`` (waiting for it to be published)."""
        while True:
            for event in self.events:
                if isinstance(event, Status) and event.approval is not None:
                    return event
            await self.published.wait()


def asker(tmp_path: Path, sink: Sink, *, key: str = "run:1", cwd: str = "/ws") -> ToolAsker:
    return ToolAsker.for_run(
        sink,
        approvals_db=str(tmp_path / "approvals.db"),
        runtime_id="codex",
        agent_id="a",
        session_key=key,
        cwd=cwd,
    )


async def decide_when_waiting(book: ApprovalBook, sink: Sink, decision: object) -> str:
    """Wait until the run says it waits, then decide its call; the approval id."""
    approval = (await sink.waiting()).approval
    assert approval is not None
    entry = await book.get(approval.id)
    assert entry is not None and entry.status == "pending"  # in the book before announced
    await book.decide(approval.id, decision)  # pyright: ignore[reportArgumentType]
    return approval.id


async def test_with_no_book_the_call_is_denied_saying_nobody_can_be_asked() -> None:
    sink = Sink()
    made = await ToolAsker(None, sink).ask("command", {"cmd": "touch x"}, "c1")
    assert not made.approved and made.rejection_text() == NO_ONE_TO_ASK
    assert sink.events == []


async def test_a_call_waits_in_the_book_and_the_decision_comes_back(tmp_path: Path) -> None:
    sink = Sink()
    ask = asker(tmp_path, sink)
    book = ApprovalBook(tmp_path / "approvals.db", poll_s=0.01)
    ask = attrs.evolve(ask, handler=attrs.evolve(ask.handler, book=book))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(decide_when_waiting, book, sink, reject("use a branch"))
        made = await ask.ask("command", {"cmd": "touch x"}, "c1", reason="writes")
    assert not made.approved and made.rejection_text() == "use a branch"
    waiting, after = sink.events
    assert isinstance(waiting, Status) and waiting.phase == "waiting_approval"
    assert waiting.approval is not None and waiting.approval.input == {"cmd": "touch x"}
    assert waiting.approval.reason == "writes" and waiting.approval.tool_call_id == "c1"
    assert isinstance(after, Status) and after.phase == "running"
    assert after.detail == f"approval {waiting.approval.id}: command denied"
    assert [e.seq for e in sink.events] == [1, 2]


@pytest.mark.parametrize(
    ("scope", "same_run", "other_run", "other_dir"),
    [("once", False, False, False), ("run", True, False, False), ("always", True, True, False)],
)
async def test_a_scoped_approval_answers_later_calls_of_the_tool_where_it_reaches(
    tmp_path: Path, scope: str, same_run: bool, other_run: bool, other_dir: bool
) -> None:
    sink = Sink()
    book = ApprovalBook(tmp_path / "approvals.db", poll_s=0.01)
    first = asker(tmp_path, sink)
    first = attrs.evolve(first, handler=attrs.evolve(first.handler, book=book))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(decide_when_waiting, book, sink, {"approved": True, "scope": scope})
        made = await first.ask("command", {"cmd": "touch 1"}, "c1")
    assert made.approved and made.scope == scope

    async def answered_without_asking(ask: ToolAsker, call_id: str) -> bool:
        with trio.move_on_after(0.5):
            return (await ask.ask("command", {"cmd": "touch 2"}, call_id)).approved
        return False

    other = Sink()
    assert await answered_without_asking(first, "c2") is same_run
    assert await answered_without_asking(asker(tmp_path, other, key="run:2"), "c3") is other_run
    assert (
        await answered_without_asking(asker(tmp_path, other, key="run:3", cwd="/else"), "c4")
        is other_dir
    )
    grants = await book.grants()
    assert [g.scope for g in grants] == ([] if scope == "once" else [scope])


async def test_a_run_that_ends_while_a_call_waits_cancels_the_entry(tmp_path: Path) -> None:
    sink = Sink()
    ask = asker(tmp_path, sink)
    async with trio.open_nursery() as nursery:

        async def end_run() -> None:
            await sink.published.wait()
            sink.finished.set()

        nursery.start_soon(end_run)
        made = await ask.ask("command", {"cmd": "touch x"}, "c1")
    assert not made.approved and made.rejection_text() == RUN_ENDED
    book = ApprovalBook(tmp_path / "approvals.db")
    assert await book.pending() == []
    assert len(sink.events) == 1  # no status after the end


def test_a_scope_is_kept_only_on_an_approval_and_the_cli_refuses_mixes() -> None:
    assert as_decision({"approved": False, "scope": "always"}).scope == "once"
    assert as_decision({"approved": True, "scope": "bogus"}).scope == "once"
    assert approve(scope="run").to_json()["scope"] == "run"
    assert decision_from_args(True, None, None, "always").scope == "always"
    with pytest.raises(ConfigError, match="go with --allow"):
        decision_from_args(False, None, None, "run")
    with pytest.raises(ConfigError, match="--edit is for one call"):
        decision_from_args(True, None, '{"cmd": "ls"}', "run")
    assert RunInfo(cwd="/x").cwd == "/x"
