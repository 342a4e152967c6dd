"""``ringleader checkpoints`` (a run's workspace after each turn that changed files) and
``ringleader rewind`` (restore the workspace to one; see
:mod:`orchestrator.engine.reviewloop.checkpoints`)."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
from typing import Any, TextIO

import trio

from orchestrator.cli.options import json_option, sub_command
from orchestrator.core.errors import ConfigError

__all__ = ["register"]


def _files(files: tuple[str, ...], limit: int = 4) -> str:
    names = [f.split("\t")[-1] for f in files]
    shown = ", ".join(names[:limit])
    more = f" (+{len(names) - limit})" if len(names) > limit else ""
    return f"{len(names)}: {shown}{more}" if names else "-"


async def _checkpoints(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.reviewloop.checkpoints import list_checkpoints
    from orchestrator.engine.reviewloop.comments import resolve_commented_run

    async with EventLog.open(usable_state_dir() / "events.db") as log:
        run_key, session = await resolve_commented_run(log, args.run_key)
    assert session.origin_cwd is not None
    found = await list_checkpoints(session.origin_cwd, run_key)
    if args.json:
        for checkpoint in found:
            out.write(json.dumps(checkpoint.to_json(), ensure_ascii=False) + "\n")
        return 0
    if not found:
        out.write(f"no checkpoints for {run_key} (no turn of it changed files in a workspace)\n")
        return 0
    out.write(f"checkpoints of {run_key} in {session.origin_cwd}\n")
    out.write(f"{'n':>3}  {'turn':>4}  {'time':<19}  files changed\n")
    for c in found:
        when = _dt.datetime.fromtimestamp(c.time_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
        label = f" ({c.note})" if c.note else ""
        out.write(f"{c.n:>3}  {c.turn:>4}  {when:<19}  {_files(c.files)}{label}\n")
    return 0


async def _rewind(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.reviewloop.checkpoints import rewind
    from orchestrator.engine.reviewloop.comments import resolve_commented_run

    async with EventLog.open(usable_state_dir() / "events.db") as log:
        run_key, session = await resolve_commented_run(log, args.run_key)
        row = next((r for r in await log.runs() if r.run_key == run_key), None)
    if row is not None and row.status == "running":
        raise ConfigError(f"run {run_key!r} is still running; rewind it once it has ended")
    assert session.origin_cwd is not None
    done = await rewind(session.origin_cwd, run_key, args.n)
    c = done.checkpoint
    conversation = (
        f"The conversation was not rewound: {session.runtime_id} cannot resume a session from "
        "an earlier turn, so the agent still remembers what came after. Continue with "
        f"`ringleader run --resume {run_key} 'PROMPT'` (tell it the files were rewound)."
    )
    if args.json:
        record: dict[str, Any] = {
            "runKey": run_key,
            "checkpoint": c.to_json(),
            "written": list(done.written),
            "deleted": list(done.deleted),
            "saved": done.saved.to_json() if done.saved else None,
            "conversationRewound": False,
        }
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return 0
    saved = (
        f"; what was there before is checkpoint {done.saved.n}" if done.saved is not None else ""
    )
    out.write(
        f"rewound the code in {session.origin_cwd} to checkpoint {c.n} (after turn {c.turn}): "
        f"{len(done.written)} file(s) written, {len(done.deleted)} deleted{saved}\n"
    )
    out.write(conversation + "\n")
    return 0


def _handle_checkpoints(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(_checkpoints, args, out)


def _handle_rewind(args: argparse.Namespace, out: TextIO) -> int:
    if args.n < 0:
        raise ConfigError(
            "rewind: N is a checkpoint number from `ringleader checkpoints` (0 or more)"
        )
    return trio.run(_rewind, args, out)


def register(sub: Any) -> None:
    """Add checkpoints and rewind to the command line."""
    checkpoints = sub_command(
        sub,
        "checkpoints",
        "list a run's checkpoints (its workspace after each turn that changed files)",
        "After every turn that changed files in a workspace ringleader made (side by side, "
        "batch), the workspace is recorded as a commit on refs/ringleader/checkpoints/<run>/<n> "
        "(no branch; your index untouched). Checkpoint 0 is where the run started. Lists them: "
        "number, turn, time, files changed.",
        ["ringleader checkpoints last", "ringleader checkpoints last --json"],
    )
    checkpoints.add_argument(
        "run_key", metavar="RUN", help="run key from `replay --list`, or `last`; e.g. last"
    )
    json_option(checkpoints, "checkpoints")
    checkpoints.set_defaults(handler=_handle_checkpoints)
    rewind = sub_command(
        sub,
        "rewind",
        "restore a run's workspace to one of its checkpoints",
        "Make the run's workspace what it was at checkpoint N (files written and deleted; "
        "ignored files such as .env left alone). The state before the rewind is kept as one "
        "more checkpoint, so a rewind can be undone. Only the code is rewound: no runtime can "
        "resume its session from an earlier turn yet, which the command says.",
        ["ringleader rewind last 1", "ringleader rewind 'runtime:codex:task:1a2b:run-3c4d' 0"],
    )
    rewind.add_argument(
        "run_key", metavar="RUN", help="run key from `replay --list`, or `last`; e.g. last"
    )
    rewind.add_argument("n", type=int, metavar="N", help="the checkpoint number; e.g. 2")
    json_option(rewind, "what was done")
    rewind.set_defaults(handler=_handle_rewind)
