"""Plan mode (``ringleader run --plan``) against the real Claude Code (long-lived) and Codex
(app-server) with the scripted model server, through the CLI in real processes.

The first turn plans read-only (Claude Code ``--permission-mode plan``, Codex's read-only
sandbox): the scripted model tries to write a file and cannot. Its plan waits in the approval
book; rejected with a message (``ringleader approve --deny --message``, another process) the
model is told the message and plans again; approved, the same session carries the plan out with
the normal policy (``permission = "allow"``) and the file is written. No file changes before
the approval.

If a runtime is not installed its test FAILS with the install command.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any, Literal

import pytest
import trio

from orchestrator.core.approvals import ApprovalBook
from orchestrator.core.events import Done, event_from_json
from orchestrator.model_server import serve_model_server

from .kit import RINGLEADER, background, cli_env, installed, ringleader

pytestmark = pytest.mark.e2e

Runtime = Literal["claude-code", "codex"]
FEEDBACK = "PLAN-FEEDBACK-7: also say hello"
KEY = "sk-e2e-plan-mode-0000000000000"


def write(runtime: Runtime, name: str) -> dict[str, Any]:
    if runtime == "claude-code":
        return {"name": "Bash", "input": {"command": f"touch {name}", "description": "x"}}
    return {"name": "exec_command", "input": {"cmd": f"touch {name}"}}


def script(runtime: Runtime) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6" if runtime == "claude-code" else "gpt-5.5",
        "conversations": [
            {
                "name": "plan",
                "marker": "[[e2e:plan]]",
                "turns": [
                    {"tool_calls": [write(runtime, "early.txt")]},  # read-only: it cannot
                    {"text": "PLAN v1: create planned.txt"},
                    {"text": "PLAN v2: create planned.txt, then say hello"},
                    {"tool_calls": [write(runtime, "planned.txt")]},
                    {"text": "DONE: hello"},
                ],
            }
        ],
    }


def config_text(runtime: Runtime, base_url: str) -> str:
    if runtime == "claude-code":
        return (
            '[runtimes.claude-code]\nmode = "long-lived"\npermission = "allow"\n'
            f'base_url = "{base_url}"\napi_key_env = "E2E_PLAN_KEY"\n'
        )
    return (
        f'[runtimes.codex]\npermission = "allow"\nbase_url = "{base_url}/v1"\n'
        'api_key_env = "E2E_PLAN_KEY"\nmodel = "gpt-5.5"\n'
    )


@pytest.mark.parametrize("runtime", ["claude-code", "codex"])
async def test_a_plan_is_reviewed_rejected_with_a_message_then_approved_and_carried_out(
    runtime: Runtime, tmp_path: Path, outside_tmp: Path
) -> None:
    installed(runtime)
    workspace = outside_tmp / "ws"
    workspace.mkdir()
    state = outside_tmp / "state"
    book = ApprovalBook.in_state_dir(state)
    async with serve_model_server(script(runtime)) as server:
        config = tmp_path / "ringleader.toml"
        config.write_text(config_text(runtime, server.url))
        env = cli_env(
            state,
            XDG_CONFIG_HOME=str(tmp_path / "xdg"),
            XDG_STATE_HOME=str(tmp_path / "xdg-state"),
            E2E_PLAN_KEY=KEY,
        )
        argv = [*RINGLEADER, "run", "--config", str(config)]
        argv += ["--runtime", runtime, "--plan", "--json", "[[e2e:plan]] make planned.txt"]
        plans: list[str] = []
        async with background(argv, cwd=workspace, env=env) as proc:
            deadline = time.monotonic() + 150
            while len(plans) < 2 and time.monotonic() < deadline and proc.poll() is None:
                pending = (
                    [e for e in await book.pending() if e.tool == "plan"]
                    if (state / "approvals.db").exists()
                    else []
                )
                if not pending:
                    await trio.sleep(0.2)
                    continue
                entry = pending[0]
                plans.append(entry.input["plan"])
                # nothing changed while planning
                assert sorted(p.name for p in workspace.iterdir()) == []
                verdict = ["--deny", "--message", FEEDBACK] if len(plans) == 1 else ["--allow"]
                decide = functools.partial(
                    ringleader, "approve", entry.id, *verdict, cwd=workspace, env=env
                )
                done = await trio.to_thread.run_sync(decide)
                assert done.returncode == 0, done.stderr
            out, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=150))
        assert proc.returncode == 0, err[-2000:]
    assert plans == ["PLAN v1: create planned.txt", "PLAN v2: create planned.txt, then say hello"]
    assert sorted(p.name for p in workspace.iterdir()) == ["planned.txt"]  # carried out, once
    turns = [r for r in server.requests if r.conversation == "plan" and not r.side]
    assert FEEDBACK in json.dumps(turns[2].body)  # the rejection's message asked for a new plan
    events = [event_from_json(line) for line in out.splitlines() if line.strip()]
    assert [d.reason for d in events if isinstance(d, Done)][-1] == "success"
    assert KEY not in out


async def test_hermes_has_no_plan_mode_and_a_plan_run_is_refused_before_any_prompt(
    tmp_path: Path,
) -> None:
    """Hermes' ACP session modes are approval policies (default, accept_edits, dont_ask): a
    plan-mode run ends in ``error{capability_error}`` naming them, and the model is never
    asked."""
    from adapters.hermes import HermesAdapter, HermesConfig
    from contract import check_stream, collect_run
    from orchestrator.core.adapter import StartOpts, TaskHandle
    from orchestrator.core.events import ErrorEvent

    installed("hermes")
    script = {"model": "fake-model", "conversations": [{"name": "p", "turns": [{"text": "x"}]}]}
    async with serve_model_server(script) as server:
        config = HermesConfig(base_url=server.base_url, state_root=tmp_path / "homes")
        async with HermesAdapter(config) as adapter:
            run = await adapter.start(
                TaskHandle(),
                StartOpts(
                    agent_id="plan",
                    session_key="e2e:hermes-plan",
                    message="plan something",
                    cwd=str(tmp_path),
                    plan=True,
                    env={"OPENAI_API_KEY": KEY},
                ),
            )
            events = await collect_run(adapter.events(run), deadline_s=120)
        # (Hermes probes the endpoint's model listings; no model turn was asked for)
        turns = [r.path for r in server.requests if r.body is not None]
        assert turns == [], turns
    check_stream(events)
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "capability_error" and "offers no plan mode" in error.message
    assert "accept_edits" in error.message
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
