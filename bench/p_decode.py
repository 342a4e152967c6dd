"""Paths 1 and 2: a CLI's stdout line → ringleader events, against plain ``orjson.loads`` of the
same lines (the limit) and the peer SDK's own parser of the same lines.

Each pass runs over every line once and drops each result at once. Ours is the adapter's per-line
work minus publishing: decode (dialect) + normalize, with a fresh state and event factory per
session (one per run, as in the adapter). Peers get the lines as ``str`` (their transports decode
text before parsing; the decode is not charged to them).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from ._core import Config, Figure, Row, Target, failed, path, rate, timed_passes
from .inputs import (
    Session,
    claude_code_sessions,
    codex_app_sessions,
    codex_exec_sessions,
    describe,
    recorded_fixtures,
    repeat_to,
)

UNIT = "lines/s"


def _lines(cfg: Config) -> int:
    return 300 if cfg.smoke else 4_000 if cfg.quick else 20_000


def _orjson_pass(sessions: list[Session]) -> Callable[[], None]:
    import orjson

    loads = orjson.loads

    def run() -> None:
        for session in sessions:
            for line in session:
                loads(line)

    return run


def _measure(
    name: str,
    make_pass: Callable[[], Callable[[], None]],
    count: int,
    cfg: Config,
    note: str | None = None,
) -> Figure:
    try:
        run = make_pass()
        return rate(name, timed_passes(run, cfg), count, UNIT, note)
    except ImportError as exc:
        return failed(name, UNIT, "higher", f"not installed here: {exc}")


PER_LINE_TARGET = Target(
    "per line: ≥ 1.5× the peer and ≥ 0.4× orjson (#37)",
    "min_ratio_to_limit",
    0.4,
    peer_min=1.5,
)
"""Issue #37's goal for one line per call (the typical case): 1.5× the peer parser's rate in
every run, loaded or quiet, and at least 0.4× plain ``orjson.loads`` of the same lines."""


def _decode_row(
    key: str,
    title: str,
    sessions: list[Session],
    cfg: Config,
    *,
    ours: Callable[[], Callable[[], None]] | None,
    not_built: str | None,
    peers: list[tuple[str, Callable[[], Callable[[], None]]]],
    target: Target | None = None,
) -> Row:
    count = sum(len(s) for s in sessions)
    row = Row(
        key,
        title,
        UNIT,
        "higher",
        target or Target("≥ 0.5× plain orjson decode", "min_ratio_to_limit", 0.5),
        extra={"input": describe(sessions)},
    )
    row.limit = _measure("orjson.loads", lambda: _orjson_pass(sessions), count, cfg)
    for name, make in peers:
        if cfg.smoke:
            row.peers.append(failed(name, UNIT, "higher", "skipped in --smoke"))
        else:
            row.peers.append(_measure(name, make, count, cfg))
    if ours is not None:
        row.ours = _measure("ringleader", ours, count, cfg)
        best = max(row.ours.passes, default=0.0)
        if best and row.limit.value:
            peer = row.peers[0] if row.peers and row.peers[0].value else None
            row.notes.append(
                f"typical (median of {len(row.ours.passes)} passes) {row.ours.value / 1e3:.0f}k "
                f"lines/s, best pass {best / 1e3:.0f}k: vs orjson median "
                f"{row.ours.value / row.limit.value:.2f}×, best/best "
                f"{best / max(row.limit.passes):.2f}×"
                + (
                    f"; vs {peer.name} median {row.ours.value / peer.value:.2f}×, best/best "
                    f"{best / max(peer.passes):.2f}×"
                    if peer
                    else ""
                )
                + f"; load average {os.getloadavg()[0]:.1f}"
            )
    else:
        row.not_built = not_built
    return row


# -- path 1: Claude Code ----------------------------------------------------------------------------


def _claude_peer(sessions: list[Session]) -> Callable[[], Callable[[], None]]:
    def make() -> Callable[[], None]:
        from claude_agent_sdk._internal.message_parser import parse_message
        from claude_agent_sdk._internal.transport.subprocess_cli import _parse_stdout_line

        texts = [[line.decode() for line in s] for s in sessions]

        def run() -> None:
            for session in texts:
                for line in session:
                    data = _parse_stdout_line(line)
                    if data is not None:
                        parse_message(data)

        return run

    return make


def claude_code_normalizer() -> tuple[Callable[..., Callable[[], None]] | None, str]:
    """Ours for Claude Code, or why it is missing.

    Looks for ``adapters/claude_code`` with a per-line decoder in its dialect and a pure
    normalizer; returns a pass factory over sessions."""
    try:
        normalize: Any = importlib.import_module("adapters.claude_code.normalize")
        dialect: Any = importlib.import_module("adapters.claude_code.dialect")
    except ImportError as exc:
        return None, f"not built yet: adapters/claude_code ({exc.name} is missing)"
    from . import claude_hook

    return claude_hook.make_pass(normalize, dialect)


@path("claude-code-decode", "Claude Code stream-json line → events")
def claude_code_decode(cfg: Config) -> list[Row]:
    n = _lines(cfg)
    sessions = claude_code_sessions(n)
    recorded = repeat_to(recorded_fixtures("claude_code"), n)
    ours_factory, why = claude_code_normalizer()
    rows = [
        _decode_row(
            "claude-code-decode-line",
            "1. Claude Code stream-json → events, ONE LINE PER CALL (generated, partial messages)",
            sessions,
            cfg,
            ours=(lambda: ours_factory(sessions, 1)) if ours_factory else None,
            not_built=why,
            peers=[("claude-agent-sdk parse_message", _claude_peer(sessions))],
            target=PER_LINE_TARGET,
        ),
        _decode_row(
            "claude-code-decode",
            "1a. Claude Code stream-json → events, 64-line chunks (generated; best case)",
            sessions,
            cfg,
            ours=(lambda: ours_factory(sessions)) if ours_factory else None,
            not_built=why,
            peers=[("claude-agent-sdk parse_message", _claude_peer(sessions))],
        ),
    ]
    if recorded:
        rows.append(
            _decode_row(
                "claude-code-decode-recorded",
                "1b. Claude Code stream-json → events, one line per call (recorded 2.1.330)",
                recorded,
                cfg,
                ours=(lambda: ours_factory(recorded, 1)) if ours_factory else None,
                not_built=why,
                peers=[("claude-agent-sdk parse_message", _claude_peer(recorded))],
                target=PER_LINE_TARGET,
            )
        )
    return rows


# -- path 2: Codex ------------------------------------------------------------------------------


def _codex_exec_ours(sessions: list[Session]) -> Callable[[], Callable[[], None]]:
    def make() -> Callable[[], None]:
        from adapters.codex.dialect import decode_exec_line
        from adapters.codex.normalize import ExecState, normalize_exec
        from orchestrator.core.events import EventFactory

        def run() -> None:
            for session in sessions:
                make_ = EventFactory(run_id="codex-bench", session_id="bench")
                state = ExecState(model="gpt-5.5")
                for line in session:
                    normalize_exec(decode_exec_line(line), make_, state)

        return run

    return make


def _codex_exec_peer(sessions: list[Session]) -> Callable[[], Callable[[], None]]:
    def make() -> Callable[[], None]:
        from agents.extensions.experimental.codex.thread import _parse_event

        texts = [[line.decode() for line in s] for s in sessions]

        def run() -> None:
            for session in texts:
                for line in session:
                    _parse_event(line)

        return run

    return make


def _codex_app_ours(sessions: list[Session]) -> Callable[[], Callable[[], None]]:
    def make() -> Callable[[], None]:
        from adapters.codex.dialect import as_dict, as_str, decode_rpc_line, rpc_kind
        from adapters.codex.normalize import AppState, normalize_app
        from orchestrator.core.events import EventFactory

        def run() -> None:
            for session in sessions:
                make_ = EventFactory(run_id="codex-bench", session_id="bench")
                state = AppState(model="gpt-5.5")
                for line in session:
                    message = decode_rpc_line(line)
                    if rpc_kind(message) != "notification":
                        continue
                    method = as_str(message.get("method"))
                    params = message.get("params")
                    as_dict(params).get("threadId")
                    normalize_app(method, params, make_, state)

        return run

    return make


@path("codex-decode", "Codex JSONL line → events")
def codex_decode(cfg: Config) -> list[Row]:
    n = _lines(cfg)
    generated = codex_exec_sessions(n)
    recorded = repeat_to(recorded_fixtures("codex", "exec-"), n)
    rows = [
        _decode_row(
            "codex-decode",
            "2. Codex exec JSONL → events, one line per call (generated)",
            generated,
            cfg,
            ours=_codex_exec_ours(generated),
            not_built=None,
            peers=[("openai-agents codex _parse_event", _codex_exec_peer(generated))],
            target=PER_LINE_TARGET,
        ),
    ]
    if recorded:
        rows.append(
            _decode_row(
                "codex-decode-recorded",
                "2b. Codex exec JSONL → events, one line per call (recorded 0.169.0)",
                recorded,
                cfg,
                ours=_codex_exec_ours(recorded),
                not_built=None,
                peers=[("openai-agents codex _parse_event", _codex_exec_peer(recorded))],
                target=PER_LINE_TARGET,
            )
        )
    app = codex_app_sessions(n)
    row = _decode_row(
        "codex-app-decode",
        "2c. Codex app-server notification → events (generated)",
        app,
        cfg,
        ours=_codex_app_ours(app),
        not_built=None,
        peers=[],
    )
    row.notes.append("no peer parses app-server notifications")
    rows.append(row)
    return rows
