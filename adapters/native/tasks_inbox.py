"""The built-in ``glove_update_tasks`` and ``glove_post_to_inbox`` tools.

A Glove registers them itself when its store has the capability (``StoreCapabilities.tasks`` /
``.inbox``; both built-in stores have both), as Glove's docs describe.

* ``glove_update_tasks({todos})`` replaces the whole task list with any full list of
  ``{content, activeForm, status}`` Glove accepts (empty, several ``in_progress``, empty text); a
  task whose ``content`` matches an existing one keeps that task's id, others get
  ``task_<ms>_<index>``. The result is ``{tasks}``. Tasks survive compaction (the summary lists
  them).
* ``glove_post_to_inbox({tag, request, blocking})`` posts a ``pending`` item for an external
  service. The next request injects resolved items as one user message (and marks them
  consumed); while a *blocking* item is pending, every model call of a request carries a reminder;
  pending items are copied into a compaction summary. On the SQLite store,
  :func:`~.stores.sqlite.resolve_inbox_item` resolves an item from any process.
"""

from __future__ import annotations

import datetime as _dt
import secrets
import time
from typing import Literal

from pydantic import BaseModel, Field

from .messages import InboxItem, Task, ToolResultData
from .stores.base import Store
from .tools import Tool, ToolContext

__all__ = [
    "INBOX_TOOL_NAME",
    "TASK_TOOL_NAME",
    "InboxToolInput",
    "TaskToolInput",
    "TodoInput",
    "create_inbox_tool",
    "create_task_tool",
]

TASK_TOOL_NAME = "glove_update_tasks"
INBOX_TOOL_NAME = "glove_post_to_inbox"


class TodoInput(BaseModel):
    content: str = Field(description="The task, imperative (“Fix the login bug”).")
    activeForm: str = Field(description="Present continuous (“Fixing the login bug”).")
    status: Literal["pending", "in_progress", "completed"]


class TaskToolInput(BaseModel):
    todos: list[TodoInput] = Field(description="The COMPLETE task list; it replaces the old one.")


class InboxToolInput(BaseModel):
    tag: str = Field(min_length=1, description="A short label for the request (e.g. 'restock').")
    request: str = Field(min_length=1, description="What you need, in plain language.")
    blocking: bool = Field(
        default=False,
        description="True if you cannot continue the dependent work until it is resolved.",
    )


_TASK_DESCRIPTION = (
    "Keep a task list for multi-step work. Send the FULL current list on every call: it replaces "
    "the previous one, so you can add, update, complete or drop tasks in one call."
)
_INBOX_DESCRIPTION = (
    "Post a request you cannot fulfil now to the async inbox, for an external service or person "
    "to resolve later. The resolution arrives as a message at the start of a later request, not "
    "as this tool's result. Set blocking=true if dependent work must wait for it."
)


def create_task_tool(store: Store) -> Tool[TaskToolInput]:
    async def update(value: TaskToolInput, ctx: ToolContext) -> ToolResultData:
        del ctx
        old = {t.content: t.id for t in await store.get_tasks()}
        stamp = time.time_ns() // 1_000_000
        tasks = [
            Task(
                id=old.get(t.content) or f"task_{stamp}_{i}",
                content=t.content,
                active_form=t.activeForm,
                status=t.status,
            )
            for i, t in enumerate(value.todos)
        ]
        await store.set_tasks(tasks)
        return ToolResultData(
            status="success", data={"tasks": [t.model_dump(mode="json") for t in tasks]}
        )

    return Tool(
        name=TASK_TOOL_NAME, description=_TASK_DESCRIPTION, do=update, input_model=TaskToolInput
    )


def create_inbox_tool(store: Store) -> Tool[InboxToolInput]:
    async def post(value: InboxToolInput, ctx: ToolContext) -> ToolResultData:
        del ctx
        item_id = f"inbox_{time.time_ns() // 1_000_000}_{secrets.token_hex(3)}"
        now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        await store.add_inbox_item(
            InboxItem(
                id=item_id,
                tag=value.tag,
                request=value.request,
                blocking=value.blocking,
                created_at=now,
            )
        )
        message = (
            "Inbox item created. This is blocking — you must wait for resolution."
            if value.blocking
            else "Inbox item created. This is non-blocking — you may continue."
        )
        return ToolResultData(status="success", data={"inbox_item_id": item_id, "message": message})

    return Tool(
        name=INBOX_TOOL_NAME, description=_INBOX_DESCRIPTION, do=post, input_model=InboxToolInput
    )
