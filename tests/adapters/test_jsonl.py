"""The line framer: arbitrary chunking gives the same frames as splitting the whole input."""

from __future__ import annotations

import itertools
import pickle
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters._jsonl import DEFAULT_MAX_LINE_BYTES, Frame, LineFramer
from orchestrator.core.errors import LineTooLongError, ProtocolError


def reference(data: bytes, cap: int) -> list[bytes | tuple[str, int]]:
    """Split the whole input at once; an over-cap line becomes ("too-long", cap)."""
    parts = data.split(b"\n")
    tail = parts.pop()
    if tail:
        parts.append(tail)
    out: list[bytes | tuple[str, int]] = []
    for line in parts:
        if len(line) > cap:
            out.append(("too-long", cap))
        else:
            out.append(line.removesuffix(b"\r"))
    return out


def normalize(frames: list[Frame]) -> list[bytes | tuple[str, int]]:
    return [f if isinstance(f, bytes) else ("too-long", f.limit) for f in frames]


def run(chunks: list[bytes], cap: int) -> list[Frame]:
    framer = LineFramer(cap)
    out: list[Frame] = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    out.extend(framer.close())
    assert framer.buffered == 0
    return out


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


# Inputs rich in the interesting bytes: newlines, carriage returns, and runs long enough to trip
# small caps.
_pieces = st.sampled_from([b"\n", b"\r", b"\r\n", b"a", b"{}", b"xyz" * 5, b"\xc3\xa9", b"\n\n"])
_inputs = st.lists(_pieces, max_size=60).map(b"".join)


@given(data=_inputs, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_any_chunking_gives_whole_input_lines(data: bytes, cuts: list[int]) -> None:
    for cap in (1, 3, 8, 16, DEFAULT_MAX_LINE_BYTES):
        assert normalize(run(chunked(data, cuts), cap)) == reference(data, cap)


@given(data=_inputs, cap=st.integers(min_value=1, max_value=40))
def test_byte_at_a_time_matches(data: bytes, cap: int) -> None:
    chunks = [data[i : i + 1] for i in range(len(data))]
    assert normalize(run(chunks, cap)) == reference(data, cap)


def test_crlf_split_across_chunks() -> None:
    assert run([b'{"a":1}\r', b'\n{"b":2}\r\n'], 100) == [b'{"a":1}', b'{"b":2}']


def test_lone_cr_inside_a_line_is_kept() -> None:
    assert run([b"a\rb\n", b"c\r\r\n"], 100) == [b"a\rb", b"c\r"]


def test_empty_lines_are_delivered() -> None:
    assert run([b"\n\na\n"], 100) == [b"", b"", b"a"]


def test_final_unterminated_line_is_returned_by_close() -> None:
    framer = LineFramer(100)
    assert list(framer.feed(b'{"a":1}\n{"trunc')) == [b'{"a":1}']
    assert framer.buffered == len(b'{"trunc')
    assert list(framer.close()) == [b'{"trunc']
    assert list(framer.close()) == []


def test_too_long_line_is_reported_in_place_and_following_lines_survive() -> None:
    framer = LineFramer(10)
    out: list[Frame] = []
    out += framer.feed(b"ok\n" + b"x" * 6)
    out += framer.feed(b"y" * 6)  # cap trips here: reported at once, not at the newline
    assert len(out) == 2
    assert isinstance(out[1], LineTooLongError)
    out += framer.feed(b"z" * 1000)  # still discarding; buffer stays empty
    assert framer.buffered == 0
    out += framer.feed(b"zz\nnext\nla")
    out += framer.close()
    assert out[0] == b"ok"
    assert out[2:] == [b"next", b"la"]
    err = out[1]
    assert isinstance(err, LineTooLongError)
    assert isinstance(err, ProtocolError)
    assert err.limit == 10
    assert err.line.startswith("xxxxxx")


def test_error_carries_adapter_and_is_picklable() -> None:
    framer = LineFramer(4, adapter="codex", session_key="s1")
    (err,) = framer.feed(b"toolong\n")
    assert isinstance(err, LineTooLongError)
    again = pickle.loads(pickle.dumps(err))
    assert (again.limit, again.adapter, again.session_key) == (4, "codex", "s1")


def test_too_long_final_line_reported_once() -> None:
    out = run([b"a\n", b"b" * 50], 10)
    assert out[0] == b"a"
    assert len(out) == 2
    assert isinstance(out[1], LineTooLongError)


def test_line_exactly_at_cap_passes() -> None:
    assert run([b"x" * 10 + b"\n"], 10) == [b"x" * 10]
    assert run([b"x" * 9 + b"\r\n"], 10) == [b"x" * 9]
    assert isinstance(run([b"x" * 10 + b"\r\n"], 10)[0], LineTooLongError)  # the \r counts


def test_rejects_nonpositive_cap() -> None:
    with pytest.raises(ValueError, match="positive"):
        LineFramer(0)


def test_framing_is_fast() -> None:
    """Sanity bound, far below the real rate (~5M lines/s): framing must not be per-byte."""
    line = b'{"type":"stream_event","event":{"delta":{"type":"text_delta","text":"' + b"x" * 200
    data = (line + b'"}}}\n') * 20_000
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    framer = LineFramer()
    t0 = time.perf_counter()
    n = sum(len(framer.feed(c)) for c in chunks)
    elapsed = time.perf_counter() - t0
    assert n == 20_000
    assert elapsed < 0.5, f"{n / elapsed:,.0f} lines/s"
