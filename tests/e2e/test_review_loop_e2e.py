"""The review loop on the real Claude Code CLI, through the `ringleader` command, against the
scripted model server: a run in a ringleader worktree reads a file; a comment on it is sent
back as a resumed turn of the same Claude Code session, which edits the file; the checkpoints
show the change; `open` would start `claude --resume <that session>` in the run's home (a
stand-in records the argv and environment: the interactive CLI cannot be driven here), and the
session's transcript is really in that home."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from orchestrator.engine import create_workspace

from .kit import cli_env, installed
from .kit import ringleader as kit_ringleader

pytestmark = pytest.mark.e2e

GREETER = 'def greet(name):\n    return "hi " + name\n'
REVIEWED = 'def greet(name):\n    return f"hi {name}"\n'


def git(*args: str, cwd: Path) -> None:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def ringleader(*args: str, cwd: Path, state: Path) -> subprocess.CompletedProcess[str]:
    env = cli_env(state, XDG_CONFIG_HOME=str(state / "xdg"), NO_COLOR="1")
    return kit_ringleader(*args, cwd=cwd, env=env, timeout=300)


def script_for(target: Path) -> dict[str, Any]:
    read = {"name": "Read", "input": {"file_path": str(target)}}
    return {
        "conversations": [
            {"name": "again", "marker": "[[again]]", "turns": [{"text": "Starting over."}]},
            {
                "name": "review",
                "marker": "A reviewer left",
                "turns": [
                    {"text": "Reading it again.", "tool_calls": [read]},
                    {
                        "text": "Applying the comment.",
                        "tool_calls": [
                            {
                                "name": "Edit",
                                "input": {
                                    "file_path": str(target),
                                    "old_string": '"hi " + name',
                                    "new_string": 'f"hi {name}"',
                                },
                            }
                        ],
                    },
                    {"text": "Used an f-string."},
                ],
            },
            {
                "name": "task",
                "marker": "[[task]]",
                "turns": [{"text": "Let me read it.", "tool_calls": [read]}, {"text": "Read."}],
            },
        ]
    }


def test_claude_code_comment_round_trip_checkpoints_and_open(tmp_path: Path) -> None:
    installed("claude-code")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greeter.py").write_text(GREETER)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    state = tmp_path / "state"
    ws = trio.run(lambda: create_workspace(repo, "claude-code", state_dir=state)).path
    script = tmp_path / "model.json"
    script.write_text(json.dumps(script_for(ws / "greeter.py")))
    config = tmp_path / "review.toml"
    config.write_text('[runtimes.claude-code]\npermission = "allow"\n')
    common = ("--config", str(config), "--model-server", str(script))

    first = ringleader(
        "run", "--runtime", "claude-code", *common, "--json", "[[task]] look at greet",
        cwd=ws, state=state,
    )  # fmt: skip
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    key = json.loads(first.stdout.splitlines()[0])["runKey"]

    added = ringleader(
        "comment", "last", "greeter.py:2", "use an f-string", cwd=tmp_path, state=state
    )
    assert added.returncode == 0, added.stderr
    sent = ringleader("comment", "last", "--send", *common, "--json", cwd=tmp_path, state=state)
    assert sent.returncode == 0, sent.stdout[-3000:] + sent.stderr
    assert (ws / "greeter.py").read_text() == REVIEWED  # Claude Code acted on the comment
    with sqlite3.connect(state / "events.db") as conn:
        rows = conn.execute("SELECT run_key, outcome FROM runs ORDER BY started_ms").fetchall()
        sessions = dict(conn.execute("SELECT run_key, native_session_id FROM sessions"))
    assert len(rows) == 2
    follow_key, outcome = rows[1][0], json.loads(rows[1][1])
    assert outcome["resumedFrom"] == key and outcome["reason"] == "success"
    assert sessions[follow_key] == sessions[key]  # the same Claude Code session, resumed
    assert "1 | def greet(name):" not in outcome["title"]  # only the commented line is quoted
    assert '2 |     return "hi " + name' in outcome["title"]

    points = ringleader("checkpoints", "last", "--json", cwd=tmp_path, state=state)
    assert points.returncode == 0, points.stderr
    files = {f for line in points.stdout.splitlines() for f in json.loads(line)["files"]}
    assert files == {"M\tgreeter.py"}

    record = tmp_path / "open.json"
    stand_in = tmp_path / "claude-stand-in"
    stand_in.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv, 'cwd': os.getcwd(), 'env': dict(os.environ)}}, "
        f"open({str(record)!r}, 'w'))\n"
    )
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    opener = tmp_path / "open.toml"
    opener.write_text(f'[runtimes.claude-code]\nbinary = "{stand_in}"\n')
    opened = ringleader("open", "last", "--config", str(opener), cwd=tmp_path, state=state)
    assert opened.returncode == 0, opened.stderr
    seen = json.loads(record.read_text())
    session = sessions[follow_key]
    assert seen["argv"] == [str(stand_in), "--resume", session]
    assert seen["cwd"] == str(ws)
    home = Path(seen["env"]["CLAUDE_CONFIG_DIR"])
    assert home == state / "homes" / "claude-code" / "cli"
    assert list(home.glob(f"projects/*/{session}.jsonl"))  # the real session lives there

    # rewind the follow-up to where it started: the code, and the conversation as a fork
    rewound = ringleader(
        "rewind", "last", "0", "[[again]] keep the concatenation", *common,
        cwd=tmp_path, state=state,
    )  # fmt: skip
    assert rewound.returncode == 0, rewound.stdout[-3000:] + rewound.stderr
    assert "continuing the conversation from turn 0" in rewound.stdout
    assert (ws / "greeter.py").read_text() == GREETER
    with sqlite3.connect(state / "events.db") as conn:
        last_key, last_outcome = conn.execute(
            "SELECT run_key, outcome FROM runs ORDER BY started_ms DESC LIMIT 1"
        ).fetchone()
        forked = dict(conn.execute("SELECT run_key, native_session_id FROM sessions"))[last_key]
    assert json.loads(last_outcome)["resumedFrom"] == follow_key
    assert forked != session  # a new session; the original is kept
    [transcript] = home.glob(f"projects/*/{forked}.jsonl")
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    said = json.dumps([e.get("message") for e in entries if e.get("type") == "assistant"])
    assert "Starting over." in said and "Edit" not in said  # the edit's turn was cut
    prompts = json.dumps([e.get("message") for e in entries if e.get("type") == "user"])
    assert "A reviewer left" in prompts and "[[again]]" in prompts


PATCH = (
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: greeter.py\n@@\n"
    '-    return "hi " + name\n+    return f"hi {name}"\n*** End Patch\nEOF\n'
)


def test_codex_comment_round_trip_changes_the_file(tmp_path: Path) -> None:
    installed("codex")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greeter.py").write_text(GREETER)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    state = tmp_path / "state"
    ws = trio.run(lambda: create_workspace(repo, "codex", state_dir=state)).path
    script = tmp_path / "model.json"
    script.write_text(
        json.dumps(
            {
                "conversations": [
                    {
                        "name": "review",
                        "marker": "A reviewer left",
                        "turns": [
                            {"tool_calls": [{"name": "exec_command", "input": {"cmd": PATCH}}]},
                            {"text": "Used an f-string."},
                        ],
                    },
                    {"name": "task", "marker": "[[task]]", "turns": [{"text": "Looked."}]},
                ]
            }
        )
    )
    config = tmp_path / "review.toml"
    config.write_text('[runtimes.codex]\npermission = "allow"\n')
    common = ("--config", str(config), "--model-server", str(script))
    first = ringleader(
        "run", "--runtime", "codex", *common, "--json", "[[task]] look at greet",
        cwd=ws, state=state,
    )  # fmt: skip
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    key = json.loads(first.stdout.splitlines()[0])["runKey"]
    added = ringleader(
        "comment", "last", "greeter.py:2", "use an f-string", cwd=tmp_path, state=state
    )
    assert added.returncode == 0, added.stderr
    sent = ringleader("comment", "last", "--send", *common, "--json", cwd=tmp_path, state=state)
    assert sent.returncode == 0, sent.stdout[-3000:] + sent.stderr
    assert (ws / "greeter.py").read_text() == REVIEWED, sent.stdout[-4000:]  # Codex acted on it
    with sqlite3.connect(state / "events.db") as conn:
        rows = conn.execute("SELECT run_key, outcome FROM runs ORDER BY started_ms").fetchall()
        sessions = dict(conn.execute("SELECT run_key, native_session_id FROM sessions"))
    follow_key, outcome = rows[-1][0], json.loads(rows[-1][1])
    assert outcome["resumedFrom"] == key and outcome["reason"] == "success"
    assert sessions[follow_key] == sessions[key]  # the same Codex thread, resumed
