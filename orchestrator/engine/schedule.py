"""Scheduled tasks: ``[[schedule]]`` entries (``orchestrator.core.config.ScheduleConfig``) that
``ringleader serve`` runs on their cron schedule.

* **When.** Each entry's five-field cron expression is read in its time zone by ``cronsim``
  (strict parsing, cron's own day-of-month/day-of-week rule, daylight-saving changes as cron
  has them); :func:`next_firing` is the first firing strictly after a moment.
* **Missed firings.** The :class:`ScheduleBook` (``<state dir>/schedules.json``) remembers, per
  schedule, until when the server watched it (``watchedUntil``). At start-up every firing
  between then and now was missed while the server was down: each is reported (a line to the
  server's output and the book's ``missed``), and with ``catch_up = true`` the task runs once
  now — once, however many were missed. A schedule seen for the first time has missed nothing.
* **No overlap.** A firing that comes while the previous firing of the same schedule still runs
  is skipped and reported (``skipped: the firing of … still runs``), unless ``overlap = true``.
* **Results.** Each firing's start, end, status, summary and run key are kept (``last``), and
  ``ringleader schedules`` lists them with the next firings.

Time is a wall clock (``now``: an aware :class:`datetime.datetime`) slept on with
:func:`trio.sleep`; tests give a clock that follows trio's (``autojump_clock``), so a day of
firings takes no time.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import uuid
from collections.abc import Awaitable, Callable, Generator, Sequence
from pathlib import Path
from typing import Any, Final, cast
from zoneinfo import ZoneInfo

import attrs
import trio
from cronsim import CronSim

from orchestrator.core.config import ScheduleConfig
from orchestrator.core.jsonfile import locked, read_section, write_section
from orchestrator.engine.hosts.local import TaskRef
from orchestrator.engine.runner import TaskSpec
from orchestrator.engine.workspaces import create_workspace

__all__ = [
    "SCHEDULES_FILE",
    "FiringResult",
    "ScheduleBook",
    "Scheduler",
    "describe_cron",
    "host_firing",
    "next_firing",
    "next_firings",
    "wall_clock",
]

SCHEDULES_FILE: Final = "schedules.json"
_SCHEMA: Final = 1
_KEEP_MISSED: Final = 20


def wall_clock() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def next_firing(schedule: ScheduleConfig, after: _dt.datetime) -> _dt.datetime:
    """The first firing of ``schedule`` strictly after ``after`` (aware, in its time zone)."""
    zone = ZoneInfo(schedule.timezone)
    return next(CronSim(schedule.cron, after.astimezone(zone)))


def next_firings(schedule: ScheduleConfig, after: _dt.datetime, count: int) -> list[_dt.datetime]:
    zone = ZoneInfo(schedule.timezone)
    found: list[_dt.datetime] = []
    it = CronSim(schedule.cron, after.astimezone(zone))
    for _ in range(count):
        found.append(next(it))
    return found


def describe_cron(schedule: ScheduleConfig) -> str:
    """``At 03:00 every day`` (cronsim's reading of the expression)."""
    try:
        return CronSim(schedule.cron, _dt.datetime.now(ZoneInfo(schedule.timezone))).explain()
    except Exception:
        return schedule.cron


def _missed(
    schedule: ScheduleConfig, since: _dt.datetime, until: _dt.datetime
) -> list[_dt.datetime]:
    """Firings in ``(since, until]``."""
    found: list[_dt.datetime] = []
    moment = since
    while True:
        moment = next_firing(schedule, moment)
        if moment > until:
            return found
        found.append(moment)
        if len(found) > 10_000:  # a minute schedule down for weeks: enough to report
            return found


@attrs.frozen
class FiringResult:
    """How one firing ended (``status``: the task's ``done`` reason, or ``error`` when it
    raised, or ``skipped``)."""

    scheduled: str
    started: str | None
    ended: str | None
    status: str
    summary: str = ""
    run_key: str | None = None
    catch_up: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "scheduled": self.scheduled,
            "started": self.started,
            "ended": self.ended,
            "status": self.status,
            "summary": self.summary,
            "runKey": self.run_key,
            "catchUp": self.catch_up,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FiringResult:
        return cls(
            scheduled=str(data.get("scheduled") or ""),
            started=data.get("started"),
            ended=data.get("ended"),
            status=str(data.get("status") or "?"),
            summary=str(data.get("summary") or ""),
            run_key=data.get("runKey"),
            catch_up=bool(data.get("catchUp")),
        )


@attrs.define(eq=False)
class ScheduleBook:
    """What the scheduler remembers per schedule id, in ``path`` (JSON, replaced atomically
    under a lock; ``None``: memory only): ``watchedUntil``, ``last`` (the last finished or
    skipped firing), ``running`` (firings in progress) and ``missed`` (the latest missed
    firings, as reported)."""

    path: Path | None = None
    _data: dict[str, dict[str, Any]] = attrs.field(factory=dict[str, dict[str, Any]])

    @classmethod
    def in_state_dir(cls, state_dir: Path) -> ScheduleBook:
        return cls(state_dir / SCHEDULES_FILE)

    def entry(self, schedule_id: str) -> dict[str, Any]:
        with self._synced(write=False):
            return json.loads(json.dumps(self._data.get(schedule_id, {})))

    def watched_until(self, schedule_id: str) -> _dt.datetime | None:
        raw = self.entry(schedule_id).get("watchedUntil")
        return _dt.datetime.fromisoformat(raw) if isinstance(raw, str) else None

    def update(self, schedule_id: str, change: Callable[[dict[str, Any]], None]) -> None:
        with self._synced(write=True):
            change(self._data.setdefault(schedule_id, {}))

    @contextlib.contextmanager
    def _synced(self, *, write: bool) -> Generator[None]:
        path = self.path
        if path is None:
            yield
            return
        if not write and not path.exists():
            self._data = {}
            yield
            return
        with locked(path):
            self._data = _read(path)
            yield
            if write:
                _write(path, self._data)


def _read(path: Path) -> dict[str, dict[str, Any]]:
    entries = read_section(path, schema=_SCHEMA, section="schedules")
    if not isinstance(entries, dict):
        return {}
    return {
        str(k): cast(dict[str, Any], v)
        for k, v in cast(dict[str, object], entries).items()
        if isinstance(v, dict)
    }


def _write(path: Path, data: dict[str, dict[str, Any]]) -> None:
    write_section(path, data, schema=_SCHEMA, section="schedules", indent=1)


Fire = Callable[[ScheduleConfig, _dt.datetime], Awaitable[FiringResult]]
"""Runs one firing's task (``ringleader serve``: on its ``LocalHost``) and says how it ended."""


@attrs.define(eq=False)
class Scheduler:
    """Fires each schedule at its times (see the module docstring). ``fire`` runs a firing's
    task; ``notify`` gets one line per missed or skipped firing (the server prints them)."""

    schedules: Sequence[ScheduleConfig]
    fire: Fire
    book: ScheduleBook = attrs.field(factory=ScheduleBook)
    now: Callable[[], _dt.datetime] = wall_clock
    notify: Callable[[str], None] = lambda _line: None
    _running: dict[str, int] = attrs.field(factory=dict[str, int])

    async def run(self) -> None:
        """Watch every schedule until cancelled (a server's lifetime)."""
        async with trio.open_nursery() as nursery:
            for schedule in self.schedules:
                nursery.start_soon(self._watch, schedule, nursery)

    def _iso(self, moment: _dt.datetime) -> str:
        return moment.isoformat(timespec="seconds")

    async def _watch(self, schedule: ScheduleConfig, nursery: trio.Nursery) -> None:
        start = self.now()

        def fresh(entry: dict[str, Any]) -> None:
            entry["running"] = []  # firings of an earlier server ended with it

        self.book.update(schedule.id, fresh)
        since = self.book.watched_until(schedule.id)
        if since is not None and since < start:
            missed = _missed(schedule, since, start)
            if missed:
                self._report_missed(schedule, missed)
                if schedule.catch_up:
                    self._start(schedule, missed[-1], nursery, catch_up=True)
        self._watched(schedule, start)
        moment = start
        while True:
            due = next_firing(schedule, moment)
            await trio.sleep(max(0.0, (due - self.now()).total_seconds()))
            self._watched(schedule, due)
            self._start(schedule, due, nursery)
            moment = due

    def _watched(self, schedule: ScheduleConfig, moment: _dt.datetime) -> None:
        def change(entry: dict[str, Any]) -> None:
            entry["watchedUntil"] = self._iso(moment)

        self.book.update(schedule.id, change)

    def _report_missed(self, schedule: ScheduleConfig, missed: list[_dt.datetime]) -> None:
        first, last = missed[0], missed[-1]
        when = (
            self._iso(first)
            if len(missed) == 1
            else f"{len(missed)} firings, {self._iso(first)} … {self._iso(last)}"
        )
        then = (
            "running it once now (catch_up = true)"
            if schedule.catch_up
            else "not run (catch_up = false)"
        )
        self.notify(f"schedule {schedule.id}: missed while the server was down: {when}; {then}")

        def change(entry: dict[str, Any]) -> None:
            known: list[str] = list(entry.get("missed") or [])
            known += [self._iso(m) for m in missed]
            entry["missed"] = known[-_KEEP_MISSED:]
            entry["missedTotal"] = int(entry.get("missedTotal") or 0) + len(missed)

        self.book.update(schedule.id, change)

    def _start(
        self,
        schedule: ScheduleConfig,
        due: _dt.datetime,
        nursery: trio.Nursery,
        *,
        catch_up: bool = False,
    ) -> None:
        if self._running.get(schedule.id) and not schedule.overlap:
            reason = f"skipped: the previous firing of {schedule.id} still runs (overlap = false)"
            self.notify(f"schedule {schedule.id}: {self._iso(due)} {reason}")
            self._record(schedule.id, FiringResult(self._iso(due), None, None, "skipped", reason))
            return
        self._running[schedule.id] = self._running.get(schedule.id, 0) + 1
        nursery.start_soon(self._one, schedule, due, catch_up)

    async def _one(self, schedule: ScheduleConfig, due: _dt.datetime, catch_up: bool) -> None:
        started = self._iso(self.now())

        def running(entry: dict[str, Any]) -> None:
            entry["running"] = [*list(entry.get("running") or []), started]

        self.book.update(schedule.id, running)
        try:
            result = await self.fire(schedule, due)
        except Exception as exc:
            result = FiringResult(
                self._iso(due), started, None, "error", " ".join(str(exc).split())
            )
        finally:
            self._running[schedule.id] -= 1
        result = attrs.evolve(
            result,
            scheduled=self._iso(due),
            started=started,
            ended=self._iso(self.now()),
            catch_up=catch_up,
        )

        def done(entry: dict[str, Any]) -> None:
            still = list(entry.get("running") or [])
            if started in still:
                still.remove(started)
            entry["running"] = still

        self.book.update(schedule.id, done)
        self._record(schedule.id, result)

    def _record(self, schedule_id: str, result: FiringResult) -> None:
        def change(entry: dict[str, Any]) -> None:
            entry["last"] = result.to_json()
            entry["history"] = [*list(entry.get("history") or []), result.to_json()][-10:]
            entry["firings"] = int(entry.get("firings") or 0) + (result.status != "skipped")
            if result.status == "skipped":
                entry["skipped"] = int(entry.get("skipped") or 0) + 1

        self.book.update(schedule_id, change)


def host_firing(
    submit: Callable[[str, TaskSpec], TaskRef],
    *,
    state_dir: Path,
    base_dir: Path,
) -> Fire:
    """A :data:`Fire` that runs a firing's task through ``submit`` (a ``LocalHost``'s), in a
    workspace of its own when the entry says ``workspace = true`` (``cwd`` relative to
    ``base_dir``); its runs are recorded like any other (``agent_id`` ``schedule``, the outcome
    naming the schedule)."""

    async def fire(schedule: ScheduleConfig, due: _dt.datetime) -> FiringResult:
        origin = (base_dir / schedule.cwd).resolve()
        cwd = str(origin)
        stamp = due.strftime("%Y%m%dT%H%M")
        if schedule.workspace:
            ws = await create_workspace(origin, f"{schedule.id}-{stamp}", state_dir=state_dir)
            cwd = str(ws.path)
        task = TaskSpec(
            task_id=f"{schedule.id}-{stamp}-{uuid.uuid4().hex[:6]}",
            title=schedule.prompt,
            model=schedule.model,
            cwd=cwd,
            agent_id="schedule",
            account=schedule.account,
            fallback=schedule.fallback,
            outcome_fields={"schedule": schedule.id, "scheduledFor": due.isoformat()},
        )
        outcome = await submit(schedule.runtime, task).outcome()
        last = outcome.runs[-1].outcome if outcome.runs else None
        summary = " ".join((outcome.error_message or outcome.summary or "").split())[:300]
        return FiringResult(
            scheduled=due.isoformat(),
            started=None,
            ended=None,
            status=outcome.status,
            summary=summary,
            run_key=last.run_key if last is not None else None,
        )

    return fire
