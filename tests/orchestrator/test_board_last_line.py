"""The card's last line, found from the end of the text (no split of the whole tail per delta),
is the last non-empty line of the text split as the page splits it (``\\r\\n``, ``\\r``, ``\\n``)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.board.projection import LAST_LINE_CHARS, _last_line  # pyright: ignore[reportPrivateUsage]

_SPLIT = re.compile(r"\r\n|\r|\n")


def reference(tail: str) -> str:
    lines = [line for line in _SPLIT.split(tail) if line.strip()]
    return lines[-1][-LAST_LINE_CHARS:] if lines else ""


@given(
    st.text(alphabet=st.sampled_from(["a", "b", " ", "\t", "\n", "\r", "é", "\u2028"]), max_size=60)
)
def test_the_last_line_is_the_splits_last_non_empty_line(tail: str) -> None:
    assert _last_line(tail) == reference(tail)


def test_a_long_last_line_is_capped_from_the_left() -> None:
    tail = "first\n" + "x" * (LAST_LINE_CHARS + 50) + "\r\n \n"
    assert _last_line(tail) == "x" * LAST_LINE_CHARS
