"""The dialect and the normalizer on transcripts recorded from the real Claude Code 2.1.330
(``tests/fixtures/claude_code/``; re-record with ``tests/fixtures/claude_code/record.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.claude_code import (
    ClaudeState,
    decode_line,
    flush_text,
    normalize_line,
    normalize_lines,
)
from adapters.claude_code.dialect import SKIP
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

from .conftest import fixture_lines, fixture_meta, live_messages


def run(lines: list[bytes], *, batch: int | None = None, **state: Any) -> list[RuntimeEvent]:
    """Normalize like the adapter: per batch (default: everything at once), then flush."""
    make = EventFactory(run_id="run-1", session_id="key", clock=lambda: 0)
    st_ = ClaudeState(**state)
    size = batch or len(lines) or 1
    out: list[RuntimeEvent] = []
    for i in range(0, len(lines), size):
        events, unknown = normalize_lines([decode_line(x) for x in lines[i : i + size]], make, st_)
        assert unknown == []
        out += events
    return out


def text(events: list[RuntimeEvent], channel: str = "assistant") -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == channel)


def last(events: list[RuntimeEvent]) -> Done:
    done = events[-1]
    assert isinstance(done, Done)
    return done


@pytest.mark.parametrize("batch", [None, 1, 3])
def test_text_with_thinking(batch: int | None) -> None:
    events = run(fixture_lines("text"), batch=batch)
    check_stream(events)
    assert text(events) == "FINAL: hello from the scripted server"
    assert text(events, "reasoning") == "Let me think about the greeting."
    init = events[0]
    assert isinstance(init, Status) and init.phase == "init" and init.model == "claude-sonnet-4-6"
    assert last(events).reason == "success"
    assert last(events).summary == "FINAL: hello from the scripted server"
    cost = [e for e in events if isinstance(e, Cost)][-1]
    assert cost.cost_usd == pytest.approx(0.000672)
    assert cost.usage.input_tokens == 160 and cost.usage.cached_input_tokens == 40
    assert cost.usage.output_tokens == 20 and cost.usage.cache_write_tokens == 0
    assert last(events).cost_usd == cost.cost_usd


def test_deltas_stream_one_event_per_batch_and_never_twice() -> None:
    """Line by line, every delta is its own event; the complete ``assistant`` line adds nothing."""
    events = run(fixture_lines("text"), batch=1)
    deltas = [e.text for e in events if isinstance(e, TextDelta) and e.channel == "assistant"]
    assert deltas == ["FINAL: h", "ello fro", "m the sc", "ripted s", "erver"]


def test_without_partial_messages_the_assistant_line_carries_the_text() -> None:
    lines = [x for x in fixture_lines("text") if b'"stream_event"' not in x]
    events = run(lines)
    check_stream(events)
    assert text(events) == "FINAL: hello from the scripted server"
    assert text(events, "reasoning") == "Let me think about the greeting."


def test_tool_call_results_and_failure() -> None:
    events = run(fixture_lines("tool"))
    check_stream(events)
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(c.name, c.input) for c in calls] == [
        ("Bash", {"command": "echo hi-from-tool && pwd", "description": "echo"}),
        ("Bash", {"command": "ls missing-file.txt", "description": "ls"}),
    ]
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls]
    assert results[0].output == "hi-from-tool\n/workspace" and not results[0].is_error
    assert results[0].name == "Bash"
    assert results[1].is_error and "Exit code 2" in results[1].output
    kinds = [e.kind for e in events]
    assert kinds.index("text-delta") < kinds.index("tool-call")  # text before the call it leads to
    assert last(events).summary == "TOOL_RESULT_SEEN"
    assert text(events) == "Let me run a command.TOOL_RESULT_SEEN"


def test_permission_denied_is_the_tools_error_result_once() -> None:
    events = run(fixture_lines("denied"))
    check_stream(events)
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.is_error and "needs approval" in result.output and result.name == "Bash"
    assert last(events).reason == "success"


@pytest.mark.parametrize(
    ("name", "code", "status"),
    [("error-500", "server_error", 500), ("error-429", "rate_limited", 429)],
)
def test_api_errors_retry_then_fail_despite_subtype_success(
    name: str, code: str, status: int
) -> None:
    lines = fixture_lines(name)
    assert json.loads(lines[-1])["subtype"] == "success"  # the CLI's quirk
    assert fixture_meta(name)["exit_code"] == 1
    events = run(lines)
    check_stream(events)
    (retry,) = [e for e in events if isinstance(e, Status) and e.detail]
    assert retry.detail is not None and retry.detail.startswith("api_retry 1/1")
    assert f"(HTTP {status})" in retry.detail
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.fatal and error.code == code and "API Error" in error.message
    assert last(events).reason == "error"
    assert text(events) == ""  # the synthetic "API Error" assistant message is not model text


def test_a_429_retry_is_a_rate_limited_status_until_the_cli_retries() -> None:
    lines = fixture_lines("error-429")
    retry = json.loads(next(x for x in lines if b"api_retry" in x))
    events = run(lines)
    (parked,) = [e for e in events if isinstance(e, Status) and e.phase == "rate_limited"]
    # the factory's clock says 0: the reset is the CLI's own retry delay from now
    assert parked.resets_at == round(retry["retry_delay_ms"])
    assert parked.detail is not None and "(HTTP 429)" in parked.detail


def test_a_500_retry_is_not_a_rate_limit() -> None:
    events = run(fixture_lines("error-500"))
    assert not [e for e in events if isinstance(e, Status) and e.phase == "rate_limited"]


@pytest.mark.parametrize(
    ("info", "phase", "resets_at"),
    [
        (
            {"status": "rejected", "resetsAt": 1795680000, "rateLimitType": "five_hour"},
            "rate_limited",
            1795680000000,
        ),
        ({"status": "rejected"}, "rate_limited", None),
        ({"status": "allowed_warning", "resetsAt": 1795680000}, "running", None),
    ],
)
def test_rate_limit_event(info: dict[str, Any], phase: str, resets_at: int | None) -> None:
    make = EventFactory(run_id="run-1", session_id="key", clock=lambda: 0)
    line = json.dumps({"type": "rate_limit_event", "rate_limit_info": info}).encode()
    events = normalize_line(decode_line(line), make, ClaudeState())
    assert events is not None
    (status,) = events
    assert isinstance(status, Status) and status.phase == phase
    assert status.resets_at == resets_at


@pytest.mark.parametrize(
    "name",
    [
        "text",
        "tool",
        "denied",
        "error-429",
        "error-500",
        "flaky",
        "abort",
        "max-turns",
        "no-key",
        "resume-first",
        "resume-second",
    ],
)
def test_recorded_transcripts_have_every_expected_field(name: str) -> None:
    """No false drift alarm: the pinned Claude Code's own lines carry what the adapter reads."""
    events = run(fixture_lines(name))
    assert not [
        e
        for e in events
        if isinstance(e, Status) and (e.detail or "").startswith("frame lacks expected fields")
    ]


