"""The idle guard under a mock clock: idle reset, on_idle then grace, pending pulls kept."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from orchestrator.core import (
    DEFAULT_RUN_SILENT_TIMEOUT_S,
    IDLE_ABORT_GRACE_S,
    Done,
    EventFactory,
    EventQueue,
    QueueEventStream,
    RuntimeEvent,
    with_idle_timeout,
)


async def timed(items: list[tuple[float, str]], log: list[str] | None = None) -> AsyncIterator[str]:
    """A plain async generator: sleep, then yield, for each item (``log`` records each yield)."""
    for delay, value in items:
        await trio.sleep(delay)
        if log is not None:
            log.append(value)
        yield value


class Source:
    """An async iterator that records ``aclose`` (and can raise from it or from a pull)."""

    def __init__(
        self,
        items: list[tuple[float, str]],
        *,
        fail_with: Exception | None = None,
        aclose_raises: bool = False,
    ) -> None:
        self._items = list(items)
        self._fail_with = fail_with
        self._aclose_raises = aclose_raises
        self.closed = 0

    def __aiter__(self) -> Source:
        return self

    async def __anext__(self) -> str:
        if not self._items:
            if self._fail_with is not None:
                raise self._fail_with
            raise StopAsyncIteration
        delay, value = self._items.pop(0)
        await trio.sleep(delay)
        return value

    async def aclose(self) -> None:
        self.closed += 1
        if self._aclose_raises:
            raise RuntimeError("aclose broke")


def test_defaults() -> None:
    assert DEFAULT_RUN_SILENT_TIMEOUT_S == 30 * 60
    assert IDLE_ABORT_GRACE_S == 5


async def test_invalid_windows_are_rejected(autojump_clock: trio.testing.MockClock) -> None:
    for idle_s, grace_s in [(0, 1), (1, 0), (-1, 1)]:
        with pytest.raises(ValueError, match="positive"):
            async with with_idle_timeout(
                timed([]), idle_s=idle_s, grace_s=grace_s, on_idle=lambda: None
            ):
                pass  # pragma: no cover


async def test_idle_reset_not_a_total_budget(autojump_clock: trio.testing.MockClock) -> None:
    """5 events 20 ms apart with a 40 ms window never trip, though the run lasts 100 ms."""
    fired: list[float] = []
    began = trio.current_time()
    async with with_idle_timeout(
        timed([(0.02, str(i)) for i in range(5)]),
        idle_s=0.04,
        grace_s=0.01,
        on_idle=lambda: fired.append(trio.current_time()),
    ) as guarded:
        got = [v async for v in guarded]
        assert not guarded.idled
        assert not guarded.idle_fired.is_set()
    assert got == ["0", "1", "2", "3", "4"]
    assert fired == []
    assert trio.current_time() - began == pytest.approx(0.1)


async def test_on_idle_fires_then_grace_delivers_the_terminal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fired: list[float] = []
    began = trio.current_time()
    async with with_idle_timeout(
        timed([(0.0, "a"), (1.5, "terminal")]),
        idle_s=1.0,
        grace_s=5.0,
        on_idle=lambda: fired.append(trio.current_time() - began),
    ) as guarded:
        got: list[tuple[str, float]] = [(v, trio.current_time() - began) async for v in guarded]
        assert guarded.idled
        assert guarded.idle_fired.is_set()
    assert [v for v, _ in got] == ["a", "terminal"]
    assert got[1][1] == pytest.approx(1.5)  # delivered as soon as it came, inside the grace
    assert fired == [pytest.approx(1.0)]


async def test_async_on_idle_is_awaited_in_the_background(
    autojump_clock: trio.testing.MockClock,
) -> None:
    calls: list[str] = []

    async def abort() -> None:
        calls.append("abort started")
        await trio.sleep(0.1)
        calls.append("abort finished")

    async with with_idle_timeout(
        timed([(1.5, "done")]), idle_s=1.0, grace_s=1.0, on_idle=abort
    ) as guarded:
        assert [v async for v in guarded] == ["done"]
    assert calls == ["abort started", "abort finished"]


async def test_silent_through_grace_ends_with_nothing_more_yielded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    fired: list[bool] = []
    began = trio.current_time()
    async with with_idle_timeout(
        timed([(0.0, "a"), (100.0, "too late")], log),
        idle_s=1.0,
        grace_s=2.0,
        on_idle=lambda: fired.append(True),
    ) as guarded:
        got = [v async for v in guarded]
        ended_at = trio.current_time() - began
        with pytest.raises(StopAsyncIteration):  # stays ended
            await guarded.__anext__()
    assert got == ["a"]
    assert fired == [True]
    assert ended_at == pytest.approx(3.0)  # idle + grace
    assert log == ["a"]  # the late value was never produced: the source was closed


async def test_after_the_first_expiry_every_gap_is_bounded_by_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # idle 1.0, grace 0.5: "a" arrives inside the first grace, "b" 0.4 later (< grace),
    # "c" would come 0.6 later: shorter than idle but longer than grace, so the stream ends.
    began = trio.current_time()
    async with with_idle_timeout(
        timed([(1.2, "a"), (0.4, "b"), (0.6, "c")]),
        idle_s=1.0,
        grace_s=0.5,
        on_idle=lambda: None,
    ) as guarded:
        got = [v async for v in guarded]
    assert got == ["a", "b"]
    assert trio.current_time() - began >= 1.6 + 0.5


async def test_on_idle_fires_only_once(autojump_clock: trio.testing.MockClock) -> None:
    fired: list[bool] = []
    async with with_idle_timeout(
        timed([(1.5, "a"), (0.5, "b"), (0.9, "c")]),
        idle_s=1.0,
        grace_s=1.0,
        on_idle=lambda: fired.append(True),
    ) as guarded:
        assert [v async for v in guarded] == ["a", "b", "c"]
    assert fired == [True]


def _raise_sync() -> None:
    raise RuntimeError("abort failed (sync)")


async def _raise_async() -> None:
    await trio.sleep(0.1)
    raise RuntimeError("abort failed (async)")


@pytest.mark.parametrize("on_idle", [_raise_sync, _raise_async], ids=["sync", "async"])
async def test_an_on_idle_that_raises_is_swallowed(
    on_idle: Any, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    with caplog.at_level(logging.WARNING, logger="orchestrator.core.idle"):
        async with with_idle_timeout(
            timed([(1.5, "terminal")]), idle_s=1.0, grace_s=1.0, on_idle=on_idle
        ) as guarded:
            assert [v async for v in guarded] == ["terminal"]
    assert "on_idle raised" in caplog.text


async def test_a_wedged_on_idle_does_not_hang_the_consumer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started: list[float] = []
    began = trio.current_time()

    async def wedged() -> None:
        started.append(trio.current_time() - began)
        await trio.sleep_forever()

    async with with_idle_timeout(
        timed([(0.0, "a"), (1.5, "terminal"), (100.0, "never")]),
        idle_s=1.0,
        grace_s=1.0,
        on_idle=wedged,
    ) as guarded:
        got: list[tuple[str, float]] = [(v, trio.current_time() - began) async for v in guarded]
    assert started == [pytest.approx(1.0)]
    # the terminal arrived while on_idle was still stuck, and the stream ended a grace later
    assert got == [("a", 0.0), ("terminal", pytest.approx(1.5))]
    # leaving waited at most one more grace window for the wedged on_idle, then cancelled it
    assert trio.current_time() - began <= 1.5 + 1.0 + 1.0 + 1e-6


async def test_a_wedged_on_idle_with_a_silent_source_ends_in_bounded_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    began = trio.current_time()
    async with with_idle_timeout(
        timed([(100.0, "never")]), idle_s=1.0, grace_s=1.0, on_idle=trio.sleep_forever
    ) as guarded:
        assert [v async for v in guarded] == []
    assert trio.current_time() - began == pytest.approx(3.0)


async def test_pending_pull_of_a_cancel_safe_source_survives_the_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    make = EventFactory(run_id="r", clock=lambda: 1)
    q = EventQueue()
    closed: list[bool] = []
    stream = QueueEventStream(q, on_close=lambda: closed.append(True))
    fired: list[bool] = []

    async def late_terminal() -> None:
        await q.send(make.text_delta("early"))
        await trio.sleep(1.5)  # after the 1.0 idle expiry, inside the grace
        await q.send_batch(make.finish("aborted"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(late_terminal)
        async with with_idle_timeout(
            stream, idle_s=1.0, grace_s=5.0, on_idle=lambda: fired.append(True)
        ) as guarded:
            got: list[RuntimeEvent] = [e async for e in guarded]
    assert [e.kind for e in got] == ["text-delta", "done"]
    assert [e.seq for e in got] == [1, 2]
    assert isinstance(got[-1], Done)
    assert got[-1].reason == "aborted"
    assert fired == [True]
    assert closed == [True]


async def test_pending_pull_of_a_plain_generator_survives_the_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    fired: list[bool] = []
    async with with_idle_timeout(
        timed([(0.5, "a"), (1.7, "after-expiry"), (0.2, "b")], log),
        idle_s=1.0,
        grace_s=5.0,
        on_idle=lambda: fired.append(True),
    ) as guarded:
        got = [v async for v in guarded]
    # the value produced after the idle expiry is delivered, once, and nothing is skipped
    assert got == ["a", "after-expiry", "b"]
    assert log == got
    assert fired == [True]


async def test_source_exceptions_reach_the_consumer_from_a_generator(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def broken() -> AsyncIterator[str]:
        yield "a"
        await trio.sleep(0.5)
        raise ValueError("source broke")

    got: list[str] = []
    async with with_idle_timeout(broken(), idle_s=10, on_idle=lambda: None) as guarded:
        with pytest.raises(ValueError, match="source broke"):
            async for v in guarded:
                got.append(v)
    assert got == ["a"]


async def test_source_exceptions_reach_the_consumer_from_a_cancel_safe_source(
    autojump_clock: trio.testing.MockClock,
) -> None:
    class CancelSafe(Source):
        cancel_safe = True

    source = CancelSafe([(0.0, "a")], fail_with=KeyError("gone"))
    async with with_idle_timeout(source, idle_s=10, on_idle=lambda: None) as guarded:
        assert await guarded.__anext__() == "a"
        with pytest.raises(KeyError):
            await guarded.__anext__()
    assert source.closed == 1


async def test_source_exceptions_escape_the_block(autojump_clock: trio.testing.MockClock) -> None:
    async def broken() -> AsyncIterator[str]:
        raise ValueError("source broke")
        yield "never"

    with pytest.RaisesGroup(ValueError, allow_unwrapped=True, flatten_subgroups=True):
        async with with_idle_timeout(broken(), idle_s=10, on_idle=lambda: None) as guarded:
            async for _ in guarded:
                pass  # pragma: no cover


async def test_source_aclose_is_called_on_normal_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    source = Source([(0.0, "a"), (0.1, "b")])
    async with with_idle_timeout(source, idle_s=1.0, on_idle=lambda: None) as guarded:
        assert [v async for v in guarded] == ["a", "b"]
    assert source.closed == 1


async def test_source_aclose_is_called_when_the_consumer_breaks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    source = Source([(0.0, "a"), (0.1, "b"), (0.1, "c")])
    async with with_idle_timeout(source, idle_s=1.0, on_idle=lambda: None) as guarded:
        async for v in guarded:
            assert v == "a"
            break
    assert source.closed == 1


async def test_source_aclose_is_called_after_an_idle_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    source = Source([(0.0, "a"), (50.0, "late")])
    async with with_idle_timeout(source, idle_s=1.0, grace_s=1.0, on_idle=lambda: None) as g:
        assert [v async for v in g] == ["a"]
    assert source.closed == 1


async def test_source_aclose_is_called_when_the_consumer_raises(
    autojump_clock: trio.testing.MockClock,
) -> None:
    source = Source([(0.0, "a"), (0.1, "b")])
    with pytest.RaisesGroup(LookupError, allow_unwrapped=True, flatten_subgroups=True):
        async with with_idle_timeout(source, idle_s=1.0, on_idle=lambda: None) as guarded:
            async for _ in guarded:
                raise LookupError("consumer failed")
    assert source.closed == 1


async def test_a_failing_source_aclose_is_swallowed(autojump_clock: trio.testing.MockClock) -> None:
    source = Source([(0.0, "a")], aclose_raises=True)
    async with with_idle_timeout(source, idle_s=1.0, on_idle=lambda: None) as guarded:
        assert [v async for v in guarded] == ["a"]
    assert source.closed == 1


async def test_generator_source_is_finalized_on_break(
    autojump_clock: trio.testing.MockClock,
) -> None:
    finalized: list[bool] = []

    async def gen() -> AsyncIterator[int]:
        try:
            for i in range(100):
                await trio.sleep(0.01)
                yield i
        finally:
            finalized.append(True)

    async with with_idle_timeout(gen(), idle_s=1.0, on_idle=lambda: None) as guarded:
        async for v in guarded:
            if v == 3:
                break
    assert finalized == [True]


async def test_a_source_without_aclose_is_fine(autojump_clock: trio.testing.MockClock) -> None:
    class Bare:
        def __init__(self) -> None:
            self.left = 2

        def __aiter__(self) -> Bare:
            return self

        async def __anext__(self) -> int:
            if not self.left:
                raise StopAsyncIteration
            self.left -= 1
            await trio.sleep(0.1)
            return self.left

    async with with_idle_timeout(Bare(), idle_s=1.0, on_idle=lambda: None) as guarded:
        assert [v async for v in guarded] == [1, 0]
