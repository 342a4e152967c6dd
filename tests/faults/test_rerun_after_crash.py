"""Item 5: re-running a crashed task. The crashed attempt is marked ``interrupted`` (its owner
process is dead), nothing it recorded is overwritten, and the re-run gets its own run key instead
of dying on ``UNIQUE constraint failed: events.run_key, events.seq``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import trio

from adapters import ScriptedAdapter
from orchestrator.core import RuntimeRegistry
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import RecordingSink
from orchestrator.engine.hosts import LocalHost
from orchestrator.engine.runner import Runner

from .children import killed_on_the_way_out

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
            if Announce.seen >= 20 and sys.argv[4] == "crash":
                print("mid-run", flush=True)
                await trio.sleep_forever()

    session = "native-" + sys.argv[4]
    script = [{"type": "init", "sessionId": session, "model": "m"}]
    script += [{"type": "text", "text": f"chunk-{i} "} for i in range(1000)]  # > one batch (256)
    script += [{"type": "result", "ok": True, "summary": "all done"}]

    async def main():
        registry = RuntimeRegistry()
        registry.register_factory("scripted", lambda: ScriptedAdapter(script))
        async with EventLog.open(sys.argv[1]) as log:
            sink = RecordingSink(log, extra=[Announce()])
            runner = Runner(registry, sink=sink, state_dir=sys.argv[2], event_log=log)
            task = TaskSpec(task_id="same-task", title="long task", cwd=sys.argv[3])
            outcome = await runner.run_task("scripted", task)
            print(outcome.status, flush=True)

    trio.run(main)
    """
)


def _orchestrator(
    tmp_path: Path, mode: str
) -> contextlib.AbstractContextManager[subprocess.Popen[str]]:
    db, state, origin = tmp_path / "events.db", tmp_path / "state", tmp_path / "repo"
    origin.mkdir(exist_ok=True)
    return killed_on_the_way_out(
        subprocess.Popen(
            [sys.executable, "-c", ORCHESTRATOR, str(db), str(state), str(origin), mode],
            stdout=subprocess.PIPE,
            text=True,
        )
    )


def test_rerunning_a_crashed_task_records_a_new_run_and_keeps_the_old_one(tmp_path: Path) -> None:
    with _orchestrator(tmp_path, "crash") as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "mid-run"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    async def crashed_state() -> tuple[str, int]:
        async with EventLog.open(tmp_path / "events.db") as log:
            (run,) = await log.runs()
            assert run.status == "interrupted"
            session = await log.get_session(run.run_key)
            assert session is not None and session.native_session_id == "native-crash"
            return run.run_key, len(await log.read(run.run_key))

    crashed_key, crashed_events = trio.run(crashed_state)

    # the same task again, in a new process: it must not crash on the log's unique key
    with _orchestrator(tmp_path, "again") as proc:
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert out.strip().splitlines()[-1] == "success"

    async def after() -> None:
        async with EventLog.open(tmp_path / "events.db") as log:
            first, second = await log.runs()
            assert first.run_key == crashed_key
            assert (first.status, second.status) == ("interrupted", "success")
            assert first.session_key == second.session_key  # the same task's session…
            assert first.run_key != second.run_key  # …but each attempt has its own run key
            # nothing the crashed attempt recorded was overwritten
            assert len(await log.read(crashed_key)) == crashed_events
            old = await log.get_session(crashed_key)
            assert old is not None and old.native_session_id == "native-crash"
            new = await log.get_session(second.run_key)
            assert new is not None and new.native_session_id == "native-again"
            latest = await log.get_session(second.session_key)
            assert latest is not None and latest.run_key == second.run_key
            done = (await log.read(second.run_key))[-1]
            assert done.kind == "done"

    trio.run(after)


async def test_a_run_owned_by_a_live_process_is_not_interrupted(tmp_path: Path) -> None:
    async with EventLog.open(tmp_path / "events.db") as log:
        await log.start_run("r1", runtime_id="x", session_key="s")
        # a second handle on the same log (another process would look the same): owner is alive
        async with EventLog.open(tmp_path / "events.db") as other:
            (run,) = await other.runs()
            assert run.status == "running"


