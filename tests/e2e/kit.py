"""What the real-runtime e2e tests share: finding the installed CLI, the scripted conversations
every runtime is run through, running one turn to its ``done`` with the stream checks, small
readers of an event list, and ``ringleader`` run as a process of its own (its environment, one
command, a run left going in the background, a run killed while it waits in the book). The fixtures (``server`` from the test module's ``script()``,
``workspace``) are in ``conftest.py``."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Protocol

import pytest
import trio

from adapters._process import ChildProcess
from adapters._runtimes import install_hint, runtime_binary
from contract import check_stream, collect_run
from orchestrator.core.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle
from orchestrator.core.approvals import ApprovalBook, ApprovalEntry
from orchestrator.core.drift import missing_fields, unknown_frame_type
from orchestrator.core.errors import RuntimeNotFoundError
from orchestrator.core.events import (
    ApprovalCall,
    Done,
    RuntimeEvent,
    Status,
    TextDelta,
    event_to_json,
)
from orchestrator.core.queue import QueueEventStream
from orchestrator.core.refusals import Refusals


class ChildRuntime(RuntimeAdapter, Protocol):
    """A child-process adapter: it shows the child behind a run."""

    def child_for(self, run: RunHandle) -> ChildProcess | None: ...


def installed(runtime_id: str) -> Path:
    """The installed runtime's binary; the test FAILS (with the install command) without it."""
    try:
        return runtime_binary(runtime_id)
    except RuntimeNotFoundError as exc:
        pytest.fail(f"{runtime_id} is not installed: {install_hint(runtime_id)} ({exc})")


def conversations(*names: str) -> list[dict[str, Any]]:
    """The scripted conversations every runtime is run through, by name: ``e500`` and ``e429``
    (a fault on every try), ``resume`` (two turns), ``c1`` and ``c2`` (two concurrent runs)."""
    never = {"text": "never"}
    shared: dict[str, list[dict[str, Any]]] = {
        "e500": [{"fault": {"kind": "server_error", "times": 99}, **never}],
        "e429": [{"fault": {"kind": "rate_limit", "times": 99, "retry_after": 0}, **never}],
        "resume": [{"text": "FIRST"}, {"text": "SECOND after resume"}],
        "c1": [{"text": "ONE", "chunk_delay_s": 0.05}],
        "c2": [{"text": "TWO", "chunk_delay_s": 0.05}],
    }
    markers = {"e500": "500", "e429": "429"}
    return [
        {"name": n, "marker": f"[[e2e:{markers.get(n, n)}]]", "turns": shared[n]} for n in names
    ]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno != errno.ESRCH
    return True


def done(events: list[RuntimeEvent]) -> Done:
    last = events[-1]
    assert isinstance(last, Done)
    return last


def refused(events: list[RuntimeEvent]) -> str | None:
    """What the done line says of the run's refused tool calls (``None``: none was refused)."""
    fold = Refusals()
    for event in events:
        fold.apply(event)
    return fold.summary()


def text(events: list[RuntimeEvent], channel: str = "assistant") -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == channel)


async def start(
    adapter: RuntimeAdapter,
    message: str,
    cwd: Path | None,
    *,
    key: str | None = None,
    agent_id: str | None = None,
    **opts: Any,
) -> RunHandle:
    """Start one run (a fresh session key unless ``key``; the agent is the runtime unless
    ``agent_id``)."""
    return await adapter.start(
        TaskHandle(),
        StartOpts(
            agent_id=agent_id or adapter.id,
            session_key=key or f"e2e:{uuid.uuid4().hex[:8]}",
            message=message,
            cwd=str(cwd) if cwd else None,
            **opts,
        ),
    )


async def run_turn(
    adapter: ChildRuntime,
    message: str,
    cwd: Path | None,
    *,
    secret: str,
    deadline_s: float,
    key: str | None = None,
    **opts: Any,
) -> tuple[list[RuntimeEvent], RunHandle, int]:
    """One run to its ``done``: (events, handle, child pid). Checks the stream contracts, that
    every event carries the run's (bound) id, and that ``secret`` appears in no event."""
    run = await start(adapter, message, cwd, key=key, **opts)
    child = adapter.child_for(run)
    assert child is not None
    events = await collect_run(adapter.events(run), deadline_s=deadline_s)
    check_stream(events)
    assert run.run_id and all(e.run_id == run.run_id for e in events)
    assert secret not in "".join(event_to_json(e) for e in events)
    assert_no_drift(adapter.id, events)
    return events, run, child.pid


