"""The normalized event stream: seven kinds every runtime adapter emits.

Each event is a frozen pydantic model. Python attributes are snake_case; JSON uses the
original executor's camelCase names (``runId``, ``toolCallId``, ``kind: "text-delta"``) so existing boards
read it unchanged. Unknown input fields are ignored so a newer producer never breaks a reader.

Contracts (docs/architecture.md, Contracts): ``seq`` starts at 1 and is gapless per stream; ``ts`` is epoch
milliseconds; exactly one ``done`` ends a run; ``cost`` carries cumulative usage and
``cost_usd=None`` means unknown (never 0 for unknown).

:class:`EventFactory` stamps the envelope (run id, session id, ``ts``, gapless ``seq``) so an
adapter's normalizer only supplies the payload.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, NoReturn, TypeAlias, TypeVar, cast

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
    "QuotaWindow",
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
    "valid_text",
    "with_seq",
    "with_text",
]

RuntimeEventKind: TypeAlias = Literal[
    "text-delta", "tool-call", "tool-result", "status", "cost", "done", "error"
]
TextChannel: TypeAlias = Literal["assistant", "reasoning"]
StatusPhase: TypeAlias = Literal[
    "queued", "init", "thinking", "running", "turn-complete", "rate_limited", "waiting_approval"
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
# BaseModel's slots, set through their descriptors (15% cheaper than object.__setattr__ by name)
_set_fields_set: Callable[[object, set[str]], None] = vars(BaseModel)[
    "__pydantic_fields_set__"
].__set__
_set_extra: Callable[[object, object], None] = vars(BaseModel)["__pydantic_extra__"].__set__
_set_private: Callable[[object, object], None] = vars(BaseModel)["__pydantic_private__"].__set__
_set_dict: Callable[[object, dict[str, Any]], None] = vars(BaseModel)["__dict__"].__set__


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


_USAGE_SET = {"input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens"}
"""Shared by every ``Usage`` built here: the model is frozen, pydantic never adds to it in place."""


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
        _set_dict(
            usage,
            {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cached_input_tokens": cached_input_tokens,
                "cache_write_tokens": cache_write_tokens,
            },
        )
        _set_fields_set(usage, _USAGE_SET)
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
    """The next piece of text (concatenate a run's deltas of one channel for the whole)."""
    channel: TextChannel = "assistant"
    """``assistant`` (the answer) or ``reasoning`` (thinking, a sub-agent's words)."""


class ToolCall(EventBase):
    """The model asked for a tool; a ``tool-result`` with the same id always follows."""

    kind: Literal["tool-call"] = "tool-call"
    tool_call_id: str
    """Pairs the call with its ``tool-result``."""
    name: str
    """The tool, as the runtime names it (``Bash``, ``exec_command``, ``mcp__files__read``)."""
    input: JsonValue = None
    """The tool's arguments, as the model gave them."""
    partial: bool = False
    """The input may be incomplete: a later ``tool-call`` with the same id replaces it (no
    shipped adapter sends one)."""


class ToolResult(EventBase):
    """The result of a tool call (``is_error`` for failures, denials and synthetic closures)."""

    kind: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    """The ``tool-call`` this answers."""
    name: str
    """The tool."""
    output: str
    """What the tool returned, as text."""
    is_error: bool = False
    """The call failed, was denied or was closed without running (an abort, a run's end)."""


class ApprovalCall(BaseModel):
    """The tool call a ``status{waiting_approval}`` waits on (see :mod:`orchestrator.core.approvals`)."""

    model_config = WIRE_CONFIG

    id: str
    """The approval's id (``ringleader approve ID``)."""
    tool_call_id: str
    """The ``tool-call`` waiting."""
    name: str
    """The tool."""
    input: JsonValue = None
    """Its input, as the model gave it."""
    reason: str | None = None
    """Why it needs approval, when known."""


class QuotaWindow(BaseModel):
    """One rate-limit window of the account a runtime runs as, as the runtime reported it
    (Claude Code's ``rate_limit_event``, Codex's ``account/rateLimits/updated``): ``None`` means
    the runtime did not say, never 0."""

    model_config = WIRE_CONFIG

    name: str
    """The window: ``five_hour``, ``seven_day`` (Claude Code), ``primary``, ``secondary``
    (Codex), ``requests`` (a plain 429 that named none)."""
    used_percent: float | None = None
    """0–100 (may pass 100)."""
    resets_at: int | None = None
    """Epoch ms."""
    window_minutes: int | None = None
    """The window's length in minutes (300: five hours)."""
    state: str | None = None
    """``allowed``, ``allowed_warning`` or ``rejected`` (held until ``resets_at``)."""


class Status(EventBase):
    """Lifecycle: queued (before the runtime starts, waiting for a free slot under its
    ``max_runs``; ``detail`` says why), init (with the model), thinking, running, turn-complete;
    ``detail`` for retries etc.; ``rate_limited`` with ``resets_at`` (epoch ms) when a task is parked until a reset;
    ``waiting_approval`` with ``approval`` (the call) while a tool call waits for a person."""

    kind: Literal["status"] = "status"
    phase: StatusPhase
    """Where the run is: ``queued``, ``init``, ``thinking``, ``running``, ``turn-complete``,
    ``rate_limited`` or ``waiting_approval``."""
    model: str | None = None
    """The model the run uses, when the runtime says (on ``init`` above all)."""
    detail: str | None = None
    """A line for a person: why it is queued, a retry, an unknown frame, a setup line, …"""
    resets_at: int | None = None
    """With ``rate_limited``: when the limit resets (epoch ms)."""
    approval: ApprovalCall | None = None
    """With ``waiting_approval``: the tool call waiting for a person."""
    quota: tuple[QuotaWindow, ...] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )
    """The account's rate-limit windows, when the runtime reported them with this status (left
    out of the wire JSON when absent)."""


