"""A chain of three tasks on three real runtimes: ``ringleader batch chain.toml --model-server``
with the plan on native, the implementation on the real Claude Code CLI and the review on the
real Codex CLI, all against the scripted model server. The implementation's summary and its
workspace's diff reach the reviewer's prompt; when the middle step fails, the review is skipped
and said so. Claude Code and Codex are the CLIs ``scripts/install-runtimes`` installs; a missing
one FAILS with its install command.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_model_server import cli_env, installed, ringleader

pytestmark = pytest.mark.e2e

PLAN = "PLAN: write hello.txt with a greeting"


def script(impl_fails: bool) -> dict[str, Any]:
    impl: list[dict[str, Any]] = (
        [{"fault": {"kind": "authentication", "times": 99}, "text": "never"}]
        if impl_fails
        else [
            {
                "text": "Writing it.",
                "tool_calls": [
                    {"name": "Bash", "input": {"command": "printf 'hello chain\\n' > hello.txt"}}
                ],
            },
            {"text": "IMPLEMENTED hello.txt"},
        ]
    )
    return {
        "conversations": [
            {"name": "plan", "marker": "[[chain3:plan]]", "turns": [{"text": PLAN}]},
            {"name": "impl", "marker": "[[chain3:impl]]", "turns": impl},
            {"name": "review", "marker": "[[chain3:review]]", "turns": [{"text": "LGTM"}]},
        ]
    }


CHAIN = """
[[task]]
id = "plan"
runtime = "native"
workspace = false
prompt = "[[chain3:plan]] Plan a greeting file."

[[task]]
id = "impl"
runtime = "claude-code"
depends_on = ["plan"]
prompt = "[[chain3:impl]] Do this plan: {{ plan.summary }}"

[[task]]
id = "review"
runtime = "codex"
depends_on = ["impl"]
prompt = \"\"\"[[chain3:review]] Review. Said: {{ impl.summary }}
Diff:
{{ impl.diff }}\"\"\"
"""


def run_chain(tmp_path: Path, *, impl_fails: bool) -> tuple[int, dict[str, tuple[str, Any]]]:
    for runtime in ("claude-code", "codex"):
        installed(runtime)
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("a project\n")
    (work / "chain.toml").write_text(CHAIN)
    (tmp_path / "script.json").write_text(json.dumps(script(impl_fails)))
    env = cli_env(tmp_path)
    # the person lets Claude Code change files in the task's workspace (their own config)
    user_config = tmp_path / "xdg" / "ringleader" / "config.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text('[runtimes.claude-code]\npermission = "allow"\n')
    done = ringleader(
        "batch", "chain.toml", "--model-server", str(tmp_path / "script.json"), "--json",
        cwd=work, env=env, timeout=400,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    db = sqlite3.connect(tmp_path / "state" / "events.db")
    try:
        rows = db.execute("SELECT status, outcome FROM runs").fetchall()
    finally:
        db.close()
    by_task: dict[str, tuple[str, Any]] = {}
    for status, outcome in rows:
        data: dict[str, Any] = json.loads(outcome) if outcome else {}
        if "chainTask" in data:
            by_task[data["chainTask"]] = (status, data)
    return done.returncode, by_task


def test_three_runtimes_pass_the_summary_and_the_diff_along(tmp_path: Path) -> None:
    code, by_task = run_chain(tmp_path, impl_fails=False)
    assert {task: status for task, (status, _) in by_task.items()} == {
        "plan": "success",
        "impl": "success",
        "review": "success",
    }, by_task
    assert code == 0
    review = by_task["review"][1]["title"]
    assert "Said: IMPLEMENTED hello.txt" in review
    assert "+++ b/hello.txt" in review and "+hello chain" in review  # Claude Code's change
    assert f"Do this plan: {PLAN}" in by_task["impl"][1]["title"]


def test_a_failing_middle_step_on_a_real_runtime_skips_the_review(tmp_path: Path) -> None:
    code, by_task = run_chain(tmp_path, impl_fails=True)
    assert code == 1
    assert by_task["plan"][0] == "success"
    assert by_task["impl"][0] == "error"
    status, skipped = by_task["review"]
    assert status == "skipped"
    assert skipped["errorCode"] == "dependency_skipped"
    assert skipped["summary"].startswith("skipped: its dependency 'impl' ended error")
