"""``AgentBuilder``: Anvia's fluent builder for :class:`~.agent.AnviaAgent` (the seed's
preferred way for application code). Every mutator returns the builder; ``build()`` validates
and returns the immutable agent. ``instructions`` and ``context`` are repeatable (blocks in
order); ``tool`` / ``tools`` with a name already given replace that tool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from adapters.native.lifecycle import LifecycleHooks, ModelMiddleware
from adapters.native.mcp import McpServer
from adapters.native.models.base import ModelAdapter, ToolChoice
from adapters.native.structured import OutputSpec
from adapters.native.tools import Tool
from orchestrator.core.approvals import ApprovalHandler

from .agent import AnviaAgent
from .memory import AgentMemory, SavePolicy
from .observe import (
    AgentEventStore,
    AgentEventStoreInclude,
    AgentObserver,
    ObserveOptions,
    ObserverFn,
    ObserverRegistration,
)
from .retrieval import Document, DynamicContext, DynamicTools, SearchIndex
from .skills import SkillSet
from .toolset import ToolSet

__all__ = ["AgentBuilder"]


class AgentBuilder:
    def __init__(self, agent_id: str, model: ModelAdapter) -> None:
        self._options: dict[str, Any] = {"id": agent_id, "model": model}
        self._instructions: list[str] = []
        self._context: list[Document] = []
        self._tools: list[Tool[Any]] = []
        self._dynamic_contexts: list[DynamicContext] = []
        self._dynamic_tools: list[DynamicTools] = []

    def _set(self, name: str, value: Any) -> Self:
        self._options[name] = value
        return self

    def name(self, name: str) -> Self:
        return self._set("name", name)

    def description(self, description: str) -> Self:
        return self._set("description", description)

    def instructions(self, instructions: str) -> Self:
        self._instructions.append(instructions)
        return self

    def context(self, text: str, id: str | None = None) -> Self:
        self._context.append(Document(id or f"static_doc_{len(self._context)}", text))
        return self

    def dynamic_context(
        self,
        index: SearchIndex[Any],
        *,
        top_k: int,
        threshold: float | None = None,
        filter: Mapping[str, str] | None = None,
    ) -> Self:
        self._dynamic_contexts.append(DynamicContext(index, top_k, threshold, filter))
        return self

    def dynamic_tools(
        self,
        tool_set: Sequence[Tool[Any]],
        *,
        top_k: int,
        index: SearchIndex[Any] | None = None,
        threshold: float | None = None,
    ) -> Self:
        self._dynamic_tools.append(DynamicTools(tuple(tool_set), top_k, index, threshold))
        return self

    def tool(self, tool: Tool[Any]) -> Self:
        self._tools.append(tool)
        return self

    def tools(self, tools: Sequence[Tool[Any]]) -> Self:
        self._tools.extend(tools)
        return self

    def use_tool_set(self, tool_set: ToolSet) -> Self:
        """Every tool of ``tool_set`` (Anvia's ``useToolSet``; a later tool of the same name
        replaces an earlier one)."""
        self._tools.extend(tool_set)
        return self

    def observe(
        self, observer: AgentObserver | ObserverFn, options: ObserveOptions | None = None
    ) -> Self:
        """Tell ``observer`` every event of every run (repeatable; :mod:`.observe`)."""
        registration = ObserverRegistration(observer, options or ObserveOptions())
        self._options["observers"] = (*self._options.get("observers", ()), registration)
        return self

    def event_store(
        self, store: AgentEventStore, *, include: AgentEventStoreInclude = "all"
    ) -> Self:
        """Record every run's events in ``store`` (``load(run_id)`` replays them)."""
        self._set("event_store", store)
        return self._set("event_store_include", include)

    def mcp(self, servers: Sequence[McpServer]) -> Self:
        """Connect these MCP servers on every run (their tools: ``mcp__<server>__<tool>``)."""
        return self._set("mcp_servers", tuple(servers))

    def hook(self, hook: LifecycleHooks) -> Self:
        """A lifecycle hook (repeatable: hooks run in the order given)."""
        self._options["hooks"] = (*self._options.get("hooks", ()), hook)
        return self

    def middleware(self, middleware: ModelMiddleware) -> Self:
        self._options["middlewares"] = (*self._options.get("middlewares", ()), middleware)
        return self

    def middlewares(self, middlewares: Sequence[ModelMiddleware]) -> Self:
        self._options["middlewares"] = (*self._options.get("middlewares", ()), *middlewares)
        return self

    def output_schema(self, schema: OutputSpec) -> Self:
        return self._set("output_schema", schema)

    def skills(self, skills: SkillSet) -> Self:
        return self._set("skills", skills)

    def temperature(self, temperature: float) -> Self:
        return self._set("temperature", temperature)

    def max_tokens(self, max_tokens: int) -> Self:
        return self._set("max_tokens", max_tokens)

    def additional_params(self, params: dict[str, Any]) -> Self:
        return self._set("additional_params", params)

    def tool_choice(self, tool_choice: ToolChoice) -> Self:
        return self._set("tool_choice", tool_choice)

    def default_max_turns(self, default_max_turns: int) -> Self:
        return self._set("default_max_turns", default_max_turns)

    def memory(self, store: AgentMemory, *, save_policy: SavePolicy = "message") -> Self:
        self._set("memory", store)
        return self._set("save_policy", save_policy)

    def approvals(self, handler: ApprovalHandler) -> Self:
        """Decide tool approvals with ``handler`` (a request's ``approvals`` overrides it)."""
        return self._set("approvals", handler)

    def build(self) -> AnviaAgent:
        return AnviaAgent(
            **self._options,
            instructions=self._instructions or None,
            static_context=self._context,
            tools=self._tools,
            dynamic_contexts=self._dynamic_contexts,
            dynamic_tools=self._dynamic_tools,
        )
