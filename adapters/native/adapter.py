"""The native runtime behind the ``RuntimeAdapter`` trait (``id = "native"``).

The three layers: the *dialect* is the loop's subscriber events (:mod:`.subscriber`), *normalize*
is :func:`.normalize.normalize_event`, and the *driver* is a :class:`~.glove.Glove` per run,
running in the adapter's nursery. Events go out through the shared
:class:`~adapters._runs.RunEmitter` (gapless ``seq``, late run-id binding from the session id,
one ``done``, open tool calls closed, streams closed after ``done``).

* ``abort`` cancels the run's :class:`~.cancel.CancelToken`: a model call stops at once, a tool is
  cancelled (an ``un_abortable`` one runs to completion and its result is stored, as Glove says;
  ``done{aborted}`` does not wait for it longer than ``abort_grace_s``), every open tool call gets
  an aborted result stored in the history, and ``done{aborted}`` follows.
* ``set_model`` swaps the model at the next model call, also mid-run.
* ``write_context`` steers the live conversation: the text is appended as a user message at the
  next turn boundary. A steer that arrives while the final answer is generated still lands: the
  loop keeps going, and if it arrives after the loop returned the run continues on it before
  ``done`` (the original executor drops it). Keys other than the steer key are also written to the run's
  working directory (confined), and reach the model as ``[context update: key]``.
* cost is cumulative and honest: USD from a user-extendable :class:`~.pricing.PriceTable`,
  ``None`` for an unpriced model.
* tools: the built-in workspace tools (:mod:`.workspace`, :mod:`.shell`) confined to the run's
  ``cwd``, behind a :class:`~.policy.PermissionPolicy` (default ``workspace-write``: files read
  and written, ``bash`` asks, and asking without a ``permission_handler`` denies — unless the
  run's ``StartOpts.approvals_db`` names an approval book, where the call waits for a person,
  durably: :mod:`orchestrator.core.approvals`); the run's ``child_tool_blocklist`` removes tools by
  name.
* the app layer: ``app(glove, opts)`` (sync or async) defines hooks, skills and sub-agents on
  each run's Glove; skills in ``<cwd>/.claude/skills/<name>/SKILL.md`` (``skills_dir``) are
  loaded as content skills (``glove_read_skill`` plus ``/name`` directives); the built-in
  ``glove_update_tasks`` / ``glove_post_to_inbox`` tools ship too. Their calls are ordinary
  ``tool-call``/``tool-result`` events, hooks, skills and sub-agent brackets are ``status``
  details, and a sub-agent's usage is rolled into the run's cumulative ``cost``.
* MCP servers (``mcp_servers``): each run starts its own (stdio children, streamable-HTTP
  sessions) before its first turn and stops them when it ends (:mod:`.mcp`); their tools are
  ``mcp__<server>__<tool>``, and a ``status`` detail says what is connected (``mcp: files (3
  tools)``). A server that cannot start fails the run (``error{fatal,
  mcp_start_failed}``); one that dies mid-run is a non-fatal ``error{mcp_server_died}`` and its
  tools answer with an error result saying so.
* display slots (``display=True``): each run gets a :class:`~.display.DisplayManager`; every
  change of its stack is a ``status`` detail (``display: slot_1 pending confirm (tool
  checkout)``), and ``write_context(".ringleader/display/<slot id>", value)`` answers a waiting
  slot (``value`` as JSON when it parses, else the string; ``.../<slot id>/reject`` rejects it).
  A permission ``ask`` with no ``permission_handler`` then becomes a ``permission_request`` slot.
* lifecycle hooks and middlewares (``hooks=``, ``middlewares=``; :mod:`.lifecycle`) run in
  every run: a hook's action is a ``status`` detail (``hook on_tool_call: skip (...)``) and a
  hook's stop ends the run with ``done{aborted}`` (the summary says which hook and why). With
  ``output_schema=`` (:mod:`.structured`) the final answer is validated JSON; a retry is a
  ``status`` detail (``output_retry 1: ...``) and spent retries end in ``error{output_invalid}``.
* the session codec is the store: a run id *is* its session id; with a ``home_dir`` sessions live
  in ``<home>/native/sessions.db`` and ``resume_session_id`` continues one.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path, PurePath
from typing import Any, TypeAlias

import attrs
import trio

from orchestrator.core.adapter import (
    STEER_KEY,
    Capabilities,
    HealthResult,
    NativeHomeClaim,
    RunHandle,
    RunMcpServer,
    StartOpts,
    TaskHandle,
)
from orchestrator.core.approvals import ApprovalBook
from orchestrator.core.errors import (
    AbortError,
    ConfigError,
    McpServerDiedError,
    RingleaderError,
    redact_secrets,
)
from orchestrator.core.events import now_ms

from .._base import (
    AdapterBase,
    JsonSessionCodec,
    confined_path,
    validate_context_key,
    write_context_file,
)
from .._runs import RunEmitter
from .cancel import CancelToken
from .compaction import CompactionConfig
from .content_skills import ContentSkill, load_content_skills_from_fs, use_read_skill
from .display import DisplayManager, Slot, SlotValueError
from .executor import PermissionHandler
from .extensions import CURRENT_SUBAGENT
from .glove import Glove
from .lifecycle import LifecycleHooks, ModelMiddleware
from .loop import AskResult, LoopConfig
from .mcp import McpHttpServer, McpHub, McpServer, McpStdioServer, open_mcp_servers
from .messages import ContentPart, ContentSource
from .models.base import ModelAdapter, ModelError
from .models.providers import create_adapter
from .normalize import normalize_event
from .policy import READ_ONLY, WORKSPACE_WRITE, PermissionPolicy
from .pricing import PriceTable
from .prompt_cache import tiered_request
from .shell import BashOptions
from .stores.base import Store
from .stores.memory import MemoryStore
from .stores.sqlite import SqliteStore
from .structured import OutputSpec, as_output_schema
from .subscriber import SubscriberEvent, TextDeltaEvent
from .tools import Tool
from .workspace import WorkspaceLimits
from .workspace import workspace_tools as workspace_tools_for

__all__ = [
    "DISPLAY_KEY_PREFIX",
    "NativeAdapter",
    "NativeCodec",
    "RecordedCall",
    "default_model_factory",
]

_log = logging.getLogger(__name__)

_WORKSPACE_CACHE_MAX = 64
"""Directories whose built-in tools an adapter keeps built (the oldest is dropped first), and
turn limits whose loop configuration it keeps."""

DISPLAY_KEY_PREFIX = ".ringleader/display/"
"""``write_context`` keys under this prefix answer display slots (``display=True``)."""

ModelFactory: TypeAlias = Callable[[StartOpts], ModelAdapter]
ToolsSpec: TypeAlias = Sequence[Tool[Any]] | Callable[[StartOpts], Iterable[Tool[Any]]]
StoreFactory: TypeAlias = Callable[[StartOpts, str], Store]
AppSetup: TypeAlias = Callable[[Glove, StartOpts], Awaitable[None] | None]
"""Defines a run's hooks, skills and sub-agents (``glove.define_hook`` …) before it starts."""


