"""The native runtime: ringleader's own in-process agent loop (Glove's model, on trio).

``Glove`` is the builder and runnable (``fold`` tools, ``add_subscriber``, ``build``,
``process_request``, ``set_model``, ``steer``); ``Agent`` is the loop over ``Context``,
``PromptMachine`` and ``Observer`` (compaction); ``Executor`` runs tools; an abort raises
``AbortError``; a display manager is any ``DisplayManagerAdapter``;
the built-in workspace tools (``read_file``, ``write_file``, ``edit_file``, ``list_files``,
``glob``, ``grep``, ``bash``) are confined to the run's workspace behind a ``PermissionPolicy``;
stores keep sessions; model adapters speak Anthropic Messages, OpenAI Responses and Chat
Completions through the official SDKs; ``NativeAdapter`` puts it all behind the
``RuntimeAdapter`` trait (``id = "native"``).

The Anvia agent surface (:mod:`.anvia`): ``AnviaAgent`` with ``prompt`` / ``send`` / ``stream``,
sessions on ``InMemoryAgentMemory`` or ``SqliteAgentMemory``, agents as tools, dynamic context and
tools, skill sets (the rest of its names are in ``adapters.native.anvia``).

The app layer: the display manager (slots, renderers, strategies), hooks / skills / sub-agents
(``define_hook``, ``define_skill``, ``define_sub_agent``), content skills (``use_read_skill``,
``load_content_skills_from_fs``) and the task and inbox tools; MCP servers (``McpStdioServer``,
``McpHttpServer``, ``open_mcp_servers``) whose tools are ``mcp__<server>__<tool>``.
"""

from orchestrator.core.errors import AbortError as AbortError

