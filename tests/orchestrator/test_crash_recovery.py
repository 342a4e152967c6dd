"""Kill the orchestrator with SIGKILL mid-run; the event log is intact and gapless and the
session is resumable from its recorded origin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import trio

from adapters import ScriptedAdapter
from orchestrator.engine.eventlog import EventLog

ORCHESTRATOR = textwrap.dedent(
    """
    import sys, trio
    from adapters import ScriptedAdapter
    from orchestrator.core import RuntimeRegistry
    from orchestrator.engine import Runner, TaskSpec
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.feed import RecordingSink

    class Announce:
        seen = 0
        async def deliver(self, run_key, events):
            Announce.seen += len(events)
            if Announce.seen >= 20:
                print("mid-run", flush=True)

    script = [{"type": "init", "sessionId": "native-session-42", "model": "m"}]
    script += [{"type": "text", "text": f"chunk-{i} "} for i in range(10_000)]
    async def main():
        registry = RuntimeRegistry()
        registry.register_factory("scripted", lambda: ScriptedAdapter(script))
        async with EventLog.open(sys.argv[1]) as log:
            runner = Runner(registry, sink=RecordingSink(log, extra=[Announce()]), state_dir=sys.argv[2], event_log=log)
            await runner.run_task("scripted", TaskSpec(task_id="crash", title="long task", cwd=sys.argv[3]))
            print("finished", flush=True)

    trio.run(main)
    """
)


def test_sigkill_mid_run_leaves_a_gapless_log_and_a_resumable_session(tmp_path: Path) -> None:
    db, state, origin = tmp_path / "events.db", tmp_path / "state", tmp_path / "repo"
    origin.mkdir()
    with subprocess.Popen(
        [sys.executable, "-c", ORCHESTRATOR, str(db), str(state), str(origin)],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "mid-run"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    async def after_restart() -> None:
        async with EventLog.open(db) as log:
            (run,) = await log.runs()
            # its owner died: reopening the log marked it interrupted and closed its stream
            assert run.status == "interrupted"
            events = await log.read(run.run_key)
            assert len(events) >= 20
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            assert events[0].kind == "status"
            assert [e.kind for e in events[-2:]] == ["error", "done"]
            assert [e.kind for e in events].count("done") == 1
            assert getattr(events[-2], "code", None) == "interrupted"
            session = await log.get_session(run.session_key)
            assert session is not None
            assert session.native_session_id == "native-session-42"
            assert session.origin_cwd == str(origin)
            assert session.codec_blob is not None
            # resumable: the adapter's codec restores a handle bound to the native session
            restored = await ScriptedAdapter().session_codec.restore(session.codec_blob)
            assert restored.run_id == "native-session-42"
            assert json.loads(session.codec_blob)["sessionKey"] == run.session_key

    trio.run(after_restart)