def test_a_result_without_its_cost_is_drift_reported_once() -> None:
    make = EventFactory(run_id="run-1", session_id="key", clock=lambda: 0)
    state = ClaudeState()
    line = {"type": "result", "subtype": "success", "is_error": False, "session_id": "s",
            "result": "ok", "queued_turn_count": 1}  # fmt: skip
    first = normalize_line(line, make, state) or []
    gaps = [e for e in first if isinstance(e, Status) and e.phase == "running"]
    assert [e.detail for e in gaps] == [
        "frame lacks expected fields: 'result' without usage, total_cost_usd"
    ]
    again = normalize_line({**line, "queued_turn_count": 0}, make, state) or []
    assert not [e for e in again if isinstance(e, Status) and e.phase == "running"]
    assert isinstance(again[-1], Done) and again[-1].reason == "success"


def test_flaky_500_then_success() -> None:
    events = run(fixture_lines("flaky"))
    check_stream(events)
    assert last(events).reason == "success" and text(events) == "RECOVERED"


def test_max_turns_is_not_an_error() -> None:
    events = run(fixture_lines("max-turns"))
    check_stream(events)
    assert last(events).reason == "max_turns"
    assert last(events).summary == "One step."
    assert not any(isinstance(e, ErrorEvent) for e in events)


def test_sigint_result_is_aborted() -> None:
    assert fixture_meta("abort")["exit_code"] == 0
    events = run(fixture_lines("abort"))
    check_stream(events)
    assert last(events).reason == "aborted" and last(events).summary == "tick "
    assert not any(isinstance(e, ErrorEvent) for e in events)
    assert text(events) == "tick "  # the partial assistant line repeats what was streamed


def test_our_abort_wins_over_a_late_success() -> None:
    events = run(fixture_lines("text"), aborting=True)
    assert last(events).reason == "aborted"


def test_not_logged_in_is_an_authentication_failure() -> None:
    events = run(fixture_lines("no-key"))
    check_stream(events)
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "authentication_failed" and "Not logged in" in error.message


