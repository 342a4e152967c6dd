"""The native runtime: ringleader's own in-process agent loop (Glove's model, on trio).

``Glove`` is the builder and runnable (``fold`` tools, ``add_subscriber``, ``build``,
``process_request``, ``set_model``, ``steer``); ``Agent`` is the loop; ``Executor`` runs tools;
the built-in workspace tools (``read_file``, ``write_file``, ``edit_file``, ``list_files``,
``glob``, ``grep``, ``bash``) are confined to the run's workspace behind a ``PermissionPolicy``;
stores keep sessions; model adapters speak Anthropic Messages, OpenAI Responses and Chat
Completions through the official SDKs; ``NativeAdapter`` puts it all behind the
``RuntimeAdapter`` trait (``id = "native"``).
"""

from .adapter import STEER_KEY as STEER_KEY
from .adapter import NativeAdapter as NativeAdapter
from .adapter import NativeCodec as NativeCodec
from .adapter import default_model_factory as default_model_factory
from .cancel import CancelToken as CancelToken
from .compaction import DEFAULT_COMPACTION_INSTRUCTIONS as DEFAULT_COMPACTION_INSTRUCTIONS
from .compaction import CompactionConfig as CompactionConfig
from .display import DisplayManager as DisplayManager
from .executor import Executor as Executor
from .executor import PermissionRequest as PermissionRequest
from .glove import Glove as Glove
from .glove import SessionBusyError as SessionBusyError
from .loop import Agent as Agent
from .loop import AskResult as AskResult
from .loop import LoopConfig as LoopConfig
from .messages import ContentPart as ContentPart
from .messages import InboxItem as InboxItem
from .messages import Message as Message
from .messages import Task as Task
from .messages import TokenCounter as TokenCounter
from .messages import ToolCall as ToolCall
from .messages import ToolResult as ToolResult
from .messages import ToolResultData as ToolResultData
from .messages import repair_history as repair_history
from .models.base import ModelAdapter as ModelAdapter
from .models.base import ModelError as ModelError
from .models.base import ModelResponse as ModelResponse
from .models.base import PromptRequest as PromptRequest
from .models.providers import PROVIDERS as PROVIDERS
from .models.providers import create_adapter as create_adapter
from .models.providers import get_available_providers as get_available_providers
from .models.scripted import ScriptedModel as ScriptedModel
from .output import HeadTail as HeadTail
from .output import cap_text as cap_text
from .policy import PermissionPolicy as PermissionPolicy
from .pricing import Price as Price
from .pricing import PriceTable as PriceTable
from .shell import BashOptions as BashOptions
from .stores.base import Store as Store
from .stores.base import StoreCapabilities as StoreCapabilities
from .stores.memory import MemoryStore as MemoryStore
from .stores.sqlite import SqliteStore as SqliteStore
from .subscriber import Subscriber as Subscriber
from .subscriber import SubscriberEvent as SubscriberEvent
from .tools import Tool as Tool
from .tools import ToolContext as ToolContext
from .workspace import WORKSPACE_TOOL_NAMES as WORKSPACE_TOOL_NAMES
from .workspace import Workspace as Workspace
from .workspace import WorkspaceLimits as WorkspaceLimits
from .workspace import workspace_tools as workspace_tools

__all__ = [
    "DEFAULT_COMPACTION_INSTRUCTIONS",
    "PROVIDERS",
    "STEER_KEY",
    "WORKSPACE_TOOL_NAMES",
    "Agent",
    "AskResult",
    "BashOptions",
    "CancelToken",
    "CompactionConfig",
    "ContentPart",
    "DisplayManager",
    "Executor",
    "Glove",
    "HeadTail",
    "InboxItem",
    "LoopConfig",
    "MemoryStore",
    "Message",
    "ModelAdapter",
    "ModelError",
    "ModelResponse",
    "NativeAdapter",
    "NativeCodec",
    "PermissionPolicy",
    "PermissionRequest",
    "Price",
    "PriceTable",
    "PromptRequest",
    "ScriptedModel",
    "SessionBusyError",
    "SqliteStore",
    "Store",
    "StoreCapabilities",
    "Subscriber",
    "SubscriberEvent",
    "Task",
    "TokenCounter",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "ToolResultData",
    "Workspace",
    "WorkspaceLimits",
    "cap_text",
    "create_adapter",
    "default_model_factory",
    "get_available_providers",
    "repair_history",
    "workspace_tools",
]
