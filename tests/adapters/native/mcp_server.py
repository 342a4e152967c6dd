"""A real MCP server for the tests, on the ``mcp`` package's own server API (``MCPServer``).

Run as a child (``python mcp_server.py``) it serves stdio; :data:`app` is also served over
streamable HTTP in the test process. ``MCP_TEST_EXIT_AT_START`` makes the child fail at start.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ImageContent, TextContent

app = MCPServer("test-tools", log_level="WARNING")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


@app.tool()
def broken(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(f"broken: {reason}")


@app.tool()
def picture() -> list[TextContent | ImageContent]:
    """A caption and a one-pixel PNG."""
    return [
        TextContent(text="a red pixel"),
        ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
    ]


@app.tool()
async def wait(seconds: float) -> str:
    """Sleep, then say so."""
    await anyio.sleep(seconds)
    return "woke"


@app.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called ``name`` and tell the client its tool list changed."""
    app.add_tool(lambda: f"I am {name}", name=name, description=f"The {name} tool.")
    await ctx.session.send_tool_list_changed()
    return f"grew {name}"


@app.tool()
def die(code: int = 3) -> str:
    """Exit the server process at once (stdio only)."""
    print(f"dying with {code}", file=sys.stderr, flush=True)
    os._exit(code)


if __name__ == "__main__":
    if os.environ.get("MCP_TEST_EXIT_AT_START"):
        print("cannot open the database", file=sys.stderr, flush=True)
        sys.exit(int(os.environ["MCP_TEST_EXIT_AT_START"]))
    if os.environ.get("MCP_TEST_PID_FILE"):  # "pid start": its identity from any namespace
        with open("/proc/self/stat", "rb") as stat:
            start = stat.read().rsplit(b")", 1)[1].split()[19].decode()
        with open(os.environ["MCP_TEST_PID_FILE"], "w") as f:
            f.write(f"{os.getpid()} {start}")
    if os.environ.get("MCP_TEST_SLEEPER"):  # a background process that escapes group and mark
        import subprocess

        subprocess.Popen(
            [sys.executable, "-c", "import time\nwhile True: time.sleep(1)",
             os.environ["MCP_TEST_SLEEPER"]],
            start_new_session=True, env={}, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    app.run("stdio")