def test_resume_keeps_the_session() -> None:
    first, second = fixture_lines("resume-first"), fixture_lines("resume-second")
    assert json.loads(first[0])["session_id"] == json.loads(second[0])["session_id"]
    assert last(run(second)).summary == "SECOND after resume"


def test_long_lived_turns_each_end_in_one_done_with_their_own_cost() -> None:
    """Five turns of one process: per-turn usage from ``model_usage_since_last_result`` (the
    process's ``total_cost_usd`` is cumulative)."""
    turns: list[list[bytes]] = [[]]
    for msg in live_messages("out"):
        if msg["type"].startswith("control_"):
            continue
        turns[-1].append(json.dumps(msg).encode())
        if msg["type"] == "result":
            turns.append([])
    turns.pop()
    assert len(turns) == 5
    outcomes = []
    for lines in turns:
        events = run(lines)
        check_stream(events)
        cost = [e for e in events if isinstance(e, Cost)][-1]
        outcomes.append((last(events).reason, last(events).summary, cost.cost_usd))
    assert [(r, s) for r, s, _ in outcomes] == [
        ("success", "LIVE ONE"),
        ("success", "ALLOWED"),
        ("success", "REFUSED"),
        ("aborted", "tick "),
        ("success", "AFTER INTERRUPT"),
    ]
    assert [c for _, _, c in outcomes] == pytest.approx(
        [0.000105, 0.00021, 0.00021, 4.5e-05, 0.000105]
    )


def test_queued_steer_turn_continues_the_run() -> None:
    make = EventFactory(run_id="r")
    state = ClaudeState()
    first = {"type": "result", "subtype": "success", "is_error": False, "result": "A",
             "queued_turn_count": 1, "total_cost_usd": 0.1, "session_id": "s", "usage": {}}  # fmt: skip
    events = normalize_line(first, make, state)
    assert events is not None and [e.kind for e in events] == ["cost", "status"]
    second = {"type": "result", "subtype": "success", "is_error": False, "result": "B",
              "queued_turn_count": 0, "total_cost_usd": 0.3, "session_id": "s", "usage": {}}  # fmt: skip
    events = normalize_line(second, make, state)
    assert events is not None and events[-1].kind == "done"
    cost = events[0]
    assert isinstance(cost, Cost) and cost.cost_usd == pytest.approx(0.3)


def test_unknown_kinds_are_reported_not_raised() -> None:
    make = EventFactory(run_id="r")
    state = ClaudeState()
    assert normalize_line({"type": "brand_new"}, make, state) is None
    assert normalize_line({"type": "system", "subtype": "brand_new"}, make, state) is None
    weird = {"type": "stream_event", "event": {"type": "brand_new"}, "parent_tool_use_id": None}
    assert normalize_line(weird, make, state) is None
    _, unknown = normalize_lines([{"type": "brand_new"}, {"type": "keep_alive"}], make, state)
    assert unknown == ["brand_new"]


def test_sub_agent_text_goes_to_reasoning() -> None:
    make = EventFactory(run_id="r")
    state = ClaudeState()
    line = {"type": "assistant", "parent_tool_use_id": "toolu_parent",
            "message": {"id": "m", "content": [{"type": "text", "text": "sub"}]}}  # fmt: skip
    normalize_line(line, make, state)
    (event,) = flush_text(make, state)
    assert isinstance(event, TextDelta) and event.channel == "reasoning" and state.summary == ""


# ---------------------------------------------------------------------------------- dialect


def test_fast_path_agrees_with_json() -> None:
    for name in ("text", "tool", "abort", "max-turns"):
        for line in fixture_lines(name):
            decoded = decode_line(line)
            if type(decoded) is tuple and len(decoded) == 3:
                event = json.loads(line)["event"]
                delta = event["delta"]
                assert decoded == (
                    "assistant" if delta["type"] == "text_delta" else "reasoning",
                    event["index"],
                    delta.get("text", delta.get("thinking")),
                )


def delta_line(text: str, *, sub: bool = False, index: int = 0) -> bytes:
    parent = '"toolu_1"' if sub else "null"
    body = json.dumps(text, ensure_ascii=False)
    head = '{"type":"stream_event","event":{"type":"content_block_delta","index":'
    delta = f'{index},"delta":{{"type":"text_delta","text":{body}}}}}'
    tail = f',"session_id":"s","parent_tool_use_id":{parent},"uuid":"u"}}'
    return (head + delta + tail).encode()


