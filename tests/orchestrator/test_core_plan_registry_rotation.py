"""Integration plans (every branch of the reference), the registry, and session rotation."""

from __future__ import annotations

from typing import Any

import pytest

from adapters import ScriptedAdapter
from orchestrator import (
    DEFAULT_ROTATION,
    Capabilities,
    ConfigError,
    NativeHomeClaim,
    RotationHandoff,
    RotationRecord,
    RotationTrigger,
    RunHandle,
    RuntimeRegistry,
    build_rotation_handoff_note,
    resolve_runtime_integration,
    rotate_session,
    should_rotate,
)


def caps(**extra: Any) -> Capabilities:
    return Capabilities(
        streaming=True, mcp=False, worktrees=False, resume=True, tool_approval=False, **extra
    )


PER_IDENTITY = NativeHomeClaim(scope="per-identity", persist=True)


@pytest.mark.parametrize(
    ("extra", "home", "skills", "memory", "gateway"),
    [
        ({}, "ephemeral", False, False, False),  # omitted seam
        (
            {"runtime_class": "connected-substrate", "native_channels": "gateway"},
            "connected",
            False,
            False,
            True,
        ),
        ({"runtime_class": "connected-substrate"}, "connected", False, False, False),
        (  # connected ignores home/skills/memory claims
            {
                "runtime_class": "connected-substrate",
                "native_home": PER_IDENTITY,
                "native_skills": "preserve",
                "native_memory": "preserve",
            },
            "connected",
            False,
            False,
            False,
        ),
        (  # Hermes shape
            {
                "runtime_class": "wrapped-oneshot",
                "native_home": PER_IDENTITY,
                "native_skills": "preserve",
                "native_memory": "preserve",
            },
            "persistent",
            True,
            True,
            False,
        ),
        (
            {"native_home": NativeHomeClaim(scope="per-run", persist=False)},
            "ephemeral",
            False,
            False,
            False,
        ),  # Codex
        (
            {"native_home": NativeHomeClaim(scope="per-run", persist=True)},
            "ephemeral",
            False,
            False,
            False,
        ),
        (
            {"native_skills": "preserve", "native_memory": "preserve"},
            "ephemeral",
            False,
            False,
            False,
        ),  # clamped
        (
            {"runtime_class": "native", "native_home": PER_IDENTITY, "native_memory": "preserve"},
            "persistent",
            False,
            True,
            False,
        ),
        (
            {"native_channels": "gateway"},
            "ephemeral",
            False,
            False,
            False,
        ),  # gateway only when connected
        (
            {"native_home": PER_IDENTITY, "native_scheduler": True},
            "persistent",
            False,
            False,
            False,
        ),
    ],
)
def test_integration_plan_branches(
    extra: dict[str, Any], home: str, skills: bool, memory: bool, gateway: bool
) -> None:
    plan = resolve_runtime_integration(caps(**extra))
    assert plan.home.kind == home
    assert (plan.preserve_skills, plan.preserve_memory, plan.use_gateway_channels) == (
        skills,
        memory,
        gateway,
    )
    assert plan.co_run_scheduler is False


def test_native_resolves_like_wrapped_oneshot() -> None:
    claims: dict[str, Any] = {
        "native_home": PER_IDENTITY,
        "native_skills": "preserve",
        "native_memory": "none",
    }
    assert resolve_runtime_integration(
        caps(runtime_class="native", **claims)
    ) == resolve_runtime_integration(caps(runtime_class="wrapped-oneshot", **claims))


def test_registry_instances_factories_order_and_errors() -> None:
    registry = RuntimeRegistry()
    a = ScriptedAdapter()
    registry.register(a)
    registry.register_factory("fresh", ScriptedAdapter)
    registry.register(ScriptedAdapter())  # same id: replaced in place
    assert registry.ids() == ["scripted", "fresh"]
    assert registry.get("scripted") is not a
    assert registry.has("fresh")
    assert "fresh" in registry
    assert registry.create("fresh") is not registry.create("fresh")
    assert registry.create("scripted") is registry.get("scripted")
    with pytest.raises(ConfigError, match=r"unknown runtime 'nope' \(known: scripted, fresh\)"):
        registry.create("nope")
    registry.unregister("scripted")
    registry.unregister("scripted")
    assert registry.ids() == ["fresh"]
    assert registry.list() == []


