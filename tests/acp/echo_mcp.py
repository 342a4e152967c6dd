"""A tiny stdio MCP server for the ACP tests (the ``mcp`` package's server API): one tool,
``echo``, answering with ``$ECHO_PREFIX`` and the text, so a test sees that the server an ACP
client named in ``session/new`` ran, with the environment the client gave it."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

app = MCPServer("echo", log_level="WARNING")


@app.tool()
def echo(text: str) -> str:
    """The text, after the prefix this server was started with."""
    return f"{os.environ.get('ECHO_PREFIX', '')}{text}"


if __name__ == "__main__":
    app.run("stdio")
