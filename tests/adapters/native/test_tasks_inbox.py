"""``glove_update_tasks`` and ``glove_post_to_inbox``: the task list and the async inbox.

Test names follow the rules of ``glove-core-api.txt`` ("createTaskTool") and
``glove-core-concepts.txt`` ("The Inbox", "Context Compaction").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import trio

from adapters.native.compaction import CompactionConfig
from adapters.native.glove import Glove
from adapters.native.messages import ToolResultData
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.stores.base import StoreCapabilities
from adapters.native.stores.memory import MemoryStore
from adapters.native.stores.sqlite import SqliteStore
from adapters.native.tasks_inbox import INBOX_TOOL_NAME, TASK_TOOL_NAME

REPO = Path(__file__).resolve().parents[3]


def results(messages: Any) -> list[ToolResultData]:
    return [r.result for m in messages if m.tool_results for r in m.tool_results]


def todo(content: str, status: str = "pending") -> dict[str, str]:
    return {"content": content, "activeForm": f"{content}ing", "status": status}


class NoExtrasStore(MemoryStore):
    @property
    def capabilities(self) -> StoreCapabilities:
        return StoreCapabilities(permissions=True)


async def test_task_and_inbox_tools_are_auto_registered_when_the_store_supports_them() -> None:
    names = [t.name for t in Glove(model=ScriptedModel([])).build().tools]
    assert TASK_TOOL_NAME in names and INBOX_TOOL_NAME in names
    bare = [t.name for t in Glove(model=ScriptedModel([]), store=NoExtrasStore()).build().tools]
    assert TASK_TOOL_NAME not in bare and INBOX_TOOL_NAME not in bare
    off = Glove(model=ScriptedModel([]), builtin_tools=False).build()
    assert [t.name for t in off.tools] == []
    # a store given to build() gets tools bound to it
    glove = Glove(model=ScriptedModel([]), store=NoExtrasStore())
    glove.build(MemoryStore("other"))
    assert TASK_TOOL_NAME in [t.name for t in glove.tools]


async def test_update_tasks_replaces_the_entire_list_on_each_call() -> None:
    model = ScriptedModel(
        [
            Reply(tool_calls=[(TASK_TOOL_NAME, {"todos": [todo("Fix bug"), todo("Add test")]})]),
            Reply(
                tool_calls=[
                    (
                        TASK_TOOL_NAME,
                        {"todos": [todo("Fix bug", "completed"), todo("Ship", "in_progress")]},
                    )
                ]
            ),
            Reply(text="ok"),
        ]
    )
    glove = Glove(model=model).build()
    await glove.process_request("work")
    first, second = results(await glove.store.get_messages())
    tasks = await glove.store.get_tasks()
    assert [(t.content, t.status, t.active_form) for t in tasks] == [
        ("Fix bug", "completed", "Fix buging"),
        ("Ship", "in_progress", "Shiping"),
    ]
    # a task with identical content keeps its id; new tasks get task_<ms>_<index>
    assert first.data["tasks"][0]["id"] == second.data["tasks"][0]["id"] == tasks[0].id
    assert tasks[1].id.startswith("task_") and tasks[1].id.endswith("_1")


async def test_glove_update_tasks_accepts_any_full_list_the_seed_accepts() -> None:
    """The seed's input: ``todos: Array<{content, activeForm, status}>``, the complete list each
    call — empty text and several ``in_progress`` tasks included; a wrong status is refused."""
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    (
                        TASK_TOOL_NAME,
                        {"todos": [{"content": "", "activeForm": "", "status": "pending"}]},
                    ),
                    (
                        TASK_TOOL_NAME,
                        {"todos": [todo("a", "in_progress"), todo("b", "in_progress")]},
                    ),
                    (TASK_TOOL_NAME, {"todos": [todo("c", "done")]}),
                ]
            ),
            Reply(tool_calls=[(TASK_TOOL_NAME, {"todos": []})]),
            Reply(text="ok"),
        ]
    )
    glove = Glove(model=model).build()
    seen: list[list[str]] = []

    class AfterEachCall:
        async def record(self, event: Any) -> None:
            if event.type == "tool_use_result":
                seen.append([t.status for t in await glove.store.get_tasks()])

    glove.add_subscriber(AfterEachCall())
    await glove.process_request("x")
    empty_text, two, bad, cleared = results(await glove.store.get_messages())
    assert empty_text.status == two.status == cleared.status == "success"
    assert bad.error_kind == "invalid_input" and "todos.0.status" in (bad.message or "")
    assert seen[:2] == [["pending"], ["in_progress", "in_progress"]]
    assert await glove.store.get_tasks() == []  # the empty list replaced everything


async def test_tasks_are_preserved_across_compaction() -> None:
    model = ScriptedModel(
        [
            Reply(tool_calls=[(TASK_TOOL_NAME, {"todos": [todo("Migrate DB", "in_progress")]})]),
            Reply(text="ok"),
            Reply(text="SUMMARY"),
        ]
    )
    glove = Glove(
        model=model, compaction_config=CompactionConfig(compaction_context_limit=None)
    ).build()
    await glove.process_request("x")
    summary = await glove.compact()
    assert "[Task list]\n- [in_progress] Migrate DB" in summary.text


async def test_post_to_inbox_creates_a_pending_item_blocking_or_not() -> None:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    (INBOX_TOOL_NAME, {"tag": "restock", "request": "Oat milk?"}),
                    (INBOX_TOOL_NAME, {"tag": "payment", "request": "Card ok?", "blocking": True}),
                ]
            ),
            Reply(text="ok"),
        ]
    )
    glove = Glove(model=model).build()
    await glove.process_request("order")
    nonblocking, blocking = results(await glove.store.get_messages())
    assert nonblocking.data["message"].endswith("non-blocking — you may continue.")
    assert blocking.data["message"].endswith("blocking — you must wait for resolution.")
    items = await glove.store.get_inbox_items()
    assert [(i.tag, i.status, i.blocking) for i in items] == [
        ("restock", "pending", False),
        ("payment", "pending", True),
    ]
    assert items[0].id == nonblocking.data["inbox_item_id"]
    assert items[0].id.startswith("inbox_")


async def test_blocking_pending_items_are_reminded_on_every_model_call() -> None:
    store = MemoryStore()
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[(INBOX_TOOL_NAME, {"tag": "pay", "request": "ok?", "blocking": True})]
            ),
            Reply(text="waiting"),
            Reply(text="still waiting"),
        ]
    )
    glove = Glove(model=model, store=store).build()
    await glove.process_request("pay")
    await glove.process_request("status?")
    last = [m.text for m in model.requests[-1].messages]
    assert any(t.startswith("[Inbox: 1 blocking item(s) still pending") for t in last)
    # the reminder is transient: never persisted
    assert not any("blocking item(s)" in m.text for m in await store.get_messages())


async def test_resolved_items_are_injected_on_the_next_run_and_marked_consumed() -> None:
    store = MemoryStore()
    model = ScriptedModel(
        [
            Reply(tool_calls=[(INBOX_TOOL_NAME, {"tag": "restock", "request": "Oat milk?"})]),
            Reply(text="posted"),
            Reply(text="great"),
        ]
    )
    glove = Glove(model=model, store=store).build()
    await glove.process_request("order")
    [item] = await store.get_inbox_items()
    await store.update_inbox_item(item.id, status="resolved", response="In stock", resolved_at="t")
    await glove.process_request("any news?")
    injected = [m.text for m in model.requests[-1].messages if m.text.startswith("[Inbox:")]
    assert injected == [
        '[Inbox: 1 item(s) resolved]\n- [restock] Request: "Oat milk?" -> Response: '
        '"In stock" (resolved t)'
    ]
    assert [i.status for i in await store.get_inbox_items()] == ["consumed"]


async def test_pending_items_survive_compaction() -> None:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    (INBOX_TOOL_NAME, {"tag": "pay", "request": "Card ok?", "blocking": True})
                ]
            ),
            Reply(text="ok"),
            Reply(text="SUMMARY"),
        ]
    )
    glove = Glove(
        model=model, compaction_config=CompactionConfig(compaction_context_limit=None)
    ).build()
    await glove.process_request("x")
    summary = await glove.compact()
    assert "[Pending inbox items — being monitored by external services]" in summary.text
    assert "- [pay] BLOCKING: Card ok?" in summary.text


async def test_resolve_inbox_item_from_another_process_on_the_sqlite_store(
    tmp_path: Path,
) -> None:
    db = tmp_path / "sessions.db"
    store = SqliteStore(db, "shop")
    model = ScriptedModel(
        [
            Reply(tool_calls=[(INBOX_TOOL_NAME, {"tag": "restock", "request": "Oat milk?"})]),
            Reply(text="posted"),
            Reply(text="thanks"),
        ]
    )
    glove = Glove(model=model, store=store).build()
    await glove.process_request("order")
    [item] = await store.get_inbox_items()
    script = (
        "import sys; from adapters.native.stores.sqlite import resolve_inbox_item as r; "
        "print(r(sys.argv[1], 'shop', sys.argv[2], 'Back in stock'), "
        "r(sys.argv[1], 'shop', sys.argv[2], 'again'))"
    )
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-c", script, str(db), item.id],
            capture_stdout=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert done.stdout.decode().split() == ["True", "False"]  # only a pending item resolves
    await glove.process_request("news?")
    injected = [m.text for m in model.requests[-1].messages if m.text.startswith("[Inbox:")]
    assert len(injected) == 1 and '-> Response: "Back in stock"' in injected[0]
    [after] = await store.get_inbox_items()
    assert after.status == "consumed"
    await store.aclose()
