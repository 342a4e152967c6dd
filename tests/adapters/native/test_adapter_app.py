"""The app layer through the ``RuntimeAdapter`` trait: hooks, skills and sub-agents as status
details, built-in tools as ordinary tool events, sub-agent cost rolled into the parent's, and
``.claude/skills`` loaded from the run's workspace."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from adapters.native import DISPLAY_KEY_PREFIX, NativeAdapter
from adapters.native.extensions import (
    SUBAGENT_DISPATCH_TOOL_NAME,
    HookContext,
    HookResult,
    ShortCircuit,
    SkillContext,
    SubAgentFactoryContext,
)
from adapters.native.glove import Glove
from adapters.native.messages import Message
from adapters.native.messages import ToolCall as NativeCall
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.tasks_inbox import TASK_TOOL_NAME
from adapters.native.tools import Tool, ToolContext
from contract import check_stream, collect_run
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import (
    Cost,
    Done,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
)

from .conftest import CityInput


def start_opts(cwd: Path, message: str) -> StartOpts:
    return StartOpts(agent_id="a", session_key="k", message=message, cwd=str(cwd))


async def run(adapter: NativeAdapter, opts: StartOpts) -> list[RuntimeEvent]:
    handle = await adapter.start(TaskHandle(), opts)
    events = await collect_run(adapter.events(handle), deadline_s=30)
    check_stream(events)
    return events


def details(events: list[RuntimeEvent]) -> list[str]:
    return [e.detail or "" for e in events if isinstance(e, Status)]


async def test_app_setup_hooks_skills_and_subagents_reach_the_event_stream(tmp_path: Path) -> None:
    parent = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    (
                        TASK_TOOL_NAME,
                        {
                            "todos": [
                                {"content": "Ask", "activeForm": "Asking", "status": "in_progress"}
                            ]
                        },
                    ),
                    (SUBAGENT_DISPATCH_TOOL_NAME, {"name": "weather", "prompt": "NYC?"}),
                ],
                tokens_in=100,
                tokens_out=10,
            ),
            Reply(text="Sunny.", tokens_in=200, tokens_out=20),
        ],
        model="m",
    )

    async def mark(ctx: HookContext) -> None:
        await trio.lowlevel.checkpoint()

    async def concise(ctx: SkillContext) -> str:
        await trio.lowlevel.checkpoint()
        return "Be terse."

    def weather(ctx: SubAgentFactoryContext) -> Glove:
        child = ScriptedModel([Reply(text="21C", tokens_in=1000, tokens_out=100)], model="m")
        return Glove(model=child).build()

    def app(glove: Glove, opts: StartOpts) -> None:
        glove.define_hook("mark", mark).define_skill("concise", concise)
        glove.define_sub_agent("weather", weather, description="Weather.")

    async with NativeAdapter(model_factory=lambda o: parent, app=app) as adapter:
        events = await run(adapter, start_opts(tmp_path, "/mark /concise @weather NYC"))
    seen = details(events)
    assert "hook_invoked: mark" in seen
    assert "skill_invoked: concise (user)" in seen
    opened = seen.index("subagent_invoked: weather")
    closed = seen.index("subagent_completed: weather (success)")
    assert opened < closed
    calls = {e.tool_call_id: e.name for e in events if isinstance(e, ToolCall)}
    by_name = {calls[e.tool_call_id]: e for e in events if isinstance(e, ToolResult)}
    assert not by_name[TASK_TOOL_NAME].is_error  # built-in tools are ordinary tool events
    assert '"content": "21C"' in by_name[SUBAGENT_DISPATCH_TOOL_NAME].output
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).endswith("Sunny.")
    # the sub-agent's usage is part of the run's cumulative cost
    last_cost = [e for e in events if isinstance(e, Cost)][-1]
    assert last_cost.usage.input_tokens == 100 + 1000 + 200
    assert last_cost.usage.output_tokens == 10 + 100 + 20
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success" and done.summary == "Sunny."
    # what the model saw: the skill injection, then the user text with placeholders
    sent = [m.text for m in parent.requests[0].messages]
    assert sent[0] == "[Skill: concise]\nBe terse."
    assert sent[-1].endswith(
        "[invoked_extension__hook_mark] [invoked_extension__skill_concise] @weather NYC"
    )


async def test_a_short_circuit_hook_ends_the_run_with_its_message(tmp_path: Path) -> None:
    async def stop(ctx: HookContext) -> HookResult:
        await trio.lowlevel.checkpoint()
        return HookResult(short_circuit=ShortCircuit(message=Message(sender="agent", text="No.")))

    model = ScriptedModel([Reply(text="never")])

    async def app(glove: Glove, opts: StartOpts) -> None:
        await trio.lowlevel.checkpoint()
        glove.define_hook("stop", stop)

    async with NativeAdapter(model_factory=lambda o: model, app=app) as adapter:
        events = await run(adapter, start_opts(tmp_path, "/stop"))
    assert model.requests == []
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["No."]
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success" and done.summary == "No."


async def test_claude_skills_in_the_workspace_are_loaded_as_content_skills(tmp_path: Path) -> None:
    skill = tmp_path / ".claude" / "skills" / "review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: How we review.\n---\nCheck tests first.")
    (skill / "checklist.md").write_text("- tests\n- docs")
    model = ScriptedModel(
        [
            Reply(tool_calls=[("glove_read_skill", {"name": "review", "section": "checklist"})]),
            Reply(text="ok"),
        ]
    )
    async with NativeAdapter(model_factory=lambda o: model) as adapter:
        events = await run(adapter, start_opts(tmp_path, "/review this PR"))
    tools: dict[str, Any] = {t.name: t for t in model.requests[0].tools}
    assert '<skill name="review" sections="checklist">How we review.</skill>' in (
        tools["glove_read_skill"].description
    )
    assert model.requests[0].messages[0].text == "[Skill: review]\nCheck tests first."
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert result.output.startswith('<skill name="review"')
    assert "- tests\n- docs" in result.output
    async with NativeAdapter(model_factory=lambda o: model, skills_dir=None) as adapter:
        model.push(Reply(text="plain"))
        await run(adapter, start_opts(tmp_path, "hi"))
    assert "glove_read_skill" not in [t.name for t in model.requests[-1].tools]


async def test_readme_app_layer_example_runs() -> None:
    """The native runtime page's (docs/runtimes/native.md) example (a tool with a display slot, a hook, a skill, a sub-agent) works."""
    readme = (Path(__file__).resolve().parents[3] / "docs" / "runtimes" / "native.md").read_text()
    section = readme[readme.index("## The native runtime's app layer") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    namespace: dict[str, Any] = {}
    exec(compile(match.group(1), "docs/runtimes/native.md", "exec"), namespace)
    agent: Glove = namespace["agent"]
    display = namespace["display"]
    agent.set_model(
        ScriptedModel(
            [
                Reply(
                    tool_calls=[
                        ("checkout", {"item": "coffee"}),
                        (SUBAGENT_DISPATCH_TOOL_NAME, {"name": "reviewer", "prompt": "PR #123"}),
                    ]
                ),
                Reply(text="Ordered, and reviewed."),
            ]
        )
    )
    async with trio.open_nursery() as nursery:
        outcome: list[str] = []

        async def request() -> None:
            outcome.append((await agent.process_request("/concise @reviewer buy + review")).text)

        nursery.start_soon(request)
        await trio.testing.wait_all_tasks_blocked()
        [slot] = display.pending()
        assert (slot.renderer, slot.input) == ("confirm", {"item": "coffee"})
        await display.resolve(slot.id, True)
    assert outcome == ["Ordered, and reviewed."]
    messages = await agent.store.get_messages()
    assert messages[0].text == "[Skill: concise]\nBe terse."
    outputs = [r.result.data for m in messages if m.tool_results for r in m.tool_results]
    assert outputs[0] == "ordered"
    assert outputs[1] == {"subagent": "reviewer", "content": "done"}  # the child's scripted default


async def test_display_slots_are_status_details_answered_through_write_context(
    tmp_path: Path,
) -> None:
    async def confirm(value: CityInput, ctx: ToolContext) -> str:
        answer = await ctx.push_and_wait({"city": value.city}, "confirm")
        return f"answer={answer}"

    tool = Tool(name="confirm", description="Ask.", do=confirm, input_model=CityInput)
    model = ScriptedModel(
        [Reply(tool_calls=[("confirm", {"city": "Oslo"})]), Reply(text="ok")], model="m"
    )
    async with NativeAdapter(
        model_factory=lambda o: model, tools=[tool], display=True, workspace_tools=False
    ) as adapter:
        handle = await adapter.start(TaskHandle(), start_opts(tmp_path, "go"))
        stream = adapter.events(handle)
        events: list[RuntimeEvent] = []
        with trio.fail_after(30):
            async for event in stream:
                events.append(event)
                if isinstance(event, Status) and (event.detail or "").startswith(
                    "display: slot_1 pending"
                ):
                    break
            with pytest.raises(ConfigError, match="not waiting"):
                await adapter.write_context(handle, DISPLAY_KEY_PREFIX + "slot_9", "1")
            await adapter.write_context(handle, DISPLAY_KEY_PREFIX + "slot_1", '{"yes": true}')
            events += await collect_run(stream, deadline_s=30)
    check_stream(events)
    seen = details(events)
    assert "display: slot_1 pending confirm (tool confirm)" in seen
    assert "display: slot_1 removed" in seen
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert result.output == "answer={'yes': True}"
    assert isinstance(events[-1], Done) and events[-1].reason == "success"


def dispatch(call_id: str, name: str) -> NativeCall:
    """A ``glove_invoke_subagent`` call with its own id (each scripted model numbers its calls
    from 1, and one stream must not carry two open calls with the same id)."""
    return NativeCall(
        tool_name=SUBAGENT_DISPATCH_TOOL_NAME, input_args={"name": name, "prompt": "go"}, id=call_id
    )


async def test_subagent_events_are_tagged_with_the_parent_run_and_the_agent(
    tmp_path: Path,
) -> None:
    """Between its brackets, every event the sub-agent caused says so (``parentRunId``: the run
    carrying it, ``agentId``: which sub-agent, ``outer/inner`` when nested); its words go to
    the reasoning channel, so the run's answer stays the parent's."""
    from orchestrator.core.events import event_from_json, event_to_json

    parent = ScriptedModel(
        [
            Reply(tool_calls=[dispatch("parent-call", "outer")]),
            Reply(text="Parent answer.", tokens_in=5, tokens_out=1),
        ],
        model="m",
    )

    def inner(ctx: SubAgentFactoryContext) -> Glove:
        return Glove(model=ScriptedModel([Reply(text="inner words")], model="m")).build()

    def outer(ctx: SubAgentFactoryContext) -> Glove:
        model = ScriptedModel(
            [
                Reply(
                    text="outer thinking",
                    tool_calls=[dispatch("outer-call", "inner")],
                ),
                Reply(text="outer words"),
            ],
            model="m",
        )
        child = Glove(model=model)
        child.define_sub_agent("inner", inner, description="Inner.")
        return child.build()

    def app(glove: Glove, opts: StartOpts) -> None:
        glove.define_sub_agent("outer", outer, description="Outer.")

    async with NativeAdapter(model_factory=lambda o: parent, app=app) as adapter:
        events = await run(adapter, start_opts(tmp_path, "start"))
    run_id = events[0].run_id
    seen = details(events)
    assert seen.count("subagent_invoked: outer") == 1
    opened = next(
        i for i, e in enumerate(events) if getattr(e, "detail", "") == "subagent_invoked: outer"
    )
    closed = next(
        i
        for i, e in enumerate(events)
        if (getattr(e, "detail", "") or "").startswith("subagent_completed: outer")
    )
    inside = events[opened + 1 : closed]
    outside = events[: opened + 1] + events[closed:]
    assert inside and all(e.parent_run_id == run_id for e in inside)
    assert {e.agent_id for e in inside} == {"outer", "outer/inner"}
    assert all(e.parent_run_id is None and e.agent_id is None for e in outside)
    words = {
        e.agent_id: e.text for e in inside if isinstance(e, TextDelta) and e.text.endswith("words")
    }
    assert words == {"outer/inner": "inner words", "outer": "outer words"}
    assert all(e.channel == "reasoning" for e in inside if isinstance(e, TextDelta))
    done = events[-1]
    assert isinstance(done, Done) and done.summary == "Parent answer."
    # on the wire: camelCase tags on a sub-agent's events, none on the run's own
    tagged = next(e for e in inside if isinstance(e, TextDelta))
    wire = event_to_json(tagged)
    assert f'"parentRunId":"{run_id}"' in wire and '"agentId":"outer' in wire
    assert event_from_json(wire) == tagged
    assert "parentRunId" not in event_to_json(events[0])
