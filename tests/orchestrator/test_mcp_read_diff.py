"""``ringleader mcp``'s ``read_diff`` is ``ringleader diff``: the one diff of
``orchestrator/engine/review/diff.py`` (against the commit the workspace started from, untracked
files in, renames found, binary files marked), not a second implementation. The tools are
called on the real MCP server object over a real event log and real git repositories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from orchestrator.cli.options import load_cli_config, registry_for
from orchestrator.core.registry import discover_runtimes
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.review.diff import workspace_diff
from orchestrator.engine.review.inplace import record_in_place
from orchestrator.engine.review.records import checkout_of, resolve_run
from orchestrator.mcp.server import build_mcp_server, open_orchestration
from tests.orchestrator.review_kit import GIT_ID, git, make_runs


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in GIT_ID.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    (root / "moved.txt").write_text("".join(f"line {i}\n" for i in range(30)))
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "init", cwd=root)
    return root


async def read_diff(state: Path, cwd: Path, run: str) -> dict[str, Any]:
    specs = discover_runtimes()
    registry = registry_for(specs, load_cli_config(None, specs))
    async with open_orchestration(registry, state, cwd=str(cwd)) as orch:
        server = build_mcp_server(orch)
        answer: Any = await server.call_tool("read_diff", {"run": run})
        orch.host.abort_all()
    assert not answer.is_error, answer
    return json.loads(answer.content[0].text)


async def the_diff(state: Path, run: str) -> list[dict[str, Any]]:
    async with EventLog.open(state / "events.db") as log:
        resolved = await resolve_run(log, run)
    diff = await trio.to_thread.run_sync(workspace_diff, checkout_of(resolved.workspace))
    return [f.to_json(hunks=False) for f in diff.files]


async def test_read_diff_of_a_workspace_run_is_ringleader_diff(repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    made = await trio.to_thread.run_sync(lambda: make_runs(repo, state, ("native",)))
    ws = made["native"]
    (ws / "app.py").write_text("def main():\n    return 2\n")
    (ws / "moved.txt").rename(ws / "renamed.txt")  # untracked after the move: a rename all the same
    (ws / "new.bin").write_bytes(b"\x00\x01binary\x00")
    key = "runtime:native:task:t-native:run-0001"
    answer = await read_diff(state, repo, key)
    assert answer["runKey"] == key and answer["workspace"] == str(ws)
    assert answer["files"] == await the_diff(state, key)
    statuses = {f["path"]: (f["status"], f["binary"]) for f in answer["files"]}
    assert statuses == {
        "app.py": ("modified", False),
        "renamed.txt": ("renamed", False),
        "new.bin": ("added", True),
    }
    assert "+    return 2" in answer["diff"] and answer["summary"] == "3 files, +1 -1"


async def test_read_diff_of_a_run_in_your_checkout_leaves_out_what_was_there_before(
    repo: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    (repo / "app.py").write_text("def main():\n    return 'mine, uncommitted'\n")
    (repo / "notes.txt").write_text("my notes\n")
    key = "runtime:scripted:task:t1:run-0001"
    async with EventLog.open(state / "events.db") as log:
        row = await record_in_place(
            log, cwd=repo, task_id="t1", runtime_id="scripted", label="scripted", group_id="t1"
        )
        assert row is not None
        await log.start_run(key, runtime_id="scripted", session_key=key)
        (repo / "agent.txt").write_text("written by the run\n")
        await log.finish_run(key, status="success", outcome={"reason": "success"})
    answer = await read_diff(state, repo, key)
    assert [f["path"] for f in answer["files"]] == ["agent.txt"]
    assert "mine, uncommitted" not in answer["diff"] and "my notes" not in answer["diff"]


async def test_start_run_in_a_checkout_records_where_it_started(repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    specs = discover_runtimes()
    registry = registry_for(specs, load_cli_config(None, specs))
    async with open_orchestration(registry, state, cwd=str(repo)) as orch:
        server = build_mcp_server(orch)
        started: Any = await server.call_tool(
            "start_run", {"runtime": "scripted", "prompt": "say hello"}
        )
        task = json.loads(started.content[0].text)["task"]
        waited: Any = await server.call_tool("wait_run", {"run": task, "timeout_s": 60})
        assert json.loads(waited.content[0].text)["status"] == "success"
        rows = [r for r in await orch.log.workspaces() if r.task_id == task]
        answer: Any = await server.call_tool("read_diff", {"run": task})
    assert [(r.kind, r.origin) for r in rows] == [("your checkout", str(repo))]
    assert json.loads(answer.content[0].text)["files"] == []
