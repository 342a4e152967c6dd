"""A scripted model server on 127.0.0.1: Anthropic Messages, OpenAI Responses, Chat Completions.

Real runtimes (Claude Code, Codex, OpenClaw, Hermes), the official SDKs and the native loop talk
to it as to the real APIs; a :class:`Script` decides what the "model" answers and which faults it
injects; the request log and prefix-reuse figures let tests assert on what the runtime sent::

    async with serve_model_server({"conversations": [{"name": "c", "turns": [{"text": "hi"}]}]}) as s:
        client = anthropic.AsyncAnthropic(base_url=s.url, api_key="test", http_client=httpx2.AsyncClient())
        openai_client = openai.AsyncOpenAI(base_url=s.base_url, api_key="test", ...)
        ...
    s.requests          # LoggedRequest per request (headers redacted), with outcome and status
    s.prefix_reuse("c") # leading bytes each request shares with the previous one of "c"
    prefix_reuse_report(s.requests_for("c"))  # per request: reused and cache-served shares

How a request finds its conversation (markers, session keys, side requests) is described in
:mod:`orchestrator.model_server.state`; the script format in :mod:`orchestrator.model_server.script`.
"""

from orchestrator.model_server.app import StreamCut as StreamCut
from orchestrator.model_server.app import build_app as build_app
from orchestrator.model_server.reuse import PrefixReuse as PrefixReuse
from orchestrator.model_server.reuse import prefix_reuse_report as prefix_reuse_report
from orchestrator.model_server.script import Conversation as Conversation
from orchestrator.model_server.script import Fault as Fault
from orchestrator.model_server.script import FaultKind as FaultKind
from orchestrator.model_server.script import Script as Script
from orchestrator.model_server.script import ToolCallSpec as ToolCallSpec
from orchestrator.model_server.script import Turn as Turn
from orchestrator.model_server.script import TurnUsage as TurnUsage
from orchestrator.model_server.script import load_script as load_script
from orchestrator.model_server.serve import ModelServer as ModelServer
from orchestrator.model_server.serve import main as main
from orchestrator.model_server.serve import serve_model_server as serve_model_server
from orchestrator.model_server.state import LoggedRequest as LoggedRequest
from orchestrator.model_server.state import Outcome as Outcome
from orchestrator.model_server.state import ServerState as ServerState
