"""Secret redaction: by value (every known key, in its common encodings) and by pattern.

One process-wide set of *known secrets* feeds every redaction. Values get in three ways:

* :func:`register_secret` — a key handed to ringleader in code;
* :func:`register_env_secrets` — the secret-looking variables (name containing ``KEY``,
  ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``CREDENTIAL`` or ``AUTH``) of an
  environment. The shared child-process driver registers every child's environment, so a key
  given to a runtime CLI is known before the runtime can print it; the
  :class:`~orchestrator.engine.runner.Runner` registers our own environment and each task's ``env``
  (configuration names keys by environment variable, so this covers every configured key);
* nothing else: values shorter than :data:`MIN_SECRET_CHARS` are ignored (they would redact
  ordinary words).

Each value is matched raw, base64-encoded (standard and URL-safe, at any alignment inside a longer
base64 text, so ``Basic <base64(user:key)>`` is caught), percent-encoded (``%2F`` and ``%2f``,
``+`` for space) and JSON-escaped. The patterns (``sk-…``, ``Bearer …``, ``api_key=…`` shapes)
catch keys nobody told us about.

:func:`redact_text` does both; :func:`redact_event` applies it to every free-text field of an
event. The run's actor passes every event through :class:`StreamRedactor` (one per run) before
the event log and any subscriber see it — the one choke point — and it also carries text across
``text-delta`` boundaries so a key streamed in pieces is redacted whole.
"""

from __future__ import annotations

import base64
import json
import re
import string
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

from pydantic import BaseModel

from orchestrator.core.events import RuntimeEvent, TextDelta, with_text

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "StreamRedactor",
    "known_secret_count",
    "redact_event",
    "redact_text",
    "register_env_secrets",
    "register_secret",
]

REDACTED: Final = "[REDACTED]"
MIN_SECRET_CHARS: Final = 8
"""Shorter values are not registered (they would redact ordinary words)."""

_SECRET_NAME = re.compile(r"(?i)(key|token|secret|passw(or)?d|credential|auth)")
_NOT_SECRET_NAMES = frozenset({"SSH_AUTH_SOCK", "XAUTHORITY", "GPG_AGENT_INFO"})

_PATTERNS = (
    # provider keys: sk-ant-…, sk-proj-…, sk-…, OpenRouter sk-or-…
    (re.compile(r"sk-[A-Za-z0-9_\-]{8,}"), REDACTED),
    # bearer tokens in headers or logs
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*"), r"\1" + REDACTED),
    # key=value / "key": "value" shapes: the value goes, the name stays
    (
        re.compile(
            r"(?i)((?:api[_-]?key|auth[_-]?token|access[_-]?token|secret|password|x-api-key)"
            r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{4,}"
        ),
        r"\1" + REDACTED,
    ),
)
# Token formats printed by tools, from their issuers' documented shapes (the formats Yelp's
# detect-secrets plugins and gitleaks' rules look for; written here, not copied). Each pattern
# starts with a literal (the regex engine then searches for it, not tries every position) and
# runs only when that literal is in the text: plain ``in`` tests, tens of ns on a delta.
_GITHUB = re.compile(r"gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}")
"""GitHub: ghp_/gho_/ghu_/ghs_/ghr_ + 36+ base62 (classic, OAuth, app), github_pat_ (fine-grained)."""
_AWS_KEY_ID = re.compile(r"A(?:KIA|SIA)[A-Z2-7]{16}(?![A-Za-z0-9])")
"""AWS access key ids: AKIA (long-term) or ASIA (temporary) + 16 upper-case base32."""
_SLACK = re.compile(r"xox[abeprs]-[A-Za-z0-9-]{10,}")
"""Slack tokens: xoxb- (bot), xoxp- (user), xoxa-/xoxr-/xoxs-/xoxe-."""
_SLACK_HOOK = re.compile(r"hooks\.slack\.com/services/[A-Za-z0-9/_]{20,}")
_STRIPE = re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,}")
"""Stripe secret (sk_) and restricted (rk_) keys; publishable pk_ keys are public."""
_GOOGLE = re.compile(r"AIza[0-9A-Za-z_\-]{35}")
"""Google API keys: AIza + 35."""
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
"""JSON Web Tokens: three base64url parts, the first two JSON objects ({" → eyJ)."""
_PEM = re.compile(
    r"-----BEGIN[A-Z ]{0,20} PRIVATE KEY-----"
    r"(?:[\s\S]*?-----END[A-Z ]{0,20} PRIVATE KEY-----|[\s\S]*\Z)"
)
"""PEM private keys (RSA, EC, OpenSSH, PKCS#8 …): the whole block (a truncated one: to the end)."""


