"""``ringleader acp``: any runtime served as an Agent Client Protocol agent over stdio
(:mod:`.server`), or over WebSocket and Streamable HTTP with ``--listen`` (:mod:`.remote`,
:mod:`.streamable`); docs/acp.md. A surface: it stands on the engine and the core."""

from orchestrator.acp.server import AcpServer as AcpServer
from orchestrator.acp.server import event_to_update as event_to_update
from orchestrator.acp.server import serve_acp_stdio as serve_acp_stdio