@attrs.frozen
class RecordedCall:
    """A side effect the adapter issued (``abort``, ``setModel``, ``writeContext``)."""

    method: str
    params: dict[str, Any]


def default_model_factory(opts: StartOpts) -> ModelAdapter:
    """``opts.model`` as ``provider:model`` (or ``$RINGLEADER_NATIVE_PROVIDER``, default
    anthropic); keys and base URLs from ``opts.env`` first, then the process environment."""
    env: dict[str, str] = {**os.environ, **opts.env}
    provider = env.get("RINGLEADER_NATIVE_PROVIDER", "anthropic")
    model = opts.model
    if model and ":" in model:
        provider, model = model.split(":", 1)
    return create_adapter(provider=provider, model=model or None, env=env)


@attrs.define(eq=False)
class _Run:
    emitter: RunEmitter
    opts: StartOpts
    glove: Glove
    token: CancelToken
    closing: bool = False


class _Bridge:
    """The run's subscriber: subscriber events → normalized events → the emitter."""

    def __init__(self, run: _Run, prices: PriceTable) -> None:
        self._run = run
        self._prices = prices

    async def record(self, event: SubscriberEvent) -> None:
        emitter = self._run.emitter
        if emitter.done:
            return
        chain = CURRENT_SUBAGENT.get()
        if chain and type(event) is TextDeltaEvent:
            # a sub-agent's words are not the run's answer: the reasoning channel, as Claude
            # Code's sub-agent text (the sub-agent's final text comes back as its tool result)
            event = TextDeltaEvent(event.text, "reasoning")
        events = normalize_event(event, emitter.factory, self._prices)
        if events is None:
            events = emitter.note_unknown(event.type)
        if events and chain:  # a sub-agent's event, in this run's stream: say whose
            tags = {"parent_run_id": emitter.factory.run_id, "agent_id": "/".join(chain)}
            events = [e.model_copy(update=tags) for e in events]
        if events:
            await emitter.publish(events)


