"""Session rotation on the real runtimes, against the scripted model server, through the runner.

The first session's model reports usage past the watermark (90% of Claude Code's 200,000-token
window, 93% of Codex's 258,400 for ``gpt-5.5``), runs a real tool turn, and then the context is
full: the model answers ``400 prompt is too long`` (Claude Code tries its own compaction first,
which fails the same way). The run ends in an error past the watermark, so the runner rotates: a
fresh session, on the same runtime or another, starts with the handoff note in its prompt's
context tier. Each test asserts

* the note, byte for byte, in what the successor's model server received (and not in anything
  the first session sent);
* the outcome: usage and cost summed over both sessions, one rotation;
* the event log: two runs, the successor's naming its predecessor (``rotatedFrom``), each with
  its own native session recorded.

Codex runs in its ``app-server`` mode here: ``codex exec`` reports no usage for a failed turn
(its ``turn.failed`` carries none), so a run that dies of a full context shows no usage and the
watermark cannot be seen; the app-server reports the thread's usage after every model response.

If Claude Code or Codex is not installed these tests FAIL with the install command.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from collections.abc import AsyncGenerator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from orchestrator.core.config import load_config
from orchestrator.core.registry import RuntimeRegistry, discover_runtimes
from orchestrator.engine import EventLog, RotationRecord, Runner, TaskOutcome, TaskSpec
from orchestrator.engine.eventlog import RunRow, SessionRow
from orchestrator.engine.feed import RecordingSink
from orchestrator.model_server import ModelServer, prefix_reuse_report, serve_model_server

from . import kit
from .kit import installed

pytestmark = pytest.mark.e2e

KEY_ENV = "RINGLEADER_E2E_ROTATION_KEY"
KEY = "sk-ant-e2e-rotation-0000000000"
TODAY = dt.date(2026, 11, 23)
TITLE = "Port the parser to the new tokenizer"
WINDOW = {"claude-code": 200_000, "codex": 258_400, "native": 200_000}


@attrs.frozen
class Hook:
    api: str
    model: str
    tool: dict[str, Any]
    config: dict[str, Any] = attrs.field(factory=dict[str, Any])


HOOKS = {
    "claude-code": Hook(
        "anthropic",
        "claude-sonnet-4-6",
        {"name": "Bash", "input": {"command": "echo step-one", "description": "run"}},
    ),
    "codex": Hook(
        "responses",
        "gpt-5.5",
        {"name": "exec_command", "input": {"cmd": "echo step-one"}},
        {"mode": "app-server", "prices": {"gpt-5.5": {"input": 1.25, "output": 10.0}}},
    ),
    "native": Hook(
        "anthropic",
        "claude-haiku-4-5",
        {"name": "list_files", "input": {"path": "."}},
        {"provider": "anthropic"},
    ),
}

HANDOFF_MARKER = "Session handoff (rotation)"
AFTER_TEXT = "DONE in the fresh session"
FIRST_USAGE = {"input_tokens": 180_000, "output_tokens": 50}
AFTER_USAGE = {"input_tokens": 300, "output_tokens": 7}


def expected_note(last_progress: str) -> str:
    """The handoff note as the original executor renders it (``rotation.build_rotation_handoff_note``)."""
    return (
        "Session handoff (rotation): the previous session reached its context limit.\n"
        "- Reason: context_watermark\n"
        "- Rotation: #1\n"
        f"- Last progress: {last_progress}\n"
        "Pick the task up from its current state; pull in only the context you actually need "
        "instead of replaying the full history."
    )


def script(runtime: str, *, first: bool, second: bool) -> dict[str, Any]:
    """The first session's conversation (``before``) and/or the successor's (``after``, picked
    by the handoff note in its prompt)."""
    hook = HOOKS[runtime]
    usage = dict(FIRST_USAGE)
    if runtime == "codex":
        usage["input_tokens"] = 240_000
    conversations: list[dict[str, Any]] = []
    if second:
        conversations.append(
            {
                "name": "after",
                "marker": HANDOFF_MARKER,
                "turns": [{"text": AFTER_TEXT, "usage": AFTER_USAGE}],
            }
        )
    if first:
        full = "prompt is too long: 231000 tokens > 200000 maximum"
        conversations.append(
            {
                "name": "before",
                "marker": "[[rotate]]",
                "turns": [
                    {"text": "Working on it.", "tool_calls": [hook.tool], "usage": usage},
                    {
                        "fault": {"kind": "bad_request", "times": 99, "message": full},
                        "text": "never",
                    },
                ],
            }
        )
    return {"model": hook.model, "conversations": conversations}


@attrs.define
class Setup:
    runner: Runner
    log: EventLog
    servers: dict[str, ModelServer]
    rotations: list[RotationRecord]
    workspace: Path
    runs: list[RunRow] = attrs.field(factory=list[RunRow])
    sessions: list[SessionRow | None] = attrs.field(factory=list["SessionRow | None"])


@pytest.fixture(autouse=True)
def model_key() -> Iterator[None]:
    os.environ[KEY_ENV] = KEY
    yield
    os.environ.pop(KEY_ENV, None)


@asynccontextmanager
async def rotation_setup(first: str, second: str, tmp_path: Path) -> AsyncGenerator[Setup]:
    for runtime in {first, second} - {"native"}:
        installed(runtime)
    specs = discover_runtimes()
    config = load_config(None, runtime_ids=[s.id for s in specs])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with AsyncExitStack() as stack:
        servers: dict[str, ModelServer] = {}
        for runtime in dict.fromkeys([first, second]):
            source = script(runtime, first=runtime == first, second=runtime == second)
            server = await stack.enter_async_context(serve_model_server(source))
            servers[runtime] = server
            hook = HOOKS[runtime]
            url = server.url if hook.api == "anthropic" else server.base_url
            config = config.with_runtime(
                runtime, "test", base_url=url, api_key_env=KEY_ENV, model=hook.model, **hook.config
            )
        registry = RuntimeRegistry.from_specs(specs, config.runtime)
        log = await stack.enter_async_context(EventLog.open(tmp_path / "events.db"))
        rotations: list[RotationRecord] = []
        runner = Runner(
            registry,
            sink=RecordingSink(log),
            state_dir=tmp_path / "state",
            event_log=log,
            today=lambda: TODAY,
            record_rotation=rotations.append,
        )
        yield Setup(runner, log, servers, rotations, workspace)


def strings(value: Any) -> Iterator[str]:
    """Every string inside a decoded JSON body."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():  # pyright: ignore[reportUnknownVariableType]
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:  # pyright: ignore[reportUnknownVariableType]
            yield from strings(item)


