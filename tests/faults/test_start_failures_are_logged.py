"""Item 6 (the runner's half): a run that cannot start — binary missing, argv over the kernel's
per-argument limit — is a logged run ending in ``error`` + ``done{error}`` with its runs row,
not an exception out of ``run_task`` with nothing in the log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from orchestrator.core import RuntimeRegistry, StartOpts
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import RecordingSink

from .pipe_runtime import ArgvFor, PipeRuntime


def _missing(_opts: StartOpts) -> list[str]:
    return ["/nonexistent/bin/agent-cli", "-p", "hi"]


def _too_long(_opts: StartOpts) -> list[str]:
    # one argument over MAX_ARG_STRLEN (128 KiB): execve fails with E2BIG
    return [sys.executable, "-c", "pass", "x" * (200 * 1024)]


CASES: dict[str, tuple[ArgvFor, str]] = {
    "missing-binary": (_missing, "runtime_not_found"),
    "argv-too-long": (_too_long, "runtime_start_failed"),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_start_failure_is_a_logged_run_ending_in_error(tmp_path: Path, case: str) -> None:
    argv_for, code = CASES[case]
    registry = RuntimeRegistry()
    registry.register_factory("pipe", lambda: PipeRuntime(argv_for))
    async with EventLog.open(tmp_path / "events.db") as log:
        runner = Runner(
            registry, sink=RecordingSink(log), state_dir=tmp_path / "state", event_log=log
        )
        outcome = await runner.run_task("pipe", TaskSpec(task_id="t", title="start me"))
        assert outcome.status == "error"
        assert outcome.error_code == code
        (run,) = await log.runs()
        assert run.status == "error"
        assert run.outcome is not None and run.outcome["errorCode"] == code
        events = await log.read(run.run_key)
        assert [e.kind for e in events] == ["error", "done"]
        assert [e.seq for e in events] == [1, 2]
        error, done = events
        assert error.kind == "error" and error.fatal and error.code == code
        assert done.kind == "done" and done.reason == "error"
