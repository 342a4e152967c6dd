"""The OpenClaw adapter against a real OpenClaw 2026.9.6 gateway and the scripted model server.

ONE gateway serves the whole module (it takes ~11 s to start idle, far longer on a loaded machine,
and ~1.2 GB): a background thread runs the model server and a :class:`GatewayManager`-managed
gateway (started through the shared child-process driver, killed with its process group when the
module ends); each test drives it through an :class:`OpenClawAdapter` attached by URL and token.
Scenarios: text, a tool call and its result, a 500 with fail-fast, abort mid-stream, and resume of
a session after the gateway restarted.

If OpenClaw is not installed these tests FAIL with the install command (CI installs it with
``scripts/install-runtimes``).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from adapters._runtimes import install_hint, runtime_binary, runtime_path_dirs
from adapters.openclaw import (
    GatewayManager,
    GatewaySettings,
    ModelProvider,
    OpenClawAdapter,
    OpenClawConfig,
)
from contract import check_stream, collect_run
from orchestrator.core.adapter import RunHandle, StartOpts, TaskHandle
from orchestrator.core.errors import RuntimeNotFoundError
from orchestrator.core.events import (
    Cost,
    Done,
    ErrorEvent,
    RuntimeEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    event_to_json,
)
from orchestrator.model_server import ModelServer, serve_model_server

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-openclaw-00000000"
MODEL = "fake-model"
DEADLINE = 240.0
"""A first turn on a cold gateway takes ~15 s idle; far more on a loaded 2-core machine."""

SCRIPT: dict[str, Any] = {
    "model": MODEL,
    "conversations": [
        {
            "name": "text",
            "marker": "[[e2e:text]]",
            "turns": [{"text": "FINAL: hello from openclaw"}],
        },
        {
            "name": "tool",
            "marker": "[[e2e:tool]]",
            "turns": [
                {"tool_calls": [{"name": "exec", "input": {"command": "echo hello-from-tool"}}]},
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
            "turns": [{"text": "slow " * 200, "chunk_chars": 5, "chunk_delay_s": 0.1}],
        },
        {
            "name": "resume",
            "marker": "[[e2e:resume]]",
            "turns": [{"text": "FIRST"}, {"text": "SECOND after restart"}],
        },
    ],
}


@attrs.define
class SharedGateway:
    """The module's one gateway and model server, living in a background trio thread."""

    url: str = ""
    token: str = ""
    workspace: Path | None = None
    server: ModelServer | None = None
    manager: GatewayManager | None = None
    trio_token: trio.lowlevel.TrioToken | None = None
    error: BaseException | None = None
    ready: threading.Event = attrs.field(factory=threading.Event)
    _stop: trio.Event | None = None
    _thread: threading.Thread | None = None

    def start(self, state: Path) -> None:
        self._thread = threading.Thread(target=trio.run, args=(self._main, state), daemon=True)
        self._thread.start()
        self.ready.wait(DEADLINE + 60)
        if self.error is not None:
            raise self.error
        if not self.url:
            raise RuntimeError("the shared OpenClaw gateway did not start in time")

    async def _main(self, state: Path) -> None:
        self.trio_token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        try:
            async with serve_model_server(SCRIPT) as server, trio.open_nursery() as nursery:
                self.server = server
                provider = ModelProvider(base_url=server.base_url, api_key=KEY, models=(MODEL,))
                manager = GatewayManager(
                    GatewaySettings(provider=provider, state_dir=state / "state",
                                    workspace=state / "workspace", startup_timeout=DEADLINE)
                )  # fmt: skip
                manager.bind(nursery)
                self.manager = manager
                await manager.ensure()
                self.url, self.token = manager.url or "", manager.token or ""
                self.workspace = manager.workspace
                self.ready.set()
                await self._stop.wait()
                await manager.aclose()
                nursery.cancel_scope.cancel()
        except Exception as exc:  # reported by start() in the test thread
            self.error = exc
        finally:
            self.ready.set()

    def restart(self) -> None:
        """Restart the gateway (same state directory, same port and token)."""
        assert self.manager is not None and self.trio_token is not None
        trio.from_thread.run(self.manager.restart, trio_token=self.trio_token)
        self.url = self.manager.url or ""

    def stop(self) -> None:
        if self._stop is not None and self.trio_token is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self.trio_token)
        if self._thread is not None:
            self._thread.join(60)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedGateway]:
    try:
        runtime_binary("openclaw")
        runtime_path_dirs("openclaw")
    except RuntimeNotFoundError as exc:
        pytest.fail(f"OpenClaw is not installed: {install_hint('openclaw')} ({exc})")
    shared = SharedGateway()
    try:
        shared.start(tmp_path_factory.mktemp("openclaw"))
        yield shared
    finally:
        shared.stop()
    child_gone = shared.manager is None or shared.manager.child is None
    assert child_gone, "the gateway outlived the module"


def attached(gateway: SharedGateway, **config: Any) -> OpenClawAdapter:
    return OpenClawAdapter(
        OpenClawConfig(url=gateway.url, token=gateway.token, workspace=gateway.workspace, **config)
    )


