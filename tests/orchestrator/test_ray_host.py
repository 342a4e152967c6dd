"""``RayHost`` on a real local Ray cluster (a head and one more node, both on 127.0.0.1): many
scripted runs across nodes, abort and steer of a remote native run, a node host killed mid-run,
and a runtime that no node offers. Ray's own processes are real; nothing is faked.

Skipped, with the reason, only where Ray cannot be imported (``pip install 'ringleader[ray]'``).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

# loopback only: Ray's "no cluster across machines" mode, and no usage report
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
ray: Any = pytest.importorskip("ray", reason="Ray is not installed: pip install 'ringleader[ray]'")

from orchestrator.core.config import AccountConfig, RuntimeConfig  # noqa: E402
from orchestrator.core.errors import NodeLostError, NoNodeForRuntimeError  # noqa: E402
from orchestrator.core.registry import RuntimeRegistry, discover_runtimes  # noqa: E402
from orchestrator.engine.eventlog import EventLog  # noqa: E402
from orchestrator.engine.feed import RecordingSink  # noqa: E402
from orchestrator.engine.hosts.ray import RayHost  # noqa: E402
from orchestrator.engine.runner import Runner, TaskSpec  # noqa: E402
from orchestrator.model_server import serve_model_server  # noqa: E402

KEY_ENV = "RINGLEADER_RAY_TEST_KEY"
MODEL = "claude-haiku-4-5"
SLOTS = {"runtime:scripted": 500, "runtime:native": 8}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    cluster_utils: Any = importlib.import_module("ray.cluster_utils")
    node: dict[str, Any] = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "resources": SLOTS}
    made = cluster_utils.Cluster(
        initialize_head=True, head_node_args={**node, "include_dashboard": False}
    )
    made.add_node(**node)
    ray.init(address=made.address, log_to_driver=False, _node_ip_address="127.0.0.1")
    try:
        yield made
    finally:
        ray.shutdown()
        made.shutdown()


def native_at(url: str) -> Callable[[str], RuntimeConfig]:
    """The runtimes' configuration the head ships: native pointed at the model server."""
    config = RuntimeConfig(base_url=url, api_key_env=KEY_ENV, model=MODEL, provider="anthropic")
    return lambda _runtime_id: config


async def until(predicate: Callable[[], bool]) -> None:
    """Wait (polling: the condition lives in another process) until ``predicate()``."""
    while True:
        if predicate():
            return
        await trio.sleep(0.05)


async def read_run(log: EventLog, run_key: str) -> list[Any]:
    return list(await log.read(run_key))


def assert_gapless_one_done(events: list[Any]) -> None:
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.kind for e in events].count("done") == 1
    assert events[-1].kind == "done"


def host_for(runner: Runner, tmp_path: Path, **kwargs: Any) -> RayHost:
    return RayHost(runner, node_state_dir=str(tmp_path / "node-state"), **kwargs)


async def test_200_scripted_runs_across_nodes_end_gapless_with_one_done_each(
    cluster: Any, tmp_path: Path
) -> None:
    async with EventLog.open(tmp_path / "events.db") as log:
        registry = RuntimeRegistry.from_specs(discover_runtimes())
        runner = Runner(registry, sink=RecordingSink(log), state_dir=tmp_path, event_log=log)
        async with host_for(runner, tmp_path) as host:
            assert len(host.nodes) == 2
            refs = [
                host.submit("scripted", TaskSpec(task_id=f"t{i}", title=f"task {i}"))
                for i in range(200)
            ]
            with trio.fail_after(240):
                outcomes = [await ref.outcome() for ref in refs]
            used = {ref.node.node_id for ref in refs if ref.node is not None}
        assert all(o.status == "success" for o in outcomes)
        assert len(used) == 2, "the tasks were not spread over both nodes"
        rows = await log.runs()
        assert len(rows) == 200 and {row.status for row in rows} == {"success"}
        for row in rows:
            assert_gapless_one_done(await read_run(log, row.run_key))


async def test_a_runtime_no_node_offers_fails_fast_with_the_reason(
    cluster: Any, tmp_path: Path
) -> None:
    registry = RuntimeRegistry.from_specs(discover_runtimes())
    runner = Runner(registry, state_dir=tmp_path)
    async with host_for(runner, tmp_path) as host:
        ref = host.submit("codex", TaskSpec(task_id="nowhere", title="x"))
        with trio.fail_after(5), pytest.raises(NoNodeForRuntimeError) as caught:
            await ref.outcome()
    message = str(caught.value)
    assert "'codex'" in message and "runtime:codex" in message


