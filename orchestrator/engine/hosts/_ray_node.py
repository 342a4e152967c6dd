"""``NodeHost``: the long-lived per-node half of :class:`~orchestrator.engine.hosts.ray.RayHost`.

One instance per Ray node (made a Ray actor by ``ray.py``; this module never imports Ray). It
runs a trio loop in its own thread, hosting many tasks on the node, each through an ordinary
:class:`~orchestrator.engine.runner.Runner` that records into one
:class:`~orchestrator.engine.hosts.relay.Outbox`, which the head pulls (see ``relay.py``). Ray calls the
public methods from its own threads (a threaded actor); each hops onto the trio thread.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

from orchestrator.core.config import AccountConfig, RuntimeConfig
from orchestrator.core.errors import MailboxClosedError, RingleaderError, RuntimeNotFoundError
from orchestrator.core.quota import QuotaBook, QuotaReading
from orchestrator.core.registry import RuntimeRegistry, RuntimeSpec, discover_runtimes
from orchestrator.engine.accounts import account_key
from orchestrator.engine.governance import Governance
from orchestrator.engine.hosts.local import TaskRef
from orchestrator.engine.hosts.relay import (
    Op,
    Outbox,
    OutboxRecorder,
    OutboxSink,
    RelayedQuotaBook,
    TaskEndedOp,
)
from orchestrator.engine.runner import Runner, TaskSpec, default_state_dir

__all__ = ["NodeHost", "installed_runtimes"]

T = TypeVar("T")


def installed_runtimes(
    specs: list[RuntimeSpec], configs: Callable[[str], RuntimeConfig]
) -> dict[str, str | None]:
    """``{runtime id: version or None}`` for every runtime this machine can run: in-process
    runtimes always, CLI runtimes when their executable is found."""
    found: dict[str, str | None] = {}
    for spec in specs:
        if spec.locate is None:
            found[spec.id] = None
            continue
        try:
            found[spec.id] = spec.locate(configs(spec.id)).version
        except (RuntimeNotFoundError, OSError, RingleaderError):
            continue
    return found


class NodeHost:
    """Hosts tasks on one node (see the module docstring)."""

    def __init__(self, state_dir: str | None = None, outbox_capacity: int = 4096) -> None:
        self._state_dir = Path(state_dir) if state_dir else default_state_dir()
        self._capacity = outbox_capacity
        self._specs = {spec.id: spec for spec in discover_runtimes()}
        self._configs: dict[str, RuntimeConfig] = {}
        self._refs: dict[str, TaskRef] = {}
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._outbox: Outbox | None = None
        self._runner: Runner | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        self._drained = trio.Event()
        self._thread = threading.Thread(
            target=trio.run, args=(self._main,), name="ringleader-node", daemon=True
        )
        self._thread.start()
        self._ready.wait()

    # -- the trio side -------------------------------------------------------------------------

    def _config(self, runtime_id: str) -> RuntimeConfig:
        return self._configs.get(runtime_id) or RuntimeConfig()

    def _registry(self) -> RuntimeRegistry:
        registry = RuntimeRegistry()
        for runtime_id, spec in self._specs.items():
            registry.register_factory(
                runtime_id, lambda spec=spec: spec.factory(self._config(spec.id))
            )
        return registry

    def _accounts(self) -> dict[str, AccountConfig]:
        """The accounts of the runtimes the head configured here, by ``<runtime>@<name>``."""
        return {
            account_key(runtime_id, name): account
            for runtime_id, config in self._configs.items()
            for name, account in config.accounts.items()
        }

    def _configure(
        self, configs: Mapping[str, Mapping[str, Any]], quota: Sequence[QuotaReading]
    ) -> None:
        """Take the head's configuration of the runtimes a task may run on (its own and its
        fallbacks'): each account becomes a registry entry ``<runtime>@<name>``, as on the head
        (:func:`~orchestrator.engine.accounts.register_accounts`); ``quota``: the head's
        readings of those runtimes, so a fallback skips an account the head knows is held."""
        runner = self._runner
        assert runner is not None
        for runtime_id, dumped in configs.items():
            config = RuntimeConfig.model_validate(dict(dumped))
            self._configs[runtime_id] = config
            spec = self._specs.get(runtime_id)
            if spec is None:
                continue
            for name in config.accounts:
                runner.registry.register_factory(
                    account_key(runtime_id, name),
                    lambda spec=spec, rid=runtime_id, name=name: spec.factory(
                        self._config(rid).for_account(name)
                    ),
                )
        if quota and runner.quota is not None:
            QuotaBook.record(runner.quota, quota)  # the head's own readings: not relayed back

    async def _main(self) -> None:
        outbox = Outbox(capacity=self._capacity)
        self._runner = Runner(
            self._registry(),
            sink=OutboxSink(outbox),
            state_dir=self._state_dir,
            quota=RelayedQuotaBook(outbox=outbox),
        )
        self._outbox, self._stop = outbox, trio.Event()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._token = trio.lowlevel.current_trio_token()
            self._ready.set()
            await self._stop.wait()
            # leaving: abort what still runs and let it end as ``aborted`` (reported), then go
            for ref in list(self._refs.values()):
                ref.abort()
            with trio.move_on_after(20):
                while self._refs:
                    self._drained = trio.Event()
                    await self._drained.wait()
            nursery.cancel_scope.cancel()

    async def _run(
        self,
        task_key: str,
        runtime_id: str,
        task: TaskSpec,
        ref: TaskRef,
        governance: Governance | None,
    ) -> None:
        outbox, base = self._outbox, self._runner
        assert outbox is not None and base is not None
        runner = attrs.evolve(
            base,
            event_log=OutboxRecorder(outbox, task_key),
            on_actor=ref.attach,
            governance=governance,
            accounts=self._accounts(),
        )
        try:
            outcome = await runner.run_task(runtime_id, task)
        except Exception as exc:
            outbox.put_nowait(TaskEndedOp(task_key, error=exc))
        else:
            outbox.put_nowait(TaskEndedOp(task_key, outcome=outcome))
        finally:
            self._refs.pop(task_key, None)
            self._drained.set()

    def _submit(
        self, task_key: str, runtime_id: str, task: TaskSpec, governance: Governance | None
    ) -> None:
        assert self._nursery is not None
        ref = TaskRef(runtime_id=runtime_id, task=task)
        self._refs[task_key] = ref
        self._nursery.start_soon(self._run, task_key, runtime_id, task, ref, governance)

    def _call(self, fn: Callable[[], T]) -> T:
        return trio.from_thread.run_sync(fn, trio_token=self._token)

    # -- what the head calls (from Ray's threads) ----------------------------------------------

    def info(self) -> dict[str, Any]:
        """This node: host name, process id and the runtimes it can run (id → version)."""
        return {
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "runtimes": installed_runtimes(list(self._specs.values()), self._config),
        }

    def submit(
        self,
        task_key: str,
        runtime_id: str,
        task: TaskSpec,
        config: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        governance: Governance | None = None,
        fallback_configs: Mapping[str, Mapping[str, Any]] | None = None,
        quota: Sequence[QuotaReading] = (),
    ) -> None:
        """Start ``task`` on ``runtime_id`` here, with the head's configuration of that runtime
        (``config``, a :class:`RuntimeConfig` dump: names of key variables, never keys), the
        environment variables the head forwards (``env``; e.g. a model server's placeholder)
        and the budgets the task runs under (``governance``, see
        :meth:`~orchestrator.engine.governance.Governance.for_node`). ``fallback_configs``: the
        head's configuration of the other runtimes the task may fall back to; ``quota``: the
        head's quota readings of the task's targets. Accounts (``[runtimes.X.accounts.NAME]``)
        travel inside the configurations: a task's ``account`` runs as that account here."""
        if runtime_id not in self._specs:
            raise RuntimeNotFoundError(
                f"runtime {runtime_id!r} is not registered on node {socket.gethostname()}",
                adapter=runtime_id,
            )
        configs = {**(fallback_configs or {}), **({runtime_id: config} if config else {})}
        self._call(partial(self._configure, configs, quota))
        for name, value in (env or {}).items():
            os.environ[name] = value
        self._call(partial(self._submit, task_key, runtime_id, task, governance))

    def pull(
        self, ack: int, max_items: int = 256, max_wait_s: float = 0.02, poll_s: float = 1.0
    ) -> list[tuple[int, Op]]:
        """The ops after ``ack`` (acknowledging those up to it), batched by count and by time."""
        outbox = self._outbox
        assert outbox is not None
        return trio.from_thread.run(
            partial(outbox.take, ack, max_items=max_items, max_wait_s=max_wait_s, poll_s=poll_s),
            trio_token=self._token,
        )

    def abort(self, task_key: str) -> bool:
        """Abort the task's live run (``False``: no such task here any more)."""

        def abort() -> bool:
            ref = self._refs.get(task_key)
            if ref is None:
                return False
            ref.abort()
            return True

        return self._call(abort)

    def steer(self, task_key: str, text: str) -> None:
        """Steer the task's live run (``CapabilityError`` when its runtime is not steerable)."""

        def steer() -> None:
            ref = self._refs.get(task_key)
            if ref is None:
                raise MailboxClosedError("the task is not running on this node", actor_id=task_key)
            ref.steer(text)

        self._call(steer)

    def live(self) -> list[str]:
        """Keys of the tasks running here."""
        return self._call(lambda: list(self._refs))

    def shutdown(self) -> None:
        """Abort every task and stop the loop (the head calls this when it leaves)."""
        stop = self._stop
        if stop is None or self._token is None:
            return
        with contextlib.suppress(trio.RunFinishedError):
            self._call(stop.set)
        self._thread.join(timeout=30)
