"""Session rotation: the watermark, the handoff note byte for byte, rotate_session's order."""

from __future__ import annotations

import logging
from typing import Any, cast

import attrs
import pytest

from orchestrator.core import RunHandle, RuntimeAdapter
from orchestrator.engine import (
    DEFAULT_ROTATION,
    RotationHandoff,
    RotationRecord,
    RotationTrigger,
    build_rotation_handoff_note,
    rotate_session,
    should_rotate,
)

# -- should_rotate -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "window", "pct", "expected"),
    [
        pytest.param(170_000, 200_000, 0.85, True, id="170k/200k@0.85"),
        pytest.param(200_000, 200_000, 0.85, True, id="200k/200k"),
        pytest.param(100_000, 200_000, 0.85, False, id="100k/200k"),
        pytest.param(169_999, 200_000, 0.85, False, id="just-below"),
        pytest.param(250_000, 200_000, 0.85, True, id="over-the-window"),
        pytest.param(85, 100, 0.85, True, id="inclusive"),
        pytest.param(10, 0, 0.85, False, id="window-0"),
        pytest.param(10, -5, 0.85, False, id="window-negative"),
        pytest.param(10, 100, 0.0, False, id="pct-0"),
        pytest.param(100, 100, -0.5, False, id="pct-negative"),
        pytest.param(0, 100, 0.85, False, id="nothing-used"),
    ],
)
def test_should_rotate(used: int, window: int, pct: float, expected: bool) -> None:
    trigger = RotationTrigger(tokens_used=used, context_window=window, threshold_pct=pct)
    assert should_rotate(trigger) is expected


def test_default_rotation() -> None:
    assert DEFAULT_ROTATION.threshold_pct == 0.85
    assert DEFAULT_ROTATION.max_rotations == 3
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        DEFAULT_ROTATION.max_rotations = 4  # type: ignore[misc]


# -- the handoff note ------------------------------------------------------------------------------

LINE_1 = "Session handoff (rotation): the previous session reached its context limit."
LAST_LINE = (
    "Pick the task up from its current state; pull in only the context you actually need "
    "instead of replaying the full history."
)


def handoff(
    summary: str = "wrote the parser; tests pending",
    reason: Any = "context_watermark",
    index: int = 2,
) -> RotationHandoff:
    return RotationHandoff(
        task_id="task-42",
        predecessor_session_key="runtime:native:task:task-42",
        predecessor_session_id="sess-abc",
        reason=reason,
        last_summary=summary,
        tokens_used=171_234,
        rotation_index=index,
    )


def test_handoff_note_with_last_summary_byte_for_byte() -> None:
    note = build_rotation_handoff_note(handoff())
    assert note == (
        "Session handoff (rotation): the previous session reached its context limit.\n"
        "- Reason: context_watermark\n"
        "- Rotation: #2\n"
        "- Last progress: wrote the parser; tests pending\n"
        "Pick the task up from its current state; pull in only the context you actually need "
        "instead of replaying the full history."
    )
    assert note.encode() == (
        b"Session handoff (rotation): the previous session reached its context limit.\n"
        b"- Reason: context_watermark\n- Rotation: #2\n"
        b"- Last progress: wrote the parser; tests pending\n" + LAST_LINE.encode()
    )


def test_handoff_note_without_last_summary_drops_the_line() -> None:
    note = build_rotation_handoff_note(handoff(summary="", reason="max_turns", index=1))
    assert note == f"{LINE_1}\n- Reason: max_turns\n- Rotation: #1\n{LAST_LINE}"
    assert "Last progress" not in note
    assert "\n\n" not in note


@pytest.mark.parametrize("reason", ["max_turns", "context_watermark"])
def test_line_one_says_context_limit_for_every_reason(reason: str) -> None:
    lines = build_rotation_handoff_note(handoff(reason=reason)).split("\n")
    assert lines[0] == LINE_1
    assert lines[1] == f"- Reason: {reason}"
    assert lines[-1] == LAST_LINE
    assert len(lines) == 5


def test_handoff_note_never_renders_ids_or_token_counts() -> None:
    note = build_rotation_handoff_note(handoff())
    for hidden in ("task-42", "runtime:native", "sess-abc", "171234", "171_234", "171,234"):
        assert hidden not in note
    assert not note.endswith("\n")


def test_whitespace_summary_is_content() -> None:
    note = build_rotation_handoff_note(handoff(summary=" "))
    assert "- Last progress:  \n" in note


# -- rotate_session --------------------------------------------------------------------------------


@attrs.define
class Codec:
    calls: list[str]
    fail: bool = False
    seen: list[RunHandle] = attrs.field(factory=list[RunHandle])

    async def serialize(self, run: RunHandle) -> str:
        self.calls.append("serialize")
        self.seen.append(run)
        if self.fail:
            raise RuntimeError("codec broke")
        return '{"sessionKey":"k","sessionId":"native-1"}'

    async def restore(self, blob: str) -> RunHandle:
        raise AssertionError("restore is never called by rotation")


