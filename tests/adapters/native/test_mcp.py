"""MCP servers on the native runtime, against a real MCP server (``mcp_server.py``, written on
the ``mcp`` package's own server API): a stdio child and streamable HTTP on 127.0.0.1 port 0,
each driven through the native loop by the scripted model server; a server that dies mid-run;
a server that cannot start. No fake clocks here: the servers are real processes and sockets, and
every wait has a deadline (``collect_run``'s)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve  # pyright: ignore[reportUnknownVariableType]
from mcp_types import CallToolResult, EmbeddedResource, ImageContent, TextContent
from mcp_types import TextResourceContents as TextResource

from adapters.native import NativeAdapter
from adapters.native.anvia import AgentBuilder
from adapters.native.mcp import (
    McpHttpServer,
    McpServer,
    McpStdioServer,
    mcp_result_data,
    mcp_tool_name,
    open_mcp_servers,
)
from adapters.native.models.providers import create_adapter
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.tools import ToolContext
from contract import check_stream, collect_run
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.errors import ConfigError, McpStartError
from orchestrator.core.events import Done, ErrorEvent, RuntimeEvent, Status, ToolCall, ToolResult
from orchestrator.core.lifetime import ProcessIdentity
from orchestrator.model_server import ModelServer, serve_model_server

SERVER = Path(__file__).with_name("mcp_server.py")
CTX = ToolContext(call_id="c1", tool_name="mcp__web__add", idempotency_key="s:c1")


def stdio(name: str = "calc", **env: str) -> McpStdioServer:
    return McpStdioServer(name, sys.executable, [str(SERVER)], env=env)


def server_of(pid_file: Path) -> ProcessIdentity:
    """The server's identity from its pid file (its pid is its PID namespace's)."""
    pid, start = pid_file.read_text().split()
    return ProcessIdentity(int(pid), int(start))


def script(*turns: dict[str, Any]) -> dict[str, Any]:
    return {"conversations": [{"name": "mcp", "turns": list(turns)}]}


def call(tool: str, /, **args: Any) -> dict[str, Any]:
    return {"name": tool, "input": args}


async def run_native(
    model: ModelServer, servers: list[McpServer], tmp_path: Path
) -> list[RuntimeEvent]:
    def factory(opts: StartOpts) -> Any:
        return create_adapter(
            provider="anthropic", model="scripted-model", api_key="sk-test-0", base_url=model.url
        )

    async with NativeAdapter(
        model_factory=factory, workspace_tools=False, builtin_tools=False, mcp_servers=servers
    ) as adapter:
        opts = StartOpts(agent_id="a", session_key="k", message="work", cwd=str(tmp_path))
        handle = await adapter.start(TaskHandle(), opts)
        events = await collect_run(adapter.events(handle), deadline_s=60)
    check_stream(events)
    return events


def results(events: list[RuntimeEvent]) -> list[tuple[str, ToolResult]]:
    names = {e.tool_call_id: e.name for e in events if isinstance(e, ToolCall)}
    return [(names[e.tool_call_id], e) for e in events if isinstance(e, ToolResult)]


def offered_tools(model: ModelServer) -> dict[str, Any]:
    return {t["name"]: t for t in model.requests[0].body["tools"]}


def sent_tool_results(model: ModelServer) -> list[str]:
    """The tool-result texts the model saw in its last request."""
    out: list[str] = []
    for message in model.requests[-1].body["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                inner = block["content"]
                out.append(inner if isinstance(inner, str) else json.dumps(inner))
    return out


async def test_stdio_server_tool_round_trip_through_the_native_loop(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    turns = script(
        {"text": "Adding. ", "tool_calls": [call("mcp__calc__add", a=2, b=40)]},
        {"text": "Shouting. ", "tool_calls": [call("mcp__calc__shout", text="hi")]},
        {"text": "The answer is 42."},
    )
    async with serve_model_server(turns) as model:
        events = await run_native(model, [stdio(MCP_TEST_PID_FILE=str(pid_file))], tmp_path)

    tools = offered_tools(model)
    assert sorted(tools) == [
        "mcp__calc__add",
        "mcp__calc__broken",
        "mcp__calc__die",
        "mcp__calc__grow",
        "mcp__calc__picture",
        "mcp__calc__shout",
        "mcp__calc__wait",
    ]
    # the server's own JSON Schema reaches the model as it gave it
    assert tools["mcp__calc__add"]["input_schema"]["required"] == ["a", "b"]
    assert tools["mcp__calc__add"]["description"] == "Add two integers."
    got = results(events)
    assert [(n, r.output, r.is_error) for n, r in got] == [
        ("mcp__calc__add", "42", False),
        ("mcp__calc__shout", "HI", False),
    ]
    assert any("42" in text for text in sent_tool_results(model))
    details = [e.detail for e in events if isinstance(e, Status) and e.detail]
    assert "mcp: calc (7 tools)" in details
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    # the server was a child of the run: gone (and reaped) when its stream closed
    assert not server_of(pid_file).alive()


@asynccontextmanager
async def http_mcp_server() -> AsyncGenerator[tuple[str, trio.CancelScope]]:
    """The test server over streamable HTTP on 127.0.0.1, port 0; cancel the scope to kill it."""
    from .mcp_server import app

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.graceful_timeout = 0.1
    scope = trio.CancelScope()

    async def run(*, task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await serve(app.streamable_http_app(), config, task_status=task_status)

    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(run)
        try:
            yield f"{binds[0]}/mcp", scope
        finally:
            scope.cancel()


async def test_streamable_http_server_tool_round_trip(tmp_path: Path) -> None:
    turns = script(
        {"tool_calls": [call("mcp__web__add", a=1, b=2), call("mcp__web__broken", reason="no")]},
        {"text": "Three."},
    )
    async with http_mcp_server() as (url, _), serve_model_server(turns) as model:
        server = McpHttpServer("web", url, headers={"X-Team": "ringleader"})
        events = await run_native(model, [server], tmp_path)
    got = dict(results(events))
    assert got["mcp__web__add"].output == "3"
    assert not got["mcp__web__add"].is_error
    # a tool error (isError) is an error result carrying the server's text
    assert got["mcp__web__broken"].is_error
    assert "broken: no" in got["mcp__web__broken"].output
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"


async def test_a_server_that_asks_is_denied_without_anyone_to_ask(tmp_path: Path) -> None:
    turns = script({"tool_calls": [call("mcp__calc__add", a=1, b=2)]}, {"text": "Denied."})
    async with serve_model_server(turns) as model:
        server = McpStdioServer("calc", sys.executable, [str(SERVER)], permission="ask")
        events = await run_native(model, [server], tmp_path)
    ((name, result),) = results(events)
    assert name == "mcp__calc__add"
    assert result.is_error and "Permission denied" in result.output


async def test_a_tool_list_change_reaches_the_next_turn(tmp_path: Path) -> None:
    turns = script(
        {"tool_calls": [call("mcp__calc__grow", name="extra")]},
        {"tool_calls": [call("mcp__calc__extra")]},
        {"text": "Grown."},
    )
    async with serve_model_server(turns) as model:
        events = await run_native(model, [stdio()], tmp_path)
    got = results(events)
    assert [(n, r.output, r.is_error) for n, r in got] == [
        ("mcp__calc__grow", "grew extra", False),
        ("mcp__calc__extra", "I am extra", False),
    ]
    first, second = model.requests[0], model.requests[1]
    assert "mcp__calc__extra" not in {t["name"] for t in first.body["tools"]}
    assert "mcp__calc__extra" in {t["name"] for t in second.body["tools"]}
    details = [e.detail for e in events if isinstance(e, Status) and e.detail]
    assert details.count("mcp: calc (7 tools)") == 1
    assert "mcp: calc (8 tools)" in details


async def test_stdio_server_that_dies_mid_run(tmp_path: Path) -> None:
    turns = script(
        {"tool_calls": [call("mcp__calc__add", a=1, b=1)]},
        {"tool_calls": [call("mcp__calc__die", code=7)]},
        {"tool_calls": [call("mcp__calc__add", a=2, b=2)]},
        {"text": "The calculator is gone."},
    )
    async with serve_model_server(turns) as model:
        events = await run_native(model, [stdio()], tmp_path)
    got = results(events)
    assert [n for n, _ in got] == ["mcp__calc__add", "mcp__calc__die", "mcp__calc__add"]
    assert got[0][1].output == "2"
    for _, result in got[1:]:
        assert result.is_error
        assert "MCP server 'calc' died: exited with status 7" in result.output
        assert "dying with 7" in result.output  # the stderr tail says why
    died = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(died) == 1
    assert died[0].code == "mcp_server_died" and not died[0].fatal
    # the model saw the failure and the run went on to its answer
    assert any("died" in text for text in sent_tool_results(model))
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"


async def test_streamable_http_server_that_dies_mid_run(tmp_path: Path) -> None:
    async with http_mcp_server() as (url, kill):
        async with open_mcp_servers([McpHttpServer("web", url)]) as hub:
            add = next(t for t in hub.tools if t.name == "mcp__web__add")
            first = await add.do({"a": 1, "b": 1}, CTX)
            assert first.data == "2"
            kill.cancel()
            with trio.fail_after(30):
                second = await add.do({"a": 1, "b": 1}, CTX)
                third = await add.do({"a": 1, "b": 1}, CTX)
            assert hub.died("web") is not None
    for result in (second, third):
        assert result.status == "error"
        assert "MCP server 'web' died" in (result.message or "")


async def test_abort_during_an_mcp_call_ends_the_run_and_the_server(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    turns = script({"tool_calls": [call("mcp__calc__wait", seconds=600)]}, {"text": "late"})
    async with serve_model_server(turns) as model:

        def factory(opts: StartOpts) -> Any:
            return create_adapter(
                provider="anthropic", model="m", api_key="sk-test-0", base_url=model.url
            )

        async with NativeAdapter(
            model_factory=factory,
            workspace_tools=False,
            builtin_tools=False,
            mcp_servers=[stdio(MCP_TEST_PID_FILE=str(pid_file))],
        ) as adapter:
            opts = StartOpts(agent_id="a", session_key="k", message="work", cwd=str(tmp_path))
            handle = await adapter.start(TaskHandle(), opts)
            events: list[RuntimeEvent] = []
            with trio.fail_after(60):
                async with adapter.events(handle) as stream:
                    async for event in stream:
                        events.append(event)
                        if isinstance(event, ToolCall):
                            await adapter.abort(handle)
    check_stream(events)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "aborted"
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.is_error
    assert not server_of(pid_file).alive()


async def test_server_that_cannot_start_fails_the_run_clearly(tmp_path: Path) -> None:
    async with serve_model_server(script({"text": "unused"})) as model:
        events = await run_native(
            model, [stdio("ok"), stdio("db", MCP_TEST_EXIT_AT_START="2")], tmp_path
        )
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and errors[0].fatal
    assert errors[0].code == "mcp_start_failed"
    assert "MCP server 'db'" in errors[0].message
    assert "exited with status 2" in errors[0].message
    assert "cannot open the database" in errors[0].message
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "error"
    assert model.requests == []  # the model was never called


async def test_missing_command_is_a_typed_start_error() -> None:
    with pytest.raises(McpStartError) as caught:
        async with open_mcp_servers([McpStdioServer("gone", "/nonexistent/mcp-server")]):
            pytest.fail("the block must not run")
    assert caught.value.server == "gone"
    assert "command not found or not executable: /nonexistent/mcp-server" in str(caught.value)


async def test_unreachable_http_server_is_a_typed_start_error() -> None:
    # a port that was just free: nothing listens there
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(McpStartError) as caught:
        async with open_mcp_servers([McpHttpServer("web", f"http://127.0.0.1:{port}/mcp")]):
            pytest.fail("the block must not run")
    assert caught.value.server == "web"
    assert "could not start" in str(caught.value)


async def test_an_anvia_agent_uses_an_mcp_servers_tools() -> None:
    """Anvia's ``.mcp(servers)``: a hub's tools are ordinary tools for the agent."""
    model = ScriptedModel(
        [Reply(tool_calls=[("mcp__calc__add", {"a": 4, "b": 5})]), Reply(text="nine")]
    )
    async with open_mcp_servers([stdio()]) as hub:
        agent = AgentBuilder("calc-agent", model).tools(hub.tools).build()
        response = await agent.prompt("4 + 5?").send()
    assert response.output == "nine"
    results = [r.result for m in response.messages for r in m.tool_results or ()]
    assert [(r.status, r.data) for r in results] == [("success", "9")]
    assert "mcp__calc__add" in [t.name for t in model.requests[0].tools]


def test_tool_names_are_namespaced_like_the_clis() -> None:
    assert mcp_tool_name("files", "read") == "mcp__files__read"
    assert mcp_tool_name("my-srv", "get.thing/v2") == "mcp__my-srv__get_thing_v2"
    long = mcp_tool_name("server", "x" * 100)
    assert len(long) == 64 and long.startswith("mcp__server__xxx")
    assert long != mcp_tool_name("server", "x" * 101)  # the hash keeps cut names apart


def test_server_options_are_validated() -> None:
    with pytest.raises(ConfigError, match="letters, digits"):
        McpStdioServer("my server", "x")
    with pytest.raises(ConfigError, match="http:// or https://"):
        McpHttpServer("web", "ftp://example.invalid/mcp")
    with pytest.raises(ConfigError, match="positive"):
        McpStdioServer("s", "x", call_timeout_s=0)


async def test_duplicate_server_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="two MCP servers are named 'a'"):
        async with open_mcp_servers([McpStdioServer("a", "x"), McpStdioServer("a", "y")]):
            pytest.fail("the block must not run")


def test_results_map_to_ours() -> None:
    image = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    mixed = mcp_result_data(CallToolResult(content=[TextContent(text="a pixel"), image]))
    assert mixed.status == "success" and mixed.data == "a pixel"
    assert mixed.content is not None
    assert [p.type for p in mixed.content] == ["text", "image"]
    assert mixed.content[1].source is not None
    assert mixed.content[1].source.media_type == "image/png"
    structured = mcp_result_data(CallToolResult(content=[], structured_content={"n": 1}))
    assert structured.data == {"n": 1}
    resource = EmbeddedResource(resource=TextResource(uri="file:///a.txt", text="inside"))
    assert mcp_result_data(CallToolResult(content=[resource])).data == "inside"
    failed = mcp_result_data(CallToolResult(content=[TextContent(text="nope")], is_error=True))
    assert failed.status == "error" and failed.message == "nope"


def test_native_declares_mcp() -> None:
    assert NativeAdapter().capabilities().mcp is True
