"""The native runtime's model adapters through the real SDKs against the scripted model server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.native import NativeAdapter
from adapters.native.models.providers import create_adapter
from contract import check_stream, collect_run
from orchestrator.core import Cost, Done, StartOpts, TaskHandle, TextDelta, ToolCall, ToolResult
from orchestrator.model_server import serve_model_server

TWO_TURNS: dict[str, Any] = {
    "conversations": [
        {
            "name": "tools",
            "turns": [
                {
                    "text": "Looking. ",
                    "tool_calls": [
                        {"name": "list_files", "input": {"path": "."}},
                        {"name": "list_files", "input": {"path": "sub"}},
                    ],
                    "usage": {"input_tokens": 300, "output_tokens": 20},
                },
                {"text": "Two listings done.", "usage": {"input_tokens": 400, "output_tokens": 10}},
            ],
        }
    ]
}

APIS = [
    ("anthropic", None),
    ("openai", "responses"),
    ("openai", "chat"),
]


def native_on(url: str, base_url: str, provider: str, api: Any, root: Path) -> NativeAdapter:
    def factory(opts: StartOpts) -> Any:
        return create_adapter(
            provider=provider,
            model="scripted-model",
            api_key="sk-test-0000000000",
            base_url=url if provider == "anthropic" else base_url,
            api=api,
        )

    return NativeAdapter(model_factory=factory, workspace=root)


async def run_once(adapter: NativeAdapter, message: str = "list the files") -> list[Any]:
    run = await adapter.start(
        TaskHandle(), StartOpts(agent_id="a", session_key="k", message=message)
    )
    return await collect_run(adapter.events(run), deadline_s=30)


@pytest.mark.parametrize(("provider", "api"), APIS, ids=["anthropic", "responses", "chat"])
async def test_parallel_tool_calls_then_text(provider: str, api: Any, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "sub" / "b.txt").write_text("b")
    async with serve_model_server(TWO_TURNS) as server:
        async with native_on(server.url, server.base_url, provider, api, tmp_path) as adapter:
            events = await run_once(adapter)
    check_stream(events)
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = {e.tool_call_id: e for e in events if isinstance(e, ToolResult)}
    assert [c.input for c in calls] == [{"path": "."}, {"path": "sub"}]
    assert "a.txt" in results[calls[0].tool_call_id].output
    assert results[calls[1].tool_call_id].output == "b.txt"
    text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == "assistant")
    assert text == "Looking. Two listings done."
    costs = [e for e in events if isinstance(e, Cost)]
    assert costs[-1].usage.input_tokens == 700
    assert costs[-1].usage.output_tokens == 30
    assert isinstance(events[-1], Done)
    assert events[-1].reason == "success"
    # the second request replays the first: the prompt prefix is reused
    assert server.prefix_reuse("tools")[0] > 0


@pytest.mark.parametrize(("provider", "api"), APIS, ids=["anthropic", "responses", "chat"])
async def test_rate_limit_is_retried_then_succeeds(provider: str, api: Any, tmp_path: Path) -> None:
    script = {
        "conversations": [
            {
                "name": "c",
                "turns": [
                    {
                        "text": "after the 429",
                        "fault": {"kind": "rate_limit", "times": 1, "retry_after": 0.01},
                    }
                ],
            }
        ]
    }
    async with serve_model_server(script) as server:
        async with native_on(server.url, server.base_url, provider, api, tmp_path) as adapter:
            events = await run_once(adapter)
    check_stream(events)
    assert isinstance(events[-1], Done)
    assert events[-1].reason == "success"
    assert len(server.requests) == 2


async def test_server_error_that_persists_fails_with_a_typed_error(tmp_path: Path) -> None:
    script = {
        "conversations": [
            {"name": "c", "turns": [{"text": "never", "fault": {"kind": "bad_request"}}]}
        ]
    }
    async with serve_model_server(script) as server:
        async with native_on(server.url, server.base_url, "anthropic", None, tmp_path) as adapter:
            events = await run_once(adapter)
    check_stream(events)
    assert isinstance(events[-1], Done)
    assert events[-1].reason == "error"
    assert "sk-test" not in str([e.model_dump() for e in events])


async def test_abort_mid_stream_ends_aborted(tmp_path: Path) -> None:
    script = {
        "conversations": [
            {"name": "c", "turns": [{"text": "s" * 400, "chunk_chars": 4, "chunk_delay_s": 0.05}]}
        ]
    }
    async with serve_model_server(script) as server:
        async with native_on(server.url, server.base_url, "anthropic", None, tmp_path) as adapter:
            run = await adapter.start(
                TaskHandle(), StartOpts(agent_id="a", session_key="k", message="go")
            )
            stream = adapter.events(run)
            first = await anext(aiter(stream))
            while not isinstance(first, TextDelta):
                first = await anext(aiter(stream))
            with trio.fail_after(10):
                await adapter.abort(run)
            events = [first, *await collect_run(stream, deadline_s=10)]
    assert isinstance(events[-1], Done)
    assert events[-1].reason == "aborted"
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert 0 < len(streamed) < 400
