"""The normalized event stream: seven kinds every runtime adapter emits.

Each event is a frozen pydantic model. Python attributes are snake_case; JSON uses the
reference's camelCase names (``runId``, ``toolCallId``, ``kind: "text-delta"``) so existing boards
read it unchanged. Unknown input fields are ignored so a newer producer never breaks a reader.

Contracts (see DESIGN §3): ``seq`` starts at 1 and is gapless per stream; ``ts`` is epoch
milliseconds; exactly one ``done`` ends a run; ``cost`` carries cumulative usage and
``cost_usd=None`` means unknown (never 0 for unknown).

:class:`EventFactory` stamps the envelope (run id, session id, ``ts``, gapless ``seq``) so an
adapter's normalizer only supplies the payload.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal, NamedTuple, NoReturn, TypeAlias, TypeVar, cast

import attrs
from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticSerializationError

__all__ = [
    "ApprovalCall",
    "Cost",
    "Done",
    "DoneReason",
    "ErrorEvent",
    "EventBase",
    "EventFactory",
    "RuntimeEvent",
    "RuntimeEventKind",
    "Status",
    "StatusPhase",
    "TextChannel",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "Usage",
    "assert_exhaustive",
    "event_from_json",
    "event_to_json",
    "now_ms",
    "usage_of",
    "with_seq",
]

RuntimeEventKind: TypeAlias = Literal[
    "text-delta", "tool-call", "tool-result", "status", "cost", "done", "error"
]
TextChannel: TypeAlias = Literal["assistant", "reasoning"]
StatusPhase: TypeAlias = Literal[
    "init", "thinking", "running", "turn-complete", "rate_limited", "waiting_approval"
]
DoneReason: TypeAlias = Literal["success", "max_turns", "aborted", "error"]

WIRE_CONFIG = ConfigDict(
    frozen=True,
    alias_generator=to_camel,
    populate_by_name=True,
    extra="ignore",
    serialize_by_alias=True,
)
"""The config of every wire model: frozen, camelCase JSON, unknown input fields ignored."""


_new = object.__new__
_setattr = object.__setattr__
# BaseModel's slots, set through their descriptors (15% cheaper than object.__setattr__ by name)
_set_fields_set: Callable[[object, set[str]], None] = vars(BaseModel)[
    "__pydantic_fields_set__"
].__set__
_set_extra: Callable[[object, object], None] = vars(BaseModel)["__pydantic_extra__"].__set__
_set_private: Callable[[object, object], None] = vars(BaseModel)["__pydantic_private__"].__set__


class Usage(BaseModel):
    """Token usage. On ``cost`` events it is cumulative for the run."""

    model_config = WIRE_CONFIG

    input_tokens: int = 0
    """Prompt tokens, including cached ones."""
    output_tokens: int = 0
    """Generated tokens."""
    cached_input_tokens: int | None = None
    """Prompt tokens served from the provider's cache (None when the runtime does not say)."""
    cache_write_tokens: int | None = None
    """Prompt tokens written to the provider's cache (Anthropic cache creation), if reported."""

    def __add__(self, other: Usage) -> Usage:
        return usage_of(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            _add_opt(self.cached_input_tokens, other.cached_input_tokens),
            _add_opt(self.cache_write_tokens, other.cache_write_tokens),
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


_USAGE_SET = frozenset(
    ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens")
)


def usage_of(
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int | None = None,
    cache_write_tokens: int | None = None,
) -> Usage:
    """``Usage(...)`` with every field given: built without validation when the counts are
    exact ``int`` (or ``None`` for the optional two), the same object validation gives (a
    normalizer builds one per usage report)."""
    if (
        type(input_tokens) is int
        and type(output_tokens) is int
        and (cached_input_tokens is None or type(cached_input_tokens) is int)
        and (cache_write_tokens is None or type(cache_write_tokens) is int)
    ):
        usage = _new(Usage)
        _setattr(
            usage,
            "__dict__",
            {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cached_input_tokens": cached_input_tokens,
                "cache_write_tokens": cache_write_tokens,
            },
        )
        _set_fields_set(usage, set(_USAGE_SET))
        _set_extra(usage, None)
        _set_private(usage, None)
        return usage
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=cached_input_tokens,
        cache_write_tokens=cache_write_tokens,
    )


