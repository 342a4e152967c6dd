"""ringleader as an MCP server: tools for an agent to orchestrate other agents.

``ringleader mcp`` serves these tools over stdio (an MCP client — Claude Code's ``--mcp-config``,
the native runtime's ``mcp_servers``, any other — starts it as a child), and ``ringleader serve``
at ``/mcp`` over Streamable HTTP (the board's token required, in the ``Authorization`` header),
built with the official ``mcp`` package (anyio, running on trio):

* ``start_run(runtime, prompt, model?, cwd?)`` — start a task on a runtime, hosted by this
  server (its runs are recorded in the event log like any other); answers the task id and, once
  it is known, the run key.
* ``list_runs(limit?)`` — the runs of the event log, newest first (this process's and others').
* ``read_events(run, since_seq?, limit?)`` — a run's events after a sequence number, as wire JSON.
* ``wait_run(run, timeout_s?)`` — wait for a run to end: its status, summary, usage and cost.
* ``say(run, text)`` — steer a live run of this server whose runtime is steerable.
* ``abort_run(run)`` — abort a live run of this server.
* ``approve(id, allow, message?)`` — decide a tool call waiting in the approval book.
* ``read_diff(run)`` — what the run changed, as ``ringleader diff`` shows it (one diff:
  ``orchestrator/engine/review/diff.py``'s ``workspace_diff``).

``run`` is a run key, the task id ``start_run`` answered (its latest run), or ``last``. A mistake (unknown
run, a finished one, a runtime that is not steerable) is a tool error with one clear line, never
a traceback; the server keeps serving.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from orchestrator.core.approvals import ApprovalBook, ApprovalDecision
from orchestrator.core.errors import (
    CapabilityError,
    MailboxClosedError,
    ReviewError,
    RingleaderError,
)
from orchestrator.core.events import event_to_json
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.eventlog import EventLog, RunRow
from orchestrator.engine.feed import FeedAuth, RecordingSink, refused
from orchestrator.engine.hosts import LocalHost, TaskRef
from orchestrator.engine.review.diff import WorkspaceDiff, workspace_diff
from orchestrator.engine.review.git import Checkout, git
from orchestrator.engine.review.inplace import record_in_place
from orchestrator.engine.review.records import checkout_of, resolve_run
from orchestrator.engine.runner import Runner, TaskSpec

__all__ = [
    "Orchestration",
    "build_mcp_server",
    "mcp_http_route",
    "open_orchestration",
    "serve_mcp_stdio",
]

_FINISHED = ("success", "max_turns", "aborted", "error", "failed", "interrupted")
_DIFF_LIMIT = 200_000
"""Characters of a diff ``read_diff`` answers (the rest is cut, saying so)."""


@attrs.define
class Orchestration:
    """What the tools act on: the runs this server hosts, the event log, the approval book."""

    host: LocalHost
    log: EventLog
    registry: RuntimeRegistry
    approvals: ApprovalBook
    cwd: str
    refs: dict[str, TaskRef] = attrs.field(factory=dict[str, TaskRef])
    """Task id → the task this server started."""
    poll_s: float = 0.25
    """How often ``wait_run`` looks at the log for a run of another process."""

    async def start(self, runtime: str, prompt: str, model: str | None, cwd: str | None) -> TaskRef:
        """Start a task here; a run in a git checkout gets its starting point recorded first
        (:mod:`orchestrator.engine.review.inplace`), so ``read_diff`` shows what it changed."""
        if runtime not in self.registry:
            raise ToolError(f"unknown runtime {runtime!r}; known: {', '.join(self.registry.ids())}")
        if not prompt.strip():
            raise ToolError("the prompt is empty")
        where = await trio.Path(cwd or self.cwd).expanduser()
        if not await where.is_dir():
            raise ToolError(f"{where} is not a directory")
        task_id = f"mcp-{secrets.token_hex(4)}"
        task = TaskSpec(
            task_id=task_id, title=prompt, model=model or None, cwd=str(where), agent_id="mcp"
        )
        with contextlib.suppress(RingleaderError):  # without it only the diff is lost
            await record_in_place(
                self.log,
                cwd=str(where),
                task_id=task_id,
                runtime_id=runtime,
                label=runtime,
                group_id=task_id,
            )
        ref = self.host.submit(runtime, task)
        self.refs[task_id] = ref
        return ref

    async def run_key(self, run: str) -> str:
        """The run key ``run`` names: a run key, a task id of this server (its latest run), or
        ``last`` (the latest run this server started, else the log's latest)."""
        if run == "last":
            if self.refs:
                run = next(reversed(self.refs))
            else:
                rows = await self.log.runs()
                if not rows:
                    raise ToolError("there is no run yet")
                return max(rows, key=lambda r: r.started_ms).run_key
        ref = self.refs.get(run)
        if ref is not None:
            if ref.actor is not None:
                return ref.actor.run_key
            prefix = f"runtime:{ref.runtime_id}:task:{ref.task.task_id}:"
            rows = [r for r in await self.log.runs() if r.run_key.startswith(prefix)]
            if rows:
                return max(rows, key=lambda r: r.started_ms).run_key
            raise ToolError(f"task {run} has not started a run yet; try again")
        if any(r.run_key == run for r in await self.log.runs()):
            return run
        raise ToolError(f"no run or task {run!r} (list_runs shows the runs)")

    def hosted(self, run_key: str) -> TaskRef | None:
        for ref in self.host.tasks:
            if ref.actor is not None and ref.actor.run_key == run_key:
                return ref
        for ref in self.host.tasks:
            if run_key.startswith(f"runtime:{ref.runtime_id}:task:{ref.task.task_id}:"):
                return ref
        return None

    async def row(self, run_key: str) -> RunRow | None:
        for row in await self.log.runs():
            if row.run_key == run_key:
                return row
        return None


def _row_json(row: RunRow) -> dict[str, Any]:
    return {
        "runKey": row.run_key,
        "runtime": row.runtime_id,
        "status": row.status,
        "startedMs": row.started_ms,
        "endedMs": row.ended_ms,
        "outcome": row.outcome,
    }


async def _checkout(orch: Orchestration, key: str) -> Checkout:
    """Where the run's changes are, as the review commands see them: its recorded workspace (a
    worktree, a copy, or the person's checkout with its recorded starting point); for a run
    with none recorded (it started before starting points were kept), its directory against
    ``HEAD``."""
    try:
        return checkout_of((await resolve_run(orch.log, key)).workspace)
    except ReviewError as exc:
        ref = orch.hosted(key)
        cwd = ref.task.cwd if ref is not None else None
        if cwd is None:
            session = await orch.log.get_session(key)
            cwd = session.origin_cwd if session is not None else None
        if not cwd:
            raise ToolError(f"run {key} recorded no working directory") from None
        found = await trio.to_thread.run_sync(_head_checkout, cwd)
        if found is None:
            raise ToolError(" ".join(str(exc).split())) from None
        return found


def _head_checkout(cwd: str) -> Checkout | None:
    """The git checkout holding ``cwd``, against its ``HEAD`` (``None``: not in git)."""
    if not Path(cwd).is_dir():
        raise ToolError(f"the run's directory {cwd} is gone")
    top = git(["rev-parse", "--show-toplevel"], cwd=Path(cwd), check=False)
    head = git(["rev-parse", "--verify", "--quiet", "HEAD"], cwd=Path(cwd), check=False)
    if top.returncode != 0 or head.returncode != 0:
        return None
    return Checkout(Path(top.stdout.decode().strip()), head.stdout.decode().strip())


def _diff_answer(key: str, checkout: Checkout, diff: WorkspaceDiff) -> dict[str, Any]:
    """``read_diff``'s answer: the files (status, lines, binary/large) and the unified diff
    (cut at :data:`_DIFF_LIMIT` characters, saying so)."""
    text = diff.unified()
    cut = len(text) > _DIFF_LIMIT
    return {
        "runKey": key,
        "workspace": str(checkout.root),
        "base": diff.base,
        "summary": diff.summary(),
        "files": [f.to_json(hunks=False) for f in diff.files],
        "diff": text[:_DIFF_LIMIT] + ("\n[diff cut: too long]" if cut else ""),
    }


def build_mcp_server(orch: Orchestration) -> MCPServer[Any]:
    """The MCP server with ringleader's tools over ``orch``."""
    # MCPServer() calls logging.basicConfig (a rich handler on the root logger, INFO): with a
    # handler already there it does nothing, and ringleader's own logging stays as it was
    root = logging.getLogger()
    guard = logging.NullHandler()
    root.addHandler(guard)
    try:
        server: MCPServer[Any] = MCPServer(
            name="ringleader",
            instructions="Start, watch, steer and land runs of coding agents (native, Claude "
            "Code, Codex, OpenClaw, Hermes, any ACP agent) through ringleader.",
            log_level="WARNING",
        )
    finally:
        root.removeHandler(guard)

    @server.tool()
    async def start_run(
        runtime: str, prompt: str, model: str | None = None, cwd: str | None = None
    ) -> dict[str, Any]:
        """Start a task on a runtime (see list_runs for ids; `ringleader runtimes` lists the
        runtimes). Answers the task id, and the run key once the run has started."""
        ref = await orch.start(runtime, prompt, model, cwd)
        with trio.move_on_after(5):
            await ref.started()
        run_key = ref.actor.run_key if ref.actor is not None else None
        return {"task": ref.task.task_id, "runtime": runtime, "runKey": run_key}

    @server.tool()
    async def list_runs(limit: int = 50) -> list[dict[str, Any]]:
        """The runs in the event log, newest first."""
        rows = sorted(await orch.log.runs(), key=lambda r: r.started_ms, reverse=True)
        return [_row_json(r) for r in rows[: max(1, min(limit, 1000))]]

    @server.tool()
    async def read_events(run: str, since_seq: int = 0, limit: int = 200) -> dict[str, Any]:
        """A run's events after `since_seq` (wire JSON, camelCase); `next` is the cursor to pass
        as since_seq next time."""
        key = await orch.run_key(run)
        size = max(1, min(limit, 2000))
        events = await orch.log.read(key, after_seq=max(0, since_seq), limit=size + 1)
        page = events[:size]
        return {
            "runKey": key,
            "events": [json.loads(event_to_json(e)) for e in page],
            "next": page[-1].seq if page else since_seq,
            "more": len(events) > size,
        }

    @server.tool()
    async def wait_run(run: str, timeout_s: float = 600) -> dict[str, Any]:
        """Wait (up to timeout_s) for a run to end; its status, summary, usage and cost."""
        key = await orch.run_key(run)
        ref = orch.refs.get(run) or orch.hosted(key)
        with trio.move_on_after(max(0.0, min(timeout_s, 24 * 3600))):
            if ref is not None:
                with contextlib.suppress(RingleaderError):  # the log's row says how it ended
                    await ref.outcome()
                key = await orch.run_key(run)
            while True:
                row = await orch.row(key)
                if row is not None and row.status in _FINISHED:
                    return {**_row_json(row), "finished": True}
                await trio.sleep(orch.poll_s)
        row = await orch.row(key)
        return {**(_row_json(row) if row else {"runKey": key}), "finished": False}

    @server.tool()
    async def say(run: str, text: str) -> dict[str, Any]:
        """Send text into a live run of this server (steerable runtimes: native, Claude Code
        long-lived, Codex app-server)."""
        key = await orch.run_key(run)
        ref = orch.hosted(key)
        if ref is None or ref.finished:
            raise ToolError(f"run {key} is not live in this server")
        try:
            ref.steer(text)
        except (CapabilityError, MailboxClosedError) as exc:
            raise ToolError(" ".join(str(exc).split())) from None
        return {"runKey": key, "delivered": True}

    @server.tool()
    async def abort_run(run: str) -> dict[str, Any]:
        """Abort a live run of this server; it ends as aborted."""
        key = await orch.run_key(run)
        ref = orch.hosted(key)
        if ref is None or ref.finished:
            raise ToolError(f"run {key} is not live in this server")
        ref.abort()
        return {"runKey": key, "aborting": True}

    @server.tool()
    async def approve(approval_id: str, allow: bool, message: str | None = None) -> dict[str, Any]:
        """Decide a tool call waiting for approval (ids: the run's waiting_approval status)."""
        decision = ApprovalDecision(allow, reject_message=None if allow else message or None)
        try:
            entry = await orch.approvals.decide(approval_id, decision)
        except RingleaderError as exc:
            raise ToolError(" ".join(str(exc).split())) from None
        return {"id": entry.id, "status": entry.status, "tool": entry.tool}

    @server.tool()
    async def read_diff(run: str) -> dict[str, Any]:
        """What a run changed (as `ringleader diff` shows it): against the commit its workspace
        started from, untracked files included, renames found, binary and large files marked."""
        key = await orch.run_key(run)
        checkout = await _checkout(orch, key)
        try:
            diff = await trio.to_thread.run_sync(workspace_diff, checkout)
        except ReviewError as exc:
            raise ToolError(" ".join(str(exc).split())) from None
        return _diff_answer(key, checkout, diff)

    return server


@asynccontextmanager
async def open_orchestration(
    registry: RuntimeRegistry, state_dir: Path, *, cwd: str
) -> AsyncGenerator[Orchestration]:
    """The event log, a runner recording into it and a host for the runs the tools start."""
    async with EventLog.open(state_dir / "events.db") as log:
        runner = Runner(
            registry,
            sink=RecordingSink(log),
            state_dir=state_dir,
            event_log=log,
            approvals=True,  # a call that needs approval waits for `approve` (or the board, CLI)
        )
        async with LocalHost(runner) as host:
            yield Orchestration(host, log, registry, ApprovalBook.in_state_dir(state_dir), cwd=cwd)
            for ref in host.tasks:  # the client went away: its runs end as aborted
                if not ref.finished:
                    ref.abort()


async def serve_mcp_stdio(registry: RuntimeRegistry, state_dir: Path, *, cwd: str) -> None:
    """Serve the tools on stdin/stdout until the client closes them."""
    async with open_orchestration(registry, state_dir, cwd=cwd) as orch:
        await build_mcp_server(orch).run_stdio_async()


def mcp_http_route(
    orch: Orchestration, *, token: str, host: str
) -> tuple[Route, AbstractAsyncContextManager[None]]:
    """``/mcp`` (Streamable HTTP) for an app that serves more (``ringleader serve``): the route,
    and the session manager's lifetime to hold while serving. Every request needs ``token``."""
    server = build_mcp_server(orch)
    inner = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    route = Route(
        "/mcp", endpoint=_Guarded(inner, FeedAuth(token)), methods=["GET", "POST", "DELETE"]
    )
    return route, server.session_manager.run()


@attrs.frozen
class _Guarded:
    """An ASGI app (a class, so the route hands it the raw scope) that lets a request through
    only with the token."""

    app: ASGIApp
    auth: FeedAuth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.auth.reads(Request(scope)):
            await refused()(scope, receive, send)
            return
        await self.app(scope, receive, send)
