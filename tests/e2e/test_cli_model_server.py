"""``ringleader run --model-server --json`` through a real subprocess, for every runtime that can be
pointed at the built-in scripted model server: the built-in script gives a real tool turn (a tool
the runtime offers, run in the working directory; its result is not an error) and a text answer.

Claude Code and Codex are the real CLIs installed by ``scripts/install-runtimes``; if one is
missing its test FAILS with the install command.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from orchestrator.core.events import (
    Done,
    ErrorEvent,
    RuntimeEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    event_from_json,
)
from orchestrator.engine.eventlog import EventLog, RunRow

from . import kit

pytestmark = pytest.mark.e2e

TOOL = {"native": "list_files", "claude-code": "Bash", "codex": "exec_command"}
ANSWER = "Done: this answer comes from ringleader's built-in scripted model server."


def installed(runtime: str) -> None:
    if runtime != "native":
        kit.installed(runtime)


def cli_env(tmp_path: Path) -> dict[str, str]:
    return kit.cli_env(tmp_path / "state", XDG_CONFIG_HOME=str(tmp_path / "xdg"))


def ringleader(
    *args: str, cwd: Path, env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return kit.ringleader(*args, cwd=cwd, env=env, timeout=timeout)


def events_of(stdout: str) -> list[RuntimeEvent]:
    return [event_from_json(line) for line in stdout.splitlines() if line.strip()]


def check_tool_and_text_turns(runtime: str, events: list[RuntimeEvent]) -> None:
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success", done
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == [TOOL[runtime]]
    assert [r.tool_call_id for r in results] == [calls[0].tool_call_id]
    assert not results[0].is_error, results[0].output
    assert "marker.txt" in str(results[0].output)  # the tool really ran in the working directory
    text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == "assistant")
    assert text.endswith(ANSWER)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "marker.txt").write_text("hello\n")
    return ws


@pytest.mark.parametrize("runtime", ["native", "claude-code", "codex"])
def test_run_model_server_json(runtime: str, workspace: Path, tmp_path: Path) -> None:
    installed(runtime)
    result = ringleader(
        "run", "--runtime", runtime, "--model-server", "--json", "look around",
        cwd=workspace, env=cli_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    check_tool_and_text_turns(runtime, events_of(result.stdout))


def test_openclaw_leaves_the_users_project_as_it_was(workspace: Path, tmp_path: Path) -> None:
    """Issue 34 item 3: OpenClaw's first-run files (AGENTS.md, BOOTSTRAP.md, IDENTITY.md,
    SOUL.md, USER.md) and its `git init` never land in the user's (non-git) directory, and the
    table counts what a run in place changed."""
    installed("openclaw")
    result = ringleader(
        "run", "--runtime", "openclaw", "--model-server", "look around",
        cwd=workspace, env=cli_env(tmp_path) | {"NO_COLOR": "1"}, timeout=400,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in workspace.iterdir()) == ["marker.txt"]
    [row] = [line for line in result.stdout.splitlines() if line.startswith("│ openclaw")]
    assert "│ none " in row, row  # counted in place: nothing changed


def test_model_server_script_file_and_bare_prompt(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"conversations": [{"name": "c", "turns": [{"text": "from my script"}]}]}')
    env = cli_env(tmp_path)
    result = ringleader(
        "run", "--runtime", "native", "--model-server", str(script), "--json", "hi",
        cwd=workspace, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = events_of(result.stdout)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "from my script"
    # human output, and `--model-server PROMPT` (no script file): the prompt, built-in script
    human = ringleader("run", "--runtime", "native", "--model-server", "hi", cwd=workspace, env=env)
    assert human.returncode == 0, human.stderr
    assert ANSWER in human.stdout and "✓ list_files" in human.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"conversations": [{"turns": []}]}')
    failed = ringleader(
        "run", "--runtime", "native", "--model-server", str(bad), "hi", cwd=workspace, env=env
    )
    assert failed.returncode == 2
    assert failed.stderr.startswith(f"ringleader: script {bad}: not a model-server script:")
    missing = ringleader(
        "run", "--runtime", "scripted", "--model-server", "hi", cwd=workspace, env=env
    )
    assert missing.returncode == 2
    assert "cannot be pointed at the model server" in missing.stderr


# -- resume ----------------------------------------------------------------------------------


def runs_in_log(state: Path) -> list[RunRow]:
    async def read() -> list[RunRow]:
        async with EventLog.open(state / "events.db") as log:
            return await log.runs()

    return trio.run(read)


@pytest.mark.parametrize("runtime", ["native", "claude-code", "codex"])
def test_resume_last(runtime: str, workspace: Path, tmp_path: Path) -> None:
    installed(runtime)
    env = cli_env(tmp_path)
    first = ringleader(
        "run", "--runtime", runtime, "--model-server", "--json", "look around",
        cwd=workspace, env=env,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    first_done = events_of(first.stdout)[-1]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # from another directory: the session resumes where it was recorded
    second = ringleader(
        "run", "--resume", "last", "--model-server", "--json", "and again",
        cwd=elsewhere, env=env,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    events = events_of(second.stdout)
    check_tool_and_text_turns(runtime, events)
    assert events[-1].run_id == first_done.run_id  # the same native session, continued
    runs = runs_in_log(tmp_path / "state")
    assert len(runs) == 2
    old, new = runs
    assert old.runtime_id == new.runtime_id == runtime
    assert new.run_key != old.run_key and new.status == "success"
    assert new.outcome is not None and new.outcome["resumedFrom"] == old.run_key


def test_resume_errors(workspace: Path, tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    empty = ringleader("run", "--resume", "last", "hi", cwd=workspace, env=env)
    assert empty.returncode == 2
    assert empty.stderr.strip() == "ringleader: the event log has no resumable run yet"
    unknown = ringleader("run", "--resume", "runtime:x:task:nope", "hi", cwd=workspace, env=env)
    assert unknown.returncode == 2 and "recorded no resumable session" in unknown.stderr
    ok = ringleader("run", "--runtime", "native", "--model-server", "hi", cwd=workspace, env=env)
    assert ok.returncode == 0, ok.stderr
    other = ringleader(
        "run", "--resume", "last", "--runtime", "codex", "hi", cwd=workspace, env=env
    )
    assert other.returncode == 2 and "cannot resume on 'codex'" in other.stderr


# -- Ctrl-C ------------------------------------------------------------------------------------

SLOW_SCRIPT = {
    "conversations": [
        {
            "name": "slow",
            "turns": [{"text": "tick " * 400, "chunk_chars": 5, "chunk_delay_s": 0.05}],
        }
    ]
}


def children_of(pid: int) -> set[int]:
    """Every descendant process of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def interrupt_mid_run(
    runtime: str, workspace: Path, tmp_path: Path, signals: int = 1, gap_s: float = 0.0
) -> None:
    script = tmp_path / "slow.json"
    script.write_text(json.dumps(SLOW_SCRIPT))
    env = cli_env(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", "--runtime", runtime,
         "--model-server", str(script), "--json", "count slowly"],
        cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line)
            if '"kind":"text-delta"' in line.replace(" ", ""):
                break
        children = children_of(process.pid)
        for n in range(signals):
            if n and gap_s:
                time.sleep(gap_s)
            process.send_signal(signal.SIGINT)
        rest, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert not [pid for pid in children if alive(pid)]
    if signals == 1:
        events = events_of("".join(lines) + rest)
        done = events[-1]
        assert isinstance(done, Done) and done.reason == "aborted"
        assert sum(isinstance(e, Done) for e in events) == 1
        assert "interrupted, aborting the run" in err
        replay = ringleader("replay", "--json", "last", cwd=workspace, env=env)
        logged = events_of(replay.stdout)
        assert isinstance(logged[-1], Done) and logged[-1].reason == "aborted"
        (run,) = runs_in_log(tmp_path / "state")
        assert run.status == "aborted"
    else:
        # the second signal forces unless the clean abort already ended the run (both are fine:
        # exit 130, no child left, the run ended in the log)
        assert "forced exit" in err or "interrupted, aborting the run" in err
        ended_once_in_log(tmp_path / "state")


