"""The runtime registry: adapters and adapter factories by runtime id.

The reference keeps a map of adapter instances (unused in production) beside a separate map of
factories that build a fresh adapter per run. One registry holds both here: :meth:`register` an
instance, or :meth:`register_factory` a zero-argument callable; :meth:`create` gives a fresh
adapter from the factory when there is one, else the registered instance. Ids keep their first
insertion position; re-registering an id replaces its entry in place.

Runtimes are *discovered* through the entry-point group ``ringleader.runtimes`` (ours too): each
entry point's name is a runtime id and its object a :class:`RuntimeSpec` (or a bare factory
``(RuntimeConfig) -> RuntimeAdapter``). :func:`discover_runtimes` loads them;
:meth:`RuntimeRegistry.from_specs` binds each factory to its runtime's resolved configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import attrs

from orchestrator.core.adapter import RuntimeAdapter
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.sandbox import SandboxPolicy

__all__ = [
    "ENTRY_POINT_GROUP",
    "AdapterFactory",
    "ForgetSessions",
    "InboxHook",
    "InboxItemRow",
    "Installed",
    "ModelServerHook",
    "RuntimeFactory",
    "RuntimeRegistry",
    "RuntimeSpec",
    "discover_runtimes",
]

_log = logging.getLogger(__name__)

ENTRY_POINT_GROUP: Final = "ringleader.runtimes"
"""The entry-point group runtimes register in (name: runtime id; object: a RuntimeSpec)."""

AdapterFactory = Callable[[], RuntimeAdapter]
RuntimeFactory: TypeAlias = Callable[[RuntimeConfig], RuntimeAdapter]
"""Builds a fresh adapter from the runtime's resolved configuration (binary, model, provider,
base URL, key variable name, permission policy, extra args, prices)."""


ForgetSessions: TypeAlias = Callable[[RuntimeConfig, Sequence[str], Sequence[str]], Awaitable[int]]
"""``forget(config, removed, kept)``: remove what the runtime stores itself of the sessions
``ringleader prune`` removed (their codec blobs ``removed``), except those a kept run still
records (``kept``); the number removed. Raises a ringleader error saying why it could not."""


@attrs.frozen
class ModelServerHook:
    """How ``ringleader run --model-server`` points a runtime at the scripted model server.

    The CLI starts the server on 127.0.0.1 and calls the runtime's factory with its
    configuration updated: ``base_url`` (``http://127.0.0.1:PORT`` for ``anthropic`` and
    ``gemini``,
    ``…/v1`` for ``responses`` and ``chat``), ``api_key_env`` (a variable holding a placeholder
    key), ``model`` and, when given, ``provider``. ``tool_call`` is the one real tool call the
    built-in script makes (a tool this runtime offers by default, harmless in any directory)."""

    api: Literal["anthropic", "responses", "chat", "gemini"]
    model: str
    tool_call: Mapping[str, Any] | None = None
    """``{"name": …, "input": {…}}`` in the model server's script format."""
    provider: str | None = None


@attrs.frozen
class InboxItemRow:
    """One inbox item a run posted (the native runtime's ``glove_post_to_inbox``)."""

    run_id: str
    item_id: str
    tag: str
    request: str
    status: str
    """``pending``, ``resolved`` or ``consumed`` (read by the run's next request)."""
    blocking: bool = False
    response: str | None = None
    created_at: str = ""
    resolved_at: str | None = None


@attrs.frozen
class InboxHook:
    """How ``ringleader inbox`` reads and resolves a runtime's inbox items in a state
    directory: ``list_items(state_dir, run_id or None)`` and
    ``resolve(state_dir, run_id, item_id, response) -> bool`` (False: not pending)."""

    list_items: Callable[[Path, str | None], list[InboxItemRow]]
    resolve: Callable[[Path, str, str, str], bool]


@attrs.frozen
class Installed:
    """Where a runtime's executable is and which version it is (``None``: unknown)."""

    path: str
    version: str | None = None


RUN_SETTINGS: frozenset[str] = frozenset({"max_runs", "watermark", "rotate_to", "accounts"})
"""Settings the runner applies to any runtime (its limit, rotation, accounts)."""


