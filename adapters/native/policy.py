"""The native runtime's permission policy: ``allow``, ``ask`` or ``deny`` per kind of tool.

Every tool call passes the policy after its input is validated (:mod:`.executor`):

* ``allow`` runs the tool;
* ``deny`` returns a ``denied`` error result to the model (the run goes on);
* ``ask`` goes to the adapter's ``permission_handler`` (the decision is cached per exact input
  in the session store); **without a handler, ``ask`` denies** (fail-closed).

Categories: ``read`` (``read_file``, ``list_files``, ``glob``, ``grep``), ``write``
(``write_file``, ``edit_file``), ``bash``; ``tools`` overrides any tool by name (custom tools
included; a custom tool not named there keeps its own ``requires_permission`` flag).

The default, :data:`WORKSPACE_WRITE`, is what a headless coding agent is expected to do unattended:
read and write files — which are confined to the run's workspace by construction — but not run
shell commands, which no path check can confine, unless the user allows ``bash``
(``PermissionPolicy.preset("full-access")`` or ``PermissionPolicy(bash="allow")``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, TypeAlias, cast, get_args

import attrs

from orchestrator.core.errors import ConfigError

__all__ = [
    "FULL_ACCESS",
    "PRESETS",
    "READ_ONLY",
    "TOOL_CATEGORIES",
    "WORKSPACE_WRITE",
    "Decision",
    "PermissionPolicy",
    "ToolCategory",
]

Decision: TypeAlias = Literal["allow", "ask", "deny"]
ToolCategory: TypeAlias = Literal["read", "write", "bash"]

TOOL_CATEGORIES: Final[Mapping[str, ToolCategory]] = {
    "read_file": "read",
    "list_files": "read",
    "glob": "read",
    "grep": "read",
    "write_file": "write",
    "edit_file": "write",
    "bash": "bash",
}
"""The built-in workspace tools and the policy category each belongs to."""

_DECISIONS: Final = frozenset(get_args(Decision))


def _decision(value: str, where: str) -> Decision:
    if value not in _DECISIONS:
        raise ConfigError(f"permission {where}: {value!r} is not one of allow, ask, deny")
    return cast(Decision, value)


def _tool_decisions(value: Mapping[str, str]) -> Mapping[str, Decision]:
    return {name: _decision(d, f"for tool {name!r}") for name, d in value.items()}


@attrs.frozen
class PermissionPolicy:
    """What each kind of tool may do without asking (see the module docstring)."""

    read: Decision = attrs.field(default="allow", validator=lambda _i, _a, v: _decision(v, "read"))
    write: Decision = attrs.field(
        default="allow", validator=lambda _i, _a, v: _decision(v, "write")
    )
    bash: Decision = attrs.field(default="ask", validator=lambda _i, _a, v: _decision(v, "bash"))
    tools: Mapping[str, Decision] = attrs.field(
        factory=dict[str, Decision], converter=_tool_decisions
    )
    """Per-tool overrides by tool name; they win over the categories."""

    @classmethod
    def preset(cls, name: str) -> PermissionPolicy:
        """``read-only``, ``workspace-write`` (the default) or ``full-access``."""
        try:
            return PRESETS[name]
        except KeyError:
            raise ConfigError(
                f"unknown permission preset {name!r}; known: {', '.join(sorted(PRESETS))}"
            ) from None

    def decision_for(self, tool_name: str) -> Decision | None:
        """The policy's decision for a tool, or ``None`` when it has no say (a custom tool)."""
        if tool_name in self.tools:
            return self.tools[tool_name]
        category = TOOL_CATEGORIES.get(tool_name)
        if category is None:
            return None
        return getattr(self, category)


READ_ONLY: Final = PermissionPolicy(read="allow", write="deny", bash="deny")
WORKSPACE_WRITE: Final = PermissionPolicy(read="allow", write="allow", bash="ask")
FULL_ACCESS: Final = PermissionPolicy(read="allow", write="allow", bash="allow")
PRESETS: Final[Mapping[str, PermissionPolicy]] = {
    "read-only": READ_ONLY,
    "workspace-write": WORKSPACE_WRITE,
    "full-access": FULL_ACCESS,
}