def _redact_formats(text: str) -> str:
    """``text`` with every token of a known format (above) replaced. Each test is gated by a
    one-character scan (``memchr``: a fraction of a ns a character) so ordinary text pays
    almost nothing for the formats it cannot hold."""
    if "_" in text:  # GitHub, Stripe
        if "github_pat_" in text or ("gh" in text and _GITHUB_HINT.search(text)):
            text = _GITHUB.sub(REDACTED, text)
        if "k_live_" in text or "k_test_" in text:
            text = _STRIPE.sub(REDACTED, text)
    if "A" in text:  # AWS key ids, Google keys
        if "AKIA" in text or "ASIA" in text:
            text = _AWS_KEY_ID.sub(REDACTED, text)
        if "AIza" in text:
            text = _GOOGLE.sub(REDACTED, text)
    if "-" in text:  # Slack tokens, PEM blocks
        if "xox" in text:
            text = _SLACK.sub(REDACTED, text)
        if "-----BEGIN" in text:
            text = _PEM.sub(REDACTED, text)
    if "J" in text and "eyJ" in text:
        text = _JWT.sub(REDACTED, text)
    return text


_GITHUB_HINT = re.compile(r"gh[pousr]_")


_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,256}:)([^\s@/]{1,256})(@)")
"""``scheme://user:password@host`` (a ``DATABASE_URL``, a git remote): the password goes."""
_SK_TAIL = r"sk?\Z|sk-[A-Za-z0-9_\-]*\Z"
_KEY_CHARS = string.ascii_letters + string.digits + "_-"
"""What may follow ``sk-`` in a key (the class in ``_SK_TAIL`` and the ``sk-…`` pattern)."""

_LONG_TEXT = 128
"""Above this many characters a text is first checked for known secrets with plain substring
tests (the regex alternation over every variant tries each at every position), and only its
end is searched for an undecided tail. A 10 KB tool output with one known secret: redaction
100 → 44 µs, the tail 13 → 0.6 µs. On shorter texts the one regex search is cheaper."""


def _base64_cores(value: bytes) -> set[str]:
    """The part of ``base64(x + value + y)`` that depends on ``value`` alone, for each of the
    three alignments of ``value`` inside a longer byte string."""
    cores: set[str] = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + value).decode().rstrip("=")
        start = (0, 2, 3)[pad]
        end = len(encoded) - (1 if (pad + len(value)) % 3 else 0)
        core = encoded[start:end]
        if len(core) >= MIN_SECRET_CHARS:
            cores.add(core)
            cores.add(core.replace("+", "-").replace("/", "_"))
    return cores


def _variants(secret: str) -> set[str]:
    raw = secret.encode("utf-8")
    out = {secret}
    out |= _base64_cores(raw)
    for quoted in (urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret, safe="")):
        out.add(quoted)
        out.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quoted))
    for dumped in (json.dumps(secret), json.dumps(secret, ensure_ascii=False)):
        inner = dumped[1:-1]
        out.add(inner)
        out.add(inner.replace("/", "\\/"))
    return {v for v in out if len(v) >= MIN_SECRET_CHARS}


