"""Deterministic transcripts shaped like the real CLIs' lines (docs/runtimes.md §1.5, §2.4, §2.9).

Every generator takes a seed and returns the same bytes every time. Lines are ``bytes`` without
the trailing newline, as the line framer hands them to a normalizer. Transcripts are lists of
*sessions* (one run each), so a normalizer gets a fresh state per run as it would in production.

* :func:`claude_code_sessions` — ``claude -p --output-format stream-json --verbose
  --include-partial-messages``: a ``system/init`` line, then per model turn a ``status``, the raw
  SSE events wrapped in ``stream_event`` lines (mostly small ``text_delta`` lines), one
  ``assistant`` line per content block (text, tool_use), and a ``user`` tool_result line whose
  output is small most of the time and several KB some of the time; a ``result`` line at the end.
* :func:`codex_exec_sessions` — ``codex exec --json``: ``thread.started``, ``turn.started``,
  items (reasoning, command_execution started/completed with aggregated output, file_change,
  agent_message, the odd ``error`` item), ``turn.completed`` (or ``error`` lines and
  ``turn.failed``).
* :func:`codex_app_sessions` — ``codex app-server`` notifications (item/agentMessage/delta …).
* :func:`recorded_fixtures` — the transcripts recorded from the real CLIs in
  ``tests/fixtures/<runtime>/<version>/``.
"""

from __future__ import annotations

import json
import random
import statistics
import uuid
from pathlib import Path
from typing import Any

Session = list[bytes]

_REPO = Path(__file__).resolve().parent.parent
FIXTURES = _REPO / "tests" / "fixtures"

_WORDS = [
    "the",
    "file",
    "function",
    "test",
    "module",
    "import",
    "return",
    "value",
    "error",
    "config",
    "path",
    "line",
    "runtime",
    "event",
    "stream",
    "parser",
    "adapter",
    "session",
    "tool",
    "result",
    "output",
    "model",
    "token",
    "cache",
    "request",
    "server",
    "handler",
    "queue",
    "batch",
    "commit",
    "index",
    "schema",
    "field",
    "type",
    "check",
    "update",
    "refactor",
    "patch",
    "build",
]


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class _Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def uid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def hexid(self, n: int = 24) -> str:
        return "".join(self.r.choice("0123456789abcdef") for _ in range(n))

    def words(self, lo: int, hi: int) -> str:
        return " ".join(self.r.choice(_WORDS) for _ in range(self.r.randint(lo, hi)))

    def tool_output(self) -> str:
        """Mostly short (a command's few lines), sometimes several KB (a file, a test log)."""
        n = self.r.randint(25, 120) if self.r.random() < 0.3 else self.r.randint(1, 6)
        return "".join(
            f"{self.r.choice(['src', 'tests', 'lib'])}/{self.r.choice(_WORDS)}_{i}.py:"
            f"{self.r.randint(1, 400)}: {self.words(3, 9)}\n"
            for i in range(n)
        )


# -- Claude Code stream-json -------------------------------------------------------------------


def _cc_init(g: _Gen, sid: str) -> bytes:
    tools = [
        "Task",
        "Bash",
        "Glob",
        "Grep",
        "LS",
        "Read",
        "Edit",
        "MultiEdit",
        "Write",
        "NotebookEdit",
        "WebFetch",
        "TodoWrite",
        "WebSearch",
        "BashOutput",
        "KillShell",
    ]
    return _dumps(
        {
            "type": "system",
            "subtype": "init",
            "cwd": "/work/ws",
            "session_id": sid,
            "tools": tools,
            "mcp_servers": [],
            "model": "claude-sonnet-4-5",
            "permissionMode": "acceptEdits",
            "slash_commands": ["compact", "context", "cost", "init", "review", "security-review"],
            "apiKeySource": "ANTHROPIC_API_KEY",
            "claude_code_version": "2.1.330",
            "output_style": "default",
            "agents": ["general-purpose", "statusline-setup", "Explore"],
            "skills": [],
            "plugins": [],
            "capabilities": ["stream_events"],
            "analytics_disabled": True,
            "product_feedback_disabled": True,
            "served_by_anthropic": False,
            "uuid": g.uid(),
            "memory_paths": {"user": "/home/u/.claude/CLAUDE.md", "project": "/work/ws/CLAUDE.md"},
            "messaging_socket_path": "/tmp/cc-socks/15731.sock",
            "additional_directories": [],
            "original_cwd": "/work/ws",
            "view_mode": "default",
        }
    )


