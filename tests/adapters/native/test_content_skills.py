"""Content skills: ``use_read_skill``, ``glove_read_skill``, the listing budget, the FS loader.

Test names follow the "Content skills" rules of ``glove-hooks-skills-subagents.txt``.
"""

from __future__ import annotations

import os
from pathlib import Path

import trio

from adapters.native.content_skills import (
    DEFAULT_LISTING_BUDGET_TOKENS,
    READ_SKILL_TOOL_NAME,
    ContentSkill,
    MemorySkillReader,
    SkillReadResult,
    SkillSummary,
    default_listing_budget_tokens,
    load_content_skills_from_fs,
    render_skill_listing,
    render_skill_read_result_xml,
    use_read_skill,
)
from adapters.native.glove import Glove
from adapters.native.messages import ToolResultData
from adapters.native.models.scripted import Reply, ScriptedModel

PY = ContentSkill(
    name="python-debug",
    description="Diagnose Python errors and apply fix patterns.",
    content="# Python Debugging\n\nRead tracebacks bottom-up...",
    path="/skills/python-debug",
    sections={"api-reference": "# API\npdb.set_trace()...", "examples": "# Examples\n..."},
)
GIT = ContentSkill(
    name="git-workflow",
    description="Branch / commit / PR conventions for this repo.",
    content="# Git\nNever force-push main...",
)
SECRET = ContentSkill(name="internal-ops", description="Ops runbook.", content="ops", hidden=True)


def results(messages: object) -> list[ToolResultData]:
    return [r.result for m in messages if m.tool_results for r in m.tool_results]  # type: ignore[attr-defined]


def read_calls(*calls: dict[str, str]) -> ScriptedModel:
    return ScriptedModel(
        [Reply(tool_calls=[(READ_SKILL_TOOL_NAME, c) for c in calls]), Reply(text="ok")]
    )


async def test_glove_read_skill_main_body_xml_with_sections_list() -> None:
    model = read_calls({"name": "python-debug"})
    glove = Glove(model=model).build()
    await use_read_skill(glove, [PY, GIT])
    await glove.process_request("help")
    [result] = results(await glove.store.get_messages())
    assert result.status == "success"
    assert result.data == (
        '<skill name="python-debug" path="/skills/python-debug">\n<content>\n'
        "# Python Debugging\n\nRead tracebacks bottom-up...\n</content>\n"
        "<sections>api-reference,examples</sections>\n</skill>"
    )
    # the raw read result is on render_data for client renderers
    assert result.render_data["available_sections"] == ("api-reference", "examples")


async def test_glove_read_skill_section_read_adds_a_section_attribute() -> None:
    model = read_calls({"name": "python-debug", "section": "examples"})
    glove = Glove(model=model).build()
    await use_read_skill(glove, [PY])
    await glove.process_request("help")
    [result] = results(await glove.store.get_messages())
    assert result.data == (
        '<skill name="python-debug" path="/skills/python-debug" section="examples">\n'
        "<content>\n# Examples\n...\n</content>\n</skill>"
    )


async def test_missing_skill_or_section_is_an_error_that_never_leaks_hidden_names() -> None:
    model = read_calls(
        {"name": "nope"}, {"name": "python-debug", "section": "nope"}, {"name": "internal-ops"}
    )
    glove = Glove(model=model).build()
    await use_read_skill(glove, [PY, GIT, SECRET])
    await glove.process_request("help")
    missing, no_section, hidden = results(await glove.store.get_messages())
    assert missing.status == "error" and missing.data is None
    assert missing.message == 'Skill "nope" not found. Known skills: git-workflow, python-debug.'
    assert no_section.message == (
        'Skill "python-debug" (section "nope") not found. Known skills: git-workflow, python-debug.'
    )
    assert "internal-ops" not in (missing.message or "") + (no_section.message or "")
    # hidden skills are still readable by name
    assert hidden.status == "success" and "<content>\nops\n</content>" in hidden.data


async def test_listing_is_embedded_in_the_tool_description_and_hidden_skills_are_not_listed() -> (
    None
):
    model = ScriptedModel([Reply(text="ok")])
    glove = Glove(model=model).build()
    await use_read_skill(glove, [PY, GIT, SECRET], description_suffix="Prefer api-reference.")
    await glove.process_request("hi")
    [tool] = [t for t in model.requests[0].tools if t.name == READ_SKILL_TOOL_NAME]
    assert "<available_skills>" in tool.description
    assert (
        '<skill name="python-debug" sections="api-reference,examples">Diagnose Python errors '
        "and apply fix patterns.</skill>" in tool.description
    )
    assert "internal-ops" not in tool.description
    assert tool.description.endswith("Prefer api-reference.")


def test_listing_budget_default_is_2000_tokens_and_two_percent_helper() -> None:
    assert DEFAULT_LISTING_BUDGET_TOKENS == 2000
    assert default_listing_budget_tokens(100_000) == 2000
    assert default_listing_budget_tokens(1_000) == 256


