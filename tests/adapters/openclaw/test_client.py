"""The gateway client against the fake gateway (a real WebSocket server on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from adapters.openclaw.client import (
    Disconnected,
    GatewayClient,
    Reconnected,
    RouteItem,
    open_gateway_client,
)
from adapters.openclaw.dialect import AgentFrame, EventFrame, ResFrame
from orchestrator.core.errors import RuntimeExitedError, RuntimeReportedError, RuntimeStartError

from .fake_gateway import FakeGateway, free_port


@asynccontextmanager
async def gateway(**kwargs: Any) -> AsyncIterator[FakeGateway]:
    fake = FakeGateway(**kwargs)
    async with trio.open_nursery() as nursery:
        await nursery.start(fake.serve)
        yield fake
        nursery.cancel_scope.cancel()


def agent_event(run_id: str, key: str, stream: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "event", "event": "agent",
            "payload": {"runId": run_id, "sessionKey": key, "stream": stream, "data": data}}  # fmt: skip


async def next_item(receive: trio.MemoryReceiveChannel[RouteItem]) -> RouteItem:
    with trio.fail_after(10):
        return await receive.receive()


async def test_handshake_sends_token_and_tool_events_cap() -> None:
    async with gateway() as fake, open_gateway_client(fake.url, fake.token) as client:
        assert client.connected and client.server_version == "2026.9.6"
        assert client.boot_id == fake.boot_id
        assert await client.request("health", {}) == {"ok": True}
        assert fake.methods() == ["health"]


async def test_wrong_token_is_a_permanent_start_error() -> None:
    async with gateway() as fake:
        with trio.fail_after(10), pytest.raises(RuntimeStartError, match="token mismatch"):
            async with open_gateway_client(fake.url, "wrong-token"):
                pass  # pragma: no cover


async def test_no_gateway_fails_after_the_connect_timeout() -> None:
    url = f"ws://127.0.0.1:{free_port()}"
    with trio.fail_after(10), pytest.raises(RuntimeStartError, match="no gateway"):
        async with open_gateway_client(url, "t", connect_timeout=0.5, backoff_initial=0.05):
            pass  # pragma: no cover


async def test_error_answers_are_typed_with_the_gateway_code() -> None:
    async with gateway() as fake, open_gateway_client(fake.url, fake.token) as client:
        with pytest.raises(RuntimeReportedError, match="unknown method") as info:
            await client.request("no.such.method", {})
        assert info.value.code == "INVALID_REQUEST"


async def test_concurrent_requests_are_correlated_by_id() -> None:
    async with gateway() as fake, open_gateway_client(fake.url, fake.token) as client:
        results: list[dict[str, Any]] = []

        async def one(method: str) -> None:
            results.append(await client.request(method, {"key": method}))

        async with trio.open_nursery() as nursery:
            for method in ("health", "sessions.patch", "agents.files.set", "sessions.abort"):
                nursery.start_soon(one, method)
        assert {"status": "no-active-run", "ok": True, "abortedRunId": None} in results
        assert len(results) == 4


async def test_agent_answers_twice_and_events_route_by_run_id() -> None:
    async with gateway() as fake, open_gateway_client(fake.url, fake.token) as client:
        mine = client.subscribe(session_key="agent:main:a")
        other = client.subscribe(session_key="agent:main:b")
        accepted = await client.start_agent(
            {"message": "hi", "sessionKey": "agent:main:a", "idempotencyKey": "run-a"}, mine
        )
        assert accepted["status"] == "accepted" and accepted["runId"] == "run-a"
        await fake.push(agent_event("run-x", "agent:main:b", "assistant", {"delta": "other"}))
        await fake.push(agent_event("run-a", "agent:main:a", "assistant", {"delta": "mine"}))
        await fake.push({"type": "res", "id": "run-a", "ok": True, "payload": {"status": "ok"}})
        first = await next_item(mine.receive)
        assert isinstance(first, AgentFrame) and first.data["delta"] == "mine"
        final = await next_item(mine.receive)
        assert isinstance(final, ResFrame) and final.status == "ok"
        # a frame of another run id is not delivered by session key (it names its run)
        with trio.move_on_after(0.2):
            await other.receive.receive()
            raise AssertionError("a frame of another run was routed by session key")


async def test_frames_without_run_id_route_by_session_key() -> None:
    async with gateway() as fake, open_gateway_client(fake.url, fake.token) as client:
        sub = client.subscribe(session_key="agent:main:s")
        await fake.push({"type": "event", "event": "sessions.changed",
                         "payload": {"sessionKey": "agent:main:s"}})  # fmt: skip
        item = await next_item(sub.receive)
        assert isinstance(item, EventFrame) and item.event == "sessions.changed"
        sub.close()
        sub.close()  # idempotent


async def test_reconnect_after_the_connection_drops() -> None:
    async with gateway() as fake:
        client = GatewayClient(fake.url, fake.token, backoff_initial=0.05)
        async with trio.open_nursery() as nursery:
            await nursery.start(client.run)
            sub = client.subscribe(run_id="r1")
            await fake.drop()
            assert isinstance(await next_item(sub.receive), Disconnected)
            assert isinstance(await next_item(sub.receive), Reconnected)
            assert client.connections == 2
            assert await client.request("health", {}) == {"ok": True}
            await client.aclose()
            nursery.cancel_scope.cancel()


async def test_a_pending_request_fails_when_the_connection_drops() -> None:
    async with gateway() as fake:
        client = GatewayClient(fake.url, fake.token, backoff_initial=0.05)
        async with trio.open_nursery() as nursery:
            await nursery.start(client.run)
            fake.silent = True
            failure: list[BaseException] = []
            failed = trio.Event()

            async def ask() -> None:
                try:
                    await client.request("health", {})
                except RuntimeExitedError as exc:
                    failure.append(exc)
                    failed.set()

            nursery.start_soon(ask)
            await trio.sleep(0.2)
            await fake.drop()
            with trio.fail_after(10):
                await failed.wait()
            assert "connection lost" in str(failure[0])
            await client.aclose()
            nursery.cancel_scope.cancel()
