"""The exec normalizer on recorded Codex 0.169.0 transcripts and on edge cases."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.codex import ExecState, classify_failure, decode_exec_line, normalize_exec
from adapters.codex.dialect import ExecEvent
from adapters.codex.normalize import Price, exec_frame_label
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
    Usage,
)

from .conftest import fixture_lines, fixture_meta


def run_lines(
    lines: list[bytes], state: ExecState | None = None, *, finish: bool = True
) -> tuple[list[RuntimeEvent], ExecState, list[str]]:
    """Normalize lines like the adapter does; end with the adapter's exit rule (success if the
    turn completed)."""
    make = EventFactory(run_id="r", session_id="s", clock=lambda: 1)
    state = state or ExecState(model="gpt-5.5")
    events: list[RuntimeEvent] = []
    unknown: list[str] = []
    for line in lines:
        if make.finished:
            break
        out = normalize_exec(decode_exec_line(line), make, state)
        if out is None:
            unknown.append(exec_frame_label(decode_exec_line(line)))
        else:
            events += out
    if finish and state.turn_completed and not make.finished:
        events += make.finish("success", state.summary)
    return events, state, unknown


def test_text_transcript() -> None:
    events, state, unknown = run_lines(fixture_lines("exec-text"))
    check_stream(events)
    assert not unknown
    assert isinstance(events[0], Status) and events[0].phase == "init"
    assert events[0].model == "gpt-5.5"
    assert state.thread_id and len(state.thread_id) == 36
    texts = [(e.channel, e.text) for e in events if isinstance(e, TextDelta)]
    assert texts == [("reasoning", "Thinking about it"), ("assistant", "FINAL: hello from codex")]
    cost = next(e for e in events if isinstance(e, Cost))
    assert cost.usage.input_tokens == 10 and cost.usage.output_tokens == 5
    assert cost.cost_usd is None and not cost.estimated
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert done.summary == "FINAL: hello from codex"


def test_tool_transcript_gives_calls_then_results_with_exit_codes() -> None:
    events, _, _ = run_lines(fixture_lines("exec-tool"))
    check_stream(events)
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["exec_command", "exec_command"]
    assert calls[0].input == {"command": "/bin/bash -lc 'echo hi-from-tool'"}
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls]
    assert results[0].output == "hi-from-tool\n[exit code: 0]"
    assert not results[0].is_error
    assert results[1].is_error and results[1].output.endswith("[exit code: 2]")
    assert "No such file" in results[1].output
    kinds = [e.kind for e in events]
    assert kinds.index("tool-call") < kinds.index("tool-result")
    assert isinstance(events[-1], Done) and events[-1].summary == "TOOL_RESULT_SEEN"


def test_patch_transcript_is_an_apply_patch_tool() -> None:
    events, _, _ = run_lines(fixture_lines("exec-patch"))
    check_stream(events)
    call = next(e for e in events if isinstance(e, ToolCall))
    result = next(e for e in events if isinstance(e, ToolResult))
    assert call.name == "apply_patch"
    assert call.input == {"changes": [{"path": "/workspace/patched.txt", "kind": "add"}]}
    assert result.output == "add /workspace/patched.txt" and not result.is_error


@pytest.mark.parametrize(
    ("name", "code", "text"),
    [
        ("exec-error-500", "server_error", "high demand"),
        ("exec-error-429", "rate_limited", "429 Too Many Requests"),
    ],
)
def test_failed_turns(name: str, code: str, text: str) -> None:
    assert fixture_meta(name)["exit_code"] == 1
    events, state, _ = run_lines(fixture_lines(name))
    check_stream(events)
    retries = [e for e in events if isinstance(e, Status) and e.detail]
    assert retries and retries[0].detail is not None and "Reconnecting" in retries[0].detail
    # a 429 retry holds the run at a rate limit (exec says no reset time); a 500's does not
    phases = {e.phase for e in retries}
    assert phases == ({"rate_limited"} if code == "rate_limited" else {"running"})
    assert all(e.resets_at is None for e in retries)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.fatal and error.code == code and text in error.message
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
    assert state.turn_failed


def test_resumed_thread_reports_only_this_runs_usage() -> None:
    first, state1, _ = run_lines(fixture_lines("exec-resume-first"))
    second_lines = fixture_lines("exec-resume-second")
    assert json.loads(second_lines[0])["thread_id"] == state1.thread_id
    total_first = next(e for e in first if isinstance(e, Cost)).usage
    state = ExecState(model="gpt-5.5", base_usage=total_first)
    second, _, _ = run_lines(second_lines, state)
    cost = next(e for e in second if isinstance(e, Cost))
    assert (cost.usage.input_tokens, cost.usage.output_tokens) == (10, 5)
    raw = json.loads(second_lines[-1])["usage"]
    assert (raw["input_tokens"], raw["output_tokens"]) == (20, 10)  # Codex: the thread's total


def test_aborted_transcript_has_no_terminal_line() -> None:
    meta = fixture_meta("exec-abort")
    assert meta["exit_code"] == 1
    events, state, _ = run_lines(fixture_lines("exec-abort"), finish=False)
    assert not any(isinstance(e, Done) for e in events)
    assert not state.turn_completed and not state.turn_failed


def test_price_table_gives_estimated_usd() -> None:
    state = ExecState(model="gpt-5.5", prices={"gpt-5.5": Price(input=1.0, output=10.0)})
    events, _, _ = run_lines(fixture_lines("exec-text"), state)
    cost = next(e for e in events if isinstance(e, Cost))
    assert cost.estimated
    assert cost.cost_usd == pytest.approx((10 * 1.0 + 5 * 10.0) / 1e6)
    done = events[-1]
    assert isinstance(done, Done) and done.cost_usd == cost.cost_usd


def test_cached_input_price() -> None:
    state = ExecState(model="m", prices={"m": Price(input=2.0, output=0.0, cached_input=0.5)})
    make = EventFactory(run_id="r")
    line = {
        "type": "turn.completed",
        "usage": {"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 0},
    }
    (cost,) = normalize_exec(line, make, state) or []  # type: ignore[arg-type]
    assert isinstance(cost, Cost)
    assert cost.cost_usd == pytest.approx((400 * 2.0 + 600 * 0.5) / 1e6)
    assert cost.usage.cached_input_tokens == 600


def ev(obj: dict[str, Any]) -> ExecEvent:
    return decode_exec_line(json.dumps(obj).encode())


def test_item_wrapped_agent_message_is_captured() -> None:
    """Regression (a bug of the original executor): the item-wrapped agent_message becomes the text and
    the summary (it produced empty summaries)."""
    lines = [
        b'{"type":"thread.started","thread_id":"t"}',
        b'{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"the answer"}}',
        b'{"type":"turn.completed","usage":{}}',
    ]
    events, _, _ = run_lines(lines)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["the answer"]
    assert isinstance(events[-1], Done) and events[-1].summary == "the answer"


def test_completed_without_start_still_opens_the_call_first() -> None:
    make = EventFactory(run_id="r")
    state = ExecState()
    item = {"id": "c1", "type": "command_execution", "command": "ls", "aggregated_output": "a\n"}
    out = normalize_exec(
        ev({"type": "item.completed", "item": {**item, "exit_code": 0}}), make, state
    )
    assert out is not None and [e.kind for e in out] == ["tool-call", "tool-result"]
    again = normalize_exec(ev({"type": "item.completed", "item": item}), make, state)
    assert again == []  # a duplicate completion is ignored
    assert not make.open_tool_calls


def test_mcp_web_search_todo_and_warning_items() -> None:
    make = EventFactory(run_id="r")
    state = ExecState()
    mcp = {"id": "m1", "type": "mcp_tool_call", "server": "orch", "tool": "lookup",
           "arguments": {"q": 1}, "status": "in_progress"}  # fmt: skip
    (call,) = normalize_exec(ev({"type": "item.started", "item": mcp}), make, state) or []
    assert (
        isinstance(call, ToolCall) and call.name == "mcp__orch__lookup" and call.input == {"q": 1}
    )
    done_mcp = {**mcp, "status": "completed",
                "result": {"content": [{"type": "text", "text": "found"}]}}  # fmt: skip
    (res,) = normalize_exec(ev({"type": "item.completed", "item": done_mcp}), make, state) or []
    assert isinstance(res, ToolResult) and res.output == "found" and not res.is_error
    failed = {**mcp, "id": "m2", "status": "failed", "error": {"message": "boom"}}
    out = normalize_exec(ev({"type": "item.completed", "item": failed}), make, state) or []
    assert isinstance(out[-1], ToolResult) and out[-1].is_error and out[-1].output == "boom"
    search = {"id": "w1", "type": "web_search", "query": "trio nursery"}
    out = normalize_exec(ev({"type": "item.completed", "item": search}), make, state) or []
    assert [e.kind for e in out] == ["tool-call", "tool-result"]
    todo = {"id": "t1", "type": "todo_list",
            "items": [{"text": "a", "completed": True}, {"text": "b", "completed": False}]}  # fmt: skip
    (status,) = normalize_exec(ev({"type": "item.updated", "item": todo}), make, state) or []
    assert isinstance(status, Status) and status.detail == "todo: [x] a; [ ] b"
    warn = {"id": "e1", "type": "error", "message": "Model metadata for `x` not found."}
    (err,) = normalize_exec(ev({"type": "item.completed", "item": warn}), make, state) or []
    assert isinstance(err, ErrorEvent) and not err.fatal and err.code == "codex_warning"


def test_unknown_types_and_fields_are_tolerated() -> None:
    make = EventFactory(run_id="r")
    state = ExecState()
    assert normalize_exec(ev({"type": "turn.paused", "x": 1}), make, state) is None
    assert exec_frame_label(ev({"type": "turn.paused"})) == "turn.paused"
    unknown_item = ev({"type": "item.completed", "item": {"id": "x", "type": "collab_call"}})
    assert normalize_exec(unknown_item, make, state) is None
    assert exec_frame_label(unknown_item) == "item:collab_call"
    assert normalize_exec(ev({"no_type": True}), make, state) is None
    assert normalize_exec(ev({"type": "item.completed", "item": "nope"}), make, state) is None
    # wrong field types never raise
    weird = {"id": 5, "type": "command_execution", "command": ["x"], "exit_code": "0"}
    out = normalize_exec(ev({"type": "item.completed", "item": weird}), make, state)
    assert out is not None and isinstance(out[-1], ToolResult)
    out = normalize_exec(
        ev({"type": "turn.completed", "usage": {"input_tokens": "many"}}), make, state
    )
    assert out is not None and isinstance(out[-1], Cost) and out[-1].usage == Usage()
    # drift: the counts it reads are absent (a present field of the wrong type is tolerated)
    assert isinstance(out[0], Status) and out[0].detail == (
        "frame lacks expected fields: 'turn.completed' without usage.output_tokens, "
        "usage.cached_input_tokens"
    )


def test_recorded_transcripts_have_every_expected_field() -> None:
    """No false alarm: the pinned Codex's own lines carry what the adapter expects."""
    for name in (
        "exec-text",
        "exec-tool",
        "exec-patch",
        "exec-error-429",
        "exec-error-500",
        "exec-abort",
        "exec-resume-first",
        "exec-resume-second",
    ):
        events, _, _ = run_lines(fixture_lines(name))
        details = [e.detail or "" for e in events if isinstance(e, Status)]
        assert not [d for d in details if d.startswith("frame lacks")], name


