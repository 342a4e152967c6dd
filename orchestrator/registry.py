"""The runtime registry: adapters and adapter factories by runtime id.

The reference keeps a map of adapter instances (unused in production) beside a separate map of
factories that build a fresh adapter per run. One registry holds both here: :meth:`register` an
instance, or :meth:`register_factory` a zero-argument callable; :meth:`create` gives a fresh
adapter from the factory when there is one, else the registered instance. Ids keep their first
insertion position; re-registering an id replaces its entry in place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .adapter import RuntimeAdapter
from .errors import ConfigError

__all__ = ["AdapterFactory", "RuntimeRegistry"]

AdapterFactory = Callable[[], RuntimeAdapter]


class RuntimeRegistry:
    """Adapters and adapter factories keyed by ``adapter.id``, in insertion order."""

    def __init__(self) -> None:
        self._adapters: dict[str, RuntimeAdapter] = {}
        self._factories: dict[str, AdapterFactory] = {}
        self._order: dict[str, None] = {}

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
