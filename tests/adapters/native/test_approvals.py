"""Anvia's tool-approval rules (``anvia-core-agent.txt``, "Tool Approvals"), one test per rule,
on the native loop with a scripted model; and the ``status{waiting_approval}`` event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from adapters.native import NativeAdapter, PermissionPolicy
from adapters.native.anvia import AgentBuilder, AnviaAgent
from adapters.native.glove import Glove
from adapters.native.lifecycle import LifecycleHooks, RequestApproval, ToolCallAction, ToolCallInfo
from adapters.native.loop import LoopConfig
from adapters.native.messages import ToolResultData
from adapters.native.models.scripted import Reply, ScriptedModel
from adapters.native.stores.memory import MemoryStore
from adapters.native.tools import Tool, ToolContext
from contract import check_stream, collect_run
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.approvals import (
    DEFAULT_REJECT_MESSAGE,
    ApprovalDecision,
    ApprovalRequest,
    DecisionLike,
    approve,
    reject,
)
from orchestrator.core.errors import ToolApprovalRequiredError
from orchestrator.core.events import RuntimeEvent, Status, ToolResult
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.runner import Runner, TaskSpec

from .conftest import EchoInput


def _glove(ran: list[str], *, handler: Any = None, text: str = "rm -rf build") -> Glove:
    async def shell(inp: EchoInput, ctx: ToolContext) -> str:
        await trio.lowlevel.checkpoint()
        ran.append(inp.text)
        return f"ran {inp.text}"

    model = ScriptedModel([Reply(tool_calls=[("shell", {"text": text})]), Reply(text="done")])
    glove = Glove(model=model, permission_handler=handler)
    return glove.fold("shell", "Run a command.", EchoInput, shell, requires_permission=True).build()


async def _result(glove: Glove) -> ToolResultData:
    """The result of the run's first tool call as the model saw it."""
    for message in await glove.store.get_messages():
        if message.tool_results:
            return message.tool_results[0].result
    raise AssertionError("no tool result stored")


def _answer(decision: DecisionLike, asked: list[ApprovalRequest] | None = None) -> Any:
    async def handler(request: ApprovalRequest) -> DecisionLike:
        await trio.lowlevel.checkpoint()
        if asked is not None:
            asked.append(request)
        return decision

    return handler


@pytest.mark.parametrize(
    "decision", [True, {"approved": True, "reason": "ok"}, approve("looks safe")]
)
async def test_approved_decisions_run_the_tool(decision: DecisionLike) -> None:
    ran: list[str] = []
    asked: list[ApprovalRequest] = []
    glove = _glove(ran, handler=_answer(decision, asked))
    result = await glove.process_request("clean up")
    assert result.text == "done" and ran == ["rm -rf build"]
    assert (await _result(glove)).data == "ran rm -rf build"
    [request] = asked
    assert (request.tool_name, request.tool_input) == (
        "shell",
        {"text": "rm -rf build", "delay": 0.0},
    )
    assert request.session_id == glove.store.identifier and request.id.startswith("ap-")


@pytest.mark.parametrize(
    ("decision", "seen"),
    [
        (reject("Not on main, please.", reason="policy"), "Not on main, please."),
        ({"approved": False, "reason": "too risky"}, "too risky"),
        ({"approved": False, "rejectMessage": "use git clean"}, "use git clean"),
        (False, DEFAULT_REJECT_MESSAGE),
        (ApprovalDecision(False), "Tool approval was rejected."),
    ],
)
async def test_rejected_decisions_skip_execution_and_return_the_rejection_text_as_the_tool_result(
    decision: DecisionLike, seen: str
) -> None:
    ran: list[str] = []
    glove = _glove(ran, handler=_answer(decision))
    result = await glove.process_request("clean up")
    assert result.text == "done" and ran == []
    data = await _result(glove)
    assert data.is_error and data.error_kind == "denied" and data.message == seen


async def test_request_level_approvals_override_agent_level_approvals() -> None:
    ran: list[str] = []
    agent_level: list[ApprovalRequest] = []
    request_level: list[ApprovalRequest] = []
    glove = _glove(ran, handler=_answer(False, agent_level))
    await glove.process_request("clean up", approvals=_answer(True, request_level))
    assert ran == ["rm -rf build"] and len(request_level) == 1 and agent_level == []


async def test_a_call_that_requires_approval_with_no_handler_throws_tool_approval_required_error() -> (
    None
):
    ran: list[str] = []
    glove = _glove(ran)
    with pytest.raises(ToolApprovalRequiredError) as caught:
        await glove.process_request("clean up")
    assert ran == []
    request = caught.value.request
    assert isinstance(request, ApprovalRequest) and request.tool_name == "shell"
    # the call is closed in the history (no dangling tool_use), as after an abort
    assert (await _result(glove)).error_kind == "aborted"