class _Known:
    """The process-wide known secrets and the regex built from their variants."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.secrets: set[str] = set()
        self.variants: tuple[str, ...] = ()
        """Every variant, longest first (always a superset of what ``regex`` matches)."""
        self.regex: re.Pattern[str] | None = None
        self.tail: tuple[re.Pattern[str], int] = (re.compile(_SK_TAIL), 2)
        """The undecided-tail regex and the longest match of its bounded alternatives (every
        one but ``sk-…``): the longest secret."""

    def add(self, values: Iterable[str]) -> None:
        new = {v for v in values if len(v) >= MIN_SECRET_CHARS and v not in self.secrets}
        if not new:
            return
        with self._lock:
            secrets = self.secrets | new
            variants: set[str] = set(self.variants)
            for secret in new:
                variants |= _variants(secret)
            ordered = tuple(sorted(variants, key=len, reverse=True))
            regex = re.compile("|".join(re.escape(v) for v in ordered))
            # a proper prefix of a raw secret at the very end: s0(?:s1(?:s2…)?)?\Z (encoded
            # forms come whole, in tool output and errors; streamed text splits raw keys)
            longest = sorted(secrets, key=len, reverse=True)
            starts = [_nested_prefix(v[:-1]) for v in longest]
            tail_regex = re.compile("|".join([*(f"{p}\\Z" for p in starts), _SK_TAIL]))
            self.variants = ordered  # before the regex: a reader that sees the new regex
            self.regex = regex  # (read first) sees its variants too
            self.tail = (tail_regex, max(2, len(longest[0])))
            self.secrets = secrets


def _nested_prefix(text: str) -> str:
    """A regex matching any non-empty prefix of ``text``."""
    out = ""
    for ch in reversed(text[1:]):
        out = f"(?:{re.escape(ch)}{out})?"
    return re.escape(text[0]) + out


_KNOWN = _Known()


def register_secret(value: str | None) -> None:
    """Redact ``value`` (and its encodings) everywhere from now on (ignored if too short)."""
    if value:
        _KNOWN.add([value.strip()])


def register_env_secrets(env: Mapping[str, str]) -> None:
    """Register the values of ``env``'s secret-looking variables, and the password of every
    ``scheme://user:password@host`` value whatever its variable is called (a ``DATABASE_URL``);
    see the module docstring. A value that is itself a variable's name (``API_KEY_ENV=
    ANTHROPIC_API_KEY``) or a file's path (``…_TOKEN_FILE``) is not a secret: redacting it
    would hide the name, not a value."""
    values: list[str] = []
    for name, value in env.items():
        if "://" in value and "@" in value:
            values += (m.group(2) for m in _URL_PASSWORD.finditer(value))
        if name in _NOT_SECRET_NAMES or not _SECRET_NAME.search(name):
            continue
        value = value.strip()
        if _ENV_NAME_VALUE.match(value) or name.endswith(_NAME_OR_PATH_SUFFIXES):
            continue
        values.append(value)
    _KNOWN.add(values)


_ENV_NAME_VALUE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
"""An upper-case snake-case identifier: a variable's name, not a key (keys mix case)."""
_NAME_OR_PATH_SUFFIXES = ("_ENV", "_FILE", "_PATH", "_DIR")


def known_secret_count() -> int:
    """How many secret values are known (their values are never exposed)."""
    return len(_KNOWN.secrets)


def redact_text(text: str) -> str:
    """``text`` with every known secret (in any of its encodings) and every key-shaped string
    replaced by ``[REDACTED]``."""
    regex = _KNOWN.regex
    if regex is not None and (len(text) <= _LONG_TEXT or _mentions_known(text)):
        text = regex.sub(REDACTED, text)
    if ":" in text and "://" in text:
        if "@" in text:
            text = _URL_PASSWORD.sub(r"\1" + REDACTED + r"\3", text)
        if "hooks.slack.com" in text:
            text = _SLACK_HOOK.sub(REDACTED, text)
    text = _redact_formats(text)
    low = text.lower()
    if not (  # a pattern can only match text holding one of these words
        "sk-" in low
        or "key" in low
        or "bearer" in low
        or "token" in low
        or "secret" in low
        or "password" in low
    ):
        return text
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def _mentions_known(text: str) -> bool:
    """Whether ``text`` holds a known secret variant (exactly when the regex would match)."""
    return any(variant in text for variant in _KNOWN.variants)


