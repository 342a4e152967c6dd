"""Task chains in batch files: ``depends_on``, placeholders, skipping, the graph's checks."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.native import NativeAdapter
from adapters.native.models.providers import create_adapter
from adapters.scripted import ScriptedAdapter
from orchestrator.cli.batch import load_batch
from orchestrator.cli.commands import batch
from orchestrator.core import ConfigError, RuntimeRegistry, StartOpts
from orchestrator.engine import EventLog
from orchestrator.engine.chains import (
    StepResult,
    blocked_by,
    check_graph,
    check_placeholders,
    render_prompt,
)
from orchestrator.model_server import serve_model_server


def test_the_graph_orders_dependencies_first() -> None:
    order = check_graph({"review": ["impl"], "impl": ["plan"], "plan": [], "docs": []})
    assert order.index("plan") < order.index("impl") < order.index("review")
    assert set(order) == {"review", "impl", "plan", "docs"}


def test_a_cycle_is_one_error_that_spells_it_out() -> None:
    with pytest.raises(ConfigError) as caught:
        check_graph({"a": ["c"], "b": ["a"], "c": ["b"], "d": []}, where="tasks.toml")
    message = str(caught.value)
    assert "cycle" in message and "\n" not in message
    assert "a → c → b → a" in message
    with pytest.raises(ConfigError, match="'a' depends on itself"):
        check_graph({"a": ["a"]})


def test_an_unknown_dependency_is_one_error() -> None:
    with pytest.raises(ConfigError, match="'impl' depends on 'plna', which is not a task here"):
        check_graph({"plan": [], "impl": ["plna"]})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("use {{ plan.summery }}", "unknown field 'summery'"),
        ("use {{ docs.summary }}", "names 'docs', which is not among its dependencies"),
        ("use {{ plan }}", "is not a placeholder"),
    ],
)
def test_a_bad_placeholder_is_refused_before_anything_starts(prompt: str, expected: str) -> None:
    deps = {"plan": (), "impl": ("plan",), "docs": ()}
    with pytest.raises(ConfigError, match=expected):
        check_placeholders(deps, {"plan": "p", "impl": prompt, "docs": "d"})


def test_placeholders_reach_through_transitive_dependencies() -> None:
    deps = {"plan": (), "impl": ("plan",), "review": ("impl",)}
    check_placeholders(deps, {"review": "{{ plan.summary }} {{impl.diff}} {{ impl.status }}"})
    results = {
        "plan": StepResult("success", summary="PLAN"),
        "impl": StepResult("success", summary="done", diff=""),
    }
    text = render_prompt("{{ plan.summary }} / {{impl.diff}} / {{ impl.status }}", results)
    assert text == "PLAN / (no changes) / success"


def test_a_failed_dependency_blocks_and_says_why() -> None:
    results = {
        "plan": StepResult("success"),
        "impl": StepResult("error", reason="401 unauthorized"),
        "x": StepResult("skipped", reason="skipped: …"),
    }
    assert blocked_by("review", ["plan"], results) is None
    assert blocked_by("review", ["plan", "impl"], results) == (
        "skipped: its dependency 'impl' ended error: 401 unauthorized"
    )
    assert "was skipped" in (blocked_by("y", ["x"], results) or "")


def test_a_batch_file_with_a_cycle_is_one_config_error(tmp_path: Path) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text(
        '[[task]]\nid = "a"\nruntime = "scripted"\nprompt = "p"\ndepends_on = ["b"]\n'
        '[[task]]\nid = "b"\nruntime = "scripted"\nprompt = "q"\ndepends_on = ["a"]\n'
    )
    with pytest.raises(ConfigError, match=r"cycle: a → b → a") as caught:
        load_batch(path)
    assert str(path) in str(caught.value)


def test_ringleader_batch_with_a_cycle_starts_nothing(tmp_path: Path) -> None:
    (tmp_path / "tasks.toml").write_text(
        '[[task]]\nid = "a"\nruntime = "scripted"\nprompt = "p"\ndepends_on = ["c"]\n'
        '[[task]]\nid = "b"\nruntime = "scripted"\nprompt = "q"\ndepends_on = ["a"]\n'
        '[[task]]\nid = "c"\nruntime = "scripted"\nprompt = "r"\ndepends_on = ["b"]\n'
    )
    state = tmp_path / "state"
    env = dict(os.environ, RINGLEADER_STATE_DIR=str(state))
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "batch", "tasks.toml"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "a → c → b → a" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (state / "events.db").exists()  # nothing started


# -- a chain of three tasks on two runtimes (scripted, native on the scripted model server) ----


def scripted(summary: str) -> ScriptedAdapter:
    return ScriptedAdapter(
        [
            {"type": "init", "sessionId": f"s-{uuid.uuid4().hex}", "model": "scripted-model"},
            {"type": "text", "text": summary},
            {"type": "usage", "inputTokens": 3, "outputTokens": 2, "costUsd": None},
            {"type": "result", "ok": True, "summary": summary},
        ]
    )


IMPL_OK: dict[str, Any] = {
    "name": "impl-ok",
    "marker": "[[chain:impl-ok]]",
    "turns": [
        {
            "text": "Writing it.",
            "tool_calls": [
                {"name": "write_file", "input": {"path": "hello.txt", "content": "hello chain\n"}}
            ],
        },
        {"text": "IMPLEMENTED hello.txt"},
    ],
}
IMPL_FAILS: dict[str, Any] = {
    "name": "impl-fails",
    "marker": "[[chain:impl-fails]]",
    "turns": [{"fault": {"kind": "authentication", "times": 99}, "text": "never"}],
}


def chain_file(folder: Path, impl_marker: str) -> Path:
    path = folder / "chain.toml"
    path.write_text(
        '[[task]]\nid = "plan"\nruntime = "scripted"\nprompt = "Plan a greeting file."\n\n'
        '[[task]]\nid = "impl"\nruntime = "native"\ndepends_on = ["plan"]\n'
        f'prompt = "{impl_marker} Do this plan: {{{{ plan.summary }}}}"\n\n'
        '[[task]]\nid = "review"\nruntime = "scripted"\ndepends_on = ["impl"]\n'
        'prompt = """Review. Plan: {{ plan.summary }}\nDiff:\n{{ impl.diff }}"""\n'
    )
    return path


async def run_chain(tmp_path: Path, impl_marker: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("a project\n")
    state = tmp_path / "state"
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(state))
    file = chain_file(work, impl_marker)
    out = io.StringIO()
    async with serve_model_server({"conversations": [IMPL_OK, IMPL_FAILS]}) as server:

        def model(opts: StartOpts) -> Any:
            return create_adapter(
                provider="anthropic",
                model="claude-haiku-4-5",
                api_key="sk-test-0000000000",
                base_url=server.url,
            )

        registry = RuntimeRegistry()
        registry.register_factory("scripted", lambda: scripted("PLAN: write hello.txt"))
        registry.register_factory("native", lambda: NativeAdapter(model_factory=model))
        with trio.fail_after(90):
            code = await batch(registry, str(file), jobs=None, as_json=True, out=out)
        requests = list(server.requests)
    async with EventLog.open(state / "events.db") as log:
        rows = await log.runs()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return code, rows, lines, requests


async def test_a_chain_passes_summary_and_diff_along(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, rows, _, requests = await run_chain(tmp_path, "[[chain:impl-ok]]", monkeypatch)
    assert code == 0
    by_task = {row.outcome["chainTask"]: row for row in rows if row.outcome}
    assert set(by_task) == {"plan", "impl", "review"}
    assert all(row.status == "success" for row in by_task.values())
    # in order: each started after its dependency ended
    assert by_task["plan"].ended_ms <= by_task["impl"].started_ms  # type: ignore[operator]
    assert by_task["impl"].ended_ms <= by_task["review"].started_ms  # type: ignore[operator]
    # one chain, linked on the runs rows
    assert len({row.outcome["chain"] for row in by_task.values()}) == 1
    assert by_task["review"].outcome["dependsOn"] == ["impl"]
    # the native run was told the plan's summary
    assert "Do this plan: PLAN: write hello.txt" in json.dumps(requests[0].body)
    review = by_task["review"].outcome["title"]
    assert "Plan: PLAN: write hello.txt" in review
    assert "+++ b/hello.txt" in review and "+hello chain" in review  # the workspace's diff


async def test_a_failing_middle_step_skips_what_depends_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, rows, lines, _ = await run_chain(tmp_path, "[[chain:impl-fails]]", monkeypatch)
    assert code == 1
    by_task = {row.outcome["chainTask"]: row for row in rows if row.outcome}
    assert by_task["plan"].status == "success"
    assert by_task["impl"].status == "error"
    skipped = by_task["review"]
    assert skipped.status == "skipped"
    assert skipped.outcome["errorCode"] == "dependency_skipped"
    assert skipped.outcome["summary"].startswith("skipped: its dependency 'impl' ended error")
    # the skip is in the stream (and so in the log) as a run of its own: error + done
    mine = [line for line in lines if line["runKey"] == skipped.run_key]
    assert [line["kind"] for line in mine] == ["error", "done"]
    assert mine[0]["code"] == "dependency_skipped"


def test_a_skipped_task_is_in_the_table(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    frames = tmp_path / "fail.json"
    frames.write_text(
        json.dumps(
            [
                {"type": "init", "sessionId": "x", "model": "m"},
                {"type": "result", "ok": False, "summary": "it broke"},
            ]
        )
    )
    (work / "tasks.toml").write_text(
        '[[task]]\nid = "first"\nruntime = "scripted"\nprompt = "p"\n'
        '[[task]]\nid = "second"\nruntime = "scripted"\nprompt = "q"\ndepends_on = ["first"]\n'
    )
    env = dict(
        os.environ,
        RINGLEADER_STATE_DIR=str(tmp_path / "state"),
        RINGLEADER_SCRIPTED_SCRIPT=str(frames),
    )
    env.pop("NO_COLOR", None)
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "batch", "tasks.toml"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=work,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("│ second "))
    assert "skipped" in row
    assert "second: skipped: its dependency 'first' ended error" in result.stdout


async def test_the_board_links_chained_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx2

    from orchestrator.board.server import board_app
    from orchestrator.engine.feed import Feed

    await run_chain(tmp_path, "[[chain:impl-fails]]", monkeypatch)
    async with EventLog.open(tmp_path / "state" / "events.db") as log:
        transport = httpx2.ASGITransport(app=board_app(Feed(), log, token="tok"))
        bearer = {"authorization": "Bearer tok"}
        async with httpx2.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", headers=bearer
        ) as client:
            cards = (await client.get("/board")).json()["cards"]
            by_task = {c["chainTask"]: c for c in cards}
            assert set(by_task) == {"plan", "impl", "review"}
            assert by_task["review"]["dependsOn"] == ["impl"]
            assert len({c["chain"] for c in cards}) == 1
            meta = (
                await client.get("/run-meta", params={"run": by_task["review"]["runKey"]})
            ).json()
    related = {r["outcome"]["chainTask"] for r in meta["related"]}
    assert related == {"plan", "impl"}  # the run's page links the rest of its chain
