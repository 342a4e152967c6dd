"""``ringleader say`` (the body: :mod:`orchestrator.cli.say`)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    Interrupt,
    asking,
    config_option,
    json_option,
    load_cli_config,
    print_retry,
    registry_for,
    sub_command,
)
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import discover_runtimes

__all__ = ["register"]


async def _say(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli import say
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.cli.live import make_view
    from orchestrator.cli.sidebyside import Job, run_jobs
    from orchestrator.engine.runner import TaskSpec

    state = usable_state_dir()
    if args.withdraw is not None:
        return await say.withdraw_followup(state, args.withdraw, out)
    if args.edit is not None:
        if args.run is None or args.text is not None:
            raise ConfigError("say --edit ID TEXT: the new text, and nothing else")
        return await say.edit_followup(state, args.edit, args.run, out)
    if args.list:
        if args.text is not None:
            raise ConfigError("say --list [RUN]: no text")
        return await say.list_followups(state, args.run, as_json=bool(args.json), out=out)
    if args.run is None or args.text is None:
        raise ConfigError("say RUN TEXT: the run (or 'last') and what to tell it")

    async def resume(runtime_id: str, task: TaskSpec) -> int:
        specs = discover_runtimes()
        config = asking(load_cli_config(args.config_file, specs), [runtime_id], "say")
        job = Job(label=runtime_id, runtime_id=runtime_id, task=task)
        interrupt = Interrupt()
        results = await interrupt.run(
            lambda: run_jobs(
                registry_for(specs, config),
                [job],
                make_view(out, as_json=bool(args.json)),
                state_dir=state,
                on_host=interrupt.attach,
                on_retry=print_retry,
                approvals=args.approvals == "wait",
            )
        )
        if interrupt.requested:
            return 130
        return 0 if all(r.ok for r in results) else 1

    return await say.say_command(state, args.run, args.text, resume=resume, out=out)


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(_say, args, out)


def register(sub: Any) -> None:
    """Add say to the command line."""
    say = sub_command(
        sub,
        "say",
        "send a follow-up message to a run (steered in, or its next turn)",
        "Tell a run something. The message is queued durably in the state directory: a process "
        "running the run steers it in at once where the runtime is steerable (Claude Code "
        "long-lived, Codex app-server, native), else delivers it as the next turn on the same "
        "session when the current turn ends (several queued messages go in one turn, in "
        "order). With no process running it, the next turn runs here. Until delivered, a "
        "message can be listed, edited or withdrawn.",
        [
            "ringleader say last 'also update the changelog'",
            "ringleader say cli:codex:task-1a2b:run-3c4d 'use the v2 API'",
            "ringleader say --list",
            "ringleader say --edit fu-1a2b3c4d5e 'use the v3 API'",
            "ringleader say --withdraw fu-1a2b3c4d5e",
        ],
    )
    say.add_argument("run", nargs="?", metavar="RUN", help="a run key, or 'last'; e.g. last")
    say.add_argument("text", nargs="?", metavar="TEXT", help="the message; e.g. 'add a test'")
    act = say.add_mutually_exclusive_group()
    act.add_argument("--list", action="store_true", help="list the queued messages [of RUN]")
    act.add_argument("--edit", metavar="ID", help="replace a queued message's text with RUN's")
    act.add_argument("--withdraw", metavar="ID", help="withdraw a queued message")
    say.add_argument(
        "--approvals",
        choices=("deny", "wait"),
        default="deny",
        help="for a next turn run here: tool calls that need approval are denied or wait for "
        "`ringleader approve`; e.g. --approvals wait",
    )
    json_option(say, "the queued messages, or the turn's events")
    config_option(say)
    say.set_defaults(handler=_handle)