def _redact_json(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [_redact_json(v) for v in cast(list[Any], value)]
    if isinstance(value, dict):
        return {
            redact_text(str(k)): _redact_json(v) for k, v in cast(dict[Any, Any], value).items()
        }
    return value


_TEXT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "text-delta": ("text",),
    "tool-call": ("input",),
    "tool-result": ("output",),
    "status": ("detail", "model", "approval"),
    "cost": (),
    "done": ("summary",),
    "error": ("message", "code"),
}


def redact_event(event: RuntimeEvent) -> RuntimeEvent:
    """``event`` with its free-text fields redacted (the same object if nothing changed)."""
    update: dict[str, Any] = {}
    for name in _TEXT_FIELDS[event.kind]:
        value = getattr(event, name)
        if value is None:
            continue
        if isinstance(value, str):
            new = redact_text(value)
        elif isinstance(value, BaseModel):  # a status's approval: the call's input
            new = type(value).model_validate(_redact_json(value.model_dump()))
        else:
            new = _redact_json(value)
        if new != value:
            update[name] = new
    return event.model_copy(update=update) if update else event


class StreamRedactor:
    """Redacts one run's events in order, including secrets split across text deltas.

    :meth:`push` takes the next event and returns the events that are ready, redacted, with their
    ``seq`` numbers unchanged (none is added or dropped). When a ``text-delta`` ends with what
    could be the start of a known secret (or of an ``sk-`` key), that undecided tail is held
    back: if the next event is a delta of the same channel, the tail moves to its front (so a
    secret streamed in pieces is redacted whole there); otherwise the held delta goes out as it
    was. :meth:`flush` releases what is held at the end of a stream.
    """

    def __init__(self) -> None:
        self._held: TextDelta | None = None
        self._tail: str = ""

    def push(self, event: RuntimeEvent) -> list[RuntimeEvent]:
        return self.push_all((event,))

    def push_all(self, events: Iterable[RuntimeEvent]) -> list[RuntimeEvent]:
        """:meth:`push` of each event in turn (one call and one list per batch)."""
        out: list[RuntimeEvent] = []
        append = out.append
        for event in events:
            held = self._held
            if held is not None:
                tail = self._tail
                self._held, self._tail = None, ""
                if type(event) is TextDelta and event.channel == held.channel:
                    append(held)
                    event = with_text(event, tail + event.text)
                else:
                    append(with_text(held, redact_text(held.text + tail)))
            # (``type() is``: an isinstance check on a model class costs 3× as much)
            if type(event) is not TextDelta:
                append(redact_event(event))
                continue
            raw = event.text
            cut = _undecided_tail(raw)
            if cut:
                self._held = with_text(event, redact_text(raw[:-cut]))
                self._tail = raw[-cut:]
                continue
            text = redact_text(raw)
            append(event if text == raw else with_text(event, text))
        return out

    def flush(self) -> list[RuntimeEvent]:
        held, tail = self._held, self._tail
        self._held, self._tail = None, ""
        if held is None:
            return []
        return [with_text(held, redact_text(held.text + tail))]


def _undecided_tail(text: str) -> int:
    """Length of the longest end of ``text`` that could be the start of a known secret variant
    or of an ``sk-`` key (so the next delta may complete it); 0 when the text can go out now."""
    regex, width = _KNOWN.tail
    n = len(text)
    if n <= _LONG_TEXT or n <= width:
        match = regex.search(text)
        return n - match.start() if match else 0
    # a long text: the bounded alternatives can only match in its last ``width`` characters;
    # ``sk-…`` can start no earlier than the run of key characters the text ends with, and
    # there its leftmost match is the first ``sk-`` (what the search gives, without scanning
    # the whole text from the left)
    match = regex.search(text, n - width)
    start = match.start() if match else n
    key = text.find("sk-", len(text.rstrip(_KEY_CHARS)))
    if 0 <= key < start:
        start = key
    return n - start