@attrs.define
class Adapter:
    """Only ``session_codec`` is read by rotate_session."""

    session_codec: Codec | None
    id: str = "fake"


def adapter(codec: Codec | None) -> RuntimeAdapter:
    return cast(RuntimeAdapter, Adapter(codec))


CURRENT = RunHandle(adapter_id="fake", session_key="runtime:fake:task:t", run_id="r0")
SUCCESSOR = RunHandle(adapter_id="fake", session_key="runtime:fake:task:t:r1")


def recorder(calls: list[str], notes: list[str]) -> Any:
    async def restart(note: str) -> RunHandle:
        calls.append("restart")
        notes.append(note)
        return SUCCESSOR

    return restart


async def test_rotate_session_runs_serialize_restart_record_in_order() -> None:
    calls: list[str] = []
    notes: list[str] = []
    records: list[RotationRecord] = []
    codec = Codec(calls)

    async def record(rec: RotationRecord) -> None:
        calls.append("record")
        records.append(rec)

    h = handoff()
    got = await rotate_session(
        adapter=adapter(codec),
        current=CURRENT,
        handoff=h,
        restart=recorder(calls, notes),
        record_rotation=record,
    )
    assert got is SUCCESSOR
    assert calls == ["serialize", "restart", "record"]
    assert codec.seen == [CURRENT]
    assert notes == [build_rotation_handoff_note(h)]
    assert records == [
        RotationRecord(
            serialized='{"sessionKey":"k","sessionId":"native-1"}',
            handoff=h,
            successor=SUCCESSOR,
            note=notes[0],
            predecessor=CURRENT,
        )
    ]
    assert records[0].successor is SUCCESSOR
    assert records[0].note_bytes == len(notes[0].encode())


async def test_sync_record_rotation_is_called() -> None:
    calls: list[str] = []
    records: list[RotationRecord] = []

    def record(rec: RotationRecord) -> None:
        calls.append("record")
        records.append(rec)

    await rotate_session(
        adapter=adapter(Codec(calls)),
        current=CURRENT,
        handoff=handoff(),
        restart=recorder(calls, []),
        record_rotation=record,
    )
    assert calls == ["serialize", "restart", "record"]
    assert records[0].serialized is not None


async def test_codec_failure_gives_none_and_the_rotation_proceeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []
    records: list[RotationRecord] = []

    async def record(rec: RotationRecord) -> None:
        calls.append("record")
        records.append(rec)

    with caplog.at_level(logging.WARNING, logger="orchestrator.engine.rotation"):
        got = await rotate_session(
            adapter=adapter(Codec(calls, fail=True)),
            current=CURRENT,
            handoff=handoff(),
            restart=recorder(calls, []),
            record_rotation=record,
        )
    assert got is SUCCESSOR
    assert calls == ["serialize", "restart", "record"]
    assert records[0].serialized is None
    assert "serialize" in caplog.text


async def test_without_a_codec_serialize_is_not_called_and_serialized_is_none() -> None:
    calls: list[str] = []
    records: list[RotationRecord] = []

    async def record(rec: RotationRecord) -> None:
        calls.append("record")
        records.append(rec)

    got = await rotate_session(
        adapter=adapter(None),
        current=CURRENT,
        handoff=handoff(),
        restart=recorder(calls, []),
        record_rotation=record,
    )
    assert got is SUCCESSOR
    assert calls == ["restart", "record"]
    assert records[0].serialized is None


async def test_without_record_rotation_the_successor_is_returned() -> None:
    calls: list[str] = []
    got = await rotate_session(
        adapter=adapter(Codec(calls)),
        current=CURRENT,
        handoff=handoff(),
        restart=recorder(calls, []),
    )
    assert got is SUCCESSOR
    assert calls == ["serialize", "restart"]


async def test_restart_errors_propagate_and_record_is_not_called() -> None:
    calls: list[str] = []

    class RestartFailed(Exception):
        pass

    async def restart(note: str) -> RunHandle:
        calls.append("restart")
        raise RestartFailed("cannot start the successor")

    async def record(rec: RotationRecord) -> None:
        calls.append("record")

    with pytest.raises(RestartFailed, match="cannot start the successor"):
        await rotate_session(
            adapter=adapter(Codec(calls)),
            current=CURRENT,
            handoff=handoff(),
            restart=restart,
            record_rotation=record,
        )
    assert calls == ["serialize", "restart"]


def _sync_boom(rec: RotationRecord) -> None:
    raise ValueError("sync record failed")


async def _async_boom(rec: RotationRecord) -> None:
    raise ValueError("async record failed")


@pytest.mark.parametrize("record", [_sync_boom, _async_boom], ids=["sync", "async"])
async def test_record_rotation_failures_are_swallowed(
    record: Any, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    with caplog.at_level(logging.WARNING, logger="orchestrator.engine.rotation"):
        got = await rotate_session(
            adapter=adapter(Codec(calls)),
            current=CURRENT,
            handoff=handoff(),
            restart=recorder(calls, []),
            record_rotation=record,
        )
    assert got is SUCCESSOR
    assert calls == ["serialize", "restart"]
    assert "record_rotation" in caplog.text
