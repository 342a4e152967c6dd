"""Codex frames → ringleader events: pure functions of (frame, state, event factory).

No I/O and no clock (the factory carries the injected clock). Each function returns the events
for one frame, or ``None`` when the frame is of a type it does not know (the adapter then counts
it with :meth:`~adapters._runs.RunEmitter.note_unknown`).

Mapping, ``codex exec --json`` (:func:`normalize_exec`):

==============================  ==================================================================
``thread.started``              ``status{init, model}`` (the adapter binds the thread id as run id)
``turn.started``                ``status{thinking}``
item ``agent_message``          completed: one ``text-delta`` with the whole message (exec has no
                                token deltas); it becomes the summary (the last one wins)
item ``reasoning``              completed: ``text-delta{channel: reasoning}``
item ``command_execution``      started: ``tool-call{exec_command, {command}}``; completed:
                                ``tool-result`` whose output is the aggregated output followed by
                                ``[exit code: N]``; ``is_error`` when failed/declined or N ≠ 0
                                (a declined call's output starts ``[declined]``)
item ``file_change``            ``tool-call{apply_patch, {changes}}`` / ``tool-result`` listing
                                ``<kind> <path>`` per change
item ``mcp_tool_call``          ``tool-call{mcp__<server>__<tool>, arguments}`` (just ``<tool>``
                                without a server) / ``tool-result`` with the text content or error
item ``web_search``             ``tool-call{web_search, {query}}`` / ``tool-result``
item ``todo_list``              ``status{running, detail: "todo: [x] a; [ ] b"}``
item ``error``                  ``error{codex_warning, fatal: false}`` (e.g. unknown model slug)
``error``                       ``status{running, detail}``: Codex reports retries this way
                                ("Reconnecting... 1/2 (…)"); the last message is kept for the
                                failure report should the process die without ``turn.failed``.
                                A 429 (Codex waits out its ``retry-after``) is
                                ``status{rate_limited}`` (exec gives no reset time)
``turn.completed``              ``cost``: Codex reports the *thread's* cumulative usage, so the
                                run's usage is that minus the thread's total before the run
                                (``base_usage``, read from the rollout on resume); USD from the
                                user's price table (then ``estimated``), else ``None``; the
                                ``done{success}`` follows when the process exits
``turn.failed``                 ``error{fatal}`` + ``done{error}`` (code from the message:
                                ``rate_limited``, ``server_error``, ``stream_connection_error``,
                                else ``runtime_reported``)
==============================  ==================================================================

A tool item that arrives completed without having been started gets its ``tool-call`` first, so
every ``tool-result`` follows its call; a duplicate completion is ignored.

App-server notifications (:func:`normalize_app`) map the same way, with true text deltas
(``item/agentMessage/delta``, ``item/reasoning/summaryTextDelta``), ``thread/tokenUsage/updated``
(cumulative totals) for ``cost``, ``error{willRetry}`` for retries, and ``turn/completed`` with
status ``completed`` | ``interrupted`` | ``failed`` for the terminal. Codex's structured rate
limits: ``account/rateLimits/updated`` with a used-up window (``usedPercent`` ≥ 100) is
``status{rate_limited, resets_at}`` (its ``resetsAt``), an ``error`` whose ``codexErrorInfo`` is a
429 or ``usageLimitExceeded`` is ``status{rate_limited}``, and a turn that fails on one is
``error{rate_limited}`` (the runner then parks the task until the reset; see
``orchestrator.engine.governance.ratelimit``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple, cast

import attrs

from orchestrator.core.drift import note_missing_fields
from orchestrator.core.events import EventFactory, QuotaWindow, RuntimeEvent, Usage, usage_of
from orchestrator.core.refusals import DECLINED_MARK, NEEDS_APPROVAL_MARK

from .._jsonrpc import as_float
from .dialect import (
    AppItem,
    ExecEvent,
    ExecItem,
    as_dict,
    as_int,
    as_str,
)

__all__ = [
    "AppState",
    "ExecState",
    "Price",
    "classify_failure",
    "exec_frame_label",
    "normalize_app",
    "normalize_exec",
    "usd_for",
]


@attrs.frozen
class Price:
    """USD per million tokens for one model. Cached input without its own price is charged at
    the input price (no discount is assumed)."""

    input: float
    output: float
    cached_input: float | None = None


def usd_for(prices: Mapping[str, Price], model: str | None, usage: Usage) -> float | None:
    """USD for ``usage`` on ``model`` from the user's price table; ``None`` if unpriced."""
    if not model:
        return None
    price = prices.get(model)
    if price is None:
        return None
    cached = usage.cached_input_tokens or 0
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    fresh = max(0, usage.input_tokens - cached)
    usd = (fresh * price.input + cached * cached_rate + usage.output_tokens * price.output) / 1e6
    return round(usd, 9)