class _DisplayBridge:
    """Display stack changes → ``status`` details (only what changed since the last one)."""

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._last: dict[str, str] = {}

    async def changed(self, stack: list[Slot]) -> None:
        emitter = self._run.emitter
        now = {s.id: _describe(s) for s in stack}
        lines = [text for sid, text in now.items() if self._last.get(sid) != text]
        lines += [f"display: {sid} removed" for sid in self._last if sid not in now]
        self._last = now
        if lines and not emitter.done:
            await emitter.publish([emitter.factory.status("running", detail=t) for t in lines])


def _describe(slot: Slot) -> str:
    tool = f" (tool {slot.tool_name})" if slot.tool_name else ""
    return f"display: {slot.id} {slot.status} {slot.renderer}{tool}"


class NativeCodec(JsonSessionCodec):
    """``{"sessionKey", "sessionId"}``: the session id is the run id and the store's key."""


class NativeAdapter(AdapterBase):
    """ringleader's own runtime (see the module docstring)."""

    id = "native"

    def __init__(
        self,
        *,
        model_factory: ModelFactory = default_model_factory,
        tools: ToolsSpec = (),
        store_factory: StoreFactory | None = None,
        system_prompt: str = "",
        prices: PriceTable | None = None,
        max_turns: int = 16,
        compaction: CompactionConfig | None = None,
        context_window_tokens: int = 200_000,
        abort_grace_s: float = 5.0,
        models: Sequence[str] = (),
        clock: Callable[[], int] = now_ms,
        workspace: str | os.PathLike[str] | None = None,
        workspace_tools: bool | Sequence[str] = True,
        permissions: PermissionPolicy | str = WORKSPACE_WRITE,
        permission_handler: PermissionHandler | None = None,
        workspace_limits: WorkspaceLimits | None = None,
        bash: BashOptions | None = None,
        app: AppSetup | None = None,
        skills_dir: str | None = ".claude/skills",
        skill_dirs: Mapping[str, str] | None = None,
        builtin_tools: bool = True,
        display: bool = False,
        hooks: Sequence[LifecycleHooks] = (),
        middlewares: Sequence[ModelMiddleware] = (),
        output_schema: OutputSpec | None = None,
        output_retries: int = 2,
        mcp_servers: Sequence[McpServer] = (),
    ) -> None:
        """See docs/runtimes/native.md; the tool options:

        Args:
            workspace: the directory the built-in tools are confined to when a run's
                ``StartOpts.cwd`` is not set (default: our working directory at start).
            tools: extra tools (or a function of the run's ``StartOpts`` giving them); a tool
                with a built-in's name replaces it.
            workspace_tools: the built-in tools confined to the run's ``cwd`` (``read_file``,
                ``write_file``, ``edit_file``, ``list_files``, ``glob``, ``grep``, ``bash``):
                ``True`` for all, ``False`` for none, or the names to ship.
            permissions: a :class:`~.policy.PermissionPolicy` or a preset name
                (``read-only``, ``workspace-write`` — the default: files read and written in
                the workspace, ``bash`` asks — or ``full-access``).
            permission_handler: how to ``ask`` (an async function of a
                :class:`~.executor.PermissionRequest` giving True to allow); without one,
                ``ask`` denies.
            workspace_limits: output caps and search bounds of the file tools.
            bash: the ``bash`` tool's timeout, environment allow-list and output cap.
            app: called with each run's Glove and ``StartOpts`` before the run starts, to
                define hooks, skills and sub-agents (may be async).
            skills_dir: content skills loaded from this directory, relative to the run's
                ``cwd`` (Claude Code's ``.claude/skills`` layout); ``None`` loads none.
            skill_dirs: more content skills by name, each one skill's directory (its
                ``SKILL.md`` and section files), relative to the run's ``cwd``; a missing one
                fails the run (``error{config_error}``).
            builtin_tools: ship ``glove_update_tasks`` and ``glove_post_to_inbox`` (the
                store supports both); ``False`` leaves them out.
            display: give each run a display manager whose slots are ``status`` details and
                are answered through ``write_context`` (see the module docstring).
            hooks: lifecycle hooks (:class:`~.lifecycle.LifecycleHooks`), in order, for every
                run: they may skip a tool call, rewrite its input, replace its result or stop
                the run (``done{aborted}``).
            middlewares: wrap each turn's model call, the first outermost
                (:class:`~.lifecycle.ModelMiddleware`).
            output_schema: the final answer must be JSON matching this pydantic model class or
                JSON Schema (:mod:`.structured`); a mismatch is sent back to the model up to
                ``output_retries`` times, then the run fails (``error{output_invalid}``).
            mcp_servers: MCP servers (:class:`~.mcp.McpStdioServer`,
                :class:`~.mcp.McpHttpServer`) each run connects to; their tools are
                ``mcp__<server>__<tool>`` (the policy's ``tools`` overrides apply by that name).
        """
        super().__init__(clock=clock)
        self._model_factory = model_factory
        self._tools = tools
        self._store_factory = store_factory
        self._system_prompt = system_prompt
        self.prices = prices or PriceTable()
        self._max_turns = max_turns
        self._compaction = compaction
        self._window = context_window_tokens
        self._abort_grace_s = abort_grace_s
        self._models = tuple(models)
        if isinstance(workspace_tools, str):
            workspace_tools = (workspace_tools,)
        self._workspace = None if workspace is None else os.fspath(workspace)
        self._workspace_tools: Sequence[str] | None = (
            None if workspace_tools is True else () if workspace_tools is False else workspace_tools
        )
        self.permissions = (
            PermissionPolicy.preset(permissions) if isinstance(permissions, str) else permissions
        )
        self._permission_handler = permission_handler
        self._workspace_limits = workspace_limits
        self._bash = bash
        self._app = app
        self._skills_dir = skills_dir
        self._skill_dirs = dict(skill_dirs or {})
        self._builtin_tools = builtin_tools
        self._display = display
        self._loop_config = LoopConfig(
            hooks=tuple(hooks),
            middlewares=tuple(middlewares),
            output_schema=as_output_schema(output_schema),
            output_retries=output_retries,
        )
        self._mcp_servers = tuple(mcp_servers)
        if self._workspace_tools:
            workspace_tools_for(".", names=self._workspace_tools)  # unknown names fail here
        self._live: dict[str, _Run] = {}
        self._workspace_cache: dict[str, tuple[PermissionPolicy, list[Tool[Any]]]] = {}
        self._loop_configs: dict[int, LoopConfig] = {}
        self._codec = NativeCodec(self)
        self.calls: list[RecordedCall] = []

    @property
    def session_codec(self) -> NativeCodec:
        return self._codec

    @property
    def permission_handler(self) -> PermissionHandler | None:
        """How ``ask`` decisions are answered (None: they deny). Settable before ``start``:
        ``ringleader serve`` points it at the board's approvals."""
        return self._permission_handler

    @permission_handler.setter
    def permission_handler(self, handler: PermissionHandler | None) -> None:
        self._permission_handler = handler

    def capabilities(self) -> Capabilities:
        return Capabilities(
            streaming=True,
            mcp=True,
            worktrees=False,
            resume=True,
            tool_approval=True,
            models=self._models,
            steerable=True,
            context_window_tokens=self._window,
            runtime_class="native",
            reports_cost_usd=True,
            native_home=NativeHomeClaim(scope="per-identity", persist=True),
            native_skills="none",
            native_memory="preserve",
            native_channels="none",
            native_scheduler=False,
            prompt_images=True,
            plan_mode=True,
            session_fork=True,
            run_mcp_servers=True,
            run_mcp_http=True,
        )

    async def probe_health(self) -> HealthResult:
        await trio.lowlevel.checkpoint()
        return HealthResult(ok=True, message="in-process runtime")

    def recorded_calls(self) -> list[RecordedCall]:
        return list(self.calls)

    # -- runs ------------------------------------------------------------------------------

    def _store(self, opts: StartOpts, session_id: str) -> Store:
        if self._store_factory is not None:
            return self._store_factory(opts, session_id)
        if opts.home_dir:
            root = Path(opts.home_dir) / "native"
            root.mkdir(parents=True, exist_ok=True)
            return SqliteStore(root / "sessions.db", session_id)
        return MemoryStore(session_id)

    def _tool_list(self, opts: StartOpts) -> list[Tool[Any]]:
        """Built-in workspace tools, then the extra ones (same name replaces), the policy's
        per-tool overrides applied, the run's blocklist (case-insensitive) removed."""
        extra = list(self._tools(opts) if callable(self._tools) else self._tools)
        builtin: list[Tool[Any]] = []
        policy = READ_ONLY if opts.plan else self.permissions  # plan mode: read-only
        if self._workspace_tools != ():
            builtin = self._workspace_tools_in(opts.cwd or self._workspace or os.getcwd(), policy)
        names = {t.name for t in extra}
        return self._allowed(opts, [t for t in builtin if t.name not in names] + extra)

    def _loop_config_for(self, max_turns: int | None) -> LoopConfig:
        """The loop configuration with the run's compaction (built once per turn limit)."""
        turns = max_turns or self._max_turns
        config = self._loop_configs.get(turns)
        if config is None:
            if len(self._loop_configs) >= _WORKSPACE_CACHE_MAX:
                self._loop_configs.clear()
            # Glove's trigger (the store's token consumption since the last compaction) with the
            # model's context window as the limit, unless a compaction config was given
            compaction = self._compaction or CompactionConfig(compaction_context_limit=self._window)
            config = attrs.evolve(self._loop_config, compaction=compaction, max_model_calls=turns)
            self._loop_configs[turns] = config
        return config

    def _workspace_tools_in(
        self, cwd: str, policy: PermissionPolicy | None = None
    ) -> list[Tool[Any]]:
        """The built-in tools confined to ``cwd`` with the policy's verdicts, built once per
        directory and policy (they keep no state: each call opens its paths beneath the root,
        like the extra tools every run shares)."""
        policy = policy or self.permissions
        if policy is not self.permissions:  # plan mode's read-only tools: not cached
            return workspace_tools_for(
                cwd,
                policy=policy,
                limits=self._workspace_limits,
                bash=self._bash,
                names=self._workspace_tools,
            )
        cached = self._workspace_cache.get(cwd)
        if cached is not None and cached[0] is policy:
            return cached[1]
        if len(self._workspace_cache) >= _WORKSPACE_CACHE_MAX:
            del self._workspace_cache[next(iter(self._workspace_cache))]
        tools = workspace_tools_for(
            cwd,
            policy=policy,
            limits=self._workspace_limits,
            bash=self._bash,
            names=self._workspace_tools,
        )
        self._workspace_cache[cwd] = (policy, tools)
        return tools

    def _allowed(self, opts: StartOpts, tools: Iterable[Tool[Any]]) -> list[Tool[Any]]:
        """The policy's per-tool overrides applied, the run's blocklist (case-insensitive)
        removed."""
        overrides = READ_ONLY.tools if opts.plan else self.permissions.tools  # plan: read-only
        blocked = {n.lower() for n in opts.child_tool_blocklist}
        return [
            attrs.evolve(t, permission=overrides[t.name]) if t.name in overrides else t
            for t in tools
            if t.name.lower() not in blocked
        ]

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        # checkpoint first: the run task must not bind the run id before start() returns
        await trio.lowlevel.checkpoint()
        emitter = self.new_run(opts.session_key)
        session_id = opts.resume_session_id or f"native-{uuid.uuid4().hex[:16]}"
        fork_from: str | None = None
        if opts.fork and opts.resume_session_id:  # a copy of the session goes on; it stays
            fork_from, session_id = session_id, f"native-{uuid.uuid4().hex[:16]}"
        token = CancelToken(grace_s=self._abort_grace_s)
        try:
            model = self._model_factory(opts)
        except ConfigError as exc:
            self.spawn(self._fail_early, emitter, session_id, exc)
            return emitter.handle
        display = DisplayManager() if self._display else None
        handler = self._permission_handler
        if handler is None and opts.approvals_db:
            handler = ApprovalBook(opts.approvals_db).handler(
                runtime_id=self.id,
                agent_id=opts.agent_id,
                session_key=opts.session_key,
                cwd=opts.cwd or self._workspace or os.getcwd(),
            )
        glove = Glove(
            model=model,
            store=self._store(opts, session_id),
            display_manager=display,
            system_prompt=self._system_prompt,
            permission_handler=handler,
            builtin_tools=self._builtin_tools,
            unhandled_approval="deny",
            loop_config=self._loop_config_for(opts.max_turns),
        )
        for tool in self._tool_list(opts):
            glove.add_tool(tool)
        run = _Run(emitter=emitter, opts=opts, glove=glove, token=token)
        glove.add_subscriber(_Bridge(run, self.prices)).build()
        if display is not None:
            display.subscribe(_DisplayBridge(run).changed)
        self._live[opts.session_key] = run
        self.spawn(self._drive, run, session_id, fork_from)
        return emitter.handle

    async def _fail_early(self, emitter: RunEmitter, session_id: str, exc: ConfigError) -> None:
        emitter.bind_run_id(session_id)
        await emitter.fail(str(exc), code=exc.event_code)

    async def _drive(self, run: _Run, session_id: str, fork_from: str | None = None) -> None:
        emitter, glove = run.emitter, run.glove
        emitter.bind_run_id(session_id)
        try:
            await emitter.publish([emitter.factory.status("init", model=glove.model.name)])
            if fork_from is not None:
                await self._copy_session(run.opts, fork_from, glove.store)
            async with self._mcp(run):
                await self._setup_app(run)
                result = await glove.run_request(_request(run.opts), run.token)
                while (
                    result.stop == "completed"
                    and glove.agent.pending_steers
                    and not run.token.cancelled
                ):
                    # a steer arrived after the loop's last check: keep the conversation going
                    try:
                        result = await glove.continue_request(run.token)
                    except AbortError as exc:
                        result = exc.result
            run.closing = True
            await self._finish(run, result)
        except ModelError as exc:
            run.closing = True
            after = "" if exc.retry_after is None else f" (retry after {exc.retry_after:g}s)"
            await emitter.fail(f"{exc}{after}", code=f"model_{exc.code}")
        except RingleaderError as exc:  # McpStartError, OutputValidationError (output_invalid) …
            run.closing = True
            await emitter.fail_with(exc)
        except Exception as exc:
            run.closing = True
            _log.warning("native run %s failed", session_id, exc_info=True)
            await emitter.fail(
                redact_secrets(f"{type(exc).__name__}: {exc}"), code="internal_error"
            )
        finally:
            store = glove.store
            if isinstance(store, SqliteStore):
                with trio.CancelScope(shield=True):
                    await store.aclose()

    async def _copy_session(self, opts: StartOpts, source_id: str, target: Store) -> None:
        """A fork's start: the messages of session ``source_id`` copied into ``target``."""
        source = self._store(opts, source_id)
        try:
            messages = await source.get_messages()
        finally:
            if isinstance(source, SqliteStore):
                await source.aclose()
        if not messages:
            raise ConfigError(f"native session {source_id!r} has no messages to fork")
        await target.append_messages(messages)

    @asynccontextmanager
    async def _mcp(self, run: _Run) -> AsyncGenerator[None]:
        """The run's MCP servers, their tools on its Glove, for the block (none: a no-op)."""
        servers = (*self._mcp_servers, *(_run_server(s) for s in run.opts.mcp_servers))
        if not servers:
            yield
            return
        emitter, opts = run.emitter, run.opts

        async def died(exc: McpServerDiedError) -> None:
            if not emitter.done:
                error = emitter.factory.error(str(exc), code=exc.event_code, fatal=False)
                await emitter.publish([error])

        installed: set[str] = set()

        async def install(hub: McpHub) -> None:
            """The hub's tools on the Glove (again after a ``tools/list_changed``)."""
            tools = self._allowed(opts, hub.tools)
            for gone in installed - {t.name for t in tools}:
                run.glove.remove_tool(gone)
            for tool in tools:
                run.glove.add_tool(tool)
            installed.clear()
            installed.update(t.name for t in tools)
            if not emitter.done:
                await emitter.publish([emitter.factory.status("running", detail=hub.describe())])

        async with open_mcp_servers(
            servers,
            cwd=opts.cwd or self._workspace,
            session_key=opts.session_key,
            on_died=died,
            on_tools_changed=install,
        ) as hub:
            await install(hub)
            yield

    def _skills_root(self, opts: StartOpts) -> Path | None:
        """The run's skills directory if it exists (one ``stat``; no thread when absent)."""
        if self._skills_dir is None:
            return None
        root = os.path.join(opts.cwd or self._workspace or os.getcwd(), self._skills_dir)
        return Path(root) if os.path.isdir(root) else None

    async def _setup_app(self, run: _Run) -> None:
        """Content skills from the run's skills directory, then the ``app`` setup; the run's
        blocklist applies to every tool this adds and to the Glove's built-in ones."""
        glove, opts = run.glove, run.opts
        root = self._skills_root(opts)
        skills = await load_content_skills_from_fs(root) if root is not None else []
        base = opts.cwd or self._workspace or os.getcwd()
        for name, directory in self._skill_dirs.items():
            skills = [s for s in skills if s.name != name]
            skills.append(await _one_skill(name, os.path.join(base, directory)))
        if skills:
            await use_read_skill(glove, skills)
        if self._app is not None:
            made = self._app(glove, opts)
            if inspect.isawaitable(made):
                await made
        blocked = {n.lower() for n in opts.child_tool_blocklist}
        for tool in glove.tools:
            if tool.name.lower() in blocked:
                glove.remove_tool(tool.name)

    async def _finish(self, run: _Run, result: AskResult) -> None:
        emitter = run.emitter
        if result.stop == "completed":
            await emitter.finish("success", result.text)
        elif result.stop == "max_turns":
            await emitter.finish("max_turns", result.text)
        else:
            await emitter.finish("aborted", result.cancel_reason or result.text)

    # -- control -------------------------------------------------------------------------------

    async def abort(self, run: RunHandle) -> None:
        self.calls.append(
            RecordedCall("abort", {"sessionKey": run.session_key, "runId": run.run_id})
        )
        live = self._live.get(run.session_key)
        emitter = self.emitter_for(run)
        if live is None or emitter is None or emitter.done:
            await trio.lowlevel.checkpoint()
            return
        live.token.cancel()
        with trio.move_on_after(self._abort_grace_s + 1.0):
            await emitter.finished.wait()
        if not emitter.done:
            await emitter.finish("aborted", "")

    async def set_model(self, run: RunHandle, model: str) -> None:
        self.calls.append(RecordedCall("setModel", {"sessionKey": run.session_key, "model": model}))
        live = self._live.get(run.session_key)
        if live is not None:
            name = model.split(":", 1)[1] if ":" in model else model
            live.glove.set_model(live.glove.model.with_model(name))
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        validate_context_key(key)
        live = self._live.get(run.session_key)
        if key.startswith(DISPLAY_KEY_PREFIX):
            await self._answer_slot(live, key[len(DISPLAY_KEY_PREFIX) :], value)
            self.calls.append(RecordedCall("writeContext", {"key": key, "value": value}))
            return
        steered = False
        path = (
            confined_path(live.opts.cwd, key)
            if live is not None and live.opts.cwd and key != STEER_KEY
            else None
        )
        if live is not None and not live.closing and not live.emitter.done:
            text = value if key == STEER_KEY else f"[context update: {key}]\n{value}"
            live.glove.steer(text)  # before any await: it lands at the next turn boundary
            steered = True
        if path is not None and live is not None and live.opts.cwd:
            await write_context_file(live.opts.cwd, key, value)
        self.calls.append(
            RecordedCall("writeContext", {"key": key, "value": value, "steered": steered})
        )
        await trio.lowlevel.checkpoint()

    async def _answer_slot(self, live: _Run | None, target: str, value: str) -> None:
        display = live.glove.display_manager if live is not None else None
        if display is None:
            raise ConfigError("this run has no display slots (NativeAdapter(display=True))")
        slot_id, _, action = target.partition("/")
        if action == "reject":
            answered = await display.reject(slot_id, value)
        elif not action:
            try:
                answer: Any = json.loads(value)
            except ValueError:
                answer = value
            try:
                answered = await display.resolve(slot_id, answer)
            except SlotValueError as exc:
                raise ConfigError(str(exc)) from None
        else:
            raise ConfigError(
                f"unknown display action {action!r} (use <slot id> or <slot id>/reject)"
            )
        if not answered:
            raise ConfigError(f"display slot {slot_id!r} is not waiting for an answer")

    def forget_run(self, session_key: str) -> None:
        self._live.pop(session_key, None)

    def glove_for(self, run: RunHandle) -> Glove | None:
        """The live run's Glove (tests and hosts that want the store or the display)."""
        live = self._live.get(run.session_key)
        return live.glove if live is not None else None


