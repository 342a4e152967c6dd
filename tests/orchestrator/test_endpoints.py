"""A runtime's endpoint in connection failures, for every runtime alike: named where the runtime
does not say it, and a refused loopback endpoint fails the run at once (never retried)."""

from __future__ import annotations

import datetime as dt
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters import ScriptedAdapter
from orchestrator.core import (
    ErrorEvent,
    EventFactory,
    RuntimeConfig,
    RuntimeEvent,
    RuntimeRegistry,
    RuntimeSpec,
)
from orchestrator.core.errors import RuntimeStartError
from orchestrator.engine import RestartPolicy, Runner, TaskSpec
from orchestrator.engine.endpoints import loopback_address, name_endpoint, unreachable

TASK = TaskSpec(task_id="t1", title="say hi")


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def listening() -> AsyncIterator[str]:
    """The URL of a loopback port that accepts connections (the kernel's backlog answers)."""
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    async with listener:
        yield f"http://127.0.0.1:{listener.socket.getsockname()[1]}"


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1:8080/v1", ("127.0.0.1", 8080)),
        ("http://localhost:9", ("localhost", 9)),
        ("https://[::1]/v1", ("::1", 443)),
        ("ws://127.0.0.2", ("127.0.0.2", 80)),
        ("https://api.anthropic.com", None),
        ("http://10.0.0.1:80", None),
        ("not a url", None),
        ("http://127.0.0.1:99999", None),
        (None, None),
    ],
)
def test_loopback_address(url: str | None, address: tuple[str, int] | None) -> None:
    assert loopback_address(url) == address


def error(message: str, code: str | None = None) -> ErrorEvent:
    (event,) = [e for e in EventFactory(run_id="r").fail(message, code=code) if e.kind == "error"]
    assert isinstance(event, ErrorEvent)
    return event


def test_a_connection_failure_names_the_endpoint() -> None:
    url = "http://127.0.0.1:8080"
    claude = error("API Error: Connection refused — a firewall or proxy may be blocking it")
    assert name_endpoint(claude, url).message == f"{claude.message} (endpoint: {url})"
    codex = error("stream disconnected before completion: error sending request", code="x")
    assert name_endpoint(codex, url).message.endswith(f"(endpoint: {url})")
    typed = error("the model could not be reached", code="network")
    assert name_endpoint(typed, url).message.endswith(f"(endpoint: {url})")
    # already named, not a connection failure, or no endpoint: unchanged
    named = error(f"connection to {url}/v1/messages failed: ConnectError")
    assert name_endpoint(named, url) is named
    other = error("HTTP 400: prompt is too long", code="invalid_request")
    assert name_endpoint(other, url) is other
    assert name_endpoint(claude, None) is claude


async def test_unreachable_probes_loopback_only(listening: str) -> None:
    port = closed_port()
    why = await unreachable(f"http://127.0.0.1:{port}/v1")
    assert why == (
        f"cannot reach http://127.0.0.1:{port}/v1: connection refused (nothing listens there)"
    )
    assert await unreachable(listening) is None
    assert await unreachable("https://api.invalid.example") is None  # never probed
    assert await unreachable(None) is None


def runner_for(frames: list[dict[str, Any]], base_url: str, tmp_path: Path) -> tuple[Runner, Any]:
    """A runner over one runtime ``x`` configured with ``base_url``; returns it and a record of
    the starts, the retries and the events."""
    record: dict[str, Any] = {"starts": 0, "retries": [], "events": []}

    def factory(config: RuntimeConfig) -> ScriptedAdapter:
        def script(_: Any) -> list[dict[str, Any]]:
            record["starts"] += 1
            return frames

        return ScriptedAdapter(script)

    class Sink:
        async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
            record["events"].extend(events)
            await trio.lowlevel.checkpoint()

    registry = RuntimeRegistry.from_specs(
        [RuntimeSpec(id="x", factory=factory)], lambda _: RuntimeConfig(base_url=base_url)
    )
    runner = Runner(
        registry,
        sink=Sink(),
        state_dir=tmp_path / "state",
        today=lambda: dt.date(2026, 11, 26),
        restart=RestartPolicy(max_restarts=3, initial_s=0.01),
        on_retry=lambda notice: record["retries"].append(notice),
    )
    return runner, record


async def test_a_refused_loopback_endpoint_fails_the_run_at_once(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    frames = [{"type": "init", "sessionId": "s"}, {"type": "result", "ok": True}]
    runner, record = runner_for(frames, url, tmp_path)
    outcome = await runner.run_task("x", TASK)
    assert outcome.status == "error"
    assert record["starts"] == 0  # the runtime never started
    assert record["retries"] == []
    assert outcome.error_message is not None and url in outcome.error_message
    assert [e.kind for e in record["events"]] == ["error", "done"]


async def test_a_refusal_mid_run_names_the_endpoint_and_is_not_retried(
    tmp_path: Path, listening: str
) -> None:
    # the endpoint listened when the run started, then refused (the server went away): the
    # runtime's own words do not say where; the log does, and nothing is retried
    frames = [
        {"type": "init", "sessionId": "s"},
        {"type": "result", "ok": False, "errorMessage": "API Error: Connection refused"},
    ]
    runner, record = runner_for(frames, listening, tmp_path)
    outcome = await runner.run_task("x", TASK)
    assert outcome.status == "error"
    errors = [e for e in record["events"] if isinstance(e, ErrorEvent)]
    assert [e.message for e in errors] == [f"API Error: Connection refused (endpoint: {listening})"]
    assert record["starts"] == 1 and record["retries"] == []


async def test_an_endpoint_gone_before_a_retry_fails_it_at_once(tmp_path: Path) -> None:
    # the first attempt fails transiently (before any output) and the server goes away while
    # the supervisor backs off: the retry does not start the runtime (no reconnect loop of its
    # own), it fails at once naming the URL, and nothing further is retried
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    url = f"http://127.0.0.1:{listener.socket.getsockname()[1]}"
    frames = [
        {"type": "init", "sessionId": "s"},
        {"type": "result", "ok": False, "errorMessage": "overloaded", "errorCode": "overloaded"},
    ]
    runner, record = runner_for(frames, url, tmp_path)
    on_retry = runner.on_retry

    def close_then_notice(notice: Any) -> None:
        listener.socket.close()  # the server is gone by the time the retry starts
        assert on_retry is not None
        on_retry(notice)

    runner.on_retry = close_then_notice
    with pytest.raises(RuntimeStartError, match=f"cannot reach {url}: connection refused"):
        await runner.run_task("x", TASK)
    assert record["starts"] == 1
    assert [str(n) for n in record["retries"]] == ["attempt 2/4: overloaded: overloaded"]
    errors = [e for e in record["events"] if isinstance(e, ErrorEvent)]
    assert (
        errors[-1].message == f"scripted could not start: cannot reach {url}: connection refused "
        "(nothing listens there)"
    )