def _add_opt(a: int | None, b: int | None) -> int | None:
    if a is None and b is None:
        return None
    return (a or 0) + (b or 0)


def _is_none(value: object) -> bool:
    return value is None


class EventBase(BaseModel):
    """The envelope on every event."""

    model_config = WIRE_CONFIG

    run_id: str
    """The run id ('' until the runtime tells us one)."""
    session_id: str | None = None
    """The session this run belongs to (the host's session key)."""
    ts: int
    """Epoch milliseconds when the event was normalized."""
    seq: int
    """Gapless per-stream sequence number, starting at 1."""
    parent_run_id: str | None = Field(default=None, exclude_if=_is_none)
    """On a sub-agent's events, carried in the stream of the run that started it: that run's
    id (absent from the JSON otherwise)."""
    agent_id: str | None = Field(default=None, exclude_if=_is_none)
    """On a sub-agent's events: which sub-agent (its name; ``outer/inner`` when nested)."""


class TextDelta(EventBase):
    """Incremental text; runtimes without native deltas emit one delta with the whole message."""

    kind: Literal["text-delta"] = "text-delta"
    text: str
    channel: TextChannel = "assistant"


class ToolCall(EventBase):
    """The model asked for a tool; a ``tool-result`` with the same id always follows."""

    kind: Literal["tool-call"] = "tool-call"
    tool_call_id: str
    name: str
    input: JsonValue = None
    partial: bool = False


class ToolResult(EventBase):
    """The result of a tool call (``is_error`` for failures, denials and synthetic closures)."""

    kind: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    name: str
    output: str
    is_error: bool = False


class ApprovalCall(BaseModel):
    """The tool call a ``status{waiting_approval}`` waits on (see :mod:`orchestrator.approvals`)."""

    model_config = WIRE_CONFIG

    id: str
    """The approval's id (``ringleader approve ID``)."""
    tool_call_id: str
    name: str
    input: JsonValue = None
    reason: str | None = None


class Status(EventBase):
    """Lifecycle: init (with the model), thinking, running, turn-complete; ``detail`` for retries
    etc.; ``rate_limited`` with ``resets_at`` (epoch ms) when a task is parked until a reset;
    ``waiting_approval`` with ``approval`` (the call) while a tool call waits for a person."""

    kind: Literal["status"] = "status"
    phase: StatusPhase
    model: str | None = None
    detail: str | None = None
    resets_at: int | None = None
    approval: ApprovalCall | None = None


class Cost(EventBase):
    """Cumulative usage and USD for the run so far; ``cost_usd=None`` means unknown."""

    kind: Literal["cost"] = "cost"
    cost_usd: float | None = None
    usage: Usage
    model: str | None = None
    estimated: bool = False


class Done(EventBase):
    """The single terminal event of a run."""

    kind: Literal["done"] = "done"
    reason: DoneReason
    summary: str = ""
    usage: Usage | None = None
    cost_usd: float | None = None


class ErrorEvent(EventBase):
    """A failure; ``fatal`` errors are followed by ``done{reason: error}``."""

    kind: Literal["error"] = "error"
    code: str | None = None
    message: str
    fatal: bool = True


RuntimeEvent: TypeAlias = Annotated[
    TextDelta | ToolCall | ToolResult | Status | Cost | Done | ErrorEvent,
    Field(discriminator="kind"),
]

_EVENT_ADAPTER: TypeAdapter[RuntimeEvent] = TypeAdapter(RuntimeEvent)

