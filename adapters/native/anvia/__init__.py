"""The Anvia agent surface on the native loop: ``AnviaAgent``, its requests, stream events,
sessions and memories, agents as tools, dynamic context and tools, skill sets, tool sets,
observers and the agent event store, traces, and the hook control objects and helpers."""

from adapters.native.lifecycle import RunControl as RunControl
from adapters.native.lifecycle import ToolCallControl as ToolCallControl
from adapters.native.lifecycle import cancel_prompt as cancel_prompt
from adapters.native.lifecycle import create_hook as create_hook
from adapters.native.lifecycle import request_tool_approval as request_tool_approval
from adapters.native.lifecycle import run_control as run_control
from adapters.native.lifecycle import skip_tool as skip_tool
from adapters.native.lifecycle import tool_call_control as tool_call_control
from orchestrator.core.errors import AgentOptionsError as AgentOptionsError
from orchestrator.core.errors import MaxTurnsError as MaxTurnsError
from orchestrator.core.errors import PromptCancelledError as PromptCancelledError
from orchestrator.core.errors import ToolCallError as ToolCallError

from .agent import DEFAULT_MAX_TURNS as DEFAULT_MAX_TURNS
from .agent import AgentSession as AgentSession
from .agent import AgentToolInput as AgentToolInput
from .agent import AnviaAgent as AnviaAgent
from .builder import AgentBuilder as AgentBuilder
from .events import AgentDone as AgentDone
from .events import AgentError as AgentError
from .events import AgentFinal as AgentFinal
from .events import AgentReasoningDelta as AgentReasoningDelta
from .events import AgentStreamEvent as AgentStreamEvent
from .events import AgentTextDelta as AgentTextDelta
from .events import AgentToolCall as AgentToolCall
from .events import AgentToolEvent as AgentToolEvent
from .events import AgentToolResult as AgentToolResult
from .events import AgentTurnEnd as AgentTurnEnd
from .events import AgentTurnStart as AgentTurnStart
from .memory import AgentMemory as AgentMemory
from .memory import InMemoryAgentMemory as InMemoryAgentMemory
from .memory import MemoryContext as MemoryContext
from .memory import SavePolicy as SavePolicy
from .memory import SqliteAgentMemory as SqliteAgentMemory
from .observe import AgentEventRecord as AgentEventRecord
from .observe import AgentEventStore as AgentEventStore
from .observe import AgentObserver as AgentObserver
from .observe import AgentTraceInfo as AgentTraceInfo
from .observe import AgentTraceOptions as AgentTraceOptions
from .observe import InMemoryAgentEventStore as InMemoryAgentEventStore
from .observe import ObserveOptions as ObserveOptions
from .observe import replay as replay
from .request import AgentRequest as AgentRequest
from .request import PromptResponse as PromptResponse
from .retrieval import Document as Document
from .retrieval import DynamicContext as DynamicContext
from .retrieval import DynamicTools as DynamicTools
from .retrieval import KeywordIndex as KeywordIndex
from .retrieval import SearchIndex as SearchIndex
from .retrieval import SearchResult as SearchResult
from .retrieval import tool_index as tool_index
from .skills import SkillSet as SkillSet
from .skills import skill_set as skill_set
from .toolset import ToolSet as ToolSet
