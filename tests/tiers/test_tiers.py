"""Prompt tiers byte for byte with the original executor, plus properties over any text."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import time
from collections.abc import Iterator

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiers import (
    SEPARATOR,
    AssembledPrompt,
    CacheBreakpoint,
    PromptTiers,
    assemble_tiers,
    date_stamp,
    sort_tool_defs,
    utf8_len,
)

# -- assemble_tiers: the original executor's examples ----------------------------------------------------


def test_stable_and_context() -> None:
    out = assemble_tiers(PromptTiers(stable="S", context="C", volatile=""))
    assert out == AssembledPrompt(
        prompt="S\n\nC",
        stable_prefix="S\n\nC",
        stable_prefix_bytes=4,
        cache_breakpoints=(CacheBreakpoint(1, "stable"), CacheBreakpoint(4, "context")),
    )


def test_all_three() -> None:
    out = assemble_tiers(PromptTiers("S", "C", "V"))
    assert out.prompt == "S\n\nC\n\nV"
    assert out.stable_prefix == "S\n\nC"
    assert out.cache_breakpoints == (CacheBreakpoint(1, "stable"), CacheBreakpoint(4, "context"))
    assert SEPARATOR == "\n\n"


def test_empty_stable_is_never_skipped() -> None:
    out = assemble_tiers(PromptTiers("", "C", ""))
    assert out.stable_prefix == "\n\nC"
    assert out.prompt.startswith("\n\n")
    assert out.cache_breakpoints == (CacheBreakpoint(0, "stable"), CacheBreakpoint(3, "context"))
    everything_empty_but_volatile = assemble_tiers(PromptTiers("", "", "V"))
    assert everything_empty_but_volatile.prompt == "\n\nV"
    assert everything_empty_but_volatile.cache_breakpoints == (CacheBreakpoint(0, "stable"),)


def test_empty_stable_gives_offset_zero() -> None:
    for tiers in (PromptTiers(), PromptTiers("", "", "V"), PromptTiers("", "C", "V")):
        assert assemble_tiers(tiers).cache_breakpoints[0] == CacheBreakpoint(0, "stable")
    nothing = assemble_tiers(PromptTiers())
    assert (nothing.prompt, nothing.stable_prefix, nothing.stable_prefix_bytes) == ("", "", 0)


def test_whitespace_counts_as_content() -> None:
    out = assemble_tiers(PromptTiers("S", " ", "\n"))
    assert out.prompt == "S\n\n \n\n\n"
    assert out.cache_breakpoints == (CacheBreakpoint(1, "stable"), CacheBreakpoint(4, "context"))


def test_empty_context_or_volatile_is_skipped() -> None:
    out = assemble_tiers(PromptTiers("S", "", "V"))
    assert out.prompt == "S\n\nV"
    assert out.stable_prefix == "S"
    assert out.cache_breakpoints == (CacheBreakpoint(1, "stable"),)
    assert assemble_tiers(PromptTiers("S", "", "")).prompt == "S"


def test_offsets_are_utf8_bytes_not_characters() -> None:
    out = assemble_tiers(PromptTiers("é", "日本", "🙂"))
    assert out.cache_breakpoints == (
        CacheBreakpoint(2, "stable"),
        CacheBreakpoint(2 + 2 + 6, "context"),
    )
    assert out.stable_prefix_bytes == 10
    assert out.prompt.encode()[: out.stable_prefix_bytes].decode() == out.stable_prefix


def test_lone_surrogates_count_three_bytes_like_javascript() -> None:
    assert utf8_len("\ud800") == 3
    assert utf8_len("a\udfffb") == 5
    out = assemble_tiers(PromptTiers("a\udfff", "C", ""))
    assert out.cache_breakpoints == (CacheBreakpoint(4, "stable"), CacheBreakpoint(7, "context"))
    assert out.prompt == "a\udfff\n\nC"  # the text itself is returned unchanged


def test_results_are_frozen() -> None:
    out = assemble_tiers(PromptTiers("S"))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        out.prompt = "x"  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        out.cache_breakpoints[0].offset = 3  # type: ignore[misc]


# -- date_stamp ------------------------------------------------------------------------------------


@pytest.fixture
def far_east_local_time() -> Iterator[None]:
    """Local time UTC+14, so a naive datetime read as local time would give another date."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Etc/GMT-14"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        # 21:30 at UTC-5 is 02:30 the next day in UTC
        (
            dt.datetime(2026, 11, 22, 21, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
            "2026-11-23",
        ),
        # 00:30 at UTC+2 is 22:30 the previous day in UTC
        (dt.datetime(2026, 1, 1, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))), "2025-12-31"),
        (dt.datetime(2026, 3, 1, 23, 59, 59, tzinfo=dt.UTC), "2026-03-01"),
        (dt.datetime(2024, 2, 29, 12, tzinfo=dt.UTC), "2024-02-29"),
    ],
)
def test_date_stamp_uses_the_utc_date(moment: dt.datetime, expected: str) -> None:
    assert date_stamp(moment) == expected


