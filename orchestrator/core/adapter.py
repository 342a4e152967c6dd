"""The ``RuntimeAdapter`` trait and the types around it.

Every runtime (native, Claude Code, Codex, OpenClaw, Hermes, scripted) is an adapter with this
shape. Wire types (capabilities, start options, health) are frozen pydantic models; the run handle
is a small mutable attrs class because the runtime tells us its run id late.

Contracts every adapter keeps (docs/architecture.md, Contracts): ``capabilities()`` is pure and starts nothing;
``health()`` never raises and answers within 2 s; ``start()`` returns a handle whose ``run_id`` is
``None``; an adapter is an async context manager (``async with adapter:``) that owns whatever its
runs need (child processes, sockets, tasks) and ends them all on exit; ``events()`` is *not* async and subscribes before it returns, so nothing emitted between
``events()`` and the first pull is lost; ``abort()`` is idempotent; one-shot streams close after
their single ``done``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Literal, Protocol, Self, TypeAlias, runtime_checkable

import attrs
from pydantic import BaseModel, Field

from orchestrator.core.events import WIRE_CONFIG, RuntimeEvent

__all__ = [
    "HEALTH_TIMEOUT_S",
    "RESUME_PROMPT",
    "STEER_KEY",
    "Capabilities",
    "EventStream",
    "HealthResult",
    "InteractiveRuntime",
    "NativeHomeClaim",
    "ParticipantKind",
    "PromptImage",
    "RunHandle",
    "RunMcpServer",
    "RuntimeAdapter",
    "RuntimeClass",
    "RuntimeId",
    "SessionCodec",
    "StartOpts",
    "TaskHandle",
    "TurnResumable",
]

RuntimeId: TypeAlias = str
"""An open set: "native", "claude-code", "codex", "openclaw", "hermes", "scripted", or any other."""
ParticipantKind: TypeAlias = Literal["agent", "human"]
RuntimeClass: TypeAlias = Literal["wrapped-oneshot", "connected-substrate", "native"]

HEALTH_TIMEOUT_S = 2.0
"""``health()`` must answer within this many seconds."""

RESUME_PROMPT = "Continue where you left off."
"""The prompt a resumed session is given when the person gives none."""

STEER_KEY = ".ringleader/signal"
"""The ``write_context`` key a steerable runtime reads as a steer into the live conversation: its
value is steered in verbatim (the actor's ``steer`` writes it; an adapter that is steerable reads it)."""


class NativeHomeClaim(BaseModel):
    """Where a runtime claims to accrue state; the host decides the actual path."""

    model_config = WIRE_CONFIG

    scope: Literal["per-identity", "per-run"]
    persist: bool


class Capabilities(BaseModel):
    """What a runtime can do. Absent optional fields resolve to the conservative defaults."""

    model_config = WIRE_CONFIG

    streaming: bool
    """Emits incremental text deltas (vs one whole message at the end of a turn)."""
    mcp: bool
    """Can discover and call MCP tool servers."""
    worktrees: bool
    """Runs work in isolated git worktrees."""
    resume: bool
    """Can resume a prior session from a serialized handle."""
    tool_approval: bool
    """The runtime can surface tool-approval gates."""
    models: tuple[str, ...] = ()
    """Model ids usable (may be empty when unknown)."""
    steerable: bool = False
    """Text written with ``write_context`` reaches the model during the current run."""
    context_window_tokens: int | None = None
    """Context window in tokens; drives the rotation watermark (None or 0: watermark inert)."""
    runtime_class: RuntimeClass | None = None
    reports_cost_usd: bool | None = None
    """The runtime reports its spend in USD (perhaps only at the end of a run); None or False:
    only tokens, so a USD budget needs list-price estimates (see ``orchestrator.engine.governance``)."""
    native_home: NativeHomeClaim | None = None
    native_skills: Literal["preserve", "none"] | None = None
    native_memory: Literal["preserve", "none"] | None = None
    native_channels: Literal["gateway", "none"] | None = None
    native_scheduler: bool | None = None
    """Informational only: the host scheduler always owns when to run."""
    prompt_images: bool | None = None
    """The runtime takes :attr:`StartOpts.images` (None or False: a run given images fails)."""
    plan_mode: bool | None = None
    """The runtime takes :attr:`StartOpts.plan` (a read-only planning mode); None or False: a
    plan-mode task is refused before it starts (``run --plan``)."""
    session_fork: bool | None = None
    """The runtime takes :attr:`StartOpts.fork`: a resumed session continued as a new one."""
    run_mcp_servers: bool | None = None
    """The runtime connects to :attr:`StartOpts.mcp_servers` (the stdio ones at least; HTTP ones
    where ``run_mcp_http`` says so)."""
    run_mcp_http: bool | None = None
    """Of :attr:`StartOpts.mcp_servers`, the streamable-HTTP ones too."""


class HealthResult(BaseModel):
    """The answer of ``health()``."""

    model_config = WIRE_CONFIG

    ok: bool
    message: str | None = None


class TaskHandle(BaseModel):
    """References to the durable board task; both optional so a run can be ad hoc."""

    model_config = WIRE_CONFIG

    task_id: str | None = None
    team_id: str | None = None


class PromptImage(BaseModel):
    """An image that goes with the prompt (an ACP client's image block): base64 ``data``."""

    model_config = WIRE_CONFIG

    mime_type: str
    data: str = Field(repr=False)


class RunMcpServer(BaseModel):
    """An MCP server one run connects to, named by whoever started the run (an ACP client's
    ``session/new``): stdio (``command``, ``args``, ``env``) or streamable HTTP (``url``,
    ``headers``). ``env`` and ``headers`` may hold secrets: never serialized or shown."""

    model_config = WIRE_CONFIG

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = Field(default_factory=dict[str, str], exclude=True, repr=False)
    url: str | None = None
    headers: Mapping[str, str] = Field(default_factory=dict[str, str], exclude=True, repr=False)


class StartOpts(BaseModel):
    """Everything ``start()`` needs for one run.

    Beyond the original executor: ``cwd`` (the working directory the runtime works in, recorded as the
    session's origin), ``home_dir`` (the state directory the host prepared from the integration
    plan), ``resume_session_id`` (a native session id to resume), ``max_turns``, and ``env``
    (extra environment for child runtimes, e.g. a model base URL and key; never serialized or
    shown in reprs because it may hold secrets).
    """

    model_config = WIRE_CONFIG

    agent_id: str
    session_key: str
    message: str
    model: str | None = None
    context: str | None = None
    child_tool_blocklist: tuple[str, ...] = ()
    cwd: str | None = None
    home_dir: str | None = None
    resume_session_id: str | None = None
    resume_at: str | None = None
    """With ``resume_session_id``: continue that session from an earlier point — the marker
    :meth:`TurnResumable.resume_point` gave (a runtime's own message id) — as a **fork** (a new
    session; the original is left as it was). Runtimes that cannot ignore it (they are never
    given one: see :class:`TurnResumable`)."""
    max_turns: int | None = None
    cache_breakpoints: tuple[int, ...] = ()
    """UTF-8 byte offsets into ``message`` where a prompt-cache tier ends (from
    :func:`tiers.assemble_tiers`); a runtime that places its own cache markers (the native
    runtime on Anthropic Messages) cuts the first user message there. Others ignore it."""
    approvals_db: str | None = None
    """The :class:`~orchestrator.core.approvals.ApprovalBook` file a tool call that needs approval
    waits in for a person (``None``: such a call is denied, fail-closed)."""
    plan: bool = False
    """Plan mode: the runtime works read-only in its planning mode (Claude Code ``--permission-mode
    plan``, Codex's read-only sandbox, the native runtime's read-only policy, an ACP agent's plan
    session mode) and answers with a
    plan; the host has a person approve it before a normal turn carries it out."""
    env: Mapping[str, str] = Field(default_factory=dict[str, str], exclude=True, repr=False)
    images: tuple[PromptImage, ...] = Field(default=(), repr=False)
    """Images that go with the message (runtimes whose ``prompt_images`` capability says so)."""
    mcp_servers: tuple[RunMcpServer, ...] = ()
    """MCP servers this run connects to besides the configured ones (``run_mcp_servers``)."""
    fork: bool = False
    """With ``resume_session_id``: continue that session as a new session, the original left as
    it was (runtimes whose ``session_fork`` capability says so)."""

    def full_message(self) -> str:
        """The context block (if any) followed by the message, as runtimes receive it."""
        return f"{self.context}\n\n{self.message}" if self.context else self.message


@attrs.define
class RunHandle:
    """One run. ``run_id`` is ``None`` after ``start()`` and bound from the runtime's first frame."""

    adapter_id: str = attrs.field(on_setattr=attrs.setters.frozen)
    session_key: str = attrs.field(on_setattr=attrs.setters.frozen)
    run_id: str | None = None


@runtime_checkable
class EventStream(Protocol):
    """An async iterator of events that must be closed (``aclose`` releases the subscription)."""

    def __aiter__(self) -> AsyncIterator[RuntimeEvent]: ...
    async def __anext__(self) -> RuntimeEvent: ...
    async def aclose(self) -> None: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class SessionCodec(Protocol):
    """Turns a run into a blob that can resume it later, and back."""

    async def serialize(self, run: RunHandle) -> str: ...
    async def restore(self, blob: str) -> RunHandle: ...


@runtime_checkable
class RuntimeAdapter(Protocol):
    """One runtime behind the common trait. See the module docstring for the contracts."""

    @property
    def id(self) -> RuntimeId: ...
    @property
    def participant_kind(self) -> ParticipantKind: ...
    @property
    def session_codec(self) -> SessionCodec | None: ...

    def capabilities(self) -> Capabilities: ...
    async def health(self) -> HealthResult: ...
    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle: ...
    def events(self, run: RunHandle) -> EventStream: ...
    async def abort(self, run: RunHandle) -> None: ...
    async def set_model(self, run: RunHandle, model: str) -> None: ...
    async def write_context(self, run: RunHandle, key: str, value: str) -> None: ...
    async def aclose(self) -> None: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class InteractiveRuntime(Protocol):
    """A runtime whose own CLI has an interactive mode that can continue a recorded session
    (``ringleader open``): Claude Code (``claude --resume ID``), Codex (``codex resume ID``)."""

    def interactive_command(
        self, session_id: str, *, cwd: str, home_dir: str | None
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and the whole environment that open session ``session_id`` interactively
        in ``cwd``, with the home the runs used (``home_dir``: the host's; ``None``: the
        runtime's own default). Pure apart from creating the home's folders."""
        ...


@runtime_checkable
class TurnResumable(Protocol):
    """A runtime that can continue a recorded session from the end of an earlier turn, as a
    fork (``ringleader rewind`` continues the conversation there): Claude Code
    (``--resume ID --resume-session-at MESSAGE --fork-session``)."""

    def resume_point(
        self, session_id: str, turn: int, *, home_dir: str | None, prompt_index: int = 0
    ) -> str | None:
        """The marker (:attr:`StartOpts.resume_at`) for the end of turn ``turn`` (a model answer
        with its tool results; ``0``: right after the prompt) of one run of session
        ``session_id`` kept in ``home_dir`` — the run whose prompt is the session's
        ``prompt_index``-th (0: its first run; each resumed run adds a prompt); ``None`` when
        the session or that turn cannot be found. Blocking (reads the runtime's transcript)."""
        ...