class _Words(NamedTuple):
    """A case-insensitive search for failure words, written for speed: ``patterns`` are the
    alternatives of one alternation, each opening with a literal (which ``re`` scans for fast,
    where an alternation is tried at every position), and ``words`` the lowercased words one of
    which every match contains (so a message with none of them is answered without a search)."""

    words: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]

    def found(self, message: str, low: str, odd: bool) -> bool:
        """Whether ``message`` matches (``low``: it lowercased; ``odd``: :func:`_odd_folds`)."""
        for word in self.words:
            if word in low:
                break
        else:
            if not odd:
                return False
        for pattern in self.patterns:  # noqa: SIM110 - a loop, not any() over a generator
            if pattern.search(message) is not None:
                return True
        return False


def _words(words: tuple[str, ...], *patterns: str) -> _Words:
    return _Words(words, tuple(re.compile(p) for p in patterns))


def _odd_folds(message: str) -> bool:
    """Whether ``message`` has one of the only non-ASCII characters ``re.IGNORECASE`` matches to
    ASCII letters (İ ı ſ K): then the lowercased words are not a safe filter."""
    return not message.isascii() and (
        "\u0130" in message or "\u0131" in message or "\u017f" in message or "\u212a" in message
    )


# ``\bN\b`` as ``N(?!\w)(?<!\wN)``: the same matches, opening with the literal
_RATE = _words(
    ("429", "limit", "too many requests"),
    r"429(?!\w)(?<!\w429)",
    r"(?i)rate.?limit",
    r"(?i)too many requests",
    r"(?i)usage.?limit",
)
"""``(?i)\b429\b|rate.?limit|too many requests|usage.?limit``"""
_SERVER = _words(
    ("high demand", "at capacity", "overloaded", "50", "internal server error"),
    r"(?i)high demand",
    r"(?i)at capacity",
    r"(?i)overloaded",
    r"50[0-9](?!\w)(?<!\w50[0-9])",
    r"(?i)internal server error",
)
"""``(?i)high demand|at capacity|overloaded|\b50[0-9]\b|internal server error``"""
_STREAM = _words(
    ("stream disconnected", "connection", "time"),
    r"(?i)stream disconnected",
    r"(?i)connection",
    r"(?i)timed? ?out",
)
"""``(?i)stream disconnected|connection|timed? ?out``"""


def _rate_limited(message: str) -> bool:
    return _RATE.found(message, message.lower(), _odd_folds(message))


def classify_failure(message: str) -> str:
    """The ``error.code`` for a Codex failure message (Codex gives no codes in exec mode)."""
    low = message.lower()
    odd = _odd_folds(message)
    if _RATE.found(message, low, odd):
        return "rate_limited"
    if _SERVER.found(message, low, odd):
        return "server_error"
    if _STREAM.found(message, low, odd):
        return "stream_connection_error"
    return "runtime_reported"


def _tool_output(output: str, exit_code: int | None) -> str:
    if exit_code is None:
        return output
    sep = "" if not output or output.endswith("\n") else "\n"
    return f"{output}{sep}[exit code: {exit_code}]"


def _declined(output: str, nobody_asked: bool = False) -> str:
    """A declined call's output, marked as refused (it never ran; see
    :mod:`orchestrator.core.refusals`): declined, or nobody could be asked about it."""
    mark = NEEDS_APPROVAL_MARK if nobody_asked else DECLINED_MARK
    return f"{mark}\n{output}" if output else mark