def _crash(tmp_path: Path) -> str:
    """An orchestrator killed mid-run: the key of the run it left behind (``interrupted``)."""
    with _orchestrator(tmp_path, "crash") as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "mid-run"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    async def key() -> str:
        async with EventLog.open(tmp_path / "events.db") as log:
            (run,) = await log.runs()
            assert run.status == "interrupted"
            return run.run_key

    return trio.run(key)


def test_local_host_recovers_the_interrupted_task_from_its_session(tmp_path: Path) -> None:
    crashed = _crash(tmp_path)
    resumed_script = [
        {"type": "text", "text": "picking up where I stopped"},
        {"type": "result", "ok": True, "summary": "recovered"},
    ]

    async def recover() -> None:
        registry = RuntimeRegistry()
        registry.register_factory("scripted", lambda: ScriptedAdapter(resumed_script))
        async with EventLog.open(tmp_path / "events.db") as log:
            runner = Runner(
                registry, sink=RecordingSink(log), state_dir=tmp_path / "state", event_log=log
            )
            async with LocalHost(runner) as host:
                refs = await host.recover()
                assert len(refs) == 1
                outcome = await refs[0].outcome()
            assert outcome.status == "success" and outcome.summary == "recovered"
            first, second = await log.runs()
            assert (first.run_key, first.status) == (crashed, "interrupted")
            assert second.outcome is not None and second.outcome["resumedFrom"] == crashed
            session = await log.get_session(second.run_key)
            assert session is not None and session.native_session_id == "native-crash"
            assert (await log.read(second.run_key))[-1].kind == "done"
            async with LocalHost(runner) as host:
                assert await host.recover() == []  # already resumed: left alone

    trio.run(recover)


def test_ringleader_recover_resumes_it_from_the_command_line(tmp_path: Path) -> None:
    crashed = _crash(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"RINGLEADER_STATE_DIR": str(tmp_path), "NO_COLOR": "1"}
    cli = [sys.executable, "-m", "orchestrator.cli", "recover"]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert f"recovering {crashed} on scripted" in done.stderr
    again = subprocess.run(cli, capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 0 and "nothing to recover" in again.stdout

    async def check() -> None:
        async with EventLog.open(tmp_path / "events.db") as log:
            first, second = await log.runs()
            assert first.run_key == crashed and second.status == "success"
            assert second.outcome is not None and second.outcome["resumedFrom"] == crashed

    trio.run(check)


def test_a_recovery_that_fails_can_be_tried_again(tmp_path: Path) -> None:
    """Issue 34 item 6: a resume that ends in error (its model unreachable, say) does not use
    up the recovery: the next ``recover`` finds the run again, and one that succeeds ends it."""
    crashed = _crash(tmp_path)
    failing: list[dict[str, Any]] = [
        {"type": "result", "ok": False, "errorMessage": "the model is unreachable"}
    ]
    working: list[dict[str, Any]] = [
        {"type": "text", "text": "back"},
        {"type": "result", "ok": True, "summary": "ok"},
    ]

    async def recover(script: list[dict[str, Any]]) -> list[str]:
        registry = RuntimeRegistry()
        registry.register_factory("scripted", lambda: ScriptedAdapter(script))
        async with EventLog.open(tmp_path / "events.db") as log:
            runner = Runner(
                registry, sink=RecordingSink(log), state_dir=tmp_path / "state", event_log=log
            )
            async with LocalHost(runner) as host:
                refs = await host.recover()
                return [(await ref.outcome()).status for ref in refs]

    assert trio.run(recover, failing) == ["error"]
    assert trio.run(recover, working) == ["success"]  # tried again
    assert trio.run(recover, working) == []  # that one went through: nothing left

    async def check() -> None:
        async with EventLog.open(tmp_path / "events.db") as log:
            rows = await log.runs()
            assert [r.status for r in rows] == ["interrupted", "error", "success"]
            assert all(r.outcome and r.outcome["resumedFrom"] == crashed for r in rows[1:])

    trio.run(check)
