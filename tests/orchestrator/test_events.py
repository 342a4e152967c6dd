"""The event union: wire names, JSON round trip, frozen models, and EventFactory bookkeeping."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core import (
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
    assert_exhaustive,
    event_from_json,
    event_to_json,
    now_ms,
)
from orchestrator.core.events import StatusPhase, TextChannel, usage_of, with_seq, with_text


def factory(**kw: Any) -> EventFactory:
    return EventFactory(run_id="run-1", session_id="sess-1", clock=lambda: 1_700_000_000_000, **kw)


# -- wire names ------------------------------------------------------------------------------------


def test_wire_names_are_the_reference_camel_case() -> None:
    make = factory()
    delta = json.loads(event_to_json(make.text_delta("hi")))
    assert delta == {
        "runId": "run-1",
        "sessionId": "sess-1",
        "ts": 1_700_000_000_000,
        "seq": 1,
        "kind": "text-delta",
        "text": "hi",
        "channel": "assistant",
    }
    call = json.loads(event_to_json(make.tool_call("tc-1", "Bash", {"cmd": "ls"})))
    assert call["toolCallId"] == "tc-1"
    assert call["kind"] == "tool-call"
    assert call["partial"] is False
    result = json.loads(event_to_json(make.tool_result("tc-1", "ok", is_error=True)))
    assert (result["kind"], result["toolCallId"], result["isError"]) == (
        "tool-result",
        "tc-1",
        True,
    )
    cost = json.loads(
        event_to_json(
            make.cost(
                Usage(
                    input_tokens=10, output_tokens=2, cached_input_tokens=4, cache_write_tokens=1
                ),
                cost_usd=0.25,
                estimated=True,
            )
        )
    )
    assert cost["costUsd"] == 0.25
    assert cost["usage"] == {
        "inputTokens": 10,
        "outputTokens": 2,
        "cachedInputTokens": 4,
        "cacheWriteTokens": 1,
    }
    assert cost["estimated"] is True
    done = json.loads(event_to_json(make.finish("max_turns", "stopped")[-1]))
    assert (done["kind"], done["reason"], done["costUsd"]) == ("done", "max_turns", 0.25)
    error = json.loads(event_to_json(factory().error("x", code="rate_limit")))
    assert (error["kind"], error["code"], error["fatal"]) == ("error", "rate_limit", True)
    status = json.loads(event_to_json(factory().status("turn-complete", model="m")))
    assert (status["kind"], status["phase"]) == ("status", "turn-complete")
    for wire in (delta, call, result, cost, done, error, status):
        assert not any("_" in key for key in wire)


def test_python_names_are_accepted_on_input() -> None:
    event = event_from_json(
        '{"kind":"tool-result","run_id":"r","ts":1,"seq":2,"tool_call_id":"t","name":"n",'
        '"output":"o","is_error":true}'
    )
    assert isinstance(event, ToolResult)
    assert (event.tool_call_id, event.is_error) == ("t", True)


def test_extra_unknown_fields_are_ignored_on_input() -> None:
    event = event_from_json(
        '{"kind":"text-delta","runId":"r","sessionId":null,"ts":1,"seq":1,"text":"x",'
        '"futureField":42,"nested":{"a":[1]}}'
    )
    assert isinstance(event, TextDelta)
    assert event.text == "x"
    assert "futureField" not in event_to_json(event)
    usage = event_from_json(
        '{"kind":"cost","runId":"r","ts":1,"seq":1,"costUsd":null,'
        '"usage":{"inputTokens":1,"outputTokens":2,"reasoningTokens":9}}'
    )
    assert isinstance(usage, Cost)
    assert usage.usage == Usage(input_tokens=1, output_tokens=2)


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(pydantic.ValidationError):
        event_from_json('{"kind":"telepathy","runId":"r","ts":1,"seq":1}')


def test_events_are_frozen() -> None:
    make = factory()
    events: list[RuntimeEvent] = [make.text_delta("a"), make.status("init"), *make.fail("boom")]
    for event in events:
        with pytest.raises(pydantic.ValidationError, match="frozen"):
            event.seq = 99  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        Usage().input_tokens = 3  # type: ignore[misc]


def test_assert_exhaustive_raises_at_run_time() -> None:
    with pytest.raises(AssertionError, match="Unhandled RuntimeEvent variant"):
        assert_exhaustive("bogus")  # type: ignore[arg-type]


def test_exhaustive_match_over_every_kind() -> None:
    def describe(event: RuntimeEvent) -> str:
        match event:
            case TextDelta():
                return "delta"
            case ToolCall():
                return "call"
            case ToolResult():
                return "result"
            case Status():
                return "status"
            case Cost():
                return "cost"
            case Done():
                return "done"
            case ErrorEvent():
                return "error"
            case _:
                assert_exhaustive(event)

    make = factory()
    events: list[RuntimeEvent] = [
        make.text_delta("a"),
        make.tool_call("t", "n", None),
        make.tool_result("t", "o"),
        make.status("init"),
        make.cost(Usage(), cost_usd=None),
        make.error("e", fatal=False),
        *make.finish("success"),
    ]
    assert [describe(e) for e in events] == [
        "delta",
        "call",
        "result",
        "status",
        "cost",
        "error",
        "done",
    ]


# -- JSON round trip for every kind ----------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)
usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10**9),
    output_tokens=st.integers(0, 10**9),
    cached_input_tokens=st.none() | st.integers(0, 10**9),
    cache_write_tokens=st.none() | st.integers(0, 10**9),
)
usd = st.none() | st.floats(0, 1e6, allow_nan=False)
BASE: dict[str, Any] = {
    "run_id": st.text(max_size=12),
    "session_id": st.none() | st.text(max_size=12),
    "ts": st.integers(0, 2**53),
    "seq": st.integers(1, 2**31),
}
KINDS: dict[str, st.SearchStrategy[Any]] = {
    "text-delta": st.builds(
        TextDelta, text=st.text(), channel=st.sampled_from(["assistant", "reasoning"]), **BASE
    ),
    "tool-call": st.builds(
        ToolCall,
        tool_call_id=st.text(max_size=10),
        name=st.text(max_size=10),
        input=json_values,
        partial=st.booleans(),
        **BASE,
    ),
    "tool-result": st.builds(
        ToolResult,
        tool_call_id=st.text(max_size=10),
        name=st.text(max_size=10),
        output=st.text(),
        is_error=st.booleans(),
        **BASE,
    ),
    "status": st.builds(
        Status,
        phase=st.sampled_from(["init", "thinking", "running", "turn-complete"]),
        model=st.none() | st.text(max_size=8),
        detail=st.none() | st.text(max_size=20),
        **BASE,
    ),
    "cost": st.builds(
        Cost,
        cost_usd=usd,
        usage=usages,
        model=st.none() | st.text(max_size=8),
        estimated=st.booleans(),
        **BASE,
    ),
    "done": st.builds(
        Done,
        reason=st.sampled_from(["success", "max_turns", "aborted", "error"]),
        summary=st.text(),
        usage=st.none() | usages,
        cost_usd=usd,
        **BASE,
    ),
    "error": st.builds(
        ErrorEvent,
        code=st.none() | st.text(max_size=10),
        message=st.text(),
        fatal=st.booleans(),
        **BASE,
    ),
}


@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_kind_round_trips_through_json_unchanged(kind: str, data: st.DataObject) -> None:
    event = data.draw(KINDS[kind])
    assert event.kind == kind
    wire = event_to_json(event)
    back = event_from_json(wire)
    assert back == event
    assert type(back) is type(event)
    assert event_from_json(wire.encode()) == event
    assert event_to_json(back) == wire


lone_surrogates = st.integers(0xD800, 0xDFFF).map(chr)


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.characters() | lone_surrogates, min_size=1))
def test_lone_surrogates_go_on_the_wire_as_replacement_characters(text: str) -> None:
    make = factory()
    event = make.tool_call("t", text, {text: [text]})
    wire = event_to_json(event)
    wire.encode("utf-8")  # valid UTF-8: the event log and the feed can write it
    replaced = "".join("\ufffd" if 0xD800 <= ord(c) < 0xE000 else c for c in text)
    back = event_from_json(wire)
    assert isinstance(back, ToolCall)
    assert back.name == replaced
    assert back.input == {replaced: [replaced]}


# -- EventFactory ----------------------------------------------------------------------------------


def test_envelope_and_gapless_seq() -> None:
    make = factory()
    events: list[RuntimeEvent] = [
        make.status("init", model="m"),
        make.text_delta("a"),
        make.tool_call("t", "Read", {"path": "x"}),
        make.tool_result("t", "content"),
        make.cost(Usage(input_tokens=1), cost_usd=None),
        make.error("transient", fatal=False),
        *make.finish("success", "ok"),
    ]
    assert [e.seq for e in events] == list(range(1, 8))
    assert {(e.run_id, e.session_id, e.ts) for e in events} == {
        ("run-1", "sess-1", 1_700_000_000_000)
    }
    assert make.seq == 7


def test_late_bound_run_id_applies_to_later_events() -> None:
    make = EventFactory(clock=lambda: 5)
    first = make.text_delta("a")
    make.run_id = "late"
    second = make.text_delta("b")
    assert (first.run_id, second.run_id) == ("", "late")
    assert first.session_id is None


def test_default_clock_is_epoch_ms() -> None:
    before = now_ms()
    event = EventFactory().status("init")
    assert before <= event.ts <= now_ms()
    assert event.ts > 1_600_000_000_000


def test_tool_call_bookkeeping() -> None:
    make = factory()
    make.tool_call("a", "Bash", {"cmd": "ls"})
    make.tool_call("b", "Read", {})
    assert make.open_tool_calls == {"a": "Bash", "b": "Read"}
    result = make.tool_result("a", "ok")
    assert result.name == "Bash"  # the name comes from the open call
    assert result.is_error is False
    assert make.open_tool_calls == {"b": "Read"}
    named = make.tool_result("zzz", "?", name="Explicit")
    assert named.name == "Explicit"
    unknown = make.tool_result("nope", "?")
    assert unknown.name == ""


def test_finish_closes_open_calls_with_synthetic_errors_before_done() -> None:
    make = factory()
    make.tool_call("a", "Bash", {})
    make.tool_call("b", "Read", {})
    make.tool_result("a", "ok")
    make.tool_call("c", "Write", {})
    terminal = make.finish("aborted", "stopped")
    assert [e.kind for e in terminal] == ["tool-result", "tool-result", "done"]
    synthetic = [e for e in terminal if isinstance(e, ToolResult)]
    assert [(e.tool_call_id, e.name, e.is_error) for e in synthetic] == [
        ("b", "Read", True),
        ("c", "Write", True),
    ]
    assert all("aborted" in e.output for e in synthetic)
    done = terminal[-1]
    assert isinstance(done, Done)
    assert (done.reason, done.summary) == ("aborted", "stopped")
    assert [e.seq for e in terminal] == [5, 6, 7]
    assert make.open_tool_calls == {}
    assert make.finished


def test_finish_twice_returns_nothing() -> None:
    make = factory()
    assert len(make.finish("success")) == 1
    assert make.finish("success") == []
    assert make.finish("error") == []
    assert make.fail("late") == []
    assert make.seq == 1


def test_finish_carries_the_cumulative_figures_unless_given() -> None:
    make = factory()
    make.cost(Usage(input_tokens=10, output_tokens=3), cost_usd=0.5)
    done = make.finish("success")[-1]
    assert isinstance(done, Done)
    assert done.usage == Usage(input_tokens=10, output_tokens=3)
    assert done.cost_usd == 0.5
    other = factory()
    explicit = other.finish("success", usage=Usage(input_tokens=1), cost_usd=0.1)[-1]
    assert isinstance(explicit, Done)
    assert (explicit.usage, explicit.cost_usd) == (Usage(input_tokens=1), 0.1)
    bare = factory().finish("success")[-1]
    assert isinstance(bare, Done)
    assert (bare.usage, bare.cost_usd) == (None, None)


def test_fail_is_a_fatal_error_then_done_error() -> None:
    make = factory()
    make.tool_call("t", "Bash", {})
    events = make.fail("the runtime crashed", code="runtime_exited")
    assert [e.kind for e in events] == ["error", "tool-result", "done"]
    error, _, done = events
    assert isinstance(error, ErrorEvent)
    assert (error.message, error.code, error.fatal) == (
        "the runtime crashed",
        "runtime_exited",
        True,
    )
    assert isinstance(done, Done)
    assert (done.reason, done.summary) == ("error", "the runtime crashed")
    custom = factory().fail("boom", summary="")
    assert isinstance(custom[-1], Done)
    assert custom[-1].summary == ""


def test_cost_never_decreases() -> None:
    make = factory()
    first = make.cost(Usage(input_tokens=10, output_tokens=5, cached_input_tokens=3), cost_usd=0.5)
    lower = make.cost(Usage(input_tokens=3, output_tokens=9), cost_usd=0.1)
    assert lower.usage == Usage(input_tokens=10, output_tokens=9, cached_input_tokens=3)
    assert lower.cost_usd == 0.5
    unknown = make.cost(Usage(input_tokens=20), cost_usd=None)
    assert unknown.cost_usd is None  # this event does not know the USD …
    assert unknown.usage.input_tokens == 20
    assert make.cost_usd == 0.5  # … but the known cumulative figure is kept
    assert first.usage.total_tokens == 15


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 1000),
            st.integers(0, 1000),
            st.none() | st.integers(0, 1000),
            st.none() | st.floats(0, 100, allow_nan=False),
        ),
        max_size=20,
    )
)
def test_cumulative_cost_is_monotonic(
    reports: list[tuple[int, int, int | None, float | None]],
) -> None:
    make = factory()
    prev_in = prev_out = prev_cached = 0
    prev_usd = 0.0
    for inp, out, cached, usd_ in reports:
        event = make.cost(
            Usage(input_tokens=inp, output_tokens=out, cached_input_tokens=cached), cost_usd=usd_
        )
        assert event.usage.input_tokens >= prev_in
        assert event.usage.output_tokens >= prev_out
        assert (event.usage.cached_input_tokens or 0) >= prev_cached
        if event.cost_usd is not None:
            assert event.cost_usd >= prev_usd
            prev_usd = event.cost_usd
        prev_in, prev_out = event.usage.input_tokens, event.usage.output_tokens
        prev_cached = event.usage.cached_input_tokens or 0


def test_add_cost_sums_turns() -> None:
    make = factory()
    one = make.add_cost(
        Usage(input_tokens=100, output_tokens=10, cached_input_tokens=40), cost_usd_delta=0.25
    )
    assert (one.usage.input_tokens, one.cost_usd) == (100, 0.25)
    two = make.add_cost(Usage(input_tokens=50, output_tokens=5), cost_usd_delta=0.5, model="m")
    assert two.usage == Usage(input_tokens=150, output_tokens=15, cached_input_tokens=40)
    assert two.cost_usd == 0.75
    assert two.model == "m"
    done = make.finish("success")[-1]
    assert isinstance(done, Done)
    assert (done.usage, done.cost_usd) == (two.usage, 0.75)


def test_add_cost_unknown_usd_stays_none() -> None:
    make = factory()
    first = make.add_cost(Usage(input_tokens=1), cost_usd_delta=None, estimated=True)
    assert first.cost_usd is None  # unknown, never 0
    assert first.estimated
    later = make.add_cost(Usage(input_tokens=1), cost_usd_delta=0.5)
    assert later.cost_usd is None  # one unknown turn makes the total unknown from then on
    assert later.usage.input_tokens == 2
    other = factory()
    other.add_cost(Usage(input_tokens=1), cost_usd_delta=0.5)
    assert other.add_cost(Usage(), cost_usd_delta=None).cost_usd is None
    assert other.add_cost(Usage(), cost_usd_delta=1.0).cost_usd is None


def test_usage_addition() -> None:
    a = Usage(input_tokens=1, output_tokens=2)
    b = Usage(input_tokens=3, output_tokens=4, cached_input_tokens=5)
    assert a + b == Usage(input_tokens=4, output_tokens=6, cached_input_tokens=5)
    assert (a + a).cached_input_tokens is None
    assert (a + b).total_tokens == 10


# -- the factory's trusted fast construction gives exactly what validation gives ---------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def _same(fast: RuntimeEvent, slow: RuntimeEvent) -> None:
    assert type(fast) is type(slow)
    assert fast == slow
    assert event_to_json(fast) == event_to_json(slow)
    assert fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__
    assert list(fast.__dict__) == list(slow.__dict__)
    assert fast.model_dump() == slow.model_dump()


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=20),
    channel=st.sampled_from(["assistant", "reasoning"]),
    call_id=st.text(max_size=8),
    name=st.text(max_size=8),
    input=_json_values,
    output=st.text(max_size=20),
    is_error=st.booleans(),
    phase=st.sampled_from(["init", "thinking", "running", "turn-complete"]),
    model=st.none() | st.text(max_size=8),
    detail=st.none() | st.text(max_size=8),
    session=st.none() | st.text(max_size=8),
)
def test_fast_constructed_events_equal_validated_ones(
    text: str,
    channel: TextChannel,
    call_id: str,
    name: str,
    input: pydantic.JsonValue,
    output: str,
    is_error: bool,
    phase: StatusPhase,
    model: str | None,
    detail: str | None,
    session: str | None,
) -> None:
    make = EventFactory(run_id="r", session_id=session, clock=lambda: 7)
    env: dict[str, Any] = {"run_id": "r", "session_id": session, "ts": 7}
    _same(make.text_delta(text, channel), TextDelta(**env, seq=1, text=text, channel=channel))
    call = make.tool_call(call_id, name, input)
    _same(call, ToolCall(**env, seq=2, tool_call_id=call_id, name=name, input=input, partial=False))
    if isinstance(input, dict | list):
        assert call.input is not input  # a copy, as validation makes
    _same(
        make.tool_result(call_id, output, name=name, is_error=is_error),
        ToolResult(**env, seq=3, tool_call_id=call_id, name=name, output=output, is_error=is_error),
    )
    _same(
        make.status(phase, model=model, detail=detail),
        Status(**env, seq=4, phase=phase, model=model, detail=detail),
    )
    delta = make.text_delta(text)
    _same(with_seq(delta, 99), delta.model_copy(update={"seq": 99}))


@settings(max_examples=150, deadline=None)
@given(
    usage=st.builds(
        Usage,
        input_tokens=st.integers(0, 10**9),
        output_tokens=st.integers(0, 10**9),
        cached_input_tokens=st.none() | st.integers(0, 10**6),
        cache_write_tokens=st.none() | st.integers(0, 10**6),
    ),
    usd=st.none() | st.floats(0, 1e6, allow_nan=False),
    model=st.none() | st.text(max_size=8),
    estimated=st.booleans(),
    reason=st.sampled_from(["success", "max_turns", "aborted", "error"]),
    summary=st.text(max_size=20),
    code=st.none() | st.text(max_size=8),
    message=st.text(max_size=20),
    fatal=st.booleans(),
)
def test_fast_constructed_cost_done_and_error_equal_validated_ones(
    usage: Usage,
    usd: float | None,
    model: str | None,
    estimated: bool,
    reason: Any,
    summary: str,
    code: str | None,
    message: str,
    fatal: bool,
) -> None:
    make = EventFactory(run_id="r", session_id="s", clock=lambda: 7)
    env: dict[str, Any] = {"run_id": "r", "session_id": "s", "ts": 7}
    _same(
        make.cost(usage, cost_usd=usd, model=model, estimated=estimated),
        Cost(**env, seq=1, cost_usd=usd, usage=usage, model=model, estimated=estimated),
    )
    _same(
        make.error(message, code=code, fatal=fatal),
        ErrorEvent(**env, seq=2, code=code, message=message, fatal=fatal),
    )
    (done,) = make.finish(reason, summary)
    _same(done, Done(**env, seq=3, reason=reason, summary=summary, usage=usage, cost_usd=usd))


@settings(max_examples=100, deadline=None)
@given(
    a=st.integers(-(2**70), 2**70),
    b=st.integers(0, 2**40),
    c=st.none() | st.integers(0, 2**40),
    d=st.none() | st.integers(0, 2**40),
)
def test_usage_of_equals_validated_usage(a: int, b: int, c: int | None, d: int | None) -> None:
    fast = usage_of(a, b, c, d)
    slow = Usage(input_tokens=a, output_tokens=b, cached_input_tokens=c, cache_write_tokens=d)
    assert fast == slow
    assert fast.model_dump_json() == slow.model_dump_json()
    assert fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__
    assert list(fast.__dict__) == list(slow.__dict__)
    assert fast + slow == Usage(
        input_tokens=2 * a,
        output_tokens=2 * b,
        cached_input_tokens=None if c is None else 2 * c,
        cache_write_tokens=None if d is None else 2 * d,
    )
    with pytest.raises(pydantic.ValidationError):
        usage_of("x", 1)  # type: ignore[arg-type]  # not an int: validated (and refused)


@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_event_to_json_writes_what_model_dump_json_writes(kind: str, data: st.DataObject) -> None:
    event = data.draw(KINDS[kind])
    assert event_to_json(event) == event.model_dump_json(by_alias=True)


def test_values_of_other_types_still_go_through_validation() -> None:
    class Sub(str):
        pass

    make = EventFactory(run_id="r", clock=lambda: 1)
    assert type(make.text_delta(Sub("x")).text) is str  # validated (and coerced)
    with pytest.raises(pydantic.ValidationError):
        make.tool_call("c", "n", {1: "not a str key"})  # type: ignore[dict-item]
    with pytest.raises(pydantic.ValidationError):
        make.status("nonsense")  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        EventFactory(run_id="r", clock=lambda: 1.5).text_delta("x")  # type: ignore[arg-type, return-value]
    cost = make.cost(Usage(), cost_usd=1)  # an int where a float goes: validated (coerced)
    assert type(cost.cost_usd) is float
    with pytest.raises(pydantic.ValidationError):
        make.finish("nonsense")  # type: ignore[arg-type]


def test_a_copy_with_updates_leaves_the_kinds_shared_fields_set_alone() -> None:
    """The factory shares one fields-set per kind; ``model_copy(update=…)`` (as ``rate_limited``
    does) must add to a copy of it, never to the set every other event holds."""
    make = EventFactory(run_id="r", clock=lambda: 1)
    before = make.status("running")
    parked = make.rate_limited("held", resets_at=5)
    after = make.status("running")
    assert "resets_at" in parked.model_fields_set
    assert "resets_at" not in before.model_fields_set | after.model_fields_set
    assert (
        before.model_dump(exclude_unset=True).keys() == after.model_dump(exclude_unset=True).keys()
    )


@given(text=st.text(max_size=20), new=st.text(max_size=20), seq=st.integers(1, 10**6))
def test_with_text_and_with_seq_equal_model_copy(text: str, new: str, seq: int) -> None:
    event = EventFactory(run_id="r", session_id="s", clock=lambda: 3).text_delta(text, "reasoning")
    _same(with_text(event, new), event.model_copy(update={"text": new}))
    _same(with_seq(event, seq), event.model_copy(update={"seq": seq}))
    assert event.text == text and event.seq == 1  # the original is untouched
