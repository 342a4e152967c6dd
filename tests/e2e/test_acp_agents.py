"""The third-party ACP agents behind ``--runtime acp:NAME`` (adapters/acp/presets.py), each the
real pinned agent (``ringleader install acp-agents``) pointed at the scripted model server on
127.0.0.1, with its home and state under the test's temporary directory.

Per agent: a text turn; a tool call that asks, is allowed and returns its result; cancel while
the answer streams (the prompt ends ``cancelled`` or the agent is ended; no process is left); a
permission request that waits in the approval book and runs once approved there. And one preset
run from the command line (``ringleader run --runtime acp:codex --model-server``).

Gemini CLI speaks the Gemini API (``streamGenerateContent`` at ``GOOGLE_GEMINI_BASE_URL``), which
the scripted model server serves too. It sends no output of a shell call over ACP (its
``tool_call_update`` has empty content): its tool test checks the output reached the model.

If an agent is not installed these tests FAIL with the install command.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.acp.presets import PRESETS, PresetAdapter, locate_agent, preset_adapter
from contract import check_stream
from orchestrator.core.approvals import ApprovalBook
from orchestrator.core.errors import RuntimeNotFoundError
from orchestrator.core.events import (
    ApprovalCall,
    Cost,
    RuntimeEvent,
    Status,
    ToolCall,
    ToolResult,
)
from orchestrator.model_server import ModelServer, serve_model_server

from .kit import RINGLEADER, alive, assert_no_drift, cli_env, done, drive, start, text

pytestmark = pytest.mark.e2e

AGENTS = ["claude", "codex", "opencode", "qwen", "gemini"]
NO_LOCAL_SERVER: dict[str, str] = {}
"""Agents that cannot be pointed at the scripted model server, and why (none now)."""
SILENT_SHELL = {"gemini"}
"""Agents that send no shell output over ACP (the model still gets it)."""
REPORTS_TOKENS = {"claude", "opencode", "qwen"}
"""Agents that report the prompt's tokens over ACP (Qwen Code in its chunks' ``_meta``)."""
KEY = "sk-e2e-acp-agents-0123456789abcdef"


def shell_call(agent: str, command: str) -> dict[str, Any]:
    """The agent's shell tool running ``command`` (a tool call that asks for permission)."""
    match agent:
        case "claude":
            return {"name": "Bash", "input": {"command": command, "description": "run it"}}
        case "codex":
            return {"name": "exec_command", "input": {"cmd": command}}
        case "opencode":
            return {"name": "bash", "input": {"command": command, "description": "run it"}}
        case _:
            return {"name": "run_shell_command", "input": {"command": command}}


def script(agent: str) -> dict[str, Any]:
    preset = PRESETS[agent]
    return {
        "model": preset.local_model,
        "conversations": [
            {
                "name": "text",
                "marker": "[[e2e:text]]",
                "turns": [{"text": f"FINAL: hello from {agent}"}],
            },
            {
                "name": "tool",
                "marker": "[[e2e:tool]]",
                "turns": [
                    {"tool_calls": [shell_call(agent, "touch made.txt && echo tool-out-42")]},
                    {"text": "TOOL_RESULT_SEEN"},
                ],
            },
            {
                "name": "slow",
                "marker": "[[e2e:slow]]",
                "turns": [{"text": "slow " * 400, "chunk_chars": 5, "chunk_delay_s": 0.05}],
            },
            {
                "name": "resume",
                "marker": "[[e2e:resume]]",
                "turns": [{"text": "FIRST"}, {"text": "SECOND after resume"}],
            },
            {
                "name": "book",
                "marker": "[[e2e:book]]",
                "turns": [
                    {"tool_calls": [shell_call(agent, "touch approved.txt")]},
                    {"text": "BOOK_DONE"},
                ],
            },
        ],
    }


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[ModelServer]:
    agent: str = request.node.callspec.params["agent"]
    if agent in NO_LOCAL_SERVER:
        pytest.skip(f"acp:{agent}: {NO_LOCAL_SERVER[agent]}")
    try:
        locate_agent(PRESETS[agent])
    except RuntimeNotFoundError as exc:
        pytest.fail(str(exc))
    async with serve_model_server(script(agent)) as srv:
        yield srv