def test_decode_rejects_non_objects() -> None:
    with pytest.raises(ProtocolError):
        decode_exec_line(b'{"type": "thread.sta')
    with pytest.raises(ProtocolError):
        decode_exec_line(b"[1, 2]")


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("exceeded retry limit, last status: 429 Too Many Requests", "rate_limited"),
        ("You’ve hit your usage limit. Upgrade to Pro … or try again at 6:14 AM.", "rate_limited"),
        (
            "We’re currently experiencing high demand, which may cause temporary errors.",
            "server_error",
        ),
        ("Selected model is at capacity. Please try a different model.", "server_error"),
        (
            "stream disconnected before completion: fake mid-stream failure",
            "stream_connection_error",
        ),
        ("something else", "runtime_reported"),
    ],
)
def test_classify_failure(message: str, code: str) -> None:
    assert classify_failure(message) == code


_items = st.fixed_dictionaries(
    {"id": st.sampled_from(["i0", "i1", "i2"]),
     "type": st.sampled_from(["agent_message", "reasoning", "command_execution", "file_change",
                              "mcp_tool_call", "web_search", "todo_list", "error", "mystery"])},
    optional={"text": st.text(max_size=5), "exit_code": st.one_of(st.none(), st.integers(-1, 3)),
              "status": st.sampled_from(["in_progress", "completed", "failed"]),
              "aggregated_output": st.text(max_size=5)},
)  # fmt: skip
_lines = st.one_of(
    st.builds(lambda k, i: {"type": k, "item": i},
              st.sampled_from(["item.started", "item.updated", "item.completed"]), _items),
    st.just({"type": "turn.started"}),
    st.builds(lambda m: {"type": "error", "message": m}, st.text(max_size=8)),
    st.builds(lambda n: {"type": "turn.completed", "usage": {"input_tokens": n, "output_tokens": n}},
              st.integers(0, 10_000)),
    st.just({"type": "turn.failed", "error": {"message": "bad"}}),
    st.just({"type": "brand.new"}),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(_lines, max_size=25))
def test_any_line_sequence_keeps_the_invariants(lines: list[dict[str, Any]]) -> None:
    encoded = [b'{"type":"thread.started","thread_id":"t"}'] + [
        json.dumps(line).encode() for line in lines
    ]
    events, state, _ = run_lines(encoded, finish=False)
    make_done = [e for e in events if isinstance(e, Done)]
    if not make_done:
        # what the adapter does at exit: success after a completed turn, else a failure
        make = EventFactory(run_id="r", seq=events[-1].seq)
        make.open_tool_calls.update(
            {e.tool_call_id: e.name for e in events if isinstance(e, ToolCall)}
        )
        for r in events:
            if isinstance(r, ToolResult):
                make.open_tool_calls.pop(r.tool_call_id, None)
        events += make.finish("success") if state.turn_completed else make.fail("exited")
    check_stream(events)
