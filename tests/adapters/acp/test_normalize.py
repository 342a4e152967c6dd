"""The ACP normalizer on Hermes' recorded conversations and on each update kind."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters.acp import AcpState, normalize_prompt_end, normalize_update
from adapters.acp.normalize import note_permission
from contract.invariants import check_stream
from orchestrator.core.events import (
    Cost,
    Done,
    ErrorEvent,
    EventFactory,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
)

from .conftest import conversation, prompt_updates


def run(
    updates: list[dict[str, Any]], result: object, state: AcpState | None = None
) -> list[RuntimeEvent]:
    make = EventFactory(run_id="r")
    state = state or AcpState()
    out: list[RuntimeEvent] = []
    for update in updates:
        events = normalize_update(update, make, state)
        assert events is not None, update
        out += events
    out += normalize_prompt_end(result, make, state)
    return out


def test_recorded_tool_turn() -> None:
    updates, response = prompt_updates("tool")
    events = run(updates, response["result"])
    check_stream(events)
    kinds = [e.kind for e in events]
    assert kinds == ["tool-call", "tool-result", "text-delta", "text-delta", "cost", "done"]
    call, result = events[0], events[1]
    assert isinstance(call, ToolCall) and isinstance(result, ToolResult)
    assert call.name == "terminal"
    assert call.input == {
        "title": "terminal: echo hi-from-tool",
        "kind": "execute",
        "content": "$ echo hi-from-tool",
    }
    assert result.tool_call_id == call.tool_call_id and not result.is_error
    assert "hi-from-tool" in result.output
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert done.summary == "\n\nTOOL_RESULT_SEEN"
    cost = events[-2]
    assert isinstance(cost, Cost)
    assert (cost.usage.input_tokens, cost.usage.output_tokens) == (20, 10)
    assert cost.cost_usd is None  # Hermes reports no spend


def test_occupancy_is_not_spend() -> None:
    """usage_update carries context occupancy (8857 of 131072): never billed tokens."""
    updates, _ = prompt_updates("tool")
    occupancy = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    assert occupancy and all("cost" not in u for u in occupancy)
    state = AcpState()
    make = EventFactory(run_id="r")
    for update in occupancy:
        assert normalize_update(update, make, state) == []
    assert (state.context_used, state.context_size) == (occupancy[-1]["used"], 131072)
    assert make.usage is None


def test_recorded_cancel_ends_aborted() -> None:
    updates, response = prompt_updates("abort")
    events = run(updates, response["result"])
    check_stream(events)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "aborted"
    assert not any(isinstance(e, ErrorEvent) for e in events)


def test_recorded_500_is_plain_text_at_the_protocol_level() -> None:
    """Hermes ends a failed turn with end_turn, no usage and the error as text: the generic
    normalizer cannot tell (the Hermes adapter does, from its session store)."""
    updates, response = prompt_updates("error-500")
    assert "usage" not in response["result"]
    events = run(updates, response["result"])
    texts = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "HTTP 500" in texts
    assert not any(isinstance(e, Cost) for e in events)


def test_replayed_history_is_not_output() -> None:
    """session/load replays the old conversation before it answers: none of it is new output."""
    pairs = conversation("resume-second")
    load_id = next(m["id"] for d, m in pairs if m.get("method") == "session/load")
    replayed: list[dict[str, Any]] = []
    for direction, message in pairs:
        if direction == "out" and message.get("id") == load_id:
            break
        if message.get("method") == "session/update":
            replayed.append(message["params"]["update"])
    assert {u["sessionUpdate"] for u in replayed} >= {"user_message_chunk", "agent_message_chunk"}
    make = EventFactory(run_id="r")
    state = AcpState(resumed=True)
    for update in replayed:
        assert normalize_update(update, make, state, replay=True) == []
    updates, response = prompt_updates("resume-second")
    events = run(updates, response["result"], state)
    texts = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert texts == "SECOND after resume"
    assert "FIRST" not in texts


def test_thought_chunk_is_reasoning_and_user_chunk_is_dropped() -> None:
    make = EventFactory(run_id="r")
    state = AcpState()
    thought = {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}}
    (event,) = normalize_update(thought, make, state) or []
    assert isinstance(event, TextDelta) and event.channel == "reasoning"
    user = {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}
    assert normalize_update(user, make, state) == []
    assert state.summary == ""


def test_unknown_update_kind_is_none() -> None:
    assert normalize_update({"sessionUpdate": "future_thing"}, EventFactory(), AcpState()) is None
    assert normalize_update({}, EventFactory(), AcpState()) is None


def test_update_for_an_unseen_call_opens_it_and_failed_is_error() -> None:
    make = EventFactory(run_id="r")
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "title": "read: a.txt",
        "status": "failed",
        "rawOutput": {"error": "denied"},
    }
    events = normalize_update(update, make, AcpState()) or []
    assert [e.kind for e in events] == ["tool-call", "tool-result"]
    result = events[1]
    assert isinstance(result, ToolResult) and result.is_error and result.name == "read"
    assert result.output == '{"error": "denied"}'
    # a late duplicate of the same update adds nothing
    assert normalize_update(update, make, AcpState(tool_names={"c1": "read"})) == []


def test_in_progress_update_is_silent_and_plan_is_status() -> None:
    make = EventFactory(run_id="r")
    state = AcpState()
    start = {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "x", "kind": "edit"}
    assert [e.kind for e in normalize_update(start, make, state) or []] == ["tool-call"]
    progress = {"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "in_progress"}
    assert normalize_update(progress, make, state) == []
    plan = {
        "sessionUpdate": "plan",
        "entries": [{"content": "a", "status": "completed"}, {"content": "b", "status": "pending"}],
    }
    (status,) = normalize_update(plan, make, state) or []
    assert isinstance(status, Status) and status.detail == "plan: 1/2 steps done"


def test_stop_reasons() -> None:
    def end(reason: str) -> list[RuntimeEvent]:
        return normalize_prompt_end({"stopReason": reason}, EventFactory(run_id="r"), AcpState())

    assert isinstance(done := end("max_turn_requests")[-1], Done) and done.reason == "max_turns"
    refusal = end("refusal")
    assert isinstance(refusal[0], ErrorEvent) and refusal[0].code == "refusal"
    assert isinstance(done := refusal[-1], Done) and done.reason == "error"
    cut = end("max_tokens")
    assert isinstance(cut[0], ErrorEvent) and not cut[0].fatal
    assert isinstance(done := cut[-1], Done) and done.reason == "success"
    assert isinstance(done := end("cancelled")[-1], Done) and done.reason == "aborted"


def test_session_cost_is_the_growth_during_the_run() -> None:
    make = EventFactory(run_id="r")
    state = AcpState(resumed=True)
    replay = {"sessionUpdate": "usage_update", "used": 1, "size": 9, "cost": {"amount": 1.5}}
    normalize_update(replay, make, state, replay=True)
    live = {"sessionUpdate": "usage_update", "used": 2, "size": 9, "cost": {"amount": 1.75}}
    normalize_update(live, make, state)
    events = normalize_prompt_end(
        {"stopReason": "end_turn", "usage": {"inputTokens": 5, "outputTokens": 2}}, make, state
    )
    cost = events[0]
    assert isinstance(cost, Cost) and cost.cost_usd == 0.25


def test_resumed_session_without_known_spend_has_unknown_usd() -> None:
    make = EventFactory(run_id="r")
    state = AcpState(resumed=True)
    live = {"sessionUpdate": "usage_update", "used": 2, "size": 9, "cost": {"amount": 3.0}}
    normalize_update(live, make, state)
    events = normalize_prompt_end(
        {"stopReason": "end_turn", "usage": {"inputTokens": 1}}, make, state
    )
    cost = events[0]
    assert isinstance(cost, Cost) and cost.cost_usd is None


_text = st.text(max_size=8)
_update = st.one_of(
    st.builds(
        lambda t: {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}},
        _text,
    ),
    st.builds(
        lambda i: {"sessionUpdate": "tool_call", "toolCallId": f"c{i}", "title": "t: x"},
        st.integers(0, 3),
    ),
    st.builds(
        lambda i, s: {"sessionUpdate": "tool_call_update", "toolCallId": f"c{i}", "status": s},
        st.integers(0, 3),
        st.sampled_from(["pending", "in_progress", "completed", "failed"]),
    ),
    st.builds(
        lambda u, c: {"sessionUpdate": "usage_update", "used": u, "size": 100, "cost": c},
        st.integers(0, 100),
        st.one_of(st.none(), st.builds(lambda a: {"amount": a}, st.floats(0, 10))),
    ),
    st.just({"sessionUpdate": "session_info_update", "title": "x"}),
    st.dictionaries(st.sampled_from(["sessionUpdate", "x"]), _text, max_size=2),
)


@given(
    st.lists(_update, max_size=30),
    st.sampled_from(["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "?"]),
)
def test_any_update_sequence_keeps_the_stream_contract(
    updates: list[dict[str, Any]], reason: str
) -> None:
    make = EventFactory(run_id="r")
    state = AcpState()
    events: list[RuntimeEvent] = []
    for update in updates:
        events += normalize_update(update, make, state) or []
    events += normalize_prompt_end({"stopReason": reason}, make, state)
    check_stream(events)


def test_a_call_announced_before_its_input_is_reported_with_it() -> None:
    """claude-agent-acp and Qwen Code announce a call with ``rawInput: {}`` and send the input in
    a later update: the call is reported once, with its input and its announced name."""
    make = EventFactory(run_id="r")
    state = AcpState()
    start: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": "c",
        "title": "Terminal",
        "kind": "execute",
        "status": "pending",
        "rawInput": {},
        "content": [],
    }
    assert normalize_update(start, make, state) == []
    silent = {"sessionUpdate": "tool_call_update", "toolCallId": "c"}
    assert normalize_update(silent, make, state) == []
    filled = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "title": "echo hi",
        "rawInput": {"command": "echo hi"},
    }
    events = normalize_update(filled, make, state) or []
    assert [e.kind for e in events] == ["tool-call"]
    call = events[0]
    assert isinstance(call, ToolCall) and call.name == "Terminal"
    assert call.input == {"command": "echo hi"}
    done = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "status": "completed",
        "rawOutput": "hi",
    }
    assert [e.kind for e in normalize_update(done, make, state) or []] == ["tool-result"]


def test_a_call_whose_input_never_comes_is_reported_with_its_result() -> None:
    make = EventFactory(run_id="r")
    state = AcpState()
    start: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": "c",
        "title": "Shell",
        "rawInput": {},
    }
    assert normalize_update(start, make, state) == []
    done = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": "refused"}}],
    }
    events = normalize_update(done, make, state) or []
    assert [e.kind for e in events] == ["tool-call", "tool-result"]
    assert isinstance(events[0], ToolCall) and events[0].name == "Shell"


def test_an_input_shown_only_in_the_permission_request_is_the_calls_input() -> None:
    """Qwen Code announces ``rawInput: {}``, asks permission with the command, then completes."""
    make = EventFactory(run_id="r")
    state = AcpState()
    start: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": "c",
        "title": "Shell",
        "status": "pending",
        "rawInput": {},
    }
    assert normalize_update(start, make, state) == []
    note_permission({"toolCall": {"toolCallId": "c", "rawInput": {"command": "ls"}}}, state)
    done = {"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed"}
    events = normalize_update(done, make, state) or []
    assert [e.kind for e in events] == ["tool-call", "tool-result"]
    assert isinstance(events[0], ToolCall) and events[0].input == {"command": "ls"}


def test_usage_in_message_chunks_meta_is_the_runs_when_the_answer_has_none() -> None:
    """Qwen Code reports each model call's usage in an ``agent_message_chunk``'s ``_meta``."""
    make = EventFactory(run_id="r")
    state = AcpState()
    for tokens in (10, 20):
        chunk: dict[str, Any] = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": ""},
            "_meta": {"usage": {"inputTokens": tokens, "outputTokens": 5, "thoughtTokens": 1}},
        }
        assert normalize_update(chunk, make, state) == []
    events = normalize_prompt_end({"stopReason": "end_turn"}, make, state)
    cost = events[0]
    assert isinstance(cost, Cost)
    assert (cost.usage.input_tokens, cost.usage.output_tokens) == (30, 12)


def test_a_turn_the_agent_ended_on_a_refusal_says_so() -> None:
    """codex-acp's only reject option is ``abort``: the prompt answers ``cancelled`` though
    nobody aborted; the run ends aborted with a status saying why."""
    make = EventFactory(run_id="r")
    events = normalize_prompt_end({"stopReason": "cancelled"}, make, AcpState(refused=1))
    assert [e.kind for e in events] == ["status", "done"]
    status, done = events
    assert isinstance(status, Status) and status.detail is not None
    assert "refused permission" in status.detail
    assert isinstance(done, Done) and done.reason == "aborted"
    plain = normalize_prompt_end({"stopReason": "cancelled"}, EventFactory(run_id="r"), AcpState())
    assert [e.kind for e in plain] == ["done"]


def test_an_answer_is_an_allow_only_when_it_picks_an_allow_option() -> None:
    from adapters.acp.adapter import _allowed  # pyright: ignore[reportPrivateUsage]

    params = {
        "options": [
            {"optionId": "approved", "kind": "allow_once"},
            {"optionId": "abort", "kind": "reject_once"},
        ]
    }
    assert _allowed(params, {"outcome": {"outcome": "selected", "optionId": "approved"}})
    assert not _allowed(params, {"outcome": {"outcome": "selected", "optionId": "abort"}})
    assert not _allowed(params, {"outcome": {"outcome": "cancelled"}})
