"""Item 1: SIGKILL of the orchestrator mid-tool leaves no process of the run behind.

The fake runtime (a real child on real pipes) starts a "tool" grandchild in a session of its own
— as Claude Code does with its Bash tool, so killing the child's process group would miss it —
then the orchestrator process is SIGKILLed. The direct child dies with it (parent-death signal);
the next start reaps the rest from the on-disk process registry: within 2 s of the restart no
process of that run is alive, and the run is ``interrupted`` with a resumable session."""

from __future__ import annotations

import contextlib
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

from .children import killed_on_the_way_out

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
    # the tool leaves the session; in mode "scrub" it also drops its environment
    # (and with it the mark), so neither the group kill nor the mark scan can find it
    tool = subprocess.Popen(
        [sys.executable, "-c", "import time\\nwhile True: time.sleep(1)", "tool-" + sys.argv[1]],
        start_new_session=True,
        env={} if sys.argv[2] == "scrub" else None,
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


def _orchestrator(
    tmp_path: Path, mode: str
) -> contextlib.AbstractContextManager[subprocess.Popen[str]]:
    return killed_on_the_way_out(
        subprocess.Popen(
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
    )


def _host_pids(tmp_path: Path) -> tuple[int, int]:
    """The fake runtime's and its tool's pids as this process sees them (in a PID namespace of
    their own, the pids they write are the namespace's): found by their command lines. Looked
    for again for a few seconds: a scan of /proc while other tests start and end processes
    missed the tool once (under xdist, at a load of 5)."""
    deadline = time.monotonic() + 10
    while True:
        child, tool = _scan(tmp_path)
        if (child and tool) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert child and tool, "the fake runtime or its tool is not running"
    return child, tool


def _scan(tmp_path: Path) -> tuple[int, int]:
    tool_mark = f"tool-{tmp_path / 'pids'}".encode()
    child = tool = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if tool_mark in argv:
            tool = int(entry.name)
        elif argv[1:3] == [b"-c", FAKE_RUNTIME.encode()] and str(tmp_path).encode() in argv[3]:
            child = int(entry.name)
    return child, tool


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
        child_pid, tool_pid = _host_pids(tmp_path)
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


def test_sigkill_kills_a_tool_that_escaped_session_and_mark_at_once(tmp_path: Path) -> None:
    """A tool that left the runtime's session *and* dropped its environment (the mark) is out of
    reach of the group kill and the mark scan; the run's PID namespace still ends it the moment
    the orchestrator is SIGKILLed — no restart needed."""
    with _orchestrator(tmp_path, "scrub") as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "starting"
        assert proc.stdout.readline().strip() == "mid-tool"
        child_pid, tool_pid = _host_pids(tmp_path)
        tool = ProcessIdentity.of(tool_pid)
        assert tool.alive()
        assert b"RINGLEADER_PROC_MARK" not in Path(f"/proc/{tool_pid}/environ").read_bytes()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    try:
        assert _wait_gone([ProcessIdentity.of(child_pid), tool], within=2.0) == []
    finally:
        for pid in (child_pid, tool_pid):
            if ProcessIdentity.of(pid).alive():
                os.kill(pid, signal.SIGKILL)
