"""One store suite, run against every store; then what only the SQLite store promises."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from adapters.native.glove import Glove
from adapters.native.messages import InboxItem, Message, Task, TokenCounter, ToolCall
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.stores.base import Store
from adapters.native.stores.memory import MemoryStore
from adapters.native.stores.sqlite import SqliteStore, list_sessions, resolve_inbox_item


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield MemoryStore("s1")
    else:
        db = SqliteStore(tmp_path / "native.db", "s1")
        yield db
        await db.aclose()


async def test_identity_and_capabilities(store: Store) -> None:
    assert store.identifier == "s1"
    caps = store.capabilities
    assert caps.tasks and caps.permissions and caps.inbox and caps.sub_stores


async def test_messages_keep_order_flags_and_context_view(store: Store) -> None:
    first = Message(sender="user", text="hi")
    call = Message(
        sender="agent", tool_calls=(ToolCall(tool_name="t", input_args={"a": 1}, id="c1"),)
    )
    marker = Message(sender="user", text="summary", is_compaction=True)
    after = Message(sender="agent", text="after", is_steer=False)
    await store.append_messages([first, call])
    assert list(await store.get_context_messages()) == [first, call]
    await store.append_messages([marker, after])
    assert list(await store.get_messages()) == [first, call, marker, after]
    assert list(await store.get_context_messages()) == [marker, after]


async def test_counters(store: Store) -> None:
    await store.add_tokens(TokenCounter(tokens_in=10, tokens_out=3, cache_read_input_tokens=4))
    await store.add_tokens(TokenCounter(tokens_in=5, tokens_out=2))
    await store.increment_turn()
    await store.increment_turn()
    assert await store.get_token_count() == 20
    consumption = await store.get_token_consumption()
    assert consumption.tokens_in == 15 and consumption.cache_read_input_tokens == 4
    assert await store.get_turn_count() == 2
    await store.reset_counters()
    assert await store.get_token_count() == 0
    assert await store.get_turn_count() == 0


async def test_tasks_replace_and_update(store: Store) -> None:
    await store.set_tasks([Task(id="1", content="a"), Task(id="2", content="b")])
    await store.update_task("2", status="completed")
    tasks = await store.get_tasks()
    assert [(t.id, t.status) for t in tasks] == [("1", "pending"), ("2", "completed")]
    await store.set_tasks([Task(id="3", content="c")])
    assert [t.id for t in await store.get_tasks()] == ["3"]


async def test_permissions_per_input(store: Store) -> None:
    assert await store.get_permission("rm", {"path": "/"}) == "unset"
    await store.set_permission("rm", "denied", {"path": "/"})
    await store.set_permission("rm", "granted", {"path": "/tmp"})
    assert await store.get_permission("rm", {"path": "/"}) == "denied"
    assert await store.get_permission("rm", {"path": "/tmp"}) == "granted"
    assert await store.get_permission("rm") == "unset"


async def test_inbox_lifecycle(store: Store) -> None:
    await store.add_inbox_item(InboxItem(id="a", tag="t", request="r1", blocking=True))
    await store.add_inbox_item(InboxItem(id="b", tag="t", request="r2"))
    await store.update_inbox_item("a", status="resolved", response="yes")
    assert [i.id for i in await store.get_resolved_inbox_items()] == ["a"]
    await store.update_inbox_item("a", status="consumed")
    assert await store.get_resolved_inbox_items() == []
    assert [(i.id, i.status) for i in await store.get_inbox_items()] == [
        ("a", "consumed"),
        ("b", "pending"),
    ]


async def test_sub_stores_fresh_or_durable(store: Store) -> None:
    fresh_a = await store.create_sub_store("helper")
    fresh_b = await store.create_sub_store("helper")
    assert fresh_a.identifier != fresh_b.identifier
    durable = await store.create_sub_store("memo", durable=True)
    await durable.append_messages([Message(sender="user", text="remember")])
    again = await store.create_sub_store("memo", durable=True)
    assert [m.text for m in await again.get_messages()] == ["remember"]
    assert await store.get_messages() == ()  # isolated from the parent
    for sub in (fresh_a, fresh_b, durable, again):
        if isinstance(sub, SqliteStore):
            await sub.aclose()


async def test_a_glove_session_runs_on_the_store(store: Store) -> None:
    glove = Glove(model=ScriptedModel([Reply(text="one"), Reply(text="two")]), store=store)
    glove.build()
    await glove.process_request("a")
    await glove.process_request("b")
    assert [m.text for m in await store.get_messages()] == ["a", "one", "b", "two"]


# -- SQLite only ------------------------------------------------------------------------------


async def test_sqlite_reload_keeps_compaction_and_counters(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    db = SqliteStore(path, "sess")
    await db.append_messages(
        [
            Message(sender="user", text="old"),
            Message(sender="user", text="sum", is_compaction=True),
            Message(sender="agent", text="new"),
        ]
    )
    await db.add_tokens(TokenCounter(tokens_in=7))
    await db.aclose()
    again = SqliteStore(path, "sess")
    assert [m.text for m in await again.get_context_messages()] == ["sum", "new"]
    assert (await again.get_context_messages())[0].is_compaction
    assert await again.get_token_count() == 7
    await again.aclose()
    assert list_sessions(path) == ["sess"]


async def test_sqlite_inbox_resolved_from_outside(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    db = SqliteStore(path, "sess")
    await db.add_inbox_item(InboxItem(id="x", tag="stock", request="restock?"))
    changed = await trio.to_thread.run_sync(resolve_inbox_item, path, "sess", "x", "done")
    assert changed
    again = await trio.to_thread.run_sync(resolve_inbox_item, path, "sess", "x", "twice")
    assert not again  # only pending items resolve
    [item] = await db.get_resolved_inbox_items()
    assert item.response == "done" and item.resolved_at
    await db.aclose()
