"""What the child-process adapters' tests share: recorded transcripts, and the contract harnesses
that run the real adapter and process driver with a fake CLI (``contract/fake_cli.py``) as the
child, fed over stdin (``{"emit": <line>}`` comes back as a stdout line; ``{"ctl": "exit"}``
ends the process). A runtime's ``harness.py`` keeps only its frames and its fake's rules."""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Protocol

import trio

from adapters._process import ChildProcess
from adapters._runtimes import PINNED_VERSIONS
from contract import RecordedCall
from contract.fake_cli import fake_cli_argv
from orchestrator.core.adapter import RunHandle, RuntimeAdapter, StartOpts, TaskHandle

Frame = list[dict[str, Any]]
"""What a harness sends to the fake for one abstract event."""

EMIT_RULES: list[dict[str, Any]] = [
    {"match": {"emit": {}}, "reply": ["{{emit}}"]},
    {"match": {"ctl": "exit", "code": 0}, "exit": 0},
    {"match": {"ctl": "exit", "code": 1}, "exit": 1},
]
"""The fake echoes ``{"emit": line}`` as a stdout line and exits on ``{"ctl": "exit"}``."""


def emit(line: dict[str, Any]) -> dict[str, Any]:
    """The stdin message that makes the fake write ``line``."""
    return {"emit": line}


_TESTS: Path = Path(__file__).resolve().parents[1]


class Recorded:
    """The recorded transcripts of one runtime (``tests/fixtures/<folder>/<pinned version>``)."""

    def __init__(self, folder: str, runtime_id: str) -> None:
        self.root = _TESTS / "fixtures" / folder / PINNED_VERSIONS[runtime_id]

    def lines(self, name: str) -> list[bytes]:
        """The stdout lines of a recorded run."""
        return [line for line in (self.root / f"{name}.jsonl").read_bytes().split(b"\n") if line]

    def meta(self, name: str) -> dict[str, Any]:
        return json.loads((self.root / f"{name}.meta.json").read_text())

    def messages(self, name: str, direction: str = "out") -> list[dict[str, Any]]:
        """The messages of a recorded conversation (``{"dir", "msg"}`` lines) one way."""
        out: list[dict[str, Any]] = []
        for line in (self.root / f"{name}.jsonl").read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                if entry["dir"] == direction:
                    out.append(entry["msg"])
        return out


class ChildRuntime(RuntimeAdapter, Protocol):
    """A child-process adapter: it shows the child behind a run, and records its side effects."""

    calls: Any

    def child_for(self, run: RunHandle) -> ChildProcess | None: ...


def state_root(label: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"ringleader-{label}-test-"))


class FakeCliHarness:
    """The contract harness base: subclasses set the adapter and config classes and build the
    config that launches their fake (:meth:`config`)."""

    label: ClassVar[str] = ""
    adapter_cls: ClassVar[Callable[..., Any]]
    config_cls: ClassVar[Callable[..., Any]]

    def __init__(self, frames: Any) -> None:
        self.frames = frames
        self.adapters: list[ChildRuntime] = []
        self.pids: list[int] = []
        self.run_pids: dict[str, list[int]] = {}
        self._keys = itertools.count(1)
        self._root = state_root(self.label)

    def config(self) -> Any:
        raise NotImplementedError

    def make_adapter(self) -> RuntimeAdapter:
        adapter: ChildRuntime = self.adapter_cls(self.config())
        self.adapters.append(adapter)
        return adapter

    def make_hung_adapter(self) -> RuntimeAdapter:
        """An adapter whose ``--version`` never answers."""
        hang = self._root / "hung-cli"
        hang.write_text("#!/bin/sh\nsleep 30\n")
        hang.chmod(0o755)
        return self.adapter_cls(self.config_cls(binary=str(hang), state_root=self._root))

    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle:
        key = session_key or f"agent:{self.label}-{next(self._keys)}:main"
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id=self.label, session_key=key, message="hi")
        )
        child = self.adapters[-1].child_for(run)
        assert child is not None
        self.pids.append(child.pid)
        self.run_pids.setdefault(key, []).append(child.pid)
        return run

    def child_pids(self, run: RunHandle) -> list[int]:
        """The processes of ``run`` (one per run): the contract checks they are gone at done."""
        return self.run_pids.get(run.session_key, [])

    async def emit(self, frame: Any, run: RunHandle | None = None) -> None:
        adapter = self.adapters[-1]
        if run is None:
            run = next(reversed(adapter._live.values())).cli.handle  # type: ignore[attr-defined]  # pyright: ignore
        assert run is not None
        child = adapter.child_for(run)
        if child is None:
            return
        for message in frame:
            for line in self.lines(run, message):
                try:
                    await child.send_line(json.dumps(line).encode())
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    return  # the fake (like the CLI) is gone: an aborted or finished run
        await trio.sleep(0.01)  # let the fake echo before the next frame of another run is sent

    def lines(self, run: RunHandle, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The stdin messages for one frame message (override to expand markers)."""
        return [message]

    def recorded_calls(self) -> list[RecordedCall]:
        return [RecordedCall(c.method, c.params) for a in self.adapters for c in a.calls]


class FakeCliFaultHarness:
    """Runs whose fake CLI replays a recorded transcript with one of the contract's faults."""

    label: ClassVar[str] = ""
    adapter_cls: ClassVar[Callable[..., Any]]
    config_cls: ClassVar[Callable[..., Any]]

    def __init__(self, transcript: list[bytes]) -> None:
        self.fault = "stall"
        self._root = state_root(self.label)
        self._pids: list[int] = []
        self._transcript = [line.decode() for line in transcript]

    def make_adapter(self) -> RuntimeAdapter:
        return self.adapter_cls(
            self.config_cls(
                launcher=lambda args: fake_cli_argv(self._transcript, fault=self.fault),
                state_root=self._root,
                sigint_grace=0.5,
                sigterm_grace=0.5,
            )
        )

    async def start_faulty(self, adapter: RuntimeAdapter, fault: str) -> RunHandle:
        self.fault = fault
        run = await adapter.start(
            TaskHandle(),
            StartOpts(agent_id=self.label, session_key=f"{self.label}:fault", message="go"),
        )
        child: ChildProcess | None = adapter.child_for(run)  # type: ignore[attr-defined]  # pyright: ignore
        assert child is not None
        self._pids.append(child.pid)
        return run

    def spawned_pids(self) -> list[int]:
        return list(self._pids)
