"""Structured output: the final answer validated against an output schema, with a bounded retry.

:meth:`OutputSchema.of` takes a pydantic model class or a raw JSON Schema. With one configured
(``LoopConfig(output_schema=...)``, ``NativeAdapter(output_schema=...)``):

1. every model call of the request carries a short instruction naming the schema (a transient
   user message at the end, never stored, so later requests and the prompt cache's prefix are
   unaffected);
2. a reply without tool calls is the candidate answer: its text is parsed as JSON (the whole
   text, or the body of a ```` ```json ```` fence in it) and validated — a pydantic model
   validates into an instance, a JSON Schema with ``jsonschema`` into the parsed value;
3. if it does not match, the problems (one line per field) go back to the model as a stored user
   message and the model answers again, at most ``output_retries`` times (each retry is a model
   call and counts against ``max_turns``);
4. the validated value is ``AskResult.output``; when the retries are spent the request raises
   :class:`~orchestrator.core.errors.OutputValidationError` (``error{fatal, code: output_invalid}``
   on the adapter's stream).

Where Anvia differs: 0.26 only hands the schema to the provider and never validates; v1 parses,
validates and retries (``AgentStructuredOutputError`` with a ``phase``). We validate and retry
like v1, in the loop, for every provider; the schema is not sent as the provider's native
response format (not every provider has one, and a tool-calling turn must stay free-form).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import attrs
from pydantic import BaseModel, ValidationError

from .messages import Message
from .tools import describe_schema_error, field_problems, json_schema_validator

__all__ = [
    "OutputMismatch",
    "OutputSchema",
    "OutputSpec",
    "as_output_schema",
    "extract_json",
    "retry_message",
]

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n?```", re.DOTALL)
_MAX_PROBLEMS = 8


class OutputMismatch(ValueError):
    """The answer is not JSON, or does not match the schema (``problems``: one per line)."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@attrs.frozen
class OutputSchema:
    """What the final answer must be (see the module docstring)."""

    json_schema: Mapping[str, Any]
    """The schema the model is told about."""
    _validate: Callable[[Any], Any] = attrs.field(alias="validate", repr=False)
    """Parsed JSON → the value (raises :class:`OutputMismatch`)."""
    model: type[BaseModel] | None = None

    @classmethod
    def of(cls, spec: type[BaseModel] | Mapping[str, Any] | OutputSchema) -> OutputSchema:
        """From a pydantic model class or a raw JSON Schema (checked now: an invalid one is
        a ``ValueError`` here, not mid-run)."""
        if isinstance(spec, OutputSchema):
            return spec
        if isinstance(spec, type):
            return cls(spec.model_json_schema(), _pydantic_validator(spec), spec)
        validator = json_schema_validator("(output)", spec)

        def validate(value: Any) -> Any:
            errors = list(validator.iter_errors(value))
            if errors:
                raise OutputMismatch(tuple(describe_schema_error(e, "(answer)") for e in errors))
            return value

        return cls(dict(spec), validate)

    def parse(self, text: str) -> Any:
        """The validated value of an answer's text (raises :class:`OutputMismatch`)."""
        raw = extract_json(text)
        if raw is None:
            raise OutputMismatch(("(answer): not a JSON value (reply with JSON only)",))
        return self._validate(raw)

    @property
    def instruction(self) -> Message:
        schema = json.dumps(self.json_schema, ensure_ascii=False, separators=(",", ":"))
        return Message(
            sender="user",
            text=(
                "[Output format] When you give your final answer, reply with only a JSON value "
                f"that matches this JSON Schema, with no other text:\n{schema}"
            ),
        )


OutputSpec: TypeAlias = type[BaseModel] | Mapping[str, Any] | OutputSchema
"""A pydantic model class, a raw JSON Schema, or an :class:`OutputSchema`."""


def as_output_schema(spec: OutputSpec | None) -> OutputSchema | None:
    return None if spec is None else OutputSchema.of(spec)


def extract_json(text: str) -> Any | None:
    """The JSON value of ``text`` (whole, or a fenced block in it); ``None`` if none parses."""
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def retry_message(problems: tuple[str, ...]) -> Message:
    """The stored user message that tells the model what was wrong with its answer."""
    shown = list(problems[:_MAX_PROBLEMS])
    if len(problems) > _MAX_PROBLEMS:
        shown.append(f"… and {len(problems) - _MAX_PROBLEMS} more")
    lines = "\n".join(f"- {p}" for p in shown)
    return Message(
        sender="user",
        text=(
            "[Output format] Your answer does not match the required JSON Schema:\n"
            f"{lines}\nReply again with only the corrected JSON value."
        ),
    )


def _pydantic_validator(model: type[BaseModel]) -> Callable[[Any], Any]:
    def validate(value: Any) -> Any:
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            raise OutputMismatch(tuple(field_problems(exc, "(answer)"))) from None

    return validate
