"""What an adapter author provides to run the contract suite: a harness.

A harness knows how to build a fresh adapter wired to a fake transport, how to start a run the
suite observes, how to push *native* frames into that transport, which side effects the adapter
issued, how to make an adapter whose runtime hangs, and (for adapters that start processes) which
pids serve a run. The frame builders (:class:`ContractFrames`) turn abstract events ("a text
delta", "a final result") into the runtime's own frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from orchestrator.core.adapter import RunHandle, RuntimeAdapter

__all__ = [
    "AdapterTestHarness",
    "ChildProcessHarness",
    "ContractFrames",
    "ProcessFaultHarness",
    "RecordedCall",
]


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
    ``recorded_calls``), with ``emit`` async and able to target one of several runs, plus
    ``make_hung_adapter``.

    ``make_adapter`` returns an adapter that is *not yet entered*: the suite enters it with
    ``async with``. ``emit(frame, run)`` pushes a native frame into ``run`` (the latest started
    run when ``run`` is None); when ``emit`` returns, the frame is on its way to the adapter (for
    a child process: written to the pipe the child echoes).

    ``make_hung_adapter()`` returns a not-yet-entered adapter whose runtime never answers (its
    ``health()`` must still answer within 2 s, not ok), or ``None`` to declare that the adapter
    has no external runtime that could hang. A :class:`ChildProcessHarness` may leave it out: the
    suite then hangs every fake CLI (:func:`contract.fake_cli.hang_switch`) while ``health()``
    runs on a :meth:`make_adapter` adapter. Any other harness without it fails the
    ``harness-protocol`` check, so the hung-runtime check never skips silently.
    """

    label: str
    frames: ContractFrames

    def make_adapter(self) -> RuntimeAdapter: ...
    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle: ...
    async def emit(self, frame: Any, run: RunHandle | None = None) -> None: ...
    def recorded_calls(self) -> list[RecordedCall]: ...
    def make_hung_adapter(self) -> RuntimeAdapter | None: ...


@runtime_checkable
class ChildProcessHarness(Protocol):
    """What a harness adds when its adapter starts child processes (every method of
    :class:`AdapterTestHarness` but ``make_hung_adapter``, which has a default, plus
    ``child_pids``).

    ``child_pids(run)`` lists the pids of the processes serving only ``run`` (a long-lived
    process that later runs reuse is not listed). At every ``done`` the suite waits a short
    grace for each to be gone and reaped: still running is ``no-orphans``, exited but never
    waited for is ``no-zombies``.
    """

    label: str
    frames: ContractFrames

    def make_adapter(self) -> RuntimeAdapter: ...
    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle: ...
    async def emit(self, frame: Any, run: RunHandle | None = None) -> None: ...
    def recorded_calls(self) -> list[RecordedCall]: ...
    def child_pids(self, run: RunHandle) -> Sequence[int]: ...


@runtime_checkable
class ProcessFaultHarness(Protocol):
    """For adapters that drive a child process: start runs whose child misbehaves.

    ``start_faulty(adapter, fault)`` starts a run whose child is the fake CLI built with
    ``fake_cli_argv(transcript, fault=fault)``; ``fault`` is one of
    :data:`contract.fake_cli.NAMED_FAULTS` (``"truncated-line"``, ``"truncated-line-exit-0"``,
    ``"over-cap-line"``, ``"stall"``, ``"exit-nonzero"``, ``"ignore-sigint"``, ``"grandchild"``).
    The transcript is any run of the runtime that ends in success (the fault lands on its middle
    line). ``spawned_pids`` lists every child pid the harness started, so the suite can check
    none outlives its run. What each fault requires is in
    :class:`~contract.suite.ProcessFaultContract`.
    """

    label: str

    def make_adapter(self) -> RuntimeAdapter: ...
    async def start_faulty(self, adapter: RuntimeAdapter, fault: str) -> RunHandle: ...
    def spawned_pids(self) -> list[int]: ...