def make_adapter(agent: str, server: ModelServer, tmp_path: Path, **settings: Any) -> PresetAdapter:
    preset = PRESETS[agent]
    base = server.url if preset.api in ("anthropic", "gemini") else server.base_url
    return preset_adapter(
        agent,
        base_url=base,
        model=preset.local_model,
        key_env="E2E_ACP_KEY",
        state_root=tmp_path / "homes",
        **settings,
    )


async def run_once(
    adapter: PresetAdapter,
    message: str,
    cwd: Path,
    *,
    abort_on_text: bool = False,
    book: ApprovalBook | None = None,
    **opts: Any,
) -> tuple[list[RuntimeEvent], list[str]]:
    """One run to its ``done`` (aborted at its first text, or its permission requests approved
    in ``book``): its events and the approval ids it waited on."""
    key = f"e2e:{adapter.id}:{cwd.name}"
    env = {"E2E_ACP_KEY": KEY}
    run = await start(adapter, message, cwd, key=key, agent_id="acp-e2e", env=env, **opts)
    child = adapter.child_for(run)
    assert child is not None
    approved: list[str] = []

    async def approve(approval: ApprovalCall) -> None:
        assert book is not None
        approved.append(approval.id)
        await book.decide(approval.id, True)

    events = await drive(
        adapter,
        run,
        deadline_s=120,
        abort_on_text=abort_on_text,
        on_approval=approve if book else None,
    )
    check_stream(events)
    assert_no_drift(adapter.id, events)
    assert all(KEY not in e.model_dump_json() for e in events)
    assert not alive(child.pid), f"{adapter.id} outlived its run"
    return events, approved


@pytest.mark.parametrize("agent", AGENTS)
async def test_text_turn(agent: str, server: ModelServer, tmp_path: Path) -> None:
    async with make_adapter(agent, server, tmp_path) as adapter:
        events, _ = await run_once(adapter, "[[e2e:text]] hello", tmp_path / "ws")
    assert done(events).reason == "success"
    assert text(events).endswith(f"FINAL: hello from {agent}")
    if agent in REPORTS_TOKENS:
        assert any(isinstance(e, Cost) and e.usage.input_tokens > 0 for e in events)
    assert server.requests_for("text"), "the agent never reached the model server"
    home = tmp_path / "homes" / "acp-e2e"
    assert home.stat().st_mode & 0o777 == 0o700
    written = "".join(p.read_text(errors="replace") for p in home.rglob("*") if p.is_file())
    assert KEY not in written  # the key is handed over in the environment, never written


