"""Raw JSON-Schema tool inputs (C#9): validated with ``jsonschema`` before ``do`` runs."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.native.glove import Glove
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.tools import Tool, ToolContext, ToolInputError, format_validation_error

from .conftest import Recorder

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1},
        "filter": {"$ref": "#/$defs/filter"},
    },
    "required": ["path"],
    "additionalProperties": False,
    "$defs": {
        "filter": {
            "type": "object",
            "properties": {"glob": {"type": "string"}},
            "required": ["glob"],
        }
    },
}


def bridged(seen: list[Any], schema: dict[str, Any] | None = None) -> Tool[Any]:
    async def do(value: Any, ctx: ToolContext) -> str:
        seen.append(value)
        return f"listed {value['path']}"

    return Tool(name="list", description="List files.", do=do, json_schema=schema or SCHEMA)


def test_valid_input_passes_through_unchanged() -> None:
    tool = bridged([])
    value = {"path": "src", "limit": 3, "filter": {"glob": "*.py"}}
    assert tool.validate(value) == value
    assert tool.definition.input_schema == SCHEMA  # the model sees the schema as given


def test_each_violation_is_named_by_its_field_path() -> None:
    tool = bridged([])
    with pytest.raises(ToolInputError) as caught:
        tool.validate({"limit": 0, "filter": {}, "extra": 1})
    assert caught.value.problems == (
        "(input): 'path' is a required property",
        "(input): Additional properties are not allowed ('extra' was unexpected)",
        "filter: 'glob' is a required property",
        "limit: 0 is less than the minimum of 1",
    )
    message = format_validation_error("list", caught.value)
    assert message.startswith("Invalid input for tool 'list': (input): 'path' is a required")
    assert "limit: 0 is less than the minimum of 1" in message


def test_non_object_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="JSON object"):
        bridged([]).validate(["src"])


def test_the_draft_named_by_dollar_schema_is_used() -> None:
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    tool = bridged([], draft4)
    tool.validate({"n": 1})
    with pytest.raises(ToolInputError, match="n: 0 is less than or equal to the minimum of 0"):
        tool.validate({"n": 0})


def test_an_invalid_schema_fails_when_the_tool_is_made() -> None:
    with pytest.raises(ValueError, match=r"invalid JSON Schema: .* \(at properties\.path\.type\)"):
        bridged([], {"type": "object", "properties": {"path": {"type": "text"}}})


def test_a_long_error_list_is_capped() -> None:
    schema = {"type": "object", "properties": {f"f{i}": {"type": "integer"} for i in range(12)}}
    with pytest.raises(ToolInputError) as caught:
        bridged([], schema).validate({f"f{i}": "x" for i in range(12)})
    message = format_validation_error("list", caught.value)
    assert message.endswith("… and 4 more")
    assert message.count("is not of type 'integer'") == 8


async def test_the_model_sees_a_clear_error_and_the_tool_never_runs_on_invalid_input(
    recorder: Recorder,
) -> None:
    seen: list[Any] = []
    model = ScriptedModel(
        [
            Reply(tool_calls=[("list", {"path": "", "limit": "3"})]),
            Reply(tool_calls=[("list", {"path": "src", "limit": 3})]),
            Reply(text="Listed."),
        ]
    )
    glove = Glove(model=model, builtin_tools=False).add_tool(bridged(seen))
    glove.add_subscriber(recorder).build()
    result = await glove.process_request("list src")
    assert result.stop == "completed"
    assert seen == [{"path": "src", "limit": 3}]  # only the valid call ran
    first = model.requests[1].messages[-1].tool_results
    assert first is not None
    data = first[0].result
    assert data.status == "error"
    assert data.error_kind == "invalid_input"
    assert data.message == (
        "Invalid input for tool 'list': limit: '3' is not of type 'integer'; "
        "path: '' should be non-empty"
    )
    second = model.requests[2].messages[-1].tool_results
    assert second is not None
    assert second[0].result.data == "listed src"
    results = recorder.of("tool_use_result")
    assert [r.result.is_error for r in results] == [True, False]
