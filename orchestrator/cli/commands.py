"""The bodies of the ``ringleader`` commands that run things side by side or read the log, and the
checks that turn operator mistakes into one clear line. ``cli.py`` parses and dispatches; the
library never imports this module."""

from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestrator.cli.batch import load_batch
from orchestrator.cli.live import PlainView, format_cost, make_view
from orchestrator.cli.options import (
    Interrupt,
    LoadedConfig,
    model_servers,
    print_retry,
    registry_for,
)
from orchestrator.cli.sidebyside import (
    BoardStarter,
    Job,
    JobResult,
    new_task_id,
    prepare_workspaces,
    run_jobs,
    teardown_workspaces,
)
from orchestrator.core.config import AccountConfig, WorkspaceConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.redact import redact_text
from orchestrator.core.registry import RuntimeRegistry, RuntimeSpec
from orchestrator.engine.accounts import check_targets, targets
from orchestrator.engine.actor import EventSink
from orchestrator.engine.eventlog import EventLog, RunRow
from orchestrator.engine.governance import Governance
from orchestrator.engine.hosts import Host, LocalHost
from orchestrator.engine.runner import ResumeFrom, Runner, TaskSpec, default_state_dir
from orchestrator.engine.supervisor import RetryListener

__all__ = [
    "batch",
    "check_prompt",
    "crash_report",
    "list_runs",
    "replay",
    "run_side_by_side",
    "serve_banner",
    "usable_state_dir",
    "write_sample_project",
]


# -- operator mistakes -------------------------------------------------------------------------


def check_prompt(prompt: str) -> str:
    """The prompt, or a :class:`ConfigError` for an empty one or one that is not valid UTF-8
    (arguments that are not UTF-8 reach Python as lone surrogates)."""
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            "the prompt is not valid UTF-8 (check the terminal's or the file's encoding)"
        ) from None
    if not prompt.strip():
        raise ConfigError("the prompt is empty: say what the agent should do")
    return prompt


def usable_state_dir(path: Path | None = None) -> Path:
    """The state directory, created (mode 0700) and checked writable, else a
    :class:`ConfigError` naming it and ``RINGLEADER_STATE_DIR``."""
    state = default_state_dir() if path is None else path
    try:
        state.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not state.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a directory")
        with tempfile.TemporaryFile(dir=state):
            pass
        info = state.stat()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"the state directory {state} is unusable ({reason}); "
            "set RINGLEADER_STATE_DIR to a writable directory"
        ) from None
    # as ssh refuses loose key files: another user could plant procs/*.json (processes the
    # next run kills) or read the log
    if info.st_uid != os.geteuid():
        raise ConfigError(
            f"the state directory {state} belongs to another user (uid {info.st_uid}); "
            "set RINGLEADER_STATE_DIR to a directory of your own"
        )
    if info.st_mode & 0o022:
        raise ConfigError(
            f"the state directory {state} is writable by other users "
            f"(mode {info.st_mode & 0o777:o}); make it private: chmod 700 {state}"
        )
    return state


def crash_report(exc: BaseException) -> str:
    """Write ``exc``'s traceback to a file in the state directory (or the temp directory if the
    state directory is unusable); the one line to print."""
    text = "".join(traceback.format_exception(exc))
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    where: Path | None = None
    folder = default_state_dir()  # private (0700), never a shared temp directory
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        where = folder / f"crash-{stamp}-{os.getpid()}.txt"
        fd = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(redact_text(text))
    except OSError:
        where = None
    kind = type(exc).__name__
    message = " ".join(str(exc).split())[:200]
    saved = f"; the traceback is in {where}" if where else ""
    return f"ringleader: internal error ({kind}: {message}){saved}"


# -- running side by side ----------------------------------------------------------------------


