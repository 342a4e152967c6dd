"""A card says which of its run's tool calls were refused, as the CLI's done line says it: the
card keeps the state of the one refusal fold (``orchestrator/core/refusals.py`` ``Refusals``),
so the board, the run page and ``ringleader run`` cannot disagree (the defect: a run that ended
``success`` with every write refused looked fine on the board)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.board.projection import Card, apply, card_from_cache, card_to_cache, project
from orchestrator.board.server import board_app
from orchestrator.core.approvals import DEFAULT_REJECT_MESSAGE
from orchestrator.core.asking import NO_ONE_TO_ASK
from orchestrator.core.events import ApprovalCall, EventFactory, RuntimeEvent
from orchestrator.core.refusals import Refusals
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import Feed

CLAUDE_CODE = "touch in '/workspace/x' needs approval. Claude Code asks before a shell command."


def refused_run() -> list[RuntimeEvent]:
    """Calls refused every way the fold knows: nobody asked (t1, t2), a person's denial with
    a message of their own (t3, counted once), a denial without one (t4); an allowed call and
    a plain failure (t5, t6) are no refusals."""
    make = EventFactory(run_id="r", clock=iter(range(1000, 100_000, 7)).__next__)
    asked = ApprovalCall(id="ap-1", tool_call_id="t3", name="Bash", input={"command": "rm x"})
    allowed = ApprovalCall(id="ap-2", tool_call_id="t5", name="Bash", input={})
    return [
        make.status("init"),
        make.tool_call("t1", "Bash", {"command": "touch x"}),
        make.tool_result("t1", CLAUDE_CODE, name="Bash", is_error=True),
        make.tool_call("t2", "bash", {"command": "touch y"}),
        make.tool_result("t2", NO_ONE_TO_ASK, name="bash", is_error=True),
        make.tool_call("t3", "Bash", {"command": "rm x"}),
        make.waiting_approval(asked, detail="approval ap-1: Bash"),
        make.status("running", detail="approval ap-1: Bash denied"),
        make.tool_result("t3", "not on main", name="Bash", is_error=True),
        make.tool_call("t4", "Bash", {}),
        make.tool_result("t4", DEFAULT_REJECT_MESSAGE, name="Bash", is_error=True),
        make.tool_call("t5", "Bash", {}),
        make.waiting_approval(allowed, detail="approval ap-2: Bash"),
        make.status("running", detail="approval ap-2: Bash allowed"),
        make.tool_result("t5", "ok", name="Bash"),
        make.tool_call("t6", "Bash", {}),
        make.tool_result("t6", "bash: x: Permission denied\n[exit code: 1]", is_error=True),
        make.text_delta("I could not write the files."),
        *make.finish("success"),
    ]


def test_a_card_says_what_the_clis_fold_says() -> None:
    events = refused_run()
    fold = Refusals()
    for event in events:
        fold.apply(event)
    card = project("k", events)
    assert card.column == "done"
    said = card.to_json()["refusals"]
    assert said == {
        "needsApproval": 2,
        "denied": 2,
        "summary": fold.summary(),
        "hint": fold.hint(board=True),
    }
    assert said["summary"] == "2 tool calls refused (needs approval), 2 denied"
    assert "nobody was asked" in said["hint"] and "--approvals wait" in said["hint"]
    # at every point of the run, the card says what the fold over the events so far says
    for cut in range(len(events) + 1):
        partial, so_far = project("k", events[:cut]), Refusals()
        for event in events[:cut]:
            so_far.apply(event)
        assert partial.refusals.summary() == so_far.summary(), cut


def test_a_denied_only_run_says_who_denied_and_a_clean_run_says_nothing() -> None:
    events = refused_run()
    denied_only = [e for e in events if getattr(e, "tool_call_id", None) not in ("t1", "t2")]
    said = project("k", denied_only).to_json()["refusals"]
    assert said["summary"] == "2 tool calls denied"
    assert said["hint"] == "2 tool calls denied (by a person or a permission policy)"
    make = EventFactory(run_id="r")
    clean = [
        make.tool_call("t1", "Bash", {}),
        make.tool_result("t1", "ok"),
        *make.finish("success"),
    ]
    assert project("k", clean).to_json()["refusals"] is None


def test_a_kept_card_goes_on_folding_refusals_where_it_stopped() -> None:
    """The log keeps cards (``run_cards``): a card kept mid-run and folded on from there is the
    card folded in one go, approvals asked before the cut included."""
    events = refused_run()
    whole = project("k", events)
    for cut in range(len(events) + 1):
        kept = card_from_cache(card_to_cache(project("k", events[:cut])))
        assert kept is not None, cut
        for event in events[cut:]:
            kept = apply(kept, event)
        assert kept == whole, cut
    assert card_from_cache(card_to_cache(whole)) == whole
    assert card_from_cache(card_to_cache(Card("k")).replace('"v":2', '"v":1')) is None


async def test_run_meta_gives_the_refusals_the_page_sets_on_a_card_that_ended(
    tmp_path: Path,
) -> None:
    """The page never classifies: when a run ends it asks ``GET /run-meta`` (and starts from
    ``GET /board`` / ``/run-tail``), which say what the card says."""
    import httpx2

    events = refused_run()
    async with EventLog.open(tmp_path / "events.db") as log:
        await log.start_run("k", runtime_id="scripted", session_key="s")
        await log.append("k", events)
        app = board_app(Feed(), log, token="t0ken-for-tests")
        transport = httpx2.ASGITransport(app=app)
        headers = {"authorization": "Bearer t0ken-for-tests"}
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            meta = (await http.get("/run-meta?run=k", headers=headers)).json()
            board = (await http.get("/board", headers=headers)).json()
            tail = (await http.get("/run-tail?run=k", headers=headers)).json()
    expected = project("k", events).to_json()["refusals"]
    assert expected is not None
    assert meta["refusals"] == expected
    assert [c["refusals"] for c in board["cards"]] == [expected]
    assert tail["card"]["refusals"] == expected