async def test_an_approval_may_edit_the_input_which_is_validated_again() -> None:
    ran: list[str] = []
    glove = _glove(ran, handler=_answer(approve(input={"text": "rm -rf build/tmp"})))
    await glove.process_request("clean up")
    assert ran == ["rm -rf build/tmp"]

    ran2: list[str] = []
    glove2 = _glove(ran2, handler=_answer({"approved": True, "input": {"text": 3}}))
    await glove2.process_request("clean up")
    data = await _result(glove2)
    assert ran2 == [] and data.error_kind == "invalid_input" and "text" in (data.message or "")


async def test_a_plain_decision_is_remembered_for_the_same_input_an_edited_one_is_not() -> None:
    ran: list[str] = []
    asked: list[ApprovalRequest] = []
    glove = _glove(ran, handler=_answer(True, asked))
    await glove.process_request("clean up")
    assert await glove.store.get_permission("shell", {"text": "rm -rf build", "delay": 0.0}) == (
        "granted"
    )
    edited = _glove([], handler=_answer(approve(input={"text": "ls"})))
    await edited.process_request("clean up")
    assert await edited.store.get_permission("shell", {"text": "rm -rf build", "delay": 0.0}) == (
        "unset"
    )


# -- through the adapter ---------------------------------------------------------------------


def _scripted_bash() -> ScriptedModel:
    return ScriptedModel(
        [Reply(tool_calls=[("bash", {"command": "echo hi > hi.txt"})]), Reply(text="ok")]
    )


async def test_runs_through_the_adapter_stay_fail_closed_without_a_handler(tmp_path: Path) -> None:
    model = _scripted_bash()
    async with NativeAdapter(model_factory=lambda o: model) as adapter:
        handle = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="m", cwd=str(tmp_path))
        )
        events = await collect_run(adapter.events(handle), deadline_s=30)
    check_stream(events)
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert result.is_error and "no approval handler" in result.output
    assert not (tmp_path / "hi.txt").exists()
    assert events[-1].kind == "done"


async def test_a_waiting_call_is_a_status_waiting_approval_event_carrying_the_call(
    tmp_path: Path,
) -> None:
    release = trio.Event()

    async def person(request: ApprovalRequest) -> bool:
        await release.wait()
        return True

    model = _scripted_bash()
    async with NativeAdapter(model_factory=lambda o: model, permission_handler=person) as adapter:
        handle = await adapter.start(
            TaskHandle(), StartOpts(agent_id="a", session_key="k", message="m", cwd=str(tmp_path))
        )
        seen: list[Any] = []
        async with adapter.events(handle) as stream:
            with trio.fail_after(30):
                async for event in stream:
                    seen.append(event)
                    if isinstance(event, Status) and event.phase == "waiting_approval":
                        release.set()
                    if event.kind == "done":
                        break
    check_stream(seen)
    [waiting] = [e for e in seen if isinstance(e, Status) and e.phase == "waiting_approval"]
    call = waiting.approval
    assert call is not None and call.name == "bash" and call.id.startswith("ap-")
    assert isinstance(call.input, dict) and call.input["command"] == "echo hi > hi.txt"
    [tool_call] = [e for e in seen if e.kind == "tool-call"]
    assert call.tool_call_id == tool_call.tool_call_id
    assert (tmp_path / "hi.txt").read_text() == "hi\n"