def _cc_stream(g: _Gen, sid: str, msg_id: str, event: dict[str, Any]) -> bytes:
    return _dumps(
        {
            "type": "stream_event",
            "event": event,
            "session_id": sid,
            "parent_tool_use_id": None,
            "uuid": g.uid(),
            "api_message_id": msg_id,
        }
    )


def _cc_usage(g: _Gen, out: int) -> dict[str, Any]:
    return {
        "input_tokens": g.r.randint(3, 40),
        "cache_creation_input_tokens": g.r.randint(0, 3000),
        "cache_read_input_tokens": g.r.randint(10000, 40000),
        "output_tokens": out,
        "service_tier": "standard",
    }


def _cc_assistant(g: _Gen, sid: str, msg_id: str, block: dict[str, Any]) -> bytes:
    return _dumps(
        {
            "type": "assistant",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": _cc_usage(g, g.r.randint(1, 400)),
                "context_management": None,
            },
            "parent_tool_use_id": None,
            "session_id": sid,
            "uuid": g.uid(),
            "timestamp": "2026-11-22T13:30:12.662Z",
            "request_id": f"req_{g.hexid()}",
        }
    )


def _cc_turn(g: _Gen, sid: str, with_tool: bool) -> Session:
    msg_id = f"msg_{g.hexid()}"
    lines = [
        _dumps(
            {
                "type": "system",
                "subtype": "status",
                "status": "requesting",
                "session_id": sid,
                "uuid": g.uid(),
            }
        ),
        _cc_stream(
            g,
            sid,
            msg_id,
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _cc_usage(g, 1),
                },
            },
        ),
    ]
    index = 0
    text_parts = [g.words(1, 4) + " " for _ in range(g.r.randint(2, 12))]
    lines.append(
        _cc_stream(
            g,
            sid,
            msg_id,
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
    )
    for part in text_parts:
        lines.append(
            _cc_stream(
                g,
                sid,
                msg_id,
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": part},
                },
            )
        )
    lines.append(_cc_assistant(g, sid, msg_id, {"type": "text", "text": "".join(text_parts)}))
    lines.append(_cc_stream(g, sid, msg_id, {"type": "content_block_stop", "index": index}))
    tool_id = None
    if with_tool:
        index += 1
        tool_id = f"toolu_{g.hexid()}"
        name, inp = g.r.choice(
            [
                (
                    "Bash",
                    {
                        "command": f"pytest -q tests/{g.r.choice(_WORDS)}",
                        "description": "Run tests",
                    },
                ),
                ("Read", {"file_path": f"/work/ws/src/{g.r.choice(_WORDS)}.py"}),
                ("Grep", {"pattern": g.r.choice(_WORDS), "path": "/work/ws"}),
                (
                    "Edit",
                    {
                        "file_path": "/work/ws/src/a.py",
                        "old_string": g.words(3, 8),
                        "new_string": g.words(3, 8),
                    },
                ),
            ]
        )
        lines.append(
            _cc_stream(
                g,
                sid,
                msg_id,
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}},
                },
            )
        )
        raw = json.dumps(inp)
        step = max(1, len(raw) // g.r.randint(2, 6))
        for i in range(0, len(raw), step):
            lines.append(
                _cc_stream(
                    g,
                    sid,
                    msg_id,
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": raw[i : i + step]},
                    },
                )
            )
        lines.append(
            _cc_assistant(
                g,
                sid,
                msg_id,
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": name,
                    "input": inp,
                },
            )
        )
        lines.append(_cc_stream(g, sid, msg_id, {"type": "content_block_stop", "index": index}))
    lines.append(
        _cc_stream(
            g,
            sid,
            msg_id,
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if with_tool else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": g.r.randint(20, 600)},
            },
        )
    )
    lines.append(_cc_stream(g, sid, msg_id, {"type": "message_stop"}))
    if tool_id is not None:
        output = g.tool_output()
        is_error = g.r.random() < 0.08
        lines.append(
            _dumps(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "tool_use_id": tool_id,
                                "type": "tool_result",
                                "content": output,
                                "is_error": is_error,
                            }
                        ],
                    },
                    "parent_tool_use_id": None,
                    "session_id": sid,
                    "uuid": g.uid(),
                    "timestamp": "2026-11-22T13:30:13.100Z",
                    "tool_use_result": {
                        "stdout": output,
                        "stderr": "",
                        "interrupted": False,
                        "isImage": False,
                        "noOutputExpected": False,
                    },
                    "tool_result_meta": [
                        {
                            "id": tool_id,
                            "permission_decision": {
                                "decision": "accept",
                                "source": "config",
                                "reason_type": "subcommandResults",
                            },
                        }
                    ],
                }
            )
        )
    return lines


