"""An MCP client that orchestrates agents through ``ringleader mcp``.

``ringleader mcp`` serves ringleader's tools over stdio (start_run, list_runs, read_events,
wait_run, say, abort_run, approve, read_diff), so any agent or program that speaks MCP can start
runs on any runtime, wait for them and read what they did. This client uses the official ``mcp``
SDK (a dependency of ringleader): it starts the server as a child process, lists its tools,
starts a run on the scripted runtime (no keys), waits for it and prints its answer.

    python examples/mcp/orchestrate.py                       # the scripted runtime
    python examples/mcp/orchestrate.py --runtime claude-code 'explain this repo'   # with a key

An agent gets the same tools from its MCP configuration (``[runtimes.native.mcp_servers]`` in
ringleader.toml, Claude Code's ``--mcp-config``). Tested by tests/examples/test_mcp_client.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent


class ToolFailed(Exception):
    """A tool answered with an error (ringleader's tools say what is wrong in one line)."""


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    """Call one of ringleader's tools; its answer is one JSON text."""
    result: CallToolResult = await session.call_tool(tool, arguments)
    text = "".join(part.text for part in result.content if isinstance(part, TextContent))
    if result.is_error:
        raise ToolFailed(f"{tool}: {text}")
    return json.loads(text)


async def orchestrate(runtime: str, prompt: str) -> int:
    # this Python's ringleader (the `ringleader mcp` command, wherever it is installed), with
    # our environment: the SDK passes a child only HOME, PATH and a few more by default, and
    # the server must see the same RINGLEADER_STATE_DIR (event log) and keys we do
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "orchestrator.cli", "mcp"], env=dict(os.environ)
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = sorted(tool.name for tool in (await session.list_tools()).tools)
        print(f"tools: {', '.join(tools)}")
        started = await call(session, "start_run", {"runtime": runtime, "prompt": prompt})
        print(f"started: {started['runKey']}")
        waited = await call(session, "wait_run", {"run": started["task"]})
        read = await call(session, "read_events", {"run": started["task"]})
    kinds = [event["kind"] for event in read["events"]]
    text = "".join(e["text"] for e in read["events"] if e["kind"] == "text-delta")
    print(f"status: {waited['status']}")
    print(f"events: {' '.join(kinds)}")
    print(f"answer: {text}")
    return 0 if waited["status"] == "success" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="start a run through `ringleader mcp`")
    parser.add_argument("--runtime", default="scripted")
    parser.add_argument("prompt", nargs="?", default="Say hello.")
    args = parser.parse_args(argv)
    failure: BaseException | None = None
    try:
        return trio.run(orchestrate, args.runtime, args.prompt)
    except* ToolFailed as failed:  # raised inside the SDK's task groups: an exception group
        failure = failed
    while isinstance(failure, BaseExceptionGroup):  # the (nested) group's first error
        failure = failure.exceptions[0]
    print(f"ringleader mcp: {failure}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
