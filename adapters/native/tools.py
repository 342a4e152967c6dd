"""Tools: definitions with pydantic input models, ``fold``, and result normalization.

A tool's ``do(input, ctx)`` receives the *validated* input (an instance of its ``input_model``)
and a :class:`ToolContext` (call id, an idempotency key, the display manager, the Glove). It may
return a :class:`~.messages.ToolResultData`, a string, any JSON value, or a list of content
parts; :func:`normalize_result` turns each into a ``ToolResultData`` and refuses values that are
not JSON-serializable (C#17).

Flags: ``requires_permission`` (bool, or a function of the validated input; fail-closed),
``permission`` (the :mod:`.policy` verdict, ``allow`` / ``ask`` / ``deny``, which replaces it),
``un_abortable`` (runs to completion despite a cancel), ``parallel_safe`` (may run
concurrently with its neighbours), ``max_retries`` (how often a raised error is retried; ``None``:
the Glove's ``max_retries``, Glove's rule for every tool; ``0`` for a tool that must not repeat),
``idempotent`` (informational: the call's ``idempotency_key`` makes a repeat safe), ``timeout_s``.

A bridged tool (MCP, OpenAPI) describes its input with a raw ``json_schema`` instead of a pydantic
model (C#9). The schema is checked when the tool is made (an invalid schema is a
:class:`ValueError` then, not a surprise mid-run) and every call's arguments are validated
against it with the ``jsonschema`` package (the draft the schema's ``$schema`` names, 2020-12 by
default): invalid input never reaches ``do``; the model gets an ``invalid_input`` result naming
each bad field, as it does for a pydantic model.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, cast

import attrs
import jsonschema
from jsonschema.validators import validator_for
from pydantic import BaseModel, ValidationError

from .messages import ContentPart, ToolResultData
from .policy import Decision

if TYPE_CHECKING:
    from .cancel import CancelToken
    from .display import DisplayManagerAdapter, DisplayStrategy

__all__ = [
    "HandOverFunction",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolInputError",
    "describe_schema_error",
    "field_problems",
    "format_validation_error",
    "json_schema_validator",
    "normalize_result",
    "tool",
]

InputT = TypeVar("InputT", bound=BaseModel)

_MAX_REPORTED_ERRORS = 8

HandOverFunction: TypeAlias = Callable[[Any], Awaitable[Any]]
"""Glove's delegation callback: given to a request (``Glove.process_request(...,
hand_over=fn)``, ``Agent.ask``) and passed to every tool as ``ToolContext.hand_over``, so a tool
can hand control (and any input) to another tool or system and await its answer."""


class ToolInputError(ValueError):
    """A call's arguments do not match the tool's raw JSON Schema; ``problems`` holds one
    ``"<field path>: <what is wrong>"`` line per violation (the model sees them)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


@attrs.define
class ToolContext:
    """What a running tool knows about its call."""

    call_id: str
    tool_name: str
    idempotency_key: str
    """Stable per call (``<session>:<call id>``): retries and replays never repeat a write."""
    display: DisplayManagerAdapter | None = None
    glove: Any = None
    attempt: int = 1
    cancel: CancelToken | None = None
    """The request's cancel token (sub-agents run under it, so a cancel reaches them)."""
    run: Any = None
    """The Anvia agent run the call belongs to, if any (agents as tools stream through it)."""
    hand_over: HandOverFunction | None = None
    """The request's hand-over function, if it was given one (Glove's ``HandOverFunction``)."""

    async def push_and_forget(
        self, input: Any, renderer: str | None = None, *, strategy: DisplayStrategy = "stay"
    ) -> str:
        """Show a display slot attributed to this call (renderer defaults to the tool name)."""
        return await self._display().push_and_forget(
            input,
            renderer or self.tool_name,
            strategy=strategy,
            tool_name=self.tool_name,
            tool_call_id=self.call_id,
        )

    async def push_and_wait(
        self,
        input: Any,
        renderer: str | None = None,
        *,
        strategy: DisplayStrategy = "hide-on-complete",
    ) -> Any:
        """Show a slot attributed to this call and wait for the UI's answer."""
        return await self._display().push_and_wait(
            input,
            renderer or self.tool_name,
            strategy=strategy,
            tool_name=self.tool_name,
            tool_call_id=self.call_id,
        )

    def _display(self) -> DisplayManagerAdapter:
        if self.display is None:
            raise RuntimeError(
                f"tool {self.tool_name!r} has no display manager (pass one to Glove)"
            )
        return self.display