def ended_once_in_log(state: Path) -> str:
    """The log's one run as the CLI left it (read raw: opening an ``EventLog`` would mark a run
    of the dead process ``interrupted`` itself): not ``running``, its events ending in exactly
    one ``done``. Returns its status."""
    db = sqlite3.connect(f"file:{state / 'events.db'}?mode=ro", uri=True)
    try:
        ((run_key, status),) = db.execute("SELECT run_key, status FROM runs").fetchall()
        bodies = [b for (b,) in db.execute(
            "SELECT body FROM events WHERE run = (SELECT id FROM run_ids WHERE run_key = ?) "
            "ORDER BY seq", (run_key,)
        )]  # fmt: skip
    finally:
        db.close()
    assert status in ("aborted", "interrupted"), status
    events = [event_from_json(body) for body in bodies]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert sum(isinstance(e, Done) for e in events) == 1 and isinstance(events[-1], Done)
    return str(status)


@pytest.mark.parametrize("runtime", ["claude-code", "codex"])
def test_sigint_aborts_cleanly(runtime: str, workspace: Path, tmp_path: Path) -> None:
    installed(runtime)
    interrupt_mid_run(runtime, workspace, tmp_path)


@pytest.mark.parametrize("runtime", ["claude-code", "codex"])
def test_two_sigints_within_2s(runtime: str, workspace: Path, tmp_path: Path) -> None:
    """The real CLIs too: 130, no child left, the run ended once in the log (forced or clean)."""
    installed(runtime)
    interrupt_mid_run(runtime, workspace, tmp_path, signals=2, gap_s=0.1)


# -- native: Ctrl-C, forced exit, retries you can see, loopback refused ----------------------


