"""OpenClaw's exec approvals on the fake gateway: the adapter connects as an approval client only
when it answers approvals, an ``exec.approval.requested`` of a run waits in the approval book and
the decision goes back as ``exec.approval.resolve``; the policy's ``allow`` / ``deny`` answer
without a person; with no book a person's ask is denied. The real gateway is in
``tests/e2e/test_openclaw_approvals_e2e.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.openclaw import GatewaySettings, OpenClawAdapter, ask_person
from adapters.openclaw.gateway import gateway_config
from adapters.openclaw_spec import OPENCLAW
from contract import check_stream, collect_run
from orchestrator.core.adapter import RunHandle, StartOpts, TaskHandle
from orchestrator.core.approvals import ApprovalBook, ApprovalEntry, approve, reject
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import Status

from .fake_gateway import FakeGateway
from .harness import OpenClawHarness


def run_in_harness(body: Any, **config: Any) -> None:
    harness = OpenClawHarness(**config)

    async def main() -> None:
        adapter = harness.make_adapter()
        async with adapter:
            assert isinstance(adapter, OpenClawAdapter)
            await body(harness, adapter)

    trio.run(main)


async def start(
    harness: OpenClawHarness, adapter: OpenClawAdapter, key: str, db: Path | None
) -> RunHandle:
    opts = StartOpts(
        agent_id="a",
        session_key=key,
        message="hi",
        cwd=str(harness.workspace),
        approvals_db=None if db is None else str(db),
    )
    run = await adapter.start(TaskHandle(), opts)
    started = [c.params for c in adapter.calls if c.method == "start"][-1]
    from .harness import _RunFrames  # pyright: ignore[reportPrivateUsage]

    harness._runs[key] = _RunFrames(run_id=started["runId"], key=started["sessionKey"])  # pyright: ignore[reportPrivateUsage]
    return run


async def request_approval(
    harness: OpenClawHarness, key: str, approval_id: str, command: str = "touch x"
) -> None:
    """The gateway's ``exec.approval.requested`` for the run's ``command``."""
    s = harness._runs[key]  # pyright: ignore[reportPrivateUsage]
    assert harness.fake is not None
    await harness.fake.push({"type": "event", "event": "exec.approval.requested", "payload": {
        "approvalKind": "exec", "id": approval_id, "createdAtMs": 0, "expiresAtMs": 1,
        "request": {"command": command, "cwd": "/w", "runId": s.run_id, "sessionKey": s.key,
                    "toolCallId": "call-1", "agentId": "main", "host": "gateway"},
    }})  # fmt: skip


async def pending(book: ApprovalBook) -> list[ApprovalEntry]:
    with trio.fail_after(10):
        while True:
            found = await book.pending()
            if found:
                return found
            await trio.sleep(0.02)


async def resolved(fake: FakeGateway, n: int) -> list[dict[str, Any]]:
    with trio.fail_after(10):
        while True:
            found = [r["params"] for r in fake.requests if r["method"] == "exec.approval.resolve"]
            if len(found) >= n:
                return found
            await trio.sleep(0.02)


def test_an_exec_approval_waits_in_the_book_and_its_decision_goes_back(tmp_path: Path) -> None:
    db = tmp_path / "approvals.db"

    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        fake = harness.fake
        assert fake is not None
        assert adapter.capabilities().tool_approval
        run = await start(harness, adapter, "ask", db)
        assert fake.caps == [["tool-events", "exec-approvals"]]
        stream = adapter.events(run)
        book = ApprovalBook(db, poll_s=0.02)
        await request_approval(harness, "ask", "ap-1")
        [entry] = await pending(book)
        assert entry.tool == "exec" and entry.input == {"command": "touch x", "cwd": "/w"}
        assert entry.runtime_id == "openclaw"
        await book.decide(entry.id, approve())
        assert (await resolved(fake, 1)) == [{"id": "ap-1", "decision": "allow-once"}]
        # the same call again in the session: the book's decision answers it, nobody is asked
        await request_approval(harness, "ask", "ap-2")
        assert (await resolved(fake, 2))[1] == {"id": "ap-2", "decision": "allow-once"}
        await request_approval(harness, "ask", "ap-3", "rm -r y")
        [other] = await pending(book)
        await book.decide(other.id, reject("not that"))
        assert (await resolved(fake, 3))[2] == {"id": "ap-3", "decision": "deny"}
        await harness.emit(harness.frames.final("done"), run)
        events = await collect_run(stream, deadline_s=10)
        check_stream(events)
        waits = [e for e in events if isinstance(e, Status) and e.phase == "waiting_approval"]
        # (the repeated call announces its wait too, answered at once from the recorded decision)
        shown = [w.approval.input for w in waits if w.approval]
        assert shown == [{"command": c, "cwd": "/w"} for c in ("touch x", "touch x", "rm -r y")]

    run_in_harness(body, approve=ask_person)


def test_the_policy_answers_without_a_person_and_no_book_denies(tmp_path: Path) -> None:
    def by_command(request: Any) -> Any:
        return "allow" if request.get("command") == "ls" else "ask"

    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        fake = harness.fake
        assert fake is not None
        run = await start(harness, adapter, "policy", None)  # no book: nobody to ask
        s = harness._runs["policy"]  # pyright: ignore[reportPrivateUsage]
        await fake.push({"type": "event", "event": "exec.approval.requested", "payload": {
            "id": "ap-ls", "request": {"command": "ls", "runId": s.run_id, "sessionKey": s.key},
        }})  # fmt: skip
        assert (await resolved(fake, 1)) == [{"id": "ap-ls", "decision": "allow-once"}]
        await request_approval(harness, "policy", "ap-touch")
        assert (await resolved(fake, 2))[1] == {"id": "ap-touch", "decision": "deny"}
        await adapter.abort(run)

    run_in_harness(body, approve=by_command)


def test_without_a_policy_the_adapter_is_no_approval_client() -> None:
    async def body(harness: OpenClawHarness, adapter: OpenClawAdapter) -> None:
        run = await harness.start(adapter, "plain")
        assert harness.fake is not None and harness.fake.caps == [["tool-events"]]
        assert not adapter.capabilities().tool_approval
        await adapter.abort(run)

    run_in_harness(body)


def test_exec_ask_makes_the_managed_gateway_ask_before_every_command(tmp_path: Path) -> None:
    config = gateway_config(
        GatewaySettings(exec_ask=True, tool_deny=("write",)),
        port=1,
        token="t",
        workspace=tmp_path,
    )
    assert config["tools"] == {
        "deny": ["write"],
        "exec": {"host": "gateway", "security": "full", "ask": "always"},
    }
    assert "tools" not in gateway_config(GatewaySettings(), port=1, token="t", workspace=tmp_path)


def test_permission_ask_in_the_config_asks_a_person_about_exec() -> None:
    adapter = OPENCLAW.factory(RuntimeConfig(permission="ask"))
    assert isinstance(adapter, OpenClawAdapter)
    settings = adapter.manager.settings
    assert settings.exec_ask and "exec" not in settings.tool_deny
    assert {"write", "edit", "apply_patch"} <= set(settings.tool_deny)
    assert adapter.config.approve is ask_person
    denied = OPENCLAW.factory(RuntimeConfig(permission="deny"))
    assert isinstance(denied, OpenClawAdapter)
    assert "exec" in denied.manager.settings.tool_deny and denied.config.approve is None


def test_an_attached_gateway_takes_permission_ask_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("E2E_OPENCLAW_TOKEN", "tok")

    def attached(permission: Any = None) -> Any:
        return OPENCLAW.factory(
            RuntimeConfig(
                base_url="ws://127.0.0.1:18789",
                api_key_env="E2E_OPENCLAW_TOKEN",
                permission=permission,
            )
        )

    asking = attached("ask")
    assert isinstance(asking, OpenClawAdapter) and asking.config.approve is ask_person
    plain = attached()
    assert isinstance(plain, OpenClawAdapter) and plain.config.approve is None
    with pytest.raises(ConfigError, match="attached"):
        attached("allow")
