"""``Context``: Glove's simplified view of a store (messages as the model sees them, tasks).

::

    ctx = Context(store)
    messages = await ctx.get_messages()  # from the last compaction marker on
    await ctx.append_messages([Message(sender="user", text="Hello")])

``get_messages`` applies the split at the last compaction (the store's context view): the model
sees the summary and what follows it; ``store.get_messages()`` keeps the whole history. The task
methods need a store with the tasks capability (``StoreCapabilities.tasks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .messages import Message, Task
from .stores.base import Store

__all__ = ["Context"]


class Context:
    """Wraps a :class:`~.stores.base.Store` (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def get_messages(self) -> Sequence[Message]:
        """The messages from the last ``is_compaction`` marker on (all of them if none)."""
        return await self.store.get_context_messages()

    async def append_messages(self, messages: Sequence[Message]) -> None:
        await self.store.append_messages(messages)

    async def get_tasks(self) -> list[Task]:
        self._need_tasks()
        return await self.store.get_tasks()

    async def add_tasks(self, tasks: Sequence[Task]) -> None:
        """Add tasks after the existing ones (a task with an existing id replaces it)."""
        self._need_tasks()
        new_ids = {t.id for t in tasks}
        kept = [t for t in await self.store.get_tasks() if t.id not in new_ids]
        await self.store.set_tasks([*kept, *tasks])

    async def update_task(self, task_id: str, **updates: Any) -> None:
        self._need_tasks()
        await self.store.update_task(task_id, **updates)

    def _need_tasks(self) -> None:
        if not self.store.capabilities.tasks:
            raise NotImplementedError(f"store {self.store.identifier!r} does not keep tasks")
