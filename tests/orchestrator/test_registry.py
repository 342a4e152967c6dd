"""RuntimeRegistry: instances and factories by id, insertion order, unknown ids."""

from __future__ import annotations

from typing import Any, cast

import pytest

from orchestrator.core import ConfigError, RuntimeAdapter, RuntimeRegistry


class Fake:
    """Just enough of an adapter for the registry (it only reads ``id``)."""

    def __init__(self, id: str, tag: str = "") -> None:
        self.id = id
        self.tag = tag

    def __repr__(self) -> str:
        return f"Fake({self.id!r}, {self.tag!r})"


def fake(id: str, tag: str = "") -> RuntimeAdapter:
    return cast(RuntimeAdapter, Fake(id, tag))


def test_register_get_has_ids_list() -> None:
    registry = RuntimeRegistry()
    a, b = fake("a"), fake("b")
    registry.register(a)
    registry.register(b)
    assert registry.get("a") is a
    assert registry.get("b") is b
    assert registry.get("c") is None
    assert registry.has("a")
    assert not registry.has("c")
    assert "b" in registry
    assert "c" not in registry
    assert registry.ids() == ["a", "b"]
    assert registry.list() == [a, b]
    assert list(registry) == ["a", "b"]


def test_overwrite_replaces_in_place_and_keeps_the_first_position() -> None:
    registry = RuntimeRegistry()
    a1, b, c, a2 = fake("a", "1"), fake("b"), fake("c"), fake("a", "2")
    for adapter in (a1, b, c, a2):
        registry.register(adapter)
    assert registry.ids() == ["a", "b", "c"]
    assert registry.list() == [a2, b, c]
    assert registry.get("a") is a2


def test_unregister_forgets_and_is_a_noop_for_unknown_ids() -> None:
    registry = RuntimeRegistry()
    a, b = fake("a"), fake("b")
    registry.register(a)
    registry.register(b)
    registry.register_factory("a", lambda: fake("a", "from-factory"))
    registry.unregister("a")
    assert registry.ids() == ["b"]
    assert registry.get("a") is None
    assert not registry.has("a")
    with pytest.raises(ConfigError):
        registry.create("a")  # the factory went too
    registry.unregister("a")
    registry.unregister("never")
    assert registry.ids() == ["b"]
    # re-registering after unregister appends at the end
    registry.register(a)
    assert registry.ids() == ["b", "a"]


def test_factories_give_a_fresh_adapter_each_call() -> None:
    registry = RuntimeRegistry()
    built: list[RuntimeAdapter] = []

    def factory() -> RuntimeAdapter:
        adapter = fake("fresh", str(len(built)))
        built.append(adapter)
        return adapter

    registry.register_factory("fresh", factory)
    first, second = registry.create("fresh"), registry.create("fresh")
    assert first is not second
    assert built == [first, second]
    assert registry.has("fresh")
    assert registry.ids() == ["fresh"]
    assert registry.get("fresh") is None  # get() never instantiates a factory
    assert registry.list() == []


def test_create_prefers_the_factory_and_falls_back_to_the_instance() -> None:
    registry = RuntimeRegistry()
    instance = fake("x", "instance")
    registry.register(instance)
    assert registry.create("x") is instance
    registry.register_factory("x", lambda: fake("x", "factory"))
    made = cast(Any, registry.create("x"))
    assert made.tag == "factory"
    assert registry.ids() == ["x"]  # one id, one position
    assert registry.list() == [instance]


def test_order_mixes_instances_and_factories() -> None:
    registry = RuntimeRegistry()
    registry.register_factory("f1", lambda: fake("f1"))
    registry.register(fake("i1"))
    registry.register_factory("f2", lambda: fake("f2"))
    registry.register_factory("f1", lambda: fake("f1", "again"))
    assert registry.ids() == ["f1", "i1", "f2"]


def test_unknown_id_raises_config_error_naming_the_known_ids() -> None:
    registry = RuntimeRegistry()
    registry.register(fake("native"))
    registry.register_factory("claude-code", lambda: fake("claude-code"))
    with pytest.raises(ConfigError) as info:
        registry.create("hermes")
    message = str(info.value)
    assert "'hermes'" in message
    assert "native" in message
    assert "claude-code" in message
    assert message == "unknown runtime 'hermes' (known: native, claude-code)"
    assert isinstance(info.value, ValueError)


def test_unknown_id_in_an_empty_registry() -> None:
    with pytest.raises(ConfigError, match=r"unknown runtime 'x' \(known: none\)"):
        RuntimeRegistry().create("x")


def test_empty_ids_are_rejected() -> None:
    registry = RuntimeRegistry()
    with pytest.raises(ConfigError):
        registry.register(fake(""))
    with pytest.raises(ConfigError):
        registry.register_factory("", lambda: fake("x"))
    assert registry.ids() == []


def test_registries_are_independent() -> None:
    one, two = RuntimeRegistry(), RuntimeRegistry()
    one.register(fake("a"))
    assert two.ids() == []


def test_preload_gets_the_runtime_config_and_the_model() -> None:
    """``preload`` (the CLI calls it in a worker thread before the runs start) is the spec's,
    bound to the runtime's configuration; a runtime without one preloads nothing."""
    from orchestrator.core.config import RuntimeConfig
    from orchestrator.core.registry import RuntimeSpec

    seen: list[tuple[str | None, str | None]] = []
    specs = [
        RuntimeSpec(
            id="a",
            factory=lambda config: fake("a"),
            preload=lambda config, model: seen.append((config.model, model)),
        ),
        RuntimeSpec(id="b", factory=lambda config: fake("b")),
    ]
    registry = RuntimeRegistry.from_specs(specs, lambda rid: RuntimeConfig(model=f"{rid}-model"))
    registry.preload("a", "anthropic:claude-x")
    registry.preload("a")
    registry.preload("b", "m")
    registry.preload("missing")
    assert seen == [("a-model", "anthropic:claude-x"), ("a-model", None)]
