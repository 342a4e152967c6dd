"""``RayHost``: the same tasks as :class:`~orchestrator.engine.hosts.local.LocalHost`, on a Ray cluster.

::

    async with RayHost(runner, address="auto") as host:      # or "ray://…", or None: local Ray
        a = host.submit("claude-code", TaskSpec(task_id="1", title="fix the parser"))
        print(await a.outcome())

* **Nodes.** One long-lived ``NodeHost`` actor per alive node (pinned to it), hosting many runs
  in a trio loop of its own (``_ray_node.py``). The actors belong to this driver: they die with
  it, and their runs' children die with them (parent-death signal, ``orchestrator.core.lifetime``).
* **Placement by Ray resources.** A node that declares custom resources ``runtime:<id>`` (``ray
  start --resources '{"runtime:claude-code": 4}'``) takes at most that many concurrent tasks of
  each declared runtime and no others; a node that declares none takes the runtimes it has
  installed (its ``NodeHost`` looks). Among the nodes that can, the least busy one wins; when all
  are full the task waits (its ref is queued); when none can, its ref fails at once with
  :class:`~orchestrator.core.errors.NoNodeForRuntimeError`.
* **Events.** The head pulls each node's ops in batches (by count and by time) and writes them to
  its own event log (through the runner's sink, so views see them) before any subscriber sees
  them — gapless, exactly one terminal per run (``relay.py``).
* **A node dies.** Its open runs are closed on the head with ``error{interrupted}`` +
  ``done{error}`` and marked ``interrupted``; nothing the head wrote is lost. A task whose session
  was recorded and whose state lives in storage shared by the nodes (``shared_state=True``) is
  resumed on another node from its session; otherwise its ref fails with
  :class:`~orchestrator.core.errors.NodeLostError` naming the run to resume where its session lives.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import os
import tempfile
import uuid
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Self

import attrs
import trio

from orchestrator.core.adapter import RESUME_PROMPT
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import (
    ConfigError,
    HostError,
    MailboxClosedError,
    NodeLostError,
    NoNodeForRuntimeError,
)
from orchestrator.core.quota import DEFAULT_ACCOUNT, QuotaReading
from orchestrator.engine.accounts import split_key, targets
from orchestrator.engine.hosts.relay import HeadApplier, SessionOp, StartRunOp, TaskEndedOp
from orchestrator.engine.runner import ResumeFrom, Runner, TaskOutcome, TaskSpec

__all__ = ["RayHost", "RayTaskRef", "ray_nodes"]

_log = logging.getLogger(__name__)

RESOURCE_PREFIX = "runtime:"


def _on_loopback(address: str | None) -> bool:
    """Whether ``address`` means a Ray on this machine's loopback interface: ``None`` (a Ray of
    our own), ``127.x``/``localhost``, or ``auto`` when the running cluster Ray recorded here is
    on loopback."""
    if address is None:
        return True
    if address == "auto":
        recorded = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        try:
            address = recorded.read_text().strip()
        except OSError:
            return False
    host = address.removeprefix("ray://").rsplit(":", 1)[0]
    return host == "localhost" or host.startswith("127.")


def _ray(*, local: bool = False) -> ModuleType:
    """Ray, imported on first use, with no usage report. ``local``: the cluster is on this
    machine's loopback interface: the driver stays on it too (Ray's single-machine mode)."""
    if local:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ConfigError(
            "Ray is not installed: pip install 'ringleader[ray]' (on every node)"
        ) from None


@attrs.define(eq=False)
class _Node:
    node_id: str
    actor: Any
    address: str
    hostname: str = ""
    runtimes: dict[str, str | None] = attrs.field(factory=dict[str, str | None])
    slots: dict[str, float] = attrs.field(factory=dict[str, float])
    """Declared ``runtime:<id>`` resources (empty: whatever is installed, unbounded)."""
    active: dict[str, int] = attrs.field(factory=dict[str, int])
    alive: bool = True

    def can_run(self, runtime_id: str) -> bool:
        if not self.alive:
            return False
        return runtime_id in self.slots if self.slots else runtime_id in self.runtimes

    def free(self, runtime_id: str) -> float:
        used = self.active.get(runtime_id, 0)
        return self.slots[runtime_id] - used if self.slots else math.inf

    def describe(self) -> str:
        offered = sorted(self.slots) if self.slots else sorted(self.runtimes)
        return f"{self.hostname or self.address}: {', '.join(offered) or 'nothing'}"


@attrs.define(eq=False)
class RayTaskRef:
    """A task submitted to a :class:`RayHost`: where it runs, and its outcome once finished."""

    runtime_id: str
    task: TaskSpec
    task_key: str
    _host: RayHost
    node: _Node | None = None
    run_keys: list[str] = attrs.field(factory=list[str])
    """The runs of this task recorded on the head so far (a resumed task has several)."""
    _done: trio.Event = attrs.field(factory=trio.Event)
    _outcome: TaskOutcome | None = None
    _error: BaseException | None = None
    _aborted: bool = False
    _live: trio.Event = attrs.field(factory=trio.Event)

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    async def outcome(self) -> TaskOutcome:
        """Wait for the task; its final outcome (or the error it raised on its node)."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._outcome is not None
        return self._outcome

    async def started(self) -> None:
        """Wait until the task's first run has recorded its first event on the head."""
        await self._live.wait()

    def abort(self) -> None:
        """Abort the task's run on its node; it ends as ``aborted``."""
        self._aborted = True
        node = self.node
        if node is not None and node.alive and not self.finished:
            node.actor.abort.remote(self.task_key)

    async def steer(self, text: str) -> None:
        """Steer the task's live run on its node (``CapabilityError``: not steerable)."""
        node = self.node
        if node is None or self.finished:
            raise MailboxClosedError("the task has no live run", actor_id=self.task.task_id)
        try:
            await self._host.call(node.actor.steer.remote(self.task_key, text))
        except Exception as exc:
            raise _unwrap(exc) from None

    def _finish(self, outcome: TaskOutcome | None, error: BaseException | None) -> None:
        self._outcome, self._error = outcome, error
        self._live.set()
        self._done.set()


