"""A run whose tool calls were refused says so in its summary (the defect: under the default
policy Claude Code's ``Bash`` write was refused "needs approval", the run ended ``success`` and
the side-by-side table showed "files changed 0" with no hint). Folded from normalized events —
the same for every runtime — so these tests use events (and the runtimes' own normalizers),
not a real CLI."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import trio
from rich.console import Console

from adapters import ScriptedAdapter
from adapters.acp import AcpState, normalize_update
from adapters.claude_code import ClaudeState, normalize_line
from adapters.codex import AppState, normalize_app
from orchestrator.cli.live import PlainView
from orchestrator.cli.sidebyside import Job, run_jobs
from orchestrator.core import RuntimeRegistry
from orchestrator.core.approvals import DEFAULT_REJECT_MESSAGE
from orchestrator.core.asking import NO_ONE_TO_ASK
from orchestrator.core.events import ApprovalCall, EventFactory, RuntimeEvent, ToolResult
from orchestrator.core.refusals import DECLINED_MARK, NEEDS_APPROVAL_MARK, Refusals
from orchestrator.engine import TaskSpec

# Claude Code 2.1.330's own refusal (tests/fixtures/claude_code/2.1.330/denied.jsonl)
CLAUDE_CODE = (
    "touch in '/workspace/made_by_tool.txt' needs approval. The path is inside the working "
    "directories for this session ('/workspace'), and Claude Code asks before a shell command "
    "creates, changes or removes files there."
)
NATIVE = (
    'Permission denied for tool "bash": it needs approval and no approval handler is configured.'
)


def refused(events: list[RuntimeEvent]) -> Refusals:
    fold = Refusals()
    for event in events:
        fold.apply(event)
    return fold


def call(
    make: EventFactory, call_id: str, output: str, *, error: bool = True
) -> list[RuntimeEvent]:
    return [
        make.tool_call(call_id, "Bash", {"command": "touch x"}),
        make.tool_result(call_id, output, name="Bash", is_error=error),
    ]


def test_calls_nobody_could_approve_are_refused_needs_approval() -> None:
    make = EventFactory(run_id="r")
    events = [*call(make, "t1", CLAUDE_CODE), *call(make, "t2", NO_ONE_TO_ASK)]
    events += call(make, "t3", NATIVE)
    fold = refused(events)
    assert fold.needs_approval == {"t1", "t2", "t3"} and not fold.denied
    assert fold.summary() == "3 tool calls refused (needs approval)"
    hint = fold.hint()
    assert hint is not None and "--approvals wait" in hint and "ringleader approvals" in hint


def test_a_persons_denial_counts_once_and_is_denied() -> None:
    make = EventFactory(run_id="r")
    asked = ApprovalCall(id="ap-1", tool_call_id="t1", name="Bash", input={"command": "rm x"})
    events: list[RuntimeEvent] = [
        make.tool_call("t1", "Bash", {"command": "rm x"}),
        make.waiting_approval(asked, detail="approval ap-1: Bash"),
        make.status("running", detail="approval ap-1: Bash denied"),
        # the person's message, not a text the fold knows: still this call, still once
        make.tool_result("t1", "not on main; use a branch", name="Bash", is_error=True),
        *call(make, "t2", DEFAULT_REJECT_MESSAGE),  # a denial without a message
        *call(make, "t3", "Exec denied (user-denied)"),  # OpenClaw's own text
    ]
    fold = refused(events)
    assert fold.denied == {"t1", "t2", "t3"} and not fold.needs_approval
    assert fold.summary() == "3 tool calls denied"
    assert fold.hint() == "3 tool calls denied (by a person or a permission policy)"
    both = refused([*events, *call(make, "t4", NO_ONE_TO_ASK)])
    assert both.summary() == "1 tool call refused (needs approval), 3 denied"


def test_an_allowed_call_and_plain_failures_are_not_refusals() -> None:
    make = EventFactory(run_id="r")
    asked = ApprovalCall(id="ap-2", tool_call_id="t1", name="Bash")
    events: list[RuntimeEvent] = [
        make.tool_call("t1", "Bash", {}),
        make.waiting_approval(asked, detail="approval ap-2: Bash"),
        make.status("running", detail="approval ap-2: Bash allowed"),
        make.tool_result("t1", "ok", name="Bash"),
        *call(make, "t2", "touch: cannot touch '/x': Permission denied\n[exit code: 1]"),
        *call(make, "t3", "this step needs approval from the team", error=False),  # it ran
    ]
    fold = refused(events)
    assert fold.count == 0 and fold.summary() is None and fold.hint() is None


def test_a_call_codex_declined_is_denied_or_needs_approval() -> None:
    make = EventFactory(run_id="r")
    state = AppState()
    item: dict[str, Any] = {
        "type": "commandExecution",
        "id": "c1",
        "command": "touch x",
        "status": "declined",
        "aggregatedOutput": "",
    }
    out = normalize_app("item/completed", {"item": item}, make, state)
    assert out is not None
    patch: dict[str, Any] = {
        "type": "fileChange",
        "id": "c2",
        "status": "declined",
        "changes": [{"path": "a.py", "kind": {"type": "add"}}],
    }
    more = normalize_app("item/completed", {"item": patch}, make, state)
    assert more is not None
    failed = {**item, "id": "c3", "status": "failed", "exitCode": 1, "aggregatedOutput": "no"}
    worse = normalize_app("item/completed", {"item": failed}, make, state)
    assert worse is not None
    state.needs_approval.add("c4")  # the adapter declined it: nobody could be asked
    unasked = normalize_app("item/completed", {"item": {**item, "id": "c4"}}, make, state)
    assert unasked is not None
    fold = refused([*out, *more, *worse, *unasked])
    assert fold.denied == {"c1", "c2"}  # c3 failed: it ran
    assert fold.needs_approval == {"c4"}


async def test_the_live_view_and_the_side_by_side_summary_say_why_nothing_changed(
    tmp_path: Path,
) -> None:
    frames: list[dict[str, Any]] = [
        {"type": "init", "sessionId": "s"},
        {"type": "tool-call", "id": "t1", "name": "Bash", "input": {"command": "touch x"}},
        {"type": "tool-result", "id": "t1", "name": "Bash", "output": CLAUDE_CODE, "isError": True},
        {"type": "tool-call", "id": "t2", "name": "Bash", "input": {"command": "touch y"}},
        {"type": "tool-result", "id": "t2", "name": "Bash", "output": CLAUDE_CODE, "isError": True},
        {"type": "text", "text": "I could not write the files."},
        {"type": "result", "ok": True, "summary": "I could not write the files."},
    ]
    plain: list[dict[str, Any]] = [
        {"type": "init", "sessionId": "p"},
        {"type": "result", "ok": True, "summary": "nothing to do"},
    ]
    registry = RuntimeRegistry()
    registry.register_factory("refused", lambda: ScriptedAdapter(frames))
    registry.register_factory("plain", lambda: ScriptedAdapter(plain))
    work = tmp_path / "work"
    work.mkdir()
    jobs = [
        Job(label=rid, runtime_id=rid, task=TaskSpec(task_id=rid, title="t", cwd=str(work)))
        for rid in ("refused", "plain")
    ]
    out = io.StringIO()
    view = PlainView(console=Console(file=out, width=200))

    with trio.fail_after(30):
        results = await run_jobs(registry, jobs, view, state_dir=tmp_path / "state")
    assert [r.ok for r in results] == [True, True]
    assert results[0].lane.outcome == "success"
    lines = out.getvalue().splitlines()
    assert "[refused] ■ done: success · 2 tool calls refused (needs approval)" in lines, lines
    assert "[plain] ■ done: success" in lines
    hint = [line for line in lines if line.startswith("refused: ")]
    assert hint == [
        "refused: 2 tool calls refused (needs approval) — run with --approvals wait and a "
        "person decides each one (`ringleader approvals`, `ringleader approve`, the board)"
    ], lines
    assert not any(line.startswith("plain: ") for line in lines)


def test_an_acp_agents_refused_call_says_why_it_never_ran() -> None:
    make = EventFactory(run_id="r")
    state = AcpState()
    # the adapter refused these permission requests: nobody to ask, and a policy's "deny"
    state.refused_calls.update({"a1": NEEDS_APPROVAL_MARK, "a2": DECLINED_MARK})
    events: list[RuntimeEvent] = []
    for call_id, status in (("a1", "failed"), ("a2", "failed"), ("a3", "failed")):
        start = {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "touch x"}
        start["kind"] = "execute"
        end = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}
        for update in (start, end):
            out = normalize_update(update, make, state)
            assert out is not None
            events += out
    fold = refused(events)
    assert (fold.needs_approval, fold.denied) == ({"a1"}, {"a2"})  # a3 failed on its own


def test_a_call_claude_codes_permission_policy_denied_is_denied() -> None:
    """Claude Code returns only the policy's message ("ringleader policy says no"), so the
    adapter notes the calls its policy denied (``ClaudeState.declined``) for the normalizer."""
    make = EventFactory(run_id="r")
    state = ClaudeState()
    state.declined.add("c1")
    events: list[RuntimeEvent] = []
    for call_id in ("c1", "c2"):  # c2 failed on its own
        use = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "x"}}
        answer = {"type": "tool_result", "tool_use_id": call_id, "is_error": True}
        answer["content"] = "ringleader policy says no" if call_id == "c1" else "exit 1"
        for line in (
            {"type": "assistant", "message": {"id": f"m{call_id}", "content": [use]}},
            {"type": "user", "message": {"content": [answer]}},
        ):
            out = normalize_line(line, make, state)
            assert out is not None
            events += out
    fold = refused(events)
    assert (fold.needs_approval, fold.denied) == (set[str](), {"c1"})
    [said] = [e for e in events if isinstance(e, ToolResult) and e.tool_call_id == "c1"]
    assert said.output == f"{DECLINED_MARK}\nringleader policy says no"  # the model's text kept
