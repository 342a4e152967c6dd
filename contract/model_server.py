"""The scripted model server, for adapter authors' tests: :mod:`orchestrator.model_server`
re-exported (the CLI's ``run --model-server`` and the demo use it from there)."""

from orchestrator.model_server import Conversation as Conversation
from orchestrator.model_server import Fault as Fault
from orchestrator.model_server import FaultKind as FaultKind
from orchestrator.model_server import LoggedRequest as LoggedRequest
from orchestrator.model_server import ModelServer as ModelServer
from orchestrator.model_server import Outcome as Outcome
from orchestrator.model_server import PrefixReuse as PrefixReuse
from orchestrator.model_server import Script as Script
from orchestrator.model_server import ServerState as ServerState
from orchestrator.model_server import StreamCut as StreamCut
from orchestrator.model_server import ToolCallSpec as ToolCallSpec
from orchestrator.model_server import Turn as Turn
from orchestrator.model_server import TurnUsage as TurnUsage
from orchestrator.model_server import build_app as build_app
from orchestrator.model_server import load_script as load_script
from orchestrator.model_server import main as main
from orchestrator.model_server import prefix_reuse_report as prefix_reuse_report
from orchestrator.model_server import serve_model_server as serve_model_server
