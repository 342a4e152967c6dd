"""The shared run loop (``adapters._cli``) through the real adapters and a fake CLI on real pipes:
typed errors keep the runtime's code, a lost answer is an error, long prompts go on stdin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from adapters import RunEmitter
from adapters._cli import PROMPT_STDIN_BYTES, prompt_input
from adapters._runs import RunTable
from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig
from adapters.codex import CodexAdapter, CodexConfig
from contract.fake_cli import fake_cli_argv
from orchestrator.core import (
    Done,
    ErrorEvent,
    RunHandle,
    RuntimeAdapter,
    RuntimeEvent,
    RuntimeReportedError,
    StartOpts,
    TaskHandle,
    TextDelta,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CODEX_TEXT = FIXTURES / "codex" / "0.169.0" / "exec-text.jsonl"
CLAUDE_TEXT = FIXTURES / "claude_code" / "2.1.330" / "text.jsonl"
OVER_CAP = 9 * 1024 * 1024  # above the framer's 8 MiB line cap


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


async def _run(adapter: RuntimeAdapter, message: str = "hi") -> list[RuntimeEvent]:
    async with adapter:
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="a:main", message=message)
        )
        events: list[RuntimeEvent] = []
        with trio.fail_after(30):
            async with adapter.events(run) as stream:
                async for event in stream:
                    events.append(event)
        return events


def _codex(tmp_path: Path, argv: list[str]) -> CodexAdapter:
    return CodexAdapter(
        CodexConfig(mode="exec", launcher=lambda args: argv, state_root=tmp_path, model="gpt-5.5")
    )


# ---------------------------------------------------------------- RunEmitter.fail_with


async def test_fail_with_keeps_the_runtime_reported_code() -> None:
    emitter = RunEmitter(handle=RunHandle(adapter_id="x", session_key="k", run_id=None))
    stream = emitter.subscribe()
    await emitter.fail_with(RuntimeReportedError("gone", code="session_not_found"))
    events = [e async for e in stream]
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "session_not_found"
    assert isinstance(events[-1], Done) and events[-1].reason == "error"


async def test_fail_with_a_codeless_runtime_error_uses_the_event_code() -> None:
    emitter = RunEmitter(handle=RunHandle(adapter_id="x", session_key="k", run_id=None))
    stream = emitter.subscribe()
    await emitter.fail_with(RuntimeReportedError("failed"))
    events = [e async for e in stream]
    assert next(e for e in events if isinstance(e, ErrorEvent)).code == "runtime_reported"


# ---------------------------------------------------------------- RunTable: finished runs capped


async def test_the_run_table_forgets_the_oldest_finished_runs_never_a_live_one() -> None:
    forgotten: list[str] = []
    table = RunTable(keep_finished=3, on_forget=forgotten.append)
    emitters = [
        RunEmitter(handle=RunHandle(adapter_id="x", session_key=f"k{i}", run_id=None))
        for i in range(10)
    ]
    for i, emitter in enumerate(emitters):
        table.add(emitter)
        if i % 3:  # every third run stays live
            await emitter.finish("success", "")
    live = [f"k{i}" for i in range(10) if i % 3 == 0]
    assert all(key in table.runs for key in live)
    finished_kept = [key for key in table.runs if key not in live]
    assert 3 <= len(finished_kept) <= 4  # the cap, plus what came since the last prune
    assert forgotten == [f"k{i}" for i in range(10) if i % 3 and f"k{i}" not in finished_kept]
    assert (
        finished_kept == [k for k in (f"k{i}" for i in range(10) if i % 3)][-len(finished_kept) :]
    )


# ---------------------------------------------------------------- a lost answer (#14 item 10)


async def test_codex_answer_line_over_the_cap_is_an_error_not_a_success(tmp_path: Path) -> None:
    lines = _lines(CODEX_TEXT)
    answer = json.loads(lines[3])
    answer["item"]["text"] = "x" * OVER_CAP
    lines[3] = json.dumps(answer)
    transcript = tmp_path / "over-cap-answer.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    events = await _run(_codex(tmp_path, fake_cli_argv(transcript)))
    done = events[-1]
    assert isinstance(done, Done)
    assert done.reason == "error", done
    fatal = [e for e in events if isinstance(e, ErrorEvent) and e.fatal]
    assert [e.code for e in fatal] == ["line_too_long"]
    assert "answer was lost" in fatal[0].message


async def test_a_lost_line_before_the_answer_keeps_the_success(tmp_path: Path) -> None:
    # An over-cap line (say a huge command output) before the answer: the answer arrived.
    argv = fake_cli_argv(_lines(CODEX_TEXT), overlong_at=2)
    events = await _run(_codex(tmp_path, argv))
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert done.summary == "FINAL: hello from codex"
    assert any(isinstance(e, ErrorEvent) and e.code == "line_too_long" for e in events)


async def test_claude_result_restates_the_answer_so_a_lost_line_keeps_the_success(
    tmp_path: Path,
) -> None:
    lines = _lines(CLAUDE_TEXT)
    argv = fake_cli_argv(lines, overlong_at=len(lines) - 1)  # just before the result line
    adapter = ClaudeCodeAdapter(ClaudeCodeConfig(launcher=lambda args: argv, state_root=tmp_path))
    events = await _run(adapter)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert done.summary


# ---------------------------------------------------------------- long prompts on stdin (#14 item 6)


def test_only_long_prompts_go_on_stdin() -> None:
    assert prompt_input("short") is None
    long = "é" * (PROMPT_STDIN_BYTES // 2 + 1)  # two bytes each in UTF-8
    assert prompt_input(long) == long.encode()


async def _long_prompt_run(adapter: RuntimeAdapter, log: Path) -> tuple[list[Any], str]:
    prompt = "p" * (200 * 1024)  # over the kernel's 128 KiB limit for one argv string
    events = await _run(adapter, prompt)
    return events, log.read_text()


async def test_codex_long_prompt_goes_on_stdin(tmp_path: Path) -> None:
    log = tmp_path / "stdin.log"
    seen: list[list[str]] = []

    def launch(args: Any) -> list[str]:
        seen.append(list(args))
        return fake_cli_argv(_lines(CODEX_TEXT), rules=[], stdin_log=log)

    adapter = CodexAdapter(
        CodexConfig(mode="exec", launcher=launch, state_root=tmp_path, model="gpt-5.5")
    )
    events, received = await _long_prompt_run(adapter, log)
    assert isinstance(events[-1], Done) and events[-1].reason == "success"
    assert received == "p" * (200 * 1024) + "\n"
    assert seen[0][-1] == "-"  # codex reads the prompt from stdin
    assert all(len(arg) < 1024 for arg in seen[0])


async def test_claude_long_prompt_goes_on_stdin(tmp_path: Path) -> None:
    log = tmp_path / "stdin.log"
    seen: list[list[str]] = []

    def launch(args: Any) -> list[str]:
        seen.append(list(args))
        return fake_cli_argv(_lines(CLAUDE_TEXT), rules=[], stdin_log=log)

    adapter = ClaudeCodeAdapter(ClaudeCodeConfig(launcher=launch, state_root=tmp_path))
    events, received = await _long_prompt_run(adapter, log)
    assert isinstance(events[-1], Done) and events[-1].reason == "success"
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text
    assert received == "p" * (200 * 1024) + "\n"
    assert "--" not in seen[0]  # no positional prompt: claude -p reads it from stdin
    assert all(len(arg) < 1024 for arg in seen[0])


# ---------------------------------------------------------------- the documented example


async def test_the_module_docstring_example_runs(tmp_path: Path) -> None:
    import adapters._cli as cli

    doc = cli.__doc__ or ""
    block = doc.split("adapter::\n\n", 1)[1].split("\nWhat the loop guarantees", 1)[0]
    code = "\n".join(line[4:] for line in block.splitlines())
    namespace: dict[str, Any] = {}
    exec(compile(code, "adapters._cli example", "exec"), namespace)
    lines = [
        json.dumps({"type": "text", "text": "hello "}),
        "not json",
        json.dumps({"type": "mystery"}),
        json.dumps({"type": "text", "text": "world"}),
        json.dumps({"type": "result"}),
    ]
    log = tmp_path / "stdin.log"
    adapter = namespace["EchoAdapter"](fake_cli_argv(lines, rules=[], stdin_log=log))
    events = await _run(adapter, "the prompt")
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"
    assert done.summary == "hello world"
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hello ", "world"]
    assert log.read_text() == "the prompt\n"