@attrs.frozen
class RuntimeSpec:
    """One runtime as registered in the ``ringleader.runtimes`` entry-point group."""

    id: str
    factory: RuntimeFactory
    model_server: ModelServerHook | None = None
    """Set when the runtime can be pointed at the built-in model server."""
    key_envs: Callable[[RuntimeConfig], tuple[str, ...]] | None = None
    """The environment variables that can carry the runtime's key (``runtimes`` shows whether
    one is set); ``None``: the runtime needs no key. A configured ``api_key_env`` comes first."""
    locate: Callable[[RuntimeConfig], Installed] | None = None
    """Finds the installed executable (raises :class:`~orchestrator.core.errors.RuntimeNotFoundError`
    when missing); ``None`` for in-process runtimes."""
    summary: str = ""
    inbox: InboxHook | None = None
    """Set when the runtime keeps inbox items (``ringleader inbox``)."""
    settings: frozenset[str] | None = None
    """The ``[runtimes.ID]`` settings the runtime uses beyond those every run has
    (:data:`RUN_SETTINGS`); ``None``: all of them. A setting it cannot use is refused."""
    preload: Callable[[RuntimeConfig, str | None], None] | None = None
    """Imports what a run of the runtime on this model (``None``: its configured one) imports
    when it starts — the native runtime: its provider's model SDK, seconds of CPU on a busy
    machine. The CLI calls it in a worker thread before the runs start; ``None``: nothing."""
    forget_sessions: ForgetSessions | None = None
    """Set when the runtime keeps its sessions' transcripts itself, outside ringleader's event
    log (OpenClaw: ``<state dir>/openclaw``): ``ringleader prune`` removes those of the runs it
    removes."""

    def create(self, config: RuntimeConfig) -> RuntimeAdapter:
        return self.factory(config)


def _as_spec(name: str, obj: object) -> RuntimeSpec:
    if isinstance(obj, RuntimeSpec):
        if obj.id != name:
            return attrs.evolve(obj, id=name)
        return obj
    if callable(obj):
        factory: RuntimeFactory = obj  # pyright: ignore[reportAssignmentType]
        return RuntimeSpec(id=name, factory=factory)
    raise TypeError(f"{type(obj).__name__} is neither a RuntimeSpec nor a factory")


def _broken(name: str, value: str, error: BaseException) -> RuntimeSpec:
    message = f"runtime plugin {name!r} ({value}) failed to load: {type(error).__name__}: {error}"

    def factory(config: RuntimeConfig) -> RuntimeAdapter:
        raise ConfigError(message)

    return RuntimeSpec(id=name, factory=factory, summary=message)


def discover_runtimes(
    entry_points: Iterable[metadata.EntryPoint] | None = None,
) -> list[RuntimeSpec]:
    """Every runtime in the ``ringleader.runtimes`` group: ringleader's own first (in the order
    it declares them), then third parties' by id. A plugin that fails to load becomes a runtime
    whose factory raises :class:`ConfigError` saying why (the others are unaffected); an id
    registered twice keeps its first registration (ours win)."""
    found = list(
        metadata.entry_points(group=ENTRY_POINT_GROUP) if entry_points is None else entry_points
    )

    def ours(ep: metadata.EntryPoint) -> bool:
        return ep.dist is not None and ep.dist.name == "ringleader"

    ordered = [ep for ep in found if ours(ep)] + sorted(
        (ep for ep in found if not ours(ep)), key=lambda ep: ep.name
    )
    specs: dict[str, RuntimeSpec] = {}
    for ep in ordered:
        if ep.name in specs:
            _log.warning("runtime %r registered twice; keeping the first (%s)", ep.name, ep.value)
            continue
        try:
            specs[ep.name] = _as_spec(ep.name, ep.load())
        except Exception as exc:
            specs[ep.name] = _broken(ep.name, ep.value, exc)
    return list(specs.values())