def _todo_detail(items: object) -> str:
    parts: list[str] = []
    if isinstance(items, list):
        for raw in cast(list[object], items):
            item = as_dict(raw)
            mark = "x" if item.get("completed") is True else " "
            parts.append(f"[{mark}] {as_str(item.get('text'))}")
    return "todo: " + "; ".join(parts)


def _mcp_text(result: object) -> str:
    """The text of an MCP result (its text blocks), else its JSON."""
    data = as_dict(result)
    content = data.get("content")
    if isinstance(content, list):
        texts = [
            as_str(as_dict(block).get("text"))
            for block in cast(list[object], content)
            if as_dict(block).get("type") == "text"
        ]
        if texts:
            return "\n".join(texts)
    if result is None:
        return ""
    return json.dumps(result, ensure_ascii=False, default=str)


def _mcp_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}" if server else (tool or "mcp_tool")


# ---------------------------------------------------------------------------------- exec


def _minus(total: Usage, base: Usage | None) -> Usage:
    if base is None:
        return total

    def sub(a: int | None, b: int | None) -> int | None:
        return None if a is None else max(0, a - (b or 0))

    return usage_of(
        input_tokens=max(0, total.input_tokens - base.input_tokens),
        output_tokens=max(0, total.output_tokens - base.output_tokens),
        cached_input_tokens=sub(total.cached_input_tokens, base.cached_input_tokens),
        cache_write_tokens=sub(total.cache_write_tokens, base.cache_write_tokens),
    )


_NO_PRICES: Final[Mapping[str, Price]] = MappingProxyType({})
_strs: Final = cast(Callable[[], set[str]], set)
"""A typed ``set`` factory (``set[str]`` as a factory costs a generic-alias call per run)."""
_texts: Final = cast(Callable[[], list[str]], list)


@attrs.define(slots=True)
class ExecState:
    """What one exec run remembers between lines (one per run: built with plain ``set``
    factories, a quarter of the cost of ``set[str]``, as a run of a few lines pays it each time)."""

    model: str | None = None
    """The model the run was started with (Codex does not repeat it on its lines)."""
    prices: Mapping[str, Price] = _NO_PRICES
    thread_id: str | None = None
    summary: str = ""
    """The last agent message."""
    turn_completed: bool = False
    turn_failed: bool = False
    last_error: str | None = None
    """The last ``error`` line (retries and the final failure text)."""
    closed_items: set[str] = attrs.field(factory=_strs)
    base_usage: Usage | None = None
    """The thread's total before this run: Codex reports the thread's cumulative usage, which for
    a resumed thread includes every earlier run."""
    drift_noted: set[str] = attrs.field(factory=_strs)
    """Frames already reported for missing expected fields (drift)."""


def _exec_call(item: ExecItem, kind: str, item_id: str, make: EventFactory) -> RuntimeEvent:
    if kind == "command_execution":
        command = item.get("command")
        return make.tool_call(
            item_id, "exec_command", {"command": command if type(command) is str else ""}
        )
    if kind == "file_change":
        changes: Any = item.get("changes")
        return make.tool_call(
            item_id, "apply_patch", {"changes": changes if isinstance(changes, list) else []}
        )
    if kind == "mcp_tool_call":
        return make.tool_call(
            item_id,
            _mcp_name(as_str(item.get("server")), as_str(item.get("tool"))),
            cast(Any, item.get("arguments")),
        )
    return make.tool_call(item_id, "web_search", {"query": as_str(item.get("query"))})


