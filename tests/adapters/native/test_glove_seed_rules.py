"""Rules of ``glove-core-concepts.txt`` and ``glove-core-api.txt``, one test named after each
rule that no other native test names (the display manager's rules are in ``test_display.py``,
the task tool's and the inbox's in ``test_tasks_inbox.py``; hooks, skills and sub-agents in
``test_extensions.py``; content skills in ``test_content_skills.py``)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from adapters.native.compaction import CompactionConfig
from adapters.native.display import DisplayManager
from adapters.native.glove import Glove
from adapters.native.messages import Message, ToolResultData, format_tool_result_content
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.stores.memory import MemoryStore
from adapters.native.tools import ToolContext

from .conftest import CityInput, Recorder


async def weather(value: CityInput, ctx: ToolContext) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {"city": value.city, "temp": 21}


# -- core concepts: the agent loop --------------------------------------------------------------


async def test_agent_loop_the_ai_either_answers_with_text_or_calls_tools_until_it_answers() -> None:
    model = ScriptedModel(
        [
            Reply(tool_calls=[("get_weather", {"city": "Tokyo"})]),
            Reply(tool_calls=[("get_weather", {"city": "Oslo"})]),
            Reply(text="Tokyo 21, Oslo 21."),
        ]
    )
    glove = Glove(model=model).fold("get_weather", "Weather.", CityInput, weather).build()
    result = await glove.process_request("weather in Tokyo and Oslo?")
    assert result.text == "Tokyo 21, Oslo 21." and result.turns == 3
    # step 1: the user message is added to history; step 4: results are added before step 2
    assert model.requests[0].messages[-1].text == "weather in Tokyo and Oslo?"
    second = model.requests[1].messages
    assert second[-1].tool_results is not None
    assert second[-1].tool_results[0].result.data == {"city": "Tokyo", "temp": 21}
    # step 2: the AI reads the full conversation and the list of available tools
    assert "get_weather" in [t.name for t in model.requests[2].tools]
    assert len(model.requests[2].messages) == 5


async def test_the_ai_decides_which_tools_to_call_and_in_what_order() -> None:
    model = ScriptedModel(
        [
            Reply(tool_calls=[("get_weather", {"city": "B"}), ("get_weather", {"city": "A"})]),
            Reply(text="ok"),
        ]
    )
    glove = Glove(model=model).fold("get_weather", "Weather.", CityInput, weather).build()
    await glove.process_request("x")
    results = model.requests[1].messages[-1].tool_results
    assert results is not None
    assert [r.result.data["city"] for r in results] == ["B", "A"]


# -- core api: Glove builder --------------------------------------------------------------------


async def test_fold_and_add_subscriber_return_the_builder_for_chaining() -> None:
    glove = Glove(model=ScriptedModel([]))
    assert glove.fold("get_weather", "Weather.", CityInput, weather) is glove
    assert glove.add_subscriber(Recorder()) is glove
    assert glove.build() is glove


async def test_display_manager_is_a_read_only_property_of_the_runnable() -> None:
    await trio.lowlevel.checkpoint()
    dm = DisplayManager()
    glove = Glove(model=ScriptedModel([]), display_manager=dm).build()
    assert glove.display_manager is dm
    with pytest.raises(AttributeError):
        glove.display_manager = DisplayManager()  # type: ignore[misc]


async def test_set_model_replaces_the_model_adapter_at_runtime() -> None:
    first = ScriptedModel([Reply(text="one")])
    second = ScriptedModel([Reply(text="two")])
    glove = Glove(model=first, system_prompt="sys").build()
    assert (await glove.process_request("a")).text == "one"
    glove.set_model(second)
    assert (await glove.process_request("b")).text == "two"
    assert second.system_prompt == "sys"  # the new adapter gets the system prompt


async def test_max_retries_is_passed_to_the_executor() -> None:
    await trio.lowlevel.checkpoint()
    glove = Glove(model=ScriptedModel([]), max_retries=7).build()
    assert glove.agent.executor.max_retries == 7


# -- core api: context and compaction --------------------------------------------------------------


async def test_context_get_messages_splits_at_the_last_compaction_store_keeps_everything() -> None:
    store = MemoryStore()
    await store.append_messages(
        [
            Message(sender="user", text="old"),
            Message(sender="user", text="summary 1", is_compaction=True),
            Message(sender="user", text="middle"),
            Message(sender="user", text="summary 2", is_compaction=True),
            Message(sender="user", text="new"),
        ]
    )
    assert [m.text for m in await store.get_context_messages()] == ["summary 2", "new"]
    assert len(await store.get_messages()) == 5


async def test_compaction_is_history_preserving_and_resets_counters() -> None:
    recorder = Recorder()
    model = ScriptedModel([Reply(text="a", tokens_in=50, tokens_out=5), Reply(text="SUM")])
    glove = (
        Glove(model=model, compaction_config=CompactionConfig(compaction_context_limit=None))
        .add_subscriber(recorder)
        .build()
    )
    await glove.process_request("first")
    assert await glove.store.get_turn_count() == 1
    summary = await glove.compact()
    everything = await glove.store.get_messages()
    assert [m.text for m in everything[:2]] == ["first", "a"]  # nothing deleted
    assert everything[-1] is summary and summary.is_compaction
    assert await glove.store.get_turn_count() == 0
    assert await glove.store.get_token_count() == 0  # resetCounters(): both counts to zero
    assert recorder.types()[-2:] == ["compaction_end", "token_consumption"]
    assert "compaction_start" in recorder.types()


# -- core api: subscriber events ------------------------------------------------------------------


async def test_subscribers_receive_text_delta_tool_use_tool_use_result_and_model_response() -> None:
    recorder = Recorder()
    model = ScriptedModel(
        [Reply(text="t", tool_calls=[("get_weather", {"city": "x"})]), Reply(text="ok")]
    )
    glove = (
        Glove(model=model)
        .fold("get_weather", "Weather.", CityInput, weather)
        .add_subscriber(recorder)
        .build()
    )
    await glove.process_request("x")
    kinds = recorder.types()
    for kind in ("text_delta", "tool_use", "tool_use_result", "model_response_complete"):
        assert kind in kinds
    [result] = recorder.of("tool_use_result")
    assert (result.tool_name, result.call_id, result.result.status) == (
        "get_weather",
        "call_1",
        "success",
    )
    # Glove's aliases
    assert (result.name, result.id) == ("get_weather", "call_1")


async def test_non_streaming_adapters_emit_one_model_response_per_prompt_call() -> None:
    recorder = Recorder()
    model = ScriptedModel([Reply(text="hi")], stream=False)
    glove = Glove(model=model).add_subscriber(recorder).build()
    await glove.process_request("x")
    assert recorder.types().count("model_response") == 1
    assert "model_response_complete" not in recorder.types()


# -- core api: tool results --------------------------------------------------------------------


async def test_tool_result_data_render_data_is_kept_in_the_store_but_not_sent_to_the_model() -> (
    None
):
    async def secret(value: CityInput, ctx: ToolContext) -> ToolResultData:
        await trio.lowlevel.checkpoint()
        return ToolResultData(status="success", data="ok", render_data={"email": "a@b.com"})

    model = ScriptedModel([Reply(tool_calls=[("secret", {"city": "x"})]), Reply(text="done")])
    glove = Glove(model=model).fold("secret", "S.", CityInput, secret).build()
    await glove.process_request("x")
    stored = [r for m in await glove.store.get_messages() if m.tool_results for r in m.tool_results]
    assert stored[0].result.render_data == {"email": "a@b.com"}
    assert "a@b.com" not in format_tool_result_content(stored[0].result)
