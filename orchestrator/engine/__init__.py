"""The engine: what runs tasks.

One run is one actor (:mod:`.actor`) under a supervisor (:mod:`.supervisor`); the runner
(:mod:`.runner`) takes a task end to end (integration plan, home, prompt, start, rotation at the
context watermark — :mod:`.rotation`); workspaces (:mod:`.workspaces`), the durable event log
(:mod:`.eventlog`) and the feed that fans it out (:mod:`.feed`), OpenTelemetry (:mod:`.otel`),
model endpoints in failures (:mod:`.endpoints`), governance (:mod:`.governance`) and where runs
live (:mod:`.hosts`). The engine imports the core, never a surface (board, ACP, CLI, model
server); see ``docs/architecture.md``.
"""

from orchestrator.engine.actor import EventSink as EventSink
from orchestrator.engine.actor import RunActor as RunActor
from orchestrator.engine.actor import RunOutcome as RunOutcome
from orchestrator.engine.eventlog import CommitListener as CommitListener
from orchestrator.engine.eventlog import EventLog as EventLog
from orchestrator.engine.eventlog import LoggedEvent as LoggedEvent
from orchestrator.engine.eventlog import RunRow as RunRow
from orchestrator.engine.eventlog import SessionRow as SessionRow
from orchestrator.engine.feed import Feed as Feed
from orchestrator.engine.feed import FeedSubscription as FeedSubscription
from orchestrator.engine.feed import RecordingSink as RecordingSink
from orchestrator.engine.feed import ServedFeed as ServedFeed
from orchestrator.engine.feed import SlowPolicy as SlowPolicy
from orchestrator.engine.feed import feed_app as feed_app
from orchestrator.engine.feed import jsonl_line as jsonl_line
from orchestrator.engine.feed import serve_feed as serve_feed
from orchestrator.engine.feed import write_jsonl as write_jsonl
from orchestrator.engine.governance import Budget as Budget
from orchestrator.engine.governance import Governance as Governance
from orchestrator.engine.otel import OtelSink as OtelSink
from orchestrator.engine.rotation import DEFAULT_ROTATION as DEFAULT_ROTATION
from orchestrator.engine.rotation import RotationDefaults as RotationDefaults
from orchestrator.engine.rotation import RotationHandoff as RotationHandoff
from orchestrator.engine.rotation import RotationReason as RotationReason
from orchestrator.engine.rotation import RotationRecord as RotationRecord
from orchestrator.engine.rotation import RotationTrigger as RotationTrigger
from orchestrator.engine.rotation import build_rotation_handoff_note as build_rotation_handoff_note
from orchestrator.engine.rotation import rotate_session as rotate_session
from orchestrator.engine.rotation import should_rotate as should_rotate
from orchestrator.engine.runner import NullSink as NullSink
from orchestrator.engine.runner import ResumeFrom as ResumeFrom
from orchestrator.engine.runner import Runner as Runner
from orchestrator.engine.runner import RunRecord as RunRecord
from orchestrator.engine.runner import TaskOutcome as TaskOutcome
from orchestrator.engine.runner import TaskSpec as TaskSpec
from orchestrator.engine.runner import default_state_dir as default_state_dir
from orchestrator.engine.runner import resumable_task as resumable_task
from orchestrator.engine.supervisor import FailureClass as FailureClass
from orchestrator.engine.supervisor import RestartPolicy as RestartPolicy
from orchestrator.engine.supervisor import RetryNotice as RetryNotice
from orchestrator.engine.supervisor import Supervisor as Supervisor
from orchestrator.engine.supervisor import classify_exception as classify_exception
from orchestrator.engine.supervisor import classify_failure as classify_failure
from orchestrator.engine.supervisor import classify_outcome as classify_outcome
from orchestrator.engine.workspaces import Workspace as Workspace
from orchestrator.engine.workspaces import create_workspace as create_workspace
from orchestrator.engine.workspaces import workspace_changes as workspace_changes