def _exec_result(item: ExecItem, kind: str, item_id: str, make: EventFactory) -> RuntimeEvent:
    status = item.get("status")
    failed = status == "failed" or status == "declined"
    if kind == "command_execution":
        code = item.get("exit_code")
        if type(code) is not int:  # what ``as_int`` accepts: an int, not a bool
            code = None
        output = item.get("aggregated_output")
        text = _tool_output(output if type(output) is str else "", code)
        return make.tool_result(
            item_id,
            _declined(text) if status == "declined" else text,
            is_error=failed or (code is not None and code != 0),
        )
    if kind == "file_change":
        changes = item.get("changes")
        lines = [
            f"{as_str(as_dict(c).get('kind'), 'update')} {as_str(as_dict(c).get('path'))}"
            for c in (cast(list[object], changes) if isinstance(changes, list) else [])
        ]
        listed = "\n".join(lines)
        return make.tool_result(
            item_id, _declined(listed) if status == "declined" else listed, is_error=failed
        )
    if kind == "mcp_tool_call":
        error = item.get("error")
        if error:
            message = as_str(as_dict(error).get("message")) or as_str(error) or "MCP tool failed"
            return make.tool_result(item_id, message, is_error=True)
        return make.tool_result(item_id, _mcp_text(item.get("result")), is_error=failed)
    return make.tool_result(item_id, f"searched: {as_str(item.get('query'))}", is_error=failed)


_TOOL_ITEMS: Final = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})


def _exec_item(
    phase: str, item: ExecItem, make: EventFactory, state: ExecState
) -> list[RuntimeEvent] | None:
    # the hot kinds first, strings compared before anything is built; inline type checks
    # instead of the ``as_str`` calls (a function call is a tenth of a line's budget)
    kind = item.get("type")
    if type(kind) is not str:
        return None
    if kind in _TOOL_ITEMS:
        item_id = item.get("id")
        if type(item_id) is not str:
            item_id = ""
        if item_id in state.closed_items:
            return []
        if phase == "item.completed":
            state.closed_items.add(item_id)
            if item_id in make.open_tool_calls:
                return [_exec_result(item, kind, item_id, make)]
            # completed without a start: the call first
            return [
                _exec_call(item, kind, item_id, make),
                _exec_result(item, kind, item_id, make),
            ]
        if phase == "item.started" and item_id not in make.open_tool_calls:
            return [_exec_call(item, kind, item_id, make)]
        return []
    if kind == "reasoning":
        if phase != "item.completed":
            return []
        text = item.get("text")
        return [make.text_delta(text, "reasoning")] if type(text) is str and text else []
    if kind == "agent_message":
        if phase != "item.completed":
            return []
        text = item.get("text")
        if type(text) is not str or not text:
            return []
        state.summary = text
        return [make.text_delta(text)]
    if kind == "todo_list":
        return [make.status("running", detail=_todo_detail(item.get("items")))]
    if kind == "error":
        if phase != "item.completed":
            return []
        message = as_str(item.get("message")) or "codex warning"
        return [make.error(message, code="codex_warning", fatal=False)]
    return None


