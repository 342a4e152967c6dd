"""``ringleader approvals`` and ``ringleader approve`` (the body: :mod:`orchestrator.cli.approvals`)."""

from __future__ import annotations

import argparse
from contextlib import AsyncExitStack
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    Interrupt,
    asking,
    config_option,
    json_option,
    load_cli_config,
    model_server_option,
    model_servers,
    print_retry,
    registry_for,
    sub_command,
)
from orchestrator.core.registry import (
    discover_runtimes,
)

__all__ = ["register"]


async def _approve(args: argparse.Namespace, out: TextIO) -> int:
    """``approve ID``: decide it; a run whose process is gone resumes here (see its --help)."""
    from orchestrator.cli.approvals import approve_command, decision_from_args
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.cli.live import make_view
    from orchestrator.cli.sidebyside import Job, run_jobs
    from orchestrator.engine.runner import TaskSpec

    scope = "run" if args.for_run else "always" if args.always else "once"
    decision = decision_from_args(bool(args.allow), args.message, args.edit, scope)
    state = usable_state_dir()

    async def resume(runtime_id: str, task: TaskSpec) -> int:
        specs = discover_runtimes()
        job = Job(label=runtime_id, runtime_id=runtime_id, task=task)
        interrupt = Interrupt()
        async with AsyncExitStack() as stack:
            config = await model_servers(
                stack,
                specs,
                asking(load_cli_config(args.config_file, specs), [runtime_id], "approve"),
                [runtime_id],
                args.model_server,
            )
            registry = registry_for(specs, config)
            results = await interrupt.run(
                lambda: run_jobs(
                    registry,
                    [job],
                    make_view(out, as_json=bool(args.json)),
                    state_dir=state,
                    on_host=interrupt.attach,
                    on_retry=print_retry,
                    approvals=True,
                )
            )
        if interrupt.requested:
            return 130
        return 0 if all(r.ok for r in results) else 1

    return await approve_command(state, args.id, decision, resume=resume, out=out)


def _handle_list(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.approvals import list_approvals, revoke_grants
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.core.errors import ConfigError

    state = usable_state_dir()
    if args.revoke is not None:
        return trio.run(lambda: revoke_grants(state, args.revoke, runtime_id=args.runtime, out=out))
    if args.runtime is not None:
        raise ConfigError("--runtime goes with --revoke (e.g. --revoke bash --runtime native)")
    return trio.run(lambda: list_approvals(state, as_json=args.json, out=out))


def _handle_approve(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(_approve, args, out)


def register(sub: Any) -> None:
    """Add approvals and approve to the command line."""
    approvals = sub_command(
        sub,
        "approvals",
        "list the tool calls waiting for a person's approval",
        "List the pending approvals of the state directory: runs started with --approvals wait, "
        "by `ringleader serve` or `ringleader acp --approvals wait`, in any process, and the "
        "standing grants (allowed for the rest of a run, or always on a runtime in a "
        "directory). A run whose process is gone resumes when its approval is decided "
        "(`ringleader approve`). --revoke takes a standing grant back: the tool asks again "
        "from its next call.",
        [
            "ringleader approvals",
            "ringleader approvals --json | jq .id",
            "ringleader approvals --revoke ap-1a2b3c4d5e6f",
            "ringleader approvals --revoke bash --runtime native",
        ],
    )
    json_option(approvals, "the pending approvals (one JSON object per line)")
    approvals.add_argument(
        "--revoke",
        default=None,
        metavar="WHAT",
        help="remove the standing grants WHAT names: the approval that made one (the `from` "
        "column) or a tool (all its grants); e.g. --revoke ap-1a2b3c4d5e6f, --revoke bash",
    )
    approvals.add_argument(
        "--runtime",
        default=None,
        metavar="ID",
        help="with --revoke: only that runtime's grants; e.g. --revoke bash --runtime native",
    )
    approve = sub_command(
        sub,
        "approve",
        "allow or deny a tool call waiting for approval (resumes its run if need be)",
        "Decide a pending approval (see `ringleader approvals`): --allow runs the call (with "
        "--edit, on that input instead), --deny skips it and the model sees --message (or "
        "'Tool approval was rejected.'). The run waiting on it goes on in its process; if that "
        "process is gone, the run resumes here from its session and runs to its end.",
        [
            "ringleader approve ap-1a2b3c4d5e6f --allow",
            "ringleader approve ap-1a2b3c4d5e6f --allow --for-run",
            "ringleader approve ap-1a2b3c4d5e6f --deny --message 'not on main; use a branch'",
            'ringleader approve ap-1a2b3c4d5e6f --allow --edit \'{"command": "ls -la"}\'',
        ],
    )
    approve.add_argument("id", metavar="ID", help="the approval id; e.g. ap-1a2b3c4d5e6f")
    verdict = approve.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--allow", action="store_true", help="run the call; e.g. --allow")
    verdict.add_argument("--deny", action="store_true", help="skip the call; e.g. --deny")
    approve.add_argument(
        "--message",
        default=None,
        metavar="M",
        help="with --deny: what the model is told; e.g. --message 'use a branch'",
    )
    approve.add_argument(
        "--edit",
        default=None,
        metavar="JSON",
        help="with --allow: the input to run the call with instead; e.g. --edit "
        '\'{"command": "ls"}\'',
    )
    reach = approve.add_mutually_exclusive_group()
    reach.add_argument(
        "--for-run",
        action="store_true",
        help="with --allow: also allow this tool for the rest of the run, without asking; "
        "e.g. --allow --for-run",
    )
    reach.add_argument(
        "--always",
        action="store_true",
        help="with --allow: always allow this tool on this runtime in this directory "
        "(stored; listed by `ringleader approvals`); e.g. --allow --always",
    )
    json_option(approve, "the decision, then the resumed run's events (JSON Lines)")
    model_server_option(approve, "the resumed run's runtime")
    config_option(approve)
    approvals.set_defaults(handler=_handle_list)
    approve.set_defaults(handler=_handle_approve)