class RuntimeRegistry:
    """Adapters and adapter factories keyed by ``adapter.id``, in insertion order."""

    def __init__(self) -> None:
        self._adapters: dict[str, RuntimeAdapter] = {}
        self._factories: dict[str, AdapterFactory] = {}
        self._order: dict[str, None] = {}
        self._locators: dict[str, Callable[[], Installed]] = {}
        self._endpoints: dict[str, str] = {}
        self._limits: dict[str, int] = {}
        self._preloads: dict[str, Callable[[str | None], None]] = {}
        self.sandbox: SandboxPolicy | None = None
        """Every run's children go through bubblewrap under this policy (``None``: unconfined);
        the runner adds each run's workspace and home to it."""

    @classmethod
    def from_specs(
        cls,
        specs: Iterable[RuntimeSpec],
        configs: Callable[[str], RuntimeConfig] | None = None,
    ) -> RuntimeRegistry:
        """A registry with a factory per spec, each bound to ``configs(runtime_id)`` (all
        defaults when ``configs`` is ``None``)."""
        registry = cls()
        for spec in specs:
            config = configs(spec.id) if configs is not None else RuntimeConfig()
            registry.register_factory(spec.id, _bind(spec, config))
            locate = spec.locate
            if locate is not None:
                registry._locators[spec.id] = partial(locate, config)
            preload = spec.preload
            if preload is not None:
                registry._preloads[spec.id] = partial(preload, config)
            if config.base_url:
                registry._endpoints[spec.id] = config.base_url
            if config.max_runs is not None:
                registry._limits[spec.id] = config.max_runs
        return registry

    def limit(self, runtime_id: str) -> int | None:
        """At most this many runs of ``runtime_id`` at once (its ``max_runs``); ``None``: runs
        of one runtime all run at once."""
        return self._limits.get(runtime_id)

    def set_limit(self, runtime_id: str, max_runs: int | None) -> None:
        """Set (``None``: lift) the limit on ``runtime_id``'s simultaneous runs."""
        if max_runs is None:
            self._limits.pop(runtime_id, None)
        elif max_runs < 1:
            raise ValueError("max_runs must be at least 1")
        else:
            self._limits[runtime_id] = max_runs

    def preload(self, runtime_id: str, model: str | None = None) -> None:
        """Import what a run of ``runtime_id`` on ``model`` imports when it starts (its spec's
        :attr:`RuntimeSpec.preload`; nothing for a runtime without one). Blocking: call it from
        a worker thread in async code."""
        preload = self._preloads.get(runtime_id)
        if preload is not None:
            preload(model)

    def version(self, runtime_id: str) -> str | None:
        """The installed version of ``runtime_id``'s executable, when its spec can locate it
        (``None``: in-process, not found, or unknown). Reads the install stamp: call it from a
        thread in async code."""
        locate = self._locators.get(runtime_id)
        if locate is None:
            return None
        try:
            return locate().version
        except Exception:
            return None

    def register(self, adapter: RuntimeAdapter) -> None:
        """Register an adapter instance under its ``id`` (replacing one with the same id)."""
        if not adapter.id:
            raise ConfigError("an adapter id must be a non-empty string")
        self._adapters[adapter.id] = adapter
        self._order.setdefault(adapter.id, None)

    def register_factory(self, runtime_id: str, factory: AdapterFactory) -> None:
        """Register a factory that builds a fresh adapter for each run."""
        if not runtime_id:
            raise ConfigError("a runtime id must be a non-empty string")
        self._factories[runtime_id] = factory
        self._order.setdefault(runtime_id, None)

    def unregister(self, runtime_id: str) -> None:
        """Forget the adapter and factory registered under ``runtime_id`` (no-op if absent)."""
        self._adapters.pop(runtime_id, None)
        self._factories.pop(runtime_id, None)
        self._order.pop(runtime_id, None)
        self._endpoints.pop(runtime_id, None)
        self._preloads.pop(runtime_id, None)

    def endpoint(self, runtime_id: str) -> str | None:
        """The model endpoint ``runtime_id`` is configured with (its ``base_url``), if any: a
        connection failure names it, and one on loopback is checked before a run starts."""
        return self._endpoints.get(runtime_id)

    def get(self, runtime_id: str) -> RuntimeAdapter | None:
        """The registered adapter instance, or ``None``."""
        return self._adapters.get(runtime_id)

    def has(self, runtime_id: str) -> bool:
        return runtime_id in self._order

    def __contains__(self, runtime_id: object) -> bool:
        return runtime_id in self._order

    def ids(self) -> list[str]:
        """Registered ids in insertion order."""
        return list(self._order)

    def list(self) -> list[RuntimeAdapter]:
        """Registered adapter instances in insertion order (factories are not instantiated)."""
        return [self._adapters[i] for i in self._order if i in self._adapters]

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids())

    def create(self, runtime_id: str) -> RuntimeAdapter:
        """A fresh adapter from the factory, else the registered instance.

        Raises :class:`ConfigError` naming the known ids when ``runtime_id`` is unknown.
        """
        factory = self._factories.get(runtime_id)
        if factory is not None:
            return factory()
        adapter = self._adapters.get(runtime_id)
        if adapter is not None:
            return adapter
        known = ", ".join(self.ids()) or "none"
        raise ConfigError(f"unknown runtime {runtime_id!r} (known: {known})")


def _bind(spec: RuntimeSpec, config: RuntimeConfig) -> AdapterFactory:
    return lambda: spec.factory(config)
