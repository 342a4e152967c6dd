"""``ringleader prune`` deletes the transcripts the real OpenClaw keeps of the runs it prunes, and
only those (tests/adapters/openclaw/test_prune.py covers the same rules against a stand-in
gateway; this checks OpenClaw's own store).

Two runs of the real OpenClaw (``ringleader run --runtime openclaw``, the scripted model server)
on one state directory, each its own OpenClaw session in ``<state>/openclaw``; the first is made
40 days old in the event log; ``ringleader prune`` (the default 30 days) then starts a gateway
there and deletes that run's session. OpenClaw's transcript store (``transcript_events`` in
``agents/main/agent/openclaw-agent.sqlite``) no longer holds the old run's prompt and still holds
the new one's."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
import trio

from orchestrator.model_server import serve_model_server

from .kit import cli_env, installed, ringleader, served_config

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-openclaw-prune-00000"
MODEL = "fake-model"
SCRIPT = {
    "model": MODEL,
    "conversations": [
        {"name": "old", "marker": "[[e2e:old-run]]", "turns": [{"text": "OLD"}]},
        {"name": "new", "marker": "[[e2e:new-run]]", "turns": [{"text": "NEW"}]},
    ],
}
DAY_MS = 86_400_000


def transcripts_with(state: Path, text: str) -> int:
    """How many of OpenClaw's stored transcript events contain ``text``."""
    store = state / "openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT event_json FROM transcript_events").fetchall()
    finally:
        conn.close()
    return sum(text in (row[0] or "") for row in rows)


async def test_prune_deletes_the_old_runs_openclaw_session_and_keeps_the_new_one(
    tmp_path: Path,
) -> None:
    installed("openclaw")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = tmp_path / "state"
    env = cli_env(state, XDG_CONFIG_HOME=str(tmp_path / "xdg"), E2E_OPENCLAW_KEY=KEY)
    async with serve_model_server(SCRIPT) as server:
        config = served_config(
            tmp_path, "openclaw", server.base_url, key_env="E2E_OPENCLAW_KEY", model=MODEL
        )
        for marker in ("[[e2e:old-run]]", "[[e2e:new-run]]"):
            argv = ("run", "--config", str(config), "--runtime", "openclaw", f"{marker} go")
            done = await trio.to_thread.run_sync(
                lambda argv=argv: ringleader(*argv, cwd=workspace, env=env, timeout=300)
            )
            assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert transcripts_with(state, "[[e2e:old-run]]") and transcripts_with(state, "[[e2e:new-run]]")
    conn = sqlite3.connect(state / "events.db")
    try:
        [(old,)] = conn.execute("SELECT run_key FROM runs ORDER BY started_ms LIMIT 1").fetchall()
        aged = int(time.time() * 1000) - 40 * DAY_MS
        conn.execute("UPDATE runs SET ended_ms = ? WHERE run_key = ?", (aged, old))
        conn.commit()
    finally:
        conn.close()

    pruned = await trio.to_thread.run_sync(
        lambda: ringleader("prune", "--config", str(config), cwd=workspace, env=env, timeout=300)
    )
    assert pruned.returncode == 0, (pruned.stdout, pruned.stderr[-2000:])
    assert pruned.stdout.startswith("removed 1 run "), pruned.stdout
    assert "removed 1 openclaw session it kept" in pruned.stdout, pruned.stdout
    assert transcripts_with(state, "[[e2e:old-run]]") == 0  # OpenClaw's own transcript is gone
    assert transcripts_with(state, "[[e2e:new-run]]")  # the kept run's stays
    again = await trio.to_thread.run_sync(
        lambda: ringleader("prune", "--config", str(config), cwd=workspace, env=env, timeout=300)
    )
    assert again.returncode == 0 and again.stdout.startswith("nothing to prune"), again.stdout