def assert_no_drift(runtime_id: str, events: list[RuntimeEvent]) -> None:
    """A pinned runtime sends only frame types its adapter knows, with the fields it expects
    (else: drift, see ``ringleader doctor``; teach the adapter's dialect the change)."""
    unknown = [
        name
        for e in events
        if isinstance(e, Status) and (name := unknown_frame_type(e.detail)) is not None
    ]
    assert not unknown, f"{runtime_id} sent frame types its adapter does not know: {unknown}"
    gaps = [
        gap
        for e in events
        if isinstance(e, Status) and (gap := missing_fields(e.detail)) is not None
    ]
    assert not gaps, f"{runtime_id} sent frames without fields its adapter expects: {gaps}"


async def read_until(
    stream: QueueEventStream, stop: Callable[[RuntimeEvent], bool], deadline_s: float
) -> list[RuntimeEvent]:
    """Events from ``stream`` up to and including the first one ``stop`` accepts."""
    seen: list[RuntimeEvent] = []
    with trio.fail_after(deadline_s):
        async for event in stream:
            seen.append(event)
            if stop(event):
                break
    return seen


def processes_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line contains ``marker``."""
    found: list[int] = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(pid))
    return found


async def drive(
    adapter: RuntimeAdapter,
    run: RunHandle,
    *,
    deadline_s: float,
    abort_on_text: bool = False,
    on_approval: Callable[[ApprovalCall], Awaitable[None]] | None = None,
) -> list[RuntimeEvent]:
    """``run``'s events to its ``done``: aborted at its first text (``abort_on_text``), each
    call it waits on in the book handed to ``on_approval`` as it comes."""
    events: list[RuntimeEvent] = []
    with trio.fail_after(deadline_s):
        async with adapter.events(run) as stream:
            async for event in stream:
                events.append(event)
                if abort_on_text and isinstance(event, TextDelta):
                    abort_on_text = False
                    await adapter.abort(run)
                if on_approval and isinstance(event, Status) and event.approval is not None:
                    await on_approval(event.approval)
    return events


RINGLEADER: Final = (sys.executable, "-m", "orchestrator.cli")
"""``ringleader`` as a process of its own."""


def cli_env(state: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``ringleader`` process on ``state``: this one without the test
    run's own ``RINGLEADER_*`` settings (but for where the runtimes are), and ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RINGLEADER_") or k == "RINGLEADER_RUNTIMES_DIR"
    }
    return env | {"RINGLEADER_STATE_DIR": str(state), **extra}


def served_config(
    folder: Path, runtime_id: str, base_url: str, *, key_env: str, model: str | None = None
) -> Path:
    """``FOLDER/ringleader.toml`` pointing ``runtime_id`` at a scripted model server: its URL,
    the variable holding its key (never the key), the model."""
    path = folder / "ringleader.toml"
    lines = [f"[runtimes.{runtime_id}]", f'base_url = "{base_url}"', f'api_key_env = "{key_env}"']
    path.write_text("\n".join([*lines, *([f'model = "{model}"'] if model else []), ""]))
    return path


def ringleader(
    *args: str, cwd: Path, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``ringleader ARGS`` to its end (its output as text)."""
    return subprocess.run(
        [*RINGLEADER, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
    )


@asynccontextmanager
async def background(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str]
) -> AsyncGenerator[subprocess.Popen[str]]:
    """``argv`` started (its output piped, as text) and killed on the way out if still going."""
    proc = await trio.to_thread.run_sync(
        lambda: subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def killed_while_waiting(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    state: Path,
    deadline_s: float,
    also: Callable[[], bool] | None = None,
) -> ApprovalEntry:
    """Start ``argv`` (a ``ringleader run --approvals wait``), wait until its call waits in the
    book on ``state`` (and ``also()`` holds), then SIGKILL it: nothing of the orchestrator runs
    any more. The entry."""
    proc = await trio.lowlevel.open_process(list(argv), cwd=cwd, env=env)
    book = ApprovalBook.in_state_dir(state)
    try:
        with trio.fail_after(deadline_s):
            while True:  # the orchestrator's entry, in another process
                waiting = (state / "approvals.db").exists() and bool(await book.pending())
                if waiting and (also is None or await trio.to_thread.run_sync(also)):
                    break
                await trio.sleep(0.2)
        [entry] = await book.pending()
        assert entry.owner is not None and entry.owner.pid == proc.pid
        proc.kill()
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return entry
