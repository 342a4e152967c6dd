"""``ringleader approvals --revoke``: a person takes back a standing grant from the command line
(before, only the board could): by the approval that made it (the ``from`` column) or by tool,
optionally on one runtime; the tool asks again from its next call. A name that matches nothing
is one line, and nothing is removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import trio

from orchestrator.core.approvals import ApprovalBook, RunInfo


def plant(state: Path) -> None:
    async def grants() -> None:
        book = ApprovalBook.in_state_dir(state)
        native = RunInfo(runtime_id="native", session_key="runtime:native:task:t1", cwd="/w/repo")
        codex = RunInfo(runtime_id="codex", session_key="runtime:codex:task:t2", cwd="/w/repo")
        await book.grant("bash", "always", native, "ap-1")
        await book.grant("write_file", "run", native, "ap-2")
        await book.grant("bash", "always", codex, "ap-3")

    trio.run(grants)


def approvals(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "approvals", *args],
        env=env | {"RINGLEADER_STATE_DIR": str(state)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def granted(state: Path) -> list[tuple[str, str, str | None]]:
    lines = approvals(state, "--json").stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    return sorted((r["tool"], r["runtime"], r["approval"]) for r in rows if r.get("grant"))


def test_revoke_by_approval_then_by_tool_on_one_runtime(tmp_path: Path) -> None:
    state = tmp_path / "state"
    plant(state)
    done = approvals(state, "--revoke", "ap-2")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "ringleader: revoked: write_file allowed for the rest of run runtime:native:task:t1\n"
    )
    assert granted(state) == [("bash", "codex", "ap-3"), ("bash", "native", "ap-1")]
    done = approvals(state, "--revoke", "bash", "--runtime", "codex")
    assert done.returncode == 0 and "always on codex in /w/repo" in done.stdout, done
    assert granted(state) == [("bash", "native", "ap-1")]


def test_revoking_what_is_not_granted_is_one_line_and_removes_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    plant(state)
    for args in (("--revoke", "ap-9"), ("--revoke", "write_file", "--runtime", "codex")):
        done = approvals(state, *args)
        assert done.returncode == 2, done
        [line] = done.stderr.splitlines()
        assert line.startswith("ringleader: --revoke: no standing grant of"), line
    done = approvals(state, "--runtime", "codex")  # --runtime alone: it goes with --revoke
    assert done.returncode == 2 and "--runtime goes with --revoke" in done.stderr, done
    assert len(granted(state)) == 3
