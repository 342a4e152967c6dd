"""OpenClaw's exec approvals answered from the approval book, against a real OpenClaw gateway
and the scripted model server.

The managed gateway asks before every host command (``GatewaySettings.exec_ask``: ``tools.exec``
``security:"full"``, ``ask:"always"``); the adapter is its approval client
(``OpenClawConfig.approve=ask_person``). A run's ``exec`` waits in the book
(``status{waiting_approval}``), ``ringleader approve`` in another process decides it, and the
decision goes back through the gateway (``exec.approval.resolve``). One gateway serves both runs
(it is slow to start): the first command is denied (it does not run; the model reads OpenClaw's
denial), the second is allowed (it runs and the run succeeds).

If OpenClaw is not installed this test FAILS with the install command.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.openclaw import (
    GatewaySettings,
    ModelProvider,
    OpenClawAdapter,
    OpenClawConfig,
    ask_person,
)
from contract import check_stream
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.approvals import ApprovalBook
from orchestrator.core.events import ApprovalCall, Done, RuntimeEvent, Status, ToolResult
from orchestrator.model_server import ModelServer, serve_model_server

from .kit import installed

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-openclaw-approvals-0000"
MODEL = "fake-model"
DEADLINE = 300.0
"""A cold gateway takes ~15 s to its first turn idle, far more on a loaded 2-core machine."""


def touch(name: str) -> dict[str, Any]:
    return {"name": "exec", "input": {"command": f"touch {name}"}}


def script() -> dict[str, Any]:
    return {
        "model": MODEL,
        "conversations": [
            {
                "name": "deny",
                "marker": "[[e2e:deny]]",
                "turns": [{"tool_calls": [touch("denied.txt")]}, {"text": "DENIED_DONE"}],
            },
            {
                "name": "allow",
                "marker": "[[e2e:allow]]",
                "turns": [{"tool_calls": [touch("allowed.txt")]}, {"text": "ALLOWED_DONE"}],
            },
        ],
    }


async def ringleader(state: Path, *args: str) -> str:
    """``ringleader ARGS`` as another process on ``state``; its output (it must succeed)."""
    env = {**os.environ, "RINGLEADER_STATE_DIR": str(state)}
    done = await trio.run_process(
        [sys.executable, "-m", "orchestrator.cli", *args],
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def run_deciding(
    adapter: OpenClawAdapter, workspace: Path, state: Path, marker: str, verdict: list[str]
) -> tuple[list[RuntimeEvent], list[ApprovalCall]]:
    """One run whose asks are decided by ``ringleader approve ID *verdict`` in another process."""
    asked: list[ApprovalCall] = []
    events: list[RuntimeEvent] = []
    run = await adapter.start(
        TaskHandle(),
        StartOpts(
            agent_id="openclaw-approvals",
            session_key=f"e2e-{uuid.uuid4().hex[:8]}",
            message=f"{marker} go",
            cwd=str(workspace),
            approvals_db=str(state / "approvals.db"),
        ),
    )
    with trio.fail_after(DEADLINE):
        async with adapter.events(run) as stream, trio.open_nursery() as nursery:
            async for event in stream:
                events.append(event)
                if isinstance(event, Status) and event.approval is not None:
                    asked.append(event.approval)
                    nursery.start_soon(ringleader, state, "approve", event.approval.id, *verdict)
    check_stream(events)
    assert all(KEY not in json.dumps(e.model_dump(mode="json")) for e in events)
    return events, asked


def done_of(events: list[RuntimeEvent]) -> Done:
    last = events[-1]
    assert isinstance(last, Done)
    return last


async def test_openclaw_exec_is_denied_then_allowed_from_the_approval_book(
    tmp_path: Path,
) -> None:
    installed("openclaw")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = tmp_path / "state"
    async with serve_model_server(script()) as server:
        server_: ModelServer = server
        provider = ModelProvider(base_url=server_.base_url, api_key=KEY, models=(MODEL,))
        settings = GatewaySettings(
            provider=provider,
            state_dir=tmp_path / "gateway",
            workspace=workspace,
            startup_timeout=DEADLINE,
            exec_ask=True,
        )
        config = OpenClawConfig(gateway=settings, approve=ask_person)
        async with OpenClawAdapter(config) as adapter:
            assert adapter.capabilities().tool_approval
            denied, asked = await run_deciding(
                adapter, workspace, state, "[[e2e:deny]]", ["--deny", "--message", "no"]
            )
            allowed, asked_too = await run_deciding(
                adapter, workspace, state, "[[e2e:allow]]", ["--allow"]
            )
        child_gone = adapter.manager.child is None or adapter.manager.child.returncode is not None
        assert child_gone, "the gateway outlived its adapter"
    # the denied command: it waited in the book, did not run, the model read the denial
    assert len(asked) == 1 and asked[0].name == "exec"
    assert asked[0].input == {"command": "touch denied.txt", "cwd": str(workspace)}
    assert done_of(denied).reason == "success"
    assert not (workspace / "denied.txt").exists()
    [result] = [e for e in denied if isinstance(e, ToolResult)]
    assert "denied" in result.output.lower()
    later = [r for r in server_.requests if r.conversation == "deny" and not r.side][1:]
    assert later and "Exec denied" in json.dumps([r.body for r in later])
    # the allowed command: it waited, ran once allowed, and the run succeeded
    assert len(asked_too) == 1
    assert done_of(allowed).reason == "success"
    assert (workspace / "allowed.txt").exists()
    waiting = [e for e in allowed if isinstance(e, Status) and e.phase == "waiting_approval"]
    resumed = [e for e in allowed if isinstance(e, Status) and "allowed" in (e.detail or "")]
    assert len(waiting) == 1 and len(resumed) == 1
    book = ApprovalBook.in_state_dir(state)
    statuses = [(await book.get(a.id)) for a in (*asked, *asked_too)]
    assert [(e.status, e.runtime_id) for e in statuses if e is not None] == [
        ("rejected", "openclaw"),
        ("approved", "openclaw"),
    ]
