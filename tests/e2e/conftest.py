"""Fixtures of the real-runtime e2e tests (helpers are in ``kit.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import pytest

from orchestrator.model_server import ModelServer, serve_model_server


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[ModelServer]:
    """The scripted model server on 127.0.0.1, playing the test module's ``script()``."""
    script: Callable[[], dict[str, Any]] = cast(Any, request).module.script
    async with serve_model_server(script()) as srv:
        yield srv


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws
