"""What the server remembers: which conversation a request belongs to, the request log, and
how much of each request's prompt repeats the previous request of its conversation.

Choosing a conversation for a request, in order:

1. a *side request* — no tools offered and ``max_tokens`` at most ``side_request_max_tokens``
   (Claude Code's title generation, Hermes' title call) — gets ``side_reply`` and consumes no turn;
2. a conversation whose ``marker`` appears in any user text of the request;
3. the conversation already bound to the request's first user message (later requests of the
   same agent session replay the history, so the first user message identifies the session);
4. the next conversation without a marker that no session has taken yet, in script order.

Each request bound to a conversation takes its next turn. A conversation with no turns left gets
a clear 400 error naming the conversation (so clients do not retry).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from .script import Conversation, Script, Turn

__all__ = ["LoggedRequest", "ParsedRequest", "Selection", "ServerState", "redact_headers"]

_SECRET_HEADER = re.compile(r"(?i)(key|token|secret|auth|cookie)")


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers with every credential-like value replaced by ``[REDACTED]``."""
    return {k: ("[REDACTED]" if _SECRET_HEADER.search(k) else v) for k, v in headers.items()}


@attrs.frozen
class ParsedRequest:
    """What every dialect extracts from a request body."""

    api: str
    user_texts: tuple[str, ...]
    has_tools: bool
    max_tokens: int | None
    stream: bool
    model: str


@attrs.frozen
class LoggedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    api: str
    conversation: str | None
    turn: int | None
    user_agent: str
    prefix_reuse_bytes: int | None
    """Leading bytes equal to the previous request of the same conversation (None for the first)."""
    body_bytes: int


@attrs.frozen
class Selection:
    conversation: Conversation | None
    turn: Turn | None
    turn_index: int | None
    side: bool = False
    error: str | None = None


@attrs.define
class ServerState:
    script: Script
    requests: list[LoggedRequest] = attrs.field(factory=list[LoggedRequest])
    _next_turn: dict[str, int] = attrs.field(factory=dict[str, int])
    _faults_fired: dict[tuple[str, int], int] = attrs.field(factory=dict[tuple[str, int], int])
    _by_first_message: dict[str, str] = attrs.field(factory=dict[str, str])
    _taken: set[str] = attrs.field(factory=set[str])
    _last_body: dict[str, bytes] = attrs.field(factory=dict[str, bytes])

    def select(self, req: ParsedRequest) -> Selection:
        script = self.script
        if (
            not req.has_tools
            and req.max_tokens is not None
            and req.max_tokens <= script.side_request_max_tokens
        ):
            return Selection(None, None, None, side=True)
        conversation = self._find(req)
        if conversation is None:
            return Selection(
                None, None, None, error="the script has no conversation for this request"
            )
        index = self._next_turn.get(conversation.name, 0)
        if index >= len(conversation.turns):
            return Selection(
                conversation,
                None,
                index,
                error=(
                    f"scripted model server: conversation {conversation.name!r} has no turn "
                    f"{index + 1} (the script has {len(conversation.turns)})"
                ),
            )
        turn = conversation.turns[index]
        return Selection(conversation, turn, index)

    def _find(self, req: ParsedRequest) -> Conversation | None:
        for conversation in self.script.conversations:
            marker = conversation.marker
            if marker and any(marker in text for text in req.user_texts):
                self._taken.add(conversation.name)
                return conversation
        first = req.user_texts[0] if req.user_texts else ""
        bound = self._by_first_message.get(first)
        if bound is not None:
            return self._named(bound)
        for conversation in self.script.conversations:
            if conversation.marker is None and conversation.name not in self._taken:
                self._taken.add(conversation.name)
                self._by_first_message[first] = conversation.name
                return conversation
        return None

    def _named(self, name: str) -> Conversation | None:
        return next((c for c in self.script.conversations if c.name == name), None)

    def take_fault(self, selection: Selection) -> bool:
        """True if the selected turn's fault fires now (it fires ``times`` times, then never)."""
        turn, conversation = selection.turn, selection.conversation
        if (
            turn is None
            or turn.fault is None
            or conversation is None
            or selection.turn_index is None
        ):
            return False
        key = (conversation.name, selection.turn_index)
        fired = self._faults_fired.get(key, 0)
        if fired >= turn.fault.times:
            return False
        self._faults_fired[key] = fired + 1
        return True

    def advance(self, selection: Selection) -> None:
        """The selected turn was answered: the conversation moves to its next turn."""
        if selection.conversation is not None and selection.turn_index is not None:
            self._next_turn[selection.conversation.name] = selection.turn_index + 1

    def log(
        self,
        *,
        path: str,
        headers: Mapping[str, str],
        raw_body: bytes,
        body: Any,
        api: str,
        selection: Selection | None,
    ) -> LoggedRequest:
        conversation = selection.conversation.name if selection and selection.conversation else None
        reuse: int | None = None
        if conversation is not None and not (selection and selection.side):
            previous = self._last_body.get(conversation)
            if previous is not None:
                reuse = _common_prefix(previous, raw_body)
            self._last_body[conversation] = raw_body
        entry = LoggedRequest(
            path=path,
            headers=redact_headers(headers),
            body=body,
            api=api,
            conversation=conversation,
            turn=selection.turn_index if selection else None,
            user_agent=headers.get("user-agent", ""),
            prefix_reuse_bytes=reuse,
            body_bytes=len(raw_body),
        )
        self.requests.append(entry)
        return entry

    def prefix_reuse(self, conversation: str) -> list[int]:
        """For each request after the first in ``conversation``: leading bytes equal to the one before."""
        return [
            r.prefix_reuse_bytes
            for r in self.requests
            if r.conversation == conversation and r.prefix_reuse_bytes is not None
        ]


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of two byte strings (binary search on slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
