"""``ringleader serve`` (the board, hosting runs) and ``ringleader run --board``. Part of the CLI:
the library never imports this module."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TextIO

import attrs
import trio

from orchestrator.board.server import BoardHost, board_app
from orchestrator.cli.commands import serve_banner, usable_state_dir
from orchestrator.core.approvals import ApprovalBook
from orchestrator.core.config import AccountConfig, NotifyConfig, ScheduleConfig
from orchestrator.core.quota import QuotaBook
from orchestrator.core.registry import RuntimeRegistry
from orchestrator.engine.eventlog import EventLog, LoggedEvent
from orchestrator.engine.feed import Feed, RecordingSink, check_bind, new_token, serve_feed
from orchestrator.engine.followups import FollowupBook
from orchestrator.engine.hosts import LocalHost
from orchestrator.engine.notify import Notifier
from orchestrator.engine.runner import Runner
from orchestrator.engine.schedule import ScheduleBook, Scheduler, describe_cron, host_firing

__all__ = ["FeedRelay", "board_for_run", "serve_board", "tail_log"]


STOP_GRACE_S = 10.0
"""How long ``serve`` waits, after Ctrl-C, for its runs to end as aborted."""


@attrs.define(eq=False)
class FeedRelay:
    """Publishes to ``feed`` what this process commits (as the log's listener) and what other
    processes append (:func:`tail_log`), each event once and in ``gid`` order."""

    feed: Feed
    last: int = 0
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def publish(self, items: Sequence[LoggedEvent]) -> None:
        async with self._lock:
            fresh = [i for i in items if i.gid > self.last]
            if fresh:
                self.last = fresh[-1].gid
                await self.feed.publish(fresh)


async def tail_log(log: EventLog, relay: FeedRelay, interval_s: float = 0.2) -> None:
    """Publish what other processes append to the log (``ringleader run`` in another shell)."""
    relay.last = max(relay.last, await log.last_gid())
    while True:
        batch = await log.read_since(relay.last)
        if batch:
            await relay.publish(batch)
        else:
            await trio.sleep(interval_s)


TOKEN_FILE = "board-token"
"""The generated access token of ``serve`` and ``run --board``, in the state directory (0600):
the same across restarts, so an open page keeps working, and readable by scripts of the user."""


def access_token(state: Path) -> str:
    """The board's generated access token: ``state/board-token`` (created 0600 with a fresh
    random token if missing or not private to this user)."""
    path = state / TOKEN_FILE
    with contextlib.suppress(OSError):
        info = path.lstat()
        if (
            stat.S_ISREG(info.st_mode)
            and info.st_uid == os.getuid()
            and not info.st_mode & 0o077
            and (text := path.read_text("ascii").strip())
            and len(text) >= 32
        ):
            return text
    token = new_token()
    tmp = path.with_name(f".{TOKEN_FILE}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token + "\n")
    os.replace(tmp, path)
    return token


async def serve_board(
    registry: RuntimeRegistry,
    *,
    host: str,
    port: int,
    token: str | None,
    out: TextIO,
    notify: NotifyConfig | None = None,
    schedules: Sequence[ScheduleConfig] = (),
    accounts: Mapping[str, AccountConfig] | None = None,
) -> int:
    """Serve the board over the event log, hosting the runs posted to ``/tasks`` (they work in
    the current directory); runs of other processes show up live too. ``notify``: tell a person
    when a hosted run needs them (``[notify]``). ``schedules``: the ``[[schedule]]`` tasks it
    runs on their cron schedule (``orchestrator/engine/schedule.py``)."""
    check_bind(host, token)
    state = usable_state_dir()
    feed = Feed()
    titles: dict[str, str] = {}
    async with AsyncExitStack() as stack:
        notifiers: list[Notifier] = []
        if notify is not None and notify.urls:
            notifier = Notifier(notify, titles=titles)
            notifiers.append(await stack.enter_async_context(notifier.running()))
        return await _serve_board(
            registry,
            host,
            port,
            token,
            out,
            state,
            feed,
            titles,
            notifiers,
            schedules=schedules,
            accounts=accounts,
        )


async def _serve_board(
    registry: RuntimeRegistry,
    host: str,
    port: int,
    token: str | None,
    out: TextIO,
    state: Path,
    feed: Feed,
    titles: dict[str, str],
    notifiers: list[Notifier],
    *,
    schedules: Sequence[ScheduleConfig] = (),
    accounts: Mapping[str, AccountConfig] | None = None,
) -> int:
    async with EventLog.open(state / "events.db") as log:
        relay = FeedRelay(feed)
        log.add_listener(relay)
        runner = Runner(
            registry,
            sink=RecordingSink(log, extra=notifiers),
            state_dir=state,
            event_log=log,
            approvals=True,  # tool calls that need approval wait for the board (or the CLI)
            followups=True,  # `ringleader say` and the run page's message box reach them
            checkpoints=True,  # follow-ups of runs in ringleader's workspaces (comments sent)
            quota=QuotaBook.in_state_dir(state),
            accounts=accounts or {},
        )
        async with LocalHost(runner) as local:
            hosted = BoardHost(
                local,
                tuple(registry.ids()),
                approvals=ApprovalBook.in_state_dir(state),
                task_defaults={"cwd": os.getcwd(), "agent_id": "board"},
                followups=FollowupBook.in_state_dir(state),
                titles=titles,
            )
            access = token or access_token(state)  # loopback is no trust boundary
            app = board_app(
                feed, log, token=access, hosted=hosted, quota=QuotaBook.in_state_dir(state)
            )
            # /mcp: ringleader's tools for an agent, over the same host, log and token (imported
            # here: `run`, which imports this module for --board, does not need the MCP SDK)
            from orchestrator.mcp.server import Orchestration, mcp_http_route

            orch = Orchestration(
                local, log, registry, ApprovalBook.in_state_dir(state), cwd=os.getcwd()
            )
            mcp_route, mcp_sessions = mcp_http_route(orch, token=access, host=host)
            app.router.routes.append(mcp_route)
            async with (
                mcp_sessions,
                serve_feed(feed, log, host=host, port=port, token=access, app=app) as served,
                trio.open_nursery() as nursery,
            ):
                nursery.start_soon(tail_log, log, relay)
                with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    shown = None if token else access  # a configured token is never printed
                    out.write(serve_banner(served.url, token=shown) + "\n")
                    out.flush()
                    if schedules:
                        nursery.start_soon(_run_schedules, schedules, local, state, out)
                    async for _ in signals:
                        break
                    await _abort_hosted(local, signals)
                nursery.cancel_scope.cancel()
    return 130


async def _run_schedules(
    schedules: Sequence[ScheduleConfig], local: LocalHost, state: Path, out: TextIO
) -> None:
    """The ``[[schedule]]`` tasks, fired on this server's host; missed and skipped firings are
    reported on ``out``."""

    def notify(line: str) -> None:
        out.write(f"ringleader: {line}\n")
        out.flush()

    for schedule in schedules:
        notify(f"schedule {schedule.id}: {describe_cron(schedule)} ({schedule.timezone})")
    scheduler = Scheduler(
        schedules,
        host_firing(local.submit, state_dir=state, base_dir=Path.cwd()),
        book=ScheduleBook.in_state_dir(state),
        notify=notify,
    )
    await scheduler.run()


async def _abort_hosted(
    local: LocalHost, signals: AsyncIterator[int], grace_s: float = STOP_GRACE_S
) -> None:
    """Ctrl-C: abort the runs this process hosts and wait (up to ``grace_s``, or a second
    signal) for each to end as ``aborted`` in the log, rather than be cut off mid-run."""
    live = [ref for ref in local.tasks if not ref.finished]
    for ref in live:
        ref.abort()
    with trio.move_on_after(grace_s):
        async with trio.open_nursery() as nursery:

            async def second_signal() -> None:
                async for _ in signals:
                    nursery.cancel_scope.cancel()

            async def all_done() -> None:
                for ref in live:
                    with contextlib.suppress(Exception):
                        await ref.outcome()
                nursery.cancel_scope.cancel()

            nursery.start_soon(second_signal)
            nursery.start_soon(all_done)


@asynccontextmanager
async def board_for_run(
    log: EventLog,
    local: LocalHost,
    notice: Callable[[str], None],
    *,
    approvals: ApprovalBook | None = None,
) -> AsyncGenerator[BoardHost]:
    """``run --board``: the board on 127.0.0.1 (a free port) over this process's runs while
    they run (with ``approvals``: their pending approvals too); gives its URL to ``notice``."""
    feed = Feed()
    feed.attach(log)
    hosted = BoardHost(
        local,
        (),
        approvals=approvals,
        followups=FollowupBook.in_state_dir(local.runner.state_dir),
    )
    token = access_token(log.path.parent)
    app = board_app(feed, log, token=token, hosted=hosted)
    async with serve_feed(feed, log, host="127.0.0.1", port=0, token=token, app=app) as served:
        notice(f"ringleader: board at {served.url}/#token={token} (open while the runs run)")
        try:
            yield hosted
        finally:
            feed.close()
            log.remove_listener(feed)
