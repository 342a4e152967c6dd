"""Approvals from the book, against the real Claude Code (long-lived mode), Codex (app-server)
and Hermes (ACP) with the scripted model server.

Each runtime is configured to *ask* (Claude Code ``ask_all``, Codex ``untrusted`` with
``ask_person``, Hermes ``permission="ask"``) and its run waits in the approval book
(``StartOpts.approvals_db``). The decision comes from ``ringleader approve`` run as another
process on the same state directory — the path a person takes. Covered: a tool call waits
(``status{waiting_approval}``) and runs once allowed; a call denied with a message does not run
and the model is told the message (Claude Code in the tool result, Codex by ``turn/steer``;
ACP's answer carries no message, so Hermes only sees the rejection); ``--for-run`` answers the
run's second call of the tool without asking.

If a runtime is not installed these tests FAIL with the install command.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import pytest
import trio

from adapters.acp import AcpAdapter
from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig, ask_all
from adapters.codex import CodexAdapter, CodexConfig, CodexProvider, ask_person
from adapters.hermes import HermesAdapter, HermesConfig
from adapters.scripted import RecordedCall
from contract import check_stream
from orchestrator.core.adapter import RESUME_PROMPT, RuntimeAdapter
from orchestrator.core.approvals import ApprovalBook, approve
from orchestrator.core.events import (
    ApprovalCall,
    Done,
    RuntimeEvent,
    Status,
    ToolResult,
    event_from_json,
)
from orchestrator.core.refusals import DECLINED_MARK
from orchestrator.model_server import ModelServer, serve_model_server

from .kit import (
    RINGLEADER,
    cli_env,
    done,
    drive,
    installed,
    killed_while_waiting,
    refused,
    served_config,
    start,
)

pytestmark = pytest.mark.e2e

Runtime = Literal["claude-code", "codex", "hermes"]
RUNTIMES: list[Runtime] = ["claude-code", "codex", "hermes"]
KEYS = {
    "claude-code": "sk-ant-e2e-approvals-00000000",
    "codex": "sk-e2e-approvals-codex-000000",
    "hermes": "sk-e2e-approvals-hermes-00000",
}
MODELS = {"claude-code": "claude-sonnet-4-6", "codex": "gpt-5.5", "hermes": "fake-model"}
DENIAL = "DENIAL-REASON-42: not in this workspace"


def call(runtime: Runtime, n: int) -> tuple[dict[str, Any], Path]:
    """The runtime's tool call that asks (its n-th in a run), and the path it changes."""
    match runtime:
        case "claude-code":
            name = f"made{n}.txt"
            return {"name": "Bash", "input": {"command": f"touch {name}", "description": "x"}}, (
                Path(name)
            )
        case "codex":
            name = f"made{n}.txt"
            return {"name": "exec_command", "input": {"cmd": f"touch {name}"}}, Path(name)
        case "hermes":  # Hermes asks only about commands it finds dangerous: a recursive delete
            name = f"victim{n}"
            return {"name": "terminal", "input": {"command": f"rm -r {name}"}}, Path(name)


def script(runtime: Runtime) -> dict[str, Any]:
    one, _ = call(runtime, 1)
    two, _ = call(runtime, 2)
    return {
        "model": MODELS[runtime],
        "conversations": [
            {
                "name": "allow",
                "marker": "[[e2e:allow]]",
                "turns": [{"tool_calls": [one]}, {"text": "ALLOWED_DONE"}],
            },
            {
                "name": "deny",
                "marker": "[[e2e:deny]]",
                "turns": [{"tool_calls": [one]}, {"text": "DENIED_DONE"}, {"text": "extra"}],
            },
            {
                "name": "for-run",
                "marker": "[[e2e:for-run]]",
                "turns": [{"tool_calls": [one]}, {"tool_calls": [two]}, {"text": "BOTH_DONE"}],
            },
            {
                "name": "always",
                "marker": "[[e2e:always]]",
                "turns": [{"tool_calls": [one]}, {"text": "ALWAYS_DONE"}],
            },
            {
                "name": "always-again",
                "marker": "[[e2e:always-again]]",
                "turns": [{"tool_calls": [two]}, {"text": "AGAIN_DONE"}],
            },
        ],
    }


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[ModelServer]:
    runtime: Runtime = request.node.callspec.params["runtime"]
    installed(runtime)
    async with serve_model_server(script(runtime)) as srv:
        yield srv