def _cc_result(g: _Gen, sid: str, turns: int) -> bytes:
    return _dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": g.words(5, 30),
            "session_id": sid,
            "num_turns": turns,
            "duration_ms": g.r.randint(2000, 90000),
            "duration_api_ms": g.r.randint(1000, 60000),
            "ttft_ms": g.r.randint(200, 900),
            "total_cost_usd": round(g.r.random() * 0.2, 6),
            "usage": _cc_usage(g, g.r.randint(100, 5000)),
            "modelUsage": {
                "claude-sonnet-4-5": {
                    "inputTokens": g.r.randint(100, 900),
                    "outputTokens": g.r.randint(100, 5000),
                    "cacheReadInputTokens": g.r.randint(10000, 90000),
                    "costUSD": 0.01,
                    "contextWindow": 200000,
                    "maxOutputTokens": 32000,
                }
            },
            "permission_denials": [],
            "terminal_reason": "completed",
            "stop_reason": "end_turn",
            "api_error_status": None,
            "uuid": g.uid(),
        }
    )


def claude_code_sessions(total_lines: int, seed: int = 1) -> list[Session]:
    """Claude Code stream-json sessions with partial messages, about ``total_lines`` lines."""
    g = _Gen(seed)
    sessions: list[Session] = []
    count = 0
    while count < total_lines:
        sid = g.uid()
        lines = [_cc_init(g, sid)]
        turns = g.r.randint(3, 12)
        for t in range(turns):
            lines += _cc_turn(g, sid, with_tool=t < turns - 1)
        lines.append(_cc_result(g, sid, turns))
        sessions.append(lines)
        count += len(lines)
    return sessions


# -- Codex exec JSONL ----------------------------------------------------------------------------


def _cx_item(phase: str, item: dict[str, Any]) -> bytes:
    return _dumps({"type": phase, "item": item})


