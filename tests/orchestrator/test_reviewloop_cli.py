"""The review loop through the `ringleader` command: comments sent back to the agent (native
against the scripted model server, and the scripted runtime), checkpoints and rewind, `open`
with a stand-in CLI that records its argv and environment, and the one-line mistakes."""

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
from orchestrator.engine.eventlog import EventLog

GREETER = 'def greet(name):\n    return "hi " + name\n'
AFTER_TURN_1 = 'def greet(name):\n    return "hello " + name\n'
AFTER_REVIEW = 'def greet(name: str) -> str:\n    return f"hello {name}"\n'

MODEL_SCRIPT: dict[str, Any] = {
    "conversations": [
        {  # first: a follow-up request also carries the task's marker in its history
            "name": "review",
            "marker": "A reviewer left",
            "turns": [
                {
                    "text": "Fixing.",
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "input": {"path": "greeter.py", "content": AFTER_REVIEW},
                        }
                    ],
                },
                {"text": "Used type hints and an f-string."},
            ],
        },
        {
            "name": "task",
            "marker": "[[task]]",
            "turns": [
                {
                    "text": "Writing.",
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "input": {"path": "greeter.py", "content": AFTER_TURN_1},
                        }
                    ],
                },
                {
                    "text": "Notes.",
                    "tool_calls": [
                        {"name": "write_file", "input": {"path": "NOTES.md", "content": "n\n"}}
                    ],
                },
                {"text": "Done."},
            ],
        },
    ]
}