_E = TypeVar("_E", bound=EventBase)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def event_to_json(event: RuntimeEvent) -> str:
    """One event as compact JSON with the wire (camelCase) names.

    A string may hold lone surrogates (a JavaScript runtime that cut a string inside a surrogate
    pair escapes the half as ``\\udXXX`` and ``json.loads`` gives it back as is). UTF-8 cannot
    encode them, so they go on the wire as U+FFFD, as JavaScript's UTF-8 encoder writes them.

    It calls the model's serializer directly (what ``model_dump_json`` does, without its
    keyword handling: the config already serializes by alias); pydantic's Rust serializer beats
    any Python-level encoder measured here (a direct ``json`` string encoder per field was 1.5×
    slower).
    """
    try:
        return event.__pydantic_serializer__.to_json(event).decode()
    except PydanticSerializationError:
        data = event.model_dump(by_alias=True)
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return _LONE_SURROGATE.sub("\ufffd", text)


def event_from_json(data: str | bytes) -> RuntimeEvent:
    """Parse and validate one wire event."""
    return _EVENT_ADAPTER.validate_json(data)


def assert_exhaustive(value: NoReturn) -> NoReturn:
    """Static exhaustiveness guard for ``match event.kind``; raises if reached at run time."""
    raise AssertionError(f"Unhandled RuntimeEvent variant: {value!r}")


def now_ms() -> int:
    """Wall-clock epoch milliseconds."""
    return time.time_ns() // 1_000_000


class _NotPlain(Exception):
    """A value the fast construction leaves to validation."""


def _json_copy(value: object, depth: int = 0) -> Any:
    """A copy of a plain JSON value (exact ``dict`` with ``str`` keys, ``list``, ``str``,
    ``int``, ``float``, ``bool``, ``None``), as JSON-value validation returns it; raises
    :class:`_NotPlain` for anything else (subclasses, tuples, very deep nesting …)."""
    t = type(value)
    if t is str or t is int or t is bool or t is float or value is None:
        return value
    if depth > 32:
        raise _NotPlain
    if t is dict:
        out: dict[str, Any] = {}
        for k, v in cast(dict[Any, Any], value).items():
            if type(k) is not str:
                raise _NotPlain
            out[k] = _json_copy(v, depth + 1)
        return out
    if t is list:
        return [_json_copy(v, depth + 1) for v in cast(list[Any], value)]
    raise _NotPlain


# -- one fast construction for every kind ----------------------------------------------------------
#
# Validation (~5 µs an event) is the floor of the slow path. The factory builds the same object
# without it when every value already has exactly its field's type. One table says, per kind,
# what "exactly" means: a predicate over the payload (identity type checks and the literal sets,
# inlined: a check function per field cost 25% more per delta) and the one field, if any, that
# holds plain JSON (copied, as validation copies it). Anything else goes through validation.

_CHANNELS = frozenset(("assistant", "reasoning"))
_PHASES = frozenset(
    ("init", "thinking", "running", "turn-complete", "rate_limited", "waiting_approval")
)
_REASONS = frozenset(("success", "max_turns", "aborted", "error"))
_ENVELOPE = ("run_id", "session_id", "ts", "seq", "parent_run_id", "agent_id")
_TAGS = frozenset(("parent_run_id", "agent_id"))
"""Envelope fields the factory leaves at their default (unset, as validation records them)."""


def _opt_str(value: object) -> bool:
    return value is None or type(value) is str


def _opt_float(value: object) -> bool:
    return value is None or type(value) is float


class _Fast(NamedTuple):
    """How one kind is built without validation."""

    kind: str
    fields_set: frozenset[str]
    """What validation records as set: every field the factory passes (all but ``kind``)."""
    accepts: Callable[[dict[str, Any]], bool]
    """Whether every payload value has exactly its field's type."""
    json_field: str | None = None
    """A ``JsonValue`` field: accepted when :func:`_json_copy` can copy it."""


def _fast(
    cls: type[EventBase],
    payload: tuple[str, ...],
    accepts: Callable[[dict[str, Any]], bool],
    json_field: str | None = None,
) -> _Fast:
    # the table must name every payload field of the model, in its order (checked at import)
    if list(cls.model_fields) != [*_ENVELOPE, "kind", *payload]:
        raise AssertionError(f"fast construction table of {cls.__name__} is out of date")
    kind = cls.model_fields["kind"].default
    return _Fast(kind, frozenset((*_ENVELOPE, *payload)) - _TAGS, accepts, json_field)