class Cost(EventBase):
    """Cumulative usage and USD for the run so far; ``cost_usd=None`` means unknown."""

    kind: Literal["cost"] = "cost"
    cost_usd: float | None = None
    """USD so far; ``null``: unknown (never 0 for unknown)."""
    usage: Usage
    """Tokens so far."""
    model: str | None = None
    """The model the usage is for, when the runtime says."""
    estimated: bool = False
    """``cost_usd`` is a list-price estimate (shown ``est.``), not what the runtime reported."""


class Done(EventBase):
    """The single terminal event of a run."""

    kind: Literal["done"] = "done"
    reason: DoneReason
    """How the run ended: ``success``, ``max_turns`` (its turn cap), ``aborted`` (someone asked
    it to stop) or ``error`` (an ``error`` event says why)."""
    summary: str = ""
    """The run's summary (its final answer, as the runtime reported it), or ``""``."""
    usage: Usage | None = None
    """The run's total usage: what the runtime reported at the end, else the last ``cost``."""
    cost_usd: float | None = None
    """The run's total USD, the same way; ``null``: unknown."""


class ErrorEvent(EventBase):
    """A failure; ``fatal`` errors are followed by ``done{reason: error}``."""

    kind: Literal["error"] = "error"
    code: str | None = None
    """A typed code (``rate_limited``, ``budget_exceeded``, ``interrupted``, …) when known."""
    message: str
    """What went wrong, in one line (secrets redacted)."""
    fatal: bool = True
    """A fatal error ends the run (``done{error}`` follows); a non-fatal one is a warning."""


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


