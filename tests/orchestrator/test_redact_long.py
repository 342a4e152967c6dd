"""Redaction of long texts takes shortcuts (substring tests before the known-secret regex, only
the end searched for an undecided tail); they give exactly what the plain regex searches give."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core import EventFactory, TextDelta
from orchestrator.core.redact import (
    _KNOWN,
    REDACTED,
    StreamRedactor,
    _mentions_known,
    _undecided_tail,
    _variants,
    redact_text,
    register_secret,
)

SECRETS = ("¤zq9-Fast-Path-Secret-0001", "¤Hq7/fast+path==token-XY")
"""Registered for the whole session (the known secrets are process-wide): they start with a
character no other test writes, so no other test's text is held back or redacted by them."""
for _secret in SECRETS:
    register_secret(_secret)

_PIECES: list[str] = [
    *"sk- aZ_9/+=\n¤",
    "sk",
    "sk-",
    "key=",
    *SECRETS,
    *(s[:i] for s in SECRETS for i in range(1, len(s))),
    *(v for s in SECRETS for v in sorted(_variants(s))),  # every encoding we redact
]


def _joined(filler: str, parts: list[str]) -> str:
    return filler + "".join(parts)


_TEXTS: st.SearchStrategy[str] = st.builds(
    _joined,
    st.text(alphabet="ab -_\n.sk", max_size=400),
    st.lists(
        st.one_of(st.sampled_from(_PIECES), st.text(alphabet="sk-_aZ9", min_size=1, max_size=80)),
        max_size=30,
    ),
)
"""Long texts (past the shortcut's threshold) and short ones, with secrets whole, cut and
encoded, and long runs of key characters (an ``sk-…`` tail may start far from the end)."""


@settings(max_examples=600, deadline=None)
@given(_TEXTS)
def test_the_undecided_tail_of_any_text_is_what_the_regex_search_gives(text: str) -> None:
    regex, _ = _KNOWN.tail
    match = regex.search(text)
    assert _undecided_tail(text) == (len(text) - match.start() if match else 0)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab s-\n", min_size=100, max_size=300),  # a long text …
    st.text(alphabet="sk-_aZ9", min_size=30, max_size=120),  # … ending in a long key run
    st.sampled_from(["", " ", "s", "/"]),
)
def test_an_sk_key_tail_far_from_the_end_is_found(before: str, run: str, end: str) -> None:
    text = before + "sk-" + run + end
    regex, _ = _KNOWN.tail
    match = regex.search(text)
    assert _undecided_tail(text) == (len(text) - match.start() if match else 0)


@settings(max_examples=600, deadline=None)
@given(_TEXTS)
def test_the_substring_prefilter_says_yes_exactly_when_the_regex_matches(text: str) -> None:
    regex = _KNOWN.regex
    assert regex is not None
    assert _mentions_known(text) == (regex.search(text) is not None)


def test_a_secret_deep_in_a_long_text_is_redacted_whole() -> None:
    encoded = base64.b64encode(b"user:" + SECRETS[0].encode()).decode()
    text = "x " * 500 + SECRETS[1] + " y " * 300 + encoded + "\n"
    out = redact_text(text)
    assert SECRETS[1] not in out and encoded not in out
    assert out.count(REDACTED) == 2 and out.startswith("x x ")


def test_a_secret_split_after_a_long_delta_is_held_and_redacted_whole() -> None:
    make = EventFactory(run_id="r")
    secret = SECRETS[0]
    redactor = StreamRedactor()
    out = redactor.push_all(
        [make.text_delta("word " * 100 + secret[:7]), make.text_delta(secret[7:] + " done")]
    )
    out += redactor.flush()
    text = "".join(e.text for e in out if isinstance(e, TextDelta))
    assert secret[:7] not in text and text.endswith(f"{REDACTED} done")
