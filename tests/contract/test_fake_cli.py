"""The fake CLI, driven through the real process driver (adapters._process)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
import trio

from adapters._jsonl import Frame
from adapters._process import ChildProcess, child_env, open_child
from contract.fake_cli import (
    FAKE_CLI_VERSION,
    NAMED_FAULTS,
    clear_grandchild_records,
    fake_cli_argv,
    grandchild_pids,
    hang_switch,
)
from orchestrator.core.errors import LineTooLongError

GRACE = 0.3
REPO = Path(__file__).resolve().parents[2]
LINES = [
    '{"type":"system","subtype":"init","session_id":"s1"}',
    '{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}',
    '{"type":"result","subtype":"success","is_error":false}',
]
ENCODED = [line.encode() for line in LINES]


async def read_all(child: ChildProcess) -> list[Frame]:
    out: list[Frame] = []
    async for batch in child.batches():
        out.extend(batch)
    return out


async def read_n(child: ChildProcess, n: int) -> list[Frame]:
    out: list[Frame] = []
    while len(out) < n:
        batch = await child.receive_batch()
        assert batch, f"EOF after {out!r}; stderr: {child.stderr_tail}"
        out.extend(batch)
    return out


async def test_replays_a_transcript_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(ENCODED[:2]) + b"\r\n\n" + ENCODED[2] + b"\n")
    async with open_child(fake_cli_argv(path), env=child_env()) as child:
        frames = await read_all(child)
        assert await child.wait() == 0
    assert frames == ENCODED  # the \r\n is the framer's business; blank lines are skipped


async def test_inline_lines_with_delay_and_stderr() -> None:
    argv = fake_cli_argv(LINES, delay=0.01, stderr=["warming up", "token sk-ant-abcdefghijk123"])
    async with open_child(argv, env=child_env()) as child:
        frames = await read_all(child)
        assert await child.wait() == 0
        tail = child.stderr_tail
    assert frames == ENCODED
    assert tail.startswith("warming up\n")
    assert "sk-ant-abcdefghijk123" not in tail


async def test_truncated_last_line_then_exit() -> None:
    argv = fake_cli_argv(LINES, truncate_at=2, exit_code=1)
    async with open_child(argv, env=child_env()) as child:
        frames = await read_all(child)
        assert await child.wait() == 1
    assert frames[:2] == ENCODED[:2]
    last = frames[2]
    assert isinstance(last, bytes)
    assert ENCODED[2].startswith(last)
    assert len(last) < len(ENCODED[2])
    with pytest.raises(json.JSONDecodeError):
        json.loads(last)  # the dialect parser turns this into a ProtocolError


async def test_overlong_line_then_the_rest() -> None:
    argv = fake_cli_argv(LINES, overlong_at=1, overlong_bytes=5000)
    async with open_child(argv, env=child_env(), max_line_bytes=1000) as child:
        frames = await read_all(child)
        assert await child.wait() == 0
    assert frames[0] == ENCODED[0]
    assert isinstance(frames[1], LineTooLongError)
    assert frames[2:] == ENCODED[1:]


async def test_default_overlong_line_trips_the_default_cap() -> None:
    async with open_child(fake_cli_argv(LINES, overlong_at=3), env=child_env()) as child:
        frames = await read_all(child)
    assert frames[:3] == ENCODED
    assert isinstance(frames[3], LineTooLongError)
    assert frames[3].limit == 8 * 1024 * 1024


async def test_exit_nonzero_mid_stream() -> None:
    async with open_child(fake_cli_argv(LINES, exit_at=1, exit_code=3), env=child_env()) as child:
        frames = await read_all(child)
        assert await child.wait() == 3
        err = child.exit_error()
    assert frames == ENCODED[:1]
    assert err.exit_code == 3


async def test_stall_then_sigint_kills() -> None:
    argv = fake_cli_argv(LINES, stall_at=2)
    async with open_child(argv, env=child_env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        assert await read_n(child, 2) == ENCODED[:2]
        assert await child.terminate() == -signal.SIGINT
        assert child.terminated_by_us


async def test_clean_sigint_line_like_claude_code() -> None:
    result = (
        '{"type":"result","subtype":"error_during_execution","terminal_reason":"aborted_streaming"}'
    )
    argv = fake_cli_argv(LINES, stall_at=1, on_sigint=result)
    async with open_child(argv, env=child_env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        assert await read_n(child, 1) == ENCODED[:1]
        async with trio.open_nursery() as nursery:
            rest: list[Frame] = []

            async def reader() -> None:
                rest.extend(await read_all(child))

            nursery.start_soon(reader)
            assert await child.terminate() == 0
    assert rest == [result.encode()]


async def test_ignoring_sigint_gets_sigterm() -> None:
    argv = fake_cli_argv(LINES, stall_at=1, ignore_sigint=True)
    async with open_child(argv, env=child_env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        await read_n(child, 1)
        assert await child.terminate() == -signal.SIGTERM


async def test_ignoring_sigint_and_sigterm_gets_sigkill() -> None:
    argv = fake_cli_argv(LINES, stall_at=1, ignore_sigint=True, ignore_sigterm=True)
    async with open_child(argv, env=child_env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        await read_n(child, 1)
        assert await child.terminate() == -signal.SIGKILL


async def test_stdin_rules_answer_requests(tmp_path: Path) -> None:
    log = tmp_path / "stdin.log"
    rules = [
        {"match": {"method": "initialize"}, "reply": ['{"id":{{id}},"result":{"ok":true}}']},
        {
            "match": {"type": "control_request", "request": {"subtype": "interrupt"}},
            "reply": [
                '{"type":"control_response","response":{"subtype":"success","request_id":{{request_id}}}}'
            ],
        },
        {"match": {"echo": True}, "echo": True},
        {"match": {"method": "shutdown"}, "reply": ['{"id":{{id}},"result":null}'], "exit": 4},
    ]
    argv = fake_cli_argv([LINES[0]], rules=rules, stdin_log=log)
    async with open_child(argv, env=child_env(), stdin=True) as child:
        assert await read_n(child, 1) == [ENCODED[0]]
        await child.send_line(b'{"id":7,"method":"initialize","params":{}}')
        assert await read_n(child, 1) == [b'{"id":7,"result":{"ok":true}}']
        await child.send_line(b"not json")  # ignored
        await child.send_line(b'{"method":"unknown"}')  # no rule: ignored
        req = b'{"type":"control_request","request_id":"int-1","request":{"subtype":"interrupt"}}'
        await child.send_line(req)
        assert await read_n(child, 1) == [
            b'{"type":"control_response","response":{"subtype":"success","request_id":"int-1"}}'
        ]
        await child.send_line(b'{"echo":true,"x":[1,2]}')
        assert await read_n(child, 1) == [b'{"echo":true,"x":[1,2]}']
        await child.send_line(b'{"id":"z","method":"shutdown"}')
        assert await read_all(child) == [b'{"id":"z","result":null}']
        assert await child.wait() == 4
    received = log.read_bytes().splitlines()
    assert received[0] == b'{"id":7,"method":"initialize","params":{}}'
    assert received[1] == b"not json"
    assert len(received) == 6


async def test_stdin_eof_ends_a_long_lived_fake() -> None:
    argv = fake_cli_argv(LINES, rules=[], exit_code=0)
    async with open_child(argv, env=child_env(), stdin=True) as child:
        assert await read_n(child, 3) == ENCODED
        with trio.move_on_after(0.2):  # still alive: it serves stdin until end of file
            await child.wait()
        assert child.returncode is None
        await child.close_stdin()
        assert await child.wait() == 0


async def test_runs_as_a_module() -> None:
    argv = [sys.executable, "-m", "contract.fake_cli", "--line", LINES[0], "--exit-code", "2"]
    async with open_child(argv, env=child_env(), cwd=REPO) as child:
        assert await read_all(child) == ENCODED[:1]
        assert await child.wait() == 2


def test_argv_builder() -> None:
    argv = fake_cli_argv(
        "t.jsonl", delay=0.5, stall_at=3, ignore_sigint=True, exit_code=2, stderr=["x"]
    )
    assert argv[:2] == [sys.executable, "-I"]
    assert argv[3].endswith("fake_cli.py")
    tail = argv[4:]
    assert tail[:2] == ["--transcript", "t.jsonl"]
    for flag in ("--delay", "--stall-at", "--ignore-sigint", "--exit-code", "--stderr"):
        assert flag in tail
    assert "--line" in fake_cli_argv(["a"])


@pytest.mark.parametrize("fault", NAMED_FAULTS)
async def test_named_faults(fault: str) -> None:
    argv = fake_cli_argv(LINES, fault=fault)
    async with open_child(
        argv, env=child_env(), max_line_bytes=4096, sigint_grace=GRACE, sigterm_grace=GRACE
    ) as child:
        frames = await read_n(child, 1)
        assert frames[0] == ENCODED[0]
        if fault in ("stall", "ignore-sigint", "grandchild"):
            code = await child.terminate()
            assert code == (-signal.SIGTERM if fault == "ignore-sigint" else -signal.SIGINT)
            return
        frames += await read_all(child)
        code = await child.wait()
    if fault.startswith("truncated-line"):
        assert frames[:1] == ENCODED[:1]
        assert frames[1] != ENCODED[1]
        assert code == (0 if fault.endswith("exit-0") else 1)
    elif fault == "over-cap-line":
        assert isinstance(frames[1], LineTooLongError)
        assert frames[2:] == ENCODED[1:]
        assert code == 0
    else:
        assert frames == ENCODED[:1]
        assert code == 1


def test_unknown_fault() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        fake_cli_argv(LINES, fault="nope")
    with pytest.raises(ValueError, match="at least one line"):
        fake_cli_argv([], fault="truncated-line")


async def test_grandchild_is_recorded_and_dies_with_the_group() -> None:
    clear_grandchild_records()
    argv = fake_cli_argv(LINES, fault="grandchild")
    async with open_child(argv, env=child_env(), sigint_grace=GRACE) as child:
        await read_n(child, 1)
        # recorded before the first line, and found at once by its tag (a PID namespace hides
        # its pid): the record waits for the grandchild's exec (it was written between fork and
        # exec before, and missed in about 1 lookup in 5 under load)
        (grandchild,) = grandchild_pids()
        assert grandchild != child.pid
        assert os.getpgid(grandchild) == child.pid  # in the child's process group
        await child.terminate()
    assert _gone_or_zombie(grandchild)  # a zombie is the business of its new parent (init)
    clear_grandchild_records()
    assert grandchild_pids() == []


async def test_version_answers_and_the_hang_switch_hangs() -> None:
    argv = fake_cli_argv(LINES)
    async with open_child([*argv, "--version"], env=child_env()) as child:
        assert await read_all(child) == [FAKE_CLI_VERSION.encode()]
        assert await child.wait() == 0
    with hang_switch():
        async with open_child([*argv, "--version"], env=child_env(), sigint_grace=GRACE) as child:
            with trio.move_on_after(0.5) as waited:
                await child.wait()
            assert waited.cancelled_caught  # hung: no answer, no exit
            assert await child.terminate() == -signal.SIGINT


def _gone_or_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return True
    return stat[stat.rfind(b")") + 2 :][:1] in (b"Z", b"X")
