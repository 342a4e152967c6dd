"""The native adapter ships its workspace tools: end to end against the scripted model server,
the permission policy and the blocklist as options, and an abort that reaps a running command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.native import NativeAdapter, PermissionPolicy
from adapters.native.executor import PermissionRequest
from adapters.native.models.providers import create_adapter
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.shell import BashOptions
from adapters.native.tools import Tool, ToolContext
from contract import check_stream, collect_run
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.errors import ConfigError
from orchestrator.core.events import Done, RuntimeEvent, ToolCall, ToolResult
from orchestrator.core.lifetime import ProcessIdentity
from orchestrator.model_server import serve_model_server

from .conftest import EchoInput

ALL_TOOLS = ["bash", "edit_file", "glob", "grep", "list_files", "read_file", "write_file"]


def start_opts(cwd: Path, **kw: Any) -> StartOpts:
    return StartOpts(agent_id="a", session_key="k", message="work", cwd=str(cwd), **kw)


async def run(adapter: NativeAdapter, opts: StartOpts) -> list[RuntimeEvent]:
    handle = await adapter.start(TaskHandle(), opts)
    events = await collect_run(adapter.events(handle), deadline_s=30)
    check_stream(events)
    return events


def results(events: list[RuntimeEvent]) -> dict[str, ToolResult]:
    calls = {e.tool_call_id: e.name for e in events if isinstance(e, ToolCall)}
    return {calls[e.tool_call_id]: e for e in events if isinstance(e, ToolResult)}


SCRIPT: dict[str, Any] = {
    "conversations": [
        {
            "name": "work",
            "turns": [
                {
                    "text": "Writing. ",
                    "tool_calls": [
                        {"name": "write_file", "input": {"path": "notes/a.txt", "content": "hi\n"}}
                    ],
                },
                {
                    "text": "Reading. ",
                    "tool_calls": [
                        {"name": "read_file", "input": {"path": "notes/a.txt"}},
                        {"name": "grep", "input": {"pattern": "hi"}},
                    ],
                },
                {
                    "text": "Trying the shell. ",
                    "tool_calls": [{"name": "bash", "input": {"command": "ls"}}],
                },
                {"text": "Done."},
            ],
        }
    ]
}


async def test_native_run_against_the_model_server_uses_the_tools(tmp_path: Path) -> None:
    def factory(opts: StartOpts) -> Any:
        return create_adapter(
            provider="anthropic", model="scripted-model", api_key="sk-test-0", base_url=server.url
        )

    async with serve_model_server(SCRIPT) as server:
        async with NativeAdapter(model_factory=factory) as adapter:
            events = await run(adapter, start_opts(tmp_path))
    by_name = results(events)
    assert not by_name["write_file"].is_error
    assert not by_name["read_file"].is_error
    assert by_name["read_file"].output == "hi\n"
    assert by_name["grep"].output == "notes/a.txt:1:hi"
    # the default policy asks before bash, and a headless run cannot ask: denied, run goes on
    assert by_name["bash"].is_error
    assert "Permission denied" in by_name["bash"].output
    assert (tmp_path / "notes" / "a.txt").read_text() == "hi\n"
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "success"


def scripted(*replies: Reply) -> ScriptedModel:
    return ScriptedModel(list(replies), model="m")


async def test_tool_set_offered_to_the_model_and_blocklist(tmp_path: Path) -> None:
    model = scripted(
        Reply(
            tool_calls=[("bash", {"command": "true"}), ("write_file", {"path": "x", "content": ""})]
        ),
        Reply(text="ok"),
    )
    async with NativeAdapter(model_factory=lambda o: model) as adapter:
        events = await run(
            adapter,
            start_opts(
                tmp_path, child_tool_blocklist=("bash", "Write_File", "GLOVE_POST_TO_INBOX")
            ),
        )
    offered = sorted(t.name for t in model.requests[0].tools)
    # the built-in task tool ships (the store has tasks); the blocklist removes built-ins too
    assert offered == [
        "edit_file",
        "glob",
        "glove_update_tasks",
        "grep",
        "list_files",
        "read_file",
    ]
    by_name = results(events)
    assert "No tool called bash exists" in by_name["bash"].output
    assert by_name["write_file"].is_error
    assert not (tmp_path / "x").exists()


async def test_tool_selection_and_custom_tools(tmp_path: Path) -> None:
    async def echo(inp: EchoInput, ctx: ToolContext) -> str:
        return f"echo:{inp.text}"

    custom_list = Tool(name="list_files", description="mine", do=echo, input_model=EchoInput)
    model = scripted(Reply(tool_calls=[("list_files", {"text": "x"})]), Reply(text="ok"))
    async with NativeAdapter(
        model_factory=lambda o: model, tools=[custom_list], workspace_tools=["read_file"]
    ) as adapter:
        events = await run(adapter, start_opts(tmp_path))
    assert sorted(t.name for t in model.requests[0].tools) == [
        "glove_post_to_inbox",
        "glove_update_tasks",
        "list_files",
        "read_file",
    ]
    assert results(events)["list_files"].output == "echo:x"  # a custom tool replaces a built-in
    none = scripted(Reply(text="ok"))
    async with NativeAdapter(
        model_factory=lambda o: none, workspace_tools=False, builtin_tools=False
    ) as adapter:
        await run(adapter, start_opts(tmp_path))
    assert list(none.requests[0].tools) == []
    with pytest.raises(ConfigError, match="unknown workspace tool"):
        NativeAdapter(workspace_tools=["read_file", "format_disk"])


async def test_policy_and_handler_options(tmp_path: Path) -> None:
    asked: list[str] = []

    async def approve(request: PermissionRequest) -> bool:
        asked.append(request.tool_name)
        return True

    def model() -> ScriptedModel:
        return scripted(
            Reply(
                tool_calls=[
                    ("bash", {"command": "echo ran > ran.txt"}),
                    ("write_file", {"path": "w.txt", "content": "w"}),
                ]
            ),
            Reply(text="ok"),
        )

    m1 = model()
    async with NativeAdapter(model_factory=lambda o: m1, permission_handler=approve) as adapter:
        events = await run(adapter, start_opts(tmp_path))
    assert asked == ["bash"]  # writes are allowed by default; bash asked
    assert not any(r.is_error for r in results(events).values())
    assert (tmp_path / "ran.txt").read_text() == "ran\n"

    m2 = model()
    async with NativeAdapter(model_factory=lambda o: m2, permissions="read-only") as adapter:
        events = await run(adapter, start_opts(tmp_path))
    assert all(r.is_error for r in results(events).values())

    m3 = model()
    policy = PermissionPolicy(bash="allow", tools={"write_file": "deny"})
    async with NativeAdapter(model_factory=lambda o: m3, permissions=policy) as adapter:
        events = await run(adapter, start_opts(tmp_path))
    by_name = results(events)
    assert not by_name["bash"].is_error
    assert by_name["write_file"].is_error and "permission policy" in by_name["write_file"].output


async def test_the_workspace_option_is_used_without_a_cwd(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("")
    model = scripted(Reply(tool_calls=[("list_files", {})]), Reply(text="ok"))
    async with NativeAdapter(model_factory=lambda o: model, workspace=tmp_path) as adapter:
        events = await run(adapter, StartOpts(agent_id="a", session_key="k", message="m"))
    assert results(events)["list_files"].output == "marker.txt"


async def test_runs_in_different_directories_each_see_their_own(tmp_path: Path) -> None:
    """The built-in tools are built once per directory: a run sees its own directory, also
    after a run elsewhere, and a policy set on the adapter later applies to the next run."""
    one, two = tmp_path / "one", tmp_path / "two"
    for d in (one, two):
        d.mkdir()
        (d / f"in-{d.name}.txt").write_text("")

    def factory(opts: StartOpts) -> ScriptedModel:
        calls = [("list_files", {}), ("write_file", {"path": "w.txt", "content": "x"})]
        return scripted(Reply(tool_calls=calls), Reply(text="ok"))

    async with NativeAdapter(model_factory=factory) as adapter:
        seen = [
            results(await run(adapter, start_opts(d)))["list_files"].output for d in (one, two, one)
        ]
        adapter.permissions = PermissionPolicy(write="deny")
        denied = results(await run(adapter, start_opts(one)))["write_file"]
    assert seen == ["in-one.txt", "in-two.txt", "in-one.txt\nw.txt"]
    assert (one / "w.txt").read_text() == "x" and (two / "w.txt").read_text() == "x"
    assert denied.is_error and "permission policy" in denied.output


RECORD_BG = "echo $! $(cut -d' ' -f22 /proc/$!/stat)"
"""The background job's pid and start time: its identity (the command runs in a PID namespace
of its own, so ``$!`` is that namespace's pid)."""