async def run_once(
    adapter: OpenClawAdapter, message: str, *, key: str | None = None, abort_after: int = 0
) -> list[RuntimeEvent]:
    run = await adapter.start(
        TaskHandle(),
        StartOpts(
            agent_id="e2e", session_key=key or f"e2e-{uuid.uuid4().hex[:8]}", message=message
        ),
    )
    if abort_after:
        events: list[RuntimeEvent] = []
        stream = adapter.events(run)
        with trio.fail_after(DEADLINE):
            async for event in stream:
                events.append(event)
                if sum(isinstance(e, TextDelta) for e in events) == abort_after:
                    with trio.fail_after(30):
                        await adapter.abort(run)
                if isinstance(event, Done):
                    break
        await stream.aclose()
    else:
        events = await collect_run(adapter.events(run), deadline_s=DEADLINE)
    check_stream(events)
    assert run.run_id and all(e.run_id == run.run_id for e in events)
    assert KEY not in "".join(event_to_json(e) for e in events)
    return events


def text(events: list[RuntimeEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == "assistant")


def done(events: list[RuntimeEvent]) -> Done:
    last = events[-1]
    assert isinstance(last, Done)
    return last


async def test_text(gateway: SharedGateway) -> None:
    async with attached(gateway) as adapter:
        health = await adapter.health()
        assert health.ok and "2026.9.6" in (health.message or "")
        events = await run_once(adapter, "[[e2e:text]] say hello")
    assert text(events) == "FINAL: hello from openclaw"  # increments, not doubled by chat frames
    assert done(events).reason == "success"
    costs = [e for e in events if isinstance(e, Cost)]
    assert costs and costs[-1].cost_usd is None
    assert all(c.usage.input_tokens > 0 for c in costs)  # never an unknown input as 0


async def test_tool_call_and_result(gateway: SharedGateway) -> None:
    async with attached(gateway) as adapter:
        events = await run_once(adapter, "[[e2e:tool]] run the check")
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(c.name, c.input) for c in calls] == [("exec", {"command": "echo hello-from-tool"})]
    assert results[0].tool_call_id == calls[0].tool_call_id
    assert "hello-from-tool" in results[0].output and not results[0].is_error
    assert text(events) == "TOOL_RESULT_SEEN" and done(events).reason == "success"
    assert gateway.server is not None
    tool_rounds = [r for r in gateway.server.requests if r.conversation == "tool"]
    assert len(tool_rounds) == 2


async def test_500_with_fail_fast(gateway: SharedGateway) -> None:
    async with attached(gateway, retry_limit=1) as adapter:
        with trio.fail_after(DEADLINE):
            events = await run_once(adapter, "[[e2e:500]] fail please")
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and errors[0].code == "server_error"
    assert "HTTP 500" in errors[0].message and "fail-fast" in errors[0].message
    assert done(events).reason == "error"
    assert gateway.server is not None
    attempts = [r for r in gateway.server.requests if r.conversation == "e500"]
    assert 2 <= len(attempts) <= 3  # stopped after one retry, not OpenClaw's nine attempts


async def test_abort_mid_stream(gateway: SharedGateway) -> None:
    async with attached(gateway) as adapter:
        events = await run_once(adapter, "[[e2e:slow]] go slow", abort_after=3)
    assert [e for e in events if isinstance(e, Done)] == [events[-1]]
    assert done(events).reason == "aborted"
    assert not any(isinstance(e, ErrorEvent) for e in events)
    assert text(events).startswith("slow slow slow")
    assert gateway.server is not None
    slow = next(r for r in gateway.server.requests if r.conversation == "slow")
    with trio.fail_after(30):
        assert await gateway.server.settled(slow) == "disconnected"  # the model stream closed


async def test_resume_after_gateway_restart(gateway: SharedGateway) -> None:
    key = f"e2e-resume-{uuid.uuid4().hex[:8]}"
    async with attached(gateway) as adapter:
        first = await run_once(adapter, "[[e2e:resume]] first", key=key)
        blob = await adapter.session_codec.serialize(
            RunHandle(adapter_id="openclaw", session_key=key)
        )
    assert text(first) == "FIRST"
    await trio.to_thread.run_sync(gateway.restart)
    async with attached(gateway) as adapter:
        restored = await adapter.session_codec.restore(blob)
        run = await adapter.start(
            TaskHandle(),
            StartOpts(
                agent_id="e2e",
                session_key="e2e-other-key",
                message="[[e2e:resume]] again",
                resume_session_id=restored.run_id,
            ),
        )
        second = await collect_run(adapter.events(run), deadline_s=DEADLINE)
    check_stream(second)
    assert text(second) == "SECOND after restart" and done(second).reason == "success"
    assert gateway.server is not None
    last = [r for r in gateway.server.requests if r.conversation == "resume"][-1]
    assert "FIRST" in json.dumps(last.body)  # the resumed transcript carried the first answer
    assert "assistant" in last.roles
