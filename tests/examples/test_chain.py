"""examples/chain: the batch file's three steps run in order on two runtimes, with no keys
(scripted, then native twice against the scripted model server), each later prompt carrying
what the earlier steps did — run exactly as the example's comment says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from orchestrator.engine import EventLog

from .kit import clean_env, example_copy, ringleader


async def test_the_chain_runs_in_order_and_passes_summary_and_diff(tmp_path: Path) -> None:
    folder = example_copy("chain", tmp_path)
    env = clean_env(tmp_path, RINGLEADER_SCRIPTED_SCRIPT="plan-frames.json")
    args = ("batch", "tasks.toml", "--model-server", "model-script.json", "--json")
    result = await trio.to_thread.run_sync(lambda: ringleader(*args, cwd=folder, env=env))
    assert result.returncode == 0, result.stderr
    events: list[dict[str, Any]] = [json.loads(line) for line in result.stdout.splitlines()]

    async with EventLog.open(tmp_path / "state" / "events.db") as log:
        rows = {str(row.outcome["chainTask"]): row for row in await log.runs() if row.outcome}
    outcomes = {task: row.outcome or {} for task, row in rows.items()}
    assert set(rows) == {"plan", "impl", "review"}
    assert {task: row.status for task, row in rows.items()} == dict.fromkeys(rows, "success")
    runtimes = {task: row.runtime_id for task, row in rows.items()}
    assert runtimes == {"plan": "scripted", "impl": "native", "review": "native"}
    # in order: each step started after the one it depends on ended
    plan, impl, review = rows["plan"], rows["impl"], rows["review"]
    plan_out, impl_out, review_out = outcomes["plan"], outcomes["impl"], outcomes["review"]
    assert plan.ended_ms is not None and impl.ended_ms is not None
    assert plan.ended_ms <= impl.started_ms and impl.ended_ms <= review.started_ms
    assert (impl_out["dependsOn"], review_out["dependsOn"]) == (["plan"], ["impl"])

    # the plan's summary reached the implementer; the implementer wrote the file with a tool
    plan_summary = "PLAN: add hello.txt containing 'Hello, newcomer!'"
    assert plan_out["summary"] == plan_summary
    assert impl_out["title"] == f"[[chain:impl]] Carry out this plan: {plan_summary}"
    calls = [e for e in events if e["runKey"] == impl.run_key and e["kind"] == "tool-call"]
    assert [(c["name"], c["input"]["path"]) for c in calls] == [("write_file", "hello.txt")]
    # the reviewer was given the plan, impl's status and impl's diff (the new file)
    prompt = review_out["title"]
    assert f"Plan: {plan_summary}\nImplementation (success):\n" in prompt
    assert "+++ b/hello.txt" in prompt and "+Hello, newcomer!" in prompt
    assert review_out["summary"] == "REVIEW: hello.txt matches the plan. Approved."
    # exactly one done per run, and the impl's change is there for `ringleader diff`
    dones = [e["runKey"] for e in events if e["kind"] == "done"]
    assert sorted(dones) == sorted(row.run_key for row in rows.values())
    diff = await trio.to_thread.run_sync(
        lambda: ringleader("diff", "impl", cwd=folder, env=env)  # as docs/examples.md says
    )
    assert diff.returncode == 0, diff.stderr
    assert "+Hello, newcomer!" in diff.stdout
    assert not (folder / "hello.txt").exists()  # it worked in its own copy, not here


async def test_a_failing_plan_skips_the_rest_and_says_why(tmp_path: Path) -> None:
    folder = example_copy("chain", tmp_path)
    env = clean_env(tmp_path, RINGLEADER_SCRIPTED_SCRIPT="plan-fails.json")
    args = ("batch", "tasks.toml", "--model-server", "model-script.json", "--json")
    result = await trio.to_thread.run_sync(lambda: ringleader(*args, cwd=folder, env=env))
    assert result.returncode == 1, result.stderr
    async with EventLog.open(tmp_path / "state" / "events.db") as log:
        rows = {str(row.outcome["chainTask"]): row for row in await log.runs() if row.outcome}
    assert {task: row.status for task, row in rows.items()} == {
        "plan": "error",
        "impl": "skipped",
        "review": "skipped",
    }
    why = "skipped: its dependency 'plan' ended error: the request is ambiguous"
    impl, review = rows["impl"].outcome or {}, rows["review"].outcome or {}
    assert (impl["errorCode"], impl["summary"]) == ("dependency_skipped", why)
    assert review["summary"] == f"skipped: its dependency 'impl' was skipped ({why})"
    # the skipped steps never started a run: each is an error and a done in the stream, no more
    events = [json.loads(line) for line in result.stdout.splitlines()]
    for task in ("impl", "review"):
        mine = [e["kind"] for e in events if e["runKey"] == rows[task].run_key]
        assert mine == ["error", "done"]
