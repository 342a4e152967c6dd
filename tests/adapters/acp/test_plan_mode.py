"""Plan mode for ACP agents (``StartOpts.plan``, ``run --plan --runtime acp``).

* Against ``ringleader acp --runtime native`` as the agent (a real process, the native runtime on
  the scripted model server): the agent advertises ``default`` and ``plan`` session modes; a
  plan-mode run switches the session to ``plan`` (``session/set_mode``), the native runtime plans
  read-only (its ``write_file`` is denied: nothing changes) and answers with the plan; the next
  turn on the same session, without plan mode, carries it out (the file is written).
* Against a fake ACP agent whose modes are approval policies (as Hermes'): a plan-mode run is
  refused with ``error{capability_error}`` naming the modes, before any prompt; a session left
  in a planning mode is switched back for a normal turn.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from adapters.acp import AcpAdapter, AcpConfig
from contract import check_stream, collect_run
from contract.fake_cli import fake_cli_argv
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.events import Done, ErrorEvent, RuntimeEvent, ToolResult
from orchestrator.model_server import serve_model_server

PLAN_SCRIPT = {
    "model": "claude-sonnet-4-5",
    "conversations": [
        {
            "name": "plan",
            "marker": "[[plan]]",
            "turns": [
                {"tool_calls": [{"name": "write_file",
                                 "input": {"path": "early.txt", "content": "x"}}]},
                {"text": "PLAN: write planned.txt"},
                {"tool_calls": [{"name": "write_file",
                                 "input": {"path": "planned.txt", "content": "done"}}]},
                {"text": "Carried out."},
            ],
        }
    ],
}  # fmt: skip


def ringleader_acp(state: Path, **env: str) -> AcpAdapter:
    command = [sys.executable, "-m", "orchestrator.cli", "acp", "--runtime", "native"]
    root = str(Path(__file__).resolve().parents[3])
    return AcpAdapter(
        AcpConfig(
            command=command,
            env={"RINGLEADER_STATE_DIR": str(state), "PYTHONPATH": root, **env},
            handshake_timeout=30,
            permission="deny",
        )
    )


async def turn(
    adapter: AcpAdapter, ws: Path, message: str, *, plan: bool, resume: str | None = None
) -> list[RuntimeEvent]:
    opts = StartOpts(
        agent_id="ed",
        session_key="ed:plan",
        message=message,
        cwd=str(ws),
        plan=plan,
        resume_session_id=resume,
    )
    run = await adapter.start(TaskHandle(), opts)
    events = await collect_run(adapter.events(run), deadline_s=60)
    check_stream(events)
    return events


async def test_plan_mode_switches_ringleader_acp_to_plan_then_the_next_turn_carries_it_out(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with serve_model_server(PLAN_SCRIPT) as server:
        env = {
            "RINGLEADER_NATIVE_PROVIDER": "anthropic",
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-ant-acp-plan-0000",
        }
        async with ringleader_acp(tmp_path / "state", **env) as adapter:
            planned = await turn(adapter, ws, "[[plan]] write planned.txt", plan=True)
            modes = [c.params for c in adapter.calls if c.method == "session/set_mode"]
            assert list(ws.iterdir()) == []  # planning changed nothing
            done = planned[-1]
            assert isinstance(done, Done) and done.reason == "success", planned
            assert "PLAN: write planned.txt" in done.summary
            [denied] = [e for e in planned if isinstance(e, ToolResult)]
            assert denied.is_error  # the write was refused in plan mode
            session = planned[0].run_id
            carried = await turn(adapter, ws, "[[plan]] The plan is approved: carry it out.",
                                 plan=False, resume=session)  # fmt: skip
            again = [c.params for c in adapter.calls if c.method == "session/set_mode"]
    assert modes == [{"sessionKey": "ed:plan"}]  # switched to plan once, before the prompt
    assert again == modes  # the loaded session was not in plan mode: no switch back needed
    assert isinstance(carried[-1], Done) and carried[-1].reason == "success", [
        e for e in carried if isinstance(e, ErrorEvent)
    ]
    assert (ws / "planned.txt").read_text() == "done"
    assert not (ws / "early.txt").exists()
    last = [r for r in server.requests if r.conversation == "plan" and not r.side][-2]
    assert "PLAN: write planned.txt" in json.dumps(last.body)  # the same session went on


def agent_with_modes(modes: dict[str, Any], log: Path) -> list[str]:
    """A fake ACP agent whose sessions have ``modes``; ``session/set_mode`` answered; the
    prompt answered ``end_turn`` at once; what it reads is logged to ``log``."""
    init: dict[str, Any] = {
        "protocolVersion": 1,
        "agentCapabilities": {"loadSession": True},
        "authMethods": [],
    }
    new = {"sessionId": "s-1", "modes": modes}

    def reply(result: dict[str, Any]) -> list[str]:
        return ['{"jsonrpc": "2.0", "id": {{id}}, "result": ' + json.dumps(result) + "}"]

    rules = [
        {"match": {"method": "initialize"}, "reply": reply(init)},
        {"match": {"method": "session/new"}, "reply": reply(new)},
        {"match": {"method": "session/load"}, "reply": reply({"modes": modes})},
        {"match": {"method": "session/set_mode"}, "reply": reply({})},
        {"match": {"method": "session/prompt"}, "reply": reply({"stopReason": "end_turn"})},
    ]
    return fake_cli_argv([], rules=rules, stdin_log=log)


HERMES_MODES = {
    "currentModeId": "default",
    "availableModes": [
        {"id": "default", "name": "Default"},
        {"id": "accept_edits", "name": "Accept Edits"},
        {"id": "dont_ask", "name": "Don't Ask"},
    ],
}


async def test_an_agent_without_a_plan_mode_is_refused_before_any_prompt(tmp_path: Path) -> None:
    log = tmp_path / "stdin.log"
    adapter = AcpAdapter(AcpConfig(command=agent_with_modes(HERMES_MODES, log)))
    async with adapter:
        events = await turn(adapter, tmp_path / "ws", "plan it", plan=True)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert errors and errors[0].code == "capability_error"
    assert "offers no plan mode" in errors[0].message
    assert "default, accept_edits, dont_ask" in errors[0].message
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
    read = log.read_text()
    assert "session/prompt" not in read and "session/set_mode" not in read


async def test_a_session_left_in_plan_mode_is_switched_back_for_a_normal_turn(
    tmp_path: Path,
) -> None:
    log = tmp_path / "stdin.log"
    modes = {
        "currentModeId": "architect-plan",
        "availableModes": [
            {"id": "code", "name": "Code"},
            {"id": "architect-plan", "name": "Architect"},
        ],
    }
    async with AcpAdapter(AcpConfig(command=agent_with_modes(modes, log))) as adapter:
        events = await turn(adapter, tmp_path / "ws", "go", plan=False)
        assert isinstance(events[-1], Done) and events[-1].reason == "success", events
        switched = [c.params for c in adapter.calls if c.method == "session/set_mode"]
    assert switched == [{"sessionKey": "ed:plan"}]
    sent = [json.loads(line) for line in log.read_text().splitlines() if "set_mode" in line]
    assert [m["params"]["modeId"] for m in sent] == ["code"]
