"""The normalizer on transcripts recorded from OpenClaw 2026.9.6, and on the traps one by one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters._runtimes import PINNED_VERSIONS
from adapters.openclaw.dialect import (
    AgentFrame,
    EventFrame,
    Frame,
    ResFrame,
    UnknownFrame,
    decode_frame,
)
from adapters.openclaw.normalize import RunState, finish_from_lifecycle, normalize
from contract import check_stream
from orchestrator.core.errors import ProtocolError
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

FIXTURES = (
    Path(__file__).resolve().parents[2] / "fixtures" / "openclaw" / PINNED_VERSIONS["openclaw"]
)


def transcript(name: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def replay(name: str, *, retry_limit: int | None = None) -> tuple[list[RuntimeEvent], RunState]:
    """Feed a recorded run to the normalizer as the adapter does: the run's frames in order; an
    abort request we sent sets the abort intent (unless fail-fast already set its own)."""
    entries = transcript(name)
    run_id = entries[0]["msg"]["params"]["idempotencyKey"]
    make = EventFactory(run_id=run_id, session_id="s", clock=lambda: 0)
    state = RunState(model="ringleader/fake-model", retry_limit=retry_limit)
    events: list[RuntimeEvent] = []
    for entry in entries:
        msg = entry["msg"]
        if entry["dir"] == "out":
            if msg["method"] in ("chat.abort", "sessions.abort") and state.intent is None:
                state.intent = "abort"
            continue
        frame = decode_frame(json.dumps(msg))
        if isinstance(frame, ResFrame) and frame.id != run_id:
            continue  # the answer to chat.abort / sessions.abort
        out = normalize(frame, state, make)
        assert out is not None, f"known frame reported unknown: {msg}"
        events += out
    return events, state


def text_of(events: list[RuntimeEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == "assistant")


def test_text_is_true_increments_and_chat_frames_do_not_double_it() -> None:
    events, _ = replay("text")
    check_stream(events)
    assert text_of(events) == "FINAL: hello from openclaw"
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1  # streamed, not one snapshot
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert done.summary == "FINAL: hello from openclaw"
    statuses = [e for e in events if isinstance(e, Status)]
    assert statuses[0].phase == "init"
    assert any(s.model == "ringleader/fake-model" for s in statuses)


def test_final_usage_is_cumulative_cost_and_unpriced_usd_is_unknown() -> None:
    events, _ = replay("tool")
    costs = [e for e in events if isinstance(e, Cost)]
    assert costs, "usage became no cost event"
    last = costs[-1]
    assert last.usage.input_tokens == 20  # two model calls of the script's 10 input tokens
    assert last.usage.output_tokens == 10
    assert last.cost_usd is None  # OpenClaw said $0 from its (empty) price table
    done = events[-1]
    assert isinstance(done, Done) and done.usage == last.usage and done.cost_usd is None


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.jsonl")))
def test_every_cost_of_a_recorded_run_has_its_input_tokens(name: str) -> None:
    """OpenClaw streams only output tokens before the final response: no ``cost`` reports the
    input as 0 meanwhile (docs/architecture.md, Contracts: an unknown figure is never 0)."""
    events, _ = replay(name, retry_limit=1 if "failfast" in name else None)
    costs = [e for e in events if isinstance(e, Cost)]
    assert [c.usage.input_tokens for c in costs if c.usage.input_tokens == 0] == []
    if name in ("text", "tool", "resume-first", "resume-second", "resume-restart"):
        assert costs and costs[-1].usage.output_tokens > 0


def test_a_usage_frame_waits_for_the_input_tokens_and_then_carries_them() -> None:
    make = EventFactory(run_id="r", clock=lambda: 0)
    state = RunState()
    output_only = decode_frame(json.dumps({
        "type": "event", "event": "agent", "seq": 1,
        "payload": {"runId": "r", "stream": "usage", "data": {"outputTokens": 5}},
    }))  # fmt: skip
    assert normalize(output_only, state, make) == []
    both = decode_frame(json.dumps({
        "type": "event", "event": "agent", "seq": 2,
        "payload": {"runId": "r", "stream": "usage",
                    "data": {"inputTokens": 10, "outputTokens": 5}},
    }))  # fmt: skip
    first = normalize(both, state, make)
    assert first is not None and isinstance(first[0], Cost)
    assert (first[0].usage.input_tokens, first[0].usage.output_tokens) == (10, 5)
    more = decode_frame(json.dumps({
        "type": "event", "event": "agent", "seq": 3,
        "payload": {"runId": "r", "stream": "usage", "data": {"outputTokens": 9}},
    }))  # fmt: skip
    later = normalize(more, state, make)
    assert later is not None and isinstance(later[0], Cost)
    assert (later[0].usage.input_tokens, later[0].usage.output_tokens) == (10, 9)


def test_configured_prices_give_an_estimated_usd() -> None:
    make = EventFactory(run_id="r", clock=lambda: 0)
    state = RunState(prices_configured=True)
    res = ResFrame(
        id="r",
        ok=True,
        payload={
            "status": "ok",
            "result": {
                "payloads": [{"text": "x"}],
                "meta": {"agentMeta": {"usage": {"input": 1000, "output": 10, "cacheRead": 0,
                                                  "cost": {"total": 0.0042}}}},
            },
        },
    )  # fmt: skip
    events = normalize(res, state, make)
    assert events is not None
    cost = next(e for e in events if isinstance(e, Cost))
    assert cost.cost_usd == pytest.approx(0.0042) and cost.estimated


def test_tool_start_and_result_become_one_call_and_its_result() -> None:
    events, _ = replay("tool")
    check_stream(events)
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(c.name, c.input) for c in calls] == [("exec", {"command": "echo hello-from-tool"})]
    assert len(results) == 1 and results[0].tool_call_id == calls[0].tool_call_id
    assert results[0].output == "hello-from-tool" and not results[0].is_error
    assert events.index(results[0]) < events.index(
        next(e for e in events if isinstance(e, TextDelta))
    )
    assert text_of(events) == "TOOL_RESULT_SEEN"


def test_abort_end_error_and_timeout_are_one_done_aborted() -> None:
    events, state = replay("abort")
    check_stream(events)
    assert [e for e in events if isinstance(e, Done)] == [events[-1]]
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "aborted"
    assert done.summary == "slow slow slow"
    assert not any(isinstance(e, ErrorEvent) for e in events)
    assert state.outcome is not None and state.outcome.aborted


def test_abort_without_our_intent_still_reads_aborted() -> None:
    """Someone else (another client) aborted: OpenClaw's ``aborted: true`` is enough."""
    events, _ = replay("abort")
    # replay sets the intent from our request; build the same run without it
    entries = [e for e in transcript("abort") if e["dir"] == "in"]
    run_id = entries[0]["msg"]["id"]
    make = EventFactory(run_id=run_id, clock=lambda: 0)
    state = RunState()
    out: list[RuntimeEvent] = []
    for entry in entries:
        frame = decode_frame(json.dumps(entry["msg"]))
        if isinstance(frame, ResFrame) and frame.id != run_id:
            continue
        out += normalize(frame, state, make) or []
    check_stream(out)
    assert isinstance(out[-1], Done) and out[-1].reason == "aborted"
    assert text_of(out) == text_of(events)