def test_naive_datetime_is_taken_as_utc(far_east_local_time: None) -> None:
    assert date_stamp(dt.datetime(2026, 1, 2, 23, 59)) == "2026-01-02"
    assert date_stamp(dt.datetime(2026, 1, 2, 0, 1)) == "2026-01-02"


def test_date_input_and_unpadded_year() -> None:
    assert date_stamp(dt.date(2026, 7, 4)) == "2026-07-04"
    assert date_stamp(dt.date(999, 1, 5)) == "999-01-05"
    assert date_stamp(dt.datetime(999, 1, 5, 8, tzinfo=dt.UTC)) == "999-01-05"
    assert date_stamp(dt.date(1, 1, 1)) == "1-01-01"
    assert date_stamp(dt.date(9999, 12, 31)) == "9999-12-31"


def test_date_stamp_never_carries_time() -> None:
    a = date_stamp(dt.datetime(2026, 5, 6, 0, 0, tzinfo=dt.UTC))
    b = date_stamp(dt.datetime(2026, 5, 6, 23, 59, 59, 999999, tzinfo=dt.UTC))
    assert a == b == "2026-05-06"


# -- sort_tool_defs --------------------------------------------------------------------------------


def test_sort_tool_defs_is_stable_code_point_ordered_and_non_mutating() -> None:
    defs = [
        {"name": "b", "v": 1},
        {"name": "a"},
        {"name": "b", "v": 2},
        {"name": "B"},
        {"name": "_x"},
        {"name": "é"},
    ]
    before = [dict(d) for d in defs]
    out = sort_tool_defs(defs)
    assert [(d["name"], d.get("v")) for d in out] == [
        ("B", None),
        ("_x", None),
        ("a", None),
        ("b", 1),
        ("b", 2),
        ("é", None),
    ]
    assert defs == before  # not mutated, same order
    assert out is not defs
    assert all(any(o is d for d in defs) for o in out)  # the same objects, not copies


def test_sort_tool_defs_returns_a_new_list_and_takes_any_iterable() -> None:
    defs = [{"name": "a"}, {"name": "b"}]
    out = sort_tool_defs(defs)
    assert out == defs
    assert out is not defs
    assert sort_tool_defs(d for d in reversed(defs)) == defs
    assert sort_tool_defs([]) == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=3), st.integers()), max_size=20))
def test_sort_tool_defs_matches_a_stable_sort_by_name(pairs: list[tuple[str, int]]) -> None:
    defs = [{"name": n, "i": i} for i, (n, _) in enumerate(pairs)]
    out = sort_tool_defs(defs)
    assert [d["name"] for d in out] == sorted(d["name"] for d in defs)
    for a, b in itertools.pairwise(out):
        if a["name"] == b["name"]:
            assert a["i"] < b["i"]


# -- properties over any text, lone surrogates included --------------------------------------------


def utf8_bytes(text: str) -> int:
    """UTF-8 length computed by hand: 1-4 bytes per code point, 3 for a lone surrogate."""
    total = 0
    for ch in text:
        cp = ord(ch)
        total += 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    return total


any_text = st.text(st.characters() | st.integers(0xD800, 0xDFFF).map(chr))


@settings(max_examples=200, deadline=None)
@given(stable=any_text, context=any_text, volatile=any_text)
def test_breakpoints_equal_the_utf8_lengths_of_the_pieces(
    stable: str, context: str, volatile: str
) -> None:
    out = assemble_tiers(PromptTiers(stable, context, volatile))
    expected = [CacheBreakpoint(utf8_bytes(stable), "stable")]
    if context:
        expected.append(CacheBreakpoint(utf8_bytes(stable) + 2 + utf8_bytes(context), "context"))
    assert out.cache_breakpoints == tuple(expected)
    assert out.stable_prefix_bytes == utf8_len(out.stable_prefix) == utf8_bytes(out.stable_prefix)
    assert out.cache_breakpoints[-1].offset == out.stable_prefix_bytes
    assert out.prompt.startswith(out.stable_prefix)
    pieces = [stable, *([context] if context else []), *([volatile] if volatile else [])]
    assert out.prompt == SEPARATOR.join(pieces)


@settings(max_examples=200, deadline=None)
@given(any_text)
def test_utf8_len_never_raises_and_matches_the_encoder(text: str) -> None:
    n = utf8_len(text)
    assert n == utf8_bytes(text)
    if not any(0xD800 <= ord(c) < 0xE000 for c in text):
        assert n == len(text.encode("utf-8"))
    else:
        # JavaScript's encoder writes each lone surrogate as U+FFFD: same byte count
        replaced = "".join("\ufffd" if 0xD800 <= ord(c) < 0xE000 else c for c in text)
        assert n == len(replaced.encode("utf-8"))
