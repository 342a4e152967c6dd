"""History-preserving compaction: triggers, the marker, what the model sees, events."""

from __future__ import annotations

from adapters.native.compaction import (
    SUMMARY_FOOTER,
    SUMMARY_HEADER,
    CompactionConfig,
    build_summary_message,
)
from adapters.native.glove import Glove
from adapters.native.messages import InboxItem, Task
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.stores.memory import MemoryStore
from adapters.native.tools import ToolContext

from .conftest import EchoInput, Recorder


async def echo(inp: EchoInput, ctx: ToolContext) -> str:
    return inp.text


def make(model: ScriptedModel, cfg: CompactionConfig, rec: Recorder, store: MemoryStore) -> Glove:
    glove = Glove(model=model, store=store, compaction_config=cfg)
    return glove.fold("echo", "Echo.", EchoInput, echo).add_subscriber(rec).build()


async def test_compaction_by_turns_appends_a_marker_and_cuts_the_view() -> None:
    rec, store = Recorder(), MemoryStore()
    await store.set_tasks([Task(id="t1", content="Ship it", status="in_progress")])
    await store.add_inbox_item(InboxItem(id="i1", tag="pay", request="card ok?", blocking=True))
    model = ScriptedModel(
        [
            Reply(tool_calls=[("echo", {"text": "1"})]),
            Reply(tool_calls=[("echo", {"text": "2"})]),
            Reply(text="SUMMARY: echoed twice", tokens_out=7),  # the compaction call
            Reply(text="finished"),
        ]
    )
    glove = make(model, CompactionConfig(max_turns=2, compaction_context_limit=None), rec, store)
    result = await glove.process_request("echo things")
    assert result.text == "finished"
    assert result.usage.tokens_out == 5 + 5 + 7 + 5  # the summary call is counted

    summary_request = model.requests[2]
    assert summary_request.tools == ()
    assert summary_request.messages[-1].is_compaction_request
    final_request = model.requests[3]
    reminder, marker = final_request.messages  # the blocking reminder is spliced in before it
    assert "blocking item(s) still pending" in reminder.text
    assert marker.is_compaction  # the model sees only what follows the marker
    text = marker.text
    assert text.startswith(SUMMARY_HEADER) and text.endswith(SUMMARY_FOOTER)
    assert "SUMMARY: echoed twice" in text
    assert "- [in_progress] Ship it" in text  # tasks carried across
    assert "BLOCKING: card ok?" in text  # pending inbox carried across

    history = list(await store.get_messages())
    assert len(history) == 7  # nothing deleted: user, 2×(call, results), marker, answer
    assert await store.get_turn_count() == 1  # counters reset at compaction

    types = rec.types()
    start, end = types.index("compaction_start"), types.index("compaction_end")
    assert "text_delta" not in types[start:end]  # the summary is not streamed as text
    consumption = [e for e in rec.of("token_consumption") if e.source == "compaction"]
    assert consumption and consumption[0].consumption.tokens_out == 7
    assert rec.of("compaction_end")[0].summary_message.is_compaction


async def test_compaction_by_context_size() -> None:
    rec, store = Recorder(), MemoryStore()
    model = ScriptedModel(
        [
            Reply(tool_calls=[("echo", {"text": "big"})], tokens_in=950, tokens_out=10),
            Reply(text="summary"),
            Reply(text="done"),
        ]
    )
    glove = make(model, CompactionConfig(compaction_context_limit=900), rec, store)
    await glove.process_request("go")
    assert "compaction_start" in rec.types()
    assert model.requests[2].messages[0].is_compaction


async def test_no_compaction_below_the_triggers() -> None:
    rec, store = Recorder(), MemoryStore()
    model = ScriptedModel([Reply(tool_calls=[("echo", {})]), Reply(text="done")])
    glove = make(model, CompactionConfig(compaction_context_limit=100_000), rec, store)
    await glove.process_request("go")
    assert "compaction_start" not in rec.types()


async def test_forced_compaction_between_requests_and_view_after_reload() -> None:
    rec, store = Recorder(), MemoryStore()
    model = ScriptedModel([Reply(text="a"), Reply(text="sum"), Reply(text="b")])
    glove = make(model, CompactionConfig(compaction_context_limit=None), rec, store)
    await glove.process_request("one")
    marker = await glove.compact()
    await glove.process_request("two")
    sent = model.requests[2].messages
    assert sent[0] == marker and sent[-1].text == "two"
    assert (await store.get_context_messages())[0] == marker


def test_summary_without_text_says_so() -> None:
    msg = build_summary_message("  ")
    assert "No summary was generated" in msg.text and msg.is_compaction
