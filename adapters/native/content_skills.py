"""Content skills: static, sectioned skill bundles read lazily through ``glove_read_skill``.

A :class:`ContentSkill` is data (a main body, optional named sections, a priority, a ``hidden``
flag). :func:`use_read_skill` folds the ``glove_read_skill`` tool onto a Glove; the tool's
description embeds a token-budgeted ``<available_skills>`` listing (:func:`render_skill_listing`),
and each skill is also wired as a user-side ``/name`` directive that injects its main body.

The listing budget is ``budget_tokens × 4`` characters (default 2000 tokens). Skills are sorted by
priority (high first), then name; full lines ``<skill name=".." sections="a,b">description</skill>``
fill greedily while they fit, later skills fall back to a name-only ``<skill name=".." />`` line
while space remains, and the rest become ``<!-- N more skills omitted -->`` (the seed's text). Hidden
skills are never listed and never named in an error, but can be read by name.

:func:`load_content_skills_from_fs` reads Claude Code's ``.claude/skills/<name>/SKILL.md`` layout
(``key: value`` front matter ``name``, ``description``, ``priority``, ``hidden``; sibling ``.md``
files become sections). Every file is opened *beneath* the skills directory
(:mod:`adapters._confine`), so a symlink that points outside it is refused, never followed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs
import trio
from pydantic import BaseModel, Field

from adapters._confine import EscapeError, open_beneath, read_beneath

from .extensions import SkillContext, SkillHandler
from .messages import ToolResultData
from .tools import Tool, ToolContext

if TYPE_CHECKING:
    from .glove import Glove

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_LISTING_BUDGET_TOKENS",
    "READ_SKILL_TOOL_NAME",
    "ContentSkill",
    "MemorySkillReader",
    "SkillReadResult",
    "SkillReader",
    "SkillSummary",
    "create_read_skill_tool",
    "default_listing_budget_tokens",
    "load_content_skills_from_fs",
    "render_read_skill_description",
    "render_skill_listing",
    "render_skill_read_result_xml",
    "use_read_skill",
]

READ_SKILL_TOOL_NAME = "glove_read_skill"
DEFAULT_LISTING_BUDGET_TOKENS = 2000
CHARS_PER_TOKEN = 4
MAX_SKILL_FILE_BYTES = 1 << 20


@attrs.frozen
class ContentSkill:
    name: str
    description: str
    content: str
    path: str | None = None
    """Where the skill lives (a directory, a URL, a key), returned with its content."""
    sections: Mapping[str, str] = attrs.field(factory=dict[str, str])
    priority: int = 0
    hidden: bool = False


@attrs.frozen
class SkillSummary:
    name: str
    description: str
    sections: tuple[str, ...] = ()
    priority: int = 0
    hidden: bool = False
    path: str | None = None


@attrs.frozen
class SkillReadResult:
    name: str
    description: str
    content: str
    path: str | None = None
    section: str | None = None
    available_sections: tuple[str, ...] = ()


@runtime_checkable
class SkillReader(Protocol):
    async def list(self) -> list[SkillSummary]: ...
    async def read(self, name: str, section: str | None = None) -> SkillReadResult | None: ...


class MemorySkillReader:
    """A :class:`SkillReader` over a list of :class:`ContentSkill` (later names win)."""

    def __init__(self, skills: Sequence[ContentSkill]) -> None:
        self._skills = {s.name: s for s in skills}

    async def list(self) -> list[SkillSummary]:
        await trio.lowlevel.checkpoint()
        return [
            SkillSummary(s.name, s.description, tuple(s.sections), s.priority, s.hidden, s.path)
            for s in self._skills.values()
        ]

    async def read(self, name: str, section: str | None = None) -> SkillReadResult | None:
        await trio.lowlevel.checkpoint()
        skill = self._skills.get(name)
        if skill is None:
            return None
        sections = tuple(skill.sections)
        if section is None:
            return SkillReadResult(
                skill.name, skill.description, skill.content, skill.path, None, sections
            )
        body = skill.sections.get(section)
        if body is None:
            return None
        return SkillReadResult(skill.name, skill.description, body, skill.path, section, sections)


# -- rendering ---------------------------------------------------------------------------------


def _esc(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def default_listing_budget_tokens(compaction_limit: int) -> int:
    """2% of a compaction limit, at least 256 tokens."""
    return max(256, compaction_limit * 2 // 100)


def render_skill_listing(
    skills: Sequence[SkillSummary], budget_tokens: int = DEFAULT_LISTING_BUDGET_TOKENS
) -> str:
    """The ``<available_skills>`` block, cut to ``budget_tokens`` (see the module docstring)."""
    visible = sorted((s for s in skills if not s.hidden), key=lambda s: (-s.priority, s.name))
    budget = budget_tokens * CHARS_PER_TOKEN
    head, tail = "<available_skills>", "</available_skills>"
    used = len(head) + len(tail) + 2
    lines: list[str] = []
    index = 0
    while index < len(visible):
        s = visible[index]
        attrs_ = f' sections="{_esc(",".join(s.sections))}"' if s.sections else ""
        line = f'<skill name="{_esc(s.name)}"{attrs_}>{_esc(s.description)}</skill>'
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
        index += 1
    while index < len(visible):
        line = f'<skill name="{_esc(visible[index].name)}" />'
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
        index += 1
    omitted = len(visible) - index
    if omitted:
        lines.append(f"<!-- {omitted} more skills omitted -->")
    return "\n".join([head, *lines, tail])


def render_read_skill_description(
    skills: Sequence[SkillSummary],
    budget_tokens: int = DEFAULT_LISTING_BUDGET_TOKENS,
    suffix: str = "",
) -> str:
    text = (
        "Load a skill's instructions by name. Omit `section` for the main body and the list of "
        "its sections; pass `section` to read one of them. The skills available:\n"
        + render_skill_listing(skills, budget_tokens)
    )
    return f"{text}\n{suffix}" if suffix else text


def render_skill_read_result_xml(result: SkillReadResult) -> str:
    """``<skill name=".." path=".." section=".."><content>…</content><sections>a,b</sections>``."""
    attrs_ = f'name="{_esc(result.name)}"'
    if result.path:
        attrs_ += f' path="{_esc(result.path)}"'
    if result.section:
        attrs_ += f' section="{_esc(result.section)}"'
    parts = [f"<skill {attrs_}>", "<content>", result.content, "</content>"]
    if result.section is None and result.available_sections:
        parts.append(f"<sections>{','.join(result.available_sections)}</sections>")
    parts.append("</skill>")
    return "\n".join(parts)


# -- the tool and the wiring ---------------------------------------------------------------------


class ReadSkillInput(BaseModel):
    name: str = Field(description="The skill's name, as listed.")
    section: str | None = Field(default=None, description="A section to read instead of the body.")


def create_read_skill_tool(
    reader: SkillReader, description: str, tool_name: str = READ_SKILL_TOOL_NAME
) -> Tool[ReadSkillInput]:
    async def read(value: ReadSkillInput, ctx: ToolContext) -> ToolResultData:
        del ctx
        result = await reader.read(value.name, value.section)
        if result is None:
            known = ", ".join(sorted(s.name for s in await reader.list() if not s.hidden))
            what = f'Skill "{value.name}"'
            if value.section is not None:
                what += f' (section "{value.section}")'
            return ToolResultData(
                status="error",
                message=f"{what} not found. Known skills: {known or '(none)'}.",
                error_kind="not_found",
            )
        return ToolResultData(
            status="success",
            data=render_skill_read_result_xml(result),
            render_data=attrs.asdict(result),
        )

    return Tool(name=tool_name, description=description, do=read, input_model=ReadSkillInput)


async def use_read_skill(
    glove: Glove,
    skills: Sequence[ContentSkill] | SkillReader,
    *,
    listing_budget_tokens: int = DEFAULT_LISTING_BUDGET_TOKENS,
    tool_name: str = READ_SKILL_TOOL_NAME,
    description_suffix: str = "",
    wire_user_directives: bool = True,
) -> Tool[ReadSkillInput]:
    """Fold the read tool (listing in its description) and, by default, the ``/name``
    directives that inject each skill's main body. Content skills are never listed in
    ``glove_invoke_skill``."""
    reader = skills if isinstance(skills, SkillReader) else MemorySkillReader(skills)
    listing = await reader.list()
    description = render_read_skill_description(listing, listing_budget_tokens, description_suffix)
    read_tool = create_read_skill_tool(reader, description, tool_name)
    glove.add_tool(read_tool)
    if wire_user_directives:
        for summary in listing:
            glove.define_skill(summary.name, _body_of(reader, summary.name), expose_to_agent=False)
    return read_tool


def _body_of(reader: SkillReader, name: str) -> SkillHandler:
    async def handler(ctx: SkillContext) -> str:
        del ctx
        result = await reader.read(name)
        return result.content if result is not None else f"[skill {name} is no longer available]"

    return handler


# -- loading from disk ---------------------------------------------------------------------------


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            meta: dict[str, str] = {}
            for raw in lines[1:end]:
                key, sep, value = raw.partition(":")
                if sep and key.strip():
                    meta[key.strip()] = value.strip().strip("'\"")
            return meta, "\n".join(lines[end + 1 :]).lstrip("\n")
    return {}, text


def _list_dir(root_fd: int, rel: str) -> list[tuple[str, bool]]:
    """(name, is_dir) entries of ``rel`` beneath ``root_fd`` (symlinks reported as files)."""
    fd = open_beneath(root_fd, rel, os.O_RDONLY | os.O_DIRECTORY)
    try:
        out: list[tuple[str, bool]] = []
        for name in sorted(os.listdir(fd)):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            out.append((name, stat.S_ISDIR(st.st_mode)))
        return out
    finally:
        os.close(fd)


def _load_sync(
    root: str, main_file: str, section_extensions: tuple[str, ...]
) -> list[ContentSkill]:
    if not Path(root).is_dir():
        return []
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        skills: list[ContentSkill] = []
        for dirname, is_dir in _list_dir(root_fd, "."):
            if not is_dir or dirname.startswith("."):
                continue
            entries = dict(_list_dir(root_fd, dirname))
            if main_file not in entries:
                continue
            try:
                raw = read_beneath(root_fd, f"{dirname}/{main_file}", MAX_SKILL_FILE_BYTES)
            except EscapeError:
                continue
            meta, body = _front_matter(raw.decode("utf-8", "replace"))
            sections: dict[str, str] = {}
            for fname, sub_is_dir in entries.items():
                stem, ext = os.path.splitext(fname)
                if sub_is_dir or fname == main_file or ext not in section_extensions:
                    continue
                try:
                    data = read_beneath(root_fd, f"{dirname}/{fname}", MAX_SKILL_FILE_BYTES)
                except EscapeError:
                    continue  # a symlink out of the skills directory is never followed
                sections[stem] = data.decode("utf-8", "replace")
            try:
                priority = int(meta.get("priority", "0"))
            except ValueError:
                priority = 0
            skills.append(
                ContentSkill(
                    name=meta.get("name") or dirname,
                    description=meta.get("description") or f"Skill loaded from {dirname}.",
                    content=body,
                    path=os.path.join(root, dirname),
                    sections=sections,
                    priority=priority,
                    hidden=meta.get("hidden", "").lower() == "true",
                )
            )
        return skills
    finally:
        os.close(root_fd)


async def load_content_skills_from_fs(
    root: str | os.PathLike[str],
    *,
    main_file: str = "SKILL.md",
    section_extensions: Sequence[str] = (".md",),
) -> list[ContentSkill]:
    """Each ``<root>/<dir>/SKILL.md`` as a :class:`ContentSkill` (see the module docstring).

    A missing ``root`` gives an empty list; files are read beneath ``root`` only."""
    path = os.fspath(root)
    return await trio.to_thread.run_sync(_load_sync, path, main_file, tuple(section_extensions))
