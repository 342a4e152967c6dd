"""Prompt tiers byte for byte with the reference, plus properties over any text."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from tiers import CacheBreakpoint, PromptTiers, assemble_tiers, date_stamp, sort_tool_defs, utf8_len


def test_reference_examples() -> None:
    two = assemble_tiers(PromptTiers("S", "C", ""))
    assert two.prompt == "S\n\nC"
    assert two.cache_breakpoints == (CacheBreakpoint(1, "stable"), CacheBreakpoint(4, "context"))
    assert assemble_tiers(PromptTiers("S", "C", "V")).prompt == "S\n\nC\n\nV"
    empty_stable = assemble_tiers(PromptTiers("", "C", ""))
    assert empty_stable.stable_prefix == "\n\nC"  # the stable tier is never skipped
    assert empty_stable.cache_breakpoints[0] == CacheBreakpoint(0, "stable")
    spaces = assemble_tiers(PromptTiers("S", " ", ""))
    assert spaces.prompt == "S\n\n "  # whitespace is content
    only = assemble_tiers(PromptTiers("S", "", "V"))
    assert only.prompt == "S\n\nV"
    assert only.cache_breakpoints == (CacheBreakpoint(1, "stable"),)
    assert assemble_tiers(PromptTiers("é", "", "")).stable_prefix_bytes == 2


def test_lone_surrogates_count_three_bytes_like_javascript() -> None:
    assert utf8_len("\ud800") == 3
    assert assemble_tiers(PromptTiers("a\udfff", "C", "")).cache_breakpoints[1].offset == 4 + 2 + 1


def test_date_stamp_is_utc_and_date_only() -> None:
    tz = dt.timezone(dt.timedelta(hours=-5))
    assert date_stamp(dt.datetime(2026, 11, 22, 21, 30, tzinfo=tz)) == "2026-11-23"
    assert date_stamp(dt.datetime(2026, 1, 2, 3, 4)) == "2026-01-02"
    assert date_stamp(dt.date(999, 1, 5)) == "999-01-05"


def test_sort_tool_defs_is_stable_and_does_not_mutate() -> None:
    defs = [{"name": "b", "v": 1}, {"name": "a"}, {"name": "b", "v": 2}, {"name": "B"}]
    before = list(defs)
    assert [(d["name"], d.get("v")) for d in sort_tool_defs(defs)] == [
        ("B", None),
        ("a", None),
        ("b", 1),
        ("b", 2),
    ]
    assert defs == before


@given(stable=st.text(), context=st.text(), volatile=st.text())
def test_breakpoints_equal_utf8_lengths_for_any_text(
    stable: str, context: str, volatile: str
) -> None:
    out = assemble_tiers(PromptTiers(stable, context, volatile))
    enc = lambda s: len(s.encode("utf-8", "surrogatepass"))  # noqa: E731
    assert out.cache_breakpoints[0].offset == enc(stable)
    assert out.stable_prefix_bytes == enc(out.stable_prefix)
    if context:
        assert out.cache_breakpoints[1].offset == enc(stable) + 2 + enc(context)
    assert out.prompt.startswith(out.stable_prefix)
