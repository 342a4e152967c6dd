"""Fixtures of the real-runtime e2e tests (helpers are in ``kit.py``)."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from adapters.codex.driver import default_state_root
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


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A directory outside the system temp directory (removed afterwards): Codex's sandbox
    helper refuses homes there, and Codex warns about homes and workspaces there."""
    root = default_state_root().parent / f"e2e-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)
