"""``ringleader mcp``: ringleader as an MCP server, so an agent can orchestrate other agents
(start a run, list runs, read its events, wait for it, steer, abort, approve, read its diff).
A surface: it stands on the engine and the core (:mod:`.server`)."""

from orchestrator.mcp.server import Orchestration as Orchestration
from orchestrator.mcp.server import build_mcp_server as build_mcp_server
from orchestrator.mcp.server import serve_mcp_stdio as serve_mcp_stdio
