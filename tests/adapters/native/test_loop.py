"""The loop on the scripted in-process model: turns, caps, steering, retries, cancellation."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from adapters.native.cancel import CancelToken
from adapters.native.glove import Glove, SessionBusyError
from adapters.native.loop import CONTINUE_PROMPT, LoopConfig
from adapters.native.messages import Message, ToolCall
from adapters.native.models.base import ModelError, PromptRequest
from adapters.native.models.scripted import Delta, Fail, Reply, ScriptedModel, Sleep
from adapters.native.stores.memory import MemoryStore
from adapters.native.tools import ToolContext

from .conftest import CityInput, EchoInput, Recorder


async def weather(inp: CityInput, ctx: ToolContext) -> dict[str, Any]:
    return {"city": inp.city, "temp": 21}


async def echo(inp: EchoInput, ctx: ToolContext) -> str:
    if inp.delay:
        await trio.sleep(inp.delay)
    return inp.text


def make(model: ScriptedModel, recorder: Recorder | None = None, **kw: Any) -> Glove:
    glove = Glove(model=model, system_prompt="sys", **kw)
    glove.fold("get_weather", "Weather for a city.", CityInput, weather)
    glove.fold("echo", "Echo text.", EchoInput, echo)
    if recorder is not None:
        glove.add_subscriber(recorder)
    return glove.build()


async def test_text_only_reply_completes(recorder: Recorder) -> None:
    model = ScriptedModel([Reply(text="Hello.")])
    glove = make(model, recorder)
    result = await glove.process_request("hi")
    assert result.stop == "completed"
    assert result.text == "Hello."
    assert result.turns == 1
    msgs = await glove.store.get_messages()
    assert [(m.sender, m.text) for m in msgs] == [("user", "hi"), ("agent", "Hello.")]
    assert "text_delta" in recorder.types()
    assert model.system_prompt == "sys"
    assert [d.name for d in model.requests[0].tools] == [
        "echo",
        "get_weather",
        "glove_post_to_inbox",  # built-in: the memory store has an inbox and tasks
        "glove_update_tasks",
    ]


async def test_tool_turn_results_follow_calls_in_order(recorder: Recorder) -> None:
    model = ScriptedModel(
        [
            Reply(tool_calls=[("get_weather", {"city": "Tokyo"}), ("echo", {"text": "x"})]),
            Reply(text="It is 21."),
        ]
    )
    glove = make(model, recorder)
    result = await glove.process_request("weather?")
    assert result.stop == "completed"
    assert result.usage.tokens_in == 20
    msgs = list(await glove.store.get_messages())
    assert msgs[1].tool_calls is not None and len(msgs[1].tool_calls) == 2
    results = msgs[2].tool_results
    assert results is not None
    assert [r.call_id for r in results] == [c.id for c in msgs[1].tool_calls]
    assert results[0].result.data == {"city": "Tokyo", "temp": 21}
    # the second request saw the results
    assert model.requests[1].messages[-1].tool_results == results
    uses = recorder.of("tool_use_result")
    assert [u.id for u in uses] == [r.call_id for r in results]
    assert all(u.duration_ms >= 0 for u in uses)


async def test_max_turns_is_an_exact_cap_and_leaves_no_dangling_call() -> None:
    model = ScriptedModel([Reply(tool_calls=[("echo", {"text": str(i)})]) for i in range(10)])
    glove = make(model, loop_config=LoopConfig(max_model_calls=3))
    result = await glove.process_request("loop")
    assert result.stop == "max_turns"
    assert len(model.requests) == 3
    msgs = list(await glove.store.get_messages())
    assert msgs[-1].tool_results is not None  # the third reply's calls got their results


async def test_non_streaming_model_still_emits_deltas_and_tool_uses(recorder: Recorder) -> None:
    model = ScriptedModel(
        [Reply(text="let me", tool_calls=[("echo", {"text": "a"})]), Reply(text="ok")],
        stream=False,
    )
    glove = make(model, recorder)
    await glove.process_request("go")
    types = recorder.types()
    assert types.count("text_delta") == 2
    assert types.count("tool_use") == 1
    assert "model_response" in types


async def test_steer_during_final_turn_still_lands(recorder: Recorder) -> None:
    glove: Glove | None = None

    def final(request: PromptRequest) -> Reply:
        assert glove is not None
        glove.steer("also check Osaka")  # arrives while the final answer is produced
        return Reply(text="Tokyo is 21.")

    model = ScriptedModel([final, Reply(text="Osaka too.")])
    glove = make(model, recorder)
    result = await glove.process_request("weather in Tokyo?")
    assert result.text == "Osaka too."
    assert len(model.requests) == 2
    steer = model.requests[1].messages[-1]
    assert steer.is_steer and steer.text == "also check Osaka"
    assert recorder.of("steer_applied")[0].count == 1


async def test_steers_apply_fifo_at_turn_boundaries() -> None:
    glove: Glove | None = None

    def first(request: PromptRequest) -> Reply:
        assert glove is not None
        glove.steer("one")
        glove.steer("two")
        return Reply(tool_calls=[("echo", {"text": "x"})])

    model = ScriptedModel([first, Reply(text="done")])
    glove = make(model)
    await glove.process_request("go")
    texts = [m.text for m in model.requests[1].messages if m.is_steer]
    assert texts == ["one", "two"]


async def test_set_model_applies_at_next_model_call() -> None:
    other = ScriptedModel([Reply(text="from other")], model="other")
    glove: Glove | None = None

    async def switch(inp: EchoInput, ctx: ToolContext) -> str:
        assert glove is not None
        glove.set_model(other)
        return "switched"

    model = ScriptedModel([Reply(tool_calls=[("switch", {})])])
    glove = make(model)
    glove.fold("switch", "Switch model.", EchoInput, switch)
    result = await glove.process_request("go")
    assert result.text == "from other"
    assert len(model.requests) == 1 and len(other.requests) == 1
    assert other.system_prompt == "sys"


async def test_transient_model_error_is_retried_honouring_retry_after(
    autojump_clock: trio.testing.MockClock, recorder: Recorder
) -> None:
    model = ScriptedModel(
        [Fail(ModelError("slow down", "rate_limit", 429, retry_after=7.0)), Reply(text="ok")]
    )
    glove = make(model, recorder)
    began = trio.current_time()
    result = await glove.process_request("go")
    assert result.text == "ok"
    assert trio.current_time() - began == pytest.approx(7.0)
    retry = recorder.of("retry")[0]
    assert retry.attempt == 1 and retry.delay_s == 7.0


async def test_no_retry_after_stream_progress(autojump_clock: trio.testing.MockClock) -> None:
    model = ScriptedModel([Delta("partial"), Fail(ModelError("boom", "overloaded", 529))])
    glove = make(model)
    with pytest.raises(ModelError, match="boom"):
        await glove.process_request("go")


async def test_permanent_model_error_is_not_retried() -> None:
    model = ScriptedModel([Fail(ModelError("bad key", "auth", 401)), Reply(text="never")])
    glove = make(model)
    with pytest.raises(ModelError) as info:
        await glove.process_request("go")
    assert info.value.code == "auth"
    assert model.remaining == 1


async def test_max_tokens_truncation_is_continued() -> None:
    model = ScriptedModel([Reply(text="The answ", stop_reason="max_tokens"), Reply(text="er.")])
    glove = make(model)
    result = await glove.process_request("go")
    assert result.text == "er."
    assert model.requests[1].messages[-1].text == CONTINUE_PROMPT


async def test_cancel_during_model_call_ends_aborted() -> None:
    model = ScriptedModel([Sleep(100), Reply(text="never")])
    glove = make(model)
    token = CancelToken()
    async with trio.open_nursery() as nursery:
        results: list[Any] = []

        async def run() -> None:
            results.append(await glove.run_request("go", token))

        nursery.start_soon(run)
        await trio.testing.wait_all_tasks_blocked()
        token.cancel()
    assert results[0].stop == "aborted"
    msgs = await glove.store.get_messages()
    assert [m.sender for m in msgs] == ["user"]


async def test_cancel_mid_tool_stores_aborted_results_at_abort_time(recorder: Recorder) -> None:
    model = ScriptedModel(
        [Reply(tool_calls=[("echo", {"text": "a"}), ("echo", {"text": "b", "delay": 100})])]
    )
    glove = make(model, recorder)
    token = CancelToken()
    results: list[Any] = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            results.append(await glove.run_request("go", token))

        nursery.start_soon(run)
        await trio.testing.wait_all_tasks_blocked()
        token.cancel()
    assert results[0].stop == "aborted"
    msgs = list(await glove.store.get_messages())
    tool_results = msgs[-1].tool_results
    assert tool_results is not None
    assert [r.result.status for r in tool_results] == ["success", "aborted"]
    notified = recorder.of("tool_use_result")
    assert [n.result.status for n in notified] == ["success", "aborted"]


async def test_un_abortable_tool_finishes_despite_cancel(
    autojump_clock: trio.testing.MockClock,
) -> None:
    finished: list[str] = []

    async def commit(inp: EchoInput, ctx: ToolContext) -> str:
        await trio.sleep(5)
        finished.append(inp.text)
        return "committed"

    model = ScriptedModel([Reply(tool_calls=[("commit", {"text": "order-1"})])])
    glove = make(model)
    glove.fold("commit", "Commit an order.", EchoInput, commit, un_abortable=True)
    token = CancelToken()
    results: list[Any] = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            results.append(await glove.run_request("go", token))

        nursery.start_soon(run)
        await trio.sleep(1)
        token.cancel()
    assert finished == ["order-1"]
    assert results[0].stop == "aborted"
    msgs = list(await glove.store.get_messages())
    assert msgs[-1].tool_results is not None
    assert msgs[-1].tool_results[0].result.data == "committed"


async def test_one_request_at_a_time() -> None:
    model = ScriptedModel([Sleep(10), Reply(text="a")])
    glove = make(model)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(glove.process_request, "first")
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(SessionBusyError):
            await glove.process_request("second")
        nursery.cancel_scope.cancel()


async def test_build_is_required() -> None:
    glove = Glove(model=ScriptedModel([]))
    with pytest.raises(RuntimeError, match="build"):
        await glove.process_request("x")


async def test_a_failing_subscriber_does_not_fail_the_run() -> None:
    class Broken:
        async def record(self, event: Any) -> None:
            raise ValueError("subscriber bug")

    rec = Recorder()
    glove = make(ScriptedModel([Reply(text="fine")]), rec)
    glove.add_subscriber(Broken())
    result = await glove.process_request("go")
    assert result.text == "fine"


async def test_fold_after_build_is_seen_at_next_turn() -> None:
    glove: Glove | None = None

    def first(request: PromptRequest) -> Reply:
        assert glove is not None
        glove.fold("late", "Added late.", EchoInput, echo)
        return Reply(tool_calls=[("late", {"text": "hi"})])

    model = ScriptedModel([first, Reply(text="ok")])
    glove = make(model)
    await glove.process_request("go")
    assert "late" not in [d.name for d in model.requests[0].tools]
    assert "late" in [d.name for d in model.requests[1].tools]
    msgs = list(await glove.store.get_messages())
    assert msgs[2].tool_results is not None
    assert msgs[2].tool_results[0].result.data == "hi"


async def test_multimodal_request_keeps_media() -> None:
    from adapters.native.messages import ContentPart, ContentSource

    model = ScriptedModel([Reply(text="a cat")])
    glove = make(model)
    image = ContentPart(
        type="image", source=ContentSource(type="url", media_type="image/png", url="http://x/c.png")
    )
    await glove.process_request([ContentPart(type="text", text="what is this?"), image])
    first = (await glove.store.get_messages())[0]
    assert first.text == "what is this?"
    assert first.content is not None and first.content[1] == image


async def test_inbox_resolved_items_are_injected_and_blocking_ones_reminded() -> None:
    from adapters.native.messages import InboxItem

    store = MemoryStore()
    await store.add_inbox_item(
        InboxItem(id="1", tag="stock", request="restock?", response="yes", status="resolved")
    )
    await store.add_inbox_item(InboxItem(id="2", tag="pay", request="payment?", blocking=True))
    model = ScriptedModel([Reply(text="ok")])
    glove = make(model, store=store)
    await glove.process_request("status?")
    sent = model.requests[0].messages
    assert sent[0].text.startswith("[Inbox: 1 item(s) resolved]")
    assert "blocking item(s) still pending" in sent[-2].text
    assert sent[-1].text == "status?"
    items = {i.id: i.status for i in await store.get_inbox_items()}
    assert items == {"1": "consumed", "2": "pending"}
    # the reminder is transient: not persisted
    assert not any("blocking" in m.text for m in await store.get_messages())


async def test_resume_with_malformed_arguments_gets_a_correctable_error() -> None:
    bad = ToolCall(tool_name="echo", input_args="{not json", id="c1", parse_error="Expecting ','")
    model = ScriptedModel([Reply(tool_calls=[bad]), Reply(text="fixed")])
    glove = make(model)
    await glove.process_request("go")
    result = model.requests[1].messages[-1].tool_results
    assert result is not None
    assert result[0].result.error_kind == "invalid_input"
    assert "not valid JSON" in (result[0].result.message or "")


async def test_continue_request_runs_on_steers_only() -> None:
    model = ScriptedModel([Reply(text="first"), Reply(text="second")])
    glove = make(model)
    await glove.process_request("go")
    glove.steer("and now?")
    result = await glove.continue_request()
    assert result.text == "second"
    assert model.requests[1].messages[-1] == Message(sender="user", text="and now?", is_steer=True)


async def test_loop_config_is_honoured() -> None:
    model = ScriptedModel([Reply(text="x")])
    glove = make(model, loop_config=LoopConfig(max_tokens=123))
    await glove.process_request("go")
    assert model.requests[0].max_tokens == 123


async def test_a_call_running_at_a_stop_is_not_run_again_on_resume() -> None:
    """A session whose last reply's tool call has no result (the process running it was killed
    mid-call): the resumed run tells the model the call was interrupted instead of re-running
    it (it may have had effects already)."""
    ran: list[str] = []

    async def side_effect(inp: EchoInput, ctx: ToolContext) -> str:
        ran.append(inp.text)
        return "done"

    store = MemoryStore("s")
    call = ToolCall(tool_name="deploy", input_args={"text": "prod"}, id="c1")
    await store.append_messages(
        (
            Message(sender="user", text="deploy it"),
            Message(sender="agent", text="", tool_calls=(call,)),
        )
    )
    model = ScriptedModel([Reply(text="I will check before deploying again.")])
    glove = Glove(model=model, system_prompt="sys", store=store)
    glove.fold("deploy", "Deploy.", EchoInput, side_effect)
    glove = glove.build()
    await glove.process_request("go on")
    assert ran == []  # not run a second time
    results = [r for m in model.requests[0].messages for r in (m.tool_results or ())]
    assert [r.call_id for r in results] == ["c1"]
    assert results[0].result.status == "error" and "interrupted" in (
        results[0].result.message or ""
    )


async def _resume_an_approved_call(tmp_path: Any, *, started: bool) -> tuple[list[str], str]:
    """A session whose last reply's ``deploy`` call (it asks for approval) has no result, the
    call approved in the durable book; ``started``: the book recorded that it began to run."""
    from orchestrator.core.approvals import ApprovalBook, ApprovalRequest, approve

    ran: list[str] = []

    async def side_effect(inp: EchoInput, ctx: ToolContext) -> str:
        ran.append(inp.text)
        return "deployed"

    store = MemoryStore("s")
    call = ToolCall(tool_name="deploy", input_args={"text": "prod"}, id="c1")
    await store.append_messages(
        (
            Message(sender="user", text="deploy it"),
            Message(sender="agent", text="", tool_calls=(call,)),
        )
    )
    book = ApprovalBook.in_state_dir(tmp_path)
    request = ApprovalRequest("deploy", EchoInput(text="prod").model_dump(mode="json"), "c1", "s")
    await book.record(request)
    await book.decide(request.id, approve())
    if started:
        await book.mark_started(request)
    model = ScriptedModel([Reply(text="ok")])
    handler = book.handler()
    glove = Glove(model=model, system_prompt="sys", store=store, permission_handler=handler)
    glove.fold("deploy", "Deploy.", EchoInput, side_effect, requires_permission=True)
    glove = glove.build()
    with trio.fail_after(20):
        await glove.process_request("go on")
    results = [r for m in model.requests[0].messages for r in (m.tool_results or ())]
    return ran, results[0].result.message or str(results[0].result.data)


async def test_an_approved_call_that_had_started_is_not_run_again_on_resume(tmp_path: Any) -> None:
    """Issue 40: the book marks an approved call started before it runs; a resume after the
    process stopped tells the model it was interrupted instead of running it again — while a
    call approved but never started (its process died while it waited) still runs."""
    ran, told = await _resume_an_approved_call(tmp_path / "a", started=True)
    assert ran == [] and "interrupted" in told and "approved" in told
    ran, told = await _resume_an_approved_call(tmp_path / "b", started=False)
    assert ran == ["prod"] and told == "deployed"