_FAST: dict[type[EventBase], _Fast] = {
    TextDelta: _fast(
        TextDelta,
        ("text", "channel"),
        lambda v: type(v["text"]) is str and type(c := v["channel"]) is str and c in _CHANNELS,
    ),
    ToolCall: _fast(
        ToolCall,
        ("tool_call_id", "name", "input", "partial"),
        lambda v: (
            type(v["tool_call_id"]) is str and type(v["name"]) is str and type(v["partial"]) is bool
        ),
        json_field="input",
    ),
    ToolResult: _fast(
        ToolResult,
        ("tool_call_id", "name", "output", "is_error"),
        lambda v: (
            type(v["tool_call_id"]) is str
            and type(v["name"]) is str
            and type(v["output"]) is str
            and type(v["is_error"]) is bool
        ),
    ),
    Status: _fast(
        Status,
        ("phase", "model", "detail", "resets_at", "approval"),
        lambda v: (
            type(p := v["phase"]) is str
            and p in _PHASES
            and _opt_str(v["model"])
            and _opt_str(v["detail"])
            and (v["resets_at"] is None or type(v["resets_at"]) is int)
            and v["approval"] is None
        ),
    ),
    Cost: _fast(
        Cost,
        ("cost_usd", "usage", "model", "estimated"),
        # a model instance is kept as it is by validation (revalidate_instances='never')
        lambda v: (
            _opt_float(v["cost_usd"])
            and type(v["usage"]) is Usage
            and _opt_str(v["model"])
            and type(v["estimated"]) is bool
        ),
    ),
    Done: _fast(
        Done,
        ("reason", "summary", "usage", "cost_usd"),
        lambda v: (
            type(r := v["reason"]) is str
            and r in _REASONS
            and type(v["summary"]) is str
            and (v["usage"] is None or type(v["usage"]) is Usage)
            and _opt_float(v["cost_usd"])
        ),
    ),
    ErrorEvent: _fast(
        ErrorEvent,
        ("code", "message", "fatal"),
        lambda v: _opt_str(v["code"]) and type(v["message"]) is str and type(v["fatal"]) is bool,
    ),
}


# ``status()`` never sets ``resets_at`` (the actor adds it to a rate-limit park) nor ``approval``
# (``waiting_approval()`` does, validated): unset, as validation of the same call would record it
_FAST[Status] = _FAST[Status]._replace(
    fields_set=_FAST[Status].fields_set - {"resets_at", "approval"}
)


def _build(cls: type[_E], values: dict[str, Any]) -> _E:
    """The event of kind ``cls`` from ``values`` (every field in order, ``kind`` included):
    built directly when the envelope and the kind's row of ``_FAST`` accept every value,
    otherwise validated."""
    ts, seq, run_id, sid = values["ts"], values["seq"], values["run_id"], values["session_id"]
    kind, fields_set, accepts, json_field = _FAST[cls]
    if (
        type(ts) is int
        and type(seq) is int
        and type(run_id) is str
        and (sid is None or type(sid) is str)
        and values["kind"] == kind
        and accepts(values)
    ):
        if json_field is None:
            return _trusted(cls, fields_set, values)
        try:
            values[json_field] = _json_copy(values[json_field])
        except _NotPlain:
            pass
        else:
            return _trusted(cls, fields_set, values)
    del values["kind"]
    return cls(**values)


def _trusted(cls: type[_E], fields_set: frozenset[str], values: dict[str, Any]) -> _E:
    """An instance exactly as validation would build it from ``values`` (already checked to
    be of the field types; ``values`` in field order, defaults included), without running
    the validator."""
    event = _new(cls)
    _setattr(event, "__dict__", values)
    _set_fields_set(event, set(fields_set))
    _set_extra(event, None)
    _set_private(event, None)
    return event


