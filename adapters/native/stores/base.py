"""The store protocol: conversation, counters, and optional capabilities declared up front.

Optional parts (tasks, permissions, inbox, sub-agent stores) are announced by
:class:`StoreCapabilities` flags rather than discovered by duck typing (C#35). The loop never
runs a permission-gated tool on a store without the permissions capability (fail-closed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from adapters.native.messages import InboxItem, Message, PermissionStatus, Task, TokenCounter

__all__ = ["Store", "StoreCapabilities", "permission_key"]


@attrs.frozen
class StoreCapabilities:
    tasks: bool = False
    permissions: bool = False
    inbox: bool = False
    sub_stores: bool = False


def permission_key(tool_name: str, input: Any) -> str:
    """``<tool>::<canonical JSON of the input>`` (``null`` when it cannot be serialized)."""
    try:
        blob = json.dumps(input, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        blob = "null"
    return f"{tool_name}::{blob}"


@runtime_checkable
class Store(Protocol):
    """Where one session lives. All methods are async; none blocks the trio loop."""

    @property
    def identifier(self) -> str: ...
    @property
    def capabilities(self) -> StoreCapabilities: ...

    async def get_messages(self) -> Sequence[Message]:
        """The full history (never cut)."""
        ...

    async def get_context_messages(self) -> Sequence[Message]:
        """The history from the last compaction marker on (what the model sees)."""
        ...

    async def append_messages(self, messages: Sequence[Message]) -> None: ...
    async def get_token_count(self) -> int:
        """tokens in + out since the last reset."""
        ...

    async def get_token_consumption(self) -> TokenCounter: ...
    async def add_tokens(self, counter: TokenCounter) -> None: ...
    async def get_turn_count(self) -> int: ...
    async def increment_turn(self) -> None: ...
    async def reset_counters(self) -> None: ...

    # tasks (capabilities.tasks)
    async def get_tasks(self) -> list[Task]: ...
    async def set_tasks(self, tasks: Sequence[Task]) -> None:
        """Replace the whole list."""
        ...

    async def update_task(self, task_id: str, **changes: Any) -> None: ...

    # permissions (capabilities.permissions)
    async def get_permission(self, tool_name: str, input: Any = None) -> PermissionStatus: ...
    async def set_permission(
        self, tool_name: str, status: PermissionStatus, input: Any = None
    ) -> None: ...

    # inbox (capabilities.inbox)
    async def get_inbox_items(self) -> list[InboxItem]: ...
    async def add_inbox_item(self, item: InboxItem) -> None: ...
    async def update_inbox_item(self, item_id: str, **changes: Any) -> None: ...
    async def get_resolved_inbox_items(self) -> list[InboxItem]: ...

    # sub-agent stores (capabilities.sub_stores)
    async def create_sub_store(self, namespace: str, durable: bool = False) -> Store: ...