def git(*args: str, cwd: Path) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def ringleader(
    *args: str, cwd: Path, state: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    environ |= {
        "RINGLEADER_STATE_DIR": str(state),
        "XDG_CONFIG_HOME": str(state / "xdg"),
        "NO_COLOR": "1",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
    )


def workspace(tmp_path: Path, name: str = "native") -> tuple[Path, Path, Path]:
    """A git repository with a `.env`, and a ringleader workspace (worktree) of it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greeter.py").write_text(GREETER)
    (repo / ".gitignore").write_text(".env\n")
    (repo / ".worktreeinclude").write_text(".env\n")
    (repo / ".env").write_text("APP_TOKEN=tok-1a2b3c4d5e6f7a8b9c\n")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    state = tmp_path / "state"
    ws = trio.run(lambda: create_workspace(repo, name, state_dir=state))
    return repo, state, ws.path


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def outcome_of(state: Path, run_key: str) -> dict[str, Any]:
    with sqlite3.connect(state / "events.db") as conn:
        row = conn.execute("SELECT outcome FROM runs WHERE run_key = ?", (run_key,)).fetchone()
    return json.loads(row[0])


def test_native_comment_round_trip_checkpoints_and_rewind(tmp_path: Path) -> None:
    repo, state, ws = workspace(tmp_path)
    script = tmp_path / "model.json"
    script.write_text(json.dumps(MODEL_SCRIPT))
    first = ringleader(
        "run", "--runtime", "native", "--model-server", str(script), "[[task]] improve greet",
        cwd=ws, state=state,
    )  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    [run] = json_lines(ringleader("replay", "--list", "--json", cwd=ws, state=state).stdout)
    key = run["runKey"]

    # checkpoints: 0 (the start), then the turns that wrote files (a fast in-process turn
    # may share its checkpoint with the next: see Checkpointer); the last one is the end state
    listed = ringleader("checkpoints", "last", "--json", cwd=tmp_path, state=state)
    assert listed.returncode == 0, listed.stderr
    points = json_lines(listed.stdout)
    assert (points[0]["n"], points[0]["turn"], points[0]["files"]) == (0, 0, [])
    assert [p["n"] for p in points] == list(range(len(points))) and len(points) >= 2
    changed = {f for p in points for f in p["files"]}
    assert changed == {"M\tgreeter.py", "A\tNOTES.md"}
    assert all(1 <= p["turn"] <= 3 for p in points[1:])
    last_tree = git("rev-parse", f"{points[-1]['commit']}^{{tree}}", cwd=repo).strip()
    git("add", "-A", cwd=ws)
    assert git("write-tree", cwd=ws).strip() == last_tree
    git("reset", "-q", cwd=ws)
    refs = git("for-each-ref", "--format=%(refname)", "refs/ringleader/checkpoints", cwd=repo)
    assert len(refs.split()) == len(points)
    assert git("branch", "--list", cwd=repo).count("\n") == 1  # no branch was made

    # two comments, listed, then sent as one resumed turn on the same session
    added = ringleader(
        "comment", "last", "greeter.py:1-2", "add type hints and use an f-string",
        cwd=tmp_path, state=state,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert f"comment #1 on greeter.py:1-2 of {key}" in added.stdout
    second = ringleader("comment", key, "NOTES.md:1", "say more", cwd=tmp_path, state=state)
    assert second.returncode == 0, second.stderr
    waiting = json_lines(ringleader("comment", key, "--list", "--json", cwd=ws, state=state).stdout)
    assert [(c["file"], c["start"], c["end"], c["lines"]) for c in waiting] == [
        ("greeter.py", 1, 2, AFTER_TURN_1.splitlines()),
        ("NOTES.md", 1, 1, ["n"]),
    ]
    assert all(c["sentMs"] is None for c in waiting)
    sent = ringleader(
        "comment", "last", "--send", "--model-server", str(script), cwd=tmp_path, state=state
    )
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert "sending 2 comments to native" in sent.stderr
    assert (ws / "greeter.py").read_text() == AFTER_REVIEW  # the agent acted on the comment
    runs = json_lines(ringleader("replay", "--list", "--json", cwd=ws, state=state).stdout)
    assert len(runs) == 2
    follow = runs[1]
    assert follow["status"] == "success"
    assert outcome_of(state, follow["runKey"])["resumedFrom"] == key  # the same session
    prompt = follow["prompt"]
    assert "1. greeter.py, lines 1-2:" in prompt
    assert '    2 |     return "hello " + name' in prompt
    assert "Comment: add type hints and use an f-string" in prompt
    assert "2. NOTES.md, line 1:" in prompt and "Comment: say more" in prompt
    done = json_lines(ringleader("comment", key, "--list", "--json", cwd=ws, state=state).stdout)
    assert all(c["sentVia"] == "resume" and c["followUp"] == follow["runKey"] for c in done)
    again = ringleader("comment", key, "--send", cwd=tmp_path, state=state)
    assert again.returncode == 2 and again.stderr.startswith("ringleader: no comments waiting")

    # rewind the first run to checkpoint 0: the code only, the index and .env untouched
    index = Path(git("rev-parse", "--git-path", "index", cwd=ws).strip())
    index = index if index.is_absolute() else ws / index
    index_before = index.read_bytes()
    rewound = ringleader("rewind", key, "0", cwd=tmp_path, state=state)
    assert rewound.returncode == 0, rewound.stderr
    assert "to checkpoint 0 (after turn 0)" in rewound.stdout
    assert "The conversation was not rewound" in rewound.stdout
    assert (ws / "greeter.py").read_text() == GREETER
    assert not (ws / "NOTES.md").exists()
    assert (ws / ".env").is_file()
    assert index.read_bytes() == index_before
    # the state before the rewind was kept: rewinding to it undoes the rewind
    points = json_lines(ringleader("checkpoints", key, "--json", cwd=ws, state=state).stdout)
    assert points[-1]["note"] == "before rewind to 0"
    undo = ringleader("rewind", key, str(points[-1]["n"]), cwd=ws, state=state)
    assert undo.returncode == 0, undo.stderr
    assert (ws / "greeter.py").read_text() == AFTER_REVIEW
    assert (ws / "NOTES.md").read_text() == "n\n"
    # the .env's token never reached the log
    assert b"tok-1a2b3c4d5e6f7a8b9c" not in (state / "events.db").read_bytes()


SCRIPTED = [
    {"type": "init", "sessionId": "replaced-per-process", "model": "scripted-model"},
    {"type": "text", "text": "Looked at it."},
    {"type": "result", "ok": True, "summary": "Looked at it."},
]


def test_scripted_comment_round_trip_resumes_the_session(tmp_path: Path) -> None:
    _, state, ws = workspace(tmp_path, "scripted")
    frames = tmp_path / "frames.json"
    frames.write_text(json.dumps(SCRIPTED))
    env = {"RINGLEADER_SCRIPTED_SCRIPT": str(frames)}
    first = ringleader("run", "--runtime", "scripted", "look", cwd=ws, state=state, env=env)
    assert first.returncode == 0, first.stderr
    added = ringleader(
        "comment", "last", "greeter.py:2", "say hello", cwd=tmp_path, state=state, env=env
    )
    assert added.returncode == 0, added.stderr
    quoted = ringleader("comment", "last", ".env:1", "rotate this", cwd=tmp_path, state=state)
    assert quoted.returncode == 0, quoted.stderr
    sent = ringleader("comment", "last", "--send", "--json", cwd=tmp_path, state=state, env=env)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    events = json_lines(sent.stdout)
    assert events[-1]["kind"] == "done" and events[-1]["reason"] == "success"
    runs = json_lines(ringleader("replay", "--list", "--json", cwd=ws, state=state).stdout)
    first_key, follow = runs[0]["runKey"], runs[1]
    assert outcome_of(state, follow["runKey"])["resumedFrom"] == first_key
    assert '    2 |     return "hi " + name\n   Comment: say hello' in follow["prompt"]
    # the quoted .env line: its token is in neither the comments nor the log
    assert "1 | APP_TOKEN=[REDACTED]" in follow["prompt"]
    for db in ("comments.db", "events.db"):
        assert b"tok-1a2b3c4d5e6f7a8b9c" not in (state / db).read_bytes(), db
    with sqlite3.connect(state / "events.db") as conn:
        native_ids = [r[0] for r in conn.execute("SELECT native_session_id FROM sessions")]
    # the follow-up continued the first run's session (the scripted runtime's ids are fresh
    # per process: a new session would have another one)
    assert len(native_ids) == 2 and native_ids[0] == native_ids[1]


MISTAKES = [
    (("greeter.py", "x"), "'greeter.py' is not FILE:LINE or FILE:START-END"),
    (("greeter.py:3-1", "x"), "greeter.py:3-1: lines start at 1 and a range goes forward"),
    (("greeter.py:2-9", "x"), "greeter.py: has 2 lines; 2-9 is past its end"),
    (("missing.py:1", "x"), "missing.py: no such file in the run's workspace"),
    (("../../../repo/greeter.py:1", "x"), "../../../repo/greeter.py: outside the run's workspace"),
    (("greeter.py:1", " "), "comment: say what to change"),
    (("--send",), "no comments waiting on runtime:scripted:task:"),
    (("--send", "--list"), "comment: --send, --list and --withdraw do not go together"),
]


def test_comment_mistakes_are_one_line(tmp_path: Path) -> None:
    _, state, ws = workspace(tmp_path, "scripted")
    frames = tmp_path / "frames.json"
    frames.write_text(json.dumps(SCRIPTED))
    env = {"RINGLEADER_SCRIPTED_SCRIPT": str(frames)}
    ran = ringleader("run", "--runtime", "scripted", "look", cwd=ws, state=state, env=env)
    assert ran.returncode == 0, ran.stderr
    for args, message in MISTAKES:
        result = ringleader("comment", "last", *args, cwd=tmp_path, state=state)
        assert result.returncode == 2, (args, result.stdout + result.stderr)
        assert result.stderr.startswith("ringleader: ") and message in result.stderr, args
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_review_commands_on_an_empty_log_are_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for args in (
        ("comment", "last", "a.py:1", "x"),
        ("comment", "nope", "--list"),
        ("checkpoints", "last"),
        ("rewind", "last", "1"),
        ("open", "last"),
    ):
        result = ringleader(*args, cwd=tmp_path, state=state)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("ringleader: ") and result.stderr.count("\n") == 1


STAND_IN = """#!{python}
import json, os, sys
with open({record!r}, "w") as f:
    json.dump({{"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}}, f)
"""


def recorded_session(state: Path, runtime: str, session_id: str, cwd: Path) -> str:
    """A finished run of ``runtime`` with its session, as the runner records one."""
    key = f"runtime:{runtime}:task:t1:run-0000abcd"

    async def write() -> None:
        async with EventLog.open(state / "events.db") as log:
            await log.start_run(key, runtime_id=runtime, session_key=f"runtime:{runtime}:task:t1")
            await log.record_session(
                f"runtime:{runtime}:task:t1",
                runtime_id=runtime,
                native_session_id=session_id,
                codec_blob=None,
                origin_cwd=str(cwd),
                run_key=key,
                agent_id="cli",
            )
            await log.finish_run(key, status="success", outcome={"reason": "success"})

    trio.run(write)
    return key


@pytest.mark.parametrize(
    ("runtime", "home_var", "expected"),
    [
        ("claude-code", "CLAUDE_CONFIG_DIR", ["--resume", "sess-42"]),
        (
            "codex",
            "CODEX_HOME",
            ["resume", "--disable", "plugins", "-c", "analytics.enabled=false"],
        ),
    ],
)
def test_open_execs_the_runtime_cli_on_the_recorded_session(
    tmp_path: Path, runtime: str, home_var: str, expected: list[str]
) -> None:
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    record = tmp_path / "record.json"
    stand_in = tmp_path / "stand-in"
    stand_in.write_text(STAND_IN.format(python=sys.executable, record=str(record)))
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    config = tmp_path / "ringleader.toml"
    config.write_text(f'[runtimes.{runtime}]\nbinary = "{stand_in}"\n')
    key = recorded_session(state, runtime, "sess-42", work)
    result = ringleader("open", "last", "--config", str(config), cwd=tmp_path, state=state)
    assert result.returncode == 0, result.stderr
    assert f"opening {runtime} on session sess-42 in {work}" in result.stderr
    seen = json.loads(record.read_text())
    assert seen["argv"][0] == str(stand_in)
    assert seen["argv"][1 : 1 + len(expected)] == expected
    assert seen["argv"][-1] == "sess-42"
    assert seen["cwd"] == str(work)
    home = state / "homes" / runtime / "cli"  # the runs' persistent per-identity home
    assert seen["env"][home_var] == str(home)
    assert seen["env"]["HOME"] == str(home / "home")
    assert not any(k.startswith("RINGLEADER_") for k in seen["env"])  # the run's environment
    assert key


def test_open_is_refused_for_runtimes_without_an_interactive_mode(tmp_path: Path) -> None:
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    key = recorded_session(state, "native", "native-session", work)
    result = ringleader("open", key, cwd=tmp_path, state=state)
    assert result.returncode == 2
    assert result.stderr == (
        f"ringleader: runtime 'native' has no interactive mode to open; continue the session "
        f"with `ringleader run --resume {key} 'PROMPT'`\n"
    )
