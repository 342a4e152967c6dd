"""Follow-ups (``ringleader say``) against a real, non-steerable runtime: Hermes over ACP with the
scripted model server, driven through the CLI in real processes.

A run is busy streaming a slow answer; two messages are said to it from other processes. Hermes
cannot be steered, so both stay queued (durably, in the state directory) and the running process
delivers them as the next turn on the same session, in one turn and in order, once the first
turn ends. A message withdrawn before that is never delivered.

If Hermes is not installed this test FAILS with the install command.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
import trio

from orchestrator.core.events import Done, TextDelta, event_from_json
from orchestrator.model_server import serve_model_server

from .kit import RINGLEADER, background, cli_env, installed, ringleader, served_config

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-followups-hermes-000000"


def script(release: Path) -> dict[str, object]:
    """The first turn streams until ``release`` exists (the test creates it once it has said
    and withdrawn its messages: no race with a timer on a loaded machine)."""
    return {
        "model": "fake-model",
        "conversations": [
            {
                "name": "busy",
                "turns": [
                    {"text": "slow " * 160, "chunk_chars": 5, "hold_file": str(release)},
                    {"text": "FOLLOWUP_SEEN"},
                ],
            }
        ],
    }


def running_run(state: Path, deadline: float) -> str:
    """The key of the run once the event log shows it running with its session recorded."""
    db = state / "events.db"
    while time.monotonic() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(db) as conn:
                    row = conn.execute(
                        "SELECT r.run_key FROM runs r JOIN sessions s ON s.run_key = r.run_key "
                        "WHERE r.status = 'running' AND s.native_session_id IS NOT NULL"
                    ).fetchone()
            except sqlite3.OperationalError:  # the log is being created
                row = None
            if row is not None:
                return str(row[0])
        time.sleep(0.1)
    raise AssertionError("the run never showed up running with a session")


async def test_messages_said_to_a_busy_non_steerable_run_are_its_next_turn(
    tmp_path: Path,
) -> None:
    installed("hermes")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = tmp_path / "state"
    release = tmp_path / "release"
    async with serve_model_server(script(release)) as server:
        config = served_config(tmp_path, "hermes", server.base_url, key_env="E2E_HERMES_KEY")
        env = cli_env(state, XDG_CONFIG_HOME=str(tmp_path / "xdg"), E2E_HERMES_KEY=KEY)
        argv = [*RINGLEADER, "run", "--config", str(config)]
        argv += ["--runtime", "hermes", "--json", "start streaming"]
        async with background(argv, cwd=workspace, env=env) as proc:
            run_key = await trio.to_thread.run_sync(running_run, state, time.monotonic() + 60)
            said: list[str] = []
            for text in ("FIRST-FOLLOWUP", "WITHDRAWN-FOLLOWUP", "SECOND-FOLLOWUP"):
                done = await trio.to_thread.run_sync(
                    lambda t=text: ringleader("say", run_key, t, cwd=workspace, env=env)
                )
                assert done.returncode == 0, done.stderr
                assert "queued" in done.stdout, done.stdout
                said.append(done.stdout.split()[1])
            listed = ringleader("say", "--list", "--json", cwd=workspace, env=env)
            assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == said
            withdrawn = ringleader("say", "--withdraw", said[1], cwd=workspace, env=env)
            assert withdrawn.returncode == 0, withdrawn.stderr
            release.touch()
            out, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
        assert proc.returncode == 0, err
    events = [event_from_json(line) for line in out.splitlines() if line.strip()]
    dones = [e for e in events if isinstance(e, Done)]
    assert [d.reason for d in dones] == ["success", "success"]  # the turn, then the follow-up's
    second = events[events.index(dones[0]) + 1 :]
    text = "".join(e.text for e in second if isinstance(e, TextDelta) and e.channel == "assistant")
    assert "FOLLOWUP_SEEN" in text
    turns = [r for r in server.requests if r.conversation == "busy" and not r.side]
    assert len(turns) == 2
    last = json.dumps(turns[1].body)
    assert "FIRST-FOLLOWUP" in last and "SECOND-FOLLOWUP" in last
    assert last.index("FIRST-FOLLOWUP") < last.index("SECOND-FOLLOWUP")  # in order, one turn
    assert "WITHDRAWN-FOLLOWUP" not in last
    assert KEY not in out
    left = ringleader("say", "--list", "--json", cwd=workspace, env=env)
    assert left.stdout == ""  # all delivered (or withdrawn)


def codex_script() -> dict[str, object]:
    return {
        "model": "gpt-5.5",
        "conversations": [
            {
                "name": "steer",
                "turns": [
                    {
                        "text": "tick " * 120,
                        "chunk_chars": 5,
                        "chunk_delay_s": 0.05,
                        "tool_calls": [{"name": "exec_command", "input": {"cmd": "echo step"}}],
                    },
                    {"text": "STEERED"},
                ],
            }
        ],
    }


async def test_a_message_said_to_a_live_codex_turn_is_steered_into_it(outside_tmp: Path) -> None:
    """Codex (app-server) is steerable: the process running it steers the message into the
    running turn (``turn/steer``): the model's next request carries it, and no extra turn runs."""
    installed("codex")
    workspace = outside_tmp / "ws"
    workspace.mkdir(parents=True)
    state = outside_tmp / "state"
    async with serve_model_server(codex_script()) as server:
        config = outside_tmp / "ringleader.toml"
        config.write_text(
            f'[runtimes.codex]\nbase_url = "{server.url}/v1"\n'
            'api_key_env = "E2E_CODEX_KEY"\nmodel = "gpt-5.5"\n'
        )
        env = cli_env(state, E2E_CODEX_KEY=KEY)
        argv = [*RINGLEADER, "run", "--config", str(config)]
        argv += ["--runtime", "codex", "--json", "start ticking"]
        async with background(argv, cwd=workspace, env=env) as proc:
            run_key = await trio.to_thread.run_sync(running_run, state, time.monotonic() + 60)
            said = await trio.to_thread.run_sync(
                lambda: ringleader("say", run_key, "STEER-TEXT-9", cwd=workspace, env=env)
            )
            assert said.returncode == 0 and "queued" in said.stdout, said.stderr
            out, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
        assert proc.returncode == 0, err[-2000:]
    events = [event_from_json(line) for line in out.splitlines() if line.strip()]
    assert [d.reason for d in events if isinstance(d, Done)] == ["success"]  # no extra turn
    turns = [r for r in server.requests if r.conversation == "steer" and not r.side]
    assert len(turns) == 2
    assert "STEER-TEXT-9" not in json.dumps(turns[0].body)
    assert "STEER-TEXT-9" in json.dumps(turns[1].body)
    listed = ringleader("say", "--list", "--json", cwd=workspace, env=env)
    assert listed.stdout == ""  # delivered