def codex_exec_sessions(total_lines: int, seed: int = 2) -> list[Session]:
    """``codex exec --json`` runs, about ``total_lines`` lines."""
    g = _Gen(seed)
    sessions: list[Session] = []
    count = 0
    while count < total_lines:
        lines = [
            _dumps({"type": "thread.started", "thread_id": g.uid()}),
            _dumps({"type": "turn.started"}),
        ]
        n = 0
        for _ in range(g.r.randint(4, 30)):
            roll = g.r.random()
            item_id = f"item_{n}"
            n += 1
            if roll < 0.25:
                lines.append(
                    _cx_item(
                        "item.completed",
                        {
                            "id": item_id,
                            "type": "reasoning",
                            "text": f"**{g.words(2, 5)}** {g.words(5, 40)}",
                        },
                    )
                )
            elif roll < 0.75:
                cmd = f"/bin/bash -lc '{g.r.choice(['rg', 'ls', 'cat', 'pytest -q', 'sed -n 1,80p'])} {g.r.choice(_WORDS)}'"
                lines.append(
                    _cx_item(
                        "item.started",
                        {
                            "id": item_id,
                            "type": "command_execution",
                            "command": cmd,
                            "aggregated_output": "",
                            "exit_code": None,
                            "status": "in_progress",
                        },
                    )
                )
                code = 0 if g.r.random() < 0.85 else g.r.choice([1, 2, 127])
                lines.append(
                    _cx_item(
                        "item.completed",
                        {
                            "id": item_id,
                            "type": "command_execution",
                            "command": cmd,
                            "aggregated_output": g.tool_output(),
                            "exit_code": code,
                            "status": "completed" if code == 0 else "failed",
                        },
                    )
                )
            elif roll < 0.85:
                changes = [
                    {
                        "path": f"/work/ws/src/{g.r.choice(_WORDS)}.py",
                        "kind": g.r.choice(["add", "update", "delete"]),
                    }
                    for _ in range(g.r.randint(1, 3))
                ]
                lines.append(
                    _cx_item(
                        "item.started",
                        {
                            "id": item_id,
                            "type": "file_change",
                            "changes": changes,
                            "status": "in_progress",
                        },
                    )
                )
                lines.append(
                    _cx_item(
                        "item.completed",
                        {
                            "id": item_id,
                            "type": "file_change",
                            "changes": changes,
                            "status": "completed",
                        },
                    )
                )
            elif roll < 0.98:
                lines.append(
                    _cx_item(
                        "item.completed",
                        {"id": item_id, "type": "agent_message", "text": g.words(5, 60)},
                    )
                )
            else:
                lines.append(
                    _cx_item(
                        "item.completed",
                        {
                            "id": item_id,
                            "type": "error",
                            "message": "Model metadata for `fake-model` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.",
                        },
                    )
                )
        if g.r.random() < 0.05:
            msg = "We’re currently experiencing high demand, which may cause temporary errors."
            lines += [
                _dumps({"type": "error", "message": f"Reconnecting... 1/2 ({msg})"}),
                _dumps({"type": "error", "message": f"Reconnecting... 2/2 ({msg})"}),
                _dumps({"type": "error", "message": msg}),
                _dumps({"type": "turn.failed", "error": {"message": msg}}),
            ]
        else:
            lines.append(
                _cx_item(
                    "item.completed",
                    {
                        "id": f"item_{n}",
                        "type": "agent_message",
                        "text": "FINAL: " + g.words(5, 60),
                    },
                )
            )
            lines.append(
                _dumps(
                    {
                        "type": "turn.completed",
                        "usage": {
                            "input_tokens": g.r.randint(2000, 90000),
                            "cached_input_tokens": g.r.randint(0, 80000),
                            "cache_write_input_tokens": 0,
                            "output_tokens": g.r.randint(50, 5000),
                            "reasoning_output_tokens": g.r.randint(0, 2000),
                        },
                    }
                )
            )
        sessions.append(lines)
        count += len(lines)
    return sessions


# -- Codex app-server notifications ------------------------------------------------------------


