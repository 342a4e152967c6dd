"""Item 1: SIGKILL of the orchestrator mid-tool leaves no process of the run behind.

The fake runtime (a real child on real pipes) starts a "tool" grandchild in a session of its own
— as Claude Code does with its Bash tool, so killing the child's process group would miss it —
then the orchestrator process is SIGKILLed. The direct child dies with it (parent-death signal);
the next start reaps the rest from the on-disk process registry: within 2 s of the restart no
process of that run is alive, and the run is ``interrupted`` with a resumable session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import trio

from adapters import ScriptedAdapter
from orchestrator.core.lifetime import ProcessIdentity
from orchestrator.engine.eventlog import EventLog

REPO = Path(__file__).resolve().parents[2]

FAKE_RUNTIME = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    def out(**frame):
        print(json.dumps(frame), flush=True)
    out(type="init", sessionId="native-" + sys.argv[2], model="m")
    if sys.argv[2] == "again":
        out(type="result", ok=True, summary="done")
        sys.exit(0)
    tool = subprocess.Popen(
        [sys.executable, "-c", "import time\\nwhile True: time.sleep(1)"], start_new_session=True
    )
    with open(sys.argv[1], "w") as f:
        f.write(f"{os.getpid()} {tool.pid}\\n")
    out(type="tool-call", id="t1", name="bash", input={"command": "sleep forever"})
    time.sleep(3600)
    """
)

ORCHESTRATOR = textwrap.dedent(
    """
    import sys, trio
    from orchestrator.core import RuntimeRegistry
    from orchestrator.engine import Runner, TaskSpec
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.feed import RecordingSink
    from tests.faults.pipe_runtime import PipeRuntime, python_argv

    db, state, pids, mode, fake = sys.argv[1:6]

    class Announce:
        async def deliver(self, run_key, events):
            if any(e.kind == "tool-call" for e in events):
                print("mid-tool", flush=True)

    async def main():
        registry = RuntimeRegistry()
        registry.register_factory(
            "pipe", lambda: PipeRuntime(lambda opts: python_argv(fake, pids, mode))
        )
        async with EventLog.open(db) as log:
            sink = RecordingSink(log, extra=[Announce()])
            runner = Runner(registry, sink=sink, state_dir=state, event_log=log)
            print("starting", flush=True)
            outcome = await runner.run_task("pipe", TaskSpec(task_id="tree", title="tool"))
            print(outcome.status, flush=True)

    trio.run(main)
    """
)


def _orchestrator(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            ORCHESTRATOR,
            str(tmp_path / "events.db"),
            str(tmp_path / "state"),
            str(tmp_path / "pids"),
            mode,
            FAKE_RUNTIME,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _wait_gone(procs: list[ProcessIdentity], within: float) -> list[int]:
    deadline = time.monotonic() + within
    while True:
        alive = [p.pid for p in procs if p.alive()]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


def test_sigkill_mid_tool_then_restart_leaves_no_process_of_the_run(tmp_path: Path) -> None:
    with _orchestrator(tmp_path, "crash") as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "starting"
        assert proc.stdout.readline().strip() == "mid-tool"
        child_pid, tool_pid = map(int, (tmp_path / "pids").read_text().split())
        child, tool = ProcessIdentity.of(child_pid), ProcessIdentity.of(tool_pid)
        assert child.alive() and tool.alive()
        assert os.getsid(tool_pid) != os.getsid(child_pid)  # the tool left the child's session
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    try:
        # the direct child dies with the orchestrator (parent-death signal), before any restart
        assert _wait_gone([child], within=2.0) == []
        with _orchestrator(tmp_path, "again") as again:
            assert again.stdout is not None
            assert again.stdout.readline().strip() == "starting"  # imports done, task starts
            # the restart reaps the escaped tool from the registry within 2 s
            assert _wait_gone([tool], within=2.0) == []
            out, _ = again.communicate(timeout=60)
        assert out.strip().splitlines()[-1] == "success"
    finally:
        for pid in (child_pid, tool_pid):
            if ProcessIdentity.of(pid).alive():
                os.kill(pid, signal.SIGKILL)
    assert not list((tmp_path / "state" / "procs").glob("*.json"))  # registry cleaned up

    async def after() -> None:
        async with EventLog.open(tmp_path / "events.db") as log:
            crashed, rerun = await log.runs()
            assert (crashed.status, rerun.status) == ("interrupted", "success")
            session = await log.get_session(crashed.run_key)
            assert session is not None and session.native_session_id == "native-crash"
            assert session.codec_blob is not None
            restored = await ScriptedAdapter().session_codec.restore(session.codec_blob)
            assert restored.run_id == "native-crash"

    trio.run(after)