async def rotate(first: str, second: str, tmp_path: Path) -> tuple[TaskOutcome, Setup]:
    async with rotation_setup(first, second, tmp_path) as setup:
        task = TaskSpec(
            task_id="rot",
            title=f"[[rotate]] {TITLE}",
            cwd=str(setup.workspace),
            rotate_to=second if second != first else None,
        )
        outcome = await setup.runner.run_task(first, task)
        await setup.log.flush()
        setup.runs = await setup.log.runs()
        setup.sessions = [await setup.log.get_session(run.run_key) for run in setup.runs]
        return outcome, setup


def check_rotation(first: str, second: str, outcome: TaskOutcome, setup: Setup) -> None:
    assert outcome.status == "success", outcome
    assert outcome.summary == AFTER_TEXT
    assert outcome.rotations == 1
    assert [r.runtime_id for r in outcome.runs] == [first, second]
    before, after = (r.outcome for r in outcome.runs)
    assert before.reason == "error"  # the context was full
    # the note, byte for byte: what the successor's model server received
    (record,) = setup.rotations
    note = expected_note("Working on it.")
    assert record.note == note
    assert record.handoff.reason == "context_watermark"
    assert record.handoff.context_window_tokens == WINDOW[first]
    assert record.handoff.watermark is not None and record.handoff.watermark >= 0.85
    prompt = f"# Task: [[rotate]] {TITLE}\n\n{note}\n\nToday: 2026-11-23"
    (received,) = setup.servers[second].requests_for("after")
    assert any(prompt in text for text in strings(received.body)), received.body
    for request in setup.servers[first].requests_for("before"):
        assert not any(HANDOFF_MARKER in text for text in strings(request.body))
    # usage and cost summed over the rotation
    assert before.usage is not None and after.usage is not None
    assert outcome.usage == before.usage + after.usage
    if first != "native":  # (native's own compaction call adds its tokens)
        assert outcome.usage.output_tokens == FIRST_USAGE["output_tokens"] + 7
    assert before.usage.input_tokens >= WINDOW[first] * 0.85
    assert before.cost_usd is not None and after.cost_usd is not None
    assert outcome.cost_usd == pytest.approx(before.cost_usd + after.cost_usd)
    assert outcome.cost_complete
    # the event log links the sessions
    runs = setup.runs
    assert [run.run_key for run in runs] == [before.run_key, after.run_key]
    assert [run.runtime_id for run in runs] == [first, second]
    assert runs[0].status == "error" and runs[1].status == "success"
    lineage = runs[1].outcome or {}
    assert lineage["rotatedFrom"] == runs[0].run_key
    assert lineage["rotationReason"] == "context_watermark"
    assert lineage["handoffNoteBytes"] == len(note.encode())
    assert runs[1].session_key == runs[0].session_key + ":r1"
    ids = [s.native_session_id if s else None for s in setup.sessions]
    assert all(ids) and ids[0] != ids[1]  # a fresh native session
    assert [before.run_id, after.run_id] == ids
    for request in [r for s in setup.servers.values() for r in s.requests]:
        assert KEY not in str(request.headers) and KEY not in str(request.body)


