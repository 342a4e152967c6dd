"""The board: a web page over the feed, with actions on the runs this process hosts.

:func:`board_app` serves, next to the feed's routes (``/events``, ``/runs``, ``/runs/KEY``):

* ``GET /`` — the board (a column per state, a card per run), ``GET /run/KEY`` — one run's page;
* ``GET /usage`` — the quota meters per runtime and account (:mod:`orchestrator.core.quota`);
  static files from ``orchestrator/board/static`` (plain JavaScript modules, no build step);
* ``GET /board`` — the board as JSON (:mod:`orchestrator.board.projection`'s projection of the
  log, kept by the server and brought up to date from its cursor on each request, plus the
  cursor to follow the feed from), ``GET /approvals`` — pending approval requests;
* ``POST /tasks`` (``{"prompt", "runtime", "model"}``), ``POST /abort`` (``{"run"}``),
  ``POST /steer`` (``{"run", "text"}``), ``POST /approve`` (``{"id", "allow", "scope"?, "message"?,
  "input"?}``: an :class:`~orchestrator.core.approvals.ApprovalBook` entry, decided as ``ringleader
  approve`` decides it), ``POST /say`` (``{"run", "text"}``: a follow-up, as ``ringleader say``),
  ``POST /followup`` (``{"id", "text"}`` edits a queued one, ``{"id", "withdraw": true}``
  withdraws it), ``POST /grants/revoke`` (``{"scope", "tool", "runtime", "cwd"?, "run"?}``: one
  standing grant of the approval book goes) — only when the process hosts runs
  (:class:`BoardHost`), else 503; ``GET /grants`` (``?run=KEY``) lists the standing grants;
  ``GET /followups?run=KEY`` lists the queued follow-ups of the run's session;
* review comments (:mod:`orchestrator.engine.reviewloop.comments`): ``GET /runs/KEY/comments``,
  ``POST /runs/KEY/comments`` (``{"file", "start", "end"?, "text"}``), ``POST
  /runs/KEY/comments/withdraw`` (``{"id"}``: drops one not sent yet) and ``POST
  /runs/KEY/comments/send`` (``{}``: steered into the run when this process hosts it live on a
  steerable runtime, else a resumed turn hosted here; 503 when the process hosts no runs).

Security (docs/architecture.md, Security): every read and every action needs the token — on
loopback too, where another local user can connect (the Jupyter model: ``serve`` prints
``http://127.0.0.1:PORT/#token=…`` once; the page keeps the token in ``sessionStorage`` and sends
it with every request). The pages themselves (``GET /``, ``GET /run/KEY``, ``/static``) hold no
secret and no run data, so they are served to anyone; the token is never written into them.
Requests send ``Authorization: Bearer <token>`` — a header, never a cookie, so another site's
page cannot make the browser send it (CSRF); only ``GET /events`` also takes ``?token=`` (for
``EventSource``). Every POST also needs a JSON body and is refused if its ``Origin`` is not this
server. Run text reaches the page only as JSON and is inserted with ``textContent``: never as
markup.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

import attrs
import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from orchestrator.board.cards import card_of, load_cards
from orchestrator.board.projection import Board, Card, card_to_cache
from orchestrator.core.approvals import ApprovalBook, ApprovalDecision
from orchestrator.core.errors import (
    CapabilityError,
    ConfigError,
    MailboxClosedError,
    RingleaderError,
)
from orchestrator.core.events import now_ms
from orchestrator.core.quota import DEFAULT_ACCOUNT, QuotaBook, usage_report
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.feed import Feed, FeedAuth, feed_routes, refused, run_json
from orchestrator.engine.followups import FollowupBook, joined
from orchestrator.engine.hosts import LocalHost, TaskRef
from orchestrator.engine.review.compare import compare_runs
from orchestrator.engine.review.diff import workspace_diff
from orchestrator.engine.review.inplace import record_in_place
from orchestrator.engine.review.land import ApplyOptions, apply_and_record
from orchestrator.engine.review.records import (
    checkout_of,
    resolve_group,
    resolve_run,
    workspace_dir,
)
from orchestrator.engine.reviewloop.comments import (
    CommentBook,
    comment_range,
    commented_lines,
    follow_up_prompt,
    resolve_commented_run,
)
from orchestrator.engine.runner import TaskSpec, resumable_task

__all__ = ["BoardHost", "board_app"]

MAX_BODY_BYTES = 256 * 1024
"""The largest POST body the board accepts (a prompt or a steer)."""


@attrs.define(eq=False)
class BoardHost:
    """The runs this process hosts, for the board's actions: tasks go to ``host``.

    ``runtimes`` lists the runtime ids ``POST /tasks`` accepts; ``task_defaults`` fill the
    :class:`~orchestrator.engine.runner.TaskSpec` of a posted task (``cwd``, ``agent_id`` …)."""

    host: LocalHost
    runtimes: tuple[str, ...]
    approvals: ApprovalBook | None = None
    """The approval book the hosted runs wait in (their runner's ``approvals``); the board
    lists its pending entries, runs of other processes' included, and decides them."""
    task_defaults: Mapping[str, Any] = attrs.field(factory=dict[str, Any])
    followups: FollowupBook | None = None
    """Where ``POST /say`` queues a message (the hosted runner delivers it: ``followups``)."""
    titles: dict[str, str] = attrs.field(factory=dict[str, str])
    """Base run key (``runtime:ID:task:TASK``) → the task's title, for cards of live runs."""

    def check(self, runtime_id: str) -> None:
        if runtime_id not in self.runtimes:
            raise ConfigError(
                f"unknown runtime {runtime_id!r}; this board runs: {', '.join(self.runtimes)}"
            )

    def submit(
        self, prompt: str, runtime_id: str, model: str | None, task_id: str | None = None
    ) -> TaskRef:
        self.check(runtime_id)
        task_id = task_id or new_board_task_id()
        task = TaskSpec(
            task_id=task_id, title=prompt, model=model or None, **dict(self.task_defaults)
        )
        ref = self.host.submit(runtime_id, task)
        self.titles[base_key(runtime_id, task_id)] = task.title  # valid Unicode (TaskSpec)
        return ref

    def find(self, run_key: str) -> TaskRef | None:
        """The hosted task whose current run is ``run_key`` (or one of its earlier runs)."""
        for ref in self.host.tasks:
            if ref.actor is not None and ref.actor.run_key == run_key:
                return ref
        for ref in self.host.tasks:
            if run_key.startswith(base_key(ref.runtime_id, ref.task.task_id) + ":"):
                return ref
        return None

    def title(self, run_key: str) -> str | None:
        """The title of the hosted task ``run_key`` belongs to."""
        for base, title in self.titles.items():
            if run_key.startswith(base + ":"):
                return title
        ref = self.find(run_key)
        return ref.task.title if ref is not None else None


def new_board_task_id() -> str:
    return f"board-{secrets.token_hex(4)}"


def base_key(runtime_id: str, task_id: str) -> str:
    """The run-key prefix of every run of ``task_id`` on ``runtime_id`` (the runner's)."""
    return f"runtime:{runtime_id}:task:{task_id}"


def _static_dir() -> str:
    return str(importlib.resources.files("orchestrator.board") / "static")


RUN_TAIL = 2000
"""The events a run page starts with (its last ones; the earlier ones on request)."""
RUN_TAIL_MAX = 10_000


def _page(name: str, hosting: bool) -> str:
    text = (importlib.resources.files("orchestrator.board") / "static" / name).read_text("utf-8")
    meta = f'<meta name="ringleader-hosting" content="{"yes" if hosting else "no"}">'
    return text.replace("<!--ringleader-meta-->", meta, 1)


async def read_board(log: EventLog, page: int = 5000, board: Board | None = None) -> Board:
    """:mod:`orchestrator.board.projection`'s projection of the log (every run, queued ones
    too). With ``board``: brought up to date from its cursor — only the events appended since
    are read and applied (the board's own projection is incremental). A new board starts from
    the cards the log keeps (:func:`~orchestrator.board.cards.load_cards`), so it reads only the
    events no card covers. The cards of the runs that ended since are kept in the log too (a
    board served while runs end: the next one reads none of their events)."""
    board = board if board is not None else Board()
    fresh = board.cursor == 0 and not board.cards
    for row in await log.runs():
        if row.run_key not in board.cards:
            board.add_run(row.run_key)
    if fresh:
        await load_cards(log, board, page)
    ended: set[str] = set()
    while True:
        batch = await log.read_since(board.cursor, limit=page)
        if not batch:
            break
        going = {item.run_key for item in batch if not board.add_run(item.run_key).terminal}
        board.apply_all(batch)
        ended |= {key for key in going if board.cards[key].terminal}
    if ended:  # each covers its run's events up to the cursor
        await log.save_run_cards(
            [(key, board.cursor, card_to_cache(board.cards[key])) for key in sorted(ended)]
        )
    return board


def board_app(
    feed: Feed,
    log: EventLog,
    *,
    token: str,
    hosted: BoardHost | None = None,
    keepalive_s: float = 15.0,
    quota: QuotaBook | None = None,
) -> Starlette:
    """The board (see the module docstring). ``token``: what every request must carry
    (:func:`~orchestrator.engine.feed.new_token` when none is configured). ``hosted``: the runs
    this process hosts (actions and ``POST /tasks``); without it the board is read-only."""
    auth = FeedAuth(token)

    def may_act(request: Request) -> Response | None:
        if not auth.reads(request):
            return refused()
        origin = request.headers.get("origin")
        host = request.headers.get("host", "")
        if origin is not None and origin.split("://", 1)[-1] != host:
            return JSONResponse({"error": "cross-origin request refused"}, status_code=403)
        return None

    async def body(request: Request) -> dict[str, Any] | Response:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "send JSON (Content-Type: application/json)"}, 415)
        too_big = JSONResponse({"error": f"body over {MAX_BODY_BYTES} bytes"}, 413)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return too_big  # said up front: not a byte is read
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():  # the limit holds while reading, not after
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                return too_big
            chunks.append(chunk)
        try:
            data = json.loads(b"".join(chunks))
        except ValueError:
            return JSONResponse({"error": "the body is not JSON"}, 400)
        except RecursionError:
            return JSONResponse({"error": "the body is nested too deeply"}, 400)
        if not isinstance(data, dict):
            return JSONResponse({"error": "the body must be a JSON object"}, 400)
        return dict[str, Any](data)  # pyright: ignore[reportUnknownArgumentType]

    def action(
        fn: Callable[[dict[str, Any], BoardHost], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            denied = may_act(request)
            if denied is not None:
                return denied
            if hosted is None:
                return JSONResponse(
                    {"error": "this server hosts no runs (start them with `ringleader serve`)"},
                    503,
                )
            data = await body(request)
            if isinstance(data, Response):
                return data
            try:
                return await fn(data, hosted)
            except RingleaderError as exc:
                return JSONResponse({"error": " ".join(str(exc).split())}, 409)

        return endpoint

    def text_field(data: Mapping[str, Any], name: str) -> str:
        value = data.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{name!r} must be a non-empty string")
        return value

    async def tasks(data: dict[str, Any], h: BoardHost) -> Response:
        prompt, runtime = text_field(data, "prompt"), text_field(data, "runtime")
        model = data.get("model")
        if model is not None and not isinstance(model, str):
            raise ConfigError("'model' must be a string")
        h.check(runtime)
        task_id = new_board_task_id()
        cwd = h.task_defaults.get("cwd")
        if isinstance(cwd, str):  # a run in a checkout: where it started, for its diff
            with contextlib.suppress(RingleaderError):
                await record_in_place(
                    log,
                    cwd=cwd,
                    task_id=task_id,
                    runtime_id=runtime,
                    label=runtime,
                    group_id=task_id,
                )
        ref = h.submit(prompt, runtime, model, task_id)
        key = base_key(ref.runtime_id, ref.task.task_id)
        return JSONResponse({"taskId": ref.task.task_id, "runKeyPrefix": key}, 201)

    def live_ref(data: Mapping[str, Any], h: BoardHost) -> TaskRef:
        run = text_field(data, "run")
        ref = h.find(run)
        if ref is None:
            raise MailboxClosedError(
                f"run {run!r} is not hosted by this server (only its own runs can be acted on)",
                actor_id=run,
            )
        if ref.finished:
            raise MailboxClosedError(f"run {run!r} has finished", actor_id=run)
        return ref

    async def abort(data: dict[str, Any], h: BoardHost) -> Response:
        ref = live_ref(data, h)
        ref.abort()
        await trio.lowlevel.checkpoint()
        return JSONResponse({"ok": True, "run": data["run"]}, 202)

    async def steer(data: dict[str, Any], h: BoardHost) -> Response:
        ref = live_ref(data, h)
        text = text_field(data, "text")
        try:
            ref.steer(text)
        except CapabilityError as exc:
            return JSONResponse({"error": " ".join(str(exc).split())}, 422)
        await trio.lowlevel.checkpoint()
        return JSONResponse({"ok": True, "run": data["run"]}, 202)

    async def approve(data: dict[str, Any], h: BoardHost) -> Response:
        approval_id = text_field(data, "id")
        allow = data.get("allow")
        if not isinstance(allow, bool):
            raise ConfigError("'allow' must be true or false")
        message, edited = data.get("message"), data.get("input")
        if message is not None and not isinstance(message, str):
            raise ConfigError("'message' must be a string")
        if edited is not None and not isinstance(edited, dict):
            raise ConfigError("'input' must be a JSON object")
        scope = data.get("scope", "once")
        if scope not in ("once", "run", "always"):
            raise ConfigError("'scope' must be 'once', 'run' or 'always'")
        if scope != "once" and (not allow or edited is not None):
            raise ConfigError("'scope' beyond 'once' goes with a plain allow")
        if h.approvals is None:
            return JSONResponse({"error": "this board's runs do not wait for approvals"}, 404)
        decision = ApprovalDecision(
            allow,
            reject_message=None if allow else message or None,
            input=cast(dict[str, Any], edited) if allow and edited is not None else None,
            scope=scope,
        )
        try:
            await h.approvals.decide(approval_id, decision)
        except ConfigError as exc:
            return JSONResponse({"error": str(exc)}, 404)
        return JSONResponse({"ok": True, "id": approval_id, "allow": allow}, 202)

    async def say(data: dict[str, Any], h: BoardHost) -> Response:
        """Queue a follow-up for the run's session: the hosting runner steers it in (steerable
        runtimes) or makes it the next turn; a run that is over resumes here with it."""
        run, text = text_field(data, "run"), text_field(data, "text")
        if h.followups is None:
            return JSONResponse({"error": "this board's runs take no follow-ups"}, 404)
        rows = await log.runs()
        named = next((r for r in rows if r.run_key == run), None)
        if named is None:
            return JSONResponse({"error": f"no run {run!r}"}, 404)
        latest = [r for r in rows if r.session_key == named.session_key][-1]
        queued = await h.followups.queue(named.session_key, named.run_key, text)
        if latest.status == "running":
            return JSONResponse({"ok": True, "id": queued.id, "delivery": "queued"}, 202)
        messages = await h.followups.take(named.session_key, "turn")
        try:
            runtime_id, task = await resumable_task(
                log, latest.run_key, joined(messages), agent_id="board"
            )
            if runtime_id not in h.runtimes:
                raise ConfigError(f"this board does not run {runtime_id!r}")
        except ConfigError:
            await h.followups.requeue(messages)
            raise
        ref = h.host.submit(runtime_id, task)
        key = base_key(ref.runtime_id, ref.task.task_id)
        return JSONResponse(
            {"ok": True, "id": queued.id, "delivery": "turn", "runKeyPrefix": key}, 202
        )

    async def followup(data: dict[str, Any], h: BoardHost) -> Response:
        """Edit (``text``) or withdraw (``withdraw: true``) a queued follow-up."""
        followup_id = text_field(data, "id")
        if h.followups is None:
            return JSONResponse({"error": "this board's runs take no follow-ups"}, 404)
        if data.get("withdraw") is True:
            changed = await h.followups.withdraw(followup_id)
        else:
            changed = await h.followups.edit(followup_id, text_field(data, "text"))
        return JSONResponse({"ok": True, **changed.to_json()}, 202)

    async def followups(request: Request) -> Response:
        """The queued follow-ups of the run's session (``?run=KEY``)."""
        if not auth.reads(request):
            return refused()
        if hosted is None or hosted.followups is None:
            return JSONResponse([])
        key = request.query_params.get("run", "")
        named = next((r for r in await log.runs() if r.run_key == key), None)
        if named is None:
            return JSONResponse([])
        queued = await hosted.followups.list(named.session_key)
        return JSONResponse([m.to_json() for m in queued])

    async def pending_approvals() -> list[dict[str, Any]]:
        if hosted is None or hosted.approvals is None:
            await trio.lowlevel.checkpoint()
            return []
        return [entry.to_json() for entry in await hosted.approvals.pending()]

    async def grants(request: Request) -> Response:
        """``GET /grants`` (``?run=KEY``: those that apply to the run): the standing grants of
        the approval book (``ringleader approvals`` lists them too), oldest first."""
        if not auth.reads(request):
            return refused()
        if hosted is None or hosted.approvals is None:
            await trio.lowlevel.checkpoint()
            return JSONResponse([])
        listed = await hosted.approvals.grants()
        key = request.query_params.get("run")
        if key is not None:
            row = next((r for r in await log.runs() if r.run_key == key), None)
            listed = [
                g
                for g in listed
                if row is not None
                and g.runtime_id == row.runtime_id
                and (g.scope == "always" or g.session_key == row.session_key)
            ]
        return JSONResponse([g.to_json() | {"describe": g.describe()} for g in listed])

    async def revoke(data: dict[str, Any], h: BoardHost) -> Response:
        """``POST /grants/revoke`` ``{"scope", "tool", "runtime", "cwd"?, "run"?}`` (a grant as
        ``GET /grants`` lists it): that one grant goes; the tool asks again."""
        scope, tool, runtime = (text_field(data, n) for n in ("scope", "tool", "runtime"))
        if scope not in ("run", "always"):
            raise ConfigError("'scope' must be 'run' or 'always'")
        where = {n: data.get(n) or "" for n in ("cwd", "run")}
        if not all(isinstance(v, str) for v in where.values()):
            raise ConfigError("'cwd' and 'run' must be strings")
        if h.approvals is None:
            return JSONResponse({"error": "this board's runs do not wait for approvals"}, 404)
        gone = await h.approvals.revoke_grant(
            "run" if scope == "run" else "always", tool, runtime, where["cwd"], where["run"]
        )
        if not gone:
            return JSONResponse({"error": "no such grant (revoked already?)"}, 404)
        return JSONResponse({"ok": True, "scope": scope, "tool": tool}, 200)

    projection = Board()  # kept and brought up to date per request: never re-projected
    projecting = trio.Lock()

    async def board(request: Request) -> Response:
        if not auth.reads(request):
            return refused()
        async with projecting:
            snapshot = await read_board(log, board=projection)
        rows = {r.run_key: r for r in await log.runs()}
        cards: list[dict[str, Any]] = []
        for card in snapshot.cards.values():
            row = rows.get(card.run_key)
            title = hosted.title(card.run_key) if hosted is not None else None
            if title is None and row is not None and row.outcome:
                title = row.outcome.get("title")
            cards.append(
                card.to_json()
                | {
                    "runtimeId": row.runtime_id if row is not None else None,
                    "title": title,
                    "resumedFrom": (row.outcome or {}).get("resumedFrom") if row else None,
                    **_chain_fields(row.outcome if row is not None else None),
                }
            )
        pending = await pending_approvals()
        return JSONResponse(
            {
                "cursor": snapshot.cursor,
                "cards": cards,
                "approvals": pending,
                "hosting": hosted is not None,
                "runtimes": list(hosted.runtimes) if hosted else [],
            }
        )

    async def approvals(request: Request) -> Response:
        if not auth.reads(request):
            return refused()
        return JSONResponse(await pending_approvals())

    async def run_meta(request: Request) -> Response:
        """The run's row, its title, the runs of the same task (retries, rotations, resumes) and
        its refused tool calls (:meth:`~orchestrator.board.projection.Card.refusals_json`)."""
        if not auth.reads(request):
            return refused()
        key: str = request.query_params.get("run", "")
        rows = await log.runs()
        mine = next((r for r in rows if r.run_key == key), None)
        if mine is None:
            return JSONResponse({"error": "no such run"}, 404)
        task_base = key.split(":r", 1)[0].split(":a", 1)[0].split(":run-", 1)[0]
        related = [
            run_json(r)
            for r in rows
            if r.run_key != key
            and (
                r.run_key.startswith(task_base + ":")
                or (r.outcome or {}).get("resumedFrom") == key
                or (mine.outcome or {}).get("resumedFrom") == r.run_key
                or _same_chain(mine.outcome, r.outcome)
            )
        ]
        title = hosted.title(key) if hosted is not None else None
        if title is None and mine.outcome:
            title = mine.outcome.get("title")
        # the run's refused calls, from its card (the refusal fold, orchestrator/core/refusals.py):
        # the page asks when a run ends and sets them on the card it projects live
        card = await card_of(log, key, await log.last_gid())
        meta = {
            "run": run_json(mine),
            "title": title,
            "related": related,
            "refusals": card.refusals_json(),
        }
        return JSONResponse(meta | _chain_fields(mine.outcome))

    async def run_tail(request: Request) -> Response:
        """``GET /run-tail?run=KEY&limit=N``: the run page's start — the run's last ``N`` events
        (default :data:`RUN_TAIL`), its card over every event up to the last of them, how many
        came before, and the cursor to follow the run's feed from (issue 37: the page of a
        100,000-event run replayed every event, 30 s)."""
        if not auth.reads(request):
            return refused()
        key = request.query_params.get("run", "")
        try:
            limit = min(max(int(request.query_params.get("limit", RUN_TAIL)), 1), RUN_TAIL_MAX)
        except ValueError:
            return JSONResponse({"error": "limit must be a whole number"}, 400)
        tail = await log.read_tail(key, limit)
        if not tail:
            if not any(r.run_key == key for r in await log.runs()):
                return JSONResponse({"error": "no such run"}, 404)
            card, cursor = Card(key), 0
        else:
            cursor = tail[-1].gid
            card = await card_of(log, key, cursor)
        body = (
            '{"card":'
            + json.dumps(card.to_json())
            + f',"earlier":{tail[0].seq - 1 if tail else 0},"cursor":{cursor},"events":['
            + ",".join(f'{{"gid":{i.gid},"event":{i.body}}}' for i in tail)
            + "]}"
        )
        return Response(body, media_type="application/json")

    async def usage(request: Request) -> Response:
        """The quota meters (``orchestrator/core/quota.py``): per runtime and account, the
        windows last reported; the hosted runtimes without any are listed as unknown."""
        if not auth.reads(request):
            return refused()
        readings = await trio.to_thread.run_sync(quota.readings) if quota is not None else []
        runtimes: dict[str, list[str]] = {}
        for key in hosted.runtimes if hosted else ():  # ``claude-code@work``: an account
            rid, _, account = key.partition("@")
            runtimes.setdefault(rid, []).append(account or DEFAULT_ACCOUNT)
        now = now_ms()
        return JSONResponse({"now": now, "usage": usage_report(readings, runtimes, now_ms=now)})

    def html(name: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            await trio.lowlevel.checkpoint()
            return HTMLResponse(
                _page(name, hosted is not None),
                headers={
                    "cache-control": "no-store",
                    "content-security-policy": "default-src 'self'; style-src 'self'; "
                    "script-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
                    "x-content-type-options": "nosniff",
                    "referrer-policy": "no-referrer",
                },
            )

        return endpoint

    book = CommentBook.in_state_dir(log.path.parent)

    def keyed(
        fn: Callable[[str, dict[str, Any]], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        """An action on the run named in the path (the action rules: token, origin, JSON)."""

        async def endpoint(request: Request) -> Response:
            denied = may_act(request)
            if denied is not None:
                return denied
            data = await body(request)
            if isinstance(data, Response):
                return data
            try:
                return await fn(str(request.path_params["key"]), data)
            except RingleaderError as exc:
                return JSONResponse({"error": " ".join(str(exc).split())}, 409)

        return endpoint

    async def list_comments(request: Request) -> Response:
        """``GET /runs/KEY/comments``: the run's comments, oldest first."""
        if not auth.reads(request):
            return refused()
        try:
            run_key, _ = await resolve_commented_run(log, str(request.path_params["key"]))
        except ConfigError as exc:
            return JSONResponse({"error": " ".join(str(exc).split())}, 404)
        return JSONResponse([c.to_json() for c in await book.comments(run_key)])

    async def add_comment(key: str, data: dict[str, Any]) -> Response:
        """``POST /runs/KEY/comments`` ``{"file", "start", "end"?, "text"}``."""
        path, text = text_field(data, "file"), text_field(data, "text")
        start, end = data.get("start"), data.get("end", data.get("start"))
        if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
            raise ConfigError("'start' (and 'end', if given) must be line numbers")
        path, start, end = comment_range(path, start, end)
        run_key, session = await resolve_commented_run(log, key)
        rel, lines = await commented_lines(session.origin_cwd or "", path, start, end)
        comment = await book.add(run_key, rel, start, end, text.strip(), lines)
        return JSONResponse(comment.to_json(), 201)

    async def withdraw_comment(key: str, data: dict[str, Any]) -> Response:
        """``POST /runs/KEY/comments/withdraw`` ``{"id"}``: drop a comment not sent yet."""
        comment_id = data.get("id")
        if not isinstance(comment_id, int) or isinstance(comment_id, bool):
            raise ConfigError("'id' must be a comment's number")
        run_key, _ = await resolve_commented_run(log, key)
        await book.withdraw(run_key, comment_id)
        return JSONResponse({"ok": True, "id": comment_id})

    async def send_comments(key: str, data: dict[str, Any]) -> Response:
        """``POST /runs/KEY/comments/send`` ``{}``: a steer into the run when this server hosts
        it live on a steerable runtime, else a resumed turn hosted here."""
        run_key, session = await resolve_commented_run(log, key)
        pending = await book.comments(run_key, pending=True)
        if not pending:
            raise ConfigError(f"no comments waiting on {run_key}")
        prompt = follow_up_prompt(pending)
        ids = [c.id for c in pending]
        ref = hosted.find(run_key) if hosted is not None else None
        actor = ref.actor if ref is not None and not ref.finished else None
        live = actor is not None and actor.run_key == run_key and not actor.finished.is_set()
        if live and ref is not None and actor is not None and actor.capabilities.steerable:
            ref.steer(prompt)
            await book.mark_sent(ids, via="steer", follow_up=run_key)
            return JSONResponse({"ok": True, "via": "steer", "run": run_key}, 202)
        if hosted is None:
            return JSONResponse(
                {
                    "error": "this server hosts no runs: send the comments with "
                    f"`ringleader comment {run_key} --send`"
                },
                503,
            )
        row = next((r for r in await log.runs() if r.run_key == run_key), None)
        if row is not None and row.status == "running":
            raise ConfigError(
                f"run {run_key!r} is still running and cannot be steered here; send the comments "
                "once it has ended"
            )
        runtime_id, task = await resumable_task(
            log, run_key, prompt, agent_id=session.agent_id or "board"
        )
        if runtime_id not in hosted.runtimes:
            raise ConfigError(f"this board does not run {runtime_id!r}")
        submitted = hosted.host.submit(runtime_id, task)
        prefix = base_key(runtime_id, submitted.task.task_id)
        hosted.titles[prefix] = prompt
        await book.mark_sent(ids, via="resume", follow_up=prefix)
        return JSONResponse(
            {
                "ok": True,
                "via": "resume",
                "taskId": submitted.task.task_id,
                "runKeyPrefix": prefix,
            },
            202,
        )

    async def run_diff(request: Request) -> Response:
        """``GET /runs/KEY/diff``: what the run changed in its workspace (``diff --json``), with
        the workspace's label, task and whether it was applied; 404 for a run that worked in no
        workspace ringleader made."""
        if not auth.reads(request):
            return refused()
        try:
            run = await resolve_run(log, str(request.path_params["key"]))
            diff = await trio.to_thread.run_sync(workspace_diff, checkout_of(run.workspace))
        except RingleaderError as exc:
            return JSONResponse({"error": " ".join(str(exc).split())}, 404)
        last = run.last
        return JSONResponse(
            {
                "run": run.key,
                "label": run.workspace.label,
                "task": run.workspace.group_id,
                "workspace": workspace_dir(run.workspace),
                "kind": run.workspace.kind,
                "status": last.status if last is not None else None,
                "applied": run.workspace.applied,
                **diff.to_json(),
            }
        )

    async def task_compare(request: Request) -> Response:
        """``GET /compare-data/TASK``: the runs of one side-by-side task next to each other
        (``ringleader compare --json``, each run with its key); 404 for an unknown task."""
        if not auth.reads(request):
            return refused()
        try:
            runs = await resolve_group(log, str(request.path_params["task"]))
            group = runs[0].workspace.group_id
            comparison = await trio.to_thread.run_sync(compare_runs, group, runs)
        except RingleaderError as exc:
            return JSONResponse({"error": " ".join(str(exc).split())}, 404)
        return JSONResponse(comparison.to_json())

    async def apply(key: str, data: dict[str, Any]) -> Response:
        """``POST /runs/KEY/apply`` ``{"onto"?, "mode"?: "squash"|"merge", "message"?, "push"?,
        "pr"?}``: ``ringleader apply`` (refusals are 409 with the one line)."""
        strings = {name: data.get(name) for name in ("onto", "message", "push")}
        for name, value in strings.items():
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(f"{name!r} must be a non-empty string")
        mode, pr = data.get("mode", "squash"), data.get("pr", False)
        if mode not in ("squash", "merge"):
            raise ConfigError("'mode' must be squash or merge")
        if not isinstance(pr, bool):
            raise ConfigError("'pr' must be true or false")
        run = await resolve_run(log, key)
        opts = ApplyOptions(
            onto=cast(str | None, strings["onto"]),
            mode="merge" if mode == "merge" else "squash",
            message=cast(str | None, strings["message"]),
            push=cast(str | None, strings["push"]),
            pr=pr,
        )
        result = await apply_and_record(log, run, opts)
        return JSONResponse({"ok": True, "run": run.key, **result.to_json()})

    routes: list[Route | Mount] = [
        Route("/", html("index.html")),
        Route("/run/{key:path}", html("run.html")),
        Route("/compare/{task:path}", html("compare.html")),
        Route("/compare-data/{task:path}", task_compare),
        Route("/board", board),
        Route("/approvals", approvals),
        Route("/run-meta", run_meta),
        Route("/run-tail", run_tail),
        Route("/usage", usage),
        Route("/tasks", action(tasks), methods=["POST"]),
        Route("/abort", action(abort), methods=["POST"]),
        Route("/steer", action(steer), methods=["POST"]),
        Route("/approve", action(approve), methods=["POST"]),
        Route("/grants", grants),
        Route("/grants/revoke", action(revoke), methods=["POST"]),
        Route("/say", action(say), methods=["POST"]),
        Route("/followup", action(followup), methods=["POST"]),
        Route("/followups", followups),
        Route("/runs/{key:path}/comments/send", keyed(send_comments), methods=["POST"]),
        Route("/runs/{key:path}/comments/withdraw", keyed(withdraw_comment), methods=["POST"]),
        Route("/runs/{key:path}/comments", keyed(add_comment), methods=["POST"]),
        Route("/runs/{key:path}/comments", list_comments, methods=["GET"]),
        Route("/runs/{key:path}/diff", run_diff, methods=["GET"]),
        Route("/runs/{key:path}/apply", keyed(apply), methods=["POST"]),
        *feed_routes(feed, log, auth, keepalive_s=keepalive_s),
        Mount("/static", StaticFiles(directory=_static_dir()), name="static"),
    ]
    return Starlette(routes=routes)


def _chain_fields(outcome: dict[str, Any] | None) -> dict[str, Any]:
    """A chained run's ``chain``, ``chainTask`` and ``dependsOn`` (see ``engine/chains.py``)."""
    found = outcome or {}
    return {k: found[k] for k in ("chain", "chainTask", "dependsOn") if k in found}


def _same_chain(mine: dict[str, Any] | None, other: dict[str, Any] | None) -> bool:
    chain = (mine or {}).get("chain")
    return chain is not None and (other or {}).get("chain") == chain