def _exec_usage(raw: object) -> Usage:
    usage: dict[str, Any] = raw if isinstance(raw, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    fresh = usage.get("input_tokens")
    out = usage.get("output_tokens")
    cached = usage.get("cached_input_tokens")
    written = usage.get("cache_write_input_tokens")
    # ``type(x) is int``: what ``as_int`` accepts (an int, not a bool), without the calls
    return usage_of(
        fresh if type(fresh) is int else 0,
        out if type(out) is int else 0,
        cached if type(cached) is int else None,
        written if type(written) is int else None,
    )


def _run_cost(total: Usage, make: EventFactory, state: ExecState | AppState) -> RuntimeEvent:
    usage = _minus(total, state.base_usage)
    usd = usd_for(state.prices, state.model, usage) if state.prices else None
    return make.cost(usage, cost_usd=usd, model=state.model, estimated=usd is not None)


def normalize_exec(
    event: ExecEvent, make: EventFactory, state: ExecState
) -> list[RuntimeEvent] | None:
    """Events for one ``codex exec --json`` line; ``None`` if its type is unknown."""
    kind = event.get("type")
    if kind == "item.completed" or kind == "item.started" or kind == "item.updated":
        item = event.get("item")
        if not isinstance(item, dict):
            return None
        return _exec_item(kind, item, make, state)
    if kind == "turn.started":
        return [make.status("thinking", model=state.model)]
    if kind == "thread.started":
        thread_id = event.get("thread_id")
        if type(thread_id) is str and thread_id:
            state.thread_id = thread_id
        out: list[RuntimeEvent] = [make.status("init", model=state.model)]
        out += _gaps(kind, event, make, state)
        return out
    if kind == "turn.completed":
        state.turn_completed = True
        out = _gaps(kind, event, make, state)
        out.append(_run_cost(_exec_usage(event.get("usage")), make, state))
        return out
    if kind == "error":
        message = as_str(event.get("message")) or "codex error"
        state.last_error = message
        if _rate_limited(message):  # Codex waits out the 429 itself, then retries
            return [make.rate_limited(message)]
        return [make.status("running", detail=message)]
    if kind == "turn.failed":
        state.turn_failed = True
        message = as_str(as_dict(event.get("error")).get("message")) or state.last_error or "error"
        out = _gaps(kind, event, make, state)
        out += make.fail(message, code=classify_failure(message), summary=state.summary or message)
        return out
    return None


_EXPECTED: Final[dict[str, tuple[str, ...]]] = {
    # exec lines
    "thread.started": ("thread_id",),
    "turn.completed": ("usage.input_tokens", "usage.output_tokens", "usage.cached_input_tokens"),
    "turn.failed": ("error.message",),
    # app-server notifications (their params)
    "turn/completed": ("turn.id", "turn.status"),
    "thread/tokenUsage/updated": ("tokenUsage.total",),
}
"""What the adapter reads from these frames (drift: a frame without them is reported)."""


def _key_groups(paths: tuple[str, ...]) -> tuple[tuple[tuple[str, ...], frozenset[str]], ...]:
    """``paths`` as (the keys to the object, the names it must have): one ``keys() >=`` per
    object instead of a walk per path."""
    groups: dict[tuple[str, ...], set[str]] = {}
    for path in paths:
        *parents, name = path.split(".")
        groups.setdefault(tuple(parents), set()).add(name)
    return tuple((parents, frozenset(names)) for parents, names in groups.items())


_EXPECTED_KEYS: Final = {label: _key_groups(paths) for label, paths in _EXPECTED.items()}
""":data:`_EXPECTED` grouped per object (checked on every such frame of every run)."""


def _gaps(
    label: str, frame: Mapping[str, Any], make: EventFactory, state: ExecState | AppState
) -> list[RuntimeEvent]:
    """A drift ``status`` if ``frame`` lacks a field the adapter reads from it, else ``[]``
    (the presence check runs here; :func:`note_missing_fields` only words a finding)."""
    for parents, names in _EXPECTED_KEYS[label]:
        value: object = frame
        for key in parents:
            value = as_dict(value).get(key)
        if not as_dict(value).keys() >= names:
            return note_missing_fields(make, state.drift_noted, label, frame, _EXPECTED[label])
    return []


def exec_frame_label(event: ExecEvent) -> str:
    """A name for an unknown frame (for ``note_unknown``): its type, or ``item:<type>``."""
    kind = as_str(event.get("type"), "?")
    if kind.startswith("item."):
        return f"item:{as_str(as_dict(event.get('item')).get('type'), '?')}"
    return kind


# ---------------------------------------------------------------------------------- app-server


@attrs.define(slots=True)
class AppState:
    """What one app-server run (one turn) remembers between notifications."""

    model: str | None = None
    prices: Mapping[str, Price] = _NO_PRICES
    thread_id: str | None = None
    turn_id: str | None = None
    text: list[str] = attrs.field(factory=_texts)
    """Assistant text of the turn, from the deltas."""
    streamed_items: set[str] = attrs.field(factory=_strs)
    """Items whose text arrived as deltas (their completion adds nothing)."""
    closed_items: set[str] = attrs.field(factory=_strs)
    last_error: str | None = None
    base_usage: Usage | None = None
    """The thread's total before this run (a resumed thread reports its whole history)."""
    finished: bool = False
    drift_noted: set[str] = attrs.field(factory=_strs)
    """Frames already reported for missing expected fields (drift)."""
    needs_approval: set[str] = attrs.field(factory=_strs)
    """Items declined because nobody could be asked about them: their result's output starts
    with :data:`~orchestrator.core.refusals.NEEDS_APPROVAL_MARK` (else, declined, with
    :data:`~orchestrator.core.refusals.DECLINED_MARK`)."""


_APP_TOOL_ITEMS: Final = frozenset(
    {"commandExecution", "fileChange", "mcpToolCall", "webSearch", "dynamicToolCall"}
)


def _app_call(item: AppItem, make: EventFactory) -> RuntimeEvent:
    item_id = as_str(item.get("id"))
    kind = item.get("type")
    if kind == "commandExecution":
        return make.tool_call(item_id, "exec_command", {"command": as_str(item.get("command"))})
    if kind == "fileChange":
        changes: Any = item.get("changes")
        return make.tool_call(
            item_id, "apply_patch", {"changes": changes if isinstance(changes, list) else []}
        )
    if kind == "mcpToolCall":
        args = item.get("arguments")
        return make.tool_call(
            item_id,
            _mcp_name(as_str(item.get("server")), as_str(item.get("tool"))),
            cast(Any, args),
        )
    if kind == "webSearch":
        return make.tool_call(item_id, "web_search", {"query": as_str(item.get("query"))})
    raw = cast(dict[str, Any], item)
    return make.tool_call(item_id, as_str(raw.get("tool"), "tool"), cast(Any, raw.get("arguments")))


def _app_result(item: AppItem, make: EventFactory, state: AppState) -> RuntimeEvent:
    item_id = as_str(item.get("id"))
    kind = item.get("type")
    status = as_str(item.get("status"))
    failed = status in ("failed", "declined")
    if kind == "commandExecution":
        code = as_int(item.get("exitCode"))
        output = _tool_output(as_str(item.get("aggregatedOutput")), code)
        if status == "declined":
            output = _declined(output, item_id in state.needs_approval)
        return make.tool_result(
            item_id, output, is_error=failed or (code is not None and code != 0)
        )
    if kind == "fileChange":
        changes = item.get("changes")
        lines: list[str] = []
        for raw in cast(list[object], changes) if isinstance(changes, list) else []:
            change = as_dict(raw)
            change_kind = change.get("kind")
            kind_name = as_str(as_dict(change_kind).get("type")) or as_str(change_kind) or "update"
            lines.append(f"{kind_name} {as_str(change.get('path'))}")
        listed = "\n".join(lines)
        return make.tool_result(
            item_id,
            _declined(listed, item_id in state.needs_approval) if status == "declined" else listed,
            is_error=failed,
        )
    if kind == "mcpToolCall":
        error = item.get("error")
        if error:
            message = as_str(as_dict(error).get("message")) or as_str(error) or "MCP tool failed"
            return make.tool_result(item_id, message, is_error=True)
        return make.tool_result(item_id, _mcp_text(item.get("result")), is_error=failed)
    if kind == "webSearch":
        return make.tool_result(item_id, f"searched: {as_str(item.get('query'))}", is_error=failed)
    raw = cast(dict[str, Any], item)
    return make.tool_result(
        item_id, _mcp_text(raw.get("contentItems") or raw.get("result")), is_error=failed
    )


def _app_item(
    phase: str, params: dict[str, Any], make: EventFactory, state: AppState
) -> list[RuntimeEvent] | None:
    item = cast(AppItem, as_dict(params.get("item")))
    kind = item.get("type")
    item_id = as_str(item.get("id"))
    if kind in _APP_TOOL_ITEMS:
        if item_id in state.closed_items:
            return []
        if phase == "started":
            return [] if item_id in make.open_tool_calls else [_app_call(item, make)]
        state.closed_items.add(item_id)
        out: list[RuntimeEvent] = []
        if item_id not in make.open_tool_calls:
            out.append(_app_call(item, make))
        out.append(_app_result(item, make, state))
        return out
    if kind == "agentMessage":
        if phase != "completed" or item_id in state.streamed_items:
            return []
        text = as_str(item.get("text"))
        if not text:
            return []
        state.text.append(text)
        return [make.text_delta(text)]
    if kind == "reasoning":
        if phase != "completed" or item_id in state.streamed_items:
            return []
        summary = item.get("summary")
        parts = (
            [as_str(s) for s in cast(list[object], summary)] if isinstance(summary, list) else []
        )
        text = "\n".join(p for p in parts if p)
        return [make.text_delta(text, "reasoning")] if text else []
    if kind in ("userMessage", "plan", "contextCompaction", "imageView", "enteredReviewMode"):
        return []
    if kind == "error":
        return [
            make.error(
                as_str(item.get("text")) or "codex warning", code="codex_warning", fatal=False
            )
        ]
    return None


def _app_usage(total: dict[str, Any]) -> Usage:
    return usage_of(
        input_tokens=as_int(total.get("inputTokens")) or 0,
        output_tokens=as_int(total.get("outputTokens")) or 0,
        cached_input_tokens=as_int(total.get("cachedInputTokens")),
        cache_write_tokens=as_int(total.get("cacheWriteInputTokens")),
    )


def _app_delta(params: dict[str, Any], state: AppState) -> str | None:
    """The text of a delta notification (``None`` when empty); its item is marked streamed."""
    item_id = params.get("itemId")
    if type(item_id) is str and item_id:
        state.streamed_items.add(item_id)
    delta = params.get("delta")
    return delta if type(delta) is str and delta else None


def _app_turn_completed(
    params: dict[str, Any], make: EventFactory, state: AppState
) -> list[RuntimeEvent]:
    gaps = _gaps("turn/completed", params, make, state)
    return [*gaps, *_app_turn_end(params, make, state)]


def _app_turn_end(
    params: dict[str, Any], make: EventFactory, state: AppState
) -> list[RuntimeEvent]:
    turn = as_dict(params.get("turn"))
    status = as_str(turn.get("status"))
    summary = "".join(state.text)
    state.finished = True
    if status == "completed":
        return make.finish("success", summary)
    if status == "interrupted":
        return make.finish("aborted", summary)
    error = as_dict(turn.get("error"))
    message = as_str(error.get("message")) or state.last_error or f"turn {status or 'failed'}"
    info = error.get("codexErrorInfo")
    code = classify_failure(f"{message} {json.dumps(info) if info else ''}")
    return make.fail(message, code=code, summary=summary or message)


def _app_error(params: dict[str, Any], make: EventFactory, state: AppState) -> list[RuntimeEvent]:
    error = as_dict(params.get("error"))
    message = as_str(error.get("message")) or "codex error"
    state.last_error = message
    # Retried (``willRetry``) or not (the turn fails next, reported there once), the error is
    # a status; a rate limit's (``httpStatusCode: 429``, ``usageLimitExceeded``) says so.
    info = error.get("codexErrorInfo")
    if info is not None and _rate_limited(f"{json.dumps(info)} {message}"):
        return [make.rate_limited(message)]
    return [make.status("running", detail=message)]


def _app_rate_limits(
    params: dict[str, Any], make: EventFactory, state: AppState
) -> list[RuntimeEvent]:
    """``account/rateLimits/updated``: a window used up (``usedPercent`` ≥ 100, or a
    ``rateLimitReachedType``) holds the run until its ``resetsAt`` (epoch s); otherwise it is
    the account's usage: a ``status{running}`` carrying the windows (``quota``) for the quota
    meters, nothing when every window is unknown."""
    limits = as_dict(params.get("rateLimits"))
    reached_type = limits.get("rateLimitReachedType")
    windows = [(name, as_dict(limits.get(name))) for name in ("primary", "secondary")]
    windows = [(name, w) for name, w in windows if w]
    full = [(name, w) for name, w in windows if (as_float(w.get("usedPercent")) or 0) >= 100]
    quota = [_quota_window(name, w, full=(name, w) in full) for name, w in windows]
    if not full and not reached_type:
        if not quota:
            return []
        shown = ", ".join(
            f"{q.name} {'?' if q.used_percent is None else f'{q.used_percent:g}'}% used"
            for q in quota
        )
        return [make.quota_report(quota, f"rate limits: {shown}")]
    parts = [
        f"{name} {as_float(w.get('usedPercent')) or 0:g}%"
        + (
            f" of a {as_int(w.get('windowDurationMins'))}-min window"
            if w.get("windowDurationMins")
            else ""
        )
        for name, w in full or windows
    ]
    resets = [as_int(w.get("resetsAt")) for _, w in full or windows]
    reset = max((r for r in resets if r is not None), default=None)
    detail = "rate limit reached" + (f" ({reached_type})" if isinstance(reached_type, str) else "")
    if parts:
        detail += ": " + ", ".join(parts)
    if reset is not None:
        detail += f"; resets at {reset}"
    return [make.rate_limited(detail, reset * 1000 if reset is not None else None, quota)]


def _quota_window(name: str, window: dict[str, Any], *, full: bool) -> QuotaWindow:
    reset = as_int(window.get("resetsAt"))
    return QuotaWindow(
        name=name,
        used_percent=as_float(window.get("usedPercent")),
        resets_at=reset * 1000 if reset is not None else None,
        window_minutes=as_int(window.get("windowDurationMins")),
        state="rejected" if full else "allowed",
    )


_AppHandler = Callable[[dict[str, Any], EventFactory, AppState], list[RuntimeEvent] | None]

_APP_IGNORED: Final = frozenset(
    {
        "thread/started",
        "thread/status/changed",
        "item/reasoning/summaryPartAdded",
        "item/commandExecution/outputDelta",
        "item/fileChange/outputDelta",
        "item/mcpToolCall/progress",
        "item/plan/delta",
        "turn/diff/updated",
        "turn/plan/updated",
        "serverRequest/resolved",
        "configWarning",
        "remoteControl/status/changed",
        "deprecationNotice",
        "thread/goal/cleared",
        "thread/name/updated",
        "mcpServer/startupStatus/updated",
        "skills/changed",
        "warning",
    }
)


def _app_cost(params: dict[str, Any], make: EventFactory, state: AppState) -> list[RuntimeEvent]:
    turn = as_str(params.get("turnId"))
    if turn and turn != state.turn_id:
        return []  # a resumed thread's replayed usage of an earlier turn
    total = _app_usage(as_dict(as_dict(params.get("tokenUsage")).get("total")))
    gaps = _gaps("thread/tokenUsage/updated", params, make, state)
    return [*gaps, _run_cost(total, make, state)]


def _app_message_delta(p: dict[str, Any], m: EventFactory, s: AppState) -> list[RuntimeEvent]:
    delta = _app_delta(p, s)
    if delta is None:
        return []
    s.text.append(delta)
    return [m.text_delta(delta)]


def _app_reasoning_delta(p: dict[str, Any], m: EventFactory, s: AppState) -> list[RuntimeEvent]:
    delta = _app_delta(p, s)
    return [] if delta is None else [m.text_delta(delta, "reasoning")]


def _app_started(p: dict[str, Any], m: EventFactory, s: AppState) -> list[RuntimeEvent] | None:
    return _app_item("started", p, m, s)


def _app_completed(p: dict[str, Any], m: EventFactory, s: AppState) -> list[RuntimeEvent] | None:
    return _app_item("completed", p, m, s)


def _app_turn_started(p: dict[str, Any], m: EventFactory, s: AppState) -> list[RuntimeEvent]:
    s.turn_id = as_str(as_dict(p.get("turn")).get("id")) or s.turn_id
    return [m.status("thinking", model=s.model)]


_APP_HANDLERS: Final[dict[str, _AppHandler]] = {
    "item/agentMessage/delta": _app_message_delta,
    "item/reasoning/summaryTextDelta": _app_reasoning_delta,
    "item/reasoning/textDelta": _app_reasoning_delta,
    "item/started": _app_started,
    "item/completed": _app_completed,
    "turn/started": _app_turn_started,
    "turn/completed": _app_turn_completed,
    "error": _app_error,
    "thread/tokenUsage/updated": _app_cost,
    "account/rateLimits/updated": _app_rate_limits,
}


def normalize_app(
    method: str, params: object, make: EventFactory, state: AppState
) -> list[RuntimeEvent] | None:
    """Events for one app-server notification of the run's thread; ``None`` if unknown.

    ``warning`` and ``configWarning`` notifications are known and dropped (bubblewrap, model
    metadata); the adapter logs them.
    """
    handler = _APP_HANDLERS.get(method)
    if handler is not None:
        args: dict[str, Any] = params if isinstance(params, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        return handler(args, make, state)
    if method in _APP_IGNORED:
        return []
    return None
