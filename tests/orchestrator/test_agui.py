"""The feed as AG-UI events (GET /agui): every event validates against the ag-ui-protocol types,
messages and tool calls open and close in order, an approval is an interrupt, and a client that
reconnects with Last-Event-ID gets exactly the rest of the stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import trio
from ag_ui.core import Event
from pydantic import TypeAdapter

from adapters import ScriptedAdapter
from orchestrator.core import ApprovalCall, EventFactory, RuntimeEvent, RuntimeRegistry
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.agui import AguiTranslator, sse_message
from orchestrator.engine.eventlog import EventLog, LoggedEvent
from orchestrator.engine.feed import Feed, RecordingSink, serve_feed

AGUI_EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def validated(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each event parsed by the protocol's own discriminated union (raises if one is invalid)."""
    for e in events:
        AGUI_EVENT.validate_python(e)
    return events


def translate(stream: list[RuntimeEvent], run_key: str = "run") -> list[dict[str, Any]]:
    translator = AguiTranslator()
    out: list[dict[str, Any]] = []
    for gid, event in enumerate(stream, 1):
        text = sse_message(translator.translate(LoggedEvent(gid, run_key, event)), gid)
        out += [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    return validated(out)


def a_run_with_everything() -> list[RuntimeEvent]:
    make = EventFactory(run_id="r", clock=lambda: 1000)
    return [
        make.status("init", model="m-1"),
        make.text_delta("thinking…", "reasoning"),
        make.text_delta("Let me look. "),
        make.text_delta("First the files."),
        make.tool_call("c1", "Bash", {"command": "ls"}),
        make.tool_result("c1", "README.md"),
        make.cost(make_usage(120, 30), cost_usd=0.01),
        make.waiting_approval(
            ApprovalCall(id="ap-1", tool_call_id="c2", name="bash", input={"c": "rm"})
        ),
        make.tool_call("c2", "bash", {"c": "rm"}),
        make.tool_result("c2", "Tool approval was rejected.", is_error=True),
        make.text_delta("Done."),
        *make.finish("success", "Done."),
    ]


def make_usage(i: int, o: int) -> Any:
    from orchestrator.core import Usage

    return Usage(input_tokens=i, output_tokens=o)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_every_kind_maps_to_valid_ag_ui_events_in_protocol_order() -> None:
    events = translate(a_run_with_everything())
    assert types(events) == [
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",  # the approval: an interrupt
        "RUN_STARTED",  # the run goes on: a new AG-UI run on the same thread
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[0]["threadId"] == "run" and events[0]["runId"] == "run"
    assert events[0]["protocolVersion"]
    interrupt = events[17]["outcome"]
    assert interrupt["type"] == "interrupt"
    assert interrupt["interrupts"][0] | {} == {
        "id": "ap-1",
        "reason": "tool_approval",
        "toolCallId": "c2",
        "metadata": {"tool": "bash", "input": {"c": "rm"}},
    }
    assert events[18]["runId"] == "run#2" and events[18]["threadId"] == "run"
    assert json.loads(events[12]["delta"]) == {"command": "ls"}
    assert events[16]["snapshot"] | {} == {
        "runKey": "run",
        "phase": "waiting_approval",
        "model": "m-1",
        "inputTokens": 120,
        "outputTokens": 30,
        "costUsd": 0.01,
        "estimated": False,
    }
    assert events[-1]["result"] == {"reason": "success", "summary": "Done."}
    assert all(e["metadata"]["ringleader"]["runKey"] == "run" for e in events)


def test_failures_and_aborts() -> None:
    make = EventFactory(run_id="r", clock=lambda: 1)
    failed = translate([make.text_delta("hi"), *make.fail("model said no", code="server_error")])
    assert types(failed)[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    assert failed[-1]["code"] == "server_error" and failed[-1]["message"] == "model said no"
    make = EventFactory(run_id="r", clock=lambda: 1)
    aborted = translate([make.text_delta("hi"), *make.finish("aborted", "")])
    assert aborted[-1]["type"] == "RUN_FINISHED"
    assert aborted[-1]["outcome"] == {"type": "cancelled"}


def sse_events(text: str) -> tuple[list[int], list[dict[str, Any]]]:
    ids = [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")]
    data = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    return ids, data


SCRIPT_A: list[dict[str, Any]] = [
    {"type": "init", "model": "scripted-a"},
    *({"type": "text", "text": f"a{i} "} for i in range(12)),
    {"type": "tool-call", "id": "t1", "name": "list_files", "input": {"path": "."}},
    {"type": "tool-result", "id": "t1", "name": "list_files", "output": "README.md"},
    {"type": "usage", "inputTokens": 40, "outputTokens": 12, "costUsd": 0.001},
    *({"type": "text", "text": f"b{i} "} for i in range(12)),
    {"type": "result", "ok": True, "summary": "done a"},
]
SCRIPT_B: list[dict[str, Any]] = [
    {"type": "text", "text": "thinking", "channel": "reasoning"},
    *({"type": "text", "text": f"c{i} "} for i in range(10)),
    {"type": "result", "ok": False, "errorMessage": "boom", "errorCode": "auth_error"},
]


async def test_a_side_by_side_stream_validates_and_resumes_without_loss(tmp_path: Path) -> None:
    registry = RuntimeRegistry()
    registry.register_factory("a", lambda: ScriptedAdapter(SCRIPT_A))
    registry.register_factory("b", lambda: ScriptedAdapter(SCRIPT_B))
    feed = Feed()
    async with EventLog.open(tmp_path / "log.db") as log, serve_feed(feed, log) as url:
        runner = Runner(registry, sink=RecordingSink(log, feed), state_dir=tmp_path / "state")
        async with trio.open_nursery() as nursery:  # the two runs side by side
            nursery.start_soon(runner.run_task, "a", TaskSpec(task_id="ta", title="a"))
            nursery.start_soon(runner.run_task, "b", TaskSpec(task_id="tb", title="b"))
        total = await log.last_gid()
        auth = {"authorization": f"Bearer {url.token}"}  # loopback too: no read without it
        async with httpx2.AsyncClient(timeout=10, headers=auth) as http:
            refused = await http.get(f"{url}/agui", headers={"authorization": "Bearer wrong"})
            assert refused.status_code == 401

            async def read(last_event_id: int | None, stop_after: int | None) -> str:
                headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
                text, last = "", 0
                async with http.stream("GET", f"{url}/agui", headers=headers) as response:
                    assert response.status_code == 200
                    assert response.headers["content-type"].startswith("text/event-stream")
                    async for line in response.aiter_lines():
                        text += line + "\n"
                        if line.startswith("id: "):
                            last = int(line[4:])
                        elif not line and last in (total, stop_after):
                            break  # the end of the message that carries that id
                return text

            whole = await read(None, None)
            first = await read(None, 9)
            rest = await read(9, None)
    ids, events = sse_events(whole)
    validated(events)
    assert ids == list(range(1, total + 1))  # one id per logged event, on its last AG-UI event
    by_thread: dict[str, list[str]] = {}
    for e in events:
        by_thread.setdefault(e["metadata"]["ringleader"]["runKey"], []).append(e["type"])
    assert len(by_thread) == 2
    for seq in by_thread.values():
        assert seq[0] == "RUN_STARTED"
        assert seq[-1] in ("RUN_FINISHED", "RUN_ERROR")
        assert seq.count("TEXT_MESSAGE_START") == seq.count("TEXT_MESSAGE_END")
    assert sorted(s[-1] for s in by_thread.values()) == ["RUN_ERROR", "RUN_FINISHED"]
    # resumed mid-stream: the two halves are exactly the whole (a run met in its middle is
    # primed, so its open message is continued, not started again)
    first_ids, first_events = sse_events(first)
    rest_ids, rest_events = sse_events(rest)
    assert first_ids[-1] == 9 and rest_ids[0] == 10
    assert first_events + rest_events == events