@attrs.define(eq=False)
class RayHost:
    """Runs tasks on the nodes of a Ray cluster (see the module docstring).

    ``runner`` gives the head's sink and event log (and its registry, for capabilities);
    ``configs`` the runtimes' configuration shipped with each task (key *names* only);
    ``forward_env`` the environment variables copied to the node with each task (for a local
    cluster's model server placeholder key; keys proper should live in the nodes' environment).
    ``address``: ``"auto"`` (a running cluster), a ``ray://`` or GCS address, or ``None`` to start
    a local Ray. ``node_state_dir``: the state directory on the nodes (default: each node's).

    The runner's governance travels with each task (:meth:`Governance.for_node`): its node
    enforces the task's budgets within one event, as a local host does; the host budget spans
    the cluster at task boundaries (each task starts from what every finished task spent, and
    its spend is added when it ends; tasks running at once do not see each other's spend).
    Breakers are not applied over Ray."""

    runner: Runner
    address: str | None = "auto"
    configs: Callable[[str], RuntimeConfig] | None = None
    forward_env: Sequence[str] = ()
    node_state_dir: str | None = None
    shared_state: bool = False
    batch_max: int = 256
    batch_wait_s: float = 0.02
    tasks: list[RayTaskRef] = attrs.field(init=False, factory=list[RayTaskRef])
    aborting: trio.Event = attrs.field(init=False, factory=trio.Event)
    """Set by :meth:`abort_all` (work before the runs, e.g. a warm-up, stops on it)."""
    nodes: list[_Node] = attrs.field(init=False, factory=list[_Node])
    _nursery: trio.Nursery | None = attrs.field(init=False, default=None)
    _stack: AsyncExitStack | None = attrs.field(init=False, default=None)
    _by_key: dict[str, RayTaskRef] = attrs.field(init=False, factory=dict[str, RayTaskRef])
    _freed: trio.Event = attrs.field(init=False, factory=trio.Event)
    _connected: bool = attrs.field(init=False, default=False)

    # -- lifetime --------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        ray = _ray(local=_on_loopback(self.address))
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False}
            if self.address is not None:
                kwargs["address"] = self.address
            try:
                await trio.to_thread.run_sync(partial(ray.init, **kwargs))
            except ConnectionError as exc:  # no cluster there: one line, not a traceback
                where = "running on this machine" if self.address == "auto" else self.address
                raise HostError(
                    f"no Ray cluster {where} ({' '.join(str(exc).split())[:200]}); start one "
                    "with `ray start --head`, or give its address"
                ) from None
            self._connected = True
        self.nodes = await trio.to_thread.run_sync(partial(_start_nodes, ray, self.node_state_dir))
        stack = AsyncExitStack()
        nursery = await stack.enter_async_context(trio.open_nursery())
        self._nursery, self._stack = nursery, stack
        for node in self.nodes:
            nursery.start_soon(self._pump, node)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for ref in self.tasks:
            if not ref.finished:
                ref.abort()
        try:
            with trio.move_on_after(60) as waited:
                for ref in self.tasks:
                    await ref._done.wait()  # pyright: ignore[reportPrivateUsage]
            if waited.cancelled_caught:
                _log.warning("ray host: tasks still unfinished after 60 s; leaving them")
        finally:
            nursery, stack = self._nursery, self._stack
            self._nursery = self._stack = None
            if nursery is not None:
                nursery.cancel_scope.cancel()
            if stack is not None:
                await stack.__aexit__(exc_type, exc, tb)
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self._stop_nodes)

    def _stop_nodes(self) -> None:
        ray = _ray()
        for node in self.nodes:
            if node.alive:
                with contextlib.suppress(Exception):
                    ray.get(node.actor.shutdown.remote(), timeout=30)
                with contextlib.suppress(Exception):
                    ray.kill(node.actor)
        if self._connected:
            ray.shutdown()

    async def call(self, ref: Any) -> Any:
        """``ray.get(ref)`` off the trio thread."""
        ray = _ray()
        return await trio.to_thread.run_sync(ray.get, ref, abandon_on_cancel=True)

    # -- tasks ---------------------------------------------------------------------------------

    def abort_all(self) -> None:
        """Abort every task, those submitted from now on included; sets :attr:`aborting`."""
        self.aborting.set()
        for ref in self.tasks:
            if not ref.finished:
                ref.abort()

    def submit(self, runtime_id: str, task: TaskSpec) -> RayTaskRef:
        """Queue ``task`` for a node that can run ``runtime_id``; returns its ref at once."""
        if self._nursery is None:
            raise RuntimeError("use `async with RayHost(...)` before submitting")
        if "@" in runtime_id and task.account is None:  # ``claude-code@work`` names both
            runtime_id, account = split_key(runtime_id)
            task = attrs.evolve(task, account=account)
        ref = RayTaskRef(runtime_id, task, f"{task.task_id}:{uuid.uuid4().hex[:8]}", self)
        if self.aborting.is_set():
            ref.abort()
        self.tasks.append(ref)
        self._by_key[ref.task_key] = ref
        self._nursery.start_soon(self._place, ref)
        return ref

    def _config(self, runtime_id: str) -> dict[str, Any] | None:
        if self.configs is None:
            return None
        return self.configs(runtime_id).model_dump(mode="json")

    def _targets(self, ref: RayTaskRef) -> list[tuple[str, str | None]]:
        """Where the task may run, in order: its runtime (and account), then its fallbacks."""
        task = ref.task
        return targets(ref.runtime_id, task.account, task.fallback, self.runner.accounts)

    def _quota(self, found: list[tuple[str, str | None]]) -> list[QuotaReading]:
        """The head's quota readings of the task's targets (a node skips a held account)."""
        book = self.runner.quota
        if book is None:
            return []
        wanted = {(rid, account or DEFAULT_ACCOUNT) for rid, account in found}
        return [r for r in book.readings() if (r.runtime_id, r.account) in wanted]

    async def _place(self, ref: RayTaskRef) -> None:
        while True:
            able = [node for node in self.nodes if node.can_run(ref.runtime_id)]
            if not able:
                offered = "; ".join(node.describe() for node in self.nodes) or "no nodes"
                ref._finish(  # pyright: ignore[reportPrivateUsage]
                    None,
                    NoNodeForRuntimeError(
                        f"no node of the Ray cluster can run {ref.runtime_id!r} "
                        f"(install it on a node, or declare resource "
                        f"'{RESOURCE_PREFIX}{ref.runtime_id}'); nodes: {offered}"
                    ),
                )
                return
            node = max(able, key=lambda n: n.free(ref.runtime_id))
            if node.free(ref.runtime_id) >= 1:
                break
            await self._freed.wait()
        node.active[ref.runtime_id] = node.active.get(ref.runtime_id, 0) + 1
        ref.node = node
        env = {name: os.environ[name] for name in self.forward_env if name in os.environ}
        gov = self.runner.governance
        found = self._targets(ref)
        others = {rid for rid, _ in found if rid != ref.runtime_id}
        fallback = {rid: c for rid in sorted(others) if (c := self._config(rid)) is not None}
        quota = await trio.to_thread.run_sync(self._quota, found)
        try:
            await self.call(
                node.actor.submit.remote(
                    ref.task_key,
                    ref.runtime_id,
                    ref.task,
                    self._config(ref.runtime_id),
                    env,
                    gov.for_node() if gov is not None else None,
                    fallback,
                    quota,
                )
            )
        except Exception as exc:
            self._release(ref)
            ref._finish(None, _unwrap(exc))  # pyright: ignore[reportPrivateUsage]
            return
        if ref._aborted:  # pyright: ignore[reportPrivateUsage]
            ref.abort()

    def _release(self, ref: RayTaskRef) -> None:
        node = ref.node
        if node is not None:
            node.active[ref.runtime_id] = max(0, node.active.get(ref.runtime_id, 0) - 1)
        self._freed.set()
        self._freed = trio.Event()

    def _ended(self, op: TaskEndedOp) -> None:
        ref = self._by_key.pop(op.task_key, None)
        if ref is None:
            return
        self._release(ref)
        gov, outcome = self.runner.governance, op.outcome
        if gov is not None and outcome is not None:  # the host's spend spans every node
            gov.host_ledger.absorb(
                outcome.cost_usd,
                outcome.usage.total_tokens,
                estimated=gov.allow_estimates,  # some of it may be a list-price estimate
            )
        ref._finish(op.outcome, op.error)  # pyright: ignore[reportPrivateUsage]

    # -- events --------------------------------------------------------------------------------

    async def _pump(self, node: _Node) -> None:
        ray = _ray()
        log = self.runner.event_log
        sessions: dict[str, SessionOp] = {}

        def on_session(op: SessionOp) -> None:
            if op.run_key is not None:
                sessions[op.run_key] = op

        applier = HeadApplier(
            sink=self.runner.sink,
            log=log,
            on_task_ended=self._ended,
            on_session=on_session,
            on_run_started=self._run_started,
            quota=self.runner.quota,
        )
        while True:
            try:
                batch = await self.call(
                    node.actor.pull.remote(applier.applied, self.batch_max, self.batch_wait_s, 1.0)
                )
            except ray.exceptions.RayError as exc:
                await self._lose(node, applier, sessions, exc)
                return
            await applier.apply(batch)

    def _run_started(self, op: StartRunOp) -> None:
        ref = self._by_key.get(op.task_key)
        if ref is not None:
            ref.run_keys.append(op.run_key)
            ref._live.set()  # pyright: ignore[reportPrivateUsage]

    async def _lose(
        self,
        node: _Node,
        applier: HeadApplier,
        sessions: dict[str, SessionOp],
        exc: BaseException,
    ) -> None:
        node.alive = False
        reason = f"the Ray node running this run died ({node.describe()}); run interrupted"
        interrupted = await applier.interrupt_open(reason)
        _log.warning("ray node %s lost (%s); interrupted: %s", node.address, exc, interrupted)
        for ref in [r for r in self._by_key.values() if r.node is node]:
            self._by_key.pop(ref.task_key, None)
            self._release(ref)
            resumable = [key for key in ref.run_keys if key in sessions]
            if self.shared_state and resumable and not ref._aborted:  # pyright: ignore[reportPrivateUsage]
                session = sessions[resumable[-1]]
                again = attrs.evolve(
                    ref.task,
                    title=RESUME_PROMPT,
                    cwd=session.origin_cwd,
                    resume=ResumeFrom(resumable[-1], session.codec_blob, session.native_session_id),
                )
                ref.task, ref.node = again, None
                ref.task_key = f"{again.task_id}:{uuid.uuid4().hex[:8]}"
                self._by_key[ref.task_key] = ref
                assert self._nursery is not None
                self._nursery.start_soon(self._place, ref)
                continue
            runs = ", ".join(ref.run_keys) or "none recorded"
            hint = (
                f"; resume it with `ringleader run --resume {resumable[-1]}` where its session lives"
                if resumable
                else ""
            )
            ref._finish(  # pyright: ignore[reportPrivateUsage]
                None, NodeLostError(f"{reason} (runs: {runs}){hint}")
            )