def slow_tool_script(marker: str, delay_s: float) -> dict[str, Any]:
    """A native run that waits ``delay_s`` on its first answer (a tool call), then answers."""
    return {
        "model": MODEL,
        "conversations": [
            {
                "name": marker,
                "marker": f"[[ray:{marker}]]",
                "turns": [
                    {
                        "delay_s": delay_s,
                        "tool_calls": [{"name": "list_files", "input": {"path": "."}}],
                    },
                    {"text": "finished"},
                ],
            }
        ],
    }


async def test_abort_and_steer_reach_a_remote_native_run(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "placeholder-key-for-the-model-server")
    script = slow_tool_script("steer", 3.0)
    script["conversations"].append(slow_tool_script("abort", 120.0)["conversations"][0])
    async with serve_model_server(script) as server, EventLog.open(tmp_path / "e.db") as log:
        registry = RuntimeRegistry.from_specs(discover_runtimes())
        runner = Runner(registry, sink=RecordingSink(log), state_dir=tmp_path, event_log=log)
        host = host_for(runner, tmp_path, configs=native_at(server.url), forward_env=[KEY_ENV])
        async with host:
            steered = host.submit(
                "native", TaskSpec(task_id="steer", title="[[ray:steer]] go", cwd=str(tmp_path))
            )
            aborted = host.submit(
                "native", TaskSpec(task_id="abort", title="[[ray:abort]] go", cwd=str(tmp_path))
            )
            with trio.fail_after(120):
                await steered.started()
                await steered.steer("STEER-FROM-THE-HEAD: prefer small files")
                await aborted.started()
                await until(lambda: bool(server.requests_for("abort")))
                aborted.abort()
                abort_outcome = await aborted.outcome()
                steer_outcome = await steered.outcome()
        assert abort_outcome.status == "aborted"
        assert steer_outcome.status == "success"
        second = server.requests_for("steer")[-1]
        assert "STEER-FROM-THE-HEAD" in str(second.body)
        for ref in (steered, aborted):
            assert_gapless_one_done(await read_run(log, ref.run_keys[-1]))


async def test_a_killed_node_host_interrupts_its_runs_and_loses_nothing(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "placeholder-key-for-the-model-server")
    async with (
        serve_model_server(slow_tool_script("lost", 300.0)) as server,
        EventLog.open(tmp_path / "e.db") as log,
    ):
        registry = RuntimeRegistry.from_specs(discover_runtimes())
        runner = Runner(registry, sink=RecordingSink(log), state_dir=tmp_path, event_log=log)
        host = host_for(runner, tmp_path, configs=native_at(server.url), forward_env=[KEY_ENV])
        async with host:
            ref = host.submit(
                "native", TaskSpec(task_id="lost", title="[[ray:lost]] go", cwd=str(tmp_path))
            )
            with trio.fail_after(120):
                await ref.started()
                await until(lambda: bool(server.requests_for("lost")))
                written = len(await log.read(ref.run_keys[-1]))
                assert ref.node is not None
                ray.kill(ref.node.actor)
                with pytest.raises(NodeLostError) as caught:
                    await ref.outcome()
        assert "interrupted" in str(caught.value)
        (row,) = await log.runs()
        assert row.status == "interrupted"
        events = await read_run(log, row.run_key)
        assert len(events) >= written + 2  # all that was written, then error + done
        assert_gapless_one_done(events)
        assert events[-2].kind == "error" and events[-2].code == "interrupted"


async def test_a_killed_node_host_resumes_the_task_elsewhere_with_shared_state(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "placeholder-key-for-the-model-server")
    script = slow_tool_script("moved", 300.0)
    # the resumed session's request carries the resume prompt (and maybe the first prompt):
    # matched first, answered at once
    script["conversations"].insert(
        0,
        {
            "name": "resumed",
            "marker": "Continue where you left off",
            "turns": [{"text": "resumed here"}],
        },
    )
    async with serve_model_server(script) as server, EventLog.open(tmp_path / "e.db") as log:
        registry = RuntimeRegistry.from_specs(discover_runtimes())
        runner = Runner(registry, sink=RecordingSink(log), state_dir=tmp_path, event_log=log)
        host = host_for(
            runner,
            tmp_path,
            configs=native_at(server.url),
            forward_env=[KEY_ENV],
            shared_state=True,
        )
        async with host:
            ref = host.submit(
                "native", TaskSpec(task_id="moved", title="[[ray:moved]] go", cwd=str(tmp_path))
            )
            with trio.fail_after(180):
                await ref.started()
                await until(lambda: bool(server.requests_for("moved")))
                first_node = ref.node
                assert first_node is not None
                ray.kill(first_node.actor)
                outcome = await ref.outcome()
        assert outcome.status == "success"
        assert ref.node is not None and ref.node is not first_node
        rows = {row.run_key: row for row in await log.runs()}
        first, second = ref.run_keys
        assert rows[first].status == "interrupted"
        resumed = rows[second].outcome
        assert resumed is not None and resumed["resumedFrom"] == first


