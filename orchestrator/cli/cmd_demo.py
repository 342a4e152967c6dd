"""``ringleader demo``: native, Claude Code and Codex side by side against the scripted model
server, no keys."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import trio

from orchestrator.cli.options import (
    json_option,
    load_cli_config,
    model_server,
    one_line,
    registry_for,
    spec_named,
    sub_command,
)
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError, RingleaderError
from orchestrator.core.registry import (
    RuntimeSpec,
    discover_runtimes,
)

__all__ = ["DEMO_BANNER", "DEMO_PROMPT", "DEMO_RUNTIMES", "register"]


DEMO_BANNER = (
    "ringleader demo: a scripted model server on 127.0.0.1 plays the model — no real model, no "
    "keys, no spend; costs are list-price estimates, marked 'est.', never a bill"
)


DEMO_PROMPT = "List the files in the workspace, then summarize."


DEMO_RUNTIMES = ("native", "claude-code", "codex")


def _unavailable(spec: RuntimeSpec, config: RuntimeConfig) -> str | None:
    """Why ``spec``'s runtime cannot run here (one line), or None."""
    if spec.model_server is None:
        return f"{spec.id} cannot be pointed at the scripted model server"
    if spec.locate is None:
        return None
    try:
        found = spec.locate(config)
    except RingleaderError as exc:
        return one_line(exc)
    if not Path(found.path).is_file():
        return f"{spec.id} is not installed (run ringleader install {spec.id})"
    return None


async def _demo(runtime_ids: Sequence[str] | None, as_json: bool, out: TextIO) -> int:
    """The demo task on native, Claude Code and Codex (those installed) side by side, each in
    its own copy of a small sample project and against its own scripted model server on
    127.0.0.1, each doing one real tool turn (``list_files``, ``Bash ls``, ``exec_command ls``)."""
    from orchestrator.cli.commands import usable_state_dir, write_sample_project
    from orchestrator.cli.live import make_view
    from orchestrator.cli.sidebyside import Job, new_task_id, prepare_workspaces, run_jobs
    from orchestrator.engine.runner import TaskSpec

    view = make_view(out, as_json=as_json)
    view.note(DEMO_BANNER)
    specs = discover_runtimes()
    config = load_cli_config(None, specs)
    chosen: list[RuntimeSpec] = []
    for runtime_id in dict.fromkeys(runtime_ids or DEMO_RUNTIMES):
        spec = spec_named(specs, runtime_id)
        why = _unavailable(spec, config.runtime(spec.id))
        if why is None:
            chosen.append(spec)
        else:
            view.note(f"{why} — the demo runs without {spec.id}")
    if not chosen:
        raise ConfigError("none of the demo's runtimes can run here")
    state = usable_state_dir()
    with tempfile.TemporaryDirectory(prefix="ringleader-demo-sample-") as sample:
        await trio.to_thread.run_sync(write_sample_project, Path(sample))
        jobs = await prepare_workspaces(
            [
                Job(
                    spec.id,
                    spec.id,
                    TaskSpec(new_task_id("demo"), DEMO_PROMPT, cwd=sample, agent_id="demo"),
                )
                for spec in chosen
            ],
            state_dir=state,
        )
        async with AsyncExitStack() as stack:
            for spec in chosen:
                config = await stack.enter_async_context(model_server(spec, config, None))
            results = await run_jobs(
                registry_for(specs, config), jobs, view, state_dir=state, estimates=True
            )
    return 0 if all(r.ok for r in results) else 1


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(_demo, args.runtime, bool(args.json), out)


def register(sub: Any) -> None:
    """Add demo to the command line."""
    demo = sub_command(
        sub,
        "demo",
        "run the built-in demo (no keys, nothing leaves 127.0.0.1)",
        "Run the demo task against ringleader's scripted model server on 127.0.0.1: no real "
        "model, no keys, no spend. Costs are list-price estimates, marked 'est.'.",
        [
            "ringleader demo",
            "ringleader demo --runtime native --runtime codex",
            "ringleader demo --json",
        ],
    )
    demo.add_argument(
        "--runtime",
        action="append",
        default=None,
        metavar="ID",
        help="run only these runtimes (default: native, claude-code, codex, those installed); "
        "e.g. --runtime native",
    )
    json_option(demo)
    demo.set_defaults(handler=_handle)