async def run_side_by_side(
    registry: RuntimeRegistry,
    runtime_ids: Sequence[str],
    prompt: str,
    *,
    model: str | None,
    as_json: bool,
    out: TextIO,
    cwd: str | None = None,
    resume: ResumeFrom | None = None,
    on_host: Callable[[Host], None] | None = None,
    on_retry: RetryListener | None = None,
    make_host: Callable[[Runner], Host] = LocalHost,
    rotation: Mapping[str, tuple[str | None, float | None]] | None = None,
    governance: Governance | None = None,
    sinks: Sequence[EventSink] = (),
    board: BoardStarter | None = None,
    approvals: bool = False,
    agent_id: str = "cli",
    account: str | None = None,
    fallback: Sequence[str] = (),
    accounts: Mapping[str, AccountConfig] | None = None,
    workspace: WorkspaceConfig | None = None,
    task_fields: Mapping[str, Any] | None = None,
    plan: bool = False,
) -> list[JobResult]:
    """``run --runtime A --runtime B …``: the same task on each runtime, each in its own
    workspace (git worktree or temporary copy) when there are several, through ``LocalHost``;
    ``workspace``: the ``[workspace]`` setup and teardown scripts each of those gets.

    One runtime runs in the working directory itself; if it raises (not installed, bad
    configuration), so does this."""
    for rid in runtime_ids:  # an unknown account or fallback fails before anything starts
        check_targets(targets(rid, account, fallback, accounts or {}), registry, where="run")
    state = usable_state_dir()
    origin = cwd or os.getcwd()
    labels = _labels(runtime_ids)
    jobs = [
        Job(
            label=label,
            runtime_id=rid,
            task=TaskSpec(
                task_id=new_task_id(),
                title=prompt,
                model=model,
                cwd=origin,
                agent_id=agent_id,
                resume=resume,
                rotate_to=(rotation or {}).get(rid, (None, None))[0],
                watermark=(rotation or {}).get(rid, (None, None))[1],
                **dict(task_fields or {}),
                plan=plan,
                account=account,
                fallback=tuple(fallback),
            ),
        )
        for label, rid in zip(labels, runtime_ids, strict=True)
    ]
    view = make_view(out, as_json=as_json)
    if len(jobs) > 1:
        jobs = await prepare_workspaces(jobs, state_dir=state, settings=workspace)
    results = await run_jobs(
        registry,
        jobs,
        view,
        state_dir=state,
        on_host=on_host,
        on_retry=on_retry,
        make_host=make_host,
        governance=governance,
        sinks=sinks,
        board=board,
        approvals=approvals,
        accounts=accounts,
    )
    await teardown_workspaces(jobs, workspace, _notice(view))
    if len(results) == 1 and results[0].error is not None:
        raise results[0].error
    return results


async def resumed_turn(
    args: Any,
    out: TextIO,
    specs: Sequence[RuntimeSpec],
    config: LoadedConfig,
    resumed: tuple[str, TaskSpec],
    prompt: str,
    *,
    model: str | None,
    **fields: Any,
) -> list[JobResult] | None:
    """One turn of the resumed ``(runtime, task)`` with ``prompt`` (``args.model_server``:
    against the scripted model server), with the task's extra ``fields``; Ctrl-C aborts it
    cleanly. Its results, or ``None`` when it was interrupted."""
    runtime_id, task = resumed
    interrupt = Interrupt()
    async with AsyncExitStack() as stack:
        config = await model_servers(stack, specs, config, [runtime_id], args.model_server)
        registry = registry_for(specs, config)
        results = await interrupt.run(
            lambda: run_side_by_side(
                registry,
                [runtime_id],
                prompt,
                model=model,
                as_json=bool(args.json),
                out=out,
                cwd=task.cwd,
                resume=task.resume,
                agent_id=task.agent_id,
                on_host=interrupt.attach,
                on_retry=print_retry,
                task_fields=fields,
            )
        )
    return None if interrupt.requested else results


def _notice(view: Any) -> Callable[[str], None]:
    """Where workspace script lines go: the terminal's console, else stderr (JSON mode)."""
    console = getattr(view, "console", None)
    if console is not None:
        return lambda line: console.print(line, markup=False, highlight=False)
    return lambda line: print(line, file=sys.stderr, flush=True)


def _labels(runtime_ids: Sequence[str]) -> list[str]:
    """Runtime ids as labels; a runtime named twice gets ``#2``, ``#3``…"""
    seen: dict[str, int] = {}
    labels: list[str] = []
    for rid in runtime_ids:
        seen[rid] = seen.get(rid, 0) + 1
        labels.append(rid if seen[rid] == 1 else f"{rid}#{seen[rid]}")
    return labels


