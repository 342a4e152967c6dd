"""Skill sets for the Anvia agent: a listing appended to the instructions plus a read tool.

``await skill_set(skills)`` builds a :class:`SkillSet` from content skills (or any
:class:`~adapters.native.content_skills.SkillReader`, e.g. the ``SKILL.md`` directories
:func:`~adapters.native.content_skills.load_content_skills_from_fs` reads). The agent appends
its ``instructions`` (a token-budgeted ``<available_skills>`` listing) after its own and
registers its ``tools`` (``read_skill``: a skill's body or one of its sections, by name).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from adapters.native.content_skills import (
    DEFAULT_LISTING_BUDGET_TOKENS,
    READ_SKILL_TOOL_NAME,
    ContentSkill,
    MemorySkillReader,
    SkillReader,
    create_read_skill_tool,
    render_skill_listing,
)
from adapters.native.tools import Tool

__all__ = ["SKILL_TOOL_NAME", "SkillSet", "skill_set"]

SKILL_TOOL_NAME = "read_skill"


@attrs.frozen
class SkillSet:
    instructions: str
    tools: tuple[Tool[Any], ...]
    names: tuple[str, ...] = ()


async def skill_set(
    skills: Sequence[ContentSkill] | SkillReader,
    *,
    listing_budget_tokens: int = DEFAULT_LISTING_BUDGET_TOKENS,
    tool_name: str = SKILL_TOOL_NAME,
) -> SkillSet:
    """The skill set of ``skills`` (see the module docstring)."""
    reader = skills if isinstance(skills, SkillReader) else MemorySkillReader(skills)
    listing = await reader.list()
    instructions = (
        f"You have skills: instructions you load with the `{tool_name}` tool when a task "
        "matches one (pass `section` to read one of its sections).\n"
        + render_skill_listing(listing, listing_budget_tokens).replace(
            READ_SKILL_TOOL_NAME, tool_name
        )
    )
    tool = create_read_skill_tool(
        reader, "Load a skill's instructions (or one of its sections) by name.", tool_name
    )
    return SkillSet(instructions, (tool,), tuple(s.name for s in listing if not s.hidden))