def valid_text(text: str) -> str:
    """``text`` as valid Unicode: each lone surrogate (``"\\ud800"`` from a JSON body, an
    undecodable argument) becomes U+FFFD, as JavaScript's UTF-8 encoder writes it. Text that
    enters the engine (a task's prompt) passes here, so nothing stored can fail to encode."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


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


_SCALARS = frozenset((str, int, bool, float, type(None)))


def _json_copy(value: object, depth: int = 0) -> Any:
    """A copy of a plain JSON value (exact ``dict`` with ``str`` keys, ``list``, ``str``,
    ``int``, ``float``, ``bool``, ``None``), as JSON-value validation returns it; raises
    :class:`_NotPlain` for anything else (subclasses, tuples, very deep nesting …).
    Scalars inside a container are taken as they are, without a call each."""
    t = type(value)
    if t in _SCALARS:
        return value
    if depth > 32:
        raise _NotPlain
    if t is dict:
        out: dict[str, Any] = {}
        for k, v in cast(dict[Any, Any], value).items():
            if type(k) is not str:
                raise _NotPlain
            out[k] = v if type(v) in _SCALARS else _json_copy(v, depth + 1)
        return out
    if t is list:
        return [
            v if type(v) in _SCALARS else _json_copy(v, depth + 1) for v in cast(list[Any], value)
        ]
    raise _NotPlain


# -- one fast construction for every kind ----------------------------------------------------------
#
# Validation (~1.5 µs an event, 3 µs for a cost) is the floor of the slow path. The factory builds
# the same object without it when every value already has exactly its field's type, and each of
# its methods says inline what "exactly" means for its kind (identity type checks and the literal
# sets; a shared check function per kind cost a fifth of a delta). Anything else goes through
# validation. ``_FIELDS_SET`` is what validation records as set per kind; the import-time check
# below keeps the methods' value dicts in the models' field order.

_CHANNELS = frozenset(("assistant", "reasoning"))
_PHASES = frozenset(
    ("queued", "init", "thinking", "running", "turn-complete", "rate_limited", "waiting_approval")
)
_REASONS = frozenset(("success", "max_turns", "aborted", "error"))
_ENVELOPE = ("run_id", "session_id", "ts", "seq", "parent_run_id", "agent_id")
_TAGS = frozenset(("parent_run_id", "agent_id"))
"""Envelope fields the factory leaves at their default (unset, as validation records them)."""

_PAYLOAD: dict[type[EventBase], tuple[str, ...]] = {
    TextDelta: ("text", "channel"),
    ToolCall: ("tool_call_id", "name", "input", "partial"),
    ToolResult: ("tool_call_id", "name", "output", "is_error"),
    Status: ("phase", "model", "detail", "resets_at", "approval", "quota"),
    Cost: ("cost_usd", "usage", "model", "estimated"),
    Done: ("reason", "summary", "usage", "cost_usd"),
    ErrorEvent: ("code", "message", "fatal"),
}
for _cls, _fields in _PAYLOAD.items():  # the methods below write every field, in this order
    if list(_cls.model_fields) != [*_ENVELOPE, "kind", *_fields]:
        raise AssertionError(f"the factory's field list of {_cls.__name__} is out of date")


def _fields_set(cls: type[EventBase], *unset: str) -> set[str]:
    return set((*_ENVELOPE, *_PAYLOAD[cls])) - _TAGS - set(unset)


# One set per kind, shared by every event the factory builds: events are frozen, so pydantic never
# adds to it in place (``model_copy`` copies it first).
_TEXT_SET = _fields_set(TextDelta)
_CALL_SET = _fields_set(ToolCall)
_RESULT_SET = _fields_set(ToolResult)
_STATUS_SET = _fields_set(Status, "resets_at", "approval", "quota")
"""``status()`` never sets ``resets_at`` (the actor adds it to a rate-limit park) nor ``approval``
(``waiting_approval()`` does, validated): unset, as validation of the same call records them."""
_COST_SET = _fields_set(Cost)
_DONE_SET = _fields_set(Done)
_ERROR_SET = _fields_set(ErrorEvent)


def _trusted(cls: type[_E], fields_set: set[str], values: dict[str, Any]) -> _E:
    """An instance exactly as validation would build it from ``values`` (already checked to
    be of the field types; ``values`` in field order, defaults included), without running
    the validator."""
    event = _new(cls)
    _set_dict(event, values)
    _set_fields_set(event, fields_set)
    _set_extra(event, None)
    _set_private(event, None)
    return event


def _validated(cls: type[_E], values: dict[str, Any]) -> _E:
    """The slow path: ``values`` (``kind`` included) through the model's validation."""
    del values["kind"]
    return cls(**values)


def _opt_str(value: object) -> bool:
    return value is None or type(value) is str


def _opt_float(value: object) -> bool:
    return value is None or type(value) is float


def with_seq(event: _E, seq: int) -> _E:
    """A copy of ``event`` with another ``seq`` (what ``model_copy(update={"seq": seq})`` gives,
    without its generic copying)."""
    if type(seq) is not int:
        return event.model_copy(update={"seq": seq})
    return _replaced(event, "seq", seq)


def with_text(event: TextDelta, text: str) -> TextDelta:
    """A copy of a delta with another ``text`` (what ``model_copy(update={"text": text})``
    gives, without its generic copying: the redactor and the queues re-text deltas)."""
    if type(text) is not str:
        return event.model_copy(update={"text": text})
    return _replaced(event, "text", text)


