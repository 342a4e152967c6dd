"""What the real-runtime e2e tests share: finding the installed CLI, the scripted conversations
every runtime is run through, running one turn to its ``done`` with the stream checks, and small
readers of an event list. The fixtures (``server`` from the test module's ``script()``,
``workspace``) are in ``conftest.py``."""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest
import trio

from adapters._process import ChildProcess
from adapters._runtimes import install_hint, runtime_binary
from contract import check_stream, collect_run
from orchestrator.core.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle
from orchestrator.core.drift import missing_fields, unknown_frame_type
from orchestrator.core.errors import RuntimeNotFoundError
from orchestrator.core.events import Done, RuntimeEvent, Status, TextDelta, event_to_json
from orchestrator.core.queue import QueueEventStream


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


def text(events: list[RuntimeEvent], channel: str = "assistant") -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.channel == channel)


async def start(
    adapter: ChildRuntime,
    message: str,
    cwd: Path | None,
    *,
    key: str | None = None,
    **opts: Any,
) -> RunHandle:
    """Start one run (a fresh session key unless ``key``)."""
    return await adapter.start(
        TaskHandle(),
        StartOpts(
            agent_id=adapter.id,
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