async def batch(
    registry: RuntimeRegistry,
    file: str,
    *,
    jobs: int | None,
    as_json: bool,
    out: TextIO,
    make_host: Callable[[Runner], Host] = LocalHost,
    governance: Governance | None = None,
    sinks: Sequence[EventSink] = (),
    accounts: Mapping[str, AccountConfig] | None = None,
    workspace: WorkspaceConfig | None = None,
    on_host: Callable[[Host], None] | None = None,
) -> int:
    """``batch FILE.toml``: every task of the file, ``jobs`` at once; 0 when all succeeded
    (``workspace``: the setup and teardown scripts of the tasks' workspaces; ``on_host``: told of
    the host, so Ctrl-C aborts its runs through it)."""
    spec = load_batch(file)
    unknown = sorted({t.runtime for t in spec.task if t.runtime not in registry})
    if unknown:
        raise ConfigError(
            f"batch file {file}: unknown runtime {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(r for r in registry.ids() if '@' not in r)}"
        )
    for t in spec.task:
        found = targets(t.runtime, t.account, t.fallback, accounts or {})
        check_targets(found, registry, where=f"batch file {file}: task {t.id!r}")
    state = usable_state_dir()
    chained = any(t.depends_on for t in spec.task)
    chain = new_task_id(Path(file).stem) if chained else None
    planned = [
        Job(
            label=t.id,
            runtime_id=t.runtime,
            task=TaskSpec(
                task_id=new_task_id(t.id),
                title=t.prompt,
                model=t.model,
                cwd=t.cwd,
                agent_id="batch",
                account=t.account,
                fallback=t.fallback,
                outcome_fields=(
                    {"chain": chain, "chainTask": t.id, "dependsOn": list(t.depends_on)}
                    if chain
                    else {}
                ),
            ),
            depends_on=t.depends_on,
        )
        for t in spec.task
    ]
    isolated = await prepare_workspaces(
        [j for j, t in zip(planned, spec.task, strict=True) if t.workspace],
        state_dir=state,
        settings=workspace,
    )
    by_label = {j.label: j for j in isolated}
    ready = [by_label.get(j.label, j) for j in planned]
    view = make_view(out, as_json=as_json)
    results = await run_jobs(
        registry,
        ready,
        view,
        state_dir=state,
        limit=jobs or spec.jobs,
        make_host=make_host,
        governance=governance,
        sinks=sinks,
        accounts=accounts,
        on_host=on_host,
    )
    await teardown_workspaces(isolated, workspace, _notice(view))
    return 0 if all(r.ok for r in results) else 1


SAMPLE_PROJECT = {
    "README.md": "# greeter\n\nA tiny sample project for ringleader's demo.\n",
    "greeter.py": 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n',
    "test_greeter.py": (
        "from greeter import greet\n\n\ndef test_greet():\n"
        '    assert greet("Ada") == "Hello, Ada!"\n'
    ),
}
"""The demo's sample project (each runtime works in its own copy)."""


def write_sample_project(folder: Path) -> None:
    for name, text in SAMPLE_PROJECT.items():
        (folder / name).write_text(text, encoding="utf-8")


# -- the log -------------------------------------------------------------------------------------


async def replay(run_key: str, *, as_json: bool, out: TextIO) -> int:
    """Show a logged run as it was shown live (``last``: the newest run). A run that is part of
    a rotation chain is shown with the whole chain: each session's events, and between two of
    them the rotation (watermark, the new session, the handoff note's size)."""
    state = usable_state_dir()
    async with EventLog.open(state / "events.db") as log:
        runs = await log.runs()
        if run_key == "last":
            if not runs:
                raise ConfigError("the event log has no runs yet")
            run_key = runs[-1].run_key
        chain = rotation_chain(runs, run_key)
        logged = [(row, await log.read(row.run_key)) for row in chain]
    if not any(events for _, events in logged):
        raise ConfigError(f"no events for run {run_key!r} (see `ringleader replay --list`)")
    view = make_view(out, as_json=as_json)
    first = chain[0] if chain else None
    runtime = first.runtime_id if first else "?"
    lane = view.add_lane(runtime, runtime, first.session_key if first else run_key)
    async with view.active():
        for index, (row, events) in enumerate(logged):
            lineage: dict[str, Any] = row.outcome or {}
            if index:
                line = lane.rotated_to(
                    index=int(lineage.get("rotation") or index),
                    reason=str(lineage.get("rotationReason") or "?"),
                    tokens_used=int(lineage.get("tokensUsed") or 0),
                    window=lineage.get("contextWindowTokens"),
                    runtime=row.runtime_id,
                    session_key=row.session_key,
                    note_bytes=int(lineage.get("handoffNoteBytes") or 0),
                )
                if isinstance(view, PlainView):  # the live view draws it in the lane's panel
                    view.note(f"[{lane.label}] {line}")
            await view.deliver(row.run_key, events)
    return 0


