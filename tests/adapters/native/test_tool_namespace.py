"""Issue 40: the native runtime's own children — its ``bash`` tool's commands and its MCP stdio
servers — go through the same PID namespace as every other runtime's children
(``adapters/_process.py`` ``open_child``), so a background process they leave behind dies with
them: one that left the session and dropped its environment (out of reach of the group kill and
the mark scan) is gone as soon as the command, or the server, is."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest
import trio

from adapters._process import _pid_namespace_prefix  # pyright: ignore[reportPrivateUsage]
from adapters.native.mcp import McpStdioServer, open_mcp_servers
from adapters.native.shell import BashInput, bash_tool
from adapters.native.tools import ToolContext

SERVER = Path(__file__).with_name("mcp_server.py")
CTX = ToolContext(call_id="c1", tool_name="bash", idempotency_key="s:c1")


def with_token(token: str) -> list[int]:
    """Live (non-zombie) processes whose command line carries ``token``."""
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


async def gone_within(token: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:  # polling /proc: there is nothing to wait on
        left = with_token(token)
        if not left or time.monotonic() >= deadline:
            return left
        await trio.sleep(0.05)


def kill_all(token: str) -> None:
    for pid in with_token(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(autouse=True)
def namespaces() -> None:
    if _pid_namespace_prefix() is None:
        pytest.skip("no PID namespace can be made on this machine")


async def test_a_bash_command_leaves_no_background_process_behind(tmp_path: Path) -> None:
    token = f"sleeper-{uuid.uuid4().hex[:8]}"
    sleeper = f"{sys.executable} -c 'import time\nwhile True: time.sleep(1)' {token}"
    command = f"setsid env -i {sleeper} </dev/null >/dev/null 2>&1 &\necho started"
    tool = bash_tool(str(tmp_path))
    try:
        result = await tool.do(BashInput(command=command), CTX)
        assert result == "started\n" or "started" in str(result)
        assert await gone_within(token, 2.0) == []
    finally:
        kill_all(token)


async def test_an_mcp_stdio_server_leaves_no_background_process_behind(tmp_path: Path) -> None:
    token = f"sleeper-{uuid.uuid4().hex[:8]}"
    server = McpStdioServer("calc", sys.executable, [str(SERVER)], env={"MCP_TEST_SLEEPER": token})
    try:
        async with open_mcp_servers([server], cwd=str(tmp_path)) as hub:
            assert [t for t in hub.tools if t.name == "mcp__calc__add"]
            with trio.fail_after(10):
                while True:  # the server started its sleeper
                    if with_token(token):
                        break
                    await trio.sleep(0.05)
        assert await gone_within(token, 2.0) == []
    finally:
        kill_all(token)