def test_native_first_sigint_aborts_cleanly(workspace: Path, tmp_path: Path) -> None:
    interrupt_mid_run("native", workspace, tmp_path)


@pytest.mark.parametrize("gap_s", [0.0, 0.05, 0.5])
def test_native_two_sigints_within_2s(gap_s: float, workspace: Path, tmp_path: Path) -> None:
    """Two Ctrl-C within 2 s at any gap: exit 130 (never killed by the signal on the way out),
    no child left, the run ended in the log with exactly one done (forced or clean)."""
    interrupt_mid_run("native", workspace, tmp_path, signals=2, gap_s=gap_s)


STUBBORN = "trap '' INT TERM; touch started; sleep 60"
"""A bash tool command that ignores SIGINT and SIGTERM: aborting the run has to escalate to
SIGKILL after the tool's graces (about 2 s), so a second Ctrl-C lands while the run still goes."""


def pgid_members(pgids: set[int]) -> list[int]:
    """Live processes whose process group is one of ``pgids``."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] != "Z" and int(fields[2]) in pgids:
                    found.append(int(entry.name))
    return found


def wait_for(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_native_second_sigint_forces_while_the_abort_runs(workspace: Path, tmp_path: Path) -> None:
    """The forced path, deterministically: the run is still aborting (its bash tool ignores
    SIGINT and SIGTERM) when the second Ctrl-C arrives → "forced exit", 130, the tool's whole
    process group gone, the run not left ``running`` in the log and ending in one done."""
    script = tmp_path / "stubborn.json"
    tool = {"name": "bash", "input": {"command": STUBBORN}}
    turns = [{"text": "running it", "tool_calls": [tool]}, {"text": "never reached"}]
    script.write_text(json.dumps({"conversations": [{"name": "stubborn", "turns": turns}]}))
    env = cli_env(tmp_path) | {"RINGLEADER_NATIVE_PERMISSION": "allow"}
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "native",
             "--model-server", str(script), "--json", "run the stubborn command"],
            cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if '"kind":"tool-call"' in line.replace(" ", ""):
                break
        wait_for((workspace / "started").exists, "the bash tool to start")
        children = children_of(process.pid)
        assert children, "the bash tool runs as a child of the CLI"
        pgids = {process.pid} | {os.getpgid(pid) for pid in children if alive(pid)}
        process.send_signal(signal.SIGINT)
        wait_for(lambda: "aborting the run" in stderr_path.read_text(), "the first Ctrl-C")
        process.send_signal(signal.SIGINT)  # well within 2 s, while the abort escalates
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    err = stderr_path.read_text()
    assert process.returncode == 130, err
    assert "forced exit" in err
    assert not [pid for pid in children if alive(pid)]
    assert pgid_members(pgids) == []  # nothing of the CLI's or the tool's process groups
    # forced: the run did not finish its abort
    assert ended_once_in_log(tmp_path / "state") == "interrupted"


def test_retries_are_visible(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "flaky.json"
    script.write_text(
        json.dumps(
            {
                "conversations": [
                    {
                        "name": "flaky",
                        "turns": [
                            {
                                "fault": {"kind": "server_error", "times": 3},
                                "text": "third time lucky",
                            }
                        ],
                    }
                ]
            }
        )
    )
    result = ringleader(
        "run", "--runtime", "native", "--model-server", str(script), "hi",
        cwd=workspace, env=cli_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "ringleader: attempt 2/4: model_overloaded: HTTP 500" in result.stderr
    assert "attempt 3/4" not in result.stderr
    assert "third time lucky" in result.stdout


@pytest.mark.parametrize("runtime", ["native", "claude-code", "codex"])
def test_connection_refused_on_loopback_fails_fast_naming_the_url(
    runtime: str, workspace: Path, tmp_path: Path
) -> None:
    """Every runtime alike (the check is the runner's, not an adapter's): a base URL on loopback
    where nothing listens fails the run at once — no retry, no runtime's own reconnect loop
    (Codex spends minutes in one) — and the error names the URL."""
    installed(runtime)
    prefix = "RINGLEADER_" + runtime.upper().replace("-", "_")
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = cli_env(tmp_path) | {
        f"{prefix}_BASE_URL": url,
        f"{prefix}_API_KEY_ENV": "F12_PLACEHOLDER_KEY",
        "F12_PLACEHOLDER_KEY": "placeholder",
    }
    started = time.monotonic()
    result = ringleader(
        "run", "--runtime", runtime, "--json", "hi", cwd=workspace, env=env, timeout=60
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < 30  # the CLI's start-up, not a retry schedule
    assert "attempt 2/" not in result.stderr
    events = events_of(result.stdout)
    assert [e.kind for e in events] == ["error", "done"]
    error = events[0]
    assert isinstance(error, ErrorEvent)
    assert f"cannot reach {url}: connection refused" in error.message  # the error names the URL
    (run,) = runs_in_log(tmp_path / "state")
    assert run.status == "error"