def test_listing_budget_sorts_by_priority_then_falls_back_to_name_only_lines() -> None:
    skills = [SkillSummary(f"s{i:02}", "d" * 60, priority=1 if i == 7 else 0) for i in range(10)]
    listing = render_skill_listing(skills, budget_tokens=60)  # 240 characters
    lines = listing.splitlines()
    assert lines[0] == "<available_skills>" and lines[-1] == "</available_skills>"
    assert lines[1].startswith('<skill name="s07">')  # highest priority first
    full = [ln for ln in lines if ln.endswith("</skill>")]
    name_only = [ln for ln in lines if ln.endswith("/>")]
    assert full and name_only
    assert name_only[0] == '<skill name="s01" />'
    assert len(listing) <= 240 or lines[-2].startswith("<!--")


def test_listing_budget_cut_off_renders_an_omitted_comment() -> None:
    skills = [SkillSummary(f"skill-{i:03}", "a description") for i in range(200)]
    listing = render_skill_listing(skills, budget_tokens=100)  # 400 characters
    lines = listing.splitlines()
    shown = sum(1 for ln in lines if ln.startswith("<skill "))
    omitted = 200 - shown
    assert lines[-2] == f"<!-- {omitted} more skills omitted -->"  # the seed's exact comment
    assert shown + omitted == 200
    assert len("\n".join(lines[:-2] + lines[-1:])) <= 400


def test_xml_escaping_of_attributes_and_description() -> None:
    listing = render_skill_listing([SkillSummary('a"b', "x < y & z")])
    assert '<skill name="a&quot;b">x &lt; y &amp; z</skill>' in listing
    xml = render_skill_read_result_xml(SkillReadResult("n", "d", "<raw> & kept"))
    assert "<content>\n<raw> & kept\n</content>" in xml  # content verbatim, no CDATA


async def test_user_side_directive_materialises_the_skill_content() -> None:
    model = ScriptedModel([Reply(text="ok")])
    glove = Glove(model=model).build()
    await use_read_skill(glove, [PY])
    await glove.process_request("/python-debug let's debug this")
    first = model.requests[0].messages[0]
    assert first.is_skill_injection
    assert first.text == "[Skill: python-debug]\n# Python Debugging\n\nRead tracebacks bottom-up..."


async def test_wire_user_directives_false_and_tool_name_override() -> None:
    model = ScriptedModel([Reply(text="ok")])
    glove = Glove(model=model).build()
    await use_read_skill(glove, [PY], wire_user_directives=False, tool_name="load_doc")
    await glove.process_request("/python-debug x")
    assert model.requests[0].messages[0].text == "/python-debug x"
    assert "load_doc" in [t.name for t in model.requests[0].tools]


async def test_content_skills_are_never_listed_in_glove_invoke_skill() -> None:
    async def tone(ctx: object) -> str:
        await trio.lowlevel.checkpoint()
        return "terse"

    glove = Glove(model=ScriptedModel([])).build()
    glove.define_skill("concise", tone, description="Terse", expose_to_agent=True)
    await use_read_skill(glove, [PY])
    [invoke] = [t for t in glove.tools if t.name == "glove_invoke_skill"]
    assert "python-debug" not in invoke.description
    assert "concise" in invoke.description


async def test_a_custom_reader_is_accepted() -> None:
    reader = MemorySkillReader([GIT])
    model = read_calls({"name": "git-workflow"})
    glove = Glove(model=model).build()
    await use_read_skill(glove, reader)
    await glove.process_request("x")
    [result] = results(await glove.store.get_messages())
    assert "Never force-push main" in result.data


async def test_fs_loader_reads_the_claude_skills_layout(tmp_path: Path) -> None:
    root = tmp_path / ".claude" / "skills"
    (root / "python-debug").mkdir(parents=True)
    (root / "python-debug" / "SKILL.md").write_text(
        "---\nname: py-debug\ndescription: Debug Python.\npriority: 5\n---\n# Body\n"
    )
    (root / "python-debug" / "api-reference.md").write_text("# API")
    (root / "python-debug" / "examples.md").write_text("# Examples")
    (root / "python-debug" / "notes.txt").write_text("not a section")
    (root / "git-workflow").mkdir()
    (root / "git-workflow" / "SKILL.md").write_text("# Git\n")
    (root / "ops").mkdir()
    (root / "ops" / "SKILL.md").write_text("---\nhidden: true\n---\nops")
    (root / "empty").mkdir()  # no SKILL.md: not a skill
    skills = {s.name: s for s in await load_content_skills_from_fs(root)}
    assert sorted(skills) == ["git-workflow", "ops", "py-debug"]
    py = skills["py-debug"]
    assert (py.description, py.priority, py.content) == ("Debug Python.", 5, "# Body\n")
    assert dict(py.sections) == {"api-reference": "# API", "examples": "# Examples"}
    assert py.path == os.path.join(root, "python-debug")
    assert skills["git-workflow"].description == "Skill loaded from git-workflow."
    assert skills["ops"].hidden
    assert await load_content_skills_from_fs(tmp_path / "missing") == []


async def test_fs_loader_never_follows_a_symlink_out_of_the_skills_directory(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("TOP SECRET")
    root = tmp_path / "skills"
    (root / "s").mkdir(parents=True)
    (root / "s" / "SKILL.md").write_text("body")
    (root / "s" / "leak.md").symlink_to(outside)
    (root / "linked-dir").symlink_to(tmp_path, target_is_directory=True)
    [skill] = await load_content_skills_from_fs(root)
    assert "leak" not in skill.sections
    assert "TOP SECRET" not in repr(skill)