@pytest.mark.parametrize(
    ("used", "window", "pct", "expected"),
    [
        (170_000, 200_000, 0.85, True),
        (200_000, 200_000, 0.85, True),
        (100_000, 200_000, 0.85, False),
        (10, 0, 0.85, False),
        (10, 100, 0.0, False),
        (85, 100, 0.85, True),
    ],
)
def test_should_rotate(used: int, window: int, pct: float, expected: bool) -> None:
    assert (
        should_rotate(RotationTrigger(tokens_used=used, context_window=window, threshold_pct=pct))
        is expected
    )
    assert DEFAULT_ROTATION.threshold_pct == 0.85
    assert DEFAULT_ROTATION.max_rotations == 3


def handoff(summary: str = "half done", reason: Any = "context_watermark") -> RotationHandoff:
    return RotationHandoff(
        task_id="t",
        predecessor_session_key="k",
        predecessor_session_id="s",
        reason=reason,
        last_summary=summary,
        tokens_used=123,
        rotation_index=2,
    )


def test_handoff_note_byte_for_byte() -> None:
    assert build_rotation_handoff_note(handoff()) == (
        "Session handoff (rotation): the previous session reached its context limit.\n"
        "- Reason: context_watermark\n"
        "- Rotation: #2\n"
        "- Last progress: half done\n"
        "Pick the task up from its current state; pull in only the context you actually need "
        "instead of replaying the full history."
    )
    note = build_rotation_handoff_note(handoff("", "max_turns"))
    assert note.splitlines()[0].endswith("its context limit.")
    assert "Last progress" not in note
    assert "- Reason: max_turns\n- Rotation: #2\nPick" in note


class Codec:
    def __init__(self, calls: list[str], fail: bool = False) -> None:
        self.calls = calls
        self.fail = fail

    async def serialize(self, run: RunHandle) -> str:
        self.calls.append("serialize")
        if self.fail:
            raise RuntimeError("codec broke")
        return "blob"

    async def restore(self, blob: str) -> RunHandle:
        raise NotImplementedError


class WithCodec(ScriptedAdapter):
    def __init__(self, codec: Codec | None) -> None:
        super().__init__()
        self._my_codec = codec

    @property
    def session_codec(self) -> Any:
        return self._my_codec


async def test_rotate_session_order_and_best_effort_steps() -> None:
    calls: list[str] = []
    current = RunHandle(adapter_id="scripted", session_key="k")
    successor = RunHandle(adapter_id="scripted", session_key="k:r1")
    records: list[RotationRecord] = []

    async def restart(note: str) -> RunHandle:
        calls.append("restart")
        assert note.startswith("Session handoff")
        return successor

    async def record(rec: RotationRecord) -> None:
        calls.append("record")
        records.append(rec)

    got = await rotate_session(
        adapter=WithCodec(Codec(calls)),
        current=current,
        handoff=handoff(),
        restart=restart,
        record_rotation=record,
    )
    assert got is successor
    assert calls == ["serialize", "restart", "record"]
    assert records[0].serialized == "blob"

    calls.clear()
    await rotate_session(
        adapter=WithCodec(Codec(calls, fail=True)),
        current=current,
        handoff=handoff(),
        restart=restart,
        record_rotation=record,
    )
    assert records[-1].serialized is None  # a failing codec does not stop the rotation

    calls.clear()
    await rotate_session(
        adapter=WithCodec(None),
        current=current,
        handoff=handoff(),
        restart=restart,
        record_rotation=record,
    )
    assert calls == ["restart", "record"]  # no codec: serialize not called

    def sync_boom(rec: RotationRecord) -> None:
        raise ValueError("sync")

    async def async_boom(rec: RotationRecord) -> None:
        raise ValueError("async")

    for boom in (sync_boom, async_boom):
        assert (
            await rotate_session(
                adapter=WithCodec(None),
                current=current,
                handoff=handoff(),
                restart=restart,
                record_rotation=boom,
            )
            is successor
        )

    async def failing_restart(note: str) -> RunHandle:
        raise ConfigError("cannot restart")

    calls.clear()
    with pytest.raises(ConfigError):
        await rotate_session(
            adapter=WithCodec(None),
            current=current,
            handoff=handoff(),
            restart=failing_restart,
            record_rotation=record,
        )
    assert calls == []  # record not called when restart fails
