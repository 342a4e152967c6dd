"""Structured output: the final answer validated against an output schema, bounded retry."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from adapters.native import NativeAdapter
from adapters.native.glove import Glove
from adapters.native.lifecycle import LifecycleHooks, RunAction, RunEndInfo
from adapters.native.loop import LoopConfig
from adapters.native.models.providers import create_adapter
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.structured import OutputSchema, extract_json
from contract import check_stream, collect_run
from orchestrator.core import Done, ErrorEvent, StartOpts, Status, TaskHandle
from orchestrator.core.errors import OutputValidationError
from orchestrator.model_server import serve_model_server

from .conftest import Recorder


class Forecast(BaseModel):
    city: str
    temp_c: float


FORECAST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
    "required": ["city", "temp_c"],
    "additionalProperties": False,
}

APIS = [("anthropic", None), ("openai", "responses"), ("openai", "chat")]


def request_texts(body: Any) -> str:
    """Every string in a logged request body (the provider's message shapes differ)."""
    return json.dumps(body, ensure_ascii=False)


@pytest.mark.parametrize(("provider", "api"), APIS, ids=["anthropic", "responses", "chat"])
async def test_an_output_schema_that_fails_once_then_passes(
    provider: str, api: Any, tmp_path: Path
) -> None:
    script = {
        "conversations": [
            {
                "name": "forecast",
                "turns": [
                    {"text": '{"city": "Oslo", "temp_c": "cold"}'},
                    {"text": '```json\n{"city": "Oslo", "temp_c": -3.5}\n```'},
                ],
            }
        ]
    }
    async with serve_model_server(script) as server:
        model = create_adapter(
            provider=provider,
            model="scripted-model",
            api_key="sk-test-0000000000",
            base_url=server.url if provider == "anthropic" else server.base_url,
            api=api,
        )
        recorder = Recorder()
        glove = Glove(
            model=model, builtin_tools=False, loop_config=LoopConfig(output_schema=Forecast)
        )
        glove.add_subscriber(recorder).build()
        result = await glove.process_request("Forecast for Oslo?")
        requests = [r for r in server.requests if not r.side]
    assert result.stop == "completed"
    assert result.output == Forecast(city="Oslo", temp_c=-3.5)
    assert len(requests) == 2
    first, second = (request_texts(r.body) for r in requests)
    assert "[Output format] When you give your final answer" in first
    assert "temp_c" in first  # the schema itself was sent (the prompt does not name it)
    # the retry told the model exactly what was wrong
    assert "Your answer does not match the required JSON Schema" in second
    assert "temp_c: Input should be a valid number" in second
    retries = recorder.of("output_retry")
    assert [(r.attempt, r.problems) for r in retries] == [
        (1, ("temp_c: Input should be a valid number, unable to parse string as a number",))
    ]


async def test_the_fenced_or_embedded_json_is_found() -> None:
    assert extract_json(' {"a": 1} ') == {"a": 1}
    assert extract_json('Here:\n```json\n{"a": [1, 2]}\n```\nbye') == {"a": [1, 2]}
    assert extract_json("```\n[1]\n```") == [1]
    assert extract_json("no json here") is None
    assert extract_json("") is None


async def test_a_json_schema_output_is_the_parsed_value() -> None:
    model = ScriptedModel(
        [
            Reply(text='{"city": "Rome", "temp_c": 21, "wind": 3}'),
            Reply(text='{"city": "Rome", "temp_c": 21}'),
        ]
    )
    glove = Glove(
        model=model, builtin_tools=False, loop_config=LoopConfig(output_schema=FORECAST_SCHEMA)
    ).build()
    result = await glove.process_request("Rome?")
    assert result.output == {"city": "Rome", "temp_c": 21}
    retry = model.requests[1].messages
    assert (
        "(answer): Additional properties are not allowed ('wind' was unexpected)" in retry[-2].text
    )


async def test_the_instruction_is_sent_every_call_but_never_stored() -> None:
    model = ScriptedModel(
        [Reply(tool_calls=[("echo", {"text": "x"})]), Reply(text='{"city": "A", "temp_c": 1}')]
    )
    glove = Glove(model=model, builtin_tools=False, loop_config=LoopConfig(output_schema=Forecast))

    from .conftest import EchoInput

    async def echo(inp: EchoInput, ctx: Any) -> str:
        return inp.text

    glove.fold("echo", "Echo.", EchoInput, echo).build()
    await glove.process_request("go")
    for request in model.requests:
        assert request.messages[-1].text.startswith("[Output format] When you give")
    stored = [m.text for m in await glove.store.get_messages()]
    assert not any(t.startswith("[Output format]") for t in stored)


async def test_retries_are_bounded_and_then_the_request_fails() -> None:
    model = ScriptedModel([Reply(text="nope"), Reply(text="{}"), Reply(text='{"city": 1}')])
    glove = Glove(
        model=model,
        builtin_tools=False,
        loop_config=LoopConfig(output_schema=Forecast, output_retries=2),
    ).build()
    with pytest.raises(OutputValidationError) as caught:
        await glove.process_request("go")
    err = caught.value
    assert err.attempts == 3
    assert len(model.requests) == 3
    assert err.problems == ("city: Input should be a valid string", "temp_c: Field required")
    assert err.text == '{"city": 1}'
    assert "after 3 attempts" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert (again.problems, again.attempts, again.text) == (err.problems, 3, err.text)


async def test_zero_retries_fail_on_the_first_bad_answer() -> None:
    model = ScriptedModel([Reply(text="nope")])
    glove = Glove(
        model=model,
        builtin_tools=False,
        loop_config=LoopConfig(output_schema=Forecast, output_retries=0),
    ).build()
    with pytest.raises(OutputValidationError, match="after 1 attempt:"):
        await glove.process_request("go")


async def test_run_end_hooks_see_the_validated_value() -> None:
    seen: list[Any] = []

    class Look(LifecycleHooks):
        async def on_run_end(self, info: RunEndInfo) -> RunAction:
            seen.append(info.value)
            return None

    model = ScriptedModel([Reply(text='{"city": "A", "temp_c": 1}')])
    glove = Glove(
        model=model,
        builtin_tools=False,
        loop_config=LoopConfig(output_schema=Forecast, hooks=(Look(),)),
    ).build()
    await glove.process_request("go")
    assert seen == [Forecast(city="A", temp_c=1)]


def test_an_invalid_output_schema_fails_when_configured() -> None:
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        OutputSchema.of({"type": "nope"})
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        LoopConfig(output_schema={"type": "nope"})


# -- through the adapter -------------------------------------------------------------------------


def scripted_adapter(model: ScriptedModel, **kw: Any) -> NativeAdapter:
    return NativeAdapter(
        model_factory=lambda opts: model, workspace_tools=False, builtin_tools=False, **kw
    )


async def run_once(adapter: NativeAdapter) -> list[Any]:
    run = await adapter.start(TaskHandle(), StartOpts(agent_id="a", session_key="k", message="go"))
    return await collect_run(adapter.events(run), deadline_s=30)


async def test_the_adapter_fails_the_run_with_output_invalid_when_retries_are_spent() -> None:
    model = ScriptedModel([Reply(text="nope"), Reply(text="still nope")])
    async with scripted_adapter(model, output_schema=Forecast, output_retries=1) as adapter:
        events = await run_once(adapter)
    check_stream(events)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [(e.code, e.fatal) for e in errors] == [("output_invalid", True)]
    assert "did not match the output schema after 2 attempts" in errors[0].message
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
    details = [e.detail for e in events if isinstance(e, Status) and e.detail]
    assert any(d.startswith("output_retry 1: (answer): not a JSON value") for d in details)


async def test_the_adapter_finishes_with_the_valid_answer() -> None:
    model = ScriptedModel([Reply(text='{"city": "A", "temp_c": 1}')])
    async with scripted_adapter(model, output_schema=FORECAST_SCHEMA) as adapter:
        events = await run_once(adapter)
    check_stream(events)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