async def test_claude_code_rotates_into_a_fresh_claude_code_session(tmp_path: Path) -> None:
    outcome, setup = await rotate("claude-code", "claude-code", tmp_path)
    check_rotation("claude-code", "claude-code", outcome, setup)
    # Claude Code's own cache markers: its system prompt is the same in the fresh session, so
    # a prompt cache keeps serving it across the rotation (the conversation starts over)
    server = setup.servers["claude-code"]
    first, fresh = server.requests_for("before")[0], server.requests_for("after")[0]
    across = prefix_reuse_report([first, fresh])[1]
    assert len(fresh.cache_marks) >= 2
    assert across.cached_bytes >= fresh.cache_marks[1]  # tools + system prompt, both markers
    print(f"claude-code across the rotation: {across.reused_bytes}/{across.prompt_bytes} bytes")


async def test_codex_rotates_into_a_fresh_codex_thread(tmp_path: Path) -> None:
    outcome, setup = await rotate("codex", "codex", tmp_path)
    check_rotation("codex", "codex", outcome, setup)
    assert outcome.runs[0].outcome.usage is not None
    assert outcome.runs[0].outcome.usage.input_tokens == 240_000


async def test_claude_code_rotates_onto_codex(tmp_path: Path) -> None:
    outcome, setup = await rotate("claude-code", "codex", tmp_path)
    check_rotation("claude-code", "codex", outcome, setup)
    (received,) = setup.servers["codex"].requests_for("after")
    assert received.path == "/v1/responses"  # the note crossed dialects unchanged


async def test_native_rotates_onto_claude_code(tmp_path: Path) -> None:
    outcome, setup = await rotate("native", "claude-code", tmp_path)
    check_rotation("native", "claude-code", outcome, setup)
    (received,) = setup.servers["claude-code"].requests_for("after")
    assert received.user_agent.startswith("claude-cli/")


# -- the command line ----------------------------------------------------------------------------


def test_the_cli_shows_the_rotation_and_replay_shows_the_chain(tmp_path: Path) -> None:
    installed("claude-code")
    installed("codex")
    script_file = tmp_path / "rotate.json"
    data = script("claude-code", first=True, second=True)
    data["conversations"][1].pop("marker")  # the CLI's prompt carries no marker
    script_file.write_text(json.dumps(data))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = kit.cli_env(tmp_path / "state", XDG_CONFIG_HOME=str(tmp_path / "xdg"), NO_COLOR="1")

    def ringleader(*args: str) -> subprocess.CompletedProcess[str]:
        return kit.ringleader(*args, cwd=workspace, env=env, timeout=240)

    result = ringleader(
        "run", "--runtime", "claude-code", "--rotate-to", "codex", "--watermark", "80",
        "--model-server", str(script_file), TITLE,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    rotation = [line for line in lines if "↻ rotation #1" in line]
    assert rotation == [
        "[claude-code] ↻ rotation #1 (context_watermark at 90% of 200,000 tokens) → new codex "
        f"session {rotation[0].split('session ')[1].split(',')[0]}, handoff note "
        f"{len(expected_note('Working on it.').encode())} bytes"
    ]
    assert "[claude-code] ■ done: error" in lines
    assert f"[claude-code] {AFTER_TEXT}" in lines
    assert "[claude-code] ■ done: success after 1 rotation" in lines
    assert "success after 1 rotation" in result.stdout.split("comparison")[1]
    replay = ringleader("replay", "last")
    assert replay.returncode == 0, replay.stderr
    shown = replay.stdout.splitlines()
    assert rotation[0] in shown
    assert shown.index("[claude-code] ■ done: error") < shown.index(rotation[0])
    assert shown[-1] == "[claude-code] ■ done: success after 1 rotation"
