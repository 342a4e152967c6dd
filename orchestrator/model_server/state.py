"""What the server remembers: which conversation a request belongs to, the request log, and
how much of each request's prompt repeats the previous request of its conversation.

A request's *session key* is its session header (``X-Claude-Code-Session-Id`` from Claude Code,
``session-id`` / ``thread-id`` from Codex; empty when absent) together with its first user text
(agents replay the whole history on every request, so the first user message stays put). The
header keeps apart sessions whose first user text is the same boilerplate (Codex's
``<environment_context>``, Claude Code's ``<system-reminder>`` blocks in one directory); the text
keeps apart a Claude Code subagent from its parent session.

Choosing a conversation for a request, in order:

1. a *side request* gets ``side_reply`` and consumes no turn. A side request offers no tools and
   either has ``max_tokens`` at most ``side_request_max_tokens`` (Claude Code's title and quota
   calls), or contains one of ``side_request_patterns`` (Hermes' title call, which has no
   ``max_tokens``), or would join a conversation whose earlier requests offered tools (agents
   offer their tools on every turn, so a tool-less request there is an auxiliary call);
2. a conversation whose ``marker`` appears in any user text of the request (all user messages
   are searched: OpenClaw adds an internal-context user message after the prompt);
3. the conversation already bound to the request's session key;
4. the next conversation without a marker that no session has taken yet, in script order; the
   session key is bound to it.

Each request bound to a conversation takes its next turn. A conversation with no turns left, or a
request no conversation is left for, gets a clear 400 error naming the problem (so clients do not
retry).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs
import trio

from orchestrator.model_server._sse import as_dict, as_list
from orchestrator.model_server.script import Conversation, Script, Turn

__all__ = [
    "SESSION_HEADERS",
    "LoggedRequest",
    "Outcome",
    "ParsedRequest",
    "Selection",
    "ServerState",
    "common_prefix",
    "prompt_in_cache_order",
    "redact_headers",
]

_SECRET_HEADER = re.compile(r"(?i)(key|token|secret|auth|cookie|password|session-token)")

SESSION_HEADERS: tuple[str, ...] = ("x-claude-code-session-id", "session-id", "thread-id")
"""Headers that name the agent session a request belongs to, most specific first."""

Outcome = Literal[
    "pending", "answered", "streaming", "completed", "error", "cut", "stream_error", "disconnected"
]
"""``answered``: a JSON reply; ``completed``: a stream sent in full; ``error``: an error status;
``cut`` / ``stream_error``: a scripted stream fault; ``disconnected``: the client went away
before the stream ended (an abort); ``streaming``: still going."""


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers with every credential-like value replaced by ``[REDACTED]``."""
    return {k: ("[REDACTED]" if _SECRET_HEADER.search(k) else v) for k, v in headers.items()}


def session_of(headers: Mapping[str, str]) -> str:
    """The session a request names in its headers, or ``""``."""
    return next((headers[h] for h in SESSION_HEADERS if headers.get(h)), "")


@attrs.frozen
class ParsedRequest:
    """What every dialect extracts from a request body."""

    api: str
    user_texts: tuple[str, ...]
    has_tools: bool
    max_tokens: int | None
    stream: bool
    model: str

    @classmethod
    def of(
        cls, api: str, body: Mapping[str, Any], texts: Iterable[str], max_tokens: object
    ) -> ParsedRequest:
        """A request whose body names its ``tools``, ``stream`` and ``model`` (the OpenAI and
        Anthropic APIs)."""
        return cls(
            api=api,
            user_texts=tuple(texts),
            has_tools=bool(body.get("tools")),
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
            stream=bool(body.get("stream")),
            model=str(body.get("model") or ""),
        )


