"""The SDK clients' shared httpx2 client lives as long as its trio run: when the run ends it is
closed with its pooled keep-alive connections (none is left to the garbage collector at exit,
where it printed ``ResourceWarning: unclosed <socket.socket … 127.0.0.1 …>``)."""

from __future__ import annotations

import httpx2
import trio

from adapters.native.glove import Glove
from adapters.native.models._common import shared_http_client
from adapters.native.models.providers import create_adapter
from orchestrator.model_server import serve_model_server

SCRIPT = {"conversations": [{"name": "hello", "turns": [{"text": "hello there"}]}]}


async def one_request() -> httpx2.AsyncClient:
    """A native run on the SDK's default (shared) client; that client, open and in use."""
    async with serve_model_server(SCRIPT) as server:
        model = create_adapter(
            provider="anthropic",
            model="scripted-model",
            api_key="sk-ant-test-0000000000",
            base_url=server.url,
        )
        glove = Glove(model=model, builtin_tools=False)
        glove.build()
        result = await glove.process_request("say hello")
        assert result.stop == "completed"
        client = shared_http_client()
        assert not client.is_closed
        assert shared_http_client() is client  # shared within the run
        return client


def test_the_shared_client_closes_with_its_trio_run_and_no_run_reuses_it() -> None:
    first = trio.run(one_request)
    assert first.is_closed
    second = trio.run(one_request)
    assert second is not first
    assert second.is_closed
