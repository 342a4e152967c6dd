"""Issue 40: a gateway that starts on a state directory whose session was mid-turn when its
previous gateway died (a SIGKILLed ``ringleader run``) continues that turn by itself (OpenClaw's
restart recovery: a system prompt, then a model call). ``ringleader recover`` sent its own
resume meanwhile and raced it: refused (``SESSION_WORK_START_CHANGED``) or a second model call
whose reply the scripted model server did not have, so ``recover`` exited 1. A resume now waits
while the session runs and takes the gateway's continuation as the resumed turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from adapters.openclaw import OpenClawAdapter
from contract import check_stream
from orchestrator.core.adapter import StartOpts, TaskHandle
from orchestrator.core.events import Cost, Done, RuntimeEvent, TextDelta, ToolCall, ToolResult

from .harness import OpenClawHarness

KEY = "agent:main:task:7"


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **extra}


def assistant(text: str, *, stop: str = "stop", run_id: str = "rec-1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stopReason": stop,
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cost": {"total": 0}},
        "__openclaw": {"runId": run_id},
    }


def recovery(at_ms: int) -> dict[str, Any]:
    """The prompt OpenClaw's restart recovery adds (written at ``at_ms``)."""
    return user(
        "[System] Your previous turn was interrupted by a gateway restart …",
        timestamp=at_ms,
        provenance={"kind": "internal_system", "sourceTool": "main_session_restart_recovery"},
    )


Session = Callable[[int], dict[str, Any]]
"""The session the fake gateway holds, given when this gateway was first connected to (ms)."""


def resumed(
    harness: OpenClawHarness, session: Session, *, times: int = 1
) -> tuple[list[RuntimeEvent], list[str]]:
    """Resume ``KEY`` (``times`` times) on a fake gateway holding ``session``: the last run's
    events, the methods the gateway was asked."""
    events: list[RuntimeEvent] = []

    async def main() -> None:
        adapter = harness.make_adapter()
        assert harness.fake is not None
        async with adapter:
            assert isinstance(adapter, OpenClawAdapter)
            await adapter.manager.ensure()
            assert adapter.manager.started_ms is not None
            harness.fake.sessions[KEY] = session(adapter.manager.started_ms)
            for n in range(times):
                opts = StartOpts(agent_id="a", session_key=f"task:{n}", resume_session_id=KEY,
                                 message="Continue where you left off.")  # fmt: skip
                run = await adapter.start(TaskHandle(), opts)
                if n == times - 1 and "agent" in harness.fake.methods():
                    await adapter.abort(run)
                events.clear()
                with trio.fail_after(10):
                    async for event in adapter.events(run):
                        events.append(event)

    trio.run(main)
    assert harness.fake is not None
    return events, harness.fake.methods()


def test_a_resume_takes_the_gateways_own_continuation_instead_of_a_second_one() -> None:
    harness = OpenClawHarness(restart_poll=0.01)

    def session(started: int) -> dict[str, Any]:
        return {
            "status": "done",
            "running_reads": 3,  # the gateway's continuation is still running for three reads
            "messages": [user("[[e2e:crash]] write a long story"), recovery(started + 500),
                         assistant("RECOVERED the story")],
        }  # fmt: skip

    events, methods = resumed(harness, session)
    assert "agent" not in methods  # no second continuation
    assert methods.count("sessions.describe") == 4  # waited while it ran
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "RECOVERED the story"
    costs = [e for e in events if isinstance(e, Cost)]
    assert costs and costs[-1].usage.input_tokens == 10 and costs[-1].usage.output_tokens == 5
    assert isinstance(events[-1], Done) and events[-1].reason == "success"
    assert all(e.run_id == "rec-1" for e in events)  # the gateway's run, seq gapless
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_the_tools_the_gateways_continuation_ran_are_reported() -> None:
    """The continuation's tool calls ran in the gateway before the resume took it over: they are
    reported from the transcript as OpenClaw 2026.9.6 records them (``toolCall`` blocks,
    ``toolResult`` messages), in order, each answered once."""
    harness = OpenClawHarness(restart_poll=0.01)
    call = {"type": "toolCall", "id": "call_1", "name": "exec", "arguments": {"command": "ls"}}
    asks = {**assistant("checking"), "stopReason": "toolUse"}
    asks["content"] = [{"type": "text", "text": "checking"}, call]

    def result(text: str, *, error: bool = False) -> dict[str, Any]:
        return {"role": "toolResult", "toolCallId": "call_1", "toolName": "exec",
                "content": [{"type": "text", "text": text}], "isError": error}  # fmt: skip

    def session(started: int) -> dict[str, Any]:
        return {
            "status": "done",
            "messages": [user("story"), recovery(started + 500), asks, result("a.txt"),
                         result("again"), assistant("RECOVERED")],
        }  # fmt: skip

    events, methods = resumed(harness, session)
    assert "agent" not in methods
    kinds = [(type(e).__name__, getattr(e, "tool_call_id", None)) for e in events]
    assert [k for k in kinds if k[0] in ("TextDelta", "ToolCall", "ToolResult")] == [
        ("TextDelta", None),
        ("ToolCall", "call_1"),
        ("ToolResult", "call_1"),  # once: the repeated result is not a second answer
        ("TextDelta", None),
    ]
    [called] = [e for e in events if isinstance(e, ToolCall)]
    [answer] = [e for e in events if isinstance(e, ToolResult)]
    assert (called.name, called.input) == ("exec", {"command": "ls"})
    assert (answer.output, answer.is_error, answer.name) == ("a.txt", False, "exec")
    check_stream(events)


def test_a_resume_of_a_session_not_continued_by_the_gateway_sends_the_prompt() -> None:
    def story(*tail: Callable[[int], dict[str, Any]]) -> Session:
        return lambda started: {
            "status": "done",
            "messages": [user("write a story"), *(make(started) for make in tail)],
        }

    for session in (
        story(lambda _: assistant("a story")),  # the last turn was ours, complete
        story(lambda t: recovery(t + 500), lambda _: assistant("", stop="error")),  # it failed
        story(lambda t: recovery(t - 60_000), lambda _: assistant("old")),  # an earlier gateway's
        lambda _: {"status": "done", "messages": []},
    ):
        harness = OpenClawHarness(restart_poll=0.01)
        events, methods = resumed(harness, session)
        assert "agent" in methods
        assert isinstance(events[-1], Done) and events[-1].reason == "aborted"


def test_a_continuation_is_taken_once_a_later_resume_sends_its_prompt() -> None:
    harness = OpenClawHarness(restart_poll=0.01)

    def session(started: int) -> dict[str, Any]:
        return {
            "status": "done",
            "messages": [user("story"), recovery(started + 500), assistant("RECOVERED")],
        }

    events, methods = resumed(harness, session, times=2)
    assert methods.count("agent") == 1  # the second resume: a new turn of its own
    assert isinstance(events[-1], Done) and events[-1].reason == "aborted"


def test_a_session_that_stays_running_is_resumed_after_the_bounded_wait() -> None:
    harness = OpenClawHarness(restart_poll=0.01, restart_wait=0.05)

    def session(_: int) -> dict[str, Any]:
        return {"status": "done", "running_reads": 10_000, "messages": []}

    events, methods = resumed(harness, session)
    assert "agent" in methods
    assert 2 <= methods.count("sessions.describe") < 10_000
    assert isinstance(events[-1], Done)
