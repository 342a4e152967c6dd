"""``ringleader batch FILE.toml``: every task of a batch file, N at a time (the file format:
:mod:`orchestrator.cli.batch`)."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    MODEL_SERVER_KEY_ENV,
    Interrupt,
    budget_options,
    config_option,
    governance_for,
    host_maker,
    json_option,
    load_cli_config,
    model_server_option,
    model_servers,
    positive,
    ray_option,
    registry_for,
    sub_command,
    trace_sinks,
)
from orchestrator.core.registry import (
    discover_runtimes,
)

__all__ = ["register"]


async def _batch(args: argparse.Namespace, out: TextIO, interrupt: Interrupt) -> int:
    from orchestrator.cli.batch import load_batch
    from orchestrator.cli.commands import batch
    from orchestrator.engine.accounts import account_table

    specs = discover_runtimes()
    loaded = load_cli_config(args.config_file, specs)
    async with contextlib.AsyncExitStack() as servers:
        script: str | None = args.model_server
        if script is not None:  # a model server per runtime the file names
            ids = [task.runtime for task in load_batch(args.file).task]
            loaded = await model_servers(servers, specs, loaded, ids, script)
        registry = registry_for(specs, loaded)
        governance = governance_for(args, loaded)
        with contextlib.ExitStack() as stack:
            sinks = trace_sinks(args, stack)
            return await interrupt.run(
                lambda: batch(
                    registry,
                    args.file,
                    jobs=args.jobs,
                    as_json=bool(args.json),
                    out=out,
                    make_host=host_maker(
                        args.ray, loaded, [MODEL_SERVER_KEY_ENV] if script is not None else []
                    ),
                    governance=governance,
                    sinks=sinks,
                    on_host=interrupt.attach,
                    workspace=loaded.config.workspace,
                    accounts=account_table(loaded.config),
                )
            )


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    interrupt = Interrupt()  # Ctrl-C aborts the runs cleanly (logged aborted, the table)
    code = trio.run(_batch, args, out, interrupt)
    return 130 if interrupt.requested else code


def register(sub: Any) -> None:
    """Add batch to the command line."""
    batch = sub_command(
        sub,
        "batch",
        "run the tasks of a TOML file, N at a time",
        "Run every [[task]] of a TOML batch file (id, prompt, runtime, optional model, cwd and "
        "workspace), --jobs at a time, each in its own workspace and recorded in the event "
        "log; a comparison table ends the batch. Format: see docs/guide/running.md, 'Batches'.",
        ["ringleader batch tasks.toml", "ringleader batch tasks.toml --jobs 4 --json"],
    )
    batch.add_argument("file", metavar="FILE.toml", help="the batch file; e.g. tasks.toml")
    batch.add_argument(
        "--jobs",
        type=positive,
        default=None,
        metavar="N",
        help="how many tasks run at once (default: the file's `jobs`, else all); e.g. --jobs 2",
    )
    json_option(batch)
    budget_options(batch)
    config_option(batch)
    ray_option(batch)
    model_server_option(batch, "each task's runtime")
    batch.set_defaults(handler=_handle)