async def test_a_run_waiting_for_a_person_is_not_ended_by_the_idle_guard(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The actor's idle guard ends a silent run; one that waits for an approval is not silent.
    (In-process tool and store: nothing real-time for the autojump clock to skip over.)"""
    deployed: list[str] = []

    async def deploy(inp: EchoInput, ctx: ToolContext) -> str:
        await trio.lowlevel.checkpoint()
        deployed.append(inp.text)
        return "deployed"

    async def slow_person(request: ApprovalRequest) -> bool:
        await trio.sleep(3_600)  # an hour: far past the idle window
        return True

    def adapter() -> NativeAdapter:
        model = ScriptedModel([Reply(tool_calls=[("deploy", {"text": "v2"})]), Reply(text="ok")])
        return NativeAdapter(
            model_factory=lambda o: model,
            tools=[Tool(name="deploy", description="", do=deploy, input_model=EchoInput)],
            permissions=PermissionPolicy(tools={"deploy": "ask"}),
            workspace_tools=False,
            permission_handler=slow_person,
            store_factory=lambda o, sid: MemoryStore(sid),
        )

    registry = RuntimeRegistry()
    registry.register_factory("native", adapter)
    seen: list[RuntimeEvent] = []

    class Sink:
        async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
            seen.extend(events)
            await trio.lowlevel.checkpoint()

    runner = Runner(registry, sink=Sink(), state_dir=tmp_path / "state", idle_s=60.0)
    outcome = await runner.run_task("native", TaskSpec(task_id="t", title="x", cwd=str(tmp_path)))
    assert outcome.status == "success" and deployed == ["v2"]
    assert any(isinstance(e, Status) and e.phase == "waiting_approval" for e in seen)


# -- the Anvia agent surface -----------------------------------------------------------------


def _anvia(ran: list[str], **options: Any) -> AnviaAgent:
    async def shell(inp: EchoInput, ctx: ToolContext) -> str:
        await trio.lowlevel.checkpoint()
        ran.append(inp.text)
        return "ok"

    model = ScriptedModel([Reply(tool_calls=[("shell", {"text": "ls"})]), Reply(text="done")])
    tool = Tool(name="shell", description="", do=shell, input_model=EchoInput, permission="ask")
    return AnviaAgent(id="ops", model=model, tools=[tool], **options)


async def test_anvia_request_level_approvals_override_the_agents() -> None:
    ran: list[str] = []
    agent = _anvia(ran, approvals=_answer(reject("not today")))
    response = await agent.prompt("list").send()
    assert ran == [] and response.output == "done"
    ran2: list[str] = []
    agent2 = _anvia(ran2, approvals=_answer(False))
    await agent2.prompt("list").approvals(_answer(True)).send()
    assert ran2 == ["ls"]
    ran3: list[str] = []
    source = _anvia(ran3)  # its model and tool, through the builder
    built = AgentBuilder("ops", source.model).tools(source.tools).approvals(_answer(True)).build()
    await built.prompt("list").send()
    assert ran3 == ["ls"]


async def test_anvia_a_protected_call_with_no_handler_raises_tool_approval_required_error() -> None:
    ran: list[str] = []
    with pytest.raises(ToolApprovalRequiredError) as caught:
        await _anvia(ran).prompt("list").send()
    assert ran == [] and caught.value.request.tool_name == "shell"


# -- a hook asks (Anvia's tool.requestApproval) -------------------------------------------------


class _AskFirst(LifecycleHooks):
    async def on_tool_call(self, info: ToolCallInfo) -> ToolCallAction:
        await trio.lowlevel.checkpoint()
        return RequestApproval(reason="deploys are reviewed", reject_message="Deploy refused.")


def _hooked(ran: list[str], handler: Any = None) -> Glove:
    async def deploy(inp: EchoInput, ctx: ToolContext) -> str:
        await trio.lowlevel.checkpoint()
        ran.append(inp.text)
        return "deployed"

    model = ScriptedModel([Reply(tool_calls=[("deploy", {"text": "v2"})]), Reply(text="done")])
    glove = Glove(
        model=model, permission_handler=handler, loop_config=LoopConfig(hooks=[_AskFirst()])
    )
    return glove.fold("deploy", "Deploy.", EchoInput, deploy).build()  # the policy allows it


async def test_a_hooks_approval_request_goes_to_the_handler_even_when_the_policy_allows() -> None:
    ran: list[str] = []
    asked: list[ApprovalRequest] = []
    glove = _hooked(ran, _answer(True, asked))
    await glove.process_request("ship it")
    assert ran == ["v2"] and [r.reason for r in asked] == ["deploys are reviewed"]
    # asked every time: a hook's request is not answered from a remembered decision
    await _hooked(ran, _answer(True, asked)).process_request("again")
    assert len(asked) == 2


async def test_a_rejected_hook_request_shows_the_decisions_text_else_the_requests() -> None:
    ran: list[str] = []
    glove = _hooked(ran, _answer(False))
    await glove.process_request("ship it")
    assert ran == [] and (await _result(glove)).message == "Deploy refused."
    own = _hooked(ran, _answer(reject("Not on Fridays.")))
    await own.process_request("ship it")
    assert (await _result(own)).message == "Not on Fridays."


async def test_a_hooks_approval_request_with_no_handler_raises_tool_approval_required_error() -> (
    None
):
    ran: list[str] = []
    with pytest.raises(ToolApprovalRequiredError) as caught:
        await _hooked(ran).process_request("ship it")
    assert ran == [] and caught.value.request.reason == "deploys are reviewed"
