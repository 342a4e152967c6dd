"""ringleader's core: the adapter trait, normalized events, queues, idle guard, registry, rotation,
actors, supervision, the task runner, the event log and the board feed.

Everything public is re-exported here; submodules are the implementation. The names are
resolved lazily, on first use (PEP 562), so a program that needs a few of them (the
``ringleader`` command starting up, an adapter) does not import every submodule.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from .acp_server import AcpServer as AcpServer
    from .acp_server import event_to_update as event_to_update
    from .acp_server import serve_acp_stdio as serve_acp_stdio
    from .actor import STEER_KEY as STEER_KEY
    from .actor import EventSink as EventSink
    from .actor import RunActor as RunActor
    from .actor import RunOutcome as RunOutcome
    from .adapter import HEALTH_TIMEOUT_S as HEALTH_TIMEOUT_S
    from .adapter import Capabilities as Capabilities
    from .adapter import EventStream as EventStream
    from .adapter import HealthResult as HealthResult
    from .adapter import NativeHomeClaim as NativeHomeClaim
    from .adapter import ParticipantKind as ParticipantKind
    from .adapter import RunHandle as RunHandle
    from .adapter import RuntimeAdapter as RuntimeAdapter
    from .adapter import RuntimeClass as RuntimeClass
    from .adapter import RuntimeId as RuntimeId
    from .adapter import SessionCodec as SessionCodec
    from .adapter import StartOpts as StartOpts
    from .adapter import TaskHandle as TaskHandle
    from .approvals import ApprovalBook as ApprovalBook
    from .approvals import ApprovalDecision as ApprovalDecision
    from .approvals import ApprovalEntry as ApprovalEntry
    from .approvals import ApprovalRequest as ApprovalRequest
    from .approvals import approve as approve
    from .approvals import reject as reject
    from .board import Board as Board
    from .board import BoardColumn as BoardColumn
    from .board import Card as Card
    from .board_server import BoardHost as BoardHost
    from .board_server import board_app as board_app
    from .config import Config as Config
    from .config import LoadedConfig as LoadedConfig
    from .config import ModelPrice as ModelPrice
    from .config import RuntimeConfig as RuntimeConfig
    from .config import load_config as load_config
    from .errors import ActorCrashedError as ActorCrashedError
    from .errors import ActorError as ActorError
    from .errors import AdapterError as AdapterError
    from .errors import BreakerOpenError as BreakerOpenError
    from .errors import BudgetExceededError as BudgetExceededError
    from .errors import CapabilityError as CapabilityError
    from .errors import ConfigError as ConfigError
    from .errors import HostError as HostError
    from .errors import LineTooLongError as LineTooLongError
    from .errors import MailboxClosedError as MailboxClosedError
    from .errors import McpServerDiedError as McpServerDiedError
    from .errors import McpServerError as McpServerError
    from .errors import McpStartError as McpStartError
    from .errors import NodeLostError as NodeLostError
    from .errors import NoNodeForRuntimeError as NoNodeForRuntimeError
    from .errors import OutputValidationError as OutputValidationError
    from .errors import ProtocolError as ProtocolError
    from .errors import RingleaderError as RingleaderError
    from .errors import RuntimeExitedError as RuntimeExitedError
    from .errors import RuntimeNotFoundError as RuntimeNotFoundError
    from .errors import RuntimeReportedError as RuntimeReportedError
    from .errors import RuntimeStartError as RuntimeStartError
    from .errors import ToolApprovalRequiredError as ToolApprovalRequiredError
    from .errors import exception_leaves as exception_leaves
    from .errors import redact_secrets as redact_secrets
    from .errors import single_exception as single_exception
    from .eventlog import CommitListener as CommitListener
    from .eventlog import EventLog as EventLog
    from .eventlog import LoggedEvent as LoggedEvent
    from .eventlog import RunRow as RunRow
    from .eventlog import SessionRow as SessionRow
    from .events import ApprovalCall as ApprovalCall
    from .events import Cost as Cost
    from .events import Done as Done
    from .events import DoneReason as DoneReason
    from .events import ErrorEvent as ErrorEvent
    from .events import EventBase as EventBase
    from .events import EventFactory as EventFactory
    from .events import RuntimeEvent as RuntimeEvent
    from .events import RuntimeEventKind as RuntimeEventKind
    from .events import Status as Status
    from .events import StatusPhase as StatusPhase
    from .events import TextChannel as TextChannel
    from .events import TextDelta as TextDelta
    from .events import ToolCall as ToolCall
    from .events import ToolResult as ToolResult
    from .events import Usage as Usage
    from .events import assert_exhaustive as assert_exhaustive
    from .events import event_from_json as event_from_json
    from .events import event_to_json as event_to_json
    from .events import now_ms as now_ms
    from .feed import Feed as Feed
    from .feed import FeedSubscription as FeedSubscription
    from .feed import RecordingSink as RecordingSink
    from .feed import ServedFeed as ServedFeed
    from .feed import SlowPolicy as SlowPolicy
    from .feed import feed_app as feed_app
    from .feed import jsonl_line as jsonl_line
    from .feed import serve_feed as serve_feed
    from .feed import write_jsonl as write_jsonl
    from .governance import Budget as Budget
    from .governance import Governance as Governance
    from .idle import DEFAULT_RUN_SILENT_TIMEOUT_S as DEFAULT_RUN_SILENT_TIMEOUT_S
    from .idle import IDLE_ABORT_GRACE_S as IDLE_ABORT_GRACE_S
    from .idle import IdleGuard as IdleGuard
    from .idle import with_idle_timeout as with_idle_timeout
    from .integration import ConnectedHome as ConnectedHome
    from .integration import EphemeralHome as EphemeralHome
    from .integration import IntegrationHome as IntegrationHome
    from .integration import PersistentHome as PersistentHome
    from .integration import RuntimeIntegrationPlan as RuntimeIntegrationPlan
    from .integration import resolve_runtime_integration as resolve_runtime_integration
    from .lifetime import ProcessIdentity as ProcessIdentity
    from .lifetime import ProcessRegistry as ProcessRegistry
    from .otel import OtelSink as OtelSink
    from .queue import DEFAULT_QUEUE_MAX as DEFAULT_QUEUE_MAX
    from .queue import AsyncQueue as AsyncQueue
    from .queue import EventQueue as EventQueue
    from .queue import QueueEventStream as QueueEventStream
    from .queue import collect_until_done as collect_until_done
    from .queue import create_async_queue as create_async_queue
    from .redact import StreamRedactor as StreamRedactor
    from .redact import redact_event as redact_event
    from .redact import redact_text as redact_text
    from .redact import register_env_secrets as register_env_secrets
    from .redact import register_secret as register_secret
    from .registry import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
    from .registry import AdapterFactory as AdapterFactory
    from .registry import Installed as Installed
    from .registry import ModelServerHook as ModelServerHook
    from .registry import RuntimeFactory as RuntimeFactory
    from .registry import RuntimeRegistry as RuntimeRegistry
    from .registry import RuntimeSpec as RuntimeSpec
    from .registry import discover_runtimes as discover_runtimes
    from .rotation import DEFAULT_ROTATION as DEFAULT_ROTATION
    from .rotation import RotationDefaults as RotationDefaults
    from .rotation import RotationHandoff as RotationHandoff
    from .rotation import RotationReason as RotationReason
    from .rotation import RotationRecord as RotationRecord
    from .rotation import RotationTrigger as RotationTrigger
    from .rotation import build_rotation_handoff_note as build_rotation_handoff_note
    from .rotation import rotate_session as rotate_session
    from .rotation import should_rotate as should_rotate
    from .runner import NullSink as NullSink
    from .runner import ResumeFrom as ResumeFrom
    from .runner import Runner as Runner
    from .runner import RunRecord as RunRecord
    from .runner import TaskOutcome as TaskOutcome
    from .runner import TaskSpec as TaskSpec
    from .runner import default_state_dir as default_state_dir
    from .runner import resumable_task as resumable_task
    from .supervisor import FailureClass as FailureClass
    from .supervisor import RestartPolicy as RestartPolicy
    from .supervisor import RetryNotice as RetryNotice
    from .supervisor import Supervisor as Supervisor
    from .supervisor import classify_exception as classify_exception
    from .supervisor import classify_failure as classify_failure
    from .supervisor import classify_outcome as classify_outcome
    from .workspaces import Workspace as Workspace
    from .workspaces import create_workspace as create_workspace
    from .workspaces import workspace_changes as workspace_changes

__all__ = [
    "DEFAULT_QUEUE_MAX",
    "DEFAULT_ROTATION",
    "DEFAULT_RUN_SILENT_TIMEOUT_S",
    "ENTRY_POINT_GROUP",
    "HEALTH_TIMEOUT_S",
    "IDLE_ABORT_GRACE_S",
    "STEER_KEY",
    "AcpServer",
    "ActorCrashedError",
    "ActorError",
    "AdapterError",
    "AdapterFactory",
    "ApprovalBook",
    "ApprovalCall",
    "ApprovalDecision",
    "ApprovalEntry",
    "ApprovalRequest",
    "AsyncQueue",
    "Board",
    "BoardColumn",
    "BoardHost",
    "BreakerOpenError",
    "Budget",
    "BudgetExceededError",
    "Capabilities",
    "CapabilityError",
    "Card",
    "CommitListener",
    "Config",
    "ConfigError",
    "ConnectedHome",
    "Cost",
    "Done",
    "DoneReason",
    "EphemeralHome",
    "ErrorEvent",
    "EventBase",
    "EventFactory",
    "EventLog",
    "EventQueue",
    "EventSink",
    "EventStream",
    "FailureClass",
    "Feed",
    "FeedSubscription",
    "Governance",
    "HealthResult",
    "HostError",
    "IdleGuard",
    "Installed",
    "IntegrationHome",
    "LineTooLongError",
    "LoadedConfig",
    "LoggedEvent",
    "MailboxClosedError",
    "McpServerDiedError",
    "McpServerError",
    "McpStartError",
    "ModelPrice",
    "ModelServerHook",
    "NativeHomeClaim",
    "NoNodeForRuntimeError",
    "NodeLostError",
    "NullSink",
    "OtelSink",
    "OutputValidationError",
    "ParticipantKind",
    "PersistentHome",
    "ProcessIdentity",
    "ProcessRegistry",
    "ProtocolError",
    "QueueEventStream",
    "RecordingSink",
    "RestartPolicy",
    "ResumeFrom",
    "RetryNotice",
    "RingleaderError",
    "RotationDefaults",
    "RotationHandoff",
    "RotationReason",
    "RotationRecord",
    "RotationTrigger",
    "RunActor",
    "RunHandle",
    "RunOutcome",
    "RunRecord",
    "RunRow",
    "Runner",
    "RuntimeAdapter",
    "RuntimeClass",
    "RuntimeConfig",
    "RuntimeEvent",
    "RuntimeEventKind",
    "RuntimeExitedError",
    "RuntimeFactory",
    "RuntimeId",
    "RuntimeIntegrationPlan",
    "RuntimeNotFoundError",
    "RuntimeRegistry",
    "RuntimeReportedError",
    "RuntimeSpec",
    "RuntimeStartError",
    "ServedFeed",
    "SessionCodec",
    "SessionRow",
    "SlowPolicy",
    "StartOpts",
    "Status",
    "StatusPhase",
    "StreamRedactor",
    "Supervisor",
    "TaskHandle",
    "TaskOutcome",
    "TaskSpec",
    "TextChannel",
    "TextDelta",
    "ToolApprovalRequiredError",
    "ToolCall",
    "ToolResult",
    "Usage",
    "Workspace",
    "approve",
    "assert_exhaustive",
    "board_app",
    "build_rotation_handoff_note",
    "classify_exception",
    "classify_failure",
    "classify_outcome",
    "collect_until_done",
    "create_async_queue",
    "create_workspace",
    "default_state_dir",
    "discover_runtimes",
    "event_from_json",
    "event_to_json",
    "event_to_update",
    "exception_leaves",
    "feed_app",
    "jsonl_line",
    "load_config",
    "now_ms",
    "redact_event",
    "redact_secrets",
    "redact_text",
    "register_env_secrets",
    "register_secret",
    "reject",
    "resolve_runtime_integration",
    "resumable_task",
    "rotate_session",
    "serve_acp_stdio",
    "serve_feed",
    "should_rotate",
    "single_exception",
    "with_idle_timeout",
    "workspace_changes",
    "write_jsonl",
]

_HOME: dict[str, str] = {
    "AcpServer": "acp_server",
    "ActorCrashedError": "errors",
    "ActorError": "errors",
    "AdapterError": "errors",
    "AdapterFactory": "registry",
    "ApprovalBook": "approvals",
    "ApprovalCall": "events",
    "ApprovalDecision": "approvals",
    "ApprovalEntry": "approvals",
    "ApprovalRequest": "approvals",
    "AsyncQueue": "queue",
    "Board": "board",
    "BoardColumn": "board",
    "BoardHost": "board_server",
    "BreakerOpenError": "errors",
    "Budget": "governance",
    "BudgetExceededError": "errors",
    "Capabilities": "adapter",
    "CapabilityError": "errors",
    "Card": "board",
    "CommitListener": "eventlog",
    "Config": "config",
    "ConfigError": "errors",
    "ConnectedHome": "integration",
    "Cost": "events",
    "DEFAULT_QUEUE_MAX": "queue",
    "DEFAULT_ROTATION": "rotation",
    "DEFAULT_RUN_SILENT_TIMEOUT_S": "idle",
    "Done": "events",
    "DoneReason": "events",
    "ENTRY_POINT_GROUP": "registry",
    "EphemeralHome": "integration",
    "ErrorEvent": "events",
    "EventBase": "events",
    "EventFactory": "events",
    "EventLog": "eventlog",
    "EventQueue": "queue",
    "EventSink": "actor",
    "EventStream": "adapter",
    "FailureClass": "supervisor",
    "Feed": "feed",
    "FeedSubscription": "feed",
    "Governance": "governance",
    "HEALTH_TIMEOUT_S": "adapter",
    "HealthResult": "adapter",
    "HostError": "errors",
    "IDLE_ABORT_GRACE_S": "idle",
    "IdleGuard": "idle",
    "Installed": "registry",
    "IntegrationHome": "integration",
    "LineTooLongError": "errors",
    "LoadedConfig": "config",
    "LoggedEvent": "eventlog",
    "MailboxClosedError": "errors",
    "McpServerDiedError": "errors",
    "McpServerError": "errors",
    "McpStartError": "errors",
    "ModelPrice": "config",
    "ModelServerHook": "registry",
    "NativeHomeClaim": "adapter",
    "NoNodeForRuntimeError": "errors",
    "NodeLostError": "errors",
    "NullSink": "runner",
    "OtelSink": "otel",
    "OutputValidationError": "errors",
    "ParticipantKind": "adapter",
    "PersistentHome": "integration",
    "ProcessIdentity": "lifetime",
    "ProcessRegistry": "lifetime",
    "ProtocolError": "errors",
    "QueueEventStream": "queue",
    "RecordingSink": "feed",
    "RestartPolicy": "supervisor",
    "ResumeFrom": "runner",
    "RetryNotice": "supervisor",
    "RingleaderError": "errors",
    "RotationDefaults": "rotation",
    "RotationHandoff": "rotation",
    "RotationReason": "rotation",
    "RotationRecord": "rotation",
    "RotationTrigger": "rotation",
    "RunActor": "actor",
    "RunHandle": "adapter",
    "RunOutcome": "actor",
    "RunRecord": "runner",
    "RunRow": "eventlog",
    "Runner": "runner",
    "RuntimeAdapter": "adapter",
    "RuntimeClass": "adapter",
    "RuntimeConfig": "config",
    "RuntimeEvent": "events",
    "RuntimeEventKind": "events",
    "RuntimeExitedError": "errors",
    "RuntimeFactory": "registry",
    "RuntimeId": "adapter",
    "RuntimeIntegrationPlan": "integration",
    "RuntimeNotFoundError": "errors",
    "RuntimeRegistry": "registry",
    "RuntimeReportedError": "errors",
    "RuntimeSpec": "registry",
    "RuntimeStartError": "errors",
    "STEER_KEY": "actor",
    "ServedFeed": "feed",
    "SessionCodec": "adapter",
    "SessionRow": "eventlog",
    "SlowPolicy": "feed",
    "StartOpts": "adapter",
    "Status": "events",
    "StatusPhase": "events",
    "StreamRedactor": "redact",
    "Supervisor": "supervisor",
    "TaskHandle": "adapter",
    "TaskOutcome": "runner",
    "TaskSpec": "runner",
    "TextChannel": "events",
    "TextDelta": "events",
    "ToolApprovalRequiredError": "errors",
    "ToolCall": "events",
    "ToolResult": "events",
    "Usage": "events",
    "Workspace": "workspaces",
    "approve": "approvals",
    "assert_exhaustive": "events",
    "board_app": "board_server",
    "build_rotation_handoff_note": "rotation",
    "classify_exception": "supervisor",
    "classify_failure": "supervisor",
    "classify_outcome": "supervisor",
    "collect_until_done": "queue",
    "create_async_queue": "queue",
    "create_workspace": "workspaces",
    "default_state_dir": "runner",
    "discover_runtimes": "registry",
    "event_from_json": "events",
    "event_to_json": "events",
    "event_to_update": "acp_server",
    "exception_leaves": "errors",
    "feed_app": "feed",
    "jsonl_line": "feed",
    "load_config": "config",
    "now_ms": "events",
    "redact_event": "redact",
    "redact_secrets": "errors",
    "redact_text": "redact",
    "register_env_secrets": "redact",
    "register_secret": "redact",
    "reject": "approvals",
    "resolve_runtime_integration": "integration",
    "resumable_task": "runner",
    "rotate_session": "rotation",
    "serve_acp_stdio": "acp_server",
    "serve_feed": "feed",
    "should_rotate": "rotation",
    "single_exception": "errors",
    "with_idle_timeout": "idle",
    "workspace_changes": "workspaces",
    "write_jsonl": "feed",
}
"""Each name of ``__all__`` → the submodule that defines it."""


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
