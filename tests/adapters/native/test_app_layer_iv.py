"""Issue 36, Glove app layer (``glove-hooks-skills-subagents.txt``): each test named after a rule
the native runtime did not follow before, with the seed's examples."""

from __future__ import annotations

from typing import Any

from adapters.native import (
    SKILL_INVOKE_TOOL_NAME,
    SUBAGENT_DISPATCH_TOOL_NAME,
    CancelToken,
    ContentPart,
    Glove,
    LoopConfig,
    Message,
    ModelResponse,
    ScriptedModel,
    SkillContext,
    SubAgentFactoryContext,
    create_skill_invoke_tool,
    create_sub_agent_invoke_tool,
    format_skill_message,
    parse_tokens,
    render_skill_listing,
)
from adapters.native.content_skills import SkillSummary
from adapters.native.models.scripted import Reply
from adapters.native.subscriber import SubagentCompleted

from .conftest import Recorder


def invoke(name: str, prompt: str) -> Reply:
    return Reply(tool_calls=[(SUBAGENT_DISPATCH_TOOL_NAME, {"name": name, "prompt": prompt})])


async def tool_results(glove: Glove) -> list[Any]:
    out: list[Any] = []
    for m in await glove.store.get_messages():
        out += [r.result for r in m.tool_results or ()]
    return out


class ApiProxy:
    """The seed's "external agent / API proxy": a minimal runnable that is not a Glove."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    async def process_request(self, request: str, cancel: CancelToken | None = None) -> Any:
        self.prompts.append(request)
        return self.answer


async def test_sub_agent_factories_may_return_any_runnable_the_seed_allows() -> None:
    proxies = {
        "proxy": ApiProxy(Message(sender="agent", text="from the proxy")),  # a Message
        "external": ApiProxy(ModelResponse(text="from the external agent")),  # a prompt result
        "plain": ApiProxy("from a plain string"),
    }

    def factory_for(name: str) -> Any:
        def factory(ctx: SubAgentFactoryContext) -> ApiProxy:
            return proxies[name]

        return factory

    async def responder(ctx: SubAgentFactoryContext) -> Glove:  # the seed's deterministic responder
        return Glove(model=ScriptedModel([Reply(text="canned")])).build()

    model = ScriptedModel(
        [
            invoke("proxy", "a"),
            invoke("external", "b"),
            invoke("plain", "c"),
            invoke("glove", "d"),
            Reply(text="done"),
        ]
    )
    glove = Glove(model=model)
    for name in proxies:
        glove.define_sub_agent(name, factory_for(name))
    glove.define_sub_agent("glove", responder).build()
    await glove.process_request("@proxy @external @plain @glove")
    contents = [r.data["content"] for r in await tool_results(glove)]
    assert contents == [
        "from the proxy",
        "from the external agent",
        "from a plain string",
        "canned",
    ]
    assert proxies["proxy"].prompts == ["a"]


async def test_the_sub_agent_bracket_closes_with_the_sub_runs_real_status() -> None:
    recorder = Recorder()

    async def looping(ctx: SubAgentFactoryContext) -> Glove:
        calls = [Reply(tool_calls=[("nothing", {})])] * 3
        return Glove(model=ScriptedModel(calls), loop_config=LoopConfig(max_model_calls=2)).build()

    async def broken(ctx: SubAgentFactoryContext) -> ApiProxy:
        raise RuntimeError("no such service")

    async def fine(ctx: SubAgentFactoryContext) -> ApiProxy:
        return ApiProxy("ok")

    model = ScriptedModel(
        [invoke("looping", "x"), invoke("broken", "y"), invoke("fine", "z"), Reply(text="end")]
    )
    glove = Glove(model=model).add_subscriber(recorder)
    glove.define_sub_agent("looping", looping).define_sub_agent("broken", broken)
    await glove.define_sub_agent("fine", fine).build().process_request("go")
    closed = [
        (e.name, e.status, e.message) for e in recorder.events if isinstance(e, SubagentCompleted)
    ]
    assert closed == [
        (
            "looping",
            "error",
            'Subagent "looping" stopped at its cap of model calls before answering.',
        ),
        ("broken", "error", 'Subagent "broken" factory threw: no such service'),
        ("fine", "success", None),
    ]
    assert all("aborted by the user" not in (m or "") for _, _, m in closed)


def test_the_omitted_skills_comment_is_the_seeds_text() -> None:
    skills = [SkillSummary(f"skill-{i:03}", "a description") for i in range(100)]
    listing = render_skill_listing(skills, budget_tokens=50).splitlines()
    shown = sum(1 for line in listing if line.startswith("<skill "))
    assert listing[-2] == f"<!-- {100 - shown} more skills omitted -->"


async def test_the_unknown_skill_error_is_the_seeds_text_and_a_part_list_is_render_data() -> None:
    async def research(ctx: SkillContext) -> list[ContentPart]:
        return [
            ContentPart(type="text", text="Switch into research mode."),
            ContentPart(type="text", text="Cite."),
        ]

    model = ScriptedModel(
        [
            Reply(tool_calls=[(SKILL_INVOKE_TOOL_NAME, {"name": "research-mode", "args": "x"})]),
            Reply(tool_calls=[(SKILL_INVOKE_TOOL_NAME, {"name": "ghost"})]),
            Reply(text="ok"),
        ]
    )
    glove = Glove(model=model).define_skill("research-mode", research, expose_to_agent=True)
    await glove.build().process_request("research ribosomes")
    parts, unknown = await tool_results(glove)
    # text parts joined into data.content; the full part list itself on renderData
    assert parts.data == {"skill": "research-mode", "content": "Switch into research mode.\nCite."}
    assert parts.render_data == [
        {"type": "text", "text": "Switch into research mode."},
        {"type": "text", "text": "Cite."},
    ]
    # { status: "error", message: "Skill ... is not available", data: null }
    assert (unknown.status, unknown.message, unknown.data) == (
        "error",
        "Skill ghost is not available",
        None,
    )


async def test_the_seeds_public_helpers_for_the_skill_and_sub_agent_invoke_tools_are_exported() -> (
    None
):
    async def concise(ctx: SkillContext) -> str:
        return "Be terse."

    glove = Glove(model=ScriptedModel()).define_skill(
        "concise", concise, description="Tighter, snappier responses", expose_to_agent=True
    )
    glove.define_sub_agent("weather", lambda ctx: ApiProxy("sunny"), description="Weather.")
    skill_tool = create_skill_invoke_tool(glove)
    sub_tool = create_sub_agent_invoke_tool(glove)
    assert skill_tool.name == "glove_invoke_skill" and "concise: Tighter" in skill_tool.description
    assert sub_tool.name == "glove_invoke_subagent" and "weather: Weather." in sub_tool.description
    parsed = parse_tokens("/concise tell me", lambda n: False, lambda n: n == "concise")
    assert parsed.text == "[invoked_extension__skill_concise] tell me"
    message = format_skill_message("concise", "Be terse.")
    assert message.is_skill_injection and "Be terse." in message.text
