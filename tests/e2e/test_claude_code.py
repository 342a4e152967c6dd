"""The Claude Code adapter against the real Claude Code 2.1.330 and the scripted model server, offline.

Both modes (``one-shot`` and ``long-lived``): a streamed text turn with thinking, a Bash tool call
with its result (and a failing one), a 500 and a 429 (retry cap 1 through
``CLAUDE_CODE_MAX_RETRIES``: the retry is visible, then a clean failure), abort mid-stream, resume
in a new process from the recorded origin directory, two concurrent runs with isolated config
dirs, permission denials and the long-lived permission policy, max turns, and steering. Claude
Code only ever talks to the model server on 127.0.0.1 (non-essential traffic off). No child
process outlives its run (one-shot) or its adapter (long-lived).

If Claude Code is not installed these tests FAIL with the install command (CI installs it with
``scripts/install-runtimes``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig, Mode, PermissionDecision
from contract import check_stream, collect_run
from orchestrator.core.adapter import STEER_KEY, RunHandle
from orchestrator.core.events import (
    Cost,
    ErrorEvent,
    RuntimeEvent,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
)
from orchestrator.model_server import ModelServer

from .kit import (
    alive,
    conversations,
    done,
    installed,
    read_until,
    refused,
    run_turn,
    start,
    text,
)

pytestmark = pytest.mark.e2e

KEY = "sk-ant-e2e-claude-0000000000"
MODEL = "claude-sonnet-4-6"
MODES: list[Mode] = ["one-shot", "long-lived"]
SLOW = {"text": "tick " * 100, "chunk_chars": 5, "chunk_delay_s": 0.05}


def bash(command: str) -> dict[str, Any]:
    return {"name": "Bash", "input": {"command": command, "description": "run"}}


def script() -> dict[str, Any]:
    return {
        "model": MODEL,
        "conversations": [
            {
                "name": "text",
                "marker": "[[e2e:text]]",
                "turns": [
                    {
                        "reasoning": "Thinking it over.",
                        "text": "FINAL: hello from claude",
                        "usage": {
                            "input_tokens": 100,
                            "output_tokens": 12,
                            "cached_input_tokens": 30,
                        },
                    }
                ],
            },
            {
                "name": "tool",
                "marker": "[[e2e:tool]]",
                "turns": [
                    {"text": "Running it.", "tool_calls": [bash("echo hi-from-tool")]},
                    {"tool_calls": [bash("ls missing-file.txt")]},
                    {"text": "TOOL_RESULT_SEEN"},
                ],
            },
            {
                "name": "denied",
                "marker": "[[e2e:denied]]",
                "turns": [{"tool_calls": [bash("touch made.txt")]}, {"text": "DENIAL_SEEN"}],
            },
            {
                "name": "policy",
                "marker": "[[e2e:policy]]",
                "turns": [
                    {"tool_calls": [bash("touch allowed.txt")]},
                    {"text": "ALLOWED"},
                    {"tool_calls": [bash("touch refused.txt")]},
                    {"text": "REFUSED"},
                ],
            },
            {
                "name": "max-turns",
                "marker": "[[e2e:max-turns]]",
                "turns": [
                    {"text": "One step.", "tool_calls": [bash("echo one")]},
                    {"text": "never"},
                ],
            },
            {"name": "slow", "marker": "[[e2e:slow]]", "turns": [SLOW, {"text": "AFTER ABORT"}]},
            {
                "name": "steer",
                "marker": "[[e2e:steer]]",
                "turns": [
                    {**SLOW, "text": "tick " * 30, "tool_calls": [bash("echo step")]},
                    {"text": "STEERED"},
                ],
            },
            *conversations("e500", "e429", "resume", "c1", "c2"),
        ],
    }


@pytest.fixture(scope="module")
def claude_binary() -> Path:
    return installed("claude-code")


def make_adapter(mode: Mode, server: ModelServer, root: Path, **kw: Any) -> ClaudeCodeAdapter:
    config = ClaudeCodeConfig(
        mode=mode,
        model=MODEL,
        base_url=server.url,
        api_key=KEY,
        state_root=root / "state",
        **kw,
    )
    return ClaudeCodeAdapter(config)


async def run_once(
    adapter: ClaudeCodeAdapter, message: str, cwd: Path | None, **opts: Any
) -> tuple[list[RuntimeEvent], RunHandle, int]:
    events, run, pid = await run_turn(adapter, message, cwd, secret=KEY, deadline_s=90, **opts)
    if adapter.config.mode == "one-shot":
        assert not alive(pid)  # reaped (with its group) before done was published
    return events, run, pid


def only_loopback(server: ModelServer) -> None:
    for request in server.requests:
        assert request.headers.get("x-api-key") == "[REDACTED]"
        assert request.headers.get("user-agent", "").startswith("claude-cli/")


@pytest.mark.parametrize("mode", MODES)
async def test_text_turn(
    mode: Mode, claude_binary: Path, server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    async with make_adapter(mode, server, tmp_path) as adapter:
        events, _, pid = await run_once(adapter, "[[e2e:text]] say hello", workspace)
    assert not alive(pid)
    assert done(events).reason == "success"
    assert done(events).summary == "FINAL: hello from claude"
    assert text(events) == "FINAL: hello from claude"
    assert text(events, "reasoning") == "Thinking it over."
    init = events[0]
    assert isinstance(init, Status) and init.phase == "init" and init.model == MODEL
    cost = [e for e in events if isinstance(e, Cost)][-1]
    assert cost.usage.output_tokens == 12 and cost.usage.cached_input_tokens == 30
    assert cost.usage.input_tokens == 130  # Anthropic input excludes the cache; ours includes it
    assert cost.cost_usd is not None and cost.cost_usd > 0 and not cost.estimated
    assert done(events).cost_usd == cost.cost_usd
    (request,) = server.requests_for("text")
    assert request.path.startswith("/v1/messages")
    assert len(server.requests) == 1  # no side requests, nothing but the model call
    only_loopback(server)
    assert not list((tmp_path / "state").iterdir())  # the adapter's homes are gone


@pytest.mark.parametrize("mode", MODES)
async def test_tool_call_and_result(
    mode: Mode, claude_binary: Path, server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    async with make_adapter(mode, server, tmp_path) as adapter:
        events, _, _ = await run_once(adapter, "[[e2e:tool]] run echo", workspace)
    assert done(events).reason == "success" and done(events).summary == "TOOL_RESULT_SEEN"
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["Bash", "Bash"]
    assert calls[0].input == {"command": "echo hi-from-tool", "description": "run"}
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls]
    assert results[0].output == "hi-from-tool" and not results[0].is_error
    assert results[0].name == "Bash"
    assert results[1].is_error and "missing-file.txt" in results[1].output
    assert text(events) == "Running it.TOOL_RESULT_SEEN"
    follow_up = json.dumps(server.requests_for("tool")[1].body["messages"])
    assert "hi-from-tool" in follow_up


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("marker", "status", "code"), [("500", 500, "server_error"), ("429", 429, "rate_limited")]
)
async def test_model_errors_retry_then_fail(
    mode: Mode,
    marker: str,
    status: int,
    code: str,
    claude_binary: Path,
    server: ModelServer,
    workspace: Path,
    tmp_path: Path,
) -> None:
    async with make_adapter(mode, server, tmp_path) as adapter:
        events, _, _ = await run_once(
            adapter,
            f"[[e2e:{marker}]] fail",
            workspace,
            env={"CLAUDE_CODE_MAX_RETRIES": "1"},
        )
    retries = [e for e in events if isinstance(e, Status) and e.detail and "api_retry" in e.detail]
    assert len(retries) == 1 and f"HTTP {status}" in (retries[0].detail or "")
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and errors[0].fatal and errors[0].code == code
    assert done(events).reason == "error"
    assert text(events) == ""  # the CLI's synthetic "API Error" message is not model text
    assert len(server.requests_for(f"e{marker}")) == 2  # one try and one retry


@pytest.mark.parametrize("mode", MODES)
async def test_abort_mid_stream(
    mode: Mode, claude_binary: Path, server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    async with make_adapter(mode, server, tmp_path) as adapter:
        run = await start(adapter, "[[e2e:slow]] go", workspace, key="e2e:abort")
        child = adapter.child_for(run)
        assert child is not None
        stream = adapter.events(run)
        seen = await read_until(
            stream, lambda e: isinstance(e, TextDelta) and e.channel == "assistant", 60
        )
        began = trio.current_time()
        await adapter.abort(run)
        events = seen + await collect_run(stream, deadline_s=15)
        assert trio.current_time() - began < 5
        check_stream(events)
        assert done(events).reason == "aborted"
        assert not any(isinstance(e, ErrorEvent) for e in events)
        assert done(events).summary.startswith("tick")
        (request,) = server.requests_for("slow")
        assert await server.settled(request) == "disconnected"
        if mode == "one-shot":
            assert not alive(child.pid)
        else:
            # The interrupt keeps the process (and its prompt cache): the next turn runs in it.
            assert alive(child.pid)
            events2, run2, pid2 = await run_once(
                adapter, "continue", workspace, key="e2e:abort", resume_session_id=run.run_id
            )
            assert pid2 == child.pid and run2.run_id == run.run_id
            assert done(events2).reason == "success" and done(events2).summary == "AFTER ABORT"
    assert not alive(child.pid)


async def test_resume_in_new_process_from_origin(
    claude_binary: Path, server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "identity-home"
    async with make_adapter("one-shot", server, tmp_path) as first:
        events, run, _ = await run_once(
            first, "[[e2e:resume]] first", workspace, home_dir=str(home)
        )
        blob = await first.session_codec.serialize(run)
    assert done(events).summary == "FIRST"
    assert json.loads(blob)["cwd"] == str(workspace)
    elsewhere = tmp_path / "host-cwd"
    elsewhere.mkdir()
    async with make_adapter("long-lived", server, tmp_path) as second:
        restored = await second.session_codec.restore(blob)
        assert restored.run_id == run.run_id
        events2, run2, _ = await run_once(
            second, "and again", elsewhere, home_dir=str(home), resume_session_id=restored.run_id
        )
    assert done(events2).reason == "success" and done(events2).summary == "SECOND after resume"
    assert run2.run_id == run.run_id  # Claude Code keeps the session id on resume
    replay = json.dumps(server.requests_for("resume")[1].body["messages"])
    assert "FIRST" in replay and str(workspace) in replay and str(elsewhere) not in replay


async def test_two_concurrent_runs_have_isolated_config_dirs(
    claude_binary: Path, server: ModelServer, tmp_path: Path
) -> None:
    results: dict[str, list[RuntimeEvent]] = {}
    runs: dict[str, RunHandle] = {}
    async with make_adapter("one-shot", server, tmp_path, keep_homes=True) as adapter:

        async def one(name: str) -> None:
            ws = tmp_path / f"ws-{name}"
            ws.mkdir()
            events, run, _ = await run_once(adapter, f"[[e2e:{name}]] go", ws, key=f"e2e:{name}")
            results[name], runs[name] = events, run

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "c1")
            nursery.start_soon(one, "c2")
    assert done(results["c1"]).summary == "ONE" and done(results["c2"]).summary == "TWO"
    homes = [p for p in (tmp_path / "state").iterdir() if p.is_dir()]
    assert len(homes) == 2
    for home in homes:
        transcripts = sorted(p.stem for p in home.glob("projects/*/*.jsonl"))
        assert len(transcripts) == 1  # each run's session lives in its own config dir
        assert (home / "home").is_dir()
    all_sessions = sorted(p.stem for h in homes for p in h.glob("projects/*/*.jsonl"))
    assert all_sessions == sorted(str(r.run_id) for r in runs.values())


async def test_permission_denied_one_shot(
    claude_binary: Path, server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    async with make_adapter("one-shot", server, tmp_path) as adapter:
        events, _, _ = await run_once(adapter, "[[e2e:denied]] touch", workspace)
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.tool_call_id == call.tool_call_id and result.is_error
    assert "approval" in result.output
    assert not (workspace / "made.txt").exists()
    assert done(events).summary == "DENIAL_SEEN"
    assert refused(events) == "1 tool call refused (needs approval)"  # what the done line says


async def test_long_lived_permission_policy(
    claude_binary: Path, server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    def policy(tool: str, tool_input: Any) -> PermissionDecision:
        allowed = "allowed.txt" in str(tool_input.get("command"))
        return PermissionDecision(allow=allowed, message="ringleader policy says no")

    async with make_adapter("long-lived", server, tmp_path, permission_policy=policy) as adapter:
        first, run, pid = await run_once(adapter, "[[e2e:policy]] touch", workspace, key="e2e:p")
        second, _, pid2 = await run_once(
            adapter, "and the other", workspace, key="e2e:p", resume_session_id=run.run_id
        )
        assert pid2 == pid
    assert (workspace / "allowed.txt").exists() and not (workspace / "refused.txt").exists()
    (ok,) = [e for e in first if isinstance(e, ToolResult)]
    (no,) = [e for e in second if isinstance(e, ToolResult)]
    assert not ok.is_error and done(first).summary == "ALLOWED"
    assert no.is_error and "ringleader policy says no" in no.output
    assert done(second).summary == "REFUSED"
    assert (refused(first), refused(second)) == (None, "1 tool call denied")
    assert [c.params["allow"] for c in adapter.calls if c.method == "permission"] == [True, False]
    assert not alive(pid)


async def test_max_turns(
    claude_binary: Path, server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    async with make_adapter("one-shot", server, tmp_path) as adapter:
        events, _, _ = await run_once(adapter, "[[e2e:max-turns]] go", workspace, max_turns=1)
    assert done(events).reason == "max_turns"
    assert done(events).summary == "One step."  # the partial work, not the CLI's error text
    assert not any(isinstance(e, ErrorEvent) for e in events)


async def test_steer_reaches_the_running_turn(
    claude_binary: Path, server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    async with make_adapter("long-lived", server, tmp_path) as adapter:
        assert adapter.capabilities().steerable
        run = await start(adapter, "[[e2e:steer]] go", workspace, key="e2e:s")
        stream = adapter.events(run)
        events = await read_until(stream, lambda e: isinstance(e, TextDelta), 60)
        await adapter.write_context(run, STEER_KEY, "STEER-MARKER: also check the tests")
        events += await collect_run(stream, deadline_s=60)
    check_stream(events)
    assert done(events).summary.endswith("STEERED")
    follow_up = json.dumps(server.requests_for("steer")[1].body["messages"])
    assert "STEER-MARKER" in follow_up


async def test_long_prompt_goes_on_stdin(
    claude_binary: Path, server: ModelServer, workspace: Path, tmp_path: Path
) -> None:
    # Over the kernel's 128 KiB cap on one argv string: on argv, the CLI could not even start.
    filler = "lorem ipsum " * (200 * 1024 // 12)
    async with make_adapter("one-shot", server, tmp_path) as adapter:
        events, _, _ = await run_once(adapter, f"[[e2e:text]] say hello\n{filler}", workspace)
    assert done(events).reason == "success"
    assert done(events).summary == "FINAL: hello from claude"
    (request,) = server.requests_for("text")
    assert filler.strip() in json.dumps(request.body)
