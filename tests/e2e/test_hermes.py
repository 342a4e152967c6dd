"""The Hermes adapter against the real ``hermes acp`` 0.19.0 and the scripted model server.

Hermes runs from its own venv (``scripts/install-runtimes hermes``) with a private per-identity
``HERMES_HOME`` and only ever talks to the model server on 127.0.0.1 (custom provider,
Chat Completions). Covered: a text turn, a terminal tool call with its result, a 500 reported
honestly (Hermes itself answers ``end_turn`` with the error as text), cancel mid-stream, and a
session resumed with ``session/load`` in a new process. After every run no process of it is left.

If Hermes is not installed these tests FAIL with the install command.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.hermes import HermesAdapter, HermesConfig
from contract import check_stream
from orchestrator.core.adapter import RunHandle
from orchestrator.core.events import (
    Cost,
    Done,
    ErrorEvent,
    RuntimeEvent,
    TextDelta,
    ToolCall,
    ToolResult,
)
from orchestrator.model_server import ModelServer, serve_model_server

from .kit import alive, drive, installed, start

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-hermes-0123456789abcdef"


def script() -> dict[str, Any]:
    return {
        "model": "fake-model",
        "conversations": [
            {
                "name": "text",
                "marker": "[[e2e:text]]",
                "turns": [{"text": "FINAL: hello from hermes"}],
            },
            {
                "name": "tool",
                "marker": "[[e2e:tool]]",
                "turns": [
                    {
                        "tool_calls": [
                            {"name": "terminal", "input": {"command": "echo hi-from-tool"}}
                        ]
                    },
                    {"text": "TOOL_RESULT_SEEN"},
                ],
            },
            {
                "name": "e500",
                "marker": "[[e2e:500]]",
                "turns": [{"fault": {"kind": "server_error", "times": 99}, "text": "never"}],
            },
            {
                "name": "slow",
                "marker": "[[e2e:slow]]",
                "turns": [{"text": "slow " * 200, "chunk_chars": 5, "chunk_delay_s": 0.05}],
            },
            {
                "name": "resume",
                "marker": "[[e2e:resume]]",
                "turns": [{"text": "FIRST"}, {"text": "SECOND after resume"}],
            },
        ],
    }


@pytest.fixture(scope="module")
def hermes_binary() -> Path:
    return installed("hermes")


@pytest.fixture
async def server() -> AsyncIterator[ModelServer]:
    async with serve_model_server(script()) as srv:
        yield srv


def make_adapter(server: ModelServer, root: Path, **kw: Any) -> HermesAdapter:
    return HermesAdapter(
        HermesConfig(base_url=server.base_url, state_root=root / "homes", api_max_retries=1, **kw)
    )


async def run_once(
    adapter: HermesAdapter,
    message: str,
    cwd: Path,
    *,
    abort_on_text: bool = False,
    **opts: Any,
) -> tuple[list[RuntimeEvent], RunHandle]:
    env = {"OPENAI_API_KEY": KEY}
    run = await start(adapter, message, cwd, agent_id="hermes-e2e", env=env, **opts)
    child = adapter.child_for(run)
    assert child is not None
    events = await drive(adapter, run, deadline_s=90, abort_on_text=abort_on_text)
    check_stream(events)
    assert not alive(child.pid), "hermes outlived its run"
    return events, run


async def test_text_turn(hermes_binary: Path, server: ModelServer, tmp_path: Path) -> None:
    async with make_adapter(server, tmp_path) as adapter:
        events, _ = await run_once(adapter, "[[e2e:text]] hello", tmp_path / "ws")
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "FINAL: hello from hermes"
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert any(isinstance(e, Cost) and e.usage.input_tokens > 0 for e in events)
    config = (tmp_path / "homes" / "hermes-e2e" / "config.yaml").read_text()
    assert KEY not in config and "${OPENAI_API_KEY}" in config
    assert (tmp_path / "homes" / "hermes-e2e").stat().st_mode & 0o777 == 0o700


async def test_tool_call_and_result(
    hermes_binary: Path, server: ModelServer, tmp_path: Path
) -> None:
    async with make_adapter(server, tmp_path) as adapter:
        events, _ = await run_once(adapter, "[[e2e:tool]] run it", tmp_path / "ws")
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["terminal"]
    assert results[0].tool_call_id == calls[0].tool_call_id
    assert not results[0].is_error and "hi-from-tool" in results[0].output
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert done.summary.strip() == "TOOL_RESULT_SEEN"
    tool_requests = server.requests_for("tool")
    assert len(tool_requests) >= 2


async def test_model_500_is_an_honest_error(
    hermes_binary: Path, server: ModelServer, tmp_path: Path
) -> None:
    async with make_adapter(server, tmp_path) as adapter:
        events, _ = await run_once(adapter, "[[e2e:500]] fail", tmp_path / "ws")
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert errors and errors[0].fatal and errors[0].code == "server_error"
    assert "HTTP 500" in errors[0].message
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "error"


async def test_cancel_mid_stream(hermes_binary: Path, server: ModelServer, tmp_path: Path) -> None:
    async with make_adapter(server, tmp_path) as adapter:
        events, _ = await run_once(adapter, "[[e2e:slow]] go", tmp_path / "ws", abort_on_text=True)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "aborted"
    assert not any(isinstance(e, ErrorEvent) and e.fatal for e in events)


async def test_resume_in_a_new_process(
    hermes_binary: Path, server: ModelServer, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    async with make_adapter(server, tmp_path) as adapter:
        first, run = await run_once(adapter, "[[e2e:resume]] first", ws)
        blob = await adapter.session_codec.serialize(run)
    assert isinstance(first[-1], Done) and first[-1].summary == "FIRST"
    async with make_adapter(server, tmp_path) as adapter:
        restored = await adapter.session_codec.restore(blob)
        assert restored.run_id == run.run_id
        second, again = await run_once(adapter, "and again", ws, resume_session_id=restored.run_id)
    text = "".join(e.text for e in second if isinstance(e, TextDelta))
    assert text == "SECOND after resume"  # the replayed history is not new output
    assert again.run_id == run.run_id
    last = server.requests_for("resume")[-1]
    assert last.roles.count("user") == 2


async def test_unknown_session_fails_clearly(
    hermes_binary: Path, server: ModelServer, tmp_path: Path
) -> None:
    async with make_adapter(server, tmp_path) as adapter:
        events, _ = await run_once(
            adapter, "hello", tmp_path / "ws", resume_session_id=str(uuid.uuid4())
        )
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert errors and errors[0].code == "session_not_found"
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
