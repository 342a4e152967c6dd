"""``ringleader comment``: comment on lines of a run's workspace, list the comments, and send
them to the agent as one follow-up turn on the same session (a resumed turn, as ``run
--resume``; see :mod:`orchestrator.engine.reviewloop.comments`)."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    config_option,
    json_option,
    load_cli_config,
    spec_named,
    sub_command,
)
from orchestrator.core.errors import ConfigError

__all__ = ["register"]


async def _add(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.reviewloop.comments import (
        CommentBook,
        commented_lines,
        parse_location,
        resolve_commented_run,
    )

    text: str | None = args.text
    if text is None or not text.strip():
        raise ConfigError('comment: say what to change, e.g. comment last app.py:3 "use a dict"')
    path, start, end = parse_location(args.location)
    state = usable_state_dir()
    async with EventLog.open(state / "events.db") as log:
        run_key, session = await resolve_commented_run(log, args.run_key)
    assert session.origin_cwd is not None
    rel, lines = await commented_lines(session.origin_cwd, path, start, end)
    book = CommentBook.in_state_dir(state)
    comment = await book.add(run_key, rel, start, end, text.strip(), lines)
    pending = await book.comments(run_key, pending=True)
    if args.json:
        out.write(json.dumps(comment.to_json(), ensure_ascii=False) + "\n")
        return 0
    out.write(
        f"comment #{comment.id} on {comment.location} of {run_key} "
        f"({len(pending)} waiting; send with: ringleader comment {run_key} --send)\n"
    )
    return 0


async def _list(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.reviewloop.comments import CommentBook, resolve_commented_run

    state = usable_state_dir()
    async with EventLog.open(state / "events.db") as log:
        run_key, _ = await resolve_commented_run(log, args.run_key)
    comments = await CommentBook.in_state_dir(state).comments(run_key)
    if args.json:
        for comment in comments:
            out.write(json.dumps(comment.to_json(), ensure_ascii=False) + "\n")
        return 0
    if not comments:
        out.write(f"no comments on {run_key}\n")
        return 0
    for comment in comments:
        when = _dt.datetime.fromtimestamp(comment.created_ms / 1000).strftime("%Y-%m-%d %H:%M")
        state_text = (
            f"sent ({comment.sent_via}) → {comment.follow_up}" if comment.sent_ms else "waiting"
        )
        out.write(f"#{comment.id} {comment.location}  {when}  {state_text}\n")
        for n, line in enumerate(comment.lines, comment.start):
            out.write(f"    {n:>4} | {line}\n")
        out.write(f"  {comment.text}\n")
    return 0


async def _withdraw(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.reviewloop.comments import CommentBook, resolve_commented_run

    state = usable_state_dir()
    async with EventLog.open(state / "events.db") as log:
        run_key, _ = await resolve_commented_run(log, args.run_key)
    book = CommentBook.in_state_dir(state)
    await book.withdraw(run_key, args.withdraw)
    left = len(await book.comments(run_key, pending=True))
    if args.json:
        out.write(json.dumps({"withdrawn": args.withdraw, "run": run_key, "waiting": left}) + "\n")
    else:
        out.write(f"comment #{args.withdraw} on {run_key} withdrawn ({left} waiting)\n")
    return 0


async def _send(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import resumed_turn, usable_state_dir
    from orchestrator.core.registry import discover_runtimes
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.reviewloop.comments import (
        CommentBook,
        follow_up_prompt,
        resolve_commented_run,
    )
    from orchestrator.engine.runner import resumable_task

    state = usable_state_dir()
    book = CommentBook.in_state_dir(state)
    async with EventLog.open(state / "events.db") as log:
        run_key, session = await resolve_commented_run(log, args.run_key)
        pending = await book.comments(run_key, pending=True)
        if not pending:
            raise ConfigError(
                f"no comments waiting on {run_key}; add one with: ringleader comment "
                f"{run_key} FILE:LINE 'text'"
            )
        row = next((r for r in await log.runs() if r.run_key == run_key), None)
        if row is not None and row.status == "running":
            raise ConfigError(
                f"run {run_key!r} is still running in another process; send the comments from "
                "its board (they are steered into a live run there) or once it has ended"
            )
        prompt = follow_up_prompt(pending)
        runtime_id, task = await resumable_task(
            log, run_key, prompt, agent_id=session.agent_id or "cli", model=args.model
        )
    specs = discover_runtimes()
    spec_named(specs, runtime_id)
    config = load_cli_config(args.config_file, specs)
    print(
        f"ringleader: sending {len(pending)} comment{'s' if len(pending) != 1 else ''} to "
        f"{runtime_id} (a resumed turn of {run_key})",
        file=sys.stderr,
        flush=True,
    )
    resumed = (runtime_id, task)
    results = await resumed_turn(args, out, specs, config, resumed, prompt, model=args.model)
    if results is None:
        return 130
    outcome = results[0].outcome if results else None
    if outcome is None or outcome.status != "success":
        status = outcome.status if outcome is not None else "error"
        print(
            f"ringleader: the follow-up ended {status}; the comments stay waiting "
            f"(send them again with: ringleader comment {run_key} --send)",
            file=sys.stderr,
        )
        return 1
    follow_up = outcome.runs[-1].outcome.run_key
    await book.mark_sent([c.id for c in pending], via="resume", follow_up=follow_up)
    print(f"ringleader: comments sent; the follow-up run is {follow_up}", file=sys.stderr)
    return 0


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    if sum(bool(x) for x in (args.send, args.list, args.withdraw is not None)) > 1:
        raise ConfigError("comment: --send, --list and --withdraw do not go together")
    if args.withdraw is not None:
        if args.location is not None or args.model_server is not None:
            raise ConfigError("comment: --withdraw ID takes only the run")
        return trio.run(_withdraw, args, out)
    script: str | None = args.model_server
    if script and not Path(script).is_file():
        raise ConfigError(f"{script}: model server script not found")
    if args.send or args.list:
        if args.location is not None:
            raise ConfigError(
                "comment: --send and --list take only the run (comments are added without them)"
            )
        return trio.run(_send if args.send else _list, args, out)
    if args.location is None:
        raise ConfigError("comment: FILE:LINE and the text are required (or --list / --send)")
    if args.model_server is not None:
        raise ConfigError("comment: --model-server goes with --send")
    return trio.run(_add, args, out)


def register(sub: Any) -> None:
    """Add comment to the command line."""
    comment = sub_command(
        sub,
        "comment",
        "comment on a run's changes and send the comments to its agent",
        "Comment on a line or a range of lines of a file in a run's workspace (paths as a diff "
        "names them), collect several, and send them: the agent gets one follow-up turn on the "
        "same session quoting each file, line range, the lines and the comment (a resumed turn, "
        "as `run --resume`, logged as a new run; a run live in `ringleader serve` is steered "
        "from its board instead). Comments are kept in the state directory until sent.",
        [
            "ringleader comment last app.py:12 'this breaks on an empty list'",
            "ringleader comment last src/parse.py:3-7 'use the tokenizer here'",
            "ringleader comment last --list",
            "ringleader comment last --withdraw 3",
            "ringleader comment last --send",
            "ringleader comment last --send --model-server script.json",
        ],
    )
    comment.add_argument(
        "run_key", help="run key from `replay --list`, or `last`; e.g. last", metavar="RUN"
    )
    comment.add_argument(
        "location",
        nargs="?",
        default=None,
        metavar="FILE:LINE[-LINE]",
        help="the file (relative to the repository's top) and line or range; e.g. app.py:3-5",
    )
    comment.add_argument("text", nargs="?", default=None, help="the comment; e.g. 'use a dict'")
    comment.add_argument(
        "--list", action="store_true", help="list the run's comments; e.g. --list --json"
    )
    comment.add_argument(
        "--send",
        action="store_true",
        help="send the waiting comments to the agent as one follow-up turn; e.g. --send",
    )
    comment.add_argument(
        "--withdraw",
        type=int,
        default=None,
        metavar="ID",
        help="drop a comment not sent yet (its #ID in --list); e.g. --withdraw 3",
    )
    comment.add_argument(
        "--model",
        default=None,
        metavar="MODEL",
        help="model for the follow-up turn (--send); e.g. --model anthropic:claude-haiku-4-5",
    )
    comment.add_argument(
        "--model-server",
        nargs="?",
        const="",
        default=None,
        metavar="SCRIPT",
        help="with --send: run the follow-up against the scripted model server on 127.0.0.1 "
        "(as `run --model-server`); e.g. --model-server script.json",
    )
    json_option(comment, "the comment (with --list: comments; with --send: events)")
    config_option(comment)
    comment.set_defaults(handler=_handle)
