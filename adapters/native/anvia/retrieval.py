"""Dynamic context and dynamic tools, evaluated before every model turn (Anvia's dynamic context and tools).

A :class:`SearchIndex` answers ``search(query, top_k, threshold, filter)`` with scored
results; plug in any vector store. :class:`KeywordIndex` is the built-in one: documents scored by
the share of the query's words they contain (no embedding model needed).

* :class:`DynamicContext` — the top results become documents, sent after the static context as
  one user message of ``<file id: …>`` blocks (not stored in the conversation);
* :class:`DynamicTools` — the top tool definitions are sent after the static tools, deduplicated
  by name; the tools themselves are reachable through ``agent.get_tool``.

The query is the text of the run's latest user message. Anvia queries with the tool-result text
after turn 1 (B.20 #6: retrieval drifts toward tool output); we do not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs
import trio

from adapters.native.messages import Message
from adapters.native.tools import Tool

__all__ = [
    "Document",
    "DynamicContext",
    "DynamicTools",
    "KeywordIndex",
    "SearchIndex",
    "SearchResult",
    "query_text",
    "render_documents",
    "tool_index",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

_WORD = re.compile(r"[a-z0-9]+")


@attrs.frozen
class Document:
    """A context document (Anvia's ``Document``): rendered as ``<file id: …>``."""

    id: str
    text: str
    additional_props: Mapping[str, str] = attrs.field(factory=dict[str, str])


@attrs.frozen
class SearchResult(Generic[T]):
    id: str
    score: float
    document: T
    text: str
    metadata: Mapping[str, str] = attrs.field(factory=dict[str, str])


class SearchIndex(Protocol[T_co]):
    async def search(
        self,
        query: str,
        top_k: int,
        threshold: float | None = None,
        filter: Mapping[str, str] | None = None,
    ) -> Sequence[SearchResult[Any]]: ...


class KeywordIndex(Generic[T]):
    """An in-memory index scoring each entry by the share of query words it contains."""

    def __init__(self) -> None:
        self._entries: list[tuple[str, T, str, Mapping[str, str], frozenset[str]]] = []

    def add(
        self, id: str, document: T, text: str, metadata: Mapping[str, str] | None = None
    ) -> None:
        words = frozenset(_WORD.findall(text.lower()))
        self._entries.append((id, document, text, dict(metadata or {}), words))

    async def search(
        self,
        query: str,
        top_k: int,
        threshold: float | None = None,
        filter: Mapping[str, str] | None = None,
    ) -> Sequence[SearchResult[T]]:
        await trio.lowlevel.checkpoint()
        terms = set(_WORD.findall(query.lower()))
        if not terms or top_k <= 0:
            return []
        scored: list[SearchResult[T]] = []
        for id, document, text, metadata, words in self._entries:
            if filter and any(metadata.get(k) != v for k, v in filter.items()):
                continue
            score = len(terms & words) / len(terms)
            if score > 0 and (threshold is None or score >= threshold):
                scored.append(SearchResult(id, score, document, text, metadata))
        scored.sort(key=lambda r: (-r.score, r.id))
        return scored[:top_k]


def tool_index(tools: Sequence[Tool[Any]]) -> KeywordIndex[Tool[Any]]:
    """A :class:`KeywordIndex` over tools' names and descriptions (Anvia's ``createToolIndex``)."""
    index = KeywordIndex[Tool[Any]]()
    for tool in tools:
        index.add(tool.name, tool, f"{tool.name.replace('_', ' ')} {tool.description}")
    return index


@attrs.frozen
class DynamicContext:
    index: SearchIndex[Any]
    top_k: int
    threshold: float | None = None
    filter: Mapping[str, str] | None = None
    format: Callable[[SearchResult[Any]], Document] | None = None

    async def documents(self, query: str) -> list[Document]:
        results = await self.index.search(query, self.top_k, self.threshold, self.filter)
        fmt = self.format or _as_document
        return [fmt(r) for r in results]


@attrs.frozen
class DynamicTools:
    """Tools retrieved per turn: ``index`` results name tools of ``tool_set`` (by ``id``)."""

    tool_set: tuple[Tool[Any], ...] = attrs.field(converter=tuple)
    top_k: int
    index: SearchIndex[Any] | None = None
    """Defaults to a :func:`tool_index` over ``tool_set``."""
    threshold: float | None = None
    filter: Mapping[str, str] | None = None
    _default: KeywordIndex[Tool[Any]] | None = attrs.field(init=False, default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.index is None:
            object.__setattr__(self, "_default", tool_index(self.tool_set))

    def get(self, name: str) -> Tool[Any] | None:
        return next((t for t in self.tool_set if t.name == name), None)

    async def tools(self, query: str) -> list[Tool[Any]]:
        index: SearchIndex[Any] | None = self.index or self._default
        assert index is not None
        results = await index.search(query, self.top_k, self.threshold, self.filter)
        found = (self.get(r.id) for r in results)
        return [t for t in found if t is not None]


def _as_document(result: SearchResult[Any]) -> Document:
    return Document(result.id, result.text, result.metadata)


def render_documents(documents: Sequence[Document]) -> Message:
    """Documents as one user message of ``<file id: …>`` blocks (Anvia's rendering)."""
    blocks: list[str] = []
    for doc in documents:
        meta = "".join(f'\n<metadata {k}: "{v}" />' for k, v in doc.additional_props.items())
        blocks.append(f"<file id: {doc.id}>{meta}\n{doc.text}\n</file>")
    return Message(sender="user", text="\n\n".join(blocks))


def query_text(messages: Sequence[Message]) -> str:
    """The latest user message's text that is neither tool results nor a compaction marker."""
    for msg in reversed(messages):
        if msg.sender == "user" and not msg.tool_results and not msg.is_compaction:
            return msg.text
    return ""