def _replaced(event: _E, field: str, value: object) -> _E:
    values = dict(event.__dict__)
    values[field] = value
    copy = _new(type(event))
    _set_dict(copy, values)
    fields_set = event.__pydantic_fields_set__
    _set_fields_set(copy, fields_set if field in fields_set else {*fields_set, field})
    _set_extra(copy, event.__pydantic_extra__)
    _set_private(copy, event.__pydantic_private__)
    return copy


_dict = cast(Callable[[], dict[Any, Any]], dict)
"""A typed ``dict`` factory (``dict[str, str]`` as a factory costs 7× ``dict``)."""


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
    it. Every kind is built the same way (its method checks the values inline, then
    :func:`_trusted`): without re-running validation when every value already has exactly its
    field's type (``str``/``bool``/``float``, the literal sets, plain JSON, a ``Usage``), the same
    object validation would give; otherwise through validation (``model_construct`` is slower).
    """

    run_id: str = ""
    session_id: str | None = None
    clock: Callable[[], int] = now_ms
    seq: int = 0
    open_tool_calls: dict[str, str] = attrs.field(factory=_dict)
    usage: Usage | None = None
    cost_usd: float | None = None
    finished: bool = False

    def _envelope(self) -> tuple[dict[str, Any], bool]:
        """The next event's envelope (``seq`` taken) and whether every value in it has exactly
        its field's type (else the event is validated)."""
        self.seq = seq = self.seq + 1
        run_id, sid, ts = self.run_id, self.session_id, self.clock()
        return {
            "run_id": run_id,
            "session_id": sid,
            "ts": ts,
            "seq": seq,
            "parent_run_id": None,
            "agent_id": None,
        }, (
            type(ts) is int
            and type(seq) is int
            and type(run_id) is str
            and (sid is None or type(sid) is str)
        )

    def text_delta(self, text: str, channel: TextChannel = "assistant") -> TextDelta:
        # the hot kind: the envelope written in place (a fifth of the cost of a delta)
        self.seq = seq = self.seq + 1
        run_id, sid, ts = self.run_id, self.session_id, self.clock()
        values = {
            "run_id": run_id,
            "session_id": sid,
            "ts": ts,
            "seq": seq,
            "parent_run_id": None,
            "agent_id": None,
            "kind": "text-delta",
            "text": text,
            "channel": channel,
        }
        if (
            type(text) is str
            and type(channel) is str
            and channel in _CHANNELS
            and type(ts) is int
            and type(seq) is int
            and type(run_id) is str
            and (sid is None or type(sid) is str)
        ):  # _trusted, inlined
            event = _new(TextDelta)
            _set_dict(event, values)
            _set_fields_set(event, _TEXT_SET)
            _set_extra(event, None)
            _set_private(event, None)
            return event
        return _validated(TextDelta, values)

    def tool_call(self, tool_call_id: str, name: str, input: JsonValue) -> ToolCall:
        self.open_tool_calls[tool_call_id] = name
        values, ok = self._envelope()
        values["kind"] = "tool-call"
        values["tool_call_id"] = tool_call_id
        values["name"] = name
        values["input"] = input
        values["partial"] = False
        if ok and type(tool_call_id) is str and type(name) is str:
            try:  # validation copies plain JSON; anything else is left to it
                values["input"] = _json_copy(input)
            except _NotPlain:
                pass
            else:
                return _trusted(ToolCall, _CALL_SET, values)
        return _validated(ToolCall, values)

    def tool_result(
        self, tool_call_id: str, output: str, *, name: str | None = None, is_error: bool = False
    ) -> ToolResult:
        """A tool's result; ``name`` defaults to the name of the matching open call."""
        call_name = self.open_tool_calls.pop(tool_call_id, None)
        name = name or call_name or ""
        values, ok = self._envelope()
        values["kind"] = "tool-result"
        values["tool_call_id"] = tool_call_id
        values["name"] = name
        values["output"] = output
        values["is_error"] = is_error
        if (
            ok
            and type(tool_call_id) is str
            and type(name) is str
            and type(output) is str
            and type(is_error) is bool
        ):
            return _trusted(ToolResult, _RESULT_SET, values)
        return _validated(ToolResult, values)

    def status(
        self, phase: StatusPhase, *, model: str | None = None, detail: str | None = None
    ) -> Status:
        values, ok = self._envelope()
        values["kind"] = "status"
        values["phase"] = phase
        values["model"] = model
        values["detail"] = detail
        values["resets_at"] = None
        values["approval"] = None
        values["quota"] = None
        if ok and type(phase) is str and phase in _PHASES and _opt_str(model) and _opt_str(detail):
            return _trusted(Status, _STATUS_SET, values)
        return _validated(Status, values)

    def waiting_approval(self, call: ApprovalCall, *, detail: str | None = None) -> Status:
        """``status{waiting_approval}``: ``call`` waits for a person's decision (validated: a
        rare event)."""
        values, _ = self._envelope()
        values["kind"] = "status"
        values["phase"] = "waiting_approval"
        values["model"] = None
        values["detail"] = detail
        values["resets_at"] = None
        values["approval"] = call
        values["quota"] = None
        return _validated(Status, values)

    def rate_limited(
        self,
        detail: str,
        resets_at: int | None = None,
        quota: Sequence[QuotaWindow] | None = None,
    ) -> Status:
        """``status{rate_limited}``: the runtime is held by a rate limit until ``resets_at``
        (epoch ms; ``None`` when it did not say); ``quota``: the windows it reported."""
        status = self.status("rate_limited", detail=detail)
        update: dict[str, Any] = {}
        if resets_at is not None:
            update["resets_at"] = resets_at
        if quota:
            update["quota"] = tuple(quota)
        return status.model_copy(update=update) if update else status

    def quota_report(self, windows: Sequence[QuotaWindow], detail: str) -> Status:
        """``status{running}`` carrying the account's rate-limit ``windows`` (the run goes on)."""
        status = self.status("running", detail=detail)
        return status.model_copy(update={"quota": tuple(windows)})

    def _cost(
        self, cost_usd: float | None, usage: Usage, model: str | None, estimated: bool
    ) -> Cost:
        values, ok = self._envelope()
        values["kind"] = "cost"
        values["cost_usd"] = cost_usd
        values["usage"] = usage
        values["model"] = model
        values["estimated"] = estimated
        # a model instance is kept as it is by validation (revalidate_instances='never')
        if (
            ok
            and _opt_float(cost_usd)
            and type(usage) is Usage
            and _opt_str(model)
            and type(estimated) is bool
        ):
            return _trusted(Cost, _COST_SET, values)
        return _validated(Cost, values)

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
        if prev is not None and prev is not usage:
            usage = _usage_max(prev, usage)
        if cost_usd is not None and self.cost_usd is not None:
            cost_usd = max(cost_usd, self.cost_usd)
        self.usage = usage
        if cost_usd is not None:
            self.cost_usd = cost_usd
        return self._cost(cost_usd, usage, model, estimated)

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
        return self._cost(cost_usd, total, model, estimated)

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
            self._done(
                reason,
                summary,
                usage if usage is not None else self.usage,
                cost_usd if cost_usd is not None else self.cost_usd,
            )
        )
        return out

    def _done(
        self, reason: DoneReason, summary: str, usage: Usage | None, cost_usd: float | None
    ) -> Done:
        values, ok = self._envelope()
        values["kind"] = "done"
        values["reason"] = reason
        values["summary"] = summary
        values["usage"] = usage
        values["cost_usd"] = cost_usd
        if (
            ok
            and type(reason) is str
            and reason in _REASONS
            and type(summary) is str
            and (usage is None or type(usage) is Usage)
            and _opt_float(cost_usd)
        ):
            return _trusted(Done, _DONE_SET, values)
        return _validated(Done, values)

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
        values, ok = self._envelope()
        values["kind"] = "error"
        values["code"] = code
        values["message"] = message
        values["fatal"] = fatal
        if ok and _opt_str(code) and type(message) is str and type(fatal) is bool:
            return _trusted(ErrorEvent, _ERROR_SET, values)
        return _validated(ErrorEvent, values)


def _usage_max(prev: Usage, usage: Usage) -> Usage:
    """Each count of ``usage`` raised to ``prev``'s (``usage`` itself when none is below)."""
    pc, uc = prev.cached_input_tokens, usage.cached_input_tokens
    pw, uw = prev.cache_write_tokens, usage.cache_write_tokens
    if (
        usage.input_tokens >= prev.input_tokens
        and usage.output_tokens >= prev.output_tokens
        and (pc is None or (uc is not None and uc >= pc))
        and (pw is None or (uw is not None and uw >= pw))
    ):
        return usage
    return usage_of(
        max(prev.input_tokens, usage.input_tokens),
        max(prev.output_tokens, usage.output_tokens),
        _max_opt(pc, uc),
        _max_opt(pw, uw),
    )


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)