@pytest.fixture
def homes(outside_tmp: Path) -> Path:
    """Runtime homes outside the system temp directory (Codex warns about homes there)."""
    return outside_tmp


def make_adapter(runtime: Runtime, server: ModelServer, homes: Path) -> RuntimeAdapter:
    match runtime:
        case "claude-code":
            return ClaudeCodeAdapter(
                ClaudeCodeConfig(
                    mode="long-lived",
                    model=MODELS[runtime],
                    base_url=server.url,
                    api_key=KEYS[runtime],
                    state_root=homes,
                    permission_policy=ask_all,
                )
            )
        case "codex":
            provider = CodexProvider(
                base_url=server.base_url,
                api_key=KEYS[runtime],
                request_max_retries=1,
                stream_max_retries=1,
            )
            return CodexAdapter(
                CodexConfig(
                    provider=provider,
                    model=MODELS[runtime],
                    state_root=homes,
                    approval_policy="untrusted",
                    approve=ask_person,
                )
            )
        case "hermes":
            return HermesAdapter(
                HermesConfig(
                    base_url=server.base_url,
                    state_root=homes,
                    api_max_retries=1,
                    permission="ask",
                )
            )


async def ringleader(state: Path, *args: str) -> str:
    """``ringleader ARGS`` as another process on ``state``; its output (it must succeed)."""
    env = {**os.environ, "RINGLEADER_STATE_DIR": str(state)}
    result = await trio.run_process(
        [*RINGLEADER, *args],
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


async def run_deciding(
    runtime: Runtime,
    server: ModelServer,
    homes: Path,
    workspace: Path,
    state: Path,
    marker: str,
    verdicts: list[list[str]],
    *,
    agent_id: str | None = None,
    calls: list[RecordedCall] | None = None,
) -> tuple[list[RuntimeEvent], list[ApprovalCall]]:
    """One run that waits in the book; the n-th ask is decided by ``ringleader approve ID
    *verdicts[n]`` from another process. (events, the calls that waited)."""
    asked: list[ApprovalCall] = []
    env = {"OPENAI_API_KEY": KEYS[runtime]} if runtime == "hermes" else {}

    async def decide(approval: ApprovalCall) -> None:
        verdict = verdicts[len(asked)]
        asked.append(approval)
        nursery.start_soon(ringleader, state, "approve", approval.id, *verdict)
        await trio.lowlevel.checkpoint()

    async with make_adapter(runtime, server, homes) as adapter:
        run = await start(
            adapter,
            f"{marker} go",
            workspace,
            agent_id=agent_id or f"{runtime}-approvals",
            approvals_db=str(state / "approvals.db"),
            env=env,
        )
        async with trio.open_nursery() as nursery:
            events = await drive(adapter, run, deadline_s=150, on_approval=decide)
        if calls is not None and isinstance(adapter, AcpAdapter):
            calls.extend(adapter.calls)
    check_stream(events)
    secret = KEYS[runtime]
    assert all(secret not in json.dumps(e.model_dump(mode="json")) for e in events)
    return events, asked


def durable(model: str, touch: dict[str, Any], *, resumed_by: str | None = None) -> dict[str, Any]:
    """The script of a run killed while it waits: ``touch`` asked about twice (before the kill,
    and again when the run is resumed), then the answer.

    ``resumed_by``: the prompt the resumed run is given. Its requests then get their own
    conversation (listed first: a marker found in any user text wins, in script order), so
    they are answered the same whatever the killed run asked for last. Claude Code does ask
    once more: killing the orchestrator closes the CLI's stdin a moment before the kernel's
    parent-death SIGKILL reaches it (the dying process closes its files before it signals its
    children), and on a loaded machine Claude Code used that moment to end the waiting call as
    failed and request the next turn (seen in a full run, and 2 of 24 runs under CPU load:
    the resumed run was then answered with the last turn, and never touched the file)."""
    if resumed_by is None:
        turns = [{"tool_calls": [touch]}, {"tool_calls": [touch]}, {"text": "RECOVERED"}]
        conversations = [{"name": "durable", "marker": "[[e2e:durable]]", "turns": turns}]
    else:
        conversations = [
            {
                "name": "resumed",
                "marker": resumed_by,
                "turns": [{"tool_calls": [touch]}, {"text": "RECOVERED"}],
            },
            {
                "name": "durable",
                "marker": "[[e2e:durable]]",
                "turns": [{"tool_calls": [touch]}, {"text": "killed while it waited"}],
            },
        ]
    return {"model": model, "conversations": conversations}


def prepare(runtime: Runtime, workspace: Path) -> None:
    if runtime == "hermes":  # the directories its recursive deletes remove
        for n in (1, 2):
            (workspace / f"victim{n}").mkdir()
            (workspace / f"victim{n}" / "keep.txt").write_text("x")


def changed(runtime: Runtime, workspace: Path, n: int) -> bool:
    """Whether the n-th call ran (Claude Code/Codex: its file exists; Hermes: its dir is gone)."""
    _, path = call(runtime, n)
    exists = (workspace / path).exists()
    return not exists if runtime == "hermes" else exists


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_a_call_waits_in_the_book_and_runs_when_allowed_from_another_process(
    runtime: Runtime, server: ModelServer, homes: Path, workspace: Path, tmp_path: Path
) -> None:
    prepare(runtime, workspace)
    state = tmp_path / "state"
    assert not changed(runtime, workspace, 1)
    events, asked = await run_deciding(
        runtime, server, homes, workspace, state, "[[e2e:allow]]", [["--allow"]]
    )
    assert len(asked) == 1
    assert done(events).reason == "success"
    assert changed(runtime, workspace, 1)
    entry = await ApprovalBook.in_state_dir(state).get(asked[0].id)
    assert entry is not None and entry.status == "approved" and entry.runtime_id == runtime
    waiting = [e for e in events if isinstance(e, Status) and e.phase == "waiting_approval"]
    resumed = [e for e in events if isinstance(e, Status) and "allowed" in (e.detail or "")]
    assert len(waiting) == 1 and len(resumed) == 1
    assert events.index(waiting[0]) < events.index(resumed[0])
    assert refused(events) is None  # an allowed call is not a refusal


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_a_call_denied_with_a_message_does_not_run_and_the_model_is_told(
    runtime: Runtime, server: ModelServer, homes: Path, workspace: Path, tmp_path: Path
) -> None:
    prepare(runtime, workspace)
    events, asked = await run_deciding(
        runtime,
        server,
        homes,
        workspace,
        tmp_path / "state",
        "[[e2e:deny]]",
        [["--deny", "--message", DENIAL]],
    )
    assert len(asked) == 1
    assert done(events).reason == "success"
    assert not changed(runtime, workspace, 1)
    assert refused(events) == "1 tool call denied"  # what the done line and the table say
    if runtime == "claude-code":  # the person's decision says it: no policy mark on the result
        outputs = [e.output for e in events if isinstance(e, ToolResult)]
        assert outputs and not any(o.startswith(DECLINED_MARK) for o in outputs), outputs
    later = [r for r in server.requests if r.conversation == "deny" and not r.side][1:]
    assert later, "the model was not asked again after the denial"
    seen = json.dumps([r.body for r in later])
    if runtime == "hermes":  # ACP's permission answer carries no message: only the refusal
        assert DENIAL not in seen
    else:
        assert DENIAL in seen


@pytest.mark.parametrize("runtime", RUNTIMES)
async def test_allowing_for_the_rest_of_the_run_skips_the_second_ask(
    runtime: Runtime, server: ModelServer, homes: Path, workspace: Path, tmp_path: Path
) -> None:
    prepare(runtime, workspace)
    state = tmp_path / "state"
    events, asked = await run_deciding(
        runtime, server, homes, workspace, state, "[[e2e:for-run]]", [["--allow", "--for-run"]]
    )
    assert len(asked) == 1  # the second call of the tool was answered by the grant
    assert done(events).reason == "success"
    assert changed(runtime, workspace, 1) and changed(runtime, workspace, 2)
    grants = await ApprovalBook.in_state_dir(state).grants()
    assert [(g.scope, g.tool, g.runtime_id) for g in grants] == [("run", asked[0].name, runtime)]
    listed = await ringleader(state, "approvals")
    assert "rest of run" in listed and asked[0].name in listed


@pytest.mark.parametrize("runtime", ["hermes"])
async def test_allow_always_answers_the_next_ask_in_that_directory_without_a_person(
    runtime: Runtime, server: ModelServer, homes: Path, workspace: Path, tmp_path: Path
) -> None:
    """ACP's allow-always, Hermes end to end: its permission request offers ``allow_always``;
    ``ringleader approve ID --allow --always`` picks it and the book stores the grant (hermes,
    this directory); a later run in the same directory — another identity, so a fresh Hermes
    home that remembers nothing — asks again and the grant answers it: no wait, no person."""
    prepare(runtime, workspace)
    state = tmp_path / "state"
    first_calls: list[RecordedCall] = []
    events, asked = await run_deciding(
        runtime, server, homes, workspace, state, "[[e2e:always]]", [["--allow", "--always"]],
        calls=first_calls,
    )  # fmt: skip
    assert len(asked) == 1 and done(events).reason == "success"
    assert changed(runtime, workspace, 1)
    [first] = [c.params for c in first_calls if c.method == "permission"]
    assert "always" in json.dumps(first)  # the agent's own allow_always option was picked
    grants = await ApprovalBook.in_state_dir(state).grants()
    assert [(g.scope, g.tool, g.runtime_id, g.cwd) for g in grants] == [
        ("always", asked[0].name, runtime, str(workspace))
    ]
    listed = await ringleader(state, "approvals")
    assert "always" in listed and asked[0].name in listed
    again_calls: list[RecordedCall] = []
    again, asked_again = await run_deciding(
        runtime, server, homes, workspace, state, "[[e2e:always-again]]", [],
        agent_id="hermes-approvals-other", calls=again_calls,
    )  # fmt: skip
    assert asked_again == []  # nobody was asked: no waiting_approval at all
    assert not [e for e in again if isinstance(e, Status) and e.phase == "waiting_approval"]
    assert [c for c in again_calls if c.method == "permission"]  # yet Hermes did ask
    assert done(again).reason == "success"
    assert changed(runtime, workspace, 2)


def _transcript_has(state: Path, text: str) -> bool:
    """Whether Claude Code has written ``text`` (the waiting call) into a session transcript in
    its home under ``state``: it writes transcripts a little after the fact, and a session killed
    before that is gone ("No conversation found" on resume; seen once under load)."""
    for transcript in (state / "homes").glob("claude-code/**/*.jsonl"):
        try:
            if text in transcript.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


async def test_a_call_waiting_when_its_orchestrator_is_killed_is_answered_after_the_resume(
    tmp_path: Path,
) -> None:
    """Claude Code through the CLI: the orchestrator is SIGKILLed while a call waits; ``ringleader
    approve`` (another process) decides it and, the waiting process being gone, resumes the
    session; Claude Code asks again for the same call and the recorded decision answers it."""
    installed("claude-code")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = tmp_path / "state"
    touch = {"name": "Bash", "input": {"command": "touch recovered.txt", "description": "x"}}
    script = durable(MODELS["claude-code"], touch, resumed_by=RESUME_PROMPT)
    async with serve_model_server(script) as server:
        config = tmp_path / "ringleader.toml"
        config.write_text(
            f'[runtimes.claude-code]\nbase_url = "{server.url}"\napi_key_env = "E2E_CLAUDE_KEY"\n'
        )
        env = cli_env(
            state, XDG_CONFIG_HOME=str(tmp_path / "xdg"), E2E_CLAUDE_KEY=KEYS["claude-code"]
        )
        argv = [*RINGLEADER, "run", "--config", str(config), "--approvals", "wait"]
        argv += ["--runtime", "claude-code", "--json", "[[e2e:durable]] go"]
        entry = await killed_while_waiting(
            argv, cwd=workspace, env=env, state=state, deadline_s=90,
            also=lambda: _transcript_has(state, "touch recovered.txt"),
        )  # fmt: skip
        assert not (workspace / "recovered.txt").exists()
        decide = [*RINGLEADER, "approve", entry.id, "--allow", "--config", str(config), "--json"]
        with trio.fail_after(150):
            result = await trio.run_process(
                decide, cwd=workspace, env=env, capture_stdout=True, capture_stderr=True,
                check=False,
            )  # fmt: skip
        err = result.stderr.decode()
        assert result.returncode == 0, err[-2000:]
        assert "resuming" in err
        requests = [
            (
                r.conversation,
                r.turn,
                r.outcome,
                [
                    (m.get("role"), [b.get("type") for b in m["content"]])
                    if isinstance(m.get("content"), list)
                    else (m.get("role"), "text")
                    for m in r.body.get("messages", [])
                ],
            )
            for r in server.state.requests
        ]
    lines = result.stdout.decode().splitlines()
    events = [event_from_json(line) for line in lines if line.startswith("{")]
    seen = f"{[e.kind for e in events]}\nrequests: {requests}\n{err[-2000:]}"
    assert (workspace / "recovered.txt").exists(), seen
    assert isinstance(events[-1], Done) and events[-1].reason == "success", seen
    assert [e for e in events if isinstance(e, Status) and e.approval is not None], seen
    assert await ApprovalBook.in_state_dir(state).pending() == []


async def test_a_codex_call_waiting_when_its_orchestrator_is_killed_is_answered_by_recover(
    tmp_path: Path,
) -> None:
    """Codex (app-server) through the CLI: the orchestrator is SIGKILLed while a command waits
    in the book; the decision is made meanwhile (in the book, as the board makes it, with no
    process waiting); ``ringleader recover`` resumes the Codex thread with the book, Codex asks
    again for the same command (new ids) and the recorded decision answers it: nobody is asked
    again, and the run succeeds."""
    installed("codex")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = tmp_path / "state"
    touch = {"name": "exec_command", "input": {"cmd": "touch recovered.txt"}}
    async with serve_model_server(durable(MODELS["codex"], touch)) as server:
        config = served_config(
            tmp_path, "codex", server.base_url, key_env="E2E_CODEX_KEY", model=MODELS["codex"]
        )
        env = cli_env(state, XDG_CONFIG_HOME=str(tmp_path / "xdg"), E2E_CODEX_KEY=KEYS["codex"])
        argv = [*RINGLEADER, "run", "--config", str(config), "--approvals", "wait"]
        argv += ["--runtime", "codex", "--json", "[[e2e:durable]] go"]
        entry = await killed_while_waiting(
            argv, cwd=workspace, env=env, state=state, deadline_s=120
        )
        assert entry.runtime_id == "codex" and entry.tool == "command"
        assert not (workspace / "recovered.txt").exists()
        book = ApprovalBook.in_state_dir(state)
        await book.decide(entry.id, approve())  # decided while nobody waits on it
        recover = [*RINGLEADER, "recover", "--config", str(config), "--json"]
        with trio.fail_after(180):
            result = await trio.run_process(
                recover, cwd=workspace, env=env, capture_stdout=True, capture_stderr=True,
                check=False,
            )  # fmt: skip
        err = result.stderr.decode()
        assert result.returncode == 0, err[-2000:]
        assert "recovering" in err
    assert (workspace / "recovered.txt").exists()
    lines = result.stdout.decode().splitlines()
    events = [event_from_json(line) for line in lines if line.startswith("{")]
    assert isinstance(events[-1], Done) and events[-1].reason == "success"
    asks = [e.approval for e in events if isinstance(e, Status) and e.approval is not None]
    assert [a.id for a in asks] == [entry.id]  # asked again: the same call, answered by the book
    assert await book.pending() == []
    assert [e.status for e in await book.entries()] == ["approved"]
