"""Hooks, skills and sub-agents, rule by rule of ``glove-hooks-skills-subagents.txt``.

Each test is named after the seed rule it checks.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from adapters.native.cancel import CancelToken
from adapters.native.compaction import CompactionConfig
from adapters.native.extensions import (
    SUBAGENT_DISPATCH_TOOL_NAME,
    HookContext,
    HookResult,
    ShortCircuit,
    SkillContext,
    SubAgentFactoryContext,
    parse_tokens,
)
from adapters.native.glove import Glove
from adapters.native.messages import (
    ContentPart,
    ContentSource,
    Message,
    ToolResultData,
    format_tool_result_content,
)
from adapters.native.models.base import ModelResponse, PromptRequest
from adapters.native.models.scripted import Reply, ScriptedModel, Sleep
from adapters.native.stores.memory import MemoryStore
from adapters.native.subscriber import (
    HookInvoked,
    SkillInvoked,
    SubagentCompleted,
    SubagentInvoked,
)

from .conftest import Recorder


def make(model: ScriptedModel, recorder: Recorder | None = None, **kw: Any) -> Glove:
    glove = Glove(model=model, system_prompt="sys", **kw)
    if recorder is not None:
        glove.add_subscriber(recorder)
    return glove.build()


def texts(request: PromptRequest) -> list[str]:
    return [m.text for m in request.messages]


async def noop_hook(ctx: HookContext) -> None:
    await trio.lowlevel.checkpoint()


async def tone(ctx: SkillContext) -> str:
    await trio.lowlevel.checkpoint()
    return f"Be terse. (source={ctx.source}, hint={ctx.args or 'none'})"


def results_of(glove_messages: Any) -> list[ToolResultData]:
    return [r.result for m in glove_messages if m.tool_results for r in m.tool_results]


# -- parsing -----------------------------------------------------------------------------------


def test_parsing_binds_only_registered_names() -> None:
    parsed = parse_tokens("/compact /nope go", {"compact"}.__contains__, lambda n: False)
    assert parsed.text == "[invoked_extension__hook_compact] /nope go"
    assert [(d.kind, d.name) for d in parsed.directives] == [("hook", "compact")]


def test_paths_like_usr_local_bin_survive_untouched() -> None:
    parsed = parse_tokens("run /usr/local/bin/x and /usr", lambda n: True, lambda n: True)
    # "/usr/local/bin/x" is not followed by whitespace after the name; "/usr" at the end binds
    assert parsed.text.startswith("run /usr/local/bin/x and ")


def test_ping_me_at_3pm_keeps_the_slash_when_me_is_not_registered() -> None:
    parsed = parse_tokens("ping /me at 3pm", {"compact"}.__contains__, {"concise"}.__contains__)
    assert parsed.text == "ping /me at 3pm"
    assert parsed.directives == ()


def test_emails_and_at_mentions_are_never_parsed() -> None:
    parsed = parse_tokens("mail a@b.com and @weather NYC", lambda n: True, lambda n: True)
    assert parsed.text == "mail a@b.com and @weather NYC"


def test_directive_regex_needs_whitespace_or_end_after_the_name() -> None:
    parsed = parse_tokens("/stop. x/stop /stop", {"stop"}.__contains__, lambda n: False)
    # a trailing dot fails the lookahead; a slash glued to a word is not a directive
    assert parsed.text == "/stop. x/stop [invoked_extension__hook_stop]"


def test_hooks_win_over_skills_and_repeated_tokens_fire_repeatedly() -> None:
    parsed = parse_tokens("/x /y /x", {"x"}.__contains__, {"x", "y"}.__contains__)
    assert [(d.kind, d.name) for d in parsed.directives] == [
        ("hook", "x"),
        ("skill", "y"),
        ("hook", "x"),
    ]
    assert parsed.text == (
        "[invoked_extension__hook_x] [invoked_extension__skill_y] [invoked_extension__hook_x]"
    )


async def test_builders_that_register_no_extensions_see_no_behavioural_change(
    recorder: Recorder,
) -> None:
    model = ScriptedModel([Reply(text="ok")])
    glove = make(model, recorder)
    await glove.process_request("/compact please")
    assert texts(model.requests[0])[-1] == "/compact please"
    assert not [e for e in recorder.events if e.type in ("hook_invoked", "skill_invoked")]


async def test_placeholder_survives_in_the_persisted_user_message_and_parsed_text() -> None:
    seen: list[tuple[str, str]] = []

    async def hook(ctx: HookContext) -> None:
        await trio.lowlevel.checkpoint()
        seen.append((ctx.raw_text, ctx.parsed_text))

    model = ScriptedModel([Reply(text="ok"), Reply(text="ok")])
    glove = make(model).define_hook("mark", hook)
    await glove.process_request("/mark hello")
    assert seen == [("/mark hello", "[invoked_extension__hook_mark] hello")]
    stored = [m.text for m in await glove.store.get_messages() if m.sender == "user"]
    assert stored == ["[invoked_extension__hook_mark] hello"]
    # the placeholder never re-fires on a later parse
    await glove.process_request("again")
    assert seen == [("/mark hello", "[invoked_extension__hook_mark] hello")]


async def test_register_methods_are_chainable_and_legal_after_build() -> None:
    model = ScriptedModel([Reply(text="ok")])
    glove = make(model)
    assert glove.define_hook("a", noop_hook).define_skill("b", tone) is glove
    await glove.process_request("/b hi")
    assert texts(model.requests[0])[0].startswith("[Skill: b]")


# -- hooks -----------------------------------------------------------------------------------


async def test_hooks_run_sequentially_in_document_order_and_emit_hook_invoked(
    recorder: Recorder,
) -> None:
    order: list[str] = []

    def named(name: str) -> Any:
        async def hook(ctx: HookContext) -> None:
            await trio.lowlevel.checkpoint()
            order.append(f"{name}:{ctx.name}")

        return hook

    model = ScriptedModel([Reply(text="ok")])
    glove = make(model, recorder).define_hook("one", named("1")).define_hook("two", named("2"))
    await glove.process_request("/two then /one")
    assert order == ["2:two", "1:one"]
    assert [e.name for e in recorder.events if isinstance(e, HookInvoked)] == ["two", "one"]


async def test_rewrite_text_replaces_the_working_text_for_later_hooks_skills_and_the_message() -> (
    None
):
    seen: list[str] = []

    async def formal(ctx: HookContext) -> HookResult:
        await trio.lowlevel.checkpoint()
        return HookResult(rewrite_text=ctx.parsed_text.replace("gonna", "going to"))

    async def after(ctx: HookContext) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(ctx.parsed_text)

    async def skill(ctx: SkillContext) -> str:
        await trio.lowlevel.checkpoint()
        seen.append(ctx.parsed_text)
        return "x"

    model = ScriptedModel([Reply(text="ok")])
    glove = make(model).define_hook("formal", formal).define_hook("after", after)
    glove.define_skill("s", skill)
    await glove.process_request("/formal I'm gonna /after go /s")
    rewritten = (
        "[invoked_extension__hook_formal] I'm going to [invoked_extension__hook_after] go "
        "[invoked_extension__skill_s]"
    )
    assert seen == [rewritten, rewritten]
    assert texts(model.requests[0])[-1] == rewritten


async def test_pre_modified_text_keeps_what_the_user_typed_on_a_rewrite() -> None:
    async def upper(ctx: HookContext) -> HookResult:
        await trio.lowlevel.checkpoint()
        return HookResult(rewrite_text=ctx.parsed_text.upper())

    model = ScriptedModel([Reply(text="ok"), Reply(text="ok")])
    glove = make(model).define_hook("up", upper).define_hook("same", noop_hook)
    await glove.process_request("/up hello")
    user = next(m for m in await glove.store.get_messages() if m.sender == "user")
    assert user.text == "[INVOKED_EXTENSION__HOOK_UP] HELLO"
    assert user.pre_modified_text == "/up hello"
    await glove.process_request("/same unchanged")
    last_user = [m for m in await glove.store.get_messages() if m.sender == "user"][-1]
    assert last_user.pre_modified_text is None  # no rewrite, nothing to preserve


async def test_short_circuit_message_persists_the_user_message_and_skips_the_model(
    recorder: Recorder,
) -> None:
    async def stop(ctx: HookContext) -> HookResult:
        await trio.lowlevel.checkpoint()
        return HookResult(
            short_circuit=ShortCircuit(message=Message(sender="agent", text="Stopped."))
        )

    model = ScriptedModel([Reply(text="never")])
    glove = make(model, recorder).define_hook("stop", stop).define_hook("later", noop_hook)
    result = await glove.process_request("/stop /later now")
    assert result.stop == "completed" and result.text == "Stopped."
    assert model.requests == []
    stored = [(m.sender, m.text) for m in await glove.store.get_messages()]
    assert stored == [
        ("user", "[invoked_extension__hook_stop] [invoked_extension__hook_later] now"),
        ("agent", "Stopped."),
    ]
    # the first short-circuit wins: the later hook never ran
    assert [e.name for e in recorder.events if isinstance(e, HookInvoked)] == ["stop"]


async def test_short_circuit_result_returns_the_supplied_model_result() -> None:
    async def canned(ctx: HookContext) -> HookResult:
        await trio.lowlevel.checkpoint()
        return HookResult(short_circuit=ShortCircuit(response=ModelResponse(text="Canned.")))

    model = ScriptedModel([])
    glove = make(model).define_hook("canned", canned)
    result = await glove.process_request("/canned")
    assert result.text == "Canned." and result.response is not None
    assert model.requests == []
    assert (await glove.store.get_messages())[-1].text == "Canned."


async def test_short_circuit_needs_exactly_one_of_message_or_result() -> None:
    await trio.lowlevel.checkpoint()
    with pytest.raises(ValueError, match="exactly one"):
        ShortCircuit()


async def test_force_compaction_runs_compaction_with_start_and_end_events(
    recorder: Recorder,
) -> None:
    async def compact(ctx: HookContext) -> None:
        await ctx.controls.force_compaction()

    model = ScriptedModel([Reply(text="first"), Reply(text="SUMMARY"), Reply(text="after")])
    glove = make(model, recorder, compaction_config=CompactionConfig(compaction_context_limit=None))
    glove.define_hook("compact", compact)
    await glove.process_request("hello")
    await glove.process_request("/compact what's next?")
    assert recorder.types().count("compaction_start") == 1
    assert recorder.types().count("compaction_end") == 1
    context = texts(model.requests[-1])
    assert context[0].startswith("[Conversation summary from compaction]")
    assert "SUMMARY" in context[0]
    assert context[-1] == "[invoked_extension__hook_compact] what's next?"


async def test_a_hook_can_swap_the_model_for_the_turn() -> None:
    strong = ScriptedModel([Reply(text="from opus")], model="opus")

    async def opus(ctx: HookContext) -> None:
        await trio.lowlevel.checkpoint()
        ctx.controls.glove.set_model(strong)

    weak = ScriptedModel([Reply(text="from weak")])
    glove = make(weak).define_hook("opus", opus)
    result = await glove.process_request("/opus think hard")
    assert result.text == "from opus"
    assert weak.requests == [] and len(strong.requests) == 1


async def test_agent_controls_expose_store_display_executor_and_agent() -> None:
    got: dict[str, Any] = {}

    async def inspect(ctx: HookContext) -> None:
        await trio.lowlevel.checkpoint()
        c = ctx.controls
        got.update(store=c.store, display=c.display_manager, executor=c.executor, agent=c.agent)

    glove = make(ScriptedModel([Reply(text="ok")])).define_hook("i", inspect)
    await glove.process_request("/i")
    assert got["store"] is glove.store
    assert got["display"] is glove.display_manager
    assert got["executor"] is glove.agent.executor
    assert got["agent"] is glove.agent


async def test_a_cancel_during_a_hook_ends_the_request_aborted_without_the_model(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def slow(ctx: HookContext) -> None:
        await trio.sleep(100)

    model = ScriptedModel([Reply(text="never")])
    glove = make(model).define_hook("slow", slow)
    token = CancelToken()
    async with trio.open_nursery() as nursery:
        results: list[str] = []

        async def run() -> None:
            results.append((await glove.run_request("/slow", token)).stop)

        nursery.start_soon(run)
        await trio.sleep(1)
        token.cancel()
    assert results == ["aborted"]
    assert model.requests == []


# -- skills ----------------------------------------------------------------------------------


async def test_user_skill_becomes_a_synthetic_user_message_before_the_real_one(
    recorder: Recorder,
) -> None:
    model = ScriptedModel([Reply(text="ok")])
    glove = make(model, recorder).define_skill("concise", tone, description="Tighter")
    await glove.process_request("/concise tell me about Rust")
    msgs = list(await glove.store.get_messages())
    assert msgs[0].is_skill_injection and msgs[0].sender == "user"
    assert msgs[0].text == "[Skill: concise]\nBe terse. (source=user, hint=none)"
    assert not msgs[1].is_skill_injection
    assert msgs[1].text == "[invoked_extension__skill_concise] tell me about Rust"
    assert [(e.name, e.source, e.args) for e in recorder.events if isinstance(e, SkillInvoked)] == [
        ("concise", "user", None)
    ]


async def test_user_skill_parsed_text_has_the_placeholder_and_args_is_none() -> None:
    seen: list[tuple[str, str | None]] = []

    async def skill(ctx: SkillContext) -> str:
        await trio.lowlevel.checkpoint()
        seen.append((ctx.parsed_text, ctx.args))
        return "x"

    glove = make(ScriptedModel([Reply(text="ok")])).define_skill("research-mode", skill)
    await glove.process_request("/research-mode tell me about ribosomes")
    assert seen == [("[invoked_extension__skill_research-mode] tell me about ribosomes", None)]


async def test_user_invoked_skill_works_without_expose_to_agent() -> None:
    model = ScriptedModel([Reply(text="ok")])
    glove = make(model).define_skill("hidden", tone)  # expose_to_agent defaults to False
    await glove.process_request("/hidden x")
    assert texts(model.requests[0])[0].startswith("[Skill: hidden]")
    assert "glove_invoke_skill" not in [t.name for t in model.requests[0].tools]


async def test_content_part_skill_keeps_its_parts_on_the_injected_message() -> None:
    image = ContentPart(
        type="image", source=ContentSource(type="url", media_type="image/png", url="http://x/y")
    )

    async def chart(ctx: SkillContext) -> list[ContentPart]:
        await trio.lowlevel.checkpoint()
        return [ContentPart(type="text", text="see chart"), image]

    glove = make(ScriptedModel([Reply(text="ok")])).define_skill("chart", chart)
    await glove.process_request("/chart")
    injected = (await glove.store.get_messages())[0]
    assert injected.is_skill_injection
    assert injected.text == "[Skill: chart]\nsee chart"
    assert injected.content is not None
    assert [p.type for p in injected.content] == ["text", "text", "image"]


async def test_expose_to_agent_auto_registers_glove_invoke_skill_listing_exposed_skills() -> None:
    model = ScriptedModel([Reply(text="ok")])
    glove = make(model).define_skill("private", tone)
    assert "glove_invoke_skill" not in [t.name for t in glove.tools]
    glove.define_skill("concise", tone, description="Tighter answers", expose_to_agent=True)
    tool = next(t for t in glove.tools if t.name == "glove_invoke_skill")
    assert "- concise: Tighter answers" in tool.description
    assert "private" not in tool.description


async def test_invoke_skill_description_is_rebuilt_when_a_skill_is_defined_after_build() -> None:
    model = ScriptedModel([Reply(text="ok"), Reply(text="ok")])
    glove = make(model).define_skill("a", tone, description="A", expose_to_agent=True)
    await glove.process_request("one")
    glove.define_skill("b", tone, description="B", expose_to_agent=True)
    await glove.process_request("two")
    first, second = (
        next(t for t in r.tools if t.name == "glove_invoke_skill") for r in model.requests
    )
    assert "- b: B" not in first.description
    assert "- a: A" in second.description and "- b: B" in second.description


async def test_agent_invoked_skill_returns_success_data_and_emits_source_agent_with_args(
    recorder: Recorder,
) -> None:
    model = ScriptedModel(
        [
            Reply(tool_calls=[("glove_invoke_skill", {"name": "concise", "args": "brief"})]),
            Reply(text="done"),
        ]
    )
    glove = make(model, recorder).define_skill("concise", tone, expose_to_agent=True)
    await glove.process_request("go")
    [result] = results_of(await glove.store.get_messages())
    assert result.status == "success"
    assert result.data == {"skill": "concise", "content": "Be terse. (source=agent, hint=brief)"}
    assert [(e.source, e.args) for e in recorder.events if isinstance(e, SkillInvoked)] == [
        ("agent", "brief")
    ]


async def test_agent_skill_parsed_text_is_args_or_empty() -> None:
    seen: list[str] = []

    async def skill(ctx: SkillContext) -> str:
        await trio.lowlevel.checkpoint()
        seen.append(ctx.parsed_text)
        return ""

    model = ScriptedModel(
        [Reply(tool_calls=[("glove_invoke_skill", {"name": "s"})]), Reply(text="done")]
    )
    glove = make(model).define_skill("s", skill, expose_to_agent=True)
    await glove.process_request("go")
    assert seen == [""]
    [result] = results_of(await glove.store.get_messages())
    assert result.data == {"skill": "s", "content": "[skill produced no text content]"}


async def test_agent_skill_content_parts_join_text_and_keep_parts_on_render_data() -> None:
    async def parts(ctx: SkillContext) -> list[ContentPart]:
        await trio.lowlevel.checkpoint()
        return [ContentPart(type="text", text="a"), ContentPart(type="text", text="b")]

    model = ScriptedModel(
        [Reply(tool_calls=[("glove_invoke_skill", {"name": "p"})]), Reply(text="done")]
    )
    glove = make(model).define_skill("p", parts, expose_to_agent=True)
    await glove.process_request("go")
    [result] = results_of(await glove.store.get_messages())
    assert result.data == {"skill": "p", "content": "a\nb"}
    assert result.render_data[1] == {"type": "text", "text": "b"}  # the part list itself
    # render data never reaches the model: what it sees is the data only
    assert format_tool_result_content(result) == '{"skill": "p", "content": "a\\nb"}'


async def test_unknown_or_unexposed_skill_is_an_error_result_with_null_data() -> None:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    ("glove_invoke_skill", {"name": "private"}),
                    ("glove_invoke_skill", {"name": "ghost"}),
                ]
            ),
            Reply(text="done"),
        ]
    )
    glove = (
        make(model).define_skill("private", tone).define_skill("open", tone, expose_to_agent=True)
    )
    await glove.process_request("go")
    errors = results_of(await glove.store.get_messages())
    assert [e.status for e in errors] == ["error", "error"]
    assert errors[0].message == "Skill private is not available"  # the seed's text
    assert errors[1].message == "Skill ghost is not available"
    assert all(e.data is None for e in errors)


async def test_dispatch_order_hooks_then_skills_then_the_user_message_with_media() -> None:
    order: list[str] = []

    async def hook(ctx: HookContext) -> None:
        await trio.lowlevel.checkpoint()
        order.append("hook")

    async def skill(ctx: SkillContext) -> str:
        await trio.lowlevel.checkpoint()
        order.append("skill")
        return "ctx"

    model = ScriptedModel([Reply(text="ok")])
    glove = make(model).define_skill("s", skill).define_hook("h", hook)
    image = ContentPart(
        type="image", source=ContentSource(type="base64", media_type="image/png", data="AA==")
    )
    await glove.process_request([ContentPart(type="text", text="/s /h @reviewer look"), image])
    assert order == ["hook", "skill"]
    msgs = list(await glove.store.get_messages())
    assert msgs[0].is_skill_injection
    user = msgs[1]
    assert user.text == ("[invoked_extension__skill_s] [invoked_extension__hook_h] @reviewer look")
    assert user.content is not None and [p.type for p in user.content] == ["text", "image"]


# -- sub-agents ------------------------------------------------------------------------------


def child_factory(
    replies: list[Any], made: list[Glove] | None = None, durable: bool = False
) -> Any:
    async def factory(ctx: SubAgentFactoryContext) -> Glove:
        store = await ctx.parent_store.create_sub_store(ctx.name, durable)
        child = Glove(
            model=ScriptedModel(list(replies)),
            store=store,
            display_manager=ctx.parent_controls.display_manager,
            system_prompt="You answer weather questions concisely.",
        ).build()
        if made is not None:
            made.append(child)
        return child

    return factory


async def test_subagent_dispatch_tool_name_constant() -> None:
    await trio.lowlevel.checkpoint()
    assert SUBAGENT_DISPATCH_TOOL_NAME == "glove_invoke_subagent"


async def test_define_sub_agent_auto_registers_the_dispatch_tool_listing_the_registry() -> None:
    glove = make(ScriptedModel([]))
    assert SUBAGENT_DISPATCH_TOOL_NAME not in [t.name for t in glove.tools]
    glove.define_sub_agent("weather", child_factory([]), description="Weather questions.")
    glove.define_sub_agent("reviewer", child_factory([]), description="Code review.")
    tool = next(t for t in glove.tools if t.name == SUBAGENT_DISPATCH_TOOL_NAME)
    assert "- weather: Weather questions." in tool.description
    assert "- reviewer: Code review." in tool.description
    assert "@" in tool.description  # tells the model to route @mentions through it


async def test_subagent_final_text_is_the_tool_result_and_brackets_are_paired(
    recorder: Recorder,
) -> None:
    model = ScriptedModel(
        [
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "weather", "prompt": "NYC"})]),
            Reply(text="It's sunny in NYC."),
        ]
    )
    glove = make(model, recorder).define_sub_agent(
        "weather", child_factory([Reply(text="Sunny, 21C")])
    )
    await glove.process_request("@weather NYC")
    assert texts(model.requests[0])[-1] == "@weather NYC"  # @mentions reach the model verbatim
    [result] = results_of(await glove.store.get_messages())
    assert result.data == {"subagent": "weather", "content": "Sunny, 21C"}
    kinds = recorder.types()
    opened, closed = kinds.index("subagent_invoked"), kinds.index("subagent_completed")
    assert opened < closed
    # the child's own stream (its text) arrived between the brackets, through the parent's
    # subscribers
    between = recorder.events[opened + 1 : closed]
    assert any(e.type == "text_delta" and e.text == "Sunny, 21C" for e in between)
    invoked = next(e for e in recorder.events if isinstance(e, SubagentInvoked))
    completed = next(e for e in recorder.events if isinstance(e, SubagentCompleted))
    assert (invoked.name, invoked.prompt) == ("weather", "NYC")
    assert (completed.name, completed.status, completed.message) == ("weather", "success", None)


async def test_subagent_factory_runs_once_per_invocation_and_subscribers_are_detached() -> None:
    made: list[Glove] = []
    model = ScriptedModel(
        [
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "w", "prompt": "a"})]),
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "w", "prompt": "b"})]),
            Reply(text="ok"),
        ]
    )
    parent_recorder = Recorder()
    glove = make(model, parent_recorder).define_sub_agent(
        "w", child_factory([Reply(text="x")], made)
    )
    await glove.process_request("go")
    assert len(made) == 2 and made[0] is not made[1]
    assert all(parent_recorder not in child.subscribers for child in made)


async def test_durable_subagent_keeps_history_and_does_not_accumulate_subscribers() -> None:
    parent_store = MemoryStore("parent")
    durable = await parent_store.create_sub_store("planner", durable=True)
    child = Glove(
        model=ScriptedModel([Reply(text="one"), Reply(text="two")]), store=durable
    ).build()

    def factory(ctx: SubAgentFactoryContext) -> Glove:  # a sync factory is fine too
        return child

    model = ScriptedModel(
        [
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "planner", "prompt": "p1"})]),
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "planner", "prompt": "p2"})]),
            Reply(text="ok"),
        ]
    )
    recorder = Recorder()
    glove = make(model, recorder, store=parent_store).define_sub_agent("planner", factory)
    await glove.process_request("go")
    assert [m.text for m in await durable.get_messages()] == ["p1", "one", "p2", "two"]
    assert list(child.subscribers) == []
    # each child text delta reached the parent's subscriber exactly once
    assert [e.text for e in recorder.events if e.type == "text_delta"] == ["one", "two", "ok"]


async def test_fresh_sub_stores_are_new_per_call_durable_ones_are_shared() -> None:
    parent = MemoryStore("p")
    a = await parent.create_sub_store("r", durable=False)
    b = await parent.create_sub_store("r", durable=False)
    c = await parent.create_sub_store("r", durable=True)
    d = await parent.create_sub_store("r", durable=True)
    assert a is not b and a.identifier != b.identifier
    assert c is d


async def test_subagents_do_not_see_the_parent_conversation() -> None:
    made: list[Glove] = []
    model = ScriptedModel(
        [
            Reply(text="warm-up"),
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "w", "prompt": "only this"})]),
            Reply(text="ok"),
        ]
    )
    glove = make(model).define_sub_agent("w", child_factory([Reply(text="x")], made))
    await glove.process_request("secret parent context")
    await glove.process_request("now dispatch")
    child_model = made[0].model
    assert isinstance(child_model, ScriptedModel)
    assert texts(child_model.requests[0]) == ["only this"]


async def test_unknown_subagent_returns_an_error_listing_registered_names() -> None:
    model = ScriptedModel(
        [
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "ghost", "prompt": "x"})]),
            Reply(text="ok"),
        ]
    )
    glove = make(model).define_sub_agent("weather", child_factory([]))
    await glove.process_request("go")
    [result] = results_of(await glove.store.get_messages())
    assert result.status == "error" and result.data is None
    assert result.message == 'Subagent "ghost" is not registered. Use one of: weather.'


async def test_factory_throwing_is_an_error_result_and_the_bracket_closes_with_error(
    recorder: Recorder,
) -> None:
    def broken(ctx: SubAgentFactoryContext) -> Glove:
        raise RuntimeError("no model configured")

    model = ScriptedModel(
        [
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "b", "prompt": "x"})]),
            Reply(text="ok"),
        ]
    )
    glove = make(model, recorder).define_sub_agent("b", broken)
    await glove.process_request("go")
    [result] = results_of(await glove.store.get_messages())
    assert result.message == 'Subagent "b" factory threw: no model configured'
    [closed] = [e for e in recorder.events if isinstance(e, SubagentCompleted)]
    assert closed.status == "error" and closed.message == result.message


async def test_child_run_failing_is_an_error_result() -> None:
    def unbuilt(ctx: SubAgentFactoryContext) -> Glove:
        return Glove(model=ScriptedModel([]))  # build() not called: the contract is broken

    model = ScriptedModel(
        [
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "u", "prompt": "x"})]),
            Reply(text="ok"),
        ]
    )
    glove = make(model).define_sub_agent("u", unbuilt)
    await glove.process_request("go")
    [result] = results_of(await glove.store.get_messages())
    assert result.status == "error"
    assert result.message is not None and result.message.startswith('Subagent "u" failed:')
    assert "build()" in result.message


async def test_subagent_cancelled_with_its_parent_closes_its_bracket(
    recorder: Recorder, autojump_clock: trio.testing.MockClock
) -> None:
    made: list[Glove] = []
    model = ScriptedModel(
        [
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "slow", "prompt": "x"})]),
            Reply(text="never"),
        ]
    )
    glove = make(model, recorder).define_sub_agent(
        "slow", child_factory([Sleep(1000), Reply(text="late")], made)
    )
    token = CancelToken(grace_s=1)
    outcome: list[str] = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            outcome.append((await glove.run_request("go", token)).stop)

        nursery.start_soon(run)
        await trio.sleep(5)
        assert made and made[0].busy  # the child is mid-run
        token.cancel()
    assert outcome == ["aborted"]
    assert not made[0].busy
    opened = [e for e in recorder.events if isinstance(e, SubagentInvoked)]
    closed = [e for e in recorder.events if isinstance(e, SubagentCompleted)]
    assert len(opened) == len(closed) == 1
    assert closed[0].status == "error"
    assert closed[0].message == 'Subagent "slow" run was cancelled.'  # its real status
    assert trio.current_time() < 100  # the child's 1000 s model call was cut short


async def test_multiple_subagents_in_one_message_each_get_their_own_bracket(
    recorder: Recorder,
) -> None:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    (SUBAGENT_DISPATCH_TOOL_NAME, {"name": "reviewer", "prompt": "r"}),
                    (SUBAGENT_DISPATCH_TOOL_NAME, {"name": "architect", "prompt": "a"}),
                ]
            ),
            Reply(text="ok"),
        ]
    )
    glove = make(model, recorder)
    glove.define_sub_agent("reviewer", child_factory([Reply(text="LGTM")]))
    glove.define_sub_agent("architect", child_factory([Reply(text="Split it")]))
    await glove.process_request("@reviewer @architect please discuss this design")
    brackets = [
        (e.type, e.name)
        for e in recorder.events
        if isinstance(e, SubagentInvoked | SubagentCompleted)
    ]
    assert brackets == [
        ("subagent_invoked", "reviewer"),
        ("subagent_completed", "reviewer"),
        ("subagent_invoked", "architect"),
        ("subagent_completed", "architect"),
    ]
    contents = [r.data["content"] for r in results_of(await glove.store.get_messages())]
    assert contents == ["LGTM", "Split it"]


async def test_nested_subagents_stop_at_the_depth_limit() -> None:
    def recursive(ctx: SubAgentFactoryContext) -> Glove:
        child = Glove(
            model=ScriptedModel(
                [
                    Reply(
                        tool_calls=[
                            (SUBAGENT_DISPATCH_TOOL_NAME, {"name": "r", "prompt": "deeper"})
                        ]
                    ),
                    Reply(text="unwound"),
                ]
            )
        )
        return child.define_sub_agent("r", recursive).build()

    model = ScriptedModel(
        [
            Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": "r", "prompt": "go"})]),
            Reply(text="top"),
        ]
    )
    glove = make(model).define_sub_agent("r", recursive)
    result = await glove.process_request("go")
    assert result.text == "top"
    [top_result] = results_of(await glove.store.get_messages())
    assert top_result.data == {"subagent": "r", "content": "unwound"}
