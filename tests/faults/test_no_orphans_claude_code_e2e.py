"""Item 1 against the real Claude Code 2.1.330 (``-m e2e``): SIGKILL the orchestrator while
Claude Code's Bash tool runs (Claude Code starts it in a session of its own); after a restart no
process of that run is alive within 2 s, and the run is ``interrupted`` with its Claude Code
session recorded for resume."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import trio

from adapters._runtimes import install_hint, runtime_binary
from orchestrator.core.errors import RuntimeNotFoundError
from orchestrator.core.lifetime import ProcessIdentity, marked_pids
from orchestrator.engine.eventlog import EventLog

from .children import killed_on_the_way_out

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

ORCHESTRATOR = textwrap.dedent(
    """
    import sys, trio
    from pathlib import Path
    from adapters.claude_code import ClaudeCodeAdapter, ClaudeCodeConfig
    from orchestrator.model_server import serve_model_server
    from orchestrator.core import RuntimeRegistry
    from orchestrator.engine import Runner, TaskSpec
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.feed import RecordingSink

    db, state, ws, marker = sys.argv[1:5]
    MODEL = "claude-sonnet-4-6"
    bash = {"name": "Bash", "input": {"command": "tail -f /dev/null", "description": "wait"}}
    SCRIPT = {"model": MODEL, "conversations": [
        {"name": "tree", "marker": "[[e2e:tree]]", "turns": [{"tool_calls": [bash]}, {"text": "x"}]},
        {"name": "again", "marker": "[[e2e:again]]", "turns": [{"text": "AGAIN"}]},
    ]}

    class Announce:
        async def deliver(self, run_key, events):
            if any(e.kind == "tool-call" for e in events):
                print("mid-tool", flush=True)

    async def main():
        async with serve_model_server(SCRIPT) as server:
            config = ClaudeCodeConfig(
                model=MODEL, base_url=server.url, api_key="sk-ant-e2e-faults-000000",
                state_root=Path(state) / "claude", allowed_tools=("Bash",),
            )
            registry = RuntimeRegistry()
            registry.register_factory("claude-code", lambda: ClaudeCodeAdapter(config))
            async with EventLog.open(db) as log:
                sink = RecordingSink(log, extra=[Announce()])
                runner = Runner(registry, sink=sink, state_dir=state, event_log=log)
                print("starting", flush=True)
                task = TaskSpec(task_id="tree", title=f"[[e2e:{marker}]] go", cwd=ws)
                outcome = await runner.run_task("claude-code", task)
                print(outcome.status, flush=True)

    trio.run(main)
    """
)


@pytest.fixture(scope="module")
def claude_binary() -> Path:
    try:
        return runtime_binary("claude-code")
    except RuntimeNotFoundError as exc:
        pytest.fail(f"Claude Code is not installed: {install_hint('claude-code')} ({exc})")


def _orchestrator(
    tmp_path: Path, marker: str
) -> contextlib.AbstractContextManager[subprocess.Popen[str]]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return killed_on_the_way_out(
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                ORCHESTRATOR,
                str(tmp_path / "events.db"),
                str(tmp_path / "state"),
                str(ws),
                marker,
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    )


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _tree(tmp_path: Path) -> tuple[str, list[ProcessIdentity]]:
    """The run's mark (from the process registry) and its live processes, once the tool runs."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for entry in (tmp_path / "state" / "procs").glob("*.json"):
            mark = json.loads(entry.read_text())["mark"]
            pids = marked_pids(mark)
            if any("tail -f /dev/null" in _cmdline(p) for p in pids):
                return mark, [ProcessIdentity.of(p) for p in pids]
        time.sleep(0.05)
    raise AssertionError("Claude Code's Bash tool never started")


def test_sigkill_mid_bash_tool_then_restart_leaves_no_claude_process(
    claude_binary: Path, tmp_path: Path
) -> None:
    with _orchestrator(tmp_path, "tree") as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "starting"
        assert proc.stdout.readline().strip() == "mid-tool"
        mark, tree = _tree(tmp_path)
        sids = {os.getsid(p.pid) for p in tree if p.alive()}
        assert len(sids) > 1  # the Bash tool is in a session of its own
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    try:
        with _orchestrator(tmp_path, "again") as again:
            assert again.stdout is not None
            assert again.stdout.readline().strip() == "starting"
            deadline = time.monotonic() + 2.0
            while (alive := [p.pid for p in tree if p.alive()]) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert alive == []
            assert marked_pids(mark) == []
            out, _ = again.communicate(timeout=120)
        assert out.strip().splitlines()[-1] == "success"
    finally:
        for p in tree:
            if p.alive():
                os.kill(p.pid, signal.SIGKILL)

    async def after() -> None:
        async with EventLog.open(tmp_path / "events.db") as log:
            crashed, rerun = await log.runs()
            assert (crashed.status, rerun.status) == ("interrupted", "success")
            session = await log.get_session(crashed.run_key)
            assert session is not None and session.native_session_id  # Claude Code's session id
            assert session.origin_cwd == str(tmp_path / "ws")

    trio.run(after)
