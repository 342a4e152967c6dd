"""Review and land, end to end (issue 32): one side-by-side task in a git repository on the
scripted runtime, the native runtime, the real Claude Code CLI and the real Codex CLI — each real
runtime against its own scripted model server on 127.0.0.1 and writing a different file — then
`ringleader diff`, `compare` and `apply` through the command, the comparison table's lines
column, and a conflicting second apply refused with the checkout byte-identical."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.builtin import builtin_runtimes
from orchestrator.core.registry import ModelServerHook
from orchestrator.model_server import serve_model_server

from .kit import cli_env, installed

pytestmark = pytest.mark.e2e

KEY_ENV = "RINGLEADER_E2E_REVIEW_KEY"

WRITES: dict[str, dict[str, Any]] = {
    "native": {"name": "write_file", "input": {"path": "native.txt", "content": "from native\n"}},
    "claude-code": {
        "name": "Bash",
        "input": {"command": "printf 'from claude\\n' > claude.txt", "description": "write"},
    },
    "codex": {"name": "exec_command", "input": {"cmd": "printf 'from codex\\n' > codex.txt"}},
}
FILES = {"native": "native.txt", "claude-code": "claude.txt", "codex": "codex.txt"}


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


def script(runtime: str, model: str) -> dict[str, Any]:
    return {
        "model": model,
        "conversations": [
            {
                "name": "task",
                "turns": [
                    {"text": "Writing my file.", "tool_calls": [WRITES[runtime]]},
                    {"text": f"{runtime} wrote {FILES[runtime]}."},
                ],
            }
        ],
    }


def env_for(state: Path) -> dict[str, str]:
    return cli_env(
        state,
        XDG_CONFIG_HOME=str(state / "xdg"),
        NO_COLOR="1",
        **{KEY_ENV: "placeholder-key-for-the-scripted-server"},
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )


def ringleader(*args: str, cwd: Path, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=cwd,
        env=env_for(state),
        stdin=subprocess.DEVNULL,
    )


def fingerprint(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            rel = str(Path(folder, name).relative_to(root))
            if not rel.startswith((".git/objects/", ".git/logs/")):
                found[rel] = hashlib.sha256(Path(folder, name).read_bytes()).hexdigest()
    return found


def hook(runtime: str) -> ModelServerHook:
    found = {s.id: s for s in builtin_runtimes()}[runtime].model_server
    assert found is not None
    return found


async def side_by_side(repo: Path, state: Path, config: Path) -> tuple[int, str, str]:
    """`ringleader run` with four runtimes, the three real ones each on its own scripted model
    server (served here, for the duration of the run)."""
    lines: list[str] = []
    async with (
        serve_model_server(script("native", hook("native").model)) as native,
        serve_model_server(script("claude-code", hook("claude-code").model)) as claude,
        serve_model_server(script("codex", hook("codex").model)) as codex,
    ):
        for runtime, server in (("native", native), ("claude-code", claude), ("codex", codex)):
            spec = hook(runtime)
            url = server.url if spec.api == "anthropic" else server.base_url
            lines += [
                f"[runtimes.{runtime}]",
                f'base_url = "{url}"',
                f'api_key_env = "{KEY_ENV}"',
                f'model = "{spec.model}"',
            ]
            if spec.provider is not None:
                lines.append(f'provider = "{spec.provider}"')
            if runtime == "claude-code":
                lines.append('permission = "allow"')
        config.write_text("\n".join(lines) + "\n")
        args = ["--config", str(config), "run"]
        for runtime in ("scripted", "native", "claude-code", "codex"):
            args += ["--runtime", runtime]
        done = await trio.run_process(
            [sys.executable, "-m", "orchestrator.cli", *args, "write your file"],
            cwd=repo,
            env=env_for(state),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            stdin=b"",
        )
        out: bytes = done.stdout
        err: bytes = done.stderr
        return done.returncode, out.decode(), err.decode()


def test_diff_compare_and_apply_a_side_by_side_task(tmp_path: Path) -> None:
    installed("claude-code")
    installed("codex")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# demo\n")
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    state = tmp_path / "state"
    code, stdout, stderr = trio.run(side_by_side, repo, state, tmp_path / "ringleader.toml")
    assert code == 0, stdout[-4000:] + stderr[-3000:]
    rows = {
        cells[0]: cells
        for line in stdout.splitlines()
        if line.startswith("│")
        for cells in [[c.strip() for c in line.strip("│").split("│")]]
    }
    for runtime in FILES:
        assert rows[runtime][-3:-1] == ["1 file", "+1 -0"], rows[runtime]  # files, lines
    assert rows["scripted"][-3:-1] == ["none", "-"]
    task = next(
        line.split("ringleader compare ")[1].split("`")[0]
        for line in stdout.splitlines()
        if "ringleader compare " in line
    )

    for runtime, name in FILES.items():
        shown = ringleader("diff", f"{task}/{runtime}", "--json", cwd=repo, state=state)
        assert shown.returncode == 0, shown.stderr
        body = json.loads(shown.stdout)
        assert [(f["path"], f["status"], f["added"]) for f in body["files"]] == [
            (name, "added", 1)
        ], body
        assert body["files"][0]["hunks"][0]["lines"][0].startswith("+from ")

    compared = ringleader("compare", task, "--json", cwd=repo, state=state)
    assert compared.returncode == 0, compared.stderr
    body = json.loads(compared.stdout)
    assert {r["label"]: r["files"] for r in body["runs"]} == {
        "scripted": [],
        "native": ["native.txt"],
        "claude-code": ["claude.txt"],
        "codex": ["codex.txt"],
    }
    assert all(not f["agree"] and len(f["runs"]) == 1 for f in body["files"])
    table = ringleader("compare", "last", cwd=repo, state=state)
    assert "only codex" in table.stdout and "only native" in table.stdout

    landed = ringleader("apply", f"{task}/claude-code", cwd=repo, state=state)
    assert landed.returncode == 0, landed.stderr
    assert (repo / "claude.txt").read_text() == "from claude\n"
    assert git("log", "-1", "--format=%s", cwd=repo).strip() == "claude-code wrote claude.txt."
    assert git("status", "--porcelain", cwd=repo) == ""

    landed = ringleader("apply", f"{task}/codex", "--merge", cwd=repo, state=state)
    assert landed.returncode == 0, landed.stderr
    assert (repo / "codex.txt").read_text() == "from codex\n"
    assert len(git("log", "-1", "--format=%P", cwd=repo).split()) == 2

    # the native run's file collides with one the person committed meanwhile
    (repo / "native.txt").write_text("the person's own\n")
    git("add", "native.txt", cwd=repo)
    git("commit", "-qm", "mine", cwd=repo)
    before = fingerprint(repo)
    refused = ringleader("apply", f"{task}/native", cwd=repo, state=state)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()]
    assert "conflicts with main in 1 file: native.txt" in refused.stderr
    assert fingerprint(repo) == before

    listed = ringleader("workspaces", "--json", cwd=repo, state=state)
    applied = {
        json.loads(line)["label"]: json.loads(line)["applied"]
        for line in listed.stdout.splitlines()
    }
    assert applied["claude-code"] and applied["codex"] and not applied["native"]