@attrs.define
class LoggedRequest:
    """One request as the server saw it (secrets redacted) and how it ended."""

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
    side: bool = False
    """A side request (title, summary) answered with ``side_reply``."""
    session: str = ""
    status: int = 200
    outcome: Outcome = "pending"
    prompt: bytes = attrs.field(default=b"", repr=False, eq=False)
    """The prompt in the order providers cache it — tools, then the system prompt
    (``system`` / ``instructions``), then the conversation (``messages`` / ``input``) — as
    compact JSON. Prompt-prefix reuse is measured on these bytes (:mod:`.reuse`): the body's own
    key order (the SDKs put ``tools`` last) is not the cache's."""
    cache_marks: tuple[int, ...] = ()
    """Byte offsets in :attr:`prompt` of each ``"cache_control"`` key: where a prompt-cache
    breakpoint (Anthropic) ends the prefix it caches."""

    @property
    def body_keys(self) -> list[str]:
        body = as_dict(self.body)
        return sorted(body) if body is not None else []

    @property
    def roles(self) -> list[str]:
        """Roles (or item types) of ``messages`` / ``input``, in order."""
        body = as_dict(self.body) or {}
        roles: list[str] = []
        items = as_list(body.get("messages")) + as_list(body.get("input"))
        for raw in items + as_list(body.get("contents")):
            item = as_dict(raw)
            if item is not None:
                roles.append(str(item.get("role") or item.get("type") or "?"))
        return roles

    @property
    def tools(self) -> list[str]:
        """Names of the tools the request offers."""
        body = as_dict(self.body) or {}
        names: list[str] = []
        for raw in as_list(body.get("tools")):
            tool = as_dict(raw) or {}
            declarations = as_list(tool.get("functionDeclarations"))
            if declarations:  # Gemini: one tool holds every function
                names += [str((as_dict(d) or {}).get("name")) for d in declarations]
                continue
            function = as_dict(tool.get("function")) or {}
            name = tool.get("name") or function.get("name") or tool.get("type")
            names.append(str(name))
        return names

    def summary(self) -> dict[str, Any]:
        """The log line's fields: everything but the body, plus its keys, roles and tools."""
        return {
            "path": self.path,
            "api": self.api,
            "status": self.status,
            "outcome": self.outcome,
            "conversation": self.conversation,
            "turn": self.turn,
            "side": self.side,
            "session": self.session,
            "user_agent": self.user_agent,
            "headers": self.headers,
            "body_bytes": self.body_bytes,
            "prefix_reuse_bytes": self.prefix_reuse_bytes,
            "body_keys": self.body_keys,
            "roles": self.roles,
            "tools": self.tools,
        }

    def to_json(self, *, include_body: bool = False) -> str:
        """One JSON line (no newline) for a log file."""
        fields = self.summary()
        if include_body:
            fields["body"] = self.body
        return json.dumps(fields, separators=(",", ":"), default=str)


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
    log_path: Path | None = None
    """When set, each finished request is appended to this file as one JSON line."""
    requests: list[LoggedRequest] = attrs.field(factory=list[LoggedRequest])
    _next_turn: dict[str, int] = attrs.field(factory=dict[str, int])
    _faults_fired: dict[tuple[str, int], int] = attrs.field(factory=dict[tuple[str, int], int])
    _bound: dict[tuple[str, str], str] = attrs.field(factory=dict[tuple[str, str], str])
    _taken: set[str] = attrs.field(factory=set[str])
    _offered_tools: set[str] = attrs.field(factory=set[str])
    _last_body: dict[str, bytes] = attrs.field(factory=dict[str, bytes])
    _changed: trio.Event = attrs.field(factory=trio.Event)

    def select(self, req: ParsedRequest, *, session: str = "", body_text: str = "") -> Selection:
        """The conversation and turn that answer ``req`` (see the module docstring)."""
        script = self.script
        conversation, key, new = self._lookup(req, session)
        if not req.has_tools and (
            (req.max_tokens is not None and req.max_tokens <= script.side_request_max_tokens)
            or any(p in body_text for p in script.side_request_patterns)
            or (conversation is not None and conversation.name in self._offered_tools)
        ):
            return Selection(None, None, None, side=True)
        if conversation is None:
            return Selection(
                None,
                None,
                None,
                error=(
                    "scripted model server: no conversation left for this request (every "
                    "conversation without a marker is taken, and no marker is in its user text)"
                ),
            )
        if new:
            self._taken.add(conversation.name)
            self._bound[key] = conversation.name
        if req.has_tools:
            self._offered_tools.add(conversation.name)
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
        return Selection(conversation, conversation.turns[index], index)

    def _lookup(
        self, req: ParsedRequest, session: str
    ) -> tuple[Conversation | None, tuple[str, str], bool]:
        """(conversation, session key, whether the key is new to it); changes nothing."""
        key = (session, req.user_texts[0] if req.user_texts else "")
        for conversation in self.script.conversations:
            marker = conversation.marker
            if marker and any(marker in text for text in req.user_texts):
                return conversation, key, False
        bound = self._bound.get(key)
        if bound is not None:
            return self._named(bound), key, False
        for conversation in self.script.conversations:
            if conversation.marker is None and conversation.name not in self._taken:
                return conversation, key, True
        return None, key, False

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
        """Record a request as it arrives (its outcome is set by :meth:`finish`)."""
        conversation = selection.conversation.name if selection and selection.conversation else None
        reuse: int | None = None
        if conversation is not None:
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
            side=bool(selection and selection.side),
            session=session_of(headers),
            prompt=(prompt := prompt_in_cache_order(api, body)),
            cache_marks=_cache_marks(prompt),
        )
        self.requests.append(entry)
        return entry

    def finish(self, entry: LoggedRequest, outcome: Outcome, status: int | None = None) -> None:
        """Set how a request ended; append it to the log file once it has ended."""
        entry.outcome = outcome
        if status is not None:
            entry.status = status
        self._changed.set()
        self._changed = trio.Event()
        if self.log_path is not None and outcome not in ("pending", "streaming"):
            with self.log_path.open("a", encoding="utf-8") as sink:
                sink.write(entry.to_json() + "\n")

    async def settled(self, entry: LoggedRequest) -> Outcome:
        """Wait until ``entry`` has ended (its stream finished, failed or was abandoned)."""
        while entry.outcome in ("pending", "streaming"):
            await self._changed.wait()
        return entry.outcome

    def prefix_reuse(self, conversation: str) -> list[int]:
        """For each request after the first in ``conversation``: leading bytes equal to the one before."""
        return [
            r.prefix_reuse_bytes
            for r in self.requests
            if r.conversation == conversation and r.prefix_reuse_bytes is not None
        ]


_CACHE_KEY = re.compile(rb'"cache_control"\s*:')


def prompt_in_cache_order(api: str, body: Any) -> bytes:
    """Tools, system prompt, conversation of a request body, as compact JSON (see
    :attr:`LoggedRequest.prompt`)."""
    fields = {
        "anthropic": ("tools", "system", "messages"),
        "responses": ("tools", "instructions", "input"),
        "chat": ("tools", "messages"),
        "gemini": ("tools", "systemInstruction", "contents"),
    }.get(api)
    data = as_dict(body)
    if fields is None or data is None:
        return b""
    parts = [data.get(name) for name in fields]
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


def _cache_marks(raw: bytes) -> tuple[int, ...]:
    if b'"cache_control"' not in raw:
        return ()
    return tuple(m.start() for m in _CACHE_KEY.finditer(raw))


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of two byte strings."""
    return _common_prefix(a, b)


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
