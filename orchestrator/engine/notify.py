"""Notifications: tell a person when a run needs them, through Apprise (``[notify]`` in
``ringleader.toml``, :class:`~orchestrator.core.config.NotifyConfig`).

:class:`Notifier` is an event sink (beside the event log): it follows each run's state and sends
one notification per run per change of state, for the states configured in ``events``:

* ``waiting_approval`` — a tool call waits for a person (``status{waiting_approval}``); a run
  that goes on and asks again is a new change;
* ``rate_limited`` — the run is parked on a rate limit, with the reset time when the runtime
  said it (``status{rate_limited}``);
* ``error`` — the run ended in error (``done{error}``), with the error's code;
* ``done`` — the run ended successfully (``done{success}``).

The payload names the run, its runtime, the task's title, the reason and the board link; never a
secret (URLs name keys only by environment variable, replaced when sending; the text is
redacted) and never tool output or model text. Sending is Apprise's blocking ``notify`` in a
worker thread (``trio.to_thread``), one at a time, off the run's path: a slow or failing
notifier is logged and never delays or fails a run.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Final, Self
from urllib.parse import quote

import attrs
import trio

from orchestrator.core.config import NotifyConfig, NotifyEvent
from orchestrator.core.events import Done, ErrorEvent, RuntimeEvent, Status
from orchestrator.core.redact import redact_text

__all__ = ["Notice", "Notifier", "send_apprise"]

_log = logging.getLogger(__name__)

_HEADLINES: Final[Mapping[NotifyEvent, str]] = {
    "waiting_approval": "needs your approval",
    "rate_limited": "is parked on a rate limit",
    "error": "ended in error",
    "done": "is done",
}


@attrs.frozen
class Notice:
    """One notification: what a person needs to know, and nothing more."""

    event: NotifyEvent
    run_key: str
    runtime: str
    title: str
    reason: str
    link: str

    @property
    def headline(self) -> str:
        return f"ringleader: {self.runtime} run {_HEADLINES[self.event]}"

    def body(self) -> str:
        return redact_text(
            f"run: {self.run_key}\nruntime: {self.runtime}\ntitle: {self.title}\n"
            f"reason: {self.reason}\nboard: {self.link}"
        )


Send = Callable[[list[str], Notice], bool]
"""Sends one notice to the URLs (blocking: run in a worker thread); False when it failed."""


def send_apprise(urls: list[str], notice: Notice) -> bool:
    """Send ``notice`` to every URL through Apprise; False if any failed (Apprise logs why)."""
    import apprise

    sender = apprise.Apprise()
    for url in urls:
        sender.add(url)  # pyright: ignore[reportUnknownMemberType]
    sent = sender.notify(body=notice.body(), title=notice.headline)  # pyright: ignore[reportUnknownMemberType]
    return bool(sent)


_RUN_KEY = re.compile(r"runtime:(?P<runtime>.+?):task:(?P<task>[^:]*)")
"""``runtime:ID:task:TASK…`` (an id may hold a colon itself: ``acp:claude``)."""


def _runtime_of(run_key: str) -> str:
    """``runtime:ID:task:…`` → ``ID`` (else the key's first part)."""
    found = _RUN_KEY.match(run_key)
    return found["runtime"] if found else run_key.split(":")[0]


def _base_key(run_key: str) -> str:
    found = _RUN_KEY.match(run_key)
    return found[0] if found else ":".join(run_key.split(":")[:4])


@attrs.define(eq=False)
class Notifier:
    """An event sink that notifies (see the module docstring), while :meth:`running`."""

    config: NotifyConfig
    titles: dict[str, str] = attrs.field(factory=dict[str, str])
    """Task titles by base run key (``runtime:ID:task:TASK``)."""
    default_title: str = ""
    """The title of a run not in :attr:`titles` (``ringleader run``: the prompt)."""
    send: Send = send_apprise
    environ: Mapping[str, str] | None = None
    drain_s: float = 10.0
    sent: list[Notice] = attrs.field(factory=list[Notice])
    """Every notice handed to the notifier, in order (sent or failed)."""
    failures: int = 0
    _state: dict[str, str] = attrs.field(factory=dict[str, str])
    _errors: dict[str, str] = attrs.field(factory=dict[str, str])
    _queue: tuple[trio.MemorySendChannel[Notice], trio.MemoryReceiveChannel[Notice]] = attrs.field(
        factory=lambda: trio.open_memory_channel[Notice](math.inf)
    )
    _done: trio.Event = attrs.field(factory=trio.Event)

    def title_of(self, run_key: str) -> str:
        return _short(self.titles.get(_base_key(run_key), self.default_title))

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        for event in events:
            notice = self._change(run_key, event)
            if notice is not None:
                self._queue[0].send_nowait(notice)
        await trio.lowlevel.checkpoint()

    def _change(self, run_key: str, event: RuntimeEvent) -> Notice | None:
        """The notice ``event`` calls for (a change of the run's state), if any."""
        kind: NotifyEvent | None = None
        reason = ""
        if isinstance(event, Status):
            state = event.phase
            if event.phase == "waiting_approval":
                kind = "waiting_approval"
                call = event.approval
                reason = f"{call.name} ({call.id})" if call is not None else "a tool call"
            elif event.phase == "rate_limited":
                kind = "rate_limited"
                reason = _reset(event.resets_at)
        elif isinstance(event, ErrorEvent):
            if event.fatal:
                self._errors[run_key] = event.code or "error"
            return None
        elif isinstance(event, Done):
            state = f"done:{event.reason}"
            if event.reason == "error":
                kind = "error"
                reason = self._errors.pop(run_key, "error")
            elif event.reason == "success":
                kind, reason = "done", "success"
        else:
            return None
        previous = self._state.get(run_key)
        self._state[run_key] = state
        if kind is None or previous == state or kind not in self.config.events:
            return None
        link = f"{self.config.board_url.rstrip('/')}/run/{quote(run_key, safe=':')}"
        return Notice(kind, run_key, _runtime_of(run_key), self.title_of(run_key), reason, link)

    async def _work(self) -> None:
        urls = self.config.resolved_urls(self.environ)
        async for notice in self._queue[1]:
            self.sent.append(notice)
            if not urls:
                continue
            try:
                ok = await trio.to_thread.run_sync(self.send, urls, notice, abandon_on_cancel=True)
            except Exception as exc:  # a notifier never fails a run
                ok = False
                _log.warning("notification failed: %s: %s", type(exc).__name__, exc)
            if not ok:
                self.failures += 1
                _log.warning("notification for %s (%s) not delivered", notice.run_key, notice.event)
        self._done.set()

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[Self]:
        """The notifier with its sender running; on exit what is queued is sent (for at most
        ``drain_s`` seconds), then the sender stops."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._work)
            try:
                yield self
            finally:
                self._queue[0].close()
                with trio.move_on_after(self.drain_s) as scope:
                    await self._done.wait()
                if scope.cancelled_caught:
                    nursery.cancel_scope.cancel()


def _short(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _reset(resets_at: int | None) -> str:
    if resets_at is None:
        return "until the runtime's limit resets (time not given)"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(resets_at / 1000))
    return f"until {stamp}"
