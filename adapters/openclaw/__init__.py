"""OpenClaw over its Gateway WebSocket: ``dialect`` (typed frames), ``normalize`` (frames →
events), ``client`` (the WebSocket client), ``gateway`` (start or attach to a gateway) and
``adapter`` (the trait)."""

from .adapter import AGENT_FILES as AGENT_FILES
from .adapter import OpenClawAdapter as OpenClawAdapter
from .adapter import OpenClawCodec as OpenClawCodec
from .adapter import OpenClawConfig as OpenClawConfig
from .adapter import ask_person as ask_person
from .client import GatewayClient as GatewayClient
from .client import open_gateway_client as open_gateway_client
from .gateway import GatewayManager as GatewayManager
from .gateway import GatewaySettings as GatewaySettings
from .gateway import ModelProvider as ModelProvider
