"""The Codex adapter against the real Codex 0.169.0 and the scripted model server, offline.

Both modes (``exec`` and ``app-server``): a text turn, a shell tool call with its result, an
``apply_patch`` file change, a 500 and a 429 (retry caps of 1 to keep it quick), abort, resume,
and two concurrent runs. Codex only ever talks to the model server on 127.0.0.1 (custom provider,
plugins and analytics off). After every run, no child process of the run is left alive.

If Codex is not installed these tests FAIL with the install command (CI installs it with
``scripts/install-runtimes``).
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.codex import CodexAdapter, CodexConfig, CodexProvider
from adapters.codex.driver import Mode, default_state_root
from contract import check_stream, collect_run
from orchestrator.core.adapter import RunHandle
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
    processes_with,
    read_until,
    run_turn,
    start,
    text,
)

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-codex-0000000000"
PATCH = (
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: patched.txt\n+hello patch\n"
    "*** End Patch\nEOF\n"
)
MODES: list[Mode] = ["exec", "app-server"]


def script() -> dict[str, Any]:
    return {
        "model": "gpt-5.5",
        "conversations": [
            {
                "name": "text",
                "marker": "[[e2e:text]]",
                "turns": [{"reasoning": "Considering", "text": "FINAL: hello from codex"}],
            },
            {
                "name": "tool",
                "marker": "[[e2e:tool]]",
                "turns": [
                    {
                        "tool_calls": [
                            {"name": "exec_command", "input": {"cmd": "echo hi-from-tool"}}
                        ]
                    },
                    {"text": "TOOL_RESULT_SEEN"},
                ],
            },
            {
                "name": "patch",
                "marker": "[[e2e:patch]]",
                "turns": [
                    {"tool_calls": [{"name": "exec_command", "input": {"cmd": PATCH}}]},
                    {"text": "PATCHED"},
                ],
            },
            {
                "name": "slow",
                "marker": "[[e2e:slow]]",
                "turns": [{"text": "slow " * 200, "chunk_chars": 5, "chunk_delay_s": 0.05}],
            },
            {
                "name": "sleeper",
                "marker": "[[e2e:sleeper]]",
                "turns": [
                    {
                        "tool_calls": [
                            {
                                "name": "exec_command",
                                "input": {"cmd": "sleep 41.5 && echo ringleader-sleeper"},
                            }
                        ]
                    },
                    {"text": "never reached"},
                ],
            },
            *conversations("e500", "e429", "resume", "c1", "c2"),
        ],
    }


@pytest.fixture(scope="module")
def codex_binary() -> Path:
    return installed("codex")


@pytest.fixture
def state_dir() -> Iterator[Path]:
    """Homes outside the system temp directory (Codex warns about homes there)."""
    root = default_state_root() / f"e2e-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def make_adapter(mode: Mode, server: ModelServer, state_dir: Path, **kw: Any) -> CodexAdapter:
    provider = CodexProvider(
        base_url=server.base_url, api_key=KEY, request_max_retries=1, stream_max_retries=1
    )
    return CodexAdapter(
        CodexConfig(mode=mode, provider=provider, model="gpt-5.5", state_root=state_dir, **kw)
    )


async def run_once(
    adapter: CodexAdapter, message: str, cwd: Path, **opts: Any
) -> tuple[list[RuntimeEvent], RunHandle]:
    events, run, pid = await run_turn(adapter, message, cwd, secret=KEY, deadline_s=60, **opts)
    assert not alive(pid)  # reaped (with its group) before done was published
    return events, run


def codex_requests(server: ModelServer, conversation: str) -> list[Any]:
    return [r for r in server.requests if r.conversation == conversation]


@pytest.mark.parametrize("mode", MODES)
async def test_text_turn(
    mode: Mode, codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    async with make_adapter(mode, server, state_dir) as adapter:
        events, _ = await run_once(adapter, "[[e2e:text]] say hello", workspace)
    assert done(events).reason == "success"
    assert done(events).summary == "FINAL: hello from codex"
    assert text(events) == "FINAL: hello from codex"
    assert any(isinstance(e, TextDelta) and e.channel == "reasoning" for e in events)
    deltas = [e for e in events if isinstance(e, TextDelta) and e.channel == "assistant"]
    assert len(deltas) == (1 if mode == "exec" else 3)  # the server sends 8-char chunks
    init = events[0]
    assert isinstance(init, Status) and init.phase == "init" and init.model == "gpt-5.5"
    cost = [e for e in events if isinstance(e, Cost)][-1]
    assert cost.usage.input_tokens == 10 and cost.usage.output_tokens == 5
    assert cost.cost_usd is None
    (request,) = codex_requests(server, "text")
    assert request.path == "/v1/responses"
    assert request.headers.get("authorization") == "[REDACTED]"
    assert not list(state_dir.iterdir())  # the per-run home was removed


@pytest.mark.parametrize("mode", MODES)
async def test_shell_tool_call_and_result(
    mode: Mode, codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    async with make_adapter(mode, server, state_dir) as adapter:
        events, _ = await run_once(adapter, "[[e2e:tool]] run echo", workspace)
    assert done(events).reason == "success" and done(events).summary == "TOOL_RESULT_SEEN"
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert call.name == "exec_command" and "echo hi-from-tool" in json.dumps(call.input)
    assert result.tool_call_id == call.tool_call_id
    assert "hi-from-tool" in result.output and "[exit code: 0]" in result.output
    assert not result.is_error
    follow_up = codex_requests(server, "tool")[1].body["input"]
    assert "hi-from-tool" in json.dumps(
        [i for i in follow_up if i["type"] == "function_call_output"]
    )


@pytest.mark.parametrize("mode", MODES)
async def test_apply_patch_file_change(
    mode: Mode, codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    async with make_adapter(mode, server, state_dir) as adapter:
        events, _ = await run_once(adapter, "[[e2e:patch]] add a file", workspace)
    assert done(events).reason == "success"
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert call.name == "apply_patch"
    assert str(workspace / "patched.txt") in json.dumps(call.input)
    assert result.output.startswith("add ") and not result.is_error
    assert (workspace / "patched.txt").read_text() == "hello patch\n"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("marker", "code", "requests"), [("500", "server_error", 4), ("429", "rate_limited", 2)]
)
async def test_model_errors(
    mode: Mode,
    marker: str,
    code: str,
    requests: int,
    codex_binary: Path,
    server: ModelServer,
    workspace: Path,
    state_dir: Path,
) -> None:
    async with make_adapter(mode, server, state_dir) as adapter:
        events, _ = await run_once(adapter, f"[[e2e:{marker}]] fail", workspace)
    assert done(events).reason == "error"
    fatal = [e for e in events if isinstance(e, ErrorEvent) and e.fatal]
    assert len(fatal) == 1 and fatal[0].code == code
    retries = [
        e for e in events if isinstance(e, Status) and e.detail and "Reconnecting" in e.detail
    ]
    assert retries
    assert len(codex_requests(server, f"e{marker}")) == requests


@pytest.mark.parametrize("mode", MODES)
async def test_abort_mid_stream(
    mode: Mode, codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    async with make_adapter(mode, server, state_dir) as adapter:
        run = await start(adapter, "[[e2e:slow]] go", workspace, key="e2e:abort")
        child = adapter.child_for(run)
        assert child is not None
        stream = adapter.events(run)

        def streaming(event: RuntimeEvent) -> bool:  # exec: thinking; app-server: text deltas
            thinking = mode == "exec" and isinstance(event, Status) and event.phase == "thinking"
            return thinking or isinstance(event, TextDelta)

        seen = await read_until(stream, streaming, 30)
        with trio.fail_after(30):
            await trio.sleep(0.3)
            began = trio.current_time()
            await adapter.abort(run)
            took = trio.current_time() - began
        seen += await collect_run(stream, deadline_s=10)
        check_stream(seen)
        assert done(seen).reason == "aborted"
        assert not any(isinstance(e, ErrorEvent) and e.fatal for e in seen)
        assert took < 8
        assert not alive(child.pid)
        if mode == "app-server":  # a clean interrupt, no signal needed
            assert "turn/interrupt" in [c.method for c in adapter.calls]
            assert not child.terminated_by_us
            assert text(seen).startswith("slow")  # streamed before the interrupt
        await adapter.abort(run)  # idempotent


@pytest.mark.parametrize("mode", MODES)
async def test_resume(
    mode: Mode, codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    home = state_dir / "identity-home"
    async with make_adapter(mode, server, state_dir) as adapter:
        first, run = await run_once(
            adapter, "[[e2e:resume]] first", workspace, key="e2e:resume", home_dir=str(home)
        )
        thread = first[0].run_id
        blob = await adapter.session_codec.serialize(run)
    assert json.loads(blob) == {
        "sessionKey": "e2e:resume",
        "sessionId": thread,
        "cwd": str(workspace),
    }
    async with make_adapter(mode, server, state_dir) as adapter:
        restored = await adapter.session_codec.restore(blob)
        assert restored.run_id == thread
        second, _ = await run_once(
            adapter, "and again", workspace, key="e2e:resume:r1", home_dir=str(home),
            resume_session_id=thread,
        )  # fmt: skip
    assert second[0].run_id == thread
    assert done(second).reason == "success" and done(second).summary == "SECOND after resume"
    cost = [e for e in second if isinstance(e, Cost)][-1]
    assert (cost.usage.input_tokens, cost.usage.output_tokens) == (10, 5)  # this run's only
    replay = json.dumps(codex_requests(server, "resume")[1].body["input"])
    assert "FIRST" in replay and "and again" in replay


@pytest.mark.parametrize("mode", MODES)
async def test_resume_unknown_thread_fails_permanently(
    mode: Mode, codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    async with make_adapter(mode, server, state_dir) as adapter:
        events, _ = await run_once(
            adapter, "hello", workspace, resume_session_id="01a20362-0000-7000-8000-000000000000"
        )
    assert done(events).reason == "error"
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "session_not_found", error


@pytest.mark.parametrize("mode", MODES)
async def test_two_concurrent_runs(
    mode: Mode, codex_binary: Path, server: ModelServer, tmp_path: Path, state_dir: Path
) -> None:
    results: dict[str, list[RuntimeEvent]] = {}
    async with make_adapter(mode, server, state_dir) as adapter:

        async def one(name: str) -> None:
            ws = tmp_path / name
            ws.mkdir()
            results[name], _ = await run_once(adapter, f"[[e2e:{name}]] go", ws, key=f"e2e:{name}")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "c1")
            nursery.start_soon(one, "c2")
    assert text(results["c1"]) == "ONE" and text(results["c2"]) == "TWO"
    assert results["c1"][0].run_id != results["c2"][0].run_id


@pytest.mark.parametrize("decision", ["accept", "decline"])
async def test_app_server_approvals_follow_the_policy(
    decision: str, codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    asked: list[str] = []

    def approve(method: str, params: Any) -> Any:
        asked.append(method)
        return decision

    adapter = make_adapter(
        "app-server", server, state_dir, approval_policy="untrusted", approve=approve
    )
    async with adapter:
        events, _ = await run_once(adapter, "[[e2e:tool]] run echo", workspace)
    assert asked == ["item/commandExecution/requestApproval"]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    if decision == "accept":
        assert "hi-from-tool" in result.output and not result.is_error
    else:
        assert result.is_error and "hi-from-tool" not in result.output
    assert done(events).reason == "success"


@pytest.mark.parametrize("mode", MODES)
async def test_set_model_applies_to_the_next_turn(
    mode: Mode, codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    home = state_dir / "identity-home"
    async with make_adapter(mode, server, state_dir) as adapter:
        _, run = await run_once(adapter, "[[e2e:resume]] first", workspace, home_dir=str(home))
        await adapter.set_model(run, "gpt-5.6-sol")
        second, _ = await run_once(
            adapter, "again", workspace, home_dir=str(home), resume_session_id=run.run_id
        )
    assert done(second).reason == "success"
    first, *later = server.requests
    assert first.body["model"] == "gpt-5.5"
    # Codex switches models with a request on the old model first, then the turn on the new one,
    # both on the resumed thread.
    assert later and later[-1].body["model"] == "gpt-5.6-sol"
    assert {r.body["prompt_cache_key"] for r in server.requests} == {run.run_id}


@pytest.mark.parametrize("mode", MODES)
async def test_abort_during_a_tool_leaves_no_process(
    mode: Mode, codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    async with make_adapter(mode, server, state_dir) as adapter:
        run = await start(adapter, "[[e2e:sleeper]] go", workspace, key="e2e:sleeper")
        stream = adapter.events(run)
        seen = await read_until(stream, lambda e: isinstance(e, ToolCall), 30)
        with trio.fail_after(30):
            while not processes_with("sleep 41.5"):  # noqa: ASYNC110 - polling /proc
                await trio.sleep(0.05)
            await adapter.abort(run)
        seen += await collect_run(stream, deadline_s=10)
        check_stream(seen)
        assert done(seen).reason == "aborted"
        result = next(e for e in seen if isinstance(e, ToolResult))
        assert result.is_error  # closed by a synthetic result
    assert processes_with("sleep 41.5") == []


async def test_long_prompt_goes_on_stdin(
    codex_binary: Path, server: ModelServer, workspace: Path, state_dir: Path
) -> None:
    # Over the kernel's 128 KiB cap on one argv string: on argv, the CLI could not even start.
    filler = "lorem ipsum " * (200 * 1024 // 12)
    async with make_adapter("exec", server, state_dir) as adapter:
        events, _ = await run_once(adapter, f"[[e2e:text]] say hello\n{filler}", workspace)
    assert done(events).reason == "success"
    assert done(events).summary == "FINAL: hello from codex"
    (request,) = codex_requests(server, "text")
    assert filler.strip() in json.dumps(request.body)