async def _one_skill(name: str, directory: str) -> ContentSkill:
    """The content skill in ``directory`` (its ``SKILL.md``), named ``name`` as declared."""
    where = PurePath(directory)
    found = [
        s
        for s in await load_content_skills_from_fs(where.parent)
        if PurePath(s.path or "").name == where.name
    ]
    if not found:
        raise ConfigError(f"runtimes.native.skills.{name}.dir: no SKILL.md in {directory}")
    return attrs.evolve(found[0], name=name)


def _request(opts: StartOpts) -> str | list[ContentPart]:
    """The run's first user message: the prompt (cut in cache tiers), then its images."""
    request = tiered_request(opts)
    if not opts.images:
        return request
    parts = [ContentPart(type="text", text=request)] if isinstance(request, str) else request
    for image in opts.images:
        source = ContentSource(type="base64", media_type=image.mime_type, data=image.data)
        parts.append(ContentPart(type="image", source=source))
    return parts


def _run_server(server: RunMcpServer) -> McpServer:
    """A run's own MCP server (``StartOpts.mcp_servers``) as the native runtime starts it."""
    if server.url is not None:
        return McpHttpServer(server.name, server.url, headers=dict(server.headers))
    if server.command is None:
        raise ConfigError(f"MCP server {server.name!r} has neither a command nor a url")
    return McpStdioServer(server.name, server.command, server.args, env=dict(server.env))