from .adapter import DISPLAY_KEY_PREFIX as DISPLAY_KEY_PREFIX
from .adapter import STEER_KEY as STEER_KEY
from .adapter import NativeAdapter as NativeAdapter
from .adapter import NativeCodec as NativeCodec
from .adapter import default_model_factory as default_model_factory
from .anvia import DEFAULT_MAX_TURNS as DEFAULT_MAX_TURNS
from .anvia import AgentRequest as AgentRequest
from .anvia import AgentSession as AgentSession
from .anvia import AgentStreamEvent as AgentStreamEvent
from .anvia import AnviaAgent as AnviaAgent
from .anvia import InMemoryAgentMemory as InMemoryAgentMemory
from .anvia import MemoryContext as MemoryContext
from .anvia import PromptResponse as PromptResponse
from .anvia import SqliteAgentMemory as SqliteAgentMemory
from .cancel import CancelToken as CancelToken
from .compaction import DEFAULT_COMPACTION_INSTRUCTIONS as DEFAULT_COMPACTION_INSTRUCTIONS
from .compaction import CompactionConfig as CompactionConfig
from .content_skills import DEFAULT_LISTING_BUDGET_TOKENS as DEFAULT_LISTING_BUDGET_TOKENS
from .content_skills import READ_SKILL_TOOL_NAME as READ_SKILL_TOOL_NAME
from .content_skills import ContentSkill as ContentSkill
from .content_skills import MemorySkillReader as MemorySkillReader
from .content_skills import SkillReader as SkillReader
from .content_skills import SkillReadResult as SkillReadResult
from .content_skills import SkillSummary as SkillSummary
from .content_skills import default_listing_budget_tokens as default_listing_budget_tokens
from .content_skills import load_content_skills_from_fs as load_content_skills_from_fs
from .content_skills import render_skill_listing as render_skill_listing
from .content_skills import render_skill_read_result_xml as render_skill_read_result_xml
from .content_skills import use_read_skill as use_read_skill
from .context import Context as Context
from .display import DisplayManager as DisplayManager
from .display import DisplayManagerAdapter as DisplayManagerAdapter
from .display import DisplayStrategy as DisplayStrategy
from .display import Renderer as Renderer
from .display import Slot as Slot
from .display import SlotRejectedError as SlotRejectedError
from .display import SlotValueError as SlotValueError
from .executor import Executor as Executor
from .executor import PermissionRequest as PermissionRequest
from .extensions import SKILL_INVOKE_TOOL_NAME as SKILL_INVOKE_TOOL_NAME
from .extensions import SUBAGENT_DISPATCH_TOOL_NAME as SUBAGENT_DISPATCH_TOOL_NAME
from .extensions import AgentControls as AgentControls
from .extensions import GloveRunnable as GloveRunnable
from .extensions import HookContext as HookContext
from .extensions import HookResult as HookResult
from .extensions import ShortCircuit as ShortCircuit
from .extensions import SkillContext as SkillContext
from .extensions import SubAgentFactoryContext as SubAgentFactoryContext
from .extensions import create_skill_invoke_tool as create_skill_invoke_tool
from .extensions import create_sub_agent_invoke_tool as create_sub_agent_invoke_tool
from .extensions import format_skill_message as format_skill_message
from .extensions import parse_tokens as parse_tokens
from .glove import Glove as Glove
from .glove import SessionBusyError as SessionBusyError
from .lifecycle import CallNext as CallNext
from .lifecycle import LifecycleHooks as LifecycleHooks
from .lifecycle import ModelCall as ModelCall
from .lifecycle import ModelErrorInfo as ModelErrorInfo
from .lifecycle import ModelMiddleware as ModelMiddleware
from .lifecycle import ModelResponseInfo as ModelResponseInfo
from .lifecycle import ReplaceResult as ReplaceResult
from .lifecycle import RequestApproval as RequestApproval
from .lifecycle import RewriteInput as RewriteInput
from .lifecycle import RunAction as RunAction
from .lifecycle import RunEndInfo as RunEndInfo
from .lifecycle import RunErrorInfo as RunErrorInfo
from .lifecycle import RunStartInfo as RunStartInfo
from .lifecycle import SkipTool as SkipTool
from .lifecycle import StopRun as StopRun
from .lifecycle import ToolCallAction as ToolCallAction
from .lifecycle import ToolCallInfo as ToolCallInfo
from .lifecycle import ToolResultAction as ToolResultAction
from .lifecycle import ToolResultInfo as ToolResultInfo
from .lifecycle import TurnEndInfo as TurnEndInfo
from .lifecycle import TurnStartInfo as TurnStartInfo
from .loop import Agent as Agent
from .loop import AskResult as AskResult
from .loop import LoopConfig as LoopConfig
from .mcp import McpHttpServer as McpHttpServer
from .mcp import McpHub as McpHub
from .mcp import McpServer as McpServer
from .mcp import McpStdioServer as McpStdioServer
from .mcp import mcp_tool_name as mcp_tool_name
from .mcp import open_mcp_servers as open_mcp_servers
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
from .models.base import ModelOptions as ModelOptions
from .models.base import ModelResponse as ModelResponse
from .models.base import PromptRequest as PromptRequest
from .models.base import SpecificTool as SpecificTool
from .models.providers import PROVIDERS as PROVIDERS
from .models.providers import create_adapter as create_adapter
from .models.providers import get_available_providers as get_available_providers
from .models.scripted import ScriptedModel as ScriptedModel
from .observer import Observer as Observer
from .output import HeadTail as HeadTail
from .output import cap_text as cap_text
from .policy import PermissionPolicy as PermissionPolicy
from .pricing import Price as Price
from .pricing import PriceTable as PriceTable
from .prompt_machine import PromptMachine as PromptMachine
from .shell import BashOptions as BashOptions
from .stores.base import Store as Store
from .stores.base import StoreCapabilities as StoreCapabilities
from .stores.memory import MemoryStore as MemoryStore
from .stores.sqlite import SqliteStore as SqliteStore
from .stores.sqlite import resolve_inbox_item as resolve_inbox_item
from .structured import OutputSchema as OutputSchema
from .subscriber import Subscriber as Subscriber
from .subscriber import SubscriberEvent as SubscriberEvent
from .tasks_inbox import INBOX_TOOL_NAME as INBOX_TOOL_NAME
from .tasks_inbox import TASK_TOOL_NAME as TASK_TOOL_NAME
from .tasks_inbox import create_inbox_tool as create_inbox_tool
from .tasks_inbox import create_task_tool as create_task_tool
from .tools import HandOverFunction as HandOverFunction
from .tools import Tool as Tool
from .tools import ToolContext as ToolContext
from .tools import ToolInputError as ToolInputError
from .workspace import WORKSPACE_TOOL_NAMES as WORKSPACE_TOOL_NAMES
from .workspace import Workspace as Workspace
from .workspace import WorkspaceLimits as WorkspaceLimits
from .workspace import workspace_tools as workspace_tools