@attrs.frozen
class ToolDefinition:
    """What a model sees of a tool."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@attrs.define
class Tool(Generic[InputT]):
    """A tool the executor can run (see the module docstring)."""

    name: str
    description: str
    do: Callable[[InputT, ToolContext], Awaitable[Any]]
    input_model: type[InputT] | None = None
    json_schema: Mapping[str, Any] | None = None
    """Raw JSON Schema for bridged tools (MCP/OpenAPI): sent to the model as is, and every
    call's input validated against it (``jsonschema``) before ``do`` runs."""
    requires_permission: bool | Callable[[InputT], bool] = False
    un_abortable: bool = False
    parallel_safe: bool = False
    idempotent: bool = False
    max_retries: int | None = None
    """Retries on a raised error; None means the Glove default when ``idempotent``, else 0."""
    timeout_s: float | None = None
    permission: Decision | Callable[[InputT], Decision] | None = None
    """The permission policy's verdict (``allow`` / ``ask`` / ``deny``, or a function of the
    validated input giving one); when set it replaces ``requires_permission``."""
    _definition: ToolDefinition | None = attrs.field(default=None, init=False, repr=False)
    _validator: Any = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.input_model is None and self.json_schema is None:
            raise ValueError(f"tool {self.name!r} needs an input_model or a json_schema")
        if self.input_model is None and self.json_schema is not None:
            self._validator = json_schema_validator(self.name, self.json_schema)

    @property
    def definition(self) -> ToolDefinition:
        if self._definition is None:
            if self.json_schema is not None:
                schema: Mapping[str, Any] = self.json_schema
            else:
                assert self.input_model is not None
                schema = _schema_of(self.input_model)
            self._definition = ToolDefinition(self.name, self.description, schema)
        return self._definition

    def validate(self, raw: Any) -> InputT | Any:
        """Validated input; raises :class:`pydantic.ValidationError` (pydantic model),
        :class:`ToolInputError` (raw JSON Schema) or ``TypeError`` (not an object)."""
        if self.input_model is None:
            if not isinstance(raw, dict):
                raise TypeError("arguments must be a JSON object")
            value = cast(dict[str, Any], raw)
            errors = sorted(
                self._validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path))
            )
            if errors:
                raise ToolInputError([describe_schema_error(e) for e in errors])
            return value
        if isinstance(raw, self.input_model):
            return raw
        return self.input_model.model_validate(raw if raw is not None else {})

    def permission_decision(self, value: Any) -> Decision:
        """``allow``, ``ask`` or ``deny`` for this validated input (fail-closed ``ask`` when
        only ``requires_permission`` is set)."""
        verdict = self.permission
        if verdict is not None:
            return verdict(value) if callable(verdict) else verdict
        if self.requires_permission and self.needs_permission(value):
            return "ask"
        return "allow"

    def needs_permission(self, value: Any) -> bool:
        gate = self.requires_permission
        if callable(gate):
            return bool(gate(value))
        return bool(gate)


_SCHEMAS: dict[type[BaseModel], Mapping[str, Any]] = {}


def _schema_of(model: type[BaseModel]) -> Mapping[str, Any]:
    """An input model's JSON schema, computed once per class (tools are rebuilt per run)."""
    schema = _SCHEMAS.get(model)
    if schema is None:
        schema = _SCHEMAS[model] = model.model_json_schema()
    return schema


def json_schema_validator(tool_name: str, schema: Mapping[str, Any]) -> Any:
    """A ``jsonschema`` validator for the draft ``$schema`` names (2020-12 when absent)."""
    cls: Any = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(
            f"tool {tool_name!r} has an invalid JSON Schema: {exc.message}"
            f" (at {_path_of(exc.absolute_path, '(schema)')})"
        ) from None
    return cls(schema)


def _path_of(path: Iterable[Any], root: str) -> str:
    return ".".join(str(p) for p in path) or root


def describe_schema_error(error: Any, root: str = "(input)") -> str:
    """``"<field path>: <what is wrong>"`` for a ``jsonschema`` error (``root`` for the whole)."""
    return f"{_path_of(error.absolute_path, root)}: {error.message}"


def tool(
    name: str,
    description: str,
    input_model: type[InputT],
    do: Callable[[InputT, ToolContext], Awaitable[Any]],
    **flags: Any,
) -> Tool[InputT]:
    """Shorthand for :class:`Tool` with a pydantic input model."""
    return Tool(name=name, description=description, do=do, input_model=input_model, **flags)


def format_validation_error(
    tool_name: str, error: ValidationError | ToolInputError | TypeError
) -> str:
    """A compact message naming each bad field, which a model can act on (C#10)."""
    if isinstance(error, ToolInputError):
        problems = list(error.problems[:_MAX_REPORTED_ERRORS])
        if len(error.problems) > _MAX_REPORTED_ERRORS:
            problems.append(f"… and {len(error.problems) - _MAX_REPORTED_ERRORS} more")
        return f"Invalid input for tool {tool_name!r}: " + "; ".join(problems)
    if isinstance(error, TypeError):
        return f"Invalid input for tool {tool_name!r}: {error}"
    return f"Invalid input for tool {tool_name!r}: " + "; ".join(field_problems(error, "(input)"))


def field_problems(error: ValidationError, root: str) -> list[str]:
    """One ``"<field path>: <what is wrong>"`` line per pydantic error (``root`` for the whole)."""
    return [
        f"{'.'.join(str(p) for p in item['loc']) or root}: {item['msg']}"
        for item in error.errors(include_url=False, include_context=False)
    ]


def normalize_result(value: Any) -> ToolResultData:
    """Text, JSON and content-part results as :class:`ToolResultData` (C#17)."""
    if isinstance(value, ToolResultData):
        return value
    if value is None or isinstance(value, str | int | float | bool):
        return ToolResultData(status="success", data=value)
    if isinstance(value, BaseModel):
        return ToolResultData(status="success", data=value.model_dump(mode="json"))
    if isinstance(value, list | tuple):
        items = cast(Sequence[Any], value)
        if items and all(isinstance(v, ContentPart) for v in items):
            parts = cast(tuple[ContentPart, ...], tuple(items))
            text = "\n".join(p.text or "" for p in parts if p.type == "text")
            return ToolResultData(status="success", data=text, content=parts)
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        return ToolResultData(
            status="error",
            message=f"the tool returned a value that is not JSON-serializable ({type(cast(object, value)).__name__}): {exc}",
            error_kind="failed",
        )
    return ToolResultData(status="success", data=value)