@given(st.text(max_size=40), st.integers(0, 1000))
def test_fast_path_decodes_any_text(value: str, index: int) -> None:
    decoded = decode_line(delta_line(value, index=index))
    if type(decoded) is tuple and len(decoded) == 3:
        assert decoded == ("assistant", index, value)
    else:  # lone surrogates take the full decode; the result must be the same text
        assert isinstance(decoded, dict)
        assert decoded["event"]["delta"]["text"] == value


def test_fast_path_leaves_sub_agents_and_odd_lines_to_the_full_decode() -> None:
    assert isinstance(decode_line(delta_line("x", sub=True)), dict)
    spaced = b'{"type": "stream_event", "event": {"type": "content_block_delta"}}'
    assert isinstance(decode_line(spaced), dict)
    with pytest.raises(ProtocolError):
        decode_line(delta_line("cut")[:-20])  # a truncated line is not silently accepted
    with pytest.raises(ProtocolError):  # a raw control character: not JSON, as in the full decode
        decode_line(delta_line("a\x01b").replace(b"\\u0001", b"\x01"))
    skip = b'{"type":"stream_event","event":{"type":"content_block_stop","index":0},"x":1}'
    assert decode_line(skip) == SKIP


@pytest.mark.parametrize("line", [b"not json", b"[1, 2]", b'"text"'])
def test_non_objects_are_protocol_errors(line: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_line(line)


# ---------------------------------------------------------------------------------- fast == slow


def _stream_line(event: dict[str, Any], *, parent: str | None, ascii_only: bool) -> bytes:
    """One stream line as Claude Code writes it (compact; non-ASCII raw unless ``ascii_only``)."""
    frame = {"type": "stream_event", "event": event, "session_id": "s",
             "parent_tool_use_id": parent, "uuid": "u"}  # fmt: skip
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=ascii_only).encode()


_piece = st.one_of(
    st.tuples(st.just("text"), st.text(max_size=12)),
    st.tuples(st.just("thinking"), st.text(max_size=12)),
    st.tuples(st.just("json"), st.text(max_size=6)),
    st.tuples(st.just("stop"), st.just("")),
    st.tuples(st.just("ping"), st.just("")),
)


@given(
    blocks=st.lists(
        st.tuples(st.sampled_from(["text", "thinking"]), st.lists(_piece, max_size=6)),
        min_size=1,
        max_size=4,
    ),
    parent=st.sampled_from([None, None, "toolu_parent"]),
    ascii_only=st.booleans(),
    batch=st.integers(1, 5),
)
def test_fast_paths_give_exactly_the_events_of_the_full_decode(
    blocks: list[tuple[str, list[tuple[str, str]]]],
    parent: str | None,
    ascii_only: bool,
    batch: int,
) -> None:
    """Any stream of hot lines (deltas with any text, block starts, input-JSON deltas, stops,
    pings; main agent or sub-agent; escaped or raw non-ASCII), read in batches of any size:
    what :func:`decode_line`'s fast paths give normalizes to exactly the events (wire JSON) of
    the same lines decoded in full."""
    lines = [_stream_line({"type": "message_start", "message": {"id": "m", "usage": {}}},
                          parent=parent, ascii_only=ascii_only)]  # fmt: skip
    for index, (kind, pieces) in enumerate(blocks):
        start = {"type": kind, kind: ""} | ({"signature": ""} if kind == "thinking" else {})
        event: dict[str, Any] = {"type": "content_block_start", "index": index,
                                 "content_block": start}  # fmt: skip
        lines.append(_stream_line(event, parent=parent, ascii_only=ascii_only))
        for what, value in pieces:
            if what == "stop":
                event = {"type": "content_block_stop", "index": index}
            elif what == "ping":
                event = {"type": "ping"}
            else:
                delta = {"type": "input_json_delta", "partial_json": value} if what == "json" else {
                    "type": f"{what}_delta", what: value}  # fmt: skip
                event = {"type": "content_block_delta", "index": index, "delta": delta}
            lines.append(_stream_line(event, parent=parent, ascii_only=ascii_only))

    def normalized(decode: Any) -> list[str]:
        make = EventFactory(run_id="r", session_id="k", clock=lambda: 1)
        state = ClaudeState()
        out: list[RuntimeEvent] = []
        for i in range(0, len(lines), batch):
            events, unknown = normalize_lines(
                [decode(x) for x in lines[i : i + batch]], make, state
            )
            assert unknown == []
            out += events
        return [e.model_dump_json() for e in out]

    assert normalized(decode_line) == normalized(json.loads)
    if parent is None:  # the fast paths were taken: every line but message_start
        assert all(type(decode_line(x)) is tuple for x in lines[1:])