def _alive(recorded: str) -> bool:
    pid, start = recorded.split()
    return ProcessIdentity(int(pid), int(start)).alive()


async def test_abort_during_bash_reaps_the_command(tmp_path: Path) -> None:
    model = scripted(
        Reply(
            tool_calls=[
                (
                    "bash",
                    {"command": f"sleep 300 & {RECORD_BG} > bg.tmp && mv bg.tmp bg.pid; sleep 300"},
                )
            ]
        ),
        Reply(text="never"),
    )
    async with NativeAdapter(
        model_factory=lambda o: model,
        permissions="full-access",
        bash=BashOptions(kill_grace_s=0.2),
        abort_grace_s=1.0,
    ) as adapter:
        handle = await adapter.start(TaskHandle(), start_opts(tmp_path))
        events: list[RuntimeEvent] = []
        async with adapter.events(handle) as stream:
            async for event in stream:
                events.append(event)
                if isinstance(event, ToolCall):
                    with trio.fail_after(10):
                        # the command's file appears from another process: nothing to wait on
                        while not (tmp_path / "bg.pid").exists():  # noqa: ASYNC110
                            await trio.sleep(0.01)
                    await adapter.abort(handle)
    check_stream(events)
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "aborted"
    assert not _alive((tmp_path / "bg.pid").read_text()), (
        "the command's background job outlived the run"
    )


@pytest.mark.parametrize("plan", [True, False])
async def test_plan_mode_is_read_only_whatever_the_policy(tmp_path: Path, plan: bool) -> None:
    model = scripted(
        Reply(
            tool_calls=[
                ("write_file", {"path": "planned.txt", "content": "x"}),
                ("read_file", {"path": "seen.txt"}),
            ]
        ),
        Reply(text="PLAN: write planned.txt"),
    )
    (tmp_path / "seen.txt").write_text("hello")
    policy = PermissionPolicy(write="allow", bash="allow", tools={"write_file": "allow"})
    async with NativeAdapter(model_factory=lambda o: model, permissions=policy) as adapter:
        events = await run(adapter, start_opts(tmp_path, plan=plan))
    by_name = results(events)
    assert not by_name["read_file"].is_error and by_name["read_file"].output == "hello"
    assert by_name["write_file"].is_error is plan
    assert (tmp_path / "planned.txt").exists() is not plan
