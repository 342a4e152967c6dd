"""What an adapter author provides to run the contract suite: a harness.

A harness knows how to build a fresh adapter wired to a fake transport, how to start a run the
suite observes, how to push *native* frames into that transport, and which side effects the
adapter issued. The frame builders (:class:`ContractFrames`) turn abstract events ("a text delta",
"a final result") into the runtime's own frames.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import attrs

from orchestrator.adapter import RunHandle, RuntimeAdapter

__all__ = ["AdapterTestHarness", "ContractFrames", "ProcessFaultHarness", "RecordedCall"]


@attrs.frozen
class RecordedCall:
    """An RPC or side effect the adapter issued (``abort``, ``setModel``, ``writeContext`` …)."""

    method: str
    params: Any


@runtime_checkable
class ContractFrames(Protocol):
    """Builders of the runtime's native frames for abstract events."""

    def delta(self, text: str) -> Any: ...
    def tool_call(self, name: str, input: Any, call_id: str) -> Any: ...
    def tool_result(
        self, call_id: str, name: str, output: str, *, is_error: bool = False
    ) -> Any: ...
    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Any:
        """Cumulative usage so far."""
        ...

    def final(self, summary: str) -> Any: ...
    def aborted(self) -> Any: ...
    def error(self, message: str) -> Any: ...
    def unknown(self) -> Any:
        """A frame of a type the adapter has never seen (it must be tolerated)."""
        ...


@runtime_checkable
class AdapterTestHarness(Protocol):
    """The reference harness (``label``, ``make_adapter``, ``start``, ``emit``, ``frames``,
    ``recorded_calls``), with ``emit`` async and able to target one of several runs.

    ``make_adapter`` returns an adapter that is *not yet entered*: the suite enters it with
    ``async with``. ``emit(frame, run)`` pushes a native frame into ``run`` (the latest started
    run when ``run`` is None).
    """

    label: str
    frames: ContractFrames

    def make_adapter(self) -> RuntimeAdapter: ...
    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle: ...
    async def emit(self, frame: Any, run: RunHandle | None = None) -> None: ...
    def recorded_calls(self) -> list[RecordedCall]: ...


@runtime_checkable
class ProcessFaultHarness(Protocol):
    """For adapters that drive a child process: start runs whose child misbehaves.

    ``fault`` is one of ``"truncated-line"``, ``"over-cap-line"``, ``"stall"``,
    ``"exit-nonzero"``, ``"ignore-sigint"`` (see :mod:`contract.fake_cli`). ``spawned_pids``
    lists every child pid the harness started, so the suite can check none outlives its run.
    """

    label: str

    def make_adapter(self) -> RuntimeAdapter: ...
    async def start_faulty(self, adapter: RuntimeAdapter, fault: str) -> RunHandle: ...
    def spawned_pids(self) -> list[int]: ...
