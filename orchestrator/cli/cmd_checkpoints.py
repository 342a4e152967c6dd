"""``ringleader checkpoints`` (a run's workspace after each turn that changed files) and
``ringleader rewind`` (restore the workspace to one; see
:mod:`orchestrator.engine.reviewloop.checkpoints`)."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import trio

from orchestrator.cli.options import (
    config_option,
    json_option,
    load_cli_config,
    registry_for,
    spec_named,
    sub_command,
)
from orchestrator.core.errors import ConfigError

if TYPE_CHECKING:
    from orchestrator.engine.eventlog import RunRow

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


REWOUND_PROMPT = (
    "The work after this point was undone: the files are back to how they were here. "
    "Continue the task from here."
)
"""What a conversation continued from the rewound turn is told when no PROMPT is given."""


def _prompt_index(runs: Sequence[RunRow], run_key: str) -> int:
    """How many runs resumed the session before ``run_key`` (each added a prompt to it)."""
    by_key = {r.run_key: r for r in runs}
    count, seen = 0, {run_key}
    here = by_key.get(run_key)
    while here is not None:
        before = (here.outcome or {}).get("resumedFrom")
        if not before or before in seen:
            break
        seen.add(before)
        count += 1
        here = by_key.get(str(before))
    return count


async def _rewind(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import resumed_turn, usable_state_dir
    from orchestrator.core.adapter import TurnResumable
    from orchestrator.core.registry import discover_runtimes
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.reviewloop.checkpoints import rewind
    from orchestrator.engine.reviewloop.comments import resolve_commented_run
    from orchestrator.engine.runner import resumable_task

    state = usable_state_dir()
    async with EventLog.open(state / "events.db") as log:
        run_key, session = await resolve_commented_run(log, args.run_key)
        runs = await log.runs()
    row = next((r for r in runs if r.run_key == run_key), None)
    if row is not None and row.status == "running":
        raise ConfigError(f"run {run_key!r} is still running; rewind it once it has ended")
    assert session.origin_cwd is not None
    runtime_id = session.runtime_id
    specs = discover_runtimes()
    spec_named(specs, runtime_id)
    config = load_cli_config(args.config_file, specs)
    done = await rewind(session.origin_cwd, run_key, args.n)
    c = done.checkpoint
    saved = (
        f"; what was there before is checkpoint {done.saved.n}" if done.saved is not None else ""
    )
    note = sys.stderr if args.json else out
    note.write(
        f"rewound the code in {session.origin_cwd} to checkpoint {c.n} (after turn {c.turn}): "
        f"{len(done.written)} file(s) written, {len(done.deleted)} deleted{saved}\n"
    )
    probe = registry_for(specs, config).create(runtime_id)
    try:
        forks = isinstance(probe, TurnResumable)
    finally:
        await probe.aclose()
    if not forks or args.code_only:
        why = (
            "--code-only"
            if forks
            else f"{runtime_id} cannot resume a session from an earlier turn, so the agent "
            "still remembers what came after"
        )
        note.write(
            f"The conversation was not rewound ({why}). Continue with `ringleader run --resume "
            f"{run_key} 'PROMPT'` (tell it the files were rewound).\n"
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
    prompt: str = args.prompt or REWOUND_PROMPT
    async with EventLog.open(state / "events.db") as log:
        _, task = await resumable_task(log, run_key, prompt, agent_id=session.agent_id or "cli")
    note.write(
        f"continuing the conversation from turn {c.turn} as a new {runtime_id} session (a fork; "
        "the original session is kept)\n"
    )
    resumed = (runtime_id, task)
    fields = {"resume_turn": c.turn, "resume_prompt_index": _prompt_index(runs, run_key)}
    results = await resumed_turn(args, out, specs, config, resumed, prompt, model=None, **fields)
    if results is None:
        return 130
    return 0 if all(r.ok for r in results) else 1


def _handle_checkpoints(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(_checkpoints, args, out)


def _handle_rewind(args: argparse.Namespace, out: TextIO) -> int:
    script: str | None = args.model_server
    if script and not Path(script).is_file():
        raise ConfigError(f"{script}: model server script not found")
    if args.prompt is not None and not args.prompt.strip():
        raise ConfigError("rewind: the prompt is empty")
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
    json_option(checkpoints, "the checkpoints (one JSON object per line)")
    checkpoints.set_defaults(handler=_handle_checkpoints)
    rewind = sub_command(
        sub,
        "rewind",
        "restore a run's workspace to one of its checkpoints (and its conversation, where it can)",
        "Make the run's workspace what it was at checkpoint N (files written and deleted; "
        "ignored files such as .env left alone). The state before the rewind is kept as one "
        "more checkpoint, so a rewind can be undone. Where the runtime can continue a session "
        "from an earlier turn (Claude Code: --resume-session-at with --fork-session), the "
        "conversation continues from the checkpoint's turn as a new session with PROMPT; "
        "elsewhere only the code is rewound, which the command says.",
        [
            "ringleader rewind last 1",
            "ringleader rewind last 2 'try the other approach'",
            "ringleader rewind 'runtime:codex:task:1a2b:run-3c4d' 0",
            "ringleader rewind last 1 --code-only",
        ],
    )
    rewind.add_argument(
        "run_key", metavar="RUN", help="run key from `replay --list`, or `last`; e.g. last"
    )
    rewind.add_argument("n", type=int, metavar="N", help="the checkpoint number; e.g. 2")
    rewind.add_argument(
        "prompt",
        nargs="?",
        default=None,
        metavar="PROMPT",
        help="what the continued conversation is told (default: that the later work was "
        "undone); e.g. 'try a dict instead'",
    )
    rewind.add_argument(
        "--code-only",
        action="store_true",
        help="rewind the files only, even where the conversation could follow; e.g. --code-only",
    )
    rewind.add_argument(
        "--model-server",
        nargs="?",
        const="",
        default=None,
        metavar="SCRIPT",
        help="run the continued conversation against the scripted model server on 127.0.0.1 "
        "(as `run --model-server`); e.g. --model-server script.json",
    )
    json_option(rewind, "what was done (with a continued conversation: its events)")
    config_option(rewind)
    rewind.set_defaults(handler=_handle_rewind)
