"""An AG-UI client: start a run on ``ringleader serve`` and follow it as AG-UI events.

``ringleader serve`` hosts runs (POST /tasks starts one) and serves the event log as AG-UI
events at GET /agui (Server-Sent Events; the Agent–User Interaction protocol): one ringleader
run is one AG-UI thread (``threadId`` = its run key), with RUN_STARTED, TEXT_MESSAGE_*,
TOOL_CALL_*, STATE_SNAPSHOT and RUN_FINISHED / RUN_ERROR. This client starts the server as a
child process (with ``--model-server``, so the native runtime needs no key), starts a native run
through the board's HTTP API, reads /agui with the server's token, checks every event against
the ``ag-ui-protocol`` package's own types, prints them, and stops the server.

    python examples/agui/follow.py                 # one line per AG-UI event
    python examples/agui/follow.py --json          # the events as JSON Lines

Any AG-UI client (CopilotKit, a web page's EventSource) reads the same URL:
``GET http://127.0.0.1:PORT/agui`` with ``Authorization: Bearer TOKEN`` (or ``?token=``).
Tested by tests/examples/test_agui_client.py.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
from typing import Any

import httpx2
import trio
from ag_ui.core import Event, EventType
from pydantic import TypeAdapter

AGUI_EVENT: TypeAdapter[Event] = TypeAdapter(Event)  # the protocol's discriminated union
THE_END = {EventType.RUN_FINISHED, EventType.RUN_ERROR}


async def start_server(nursery: trio.Nursery) -> tuple[trio.Process, str, str]:
    """`ringleader serve --port 0 --model-server`: (the process, its base URL, its token)."""
    argv = [sys.executable, "-m", "orchestrator.cli", "serve", "--port", "0", "--model-server"]
    serve = functools.partial(trio.run_process, argv, stdout=subprocess.PIPE, check=False)
    process: trio.Process = await nursery.start(serve)  # stopped below, by SIGINT
    assert process.stdout is not None
    first = b""
    with trio.fail_after(120):  # its first line: the events URL with the token
        while b"\n" not in first:
            chunk = await process.stdout.receive_some(4096)
            if not chunk:
                raise SystemExit("ringleader serve ended before it printed its URL")
            first += chunk
    base, token = first.split(b"\n", 1)[0].decode().split("/events?token=")
    return process, base, token


async def follow(prompt: str, runtime: str, as_json: bool) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery:
        process, base, token = await start_server(nursery)
        try:
            auth = {"authorization": f"Bearer {token}"}
            async with httpx2.AsyncClient(base_url=base, headers=auth, timeout=60) as http:
                started = await http.post("/tasks", json={"prompt": prompt, "runtime": runtime})
                started.raise_for_status()
                prefix = started.json()["runKeyPrefix"]  # runtime:<id>:task:<task>
                async with http.stream("GET", "/agui") as stream:
                    async for line in stream.aiter_lines():
                        if not line.startswith("data: "):
                            continue  # `id:` lines, blank lines between messages
                        event = AGUI_EVENT.validate_json(line[6:])  # raises if it is not AG-UI
                        wire = event.model_dump(mode="json", by_alias=True, exclude_none=True)
                        if not wire["metadata"]["ringleader"]["runKey"].startswith(prefix):
                            continue  # another run's (the log may hold earlier runs)
                        seen.append(wire)
                        print(json.dumps(wire) if as_json else describe(wire), flush=True)
                        if event.type in THE_END:
                            break
        finally:
            process.send_signal(signal.SIGINT)  # serve stops its runs and exits
    return seen


def describe(event: dict[str, Any]) -> str:
    match event:
        case {"type": "STATE_SNAPSHOT", "snapshot": snapshot}:
            detail = json.dumps(snapshot)
        case {"delta": str(text)} | {"content": str(text)}:
            detail = repr(text)
        case {"toolCallName": str(name)}:
            detail = name
        case _:
            detail = ""
    return f"{event['type']:<22} {detail}".rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="follow a run on ringleader serve as AG-UI")
    parser.add_argument("--runtime", default="native")
    parser.add_argument("--json", action="store_true", help="the events as JSON Lines")
    parser.add_argument("prompt", nargs="?", default="What is in this folder?")
    args = parser.parse_args(argv)
    os.environ.setdefault("NO_COLOR", "1")
    events = trio.run(follow, args.prompt, args.runtime, args.json)
    return 0 if events and events[-1]["type"] == "RUN_FINISHED" else 1


if __name__ == "__main__":
    sys.exit(main())
