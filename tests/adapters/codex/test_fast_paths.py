"""The Codex normalizers' shortcuts give exactly what the slow path gives, for any line.

The shortcuts: the exec decoder recognizes ``{"type":"turn.started"}`` from its bytes and decodes
everything else with ``orjson`` (the slow path: stdlib :func:`json.loads`); failure messages are
searched with the case-insensitive patterns only when a word every match needs is present; and
the drift check walks the expected fields itself, calling the generic check only on a miss.
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.codex import (
    AppState,
    ExecState,
    classify_failure,
    decode_exec_line,
    decode_rpc_line,
    normalize_app,
    normalize_exec,
)
from orchestrator.core.drift import missing_fields_detail
from orchestrator.core.errors import ProtocolError
from orchestrator.core.events import EventFactory, RuntimeEvent, Status

# ------------------------------------------------------------------------------- the slow path

_RATE = re.compile(r"(?i)\b429\b|rate.?limit|too many requests|usage.?limit")
_SERVER = re.compile(r"(?i)high demand|at capacity|overloaded|\b50[0-9]\b|internal server error")
_STREAM = re.compile(r"(?i)stream disconnected|connection|timed? ?out")


def slow_classify(message: str) -> str:
    """The failure codes by the patterns alone (what ``classify_failure`` must agree with)."""
    for pattern, code in (
        (_RATE, "rate_limited"),
        (_SERVER, "server_error"),
        (_STREAM, "stream_connection_error"),
    ):
        if pattern.search(message):
            return code
    return "runtime_reported"


def slow_decode(line: bytes) -> dict[str, Any] | None:
    """The full decode: stdlib ``json.loads``; ``None`` for a line that is not a JSON object."""
    try:
        value: Any = json.loads(line)
    except ValueError:
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def obj(
    required: dict[str, st.SearchStrategy[Any]], optional: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(required, optional=optional)


def dumps(events: list[RuntimeEvent] | None) -> list[dict[str, Any]] | None:
    return None if events is None else [e.model_dump() for e in events]


# ------------------------------------------------------------------------------- strategies

# text that reaches every branch of the word prefilter: the words, their case variants, the four
# non-ASCII letters case-insensitive matching folds to ASCII ones (İ ı ſ K), digits and spaces
_pieces = st.sampled_from(
    ["429", "4290", "x429", "limit", "LIMIT", "rate", "rate-", "usage", "uſage", "too many",
     "requests", "REQUESTS", "high demand", "at capacity", "overloaded", "50", "503", "internal",
     "server error", "stream disconnected", "ſtream", "connection", "timed out", "timeout",
     "time", "out", "K", "İ", "ı", "’", " ", "\n", "é", "_", "rate limit", "RateLimit",
     "usage_limit", "Too Many Requests", "500", "5000", "a503", "TIMED OUT", "time out"]
)  # fmt: skip
messages = st.one_of(
    st.text(max_size=30), st.lists(st.one_of(_pieces, st.text(max_size=3)), max_size=8).map("".join)
)

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=6), messages)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    )


_json = st.recursive(_scalars, _containers, max_leaves=6)
_item = obj(
    {},
    optional={
        "id": st.sampled_from(["item_0", "item_1", "", 7]),
        "type": st.one_of(
            st.sampled_from(
                ["agent_message", "reasoning", "command_execution", "file_change",
                 "mcp_tool_call", "web_search", "todo_list", "error", "mystery"]
            ),
            _json,
        ),
        "text": _scalars, "command": _scalars, "aggregated_output": _scalars,
        "exit_code": st.one_of(st.none(), st.integers(-1, 3), st.booleans()),
        "status": st.sampled_from(["in_progress", "completed", "failed", "declined"]),
        "changes": _json, "items": _json, "server": _scalars, "tool": _scalars,
        "arguments": _json, "result": _json, "error": _json, "query": _scalars, "message": _scalars,
    },
)  # fmt: skip
_usage = st.dictionaries(
    st.sampled_from(
        ["input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens"]
    ),
    st.one_of(st.integers(0, 10_000), st.none(), st.text(max_size=2)),
)
exec_objects = obj(
    {
        "type": st.one_of(
            st.sampled_from(
                ["thread.started", "turn.started", "item.started", "item.updated",
                 "item.completed", "error", "turn.completed", "turn.failed", "brand.new"]
            ),
            _json,
        )
    },
    optional={
        "thread_id": st.one_of(st.sampled_from(["01a2-thread", ""]), _json),
        "item": st.one_of(_item, _json),
        "message": st.one_of(messages, _json),
        "usage": st.one_of(_usage, _json),
        "error": st.one_of(obj({}, {"message": messages}), _json),
    },
)  # fmt: skip


def encodings(value: Any) -> st.SearchStrategy[bytes]:
    """A line as Codex writes it (compact), spaced, non-ASCII escaped, or cut short."""
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    return st.sampled_from(
        [
            compact,
            json.dumps(value).encode(),
            json.dumps(value, separators=(",", ":")).encode(),
            compact[:-1],
            compact + b" ",
        ]
    )


exec_lines = st.one_of(
    exec_objects.flatmap(encodings),
    st.sampled_from(
        [b'{"type":"turn.started"}', b'{"type":"turn.started"} ', b'{"type":"turn.started"',
         b'{"type":"turn.started","x":NaN}', b"[1]", b"null", b"", b'{"type":"turn.started"}}']
    ),
    _json.map(lambda v: json.dumps(v).encode()),
)  # fmt: skip


# ------------------------------------------------------------------------------- exec


@settings(max_examples=400, deadline=None)
@given(st.lists(exec_lines, min_size=1, max_size=12))
def test_exec_fast_path_gives_the_events_of_the_full_decode(lines: list[bytes]) -> None:
    fast_make = EventFactory(run_id="r", session_id="s", clock=lambda: 1)
    slow_make = EventFactory(run_id="r", session_id="s", clock=lambda: 1)
    fast_state, slow_state = ExecState(model="m"), ExecState(model="m")
    for line in lines:
        expected = slow_decode(line)
        try:
            frame = decode_exec_line(line)
        except ProtocolError:
            assert expected is None, line
            continue
        assert frame == expected, line
        fast = normalize_exec(frame, fast_make, fast_state)
        slow = normalize_exec(expected, slow_make, slow_state)
        assert dumps(fast) == dumps(slow), line
    assert fast_state == slow_state


@settings(max_examples=300, deadline=None)
@given(messages)
def test_failure_words_agree_with_the_patterns(message: str) -> None:
    assert classify_failure(message) == slow_classify(message)
    (event,) = normalize_exec(
        {"type": "error", "message": message}, EventFactory(), ExecState()
    ) or [None]
    assert isinstance(event, Status)
    rate_limited = bool(message) and _RATE.search(message) is not None
    assert event.phase == ("rate_limited" if rate_limited else "running")


_EXPECTED = {
    "thread.started": ("thread_id",),
    "turn.completed": ("usage.input_tokens", "usage.output_tokens", "usage.cached_input_tokens"),
    "turn.failed": ("error.message",),
}


@settings(max_examples=300, deadline=None)
@given(exec_objects)
def test_drift_check_agrees_with_the_generic_check(frame: Any) -> None:
    events = normalize_exec(frame, EventFactory(), ExecState()) or []
    drift = [
        e.detail for e in events if isinstance(e, Status) and (e.detail or "").startswith("frame")
    ]
    kind = frame["type"]
    known = isinstance(kind, str) and kind in _EXPECTED
    want = missing_fields_detail(kind, frame, _EXPECTED[kind]) if known else None
    assert drift == ([want] if want else [])


# ------------------------------------------------------------------------------- app-server

_app_params = obj(
    {},
    optional={
        "threadId": st.sampled_from(["th", ""]), "turnId": st.sampled_from(["t1", "t2", 3]),
        "itemId": st.one_of(st.sampled_from(["msg_1", "", "msg_2"]), _json),
        "delta": st.one_of(st.text(max_size=6), _json),
        "item": st.one_of(
            obj(
                {"type": st.sampled_from(
                    ["agentMessage", "reasoning", "commandExecution", "fileChange", "mcpToolCall",
                     "webSearch", "dynamicToolCall", "userMessage", "error", "zzz"]
                )},
                optional={"id": st.sampled_from(["c1", "msg_1"]), "text": _scalars,
                          "summary": _json, "status": st.sampled_from(["completed", "failed"]),
                          "exitCode": st.one_of(st.none(), st.integers(0, 2)),
                          "aggregatedOutput": _scalars, "changes": _json, "result": _json},
            ),
            _json,
        ),
        "turn": st.one_of(
            obj(
                {}, optional={"id": st.sampled_from(["t1", "t2"]),
                              "status": st.sampled_from(["completed", "interrupted", "failed"]),
                              "error": _json}
            ),
            _json,
        ),
        "tokenUsage": _json, "error": _json, "rateLimits": _json,
    },
)  # fmt: skip
app_lines = st.one_of(
    obj(
        {
            "method": st.sampled_from(
                ["item/agentMessage/delta", "item/reasoning/summaryTextDelta",
                 "item/reasoning/textDelta", "item/started", "item/completed", "turn/started",
                 "turn/completed", "error", "thread/tokenUsage/updated",
                 "account/rateLimits/updated", "thread/status/changed", "brand/new"]
            ),
            "params": st.one_of(_app_params, _json),
        },
        optional={"emittedAtMs": st.integers(0, 2**53)},
    ).flatmap(encodings),
    _json.map(lambda v: json.dumps(v).encode()),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(app_lines, min_size=1, max_size=12))
def test_app_fast_path_gives_the_events_of_the_full_decode(lines: list[bytes]) -> None:
    fast_make = EventFactory(run_id="r", session_id="s", clock=lambda: 1)
    slow_make = EventFactory(run_id="r", session_id="s", clock=lambda: 1)
    fast_state, slow_state = AppState(model="m"), AppState(model="m")
    fast_state.turn_id = slow_state.turn_id = "t1"
    for line in lines:
        expected = slow_decode(line)
        try:
            message = decode_rpc_line(line)
        except ProtocolError:
            assert expected is None, line
            continue
        assert message == expected, line
        method = message.get("method")
        if not isinstance(method, str):
            continue
        fast = normalize_app(method, message.get("params"), fast_make, fast_state)
        slow = normalize_app(method, expected.get("params"), slow_make, slow_state)
        assert dumps(fast) == dumps(slow), line
    assert fast_state == slow_state
