"""The declarative script a model server plays: conversations of turns, with faults on demand.

A script is JSON (or TOML, or Python objects)::

    {"conversations": [
        {"name": "tools", "marker": "[[scenario:tools]]", "turns": [
            {"text": "Let me look.", "tool_calls": [{"name": "Bash", "input": {"command": "ls"}}]},
            {"text": "Done: two files.", "usage": {"input_tokens": 900, "output_tokens": 12}}
        ]},
        {"name": "flaky", "turns": [
            {"fault": {"kind": "rate_limit", "times": 2, "retry_after": 1}, "text": "third time lucky"}
        ]}
    ]}

A turn is what the model answers to one request: optional ``reasoning`` (thinking / reasoning
summary), ``text``, ``tool_calls``, the ``usage`` it reports, how text and tool arguments are cut
into stream chunks (``chunk_chars``), the pause between chunks (``chunk_delay_s``) and before the
response starts (``delay_s``). A tool call of ``kind: "custom"`` takes a string ``input`` (Codex's
``apply_patch``): the Responses API streams it as a ``custom_tool_call``; Messages and Chat
Completions have no such thing and send a plain tool call with input ``{"input": "<text>"}``.

A ``fault`` fires ``times`` times for that turn before the turn is answered normally (N failures,
then success):

* ``rate_limit`` — 429 with ``retry-after`` (plus any ``headers``, and ``error`` fields merged
  into the body's error object: a provider's own rate-limit signals); ``server_error`` — 500;
  ``overloaded`` — 529
  (Anthropic) / 503 ``server_is_overloaded`` (OpenAI); ``bad_request`` — 400
  ``invalid_request_error``; ``authentication`` — 401;
* ``cut`` — the stream stops after ``after_chunks`` frames without its terminal events (the
  connection drops); on a non-streamed request the server answers 500 instead;
* ``stream_error`` — an in-stream error event (Anthropic ``event: error`` with
  ``overloaded_error``, Responses ``response.failed``, Chat an ``error`` chunk) after
  ``after_chunks`` frames. Claude Code then retries non-streamed: that retry gets the turn.

For a slow stream (abort tests) give the turn a ``chunk_delay_s``; the request log records
whether the client went away before the stream ended (``outcome == "disconnected"``).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from orchestrator.core.errors import ConfigError

__all__ = [
    "DEFAULT_SIDE_REQUEST_PATTERNS",
    "Conversation",
    "Fault",
    "FaultKind",
    "Script",
    "ToolCallSpec",
    "Turn",
    "TurnUsage",
    "load_script",
]

_MODEL = ConfigDict(extra="forbid", frozen=True)

FaultKind = Literal[
    "rate_limit",
    "server_error",
    "overloaded",
    "bad_request",
    "authentication",
    "cut",
    "stream_error",
]

DEFAULT_SIDE_REQUEST_PATTERNS: tuple[str, ...] = (
    # Hermes' auxiliary title call (agent/title_generator.py): no tools, non-streamed.
    "Generate a short, descriptive title",
    # OpenCode's title agent (small model, no tools, streamed).
    "You are a title generator. You output ONLY a thread title.",
)
"""Texts that mark a request without tools as a side request wherever they appear in the body."""


class ToolCallSpec(BaseModel):
    model_config = _MODEL
    name: str
    input: dict[str, Any] | str = Field(default_factory=dict[str, Any])
    """Arguments (an object) of a function call, or the free-form text of a custom call."""
    kind: Literal["function", "custom"] = "function"
    id: str | None = None
    """Call id; generated (``toolu_…`` / ``call_…``) when omitted."""

    @model_validator(mode="after")
    def _input_matches_kind(self) -> Self:
        if self.kind == "custom" and not isinstance(self.input, str):
            raise ValueError("a custom tool call takes a string input")
        if self.kind == "function" and isinstance(self.input, str):
            raise ValueError("a function tool call takes an object input (or use kind: custom)")
        return self

    def arguments(self) -> str:
        """The input as the wire carries it: JSON text of a function call, raw text of a custom one."""
        return self.input if isinstance(self.input, str) else json.dumps(self.input)

    def input_object(self) -> dict[str, Any]:
        """The input as an object (a custom call's text becomes ``{"input": text}``)."""
        return {"input": self.input} if isinstance(self.input, str) else self.input


class TurnUsage(BaseModel):
    model_config = _MODEL
    input_tokens: int = Field(default=10, ge=0)
    output_tokens: int = Field(default=5, ge=0)
    cached_input_tokens: int = Field(default=0, ge=0)
    reasoning_tokens: int = Field(default=0, ge=0)


class Fault(BaseModel):
    model_config = _MODEL
    kind: FaultKind
    times: int = Field(default=1, ge=1)
    retry_after: float | None = Field(default=1, ge=0)
    """``retry-after`` seconds sent with a 429 (None: no header)."""
    after_chunks: int = Field(default=2, ge=0)
    """For ``cut`` and ``stream_error``: how many stream frames go out first."""
    message: str | None = None
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    """Extra response headers sent with the fault (a provider's rate-limit headers:
    ``anthropic-ratelimit-unified-reset``, ``x-codex-primary-reset-at`` …)."""
    error: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Fields merged into the error object of the fault's body (``{"type":
    "usage_limit_reached", "resets_at": …}``: an OpenAI usage limit as Codex reads it)."""


class Turn(BaseModel):
    model_config = _MODEL
    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    usage: TurnUsage = TurnUsage()
    chunk_chars: int = Field(default=8, ge=1)
    chunk_delay_s: float = Field(default=0.0, ge=0)
    delay_s: float = Field(default=0.0, ge=0)
    """Pause before the response starts (streamed or not)."""
    hold_file: str | None = None
    """A streamed answer stops after ``hold_after`` frames until this file exists (polled every
    50 ms, at most ``HOLD_MAX_S``): a test keeps a run busy exactly as long as it needs, then
    creates the file, instead of racing a timer."""
    hold_after: int = Field(default=4, ge=0)
    fault: Fault | None = None

    def chunks(self, text: str) -> list[str]:
        """``text`` cut into pieces of ``chunk_chars`` (none for an empty text)."""
        size = self.chunk_chars
        return [text[i : i + size] for i in range(0, len(text), size)]


class Conversation(BaseModel):
    model_config = _MODEL
    name: str
    marker: str | None = Field(default=None, min_length=1)
    """Picked when this string appears in the user text of a request; else by order."""
    turns: tuple[Turn, ...]


class Script(BaseModel):
    model_config = _MODEL
    conversations: tuple[Conversation, ...]
    model: str = "scripted-model"
    """The model id listed by ``GET /v1/models`` and reported when a request names none."""
    side_reply: str = "Scripted session"
    """The answer to side requests (titles, summaries) that must not consume a turn."""
    side_request_max_tokens: int = 512
    """A request with no tools and at most this ``max_tokens`` is a side request."""
    side_request_patterns: tuple[str, ...] = DEFAULT_SIDE_REQUEST_PATTERNS
    """A request with no tools whose body contains one of these is a side request."""
    api_key: str | None = None
    """When set, requests must carry it (``x-api-key`` or ``Authorization: Bearer``) or get 401."""

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        names = [c.name for c in self.conversations]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"conversation names must be unique: {', '.join(duplicates)}")
        return self


def load_script(source: str | Path | dict[str, Any] | Script) -> Script:
    """A script from a file (``.json`` or ``.toml``), a dict, or a :class:`Script`.

    A file that is missing, unreadable, not UTF-8, malformed, nested too deeply or not shaped
    like a script raises :class:`~orchestrator.core.errors.ConfigError` with one line naming the file
    and the problem."""
    if isinstance(source, Script):
        return source
    if isinstance(source, dict):
        return Script.model_validate(source)
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"script {path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"script {path}: is a directory, not a script file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"script {path}: not a text file (not valid UTF-8)") from None
    except OSError as exc:
        raise ConfigError(f"script {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "TOML" if path.suffix == ".toml" else "JSON"
        raise ConfigError(f"script {path}: not valid {kind}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"script {path}: nested too deeply") from None
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ConfigError(
            f"script {path}: not a model-server script: {where}: {first['msg']}{more}"
        ) from None
    except RecursionError:
        raise ConfigError(f"script {path}: nested too deeply") from None