@pytest.mark.parametrize("agent", AGENTS)
async def test_tool_call_and_its_result(agent: str, server: ModelServer, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    async with make_adapter(agent, server, tmp_path, permission="allow") as adapter:
        events, _ = await run_once(adapter, "[[e2e:tool]] run it", ws)
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert calls and results, events
    assert results[0].tool_call_id == calls[0].tool_call_id
    assert not results[0].is_error
    if agent in ("claude", "qwen"):  # announced with rawInput {}, the command came later
        assert "tool-out-42" in json.dumps(calls[0].input)
    if agent not in SILENT_SHELL:
        assert "tool-out-42" in results[0].output
    assert (ws / "made.txt").exists()
    end = done(events)
    assert end.reason == "success" and end.summary.strip().endswith("TOOL_RESULT_SEEN")
    asked = server.requests_for("tool")
    assert len(asked) >= 2 and "tool-out-42" in json.dumps(asked[-1].body)  # the model got it


@pytest.mark.parametrize("agent", AGENTS)
async def test_cancel_while_streaming(agent: str, server: ModelServer, tmp_path: Path) -> None:
    async with make_adapter(agent, server, tmp_path) as adapter:
        events, _ = await run_once(adapter, "[[e2e:slow]] go", tmp_path / "ws", abort_on_text=True)
    assert done(events).reason == "aborted"
    assert len(text(events)) < len("slow " * 400)


@pytest.mark.parametrize("agent", AGENTS)
async def test_permission_answered_from_the_approval_book(
    agent: str, server: ModelServer, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    state = tmp_path / "state"
    book = ApprovalBook.in_state_dir(state)
    async with make_adapter(agent, server, tmp_path, permission="ask") as adapter:
        events, approved = await run_once(
            adapter,
            "[[e2e:book]] go",
            ws,
            book=book,
            approvals_db=str(state / "approvals.db"),
        )
    assert len(approved) == 1
    entry = await book.get(approved[0])
    assert entry is not None and entry.status == "approved" and entry.runtime_id == f"acp:{agent}"
    assert (ws / "approved.txt").exists()
    assert done(events).reason == "success"
    waiting = [e for e in events if isinstance(e, Status) and e.phase == "waiting_approval"]
    assert len(waiting) == 1


@pytest.mark.parametrize("agent", ["codex"])
async def test_a_refusal_that_ends_the_agents_turn_says_so(
    agent: str, server: ModelServer, tmp_path: Path
) -> None:
    """codex-acp's only way to refuse is ``abort``: its turn ends (``cancelled``) though nobody
    aborted the run; the run says why, and the command never ran."""
    ws = tmp_path / "ws"
    async with make_adapter(agent, server, tmp_path) as adapter:  # permission: deny
        events, _ = await run_once(adapter, "[[e2e:book]] go", ws)
    assert done(events).reason == "aborted"
    assert any(isinstance(e, Status) and "refused permission" in (e.detail or "") for e in events)
    assert not (ws / "approved.txt").exists()


@pytest.mark.parametrize("agent", ["claude", "codex"])
async def test_resume_in_a_new_process(agent: str, server: ModelServer, tmp_path: Path) -> None:
    """The identity's home keeps the session: a new agent process loads it (``session/load``)
    and the model sees the whole conversation. (OpenCode and Qwen Code resume too, by hand;
    Gemini CLI 0.61.0 answers ``session/load`` in a new process with an internal error.)"""
    ws = tmp_path / "ws"
    async with make_adapter(agent, server, tmp_path) as adapter:
        first, _ = await run_once(adapter, "[[e2e:resume]] first", ws)
        sessions = [e.run_id for e in first]
    assert done(first).reason == "success" and text(first) == "FIRST"
    async with make_adapter(agent, server, tmp_path) as adapter:
        second, _ = await run_once(adapter, "and again", ws, resume_session_id=sessions[0])
    assert text(second) == "SECOND after resume"  # the replayed history is not new output
    assert {e.run_id for e in second} == {sessions[0]}
    last = server.requests_for("resume")[-1]
    assert "FIRST" in json.dumps(last.body)


async def test_a_preset_runs_from_the_command_line_with_no_command_typed(tmp_path: Path) -> None:
    """``ringleader run --runtime acp:codex --model-server``: the installed agent, its home, its
    endpoint and its built-in tool turn, all from the preset (codex-acp: the quickest to start)."""
    try:
        locate_agent(PRESETS["codex"])
    except RuntimeNotFoundError as exc:
        pytest.fail(str(exc))
    env = cli_env(tmp_path / "state", XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    ws = tmp_path / "ws"
    ws.mkdir()
    argv = [*RINGLEADER, "run", "--runtime", "acp:codex"]
    with trio.fail_after(120):
        result = await trio.run_process(
            [*argv, "--model-server", "--json", "look around"],
            cwd=ws,
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    lines = [json.loads(line) for line in result.stdout.decode().splitlines() if line.strip()]
    kinds = [line["kind"] for line in lines]
    assert "tool-call" in kinds and "tool-result" in kinds
    assert lines[-1]["kind"] == "done" and lines[-1]["reason"] == "success"
    assert lines[0]["runKey"].startswith("runtime:acp:codex:task:")
    home = tmp_path / "state" / "homes" / "acp_codex" / "cli"  # the host's home for the identity
    assert (home / ".codex" / "config.toml").is_file()
