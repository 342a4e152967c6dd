"""The executor: validation, permissions, retries, timeouts, concurrency, unknown tools."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from adapters.native.cancel import CancelToken
from adapters.native.executor import Executor, PermissionRequest, ToolBatch
from adapters.native.messages import (
    ContentPart,
    Message,
    ToolCall,
    ToolResult,
    ToolResultData,
    format_tool_result_content,
    repair_history,
)
from adapters.native.stores.base import StoreCapabilities
from adapters.native.stores.memory import MemoryStore
from adapters.native.tools import Tool, ToolContext, normalize_result

from .conftest import CityInput, EchoInput, Recorder


def call(name: str, args: Any, cid: str) -> ToolCall:
    return ToolCall(tool_name=name, input_args=args, id=cid)


async def run(executor: Executor, *calls: ToolCall) -> list[ToolResult]:
    batch = ToolBatch(calls)
    await executor.execute(batch, CancelToken(), "s1")
    return batch.done()


def make(store: Any = None, recorder: Recorder | None = None, **kw: Any) -> Executor:
    rec = recorder or Recorder()
    return Executor(store or MemoryStore(), rec.record, **kw)


async def echo(inp: EchoInput, ctx: ToolContext) -> str:
    if inp.delay:
        await trio.sleep(inp.delay)
    return inp.text


async def test_unknown_tool_names_near_matches() -> None:
    ex = make()
    ex.register(Tool(name="ask_user", description="", do=echo, input_model=EchoInput))
    ex.register(Tool(name="read_file", description="", do=echo, input_model=EchoInput))
    [res] = await run(ex, call("ask", {}, "1"))
    assert res.result.error_kind == "not_found"
    assert res.result.message == (
        "No tool called ask exists. Did you mean ask_user? Available tools: ask_user, read_file."
    )
    [res] = await run(make(), call("x", {}, "1"))
    assert res.result.message == "No tool called x exists. No tools are registered."


async def test_lookup_is_case_insensitive() -> None:
    ex = make()
    ex.register(Tool(name="Echo", description="", do=echo, input_model=EchoInput))
    [res] = await run(ex, call("echo", {"text": "hi"}, "1"))
    assert res.result.data == "hi"


async def test_validation_error_names_the_fields() -> None:
    async def weather(inp: CityInput, ctx: ToolContext) -> str:
        return inp.city

    ex = make()
    ex.register(Tool(name="w", description="", do=weather, input_model=CityInput))
    [res] = await run(ex, call("w", {"town": 3}, "1"))
    assert res.result.status == "error"
    assert res.result.error_kind == "invalid_input"
    assert res.result.message == "Invalid input for tool 'w': city: Field required"


async def test_permission_is_fail_closed_without_a_handler() -> None:
    ran: list[str] = []

    async def rm(inp: EchoInput, ctx: ToolContext) -> str:
        ran.append(inp.text)
        return "removed"

    ex = make(unhandled="deny")
    ex.register(
        Tool(name="rm", description="", do=rm, input_model=EchoInput, requires_permission=True)
    )
    [res] = await run(ex, call("rm", {"text": "/"}, "1"))
    assert res.result.error_kind == "denied" and not ran


async def test_permission_asks_once_per_input_and_is_cached() -> None:
    asked: list[PermissionRequest] = []

    async def handler(req: PermissionRequest) -> bool:
        asked.append(req)
        return req.tool_input["text"] == "ok"

    store = MemoryStore()
    ex = make(store, permission_handler=handler)
    ex.register(
        Tool(
            name="rm",
            description="",
            do=echo,
            input_model=EchoInput,
            requires_permission=lambda inp: inp.text != "free",
        )
    )
    r1 = await run(ex, call("rm", {"text": "ok"}, "1"), call("rm", {"text": "ok"}, "2"))
    assert [r.result.status for r in r1] == ["success", "success"]
    assert len(asked) == 1  # the decision is stored per (tool, input)
    [denied] = await run(ex, call("rm", {"text": "no"}, "3"))
    assert denied.result.error_kind == "denied"
    [free] = await run(ex, call("rm", {"text": "free"}, "4"))
    assert free.result.status == "success" and len(asked) == 2
    assert await store.get_permission("rm", {"text": "ok", "delay": 0.0}) == "granted"


async def test_store_without_permissions_denies() -> None:
    class NoPerms(MemoryStore):
        @property
        def capabilities(self) -> StoreCapabilities:
            return StoreCapabilities()

    async def yes(req: PermissionRequest) -> bool:
        return True

    ex = make(NoPerms(), permission_handler=yes)
    ex.register(
        Tool(name="rm", description="", do=echo, input_model=EchoInput, requires_permission=True)
    )
    [res] = await run(ex, call("rm", {}, "1"))
    assert res.result.error_kind == "denied"


async def test_max_retries_retries_any_tool_with_backoff_unless_it_opts_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    attempts: list[int] = []

    async def flaky(inp: EchoInput, ctx: ToolContext) -> str:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError("flaky")
        return f"ok after {ctx.attempt} ({ctx.idempotency_key})"

    ex = make(max_retries=3)
    ex.register(Tool(name="get", description="", do=flaky, input_model=EchoInput))
    ex.register(Tool(name="post", description="", do=flaky, input_model=EchoInput, max_retries=0))
    began = trio.current_time()
    [ok] = await run(ex, call("get", {}, "c1"))
    assert ok.result.data == "ok after 3 (s1:c1)"
    assert trio.current_time() - began == pytest.approx(0.2 + 0.4)
    attempts.clear()
    [failed] = await run(ex, call("post", {}, "c2"))
    assert attempts == [1]
    assert failed.result.error_kind == "failed"
    assert failed.result.message == "Tool 'post' raised ConnectionError: flaky (after 1 attempt)."


async def test_timeout_gives_a_timeout_result(autojump_clock: trio.testing.MockClock) -> None:
    ex = make()
    ex.register(Tool(name="slow", description="", do=echo, input_model=EchoInput, timeout_s=2))
    [res] = await run(ex, call("slow", {"delay": 60}, "1"))
    assert res.result.error_kind == "timeout"
    assert res.result.message == "Tool 'slow' timed out after 2s."


async def test_parallel_safe_tools_run_concurrently_results_in_call_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    rec = Recorder()
    ex = make(recorder=rec, max_concurrency=2)
    ex.register(
        Tool(name="read", description="", do=echo, input_model=EchoInput, parallel_safe=True)
    )
    began = trio.current_time()
    results = await run(
        ex,
        call("read", {"text": "a", "delay": 3}, "1"),
        call("read", {"text": "b", "delay": 1}, "2"),
        call("read", {"text": "c", "delay": 1}, "3"),
    )
    # limit 2: never more than two at once, so 3 s or 4 s depending on who starts first; never 5
    assert round(trio.current_time() - began) in (3, 4)
    assert [r.result.data for r in results] == ["a", "b", "c"]  # call order
    finished = [e.call_id for e in rec.of("tool_use_result")]
    assert sorted(finished) == ["1", "2", "3"]


async def test_unsafe_tools_run_sequentially(autojump_clock: trio.testing.MockClock) -> None:
    ex = make()
    ex.register(Tool(name="write", description="", do=echo, input_model=EchoInput))
    began = trio.current_time()
    await run(ex, call("write", {"delay": 1}, "1"), call("write", {"delay": 1}, "2"))
    assert trio.current_time() - began == pytest.approx(2)


async def test_a_failing_parallel_tool_cancels_its_siblings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def boom(inp: EchoInput, ctx: ToolContext) -> str:
        await trio.sleep(1)
        raise RuntimeError("disk on fire")

    ex = make()
    ex.register(
        Tool(name="read", description="", do=echo, input_model=EchoInput, parallel_safe=True)
    )
    ex.register(
        Tool(
            name="boom",
            description="",
            do=boom,
            input_model=EchoInput,
            parallel_safe=True,
            max_retries=0,
        )
    )
    began = trio.current_time()
    results = await run(ex, call("read", {"delay": 100}, "1"), call("boom", {}, "2"))
    assert trio.current_time() - began == pytest.approx(1)
    assert [r.result.status for r in results] == ["aborted", "error"]
    assert "sibling call 2 (boom) failed" in (results[0].result.message or "")


async def test_results_are_normalized() -> None:
    class Bad:
        pass

    assert normalize_result("x") == ToolResultData(status="success", data="x")
    assert normalize_result({"a": [1]}).data == {"a": [1]}
    bad = normalize_result({"a": Bad()})
    assert bad.status == "error" and "not JSON-serializable" in (bad.message or "")
    parts = normalize_result([ContentPart(type="text", text="hi")])
    assert parts.data == "hi" and parts.content is not None


def test_render_data_never_reaches_the_model() -> None:
    data = ToolResultData(status="success", data={"ok": 1}, render_data={"email": "a@b.c"})
    assert format_tool_result_content(data) == '{"ok": 1}'
    err = ToolResultData(status="error", message="nope", data="detail", render_data="secret")
    assert format_tool_result_content(err) == "Error: nope\ndetail"


_ids = st.sampled_from(["a", "b", "c", "d"])
_msg = st.one_of(
    st.builds(
        lambda ids: Message(
            sender="agent", tool_calls=tuple(ToolCall(tool_name="t", id=i) for i in ids)
        ),
        st.lists(_ids, max_size=3, unique=True),
    ),
    st.builds(
        lambda ids: Message(
            sender="user",
            text="tool results",
            tool_results=tuple(
                ToolResult(tool_name="t", call_id=i, result=ToolResultData(status="success"))
                for i in ids
            ),
        ),
        st.lists(_ids, max_size=3),
    ),
    st.builds(lambda t: Message(sender="user", text=t), st.text(max_size=5)),
    st.builds(lambda t: Message(sender="agent", text=t), st.text(max_size=5)),
)


@given(st.lists(_msg, max_size=12))
def test_repair_history_leaves_no_orphan_and_no_duplicate(messages: list[Message]) -> None:
    repaired = repair_history(messages)
    assert repair_history(repaired) == repaired  # idempotent
    answered: set[str] = set()  # ids answered since the call that last opened them
    for i, msg in enumerate(repaired):
        for result in msg.tool_results or ():
            assert result.call_id not in answered
            answered.add(result.call_id)
        if msg.sender == "agent" and msg.tool_calls:
            open_ids = {c.id for c in msg.tool_calls if c.id}
            answered -= open_ids  # a later call reusing an id is a new call: it gets a result
            following: set[str] = set()
            for nxt in repaired[i + 1 :]:
                if not nxt.tool_results:
                    break
                following |= {r.call_id for r in nxt.tool_results}
            assert open_ids <= following
    # every original non-tool message survives, in order
    plain = [m for m in messages if not m.tool_results]
    assert [m for m in repaired if not m.tool_results] == plain