def codex_app_sessions(total_lines: int, seed: int = 3) -> list[Session]:
    """``codex app-server`` notifications of one turn each (the client's requests left out)."""
    g = _Gen(seed)
    sessions: list[Session] = []
    count = 0
    while count < total_lines:
        thread, turn = g.uid(), g.uid()

        def note(method: str, params: dict[str, Any]) -> bytes:
            return _dumps({"method": method, "params": params, "emittedAtMs": 1795354212662})

        lines = [
            note("thread/status/changed", {"threadId": thread, "status": {"type": "active"}}),
            note(
                "turn/started",
                {"threadId": thread, "turn": {"id": turn, "status": "inProgress", "items": []}},
            ),
        ]
        for k in range(g.r.randint(2, 8)):
            cmd_id = f"call_{g.hexid()}"
            cmd = f"/bin/bash -lc '{g.r.choice(['rg', 'ls', 'pytest -q'])} {g.r.choice(_WORDS)}'"
            lines.append(
                note(
                    "item/started",
                    {
                        "threadId": thread,
                        "turnId": turn,
                        "item": {
                            "type": "commandExecution",
                            "id": cmd_id,
                            "command": cmd,
                            "cwd": "/work/ws",
                            "status": "inProgress",
                            "aggregatedOutput": None,
                            "exitCode": None,
                        },
                    },
                )
            )
            lines.append(
                note(
                    "item/completed",
                    {
                        "threadId": thread,
                        "turnId": turn,
                        "item": {
                            "type": "commandExecution",
                            "id": cmd_id,
                            "command": cmd,
                            "cwd": "/work/ws",
                            "status": "completed",
                            "aggregatedOutput": g.tool_output(),
                            "exitCode": 0,
                            "durationMs": g.r.randint(5, 900),
                        },
                    },
                )
            )
            msg_id = f"msg_{g.hexid()}_{k}"
            lines.append(
                note(
                    "item/started",
                    {
                        "threadId": thread,
                        "turnId": turn,
                        "item": {"type": "agentMessage", "id": msg_id, "text": ""},
                    },
                )
            )
            parts = [g.words(1, 3) + " " for _ in range(g.r.randint(5, 30))]
            for part in parts:
                lines.append(
                    note(
                        "item/agentMessage/delta",
                        {"threadId": thread, "turnId": turn, "itemId": msg_id, "delta": part},
                    )
                )
            lines.append(
                note(
                    "item/completed",
                    {
                        "threadId": thread,
                        "turnId": turn,
                        "item": {"type": "agentMessage", "id": msg_id, "text": "".join(parts)},
                    },
                )
            )
        lines.append(
            note(
                "thread/tokenUsage/updated",
                {
                    "threadId": thread,
                    "turnId": turn,
                    "tokenUsage": {
                        "total": {
                            "totalTokens": 5000,
                            "inputTokens": 4000,
                            "cachedInputTokens": 3000,
                            "outputTokens": 1000,
                            "reasoningOutputTokens": 200,
                        },
                        "last": {
                            "totalTokens": 500,
                            "inputTokens": 400,
                            "cachedInputTokens": 300,
                            "outputTokens": 100,
                            "reasoningOutputTokens": 20,
                        },
                        "modelContextWindow": 258400,
                    },
                },
            )
        )
        lines.append(
            note("thread/status/changed", {"threadId": thread, "status": {"type": "idle"}})
        )
        lines.append(
            note(
                "turn/completed",
                {
                    "threadId": thread,
                    "turn": {
                        "id": turn,
                        "status": "completed",
                        "items": [],
                        "error": None,
                        "durationMs": 890,
                    },
                },
            )
        )
        sessions.append(lines)
        count += len(lines)
    return sessions


# -- recorded fixtures ---------------------------------------------------------------------------


def recorded_fixtures(runtime: str, prefix: str = "") -> list[Session]:
    """Recorded stdout transcripts under ``tests/fixtures/<runtime>/<version>/`` (``prefix``
    filters file names, e.g. ``exec-``); app-server recordings keep only the CLI's lines."""
    root = FIXTURES / runtime
    sessions: list[Session] = []
    for file in sorted(root.glob(f"*/{prefix}*.jsonl")):
        lines: Session = []
        for raw in file.read_bytes().splitlines():
            if not raw.strip():
                continue
            obj = json.loads(raw)
            if isinstance(obj, dict) and "dir" in obj and "msg" in obj:
                if obj["dir"] == "out":
                    lines.append(_dumps(obj["msg"]))
            else:
                lines.append(raw)
        if lines:
            sessions.append(lines)
    return sessions


def repeat_to(sessions: list[Session], total_lines: int) -> list[Session]:
    """The sessions repeated until they hold at least ``total_lines`` lines."""
    if not sessions:
        return []
    out: list[Session] = []
    count = 0
    while count < total_lines:
        for s in sessions:
            out.append(s)
            count += len(s)
    return out


def describe(sessions: list[Session]) -> dict[str, Any]:
    """Line count, sizes (mean, p10, p90 bytes) and the share of each line type."""
    lines = [line for s in sessions for line in s]
    sizes = sorted(len(line) for line in lines)
    kinds: dict[str, int] = {}
    for line in lines:
        obj = json.loads(line)
        kind = str(obj.get("type") or obj.get("method") or "?")
        if kind == "stream_event":
            kind = "stream_event/" + str(obj["event"].get("type"))
        kinds[kind] = kinds.get(kind, 0) + 1
    n = len(sizes)
    return {
        "lines": n,
        "sessions": len(sessions),
        "bytes": sum(sizes),
        "mean_bytes": round(statistics.fmean(sizes)) if n else 0,
        "p10_bytes": sizes[n // 10] if n else 0,
        "p90_bytes": sizes[(9 * n) // 10] if n else 0,
        "mix_pct": {
            k: round(100 * v / n, 1) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])
        },
    }