def rotation_chain(runs: Sequence[RunRow], run_key: str) -> list[RunRow]:
    """The runs of ``run_key``'s rotation chain, first to last (each successor's outcome names
    its predecessor in ``rotatedFrom``); just that run when it never rotated."""
    by_key = {row.run_key: row for row in runs}
    here = by_key.get(run_key)
    if here is None:
        return []
    chain = [here]
    seen = {here.run_key}
    while True:  # back to the first session
        before = by_key.get(str((chain[0].outcome or {}).get("rotatedFrom")))
        if before is None or before.run_key in seen:
            break
        chain.insert(0, before)
        seen.add(before.run_key)
    successors = {
        str((row.outcome or {}).get("rotatedFrom")): row
        for row in runs
        if (row.outcome or {}).get("rotatedFrom")
    }
    while True:  # on to the last one
        after = successors.get(chain[-1].run_key)
        if after is None or after.run_key in seen:
            break
        chain.append(after)
        seen.add(after.run_key)
    return chain


async def list_runs(*, as_json: bool, out: TextIO, limit: int | None = 50) -> int:
    """``replay --list``: time, runtime, status, prompt, cost of the newest ``limit`` runs (every
    run when ``None``), oldest first: a table at a terminal (plain aligned lines past a few
    hundred rows), or JSON Lines with ``--json``."""
    state = usable_state_dir()
    async with EventLog.open(state / "events.db") as log:
        rows = await log.run_listing(limit)
    if as_json:
        dumps = json.dumps
        out.writelines(
            dumps(
                {
                    "runKey": r.run_key,
                    "startedMs": r.started_ms,
                    "endedMs": r.ended_ms,
                    "runtimeId": r.runtime_id,
                    "status": r.status,
                    "prompt": r.title,
                    "costUsd": r.cost_usd,
                },
                ensure_ascii=False,
            )
            + "\n"
            for r in rows
        )
        return 0
    if not rows:
        out.write("no runs yet (the event log is empty)\n")
        return 0
    cells = [
        (
            _dt.datetime.fromtimestamp(r.started_ms / 1000).strftime("%Y-%m-%d %H:%M:%S"),
            r.runtime_id,
            r.status,
            _short_prompt(r.title),
            format_cost(r.cost_usd, seen=r.cost_usd is not None, estimated=False),
            r.run_key,
        )
        for r in rows
    ]
    if len(cells) > _RICH_ROWS:  # a long listing: plain aligned lines (a rich table is ~1 ms a row)
        header = ("time", "runtime", "status", "prompt", "cost", "run key")
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
        for line in (header, *cells):
            out.write("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
            out.write("\n")
        return 0
    table = Table(box=None, pad_edge=False)
    for name in ("time", "runtime", "status", "prompt", "cost", "run key"):
        table.add_column(name, overflow="fold" if name == "run key" else "ellipsis")
    for time_, runtime, status, prompt, cost, key in cells:
        # user text as Text: never read as Rich markup ("[[x]] go" stays as it is)
        table.add_row(time_, Text(runtime), status, Text(prompt), cost, Text(key))
    _console(out).print(table)
    return 0


_RICH_ROWS = 500
"""Rows ``replay --list`` draws as a rich table; more are written as plain aligned lines."""


def _short_prompt(title: str | None) -> str:
    prompt = " ".join(str(title or "-").split())
    return prompt if len(prompt) <= 48 else prompt[:47] + "…"


def _console(out: TextIO) -> Console:
    view = make_view(out, as_json=False)
    assert view.console is not None
    return view.console


def serve_banner(url: str, *, token: str | None) -> str:
    """What ``ringleader serve`` prints: the events URL alone on the first line (what a board
    connects to; scripts read it), then every endpoint. ``token``: a generated token, printed
    here once (``?token=`` on the events URL, ``#token=`` on the board's: a fragment never
    reaches the server); None when the token is configured (never printed)."""
    if token is not None:
        events, board = f"{url}/events?token={token}", f"{url}/#token={token}"
        auth = "; every request needs the token above (Authorization: Bearer …)"
    else:
        events, board = f"{url}/events", f"{url}/"
        auth = "; every request needs the configured token (Authorization: Bearer …)"
    return "\n".join(
        [
            events,
            f"  {board}  the board (open it in a browser; POST /tasks starts runs here)",
            f"  {url}/events     live events, Server-Sent Events (Last-Event-ID resumes; ?run=KEY filters)",
            f"  {url}/runs       the runs in the event log (JSON)",
            f"  {url}/runs/KEY   one run's events (JSON Lines)",
            f"  {url}/agui       the events as AG-UI (Server-Sent Events)",
            f"  {url}/mcp        ringleader's tools for an agent (MCP, Streamable HTTP)",
            f"serving the board and its feed{auth}; Ctrl-C stops it (and its runs)",
        ]
    )