def _unwrap(exc: BaseException) -> BaseException:
    """A Ray task error carries the node's exception as its cause: raise that one."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def _start_nodes(ray: ModuleType, state_dir: str | None) -> list[_Node]:
    """One pinned ``NodeHost`` per alive node, with what each can run."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from orchestrator.engine.hosts._ray_node import NodeHost

    remote_node = ray.remote(NodeHost)
    nodes: list[_Node] = []
    for entry in ray.nodes():
        if not entry.get("Alive"):
            continue
        node_id = str(entry["NodeID"])
        actor = remote_node.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            max_concurrency=64,
            num_cpus=0,
        ).remote(state_dir)
        resources: dict[str, float] = entry.get("Resources", {})
        slots = {
            name.removeprefix(RESOURCE_PREFIX): float(amount)
            for name, amount in resources.items()
            if name.startswith(RESOURCE_PREFIX)
        }
        nodes.append(_Node(node_id, actor, str(entry.get("NodeManagerAddress", "")), slots=slots))
    infos = ray.get([node.actor.info.remote() for node in nodes], timeout=120)
    for node, info in zip(nodes, infos, strict=True):
        node.hostname = str(info["hostname"])
        node.runtimes = dict(info["runtimes"])
    return nodes


def ray_nodes(address: str | None = "auto") -> list[dict[str, Any]]:
    """What each node of the cluster can run (for ``ringleader runtimes --ray``): one dict per
    node with ``node``, ``address``, ``runtimes`` (id → version) and ``slots`` (declared
    ``runtime:<id>`` resources). Connects, looks, and disconnects when it connected."""
    ray = _ray(local=_on_loopback(address))
    connected = False
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, include_dashboard=False)
        connected = True
    try:
        nodes = _start_nodes(ray, None)
        for node in nodes:
            with contextlib.suppress(Exception):
                ray.kill(node.actor)
        return [
            {
                "node": node.hostname,
                "address": node.address,
                "runtimes": node.runtimes,
                "slots": node.slots,
            }
            for node in nodes
        ]
    finally:
        if connected:
            ray.shutdown()
