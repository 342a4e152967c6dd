"""``ToolSet``: Anvia's named collection of tools, shared between agents.

::

    shared = ToolSet([weather, clock])
    agent = AgentBuilder("support", model).use_tool_set(shared).build()
    agent.tool_set.names()  # ["clock", "get_weather"] — the agent's tools as a ToolSet

A later tool with a name already in the set replaces it (keeping its place). ``AnviaAgent(tools=)``
takes a ``ToolSet`` as well as a list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from adapters.native.tools import Tool

__all__ = ["ToolSet"]


class ToolSet:
    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool[Any]) -> ToolSet:
        self._tools[tool.name] = tool
        return self

    def add_all(self, tools: Iterable[Tool[Any]]) -> ToolSet:
        for tool in tools:
            self.add(tool)
        return self

    def remove(self, name: str) -> ToolSet:
        self._tools.pop(name, None)
        return self

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    @property
    def tools(self) -> tuple[Tool[Any], ...]:
        return tuple(self._tools.values())

    def __iter__(self) -> Iterator[Tool[Any]]:
        return iter(tuple(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools
