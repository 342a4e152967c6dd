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

A turn is what the model answers to one request: optional ``reasoning`` (thinking), ``text``,
``tool_calls``, the ``usage`` it reports, how the text is cut into stream chunks
(``chunk_chars``) and the pause between chunks (``chunk_delay_s``). A ``fault`` fires ``times``
times for that turn before the turn is answered normally (N failures, then success):

* ``rate_limit`` — 429 with ``retry-after``; ``server_error`` — 500; ``overloaded`` — 529
  (Anthropic) / 503 (OpenAI); ``bad_request`` — 400 ``invalid_request_error``;
* ``cut`` — the stream stops after ``after_chunks`` chunks without its terminal events;
* ``stream_error`` — an in-stream ``error`` event (Anthropic ``overloaded_error`` /
  OpenAI ``response.failed``) after ``after_chunks`` chunks.

For a slow stream (abort tests) give the turn a ``chunk_delay_s``.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Conversation", "Fault", "Script", "ToolCallSpec", "Turn", "TurnUsage", "load_script"]

_MODEL = ConfigDict(extra="forbid", frozen=True)

FaultKind = Literal[
    "rate_limit", "server_error", "overloaded", "bad_request", "cut", "stream_error"
]


class ToolCallSpec(BaseModel):
    model_config = _MODEL
    name: str
    input: dict[str, Any] = Field(default_factory=dict[str, Any])
    id: str | None = None
    """Call id; generated (``toolu_…`` / ``call_…``) when omitted."""


class TurnUsage(BaseModel):
    model_config = _MODEL
    input_tokens: int = 10
    output_tokens: int = 5
    cached_input_tokens: int = 0


class Fault(BaseModel):
    model_config = _MODEL
    kind: FaultKind
    times: int = 1
    retry_after: float | None = 1
    after_chunks: int = 2
    message: str | None = None


class Turn(BaseModel):
    model_config = _MODEL
    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    usage: TurnUsage = TurnUsage()
    chunk_chars: int = 8
    chunk_delay_s: float = 0.0
    fault: Fault | None = None

    def chunks(self, text: str) -> list[str]:
        size = max(1, self.chunk_chars)
        return [text[i : i + size] for i in range(0, len(text), size)] or []


class Conversation(BaseModel):
    model_config = _MODEL
    name: str
    marker: str | None = None
    """Picked when this string appears in the user text of a request; else by order."""
    turns: tuple[Turn, ...]


class Script(BaseModel):
    model_config = _MODEL
    conversations: tuple[Conversation, ...]
    model: str = "scripted-model"
    """The model id reported in responses (requests may name any model)."""
    side_reply: str = "Scripted session"
    """The answer to side requests (titles, summaries) that must not consume a turn."""
    side_request_max_tokens: int = 512
    """A request with no tools and at most this ``max_tokens`` is a side request."""


def load_script(source: str | Path | dict[str, Any] | Script) -> Script:
    """A script from a file (``.json`` or ``.toml``), a dict, or a :class:`Script`."""
    if isinstance(source, Script):
        return source
    if isinstance(source, dict):
        return Script.model_validate(source)
    path = Path(source)
    text = path.read_text(encoding="utf-8")
    data: Any = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    return Script.model_validate(data)
