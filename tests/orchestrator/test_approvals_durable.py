"""Durable approvals across processes: a native run waits for a person, its process dies, and
``ringleader approve`` from another process resumes the run from its session to the end; the
CLI's listing and mistakes; the book's own rules."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest
import trio

from orchestrator.acp.server import event_to_update
from orchestrator.core.approvals import ApprovalBook, ApprovalRequest, RunInfo, approve, reject
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import ApprovalCall, EventFactory, Status
from orchestrator.core.redact import redact_event
from orchestrator.engine.eventlog import EventLog

DEADLINE_S = 60.0

SCRIPT: dict[str, Any] = {
    "conversations": [
        {
            "name": "durable",
            "turns": [
                {
                    "text": "Running it. ",
                    "tool_calls": [
                        {"name": "bash", "input": {"command": "echo resumed > out.txt"}}
                    ],
                },
                {"text": "All done after the approval."},
            ],
        }
    ]
}


def _readline(stream: IO[str], deadline: float) -> str:
    """One line from a child's pipe, or a failure once ``deadline`` (monotonic) passes."""
    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        if not sel.select(max(0.0, deadline - time.monotonic())):
            raise AssertionError("the child wrote no line before the deadline")
    return stream.readline()


def _ringleader(*args: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator.cli", *args]


@pytest.fixture
def model_server(tmp_path: Path) -> Any:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    proc = subprocess.Popen(
        _ringleader("model-server", "--script", str(script), "--port", "0"),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = _readline(proc.stdout, time.monotonic() + DEADLINE_S).strip()
        assert url.startswith("http://127.0.0.1:")
        yield url
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_durable_approval_survives_its_process_exit(tmp_path: Path, model_server: str) -> None:
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "RINGLEADER_STATE_DIR": str(state),
        "ANTHROPIC_BASE_URL": model_server,
        "ANTHROPIC_API_KEY": "test-key-not-secret",
        "NO_COLOR": "1",
    }
    deadline = time.monotonic() + DEADLINE_S
    run = subprocess.Popen(
        _ringleader(
            "run",
            "--runtime",
            "native",
            "--model",
            "anthropic:claude-test",
            "--approvals",
            "wait",
            "--json",
            "tidy up the workspace",
        ),
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert run.stdout is not None
        waiting: dict[str, Any] | None = None
        while waiting is None:
            line = _readline(run.stdout, deadline)
            assert line, "the run ended before it waited for an approval"
            event = json.loads(line)
            if event.get("kind") == "status" and event.get("phase") == "waiting_approval":
                waiting = event
        # the run waits: its process ends (killed: nothing can clean up)
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=10)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=10)
        if run.stdout is not None:
            run.stdout.close()
    call = waiting["approval"]
    assert call["name"] == "bash" and call["input"]["command"] == "echo resumed > out.txt"
    assert not (work / "out.txt").exists()

    listed = subprocess.run(
        _ringleader("approvals", "--json"), env=env, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    [pending] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert pending["id"] == call["id"] and pending["waiting"] is False
    assert pending["callId"] == call["toolCallId"]

    approved = subprocess.run(
        _ringleader("approve", call["id"], "--allow", "--json"),
        cwd=tmp_path,  # anywhere: the run resumes in its own working directory
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert approved.returncode == 0, approved.stderr
    assert "resuming" in approved.stderr
    assert (work / "out.txt").read_text() == "resumed\n"
    lines = approved.stdout.splitlines()
    assert lines[0] == f"ringleader: {call['id']} approved (bash)"
    events = [json.loads(line) for line in lines[1:]]
    [result] = [e for e in events if e["kind"] == "tool-result"]
    assert result["toolCallId"] == call["toolCallId"] and not result["isError"]
    assert events[-1]["kind"] == "done" and events[-1]["reason"] == "success"
    texts = "".join(e["text"] for e in events if e["kind"] == "text-delta")
    assert "All done after the approval." in texts

    async def logged() -> None:
        async with EventLog.open(state / "events.db") as log:
            rows = {r.status: r for r in await log.runs()}
            assert set(rows) == {"interrupted", "success"}
            assert rows["success"].outcome is not None
            assert rows["success"].outcome["resumedFrom"] == rows["interrupted"].run_key
        assert await ApprovalBook.in_state_dir(state).pending() == []

    trio.run(logged)

    again = subprocess.run(
        _ringleader("approve", call["id"], "--deny"), env=env, capture_output=True, text=True
    )
    assert again.returncode == 2 and "is not pending (it is approved)" in again.stderr


def test_approve_refuses_what_it_cannot_decide(tmp_path: Path) -> None:
    env = {**os.environ, "RINGLEADER_STATE_DIR": str(tmp_path / "state")}
    cases = [
        (("approve", "ap-nope", "--allow"), "no approval 'ap-nope'"),
        (("approve", "ap-x", "--allow", "--message", "m"), "--message goes with --deny"),
        (("approve", "ap-x", "--deny", "--edit", "{}"), "--edit goes with --allow"),
        (("approve", "ap-x", "--allow", "--edit", "[1]"), "must be a JSON object"),
    ]
    for args, said in cases:
        done = subprocess.run(_ringleader(*args), env=env, capture_output=True, text=True)
        assert done.returncode == 2 and said in done.stderr, (args, done.stderr)
    listed = subprocess.run(_ringleader("approvals"), env=env, capture_output=True, text=True)
    assert listed.returncode == 0 and "no pending approvals" in listed.stdout


def test_approve_edit_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {**os.environ, "RINGLEADER_STATE_DIR": str(state)}
    deep = '{"a":' * 5000 + "1" + "}" * 5000  # 30 KB: well within one argument's limit
    done = subprocess.run(
        _ringleader("approve", "ap-x", "--allow", "--edit", deep),
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == "ringleader: --edit: not JSON (nested too deeply)\n"
    assert not list(state.glob("crash-*.txt"))  # no internal error behind it


# -- the book ------------------------------------------------------------------------------------


async def test_a_waiting_run_takes_a_decision_made_through_another_book(tmp_path: Path) -> None:
    path = tmp_path / "approvals.db"
    waiter, person = ApprovalBook(path, poll_s=0.01), ApprovalBook(path)
    request = ApprovalRequest("bash", {"command": "ls"}, "call-1", "session-1")
    got: list[Any] = []

    async def wait() -> None:
        got.append(await waiter.wait(request, RunInfo("native", "cli", "runtime:native:t")))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        entries: list[Any] = []
        with trio.fail_after(30):
            while not entries:
                await trio.sleep(0.01)
                entries = await person.pending()
        [entry] = entries
        assert (entry.id, entry.tool, entry.input) == (request.id, "bash", {"command": "ls"})
        assert entry.owner is not None and entry.owner.alive()
        await person.decide(entry.id, reject("use a branch"))
    assert got[0].approved is False and got[0].rejection_text() == "use a branch"
    decided = await person.get(request.id)
    assert decided is not None and decided.status == "rejected"
    # a resumed run asking again for the same call is answered from the record
    assert (await waiter.wait(request)).approved is False
    with pytest.raises(ConfigError, match="not pending"):
        await person.decide(request.id, approve())


async def test_an_abort_while_waiting_cancels_the_entry(tmp_path: Path) -> None:
    book = ApprovalBook(tmp_path / "approvals.db", poll_s=0.01)
    request = ApprovalRequest("bash", {"command": "ls"}, "call-1", "session-1")
    # the abort comes once the call waits in the book (its worker threads made the file and
    # wrote the entry), not after a fixed time: on a loaded machine that took longer than 0.2 s
    # and the wait was cancelled before there was anything to cancel
    async with trio.open_nursery() as nursery:
        nursery.start_soon(book.wait, request)
        entries: list[Any] = []
        with trio.fail_after(30):  # real time: only if the entry is never written
            while not entries:
                await trio.sleep(0.01)
                entries = await book.pending()
        nursery.cancel_scope.cancel()
    entry = await book.get(request.id)
    assert entry is not None and entry.status == "cancelled"
    assert await book.pending() == []
    assert oct((tmp_path / "approvals.db").stat().st_mode & 0o777) == "0o600"


async def test_secrets_in_a_waiting_call_are_redacted_in_the_book_and_the_event(
    tmp_path: Path,
) -> None:
    secret = "sk-" + "a1B2c3D4e5F6g7H8"
    book = ApprovalBook(tmp_path / "approvals.db")
    request = ApprovalRequest("bash", {"command": f"curl -H 'x: {secret}' x"}, "c1", "s1")
    entry = await book.record(request)
    assert secret not in json.dumps(entry.input) and "[REDACTED]" in entry.input["command"]
    call = ApprovalCall(id=request.id, tool_call_id="c1", name="bash", input=request.tool_input)
    status = redact_event(EventFactory(run_id="r").waiting_approval(call))
    assert isinstance(status, Status) and status.approval is not None
    assert secret not in status.model_dump_json() and status.approval.id == request.id


def test_acp_shows_a_waiting_call_as_pending_with_the_command_that_decides_it() -> None:
    call = ApprovalCall(id="ap-123", tool_call_id="toolu_1", name="bash", input={"command": "ls"})
    update = event_to_update(EventFactory(run_id="r").waiting_approval(call), None)
    assert update is not None
    assert (update["sessionUpdate"], update["toolCallId"], update["status"]) == (
        "tool_call_update",
        "toolu_1",
        "pending",
    )
    assert "ringleader approve ap-123 --allow" in update["content"][0]["content"]["text"]
    assert event_to_update(EventFactory(run_id="r").status("running"), None) is None


def test_a_failed_resume_does_not_use_up_the_decision(tmp_path: Path, model_server: str) -> None:
    """Issue 34 item 6: ``approve`` whose resume fails (the model is gone) can be given again;
    ``approve --model-server SCRIPT`` resumes against the scripted model server."""
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "RINGLEADER_STATE_DIR": str(state),
        "ANTHROPIC_BASE_URL": model_server,
        "ANTHROPIC_API_KEY": "test-key-not-secret",
        "NO_COLOR": "1",
    }
    deadline = time.monotonic() + DEADLINE_S
    args = ["run", "--runtime", "native", "--model", "anthropic:claude-test"]
    run = subprocess.Popen(
        _ringleader(*args, "--approvals", "wait", "--json", "tidy up the workspace"),
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert run.stdout is not None
        waiting: dict[str, Any] | None = None
        while waiting is None:
            line = _readline(run.stdout, deadline)
            assert line, "the run ended before it waited for an approval"
            event = json.loads(line)
            if event.get("kind") == "status" and event.get("phase") == "waiting_approval":
                waiting = event
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=10)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=10)
        if run.stdout is not None:
            run.stdout.close()
    approval = waiting["approval"]["id"]
    # the model is gone (nothing listens there): the resumed run fails
    gone = env | {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    failed = subprocess.run(
        _ringleader("approve", approval, "--allow"),
        env=gone,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert failed.returncode == 1, failed.stderr
    # the same decision again, against the scripted model server: the run resumes and ends
    rest = tmp_path / "rest.json"
    rest.write_text(
        json.dumps({"conversations": [{"name": "rest", "turns": [{"text": "Done now."}]}]})
    )
    again = subprocess.run(
        _ringleader("approve", approval, "--allow", "--model-server", str(rest), "--json"),
        env=gone,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert again.returncode == 0, again.stderr + again.stdout
    assert "resuming again" in again.stdout
    assert (work / "out.txt").read_text() == "resumed\n"
    # once a resume went through, the decision is used up
    third = subprocess.run(
        _ringleader("approve", approval, "--allow"), env=gone, capture_output=True, text=True
    )
    assert third.returncode == 2 and "is not pending (it is approved)" in third.stderr