def with_seq(event: _E, seq: int) -> _E:
    """A copy of ``event`` with another ``seq`` (what ``model_copy(update={"seq": seq})`` gives,
    without its generic copying)."""
    if type(seq) is not int:
        return event.model_copy(update={"seq": seq})
    values = dict(event.__dict__)
    values["seq"] = seq
    copy = _new(type(event))
    _setattr(copy, "__dict__", values)
    _set_fields_set(copy, {*event.__pydantic_fields_set__, "seq"})
    _set_extra(copy, event.__pydantic_extra__)
    _set_private(copy, event.__pydantic_private__)
    return copy


@attrs.define
class EventFactory:
    """Stamps one run's events: run id, session id, ``ts`` and a gapless ``seq`` from 1.

    It also keeps the run's bookkeeping that every adapter needs, so each normalizer stays a pure
    function of (frame, factory):

    * ``open_tool_calls`` — tool calls not yet answered; :meth:`finish` closes each with a
      synthetic ``tool-result{is_error}`` before ``done``, so no call is left dangling;
    * ``usage`` — cumulative usage; :meth:`cost` never lets it decrease;
    * ``finished`` — set by :meth:`finish`; a second terminal is refused (empty list).

    ``run_id`` is mutable because runtimes tell us their id late; events built afterwards carry
    it. Every kind is built by one mechanism (:meth:`_emit` and the per-kind table ``_FAST``):
    without re-running validation when every value already has exactly its field's type
    (``str``/``bool``/``float``, the literal sets, plain JSON, a ``Usage``), the same object
    validation would give; otherwise through validation (``model_construct`` is slower still).
    """

    run_id: str = ""
    session_id: str | None = None
    clock: Callable[[], int] = now_ms
    seq: int = 0
    open_tool_calls: dict[str, str] = attrs.field(factory=dict[str, str])
    usage: Usage | None = None
    cost_usd: float | None = None
    finished: bool = False

    def _emit(self, cls: type[_E], payload: dict[str, Any]) -> _E:
        """The next event of kind ``cls``: the envelope stamped, then ``payload`` (every payload
        field, in field order)."""
        self.seq += 1
        return _build(
            cls,
            {
                "run_id": self.run_id,
                "session_id": self.session_id,
                "ts": self.clock(),
                "seq": self.seq,
                "parent_run_id": None,
                "agent_id": None,
                "kind": _FAST[cls].kind,
                **payload,
            },
        )

    def text_delta(self, text: str, channel: TextChannel = "assistant") -> TextDelta:
        # the hot kind writes its values in place (what _emit does, without the payload merge:
        # a fifth of the cost of a delta)
        self.seq += 1
        return _build(
            TextDelta,
            {
                "run_id": self.run_id,
                "session_id": self.session_id,
                "ts": self.clock(),
                "seq": self.seq,
                "parent_run_id": None,
                "agent_id": None,
                "kind": "text-delta",
                "text": text,
                "channel": channel,
            },
        )

    def tool_call(self, tool_call_id: str, name: str, input: JsonValue) -> ToolCall:
        self.open_tool_calls[tool_call_id] = name
        return self._emit(
            ToolCall, {"tool_call_id": tool_call_id, "name": name, "input": input, "partial": False}
        )

    def tool_result(
        self, tool_call_id: str, output: str, *, name: str | None = None, is_error: bool = False
    ) -> ToolResult:
        """A tool's result; ``name`` defaults to the name of the matching open call."""
        call_name = self.open_tool_calls.pop(tool_call_id, None)
        return self._emit(
            ToolResult,
            {
                "tool_call_id": tool_call_id,
                "name": name or call_name or "",
                "output": output,
                "is_error": is_error,
            },
        )

    def status(
        self, phase: StatusPhase, *, model: str | None = None, detail: str | None = None
    ) -> Status:
        return self._emit(
            Status,
            {"phase": phase, "model": model, "detail": detail, "resets_at": None, "approval": None},
        )

    def waiting_approval(self, call: ApprovalCall, *, detail: str | None = None) -> Status:
        """``status{waiting_approval}``: ``call`` waits for a person's decision."""
        return self._emit(
            Status,
            {
                "phase": "waiting_approval",
                "model": None,
                "detail": detail,
                "resets_at": None,
                "approval": call,
            },
        )

    def rate_limited(self, detail: str, resets_at: int | None = None) -> Status:
        """``status{rate_limited}``: the runtime is held by a rate limit until ``resets_at``
        (epoch ms; ``None`` when it did not say)."""
        status = self.status("rate_limited", detail=detail)
        if resets_at is None:
            return status
        return status.model_copy(update={"resets_at": resets_at})

    def cost(
        self,
        usage: Usage,
        *,
        cost_usd: float | None,
        model: str | None = None,
        estimated: bool = False,
    ) -> Cost:
        """A cumulative ``cost`` event; values below the previous cumulative ones are raised to them."""
        prev = self.usage
        if prev is not None:
            usage = usage_of(
                max(prev.input_tokens, usage.input_tokens),
                max(prev.output_tokens, usage.output_tokens),
                _max_opt(prev.cached_input_tokens, usage.cached_input_tokens),
                _max_opt(prev.cache_write_tokens, usage.cache_write_tokens),
            )
        if cost_usd is not None and self.cost_usd is not None:
            cost_usd = max(cost_usd, self.cost_usd)
        self.usage = usage
        if cost_usd is not None:
            self.cost_usd = cost_usd
        return self._emit(
            Cost, {"cost_usd": cost_usd, "usage": usage, "model": model, "estimated": estimated}
        )

    def add_cost(
        self,
        delta: Usage,
        *,
        cost_usd_delta: float | None,
        model: str | None = None,
        estimated: bool = False,
    ) -> Cost:
        """A ``cost`` event from one turn's usage and USD (added to the running totals).

        An unknown USD for any turn makes the cumulative USD unknown from then on.
        """
        total = delta if self.usage is None else self.usage + delta
        if cost_usd_delta is None or (self.usage is not None and self.cost_usd is None):
            cost_usd: float | None = None
        else:
            cost_usd = (self.cost_usd or 0.0) + cost_usd_delta
        self.usage = total
        self.cost_usd = cost_usd
        return self._emit(
            Cost, {"cost_usd": cost_usd, "usage": total, "model": model, "estimated": estimated}
        )

    def finish(
        self,
        reason: DoneReason,
        summary: str = "",
        *,
        usage: Usage | None = None,
        cost_usd: float | None = None,
    ) -> list[RuntimeEvent]:
        """The terminal group: synthetic results for open tool calls, then the one ``done``.

        Returns ``[]`` if the run already finished. ``usage``/``cost_usd`` default to the
        cumulative figures seen on ``cost`` events.
        """
        if self.finished:
            return []
        self.finished = True
        out: list[RuntimeEvent] = [
            self.tool_result(
                call_id,
                f"tool call not completed: the run ended ({reason})",
                name=name,
                is_error=True,
            )
            for call_id, name in list(self.open_tool_calls.items())
        ]
        out.append(
            self._emit(
                Done,
                {
                    "reason": reason,
                    "summary": summary,
                    "usage": usage if usage is not None else self.usage,
                    "cost_usd": cost_usd if cost_usd is not None else self.cost_usd,
                },
            )
        )
        return out

    def fail(
        self, message: str, *, code: str | None = None, summary: str | None = None
    ) -> list[RuntimeEvent]:
        """A fatal failure: ``error{fatal}`` then the terminal group with ``done{error}``."""
        if self.finished:
            return []
        err = self.error(message, code=code, fatal=True)
        return [err, *self.finish("error", message if summary is None else summary)]

    def error(self, message: str, *, code: str | None = None, fatal: bool = True) -> ErrorEvent:
        """A bare error event; prefer :meth:`fail` for fatal failures (it adds the ``done``)."""
        return self._emit(ErrorEvent, {"code": code, "message": message, "fatal": fatal})


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)
