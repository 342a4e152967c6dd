"""Observers, the agent event store and the trace option (Anvia's ``observe``, ``eventStore``,
``withTrace``).

Every event of a run — ``send()`` as well as ``stream()`` — goes to the agent's observers and
event store as an :class:`AgentEventRecord`: the run id, the agent (for a forwarded child event,
the child's id and name), the turn, the tool call it belongs to, and the stream event itself.

* An **observer** (``AgentBuilder.observe(observer)``, ``AnviaAgent(observers=[...])``) is an
  object with ``async observe(record)``, or an async function of the record. A failing observer
  is logged and never breaks the run. ``ObserveOptions(include="agent_tool_events")`` limits it
  to the events of agents called as tools.
* The **event store** (``AgentBuilder.event_store(store)``) appends every record
  (``include="all"``, the default) or only nested child-agent events
  (``include="agent_tool_events"``, which exist while a parent streams an
  ``as_tool(stream=True)`` agent); ``await store.load(run_id)`` gives a run's records in order
  and :func:`replay` its stream events. :class:`InMemoryAgentEventStore` is the built-in one.
* **Trace**: ``request.with_trace(AgentTraceOptions(trace_id=..., name=..., metadata=...))``
  puts an :class:`AgentTraceInfo` (trace id, the run id as span id, start and end times) on the
  response and the ``final`` event.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import attrs

__all__ = [
    "AgentEventRecord",
    "AgentEventStore",
    "AgentEventStoreInclude",
    "AgentObserver",
    "AgentTraceInfo",
    "AgentTraceOptions",
    "InMemoryAgentEventStore",
    "ObserveOptions",
    "ObserverRegistration",
    "replay",
]

_log = logging.getLogger(__name__)

AgentEventStoreInclude: TypeAlias = Literal["all", "agent_tool_events"]


@attrs.frozen
class AgentEventRecord:
    """One stream event of a run, attributed (Anvia's ``AgentEventAppendInput`` / record)."""

    run_id: str
    agent_id: str
    event: Any
    """The stream event as the run emitted it (an ``AgentToolEvent`` for a child's)."""
    agent_name: str | None = None
    turn: int | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    internal_call_id: str | None = None
    created_at: float = attrs.field(factory=time.time)
    """Seconds since the epoch when the record was made."""

    @property
    def nested(self) -> bool:
        """A child agent's event, forwarded by an agent called as a tool."""
        return getattr(self.event, "type", None) == "agent_tool_event"


@runtime_checkable
class AgentEventStore(Protocol):
    """Where a run's events are kept for replay, debugging or inspection."""

    async def append(self, record: AgentEventRecord) -> None: ...

    async def load(self, run_id: str) -> list[AgentEventRecord]: ...

    async def clear(self, run_id: str) -> None: ...


class InMemoryAgentEventStore:
    """Records in memory, by run id, in arrival order."""

    def __init__(self) -> None:
        self._runs: dict[str, list[AgentEventRecord]] = {}

    async def append(self, record: AgentEventRecord) -> None:
        self._runs.setdefault(record.run_id, []).append(record)

    async def load(self, run_id: str) -> list[AgentEventRecord]:
        return list(self._runs.get(run_id, ()))

    async def clear(self, run_id: str) -> None:
        self._runs.pop(run_id, None)

    def run_ids(self) -> list[str]:
        return list(self._runs)


async def replay(store: AgentEventStore, run_id: str) -> list[Any]:
    """The run's stream events, in the order they were emitted."""
    return [record.event for record in await store.load(run_id)]


class AgentObserver(Protocol):
    async def observe(self, record: AgentEventRecord) -> None: ...


ObserverFn: TypeAlias = Callable[[AgentEventRecord], Awaitable[None]]


@attrs.frozen
class ObserveOptions:
    include: AgentEventStoreInclude = "all"


@attrs.frozen
class ObserverRegistration:
    """An observer and its options (Anvia's ``AgentObserverRegistration``)."""

    observer: AgentObserver | ObserverFn
    options: ObserveOptions = ObserveOptions()

    async def deliver(self, record: AgentEventRecord) -> None:
        if self.options.include == "agent_tool_events" and not record.nested:
            return
        observer: Any = self.observer
        try:
            method: Any = getattr(observer, "observe", None)
            made: Any = method(record) if callable(method) else observer(record)
            if inspect.isawaitable(made):
                await made
        except Exception:
            _log.warning("agent observer %r failed", observer, exc_info=True)


def as_registrations(
    observers: Sequence[ObserverRegistration | AgentObserver | ObserverFn],
) -> tuple[ObserverRegistration, ...]:
    return tuple(
        o if isinstance(o, ObserverRegistration) else ObserverRegistration(o) for o in observers
    )


@attrs.frozen
class AgentTraceOptions:
    """Anvia's ``AgentTraceOptions``: what a traced run is called and carries."""

    trace_id: str | None = None
    """Join an existing trace (default: a new id)."""
    name: str | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict[str, Any])


@attrs.frozen
class AgentTraceInfo:
    """Anvia's ``AgentTraceInfo`` on a traced run's response and ``final`` event."""

    trace_id: str
    span_id: str
    """The run id."""
    agent_id: str
    name: str | None
    started_at: float
    ended_at: float
    metadata: Mapping[str, Any] = attrs.field(factory=dict[str, Any])