def ringleader(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {"RINGLEADER_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )


def test_batch_and_runtimes_on_the_cluster_from_the_command_line(
    cluster: Any, tmp_path: Path
) -> None:
    tasks = "\n".join(
        f'[[task]]\nid = "t{i}"\nprompt = "hello {i}"\nruntime = "scripted"\nworkspace = false\n'
        for i in range(6)
    )
    (tmp_path / "tasks.toml").write_text(tasks)
    done = ringleader("batch", "tasks.toml", "--ray", cluster.address, "--json", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    ends = [line for line in lines if line.get("kind") == "done"]
    assert len(ends) == 6 and {line["reason"] for line in ends} == {"success"}

    listed = ringleader("runtimes", "--ray", cluster.address, "--json", tmp_path=tmp_path)
    assert listed.returncode == 0, listed.stderr
    nodes = [json.loads(line) for line in listed.stdout.splitlines()]  # a node per line
    assert len(nodes) == 2
    for node in nodes:
        assert node["slots"] == {"scripted": 500.0, "native": 8.0}
        assert "scripted" in node["runtimes"] and "native" in node["runtimes"]


def test_a_chain_runs_in_order_on_the_cluster_and_skips_after_a_failure(
    cluster: Any, tmp_path: Path
) -> None:
    (tmp_path / "chain.toml").write_text(
        '[[task]]\nid = "a"\nprompt = "first"\nruntime = "scripted"\nworkspace = false\n'
        '[[task]]\nid = "b"\nprompt = "then {{ a.summary }}"\nruntime = "native"\n'
        'workspace = false\ndepends_on = ["a"]\n'
        '[[task]]\nid = "c"\nprompt = "after b"\nruntime = "scripted"\nworkspace = false\n'
        'depends_on = ["b"]\n'
        '[[task]]\nid = "d"\nprompt = "a said: {{ a.summary }}"\nruntime = "scripted"\n'
        'workspace = false\ndepends_on = ["a"]\n'
    )
    # native fails on its node at once: nothing listens at its base_url
    (tmp_path / "ringleader.toml").write_text(
        '[runtimes.native]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5"\n'
        'base_url = "http://127.0.0.1:9"\n'
    )
    done = ringleader("batch", "chain.toml", "--ray", cluster.address, "--json", tmp_path=tmp_path)
    assert done.returncode == 1, done.stderr
    listed = ringleader("replay", "--list", "--json", tmp_path=tmp_path)
    runs = {json.loads(line)["runKey"]: json.loads(line) for line in listed.stdout.splitlines()}

    async def rows() -> list[Any]:
        async with EventLog.open(tmp_path / "state" / "events.db") as log:
            return await log.runs()

    by_task = {row.outcome["chainTask"]: row for row in trio.run(rows) if row.outcome}
    assert {k: v.status for k, v in by_task.items()} == {
        "a": "success",
        "b": "error",
        "c": "skipped",
        "d": "success",
    }
    assert by_task["a"].ended_ms <= by_task["d"].started_ms
    assert runs[by_task["d"].run_key]["prompt"] == "a said: Hello from the scripted runtime."
    assert "its dependency 'b' ended error" in by_task["c"].outcome["summary"]


def spend_script(marker: str) -> dict[str, Any]:
    """A native run whose first model turn reports 2,000 tokens and asks for a tool; the turn
    after it (and its tool) must never happen under a smaller budget."""
    return {
        "model": MODEL,
        "conversations": [
            {
                "name": marker,
                "marker": f"[[ray:{marker}]]",
                "turns": [
                    {
                        "text": "Step one.",
                        "tool_calls": [{"name": "list_files", "input": {"path": "."}}],
                        "usage": {"input_tokens": 1950, "output_tokens": 50},
                    },
                    {
                        "text": "Step two.",
                        "tool_calls": [{"name": "list_files", "input": {"path": "."}}],
                        "usage": {"input_tokens": 3000, "output_tokens": 50},
                    },
                    {"text": "NEVER"},
                ],
            }
        ],
    }


async def test_budgets_stop_a_remote_run_within_one_event_and_span_the_cluster(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task's token budget is enforced on the node (the crossing ``cost`` is the run's last
    word, then ``error{budget_exceeded}`` + ``done{error}``); the host budget counts what every
    node spent, so the next task is refused once it is gone."""
    from orchestrator.core.events import Cost
    from orchestrator.engine.governance import Budget, Governance

    monkeypatch.setenv(KEY_ENV, "placeholder-key-for-the-model-server")
    script = spend_script("spend")
    script["conversations"].append(spend_script("late")["conversations"][0])
    async with serve_model_server(script) as server, EventLog.open(tmp_path / "e.db") as log:
        registry = RuntimeRegistry.from_specs(discover_runtimes())
        governance = Governance(task_budget=Budget(tokens=1_500), host_budget=Budget(tokens=1_800))
        runner = Runner(
            registry,
            sink=RecordingSink(log),
            state_dir=tmp_path,
            event_log=log,
            governance=governance,
        )
        host = host_for(runner, tmp_path, configs=native_at(server.url), forward_env=[KEY_ENV])
        async with host:
            first = host.submit(
                "native", TaskSpec(task_id="spend", title="[[ray:spend]] go", cwd=str(tmp_path))
            )
            with trio.fail_after(120):
                outcome = await first.outcome()
            assert first.node is not None
            assert governance.host_ledger.tokens == 2_000  # the node's spend, at the head
            late = host.submit(
                "native", TaskSpec(task_id="late", title="[[ray:late]] go", cwd=str(tmp_path))
            )
            with trio.fail_after(120):
                refused = await late.outcome()
        assert outcome.status == "error" and outcome.error_code == "budget_exceeded"
        assert len(outcome.runs) == 1 and outcome.runs[0].attempts == 1  # no retry past it
        events = await read_run(log, first.run_keys[-1])
        assert_gapless_one_done(events)
        crossing = next(
            i for i, e in enumerate(events) if isinstance(e, Cost) and e.usage.total_tokens > 1_500
        )
        tail = [e.kind for e in events[crossing + 1 :] if e.kind != "tool-result"]
        assert tail == ["error", "done"]
        (error,) = [e for e in events if e.kind == "error"]
        assert error.code == "budget_exceeded" and events[-1].reason == "error"
        assert len(server.requests_for("spend")) == 1  # the turn after the crossing never ran
        assert refused.status == "error" and refused.error_code == "budget_exceeded"
        assert "host budget of 1,800 tokens is spent" in (refused.error_message or "")
        assert server.requests_for("late") == []  # refused before it started


async def test_a_task_runs_as_its_account_on_a_node_and_its_fallback_account_too(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Accounts travel to the nodes: ``account = "work"`` runs with the work account's URL and
    key there (its own model server here), and ``fallback = ["spare"]`` makes the spare account a
    registry entry of the node as well (``<runtime>@<name>``)."""
    monkeypatch.setenv(KEY_ENV, "placeholder-key-for-the-default-account")
    monkeypatch.setenv("RINGLEADER_RAY_WORK_KEY", "placeholder-key-for-the-work-account")
    script = {
        "conversations": [{"name": "acct", "marker": "[[ray:acct]]", "turns": [{"text": "hi"}]}]
    }
    async with (
        serve_model_server(script) as default_server,
        serve_model_server(script) as work_server,
        EventLog.open(tmp_path / "e.db") as log,
    ):
        config = RuntimeConfig(
            base_url=default_server.url,
            api_key_env=KEY_ENV,
            model=MODEL,
            provider="anthropic",
            accounts={
                "work": AccountConfig(
                    base_url=work_server.url, api_key_env="RINGLEADER_RAY_WORK_KEY"
                ),
                "spare": AccountConfig(),
            },
        )
        registry = RuntimeRegistry.from_specs(discover_runtimes())
        runner = Runner(
            registry,
            sink=RecordingSink(log),
            state_dir=tmp_path,
            event_log=log,
            accounts={f"native@{name}": a for name, a in config.accounts.items()},
        )
        host = host_for(
            runner,
            tmp_path,
            configs=lambda _runtime_id="native": config,
            forward_env=[KEY_ENV, "RINGLEADER_RAY_WORK_KEY"],
        )
        async with host:
            ref = host.submit(
                "native",
                TaskSpec(
                    task_id="acct",
                    title="[[ray:acct]] hello",
                    cwd=str(tmp_path),
                    account="work",
                    fallback=("spare",),
                ),
            )
            with trio.fail_after(180):
                outcome = await ref.outcome()
        assert outcome.status == "success", outcome
        assert work_server.requests_for("acct"), "the work account's URL was not used"
        assert not default_server.requests_for("acct"), "the task ran as the default account"
        (row,) = await log.runs()
        assert row.outcome is not None and row.outcome.get("account") == "work"
