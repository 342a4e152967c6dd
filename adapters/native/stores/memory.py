"""An in-process store (Glove's ``MemoryStore``): everything in memory, every capability.

Its methods never block and are deliberately *not* trio checkpoints (a scheduler round trip
costs more than the whole operation); the loop checkpoints once per turn itself.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from adapters.native.messages import InboxItem, Message, PermissionStatus, Task, TokenCounter

from .base import Store, StoreCapabilities, permission_key

__all__ = ["MemoryStore"]

_ALL = StoreCapabilities(tasks=True, permissions=True, inbox=True, sub_stores=True)


class MemoryStore:
    """Session state in memory. Reads return views, never copies of the history."""

    def __init__(self, identifier: str | None = None) -> None:
        self._id = identifier or f"native_{time.time_ns() // 1_000_000}"
        self._messages: list[Message] = []
        self._compaction_at = 0
        self._tokens = TokenCounter()
        self._turns = 0
        self._tasks: list[Task] = []
        self._permissions: dict[str, PermissionStatus] = {}
        self._inbox: list[InboxItem] = []
        self._children: dict[str, MemoryStore] = {}

    @property
    def identifier(self) -> str:
        return self._id

    @property
    def capabilities(self) -> StoreCapabilities:
        return _ALL

    async def get_messages(self) -> Sequence[Message]:
        return tuple(self._messages)

    async def get_context_messages(self) -> Sequence[Message]:
        return self._messages[self._compaction_at :]

    async def append_messages(self, messages: Sequence[Message]) -> None:
        for msg in messages:
            if msg.is_compaction:
                self._compaction_at = len(self._messages)
            self._messages.append(msg)

    async def get_token_count(self) -> int:
        return self._tokens.tokens_in + self._tokens.tokens_out

    async def get_token_consumption(self) -> TokenCounter:
        return self._tokens

    async def add_tokens(self, counter: TokenCounter) -> None:
        self._tokens = self._tokens + counter

    async def get_turn_count(self) -> int:
        return self._turns

    async def increment_turn(self) -> None:
        self._turns += 1

    async def reset_counters(self) -> None:
        self._tokens = TokenCounter()
        self._turns = 0

    async def get_tasks(self) -> list[Task]:
        return list(self._tasks)

    async def set_tasks(self, tasks: Sequence[Task]) -> None:
        self._tasks = list(tasks)

    async def update_task(self, task_id: str, **changes: Any) -> None:
        self._tasks = [t.model_copy(update=changes) if t.id == task_id else t for t in self._tasks]

    async def get_permission(self, tool_name: str, input: Any = None) -> PermissionStatus:
        return self._permissions.get(permission_key(tool_name, input), "unset")

    async def set_permission(
        self, tool_name: str, status: PermissionStatus, input: Any = None
    ) -> None:
        self._permissions[permission_key(tool_name, input)] = status

    async def get_inbox_items(self) -> list[InboxItem]:
        return list(self._inbox)

    async def add_inbox_item(self, item: InboxItem) -> None:
        self._inbox.append(item)

    async def update_inbox_item(self, item_id: str, **changes: Any) -> None:
        self._inbox = [i.model_copy(update=changes) if i.id == item_id else i for i in self._inbox]

    async def get_resolved_inbox_items(self) -> list[InboxItem]:
        return [i for i in self._inbox if i.status == "resolved"]

    async def create_sub_store(self, namespace: str, durable: bool = False) -> Store:
        if not durable:
            return MemoryStore(f"{self._id}__{namespace}_{time.time_ns()}")
        child = self._children.get(namespace)
        if child is None:
            child = self._children[namespace] = MemoryStore(f"{self._id}__{namespace}")
        return child