def test_500_retries_are_statuses_then_one_error_and_done() -> None:
    events, _ = replay("error-500")
    check_stream(events)
    retries = [e for e in events if isinstance(e, Status) and e.detail and "Retrying" in e.detail]
    assert len(retries) >= 5
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and errors[0].fatal and errors[0].code == "server_error"
    assert "HTTP 500" in errors[0].message
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "error"
    assert text_of(events) == ""  # the empty replace frames between attempts emit nothing


def test_fail_fast_stops_after_the_limit_and_ends_in_error() -> None:
    events, state = replay("error-500-failfast", retry_limit=1)
    check_stream(events)
    assert state.retries == 2 and state.intent == "fail"
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and errors[0].code == "server_error"
    assert "fail-fast" in errors[0].message and "HTTP 500" in errors[0].message
    assert isinstance(events[-1], Done) and events[-1].reason == "error"


def test_without_fail_fast_the_stop_is_not_requested() -> None:
    _, state = replay("error-500")
    assert not state.wants_stop and state.intent is None


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("resume-first", "FIRST"),
        ("resume-second", "SECOND"),
        ("resume-restart", "THIRD after restart"),
    ],
)
def test_resumed_turns(name: str, text: str) -> None:
    events, _ = replay(name)
    check_stream(events)
    assert text_of(events) == text
    assert isinstance(events[-1], Done) and events[-1].reason == "success"


def test_resume_transcripts_share_one_session() -> None:
    keys = {transcript(n)[0]["msg"]["params"]["sessionKey"] for n in
            ("resume-first", "resume-second", "resume-restart")}  # fmt: skip
    assert len(keys) == 1


# -- the traps one by one ------------------------------------------------------------------------


def _agent(stream: str, data: dict[str, Any], run_id: str = "r") -> AgentFrame:
    return AgentFrame(run_id=run_id, session_key="k", stream=stream, data=data, seq=None,
                      payload={})  # fmt: skip


def test_snapshot_that_does_not_extend_the_text_falls_back_to_the_delta() -> None:
    make = EventFactory(run_id="r", clock=lambda: 0)
    state = RunState()
    out = normalize(
        _agent("assistant", {"itemId": "i", "text": "abc", "delta": "abc"}), state, make
    )
    out2 = normalize(
        _agent("assistant", {"itemId": "i", "text": "xyz!", "delta": "!"}), state, make
    )
    assert [e.text for e in (out or []) + (out2 or []) if isinstance(e, TextDelta)] == ["abc", "!"]


def test_replace_restarts_the_item() -> None:
    make = EventFactory(run_id="r", clock=lambda: 0)
    state = RunState()
    seq = [
        {"itemId": "i", "text": "hel", "delta": "hel"},
        {"itemId": "i", "text": "", "delta": "", "replace": True},
        {"itemId": "i", "text": "hello", "delta": "hello"},
    ]
    texts = [e.text for d in seq for e in normalize(_agent("assistant", d), state, make) or []
             if isinstance(e, TextDelta)]  # fmt: skip
    assert texts == ["hel", "hello"]


def test_unknown_streams_events_and_frame_types_are_none() -> None:
    make = EventFactory(run_id="r", clock=lambda: 0)
    state = RunState()
    assert normalize(_agent("mystery", {}), state, make) is None
    assert normalize(EventFrame(event="mystery.event", payload={}), state, make) is None
    assert normalize(UnknownFrame(type="ping", raw={}), state, make) is None
    assert normalize(EventFrame(event="chat", payload={"state": "delta"}), state, make) == []


def test_dialect_rejects_what_is_not_a_json_object() -> None:
    with pytest.raises(ProtocolError):
        decode_frame("not json")
    with pytest.raises(ProtocolError):
        decode_frame("[1, 2]")
    frame: Frame = decode_frame('{"type":"res","id":"x","ok":false}')
    assert isinstance(frame, ResFrame) and frame.error is not None


def test_finish_without_a_final_answer_uses_the_lifecycle_outcome() -> None:
    make = EventFactory(run_id="r", clock=lambda: 0)
    state = RunState()
    normalize(_agent("assistant", {"itemId": "i", "text": "ok", "delta": "ok"}), state, make)
    assert normalize(_agent("lifecycle", {"phase": "end", "aborted": False}), state, make) == []
    events = finish_from_lifecycle(state, make)
    assert isinstance(events[-1], Done) and events[-1].reason == "success"
    assert finish_from_lifecycle(state, make) == []


@given(
    text=st.text(min_size=1, max_size=60),
    cuts=st.lists(st.integers(1, 60), max_size=8),
    with_chat=st.booleans(),
)
def test_increments_reassemble_the_text(text: str, cuts: list[int], with_chat: bool) -> None:
    """However OpenClaw cuts the stream, the increments are the text exactly once."""
    make = EventFactory(run_id="r", clock=lambda: 0)
    state = RunState()
    points = sorted({c for c in cuts if c < len(text)} | {len(text)})
    out: list[RuntimeEvent] = []
    prev = 0
    for p in points:
        data = {"itemId": "i", "text": text[:p], "delta": text[prev:p]}
        out += normalize(_agent("assistant", data), state, make) or []
        if with_chat:
            chat = EventFrame(event="chat", payload={"runId": "r", "state": "delta",
                                                     "deltaText": text[prev:p]})  # fmt: skip
            out += normalize(chat, state, make) or []
        prev = p
    assert text_of(out) == text
