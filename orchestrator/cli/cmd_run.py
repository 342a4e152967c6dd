"""``ringleader run`` (one runtime, several side by side, --resume, --board, rotation) and
``ringleader recover``."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import trio

from orchestrator.cli.options import (
    MODEL_SERVER_KEY_ENV,
    Interrupt,
    approvals_option,
    asking,
    budget_options,
    config_option,
    governance_for,
    host_maker,
    json_option,
    load_cli_config,
    model_server,
    model_server_option,
    model_server_targets,
    model_servers,
    notify_sinks,
    percent,
    print_retry,
    ray_option,
    registry_for,
    spec_named,
    sub_command,
    trace_sinks,
)
from orchestrator.core.adapter import RESUME_PROMPT
from orchestrator.core.config import LoadedConfig
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import (
    discover_runtimes,
)

if TYPE_CHECKING:
    from orchestrator.cli.sidebyside import BoardStarter
    from orchestrator.engine.eventlog import RunRecorder
    from orchestrator.engine.runner import TaskSpec

__all__ = ["register"]


def _prompt_and_script(args: argparse.Namespace) -> tuple[str, str | None]:
    """``run``'s prompt and ``--model-server`` script (``""``: the built-in one; ``None``: no
    model server). ``run --model-server "prompt"`` means the built-in script."""
    prompt: str | None = args.prompt
    script: str | None = args.model_server
    if script and prompt is None and not Path(script).is_file():
        prompt, script = script, ""
    if script and not Path(script).is_file():
        raise ConfigError(f"{script}: model server script not found")
    if prompt is None and args.resume:
        prompt = RESUME_PROMPT
    if prompt is None:
        raise ConfigError("run: a prompt is required")
    if args.runtime is None and not args.resume:
        raise ConfigError("run: --runtime ID is required (or --resume RUN_KEY|last)")
    if args.board and getattr(args, "ray", None):
        raise ConfigError("run: --board serves runs of this process; it cannot follow --ray runs")
    return prompt, script


def _with_acp_command(
    config: LoadedConfig, command: str, runtime_ids: Sequence[str]
) -> LoadedConfig:
    """``--acp-command "gemini --acp"``: the agent process of ``--runtime acp``
    (its binary and extra arguments), recorded as coming from the flag."""
    if "acp" not in runtime_ids:
        raise ConfigError(
            "run: --acp-command is the agent command of --runtime acp; add --runtime acp"
        )
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"run: --acp-command: {exc}") from None
    if not argv:
        raise ConfigError("run: --acp-command: the command is empty")
    return config.with_runtime("acp", "--acp-command", binary=argv[0], extra_args=argv[1:])


async def _cmd_run(args: argparse.Namespace, prompt: str, script: str | None, out: TextIO) -> int:
    from orchestrator.cli.approvals import ApprovalBook
    from orchestrator.cli.commands import run_side_by_side, usable_state_dir
    from orchestrator.cli.sidebyside import exit_code
    from orchestrator.engine.accounts import account_table
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.runner import ResumeFrom, resumable_task

    specs = discover_runtimes()
    config = load_cli_config(args.config_file, specs)
    runtime_ids: list[str] = list(args.runtime or [])
    resume: ResumeFrom | None = None
    cwd: str | None = None
    agent_id = "cli"
    if args.resume:
        async with EventLog.open(usable_state_dir() / "events.db") as log:
            resumed_runtime, task = await resumable_task(
                log, args.resume, prompt, agent_id=agent_id
            )
        if runtime_ids and runtime_ids != [resumed_runtime]:
            raise ConfigError(
                f"that run ran on {resumed_runtime!r}; it cannot resume on "
                f"{', '.join(map(repr, runtime_ids))}"
            )
        runtime_ids, resume, cwd = [resumed_runtime], task.resume, task.cwd
        agent_id = task.agent_id  # the identity (and home) the session ran as
    for runtime_id in runtime_ids:
        spec_named(specs, runtime_id)  # unknown ids fail before anything starts
    if args.acp_command is not None:
        config = _with_acp_command(config, args.acp_command, runtime_ids)
    config = _native_app_flags(args, config, runtime_ids)
    if args.approvals == "wait":
        config = asking(config, runtime_ids, "--approvals wait")
    rotation = _rotation(args, config, runtime_ids)
    for rotate_to, _ in rotation.values():
        if rotate_to is not None:
            spec_named(specs, rotate_to)
    interrupt = Interrupt()
    async with AsyncExitStack() as stack:
        if script is not None:  # one server per runtime, each with that runtime's script
            successors = [to for to, _ in rotation.values() if to is not None]
            for runtime_id in model_server_targets(specs, [*runtime_ids, *successors]):
                config = await stack.enter_async_context(
                    model_server(spec_named(specs, runtime_id), config, script or None)
                )
        registry = registry_for(specs, config)
        sinks = [*trace_sinks(args, stack), *await notify_sinks(config, stack, title=prompt)]
        board: BoardStarter | None = None
        if args.board:  # the board's server is imported only when it is served
            from orchestrator.cli.serve import board_for_run

            board = partial(
                board_for_run,
                approvals=ApprovalBook.in_state_dir(usable_state_dir())
                if args.approvals == "wait"
                else None,
            )
        results = await interrupt.run(
            lambda: run_side_by_side(
                registry,
                runtime_ids,
                prompt,
                model=args.model,
                as_json=bool(args.json),
                out=out,
                cwd=cwd,
                resume=resume,
                agent_id=agent_id,
                on_host=interrupt.attach,
                on_retry=print_retry,
                board=board,
                approvals=args.approvals == "wait",
                plan=bool(args.plan),
                rotation=rotation,
                make_host=host_maker(
                    args.ray, config, [MODEL_SERVER_KEY_ENV] if script is not None else []
                ),
                governance=governance_for(args, config),
                sinks=sinks,
                workspace=config.config.workspace,
                account=args.account,
                fallback=args.fallback or (),
                accounts=account_table(config.config),
            )
        )
    if interrupt.requested:
        return 130
    return exit_code(results)


async def _recover(
    config_file: str | None, as_json: bool, out: TextIO, script: str | None = None
) -> int:
    """``recover``: resume every interrupted run that recorded a session (see its --help)."""
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.cli.live import make_view
    from orchestrator.cli.sidebyside import Job, run_jobs
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.runner import recoverable_tasks

    async with EventLog.open(usable_state_dir() / "events.db") as log:
        found = await recoverable_tasks(log)
        asked = await _asked_in_book(log, [task for _, task in found])
    if not found:
        print("ringleader: nothing to recover (no interrupted run with a recorded session)")
        return 0
    specs = discover_runtimes()
    jobs = [
        Job(label=f"{runtime_id}#{index}", runtime_id=runtime_id, task=task)
        for index, (runtime_id, task) in enumerate(found, 1)
    ]
    for job in jobs:
        assert job.task.resume is not None
        print(
            f"ringleader: recovering {job.task.resume.run_key} on {job.runtime_id}",
            file=sys.stderr,
            flush=True,
        )
    interrupt = Interrupt()
    async with AsyncExitStack() as stack:
        loaded = load_cli_config(config_file, specs)
        if asked:  # a run that waited in the approval book resumes asking it again
            loaded = asking(loaded, asked, "recover")
        config = await model_servers(stack, specs, loaded, [j.runtime_id for j in jobs], script)
        registry = registry_for(specs, config)
        results = await interrupt.run(
            lambda: run_jobs(
                registry,
                jobs,
                make_view(out, as_json=as_json),
                state_dir=usable_state_dir(),
                on_host=interrupt.attach,
                on_retry=print_retry,
                approvals=bool(asked),
            )
        )
    if interrupt.requested:
        return 130
    return 0 if all(r.ok for r in results) else 1


async def _asked_in_book(log: RunRecorder, tasks: Sequence[TaskSpec]) -> list[str]:
    """The runtimes of the recovered ``tasks`` whose runs have an entry in the approval book
    (a call waited there, perhaps decided since): they resume with the book, so the runtime's
    repeated ask is answered by the decision (or waits again for one)."""
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.core.approvals import APPROVALS_DB, ApprovalBook

    path = usable_state_dir() / APPROVALS_DB
    if not tasks or not path.exists():
        await trio.lowlevel.checkpoint()
        return []
    book = ApprovalBook(path)
    sessions = {e.session_key for e in await book.entries() if e.session_key}
    runtimes: list[str] = []
    rows = {row.run_key: row for row in await log.runs()}
    for task in tasks:
        row = rows.get(task.resume.run_key) if task.resume is not None else None
        if row is not None and row.session_key in sessions and row.runtime_id not in runtimes:
            runtimes.append(row.runtime_id)
    return runtimes


def _rotation(
    args: argparse.Namespace, config: LoadedConfig, runtime_ids: Sequence[str]
) -> dict[str, tuple[str | None, float | None]]:
    """Per runtime: (successor runtime, watermark as a share) from ``--rotate-to`` /
    ``--watermark``, else the runtime's configuration (``rotate_to`` / ``watermark``)."""
    found: dict[str, tuple[str | None, float | None]] = {}
    for runtime_id in runtime_ids:
        cfg = config.runtime(runtime_id)
        pct: float | None = args.watermark if args.watermark is not None else cfg.watermark
        found[runtime_id] = (args.rotate_to or cfg.rotate_to, None if pct is None else pct / 100)
    return found


def _subagent(text: str) -> tuple[str, str]:
    name, sep, instructions = text.partition("=")
    name = name.strip()
    if not sep or not name or not instructions.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=INSTRUCTIONS (e.g. 'reviewer=You review diffs for bugs.')"
        )
    return name, instructions.strip()


def _native_app_flags(
    args: argparse.Namespace, config: LoadedConfig, runtime_ids: Sequence[str]
) -> LoadedConfig:
    """``--skills-dir`` and ``--subagent`` on the native runtime's configuration (the flags
    win over the file; sub-agents add to the configured ones)."""
    skills_dir: str | None = args.skills_dir
    flagged: list[tuple[str, str]] = args.subagent or []
    if skills_dir is None and not flagged:
        return config
    if "native" not in runtime_ids:
        raise ConfigError(
            "--skills-dir and --subagent apply to the native runtime (--runtime native)"
        )
    values: dict[str, Any] = {}
    if skills_dir is not None:
        values["skills_dir"] = skills_dir
    if flagged:
        current = config.runtime("native").subagents
        values["subagents"] = {
            **{name: sub.model_dump() for name, sub in current.items()},
            **{name: {"instructions": text} for name, text in flagged},
        }
    return config.with_runtime("native", "command line", **values)


def _handle_run(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import check_prompt

    prompt, script = _prompt_and_script(args)
    return trio.run(_cmd_run, args, check_prompt(prompt), script, out)


def _handle_recover(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(_recover, args.config_file, bool(args.json), out, args.model_server)


def register(sub: Any) -> None:
    """Add run and recover to the command line."""
    run = sub_command(
        sub,
        "run",
        "run a prompt on one runtime, or on several side by side",
        "Run one task. With several --runtime options the same task runs on each, side by "
        "side, each in its own workspace (a git worktree of HEAD when the working directory is "
        "a git repository, else a temporary copy), and a comparison table ends the run.\n\n"
        "The native runtime's model is PROVIDER:MODEL (anthropic:claude-sonnet-4-6, "
        "openai:gpt-4.1, openrouter:…, gemini:…); its key comes from <PROVIDER>_API_KEY "
        "(ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY, GEMINI_API_KEY, …) and its "
        "endpoint from <PROVIDER>_BASE_URL (e.g. ANTHROPIC_BASE_URL). Claude Code reads "
        "ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, Codex OPENAI_API_KEY / OPENAI_BASE_URL.",
        [
            "ringleader run --runtime native --model anthropic:claude-haiku-4-5 'fix the typo'",
            "ringleader run --runtime native --runtime claude-code --runtime codex 'add tests'",
            "ringleader run --runtime scripted --json 'say hello' | jq .kind",
            "ringleader run --runtime acp --acp-command 'gemini --acp' 'fix it'",
            "ringleader run --runtime claude-code --runtime codex --model-server 'list the files'",
        ],
    )
    run.add_argument(
        "--runtime",
        action="append",
        default=None,
        metavar="ID",
        help="runtime id (see `ringleader runtimes`); repeat to run side by side; "
        "e.g. --runtime native --runtime codex",
    )
    run.add_argument(
        "--account",
        default=None,
        metavar="NAME",
        help="run as this account of the runtime ([runtimes.<id>.accounts.NAME] in the config: "
        "its own home and key); e.g. --account work",
    )
    run.add_argument(
        "--fallback",
        action="append",
        default=None,
        metavar="TARGET",
        help="where the task goes while its account is held at a rate limit (its breaker open, "
        "or parked): another account NAME, a RUNTIME or RUNTIME@NAME; repeat for more, in "
        "order; e.g. --fallback personal --fallback codex",
    )
    run.add_argument(
        "--model",
        default=None,
        metavar="MODEL",
        help="model for this run; PROVIDER:MODEL for the native runtime; "
        "e.g. --model anthropic:claude-haiku-4-5",
    )
    json_option(run)
    run.add_argument(
        "--model-server",
        nargs="?",
        const="",
        default=None,
        metavar="SCRIPT",
        help="start the built-in scripted model server on 127.0.0.1 (one per runtime) and point "
        "the runtime at it (no keys needed); SCRIPT is a .json/.toml script, else a built-in one "
        "(a tool turn, then a text answer); e.g. --model-server or --model-server script.json",
    )
    run.add_argument(
        "--acp-command",
        default=None,
        metavar="COMMAND",
        help="the command line of the ACP agent that --runtime acp drives (instead of "
        "runtimes.acp.binary and extra_args in the config); e.g. --runtime acp --acp-command "
        "'gemini --acp'",
    )
    run.add_argument(
        "--board",
        action="store_true",
        help="serve the board on 127.0.0.1 (a free port; its URL is printed) over these runs "
        "while they run, with abort and steer; e.g. --board",
    )
    run.add_argument(
        "--resume",
        metavar="RUN_KEY|last",
        default=None,
        help="continue a recorded run's session on its runtime, from its working directory "
        f"(PROMPT defaults to {RESUME_PROMPT!r}); e.g. --resume last",
    )
    run.add_argument(
        "--watermark",
        type=percent,
        default=None,
        metavar="PCT",
        help="rotate a run that ends short (max turns, or a failure) past PCT%% of its context "
        "window into a fresh session started with a handoff note (default 85, or the "
        "runtime's `watermark` in the config); e.g. --watermark 70",
    )
    run.add_argument(
        "--rotate-to",
        default=None,
        metavar="RUNTIME",
        help="start a rotation's fresh session on RUNTIME (default: the same runtime, or the "
        "runtime's `rotate_to` in the config); e.g. --rotate-to codex",
    )
    run.add_argument(
        "--skills-dir",
        default=None,
        metavar="DIR",
        help="native: load content skills (DIR/<name>/SKILL.md) from DIR, relative to the run's "
        "working directory or absolute (default .claude/skills, or the runtime's `skills_dir` "
        "in the config); e.g. --skills-dir docs/skills",
    )
    run.add_argument(
        "--subagent",
        action="append",
        type=_subagent,
        default=None,
        metavar="NAME=INSTRUCTIONS",
        help="native: a sub-agent the model can hand a self-contained job to "
        "(glove_invoke_subagent), answering with INSTRUCTIONS as its system prompt; its events "
        "are tagged agentId=NAME; repeatable; e.g. --subagent 'reviewer=You review diffs.'",
    )
    run.add_argument(
        "--plan",
        action="store_true",
        help="plan first: the runtime works read-only in its planning mode (Claude Code "
        "--permission-mode plan, Codex's read-only sandbox, the native read-only policy, an "
        "ACP agent's plan session mode: refused when it offers none, as Hermes) and "
        "answers with a plan that waits for `ringleader approve ID --allow` (or the board); "
        "approved, the same session carries it out with the normal policy; --deny --message M "
        "asks for a new plan; e.g. --plan",
    )
    approvals_option(run)
    budget_options(run)
    config_option(run)
    ray_option(run)
    run.add_argument(
        "prompt", nargs="?", default=None, help="the instruction; e.g. 'add a test for parse()'"
    )
    recover = sub_command(
        sub,
        "recover",
        "resume the runs a killed orchestrator left interrupted",
        "Find every run left 'interrupted' by an orchestrator that died (killed, crashed, the "
        "machine rebooted) whose session was recorded, and continue each on its runtime from its "
        "session and working directory, logged as a new run linked to the old one. A run that "
        "was already resumed, or recorded no session, is left alone.",
        ["ringleader recover", "ringleader recover --json"],
    )
    json_option(recover)
    config_option(recover)
    model_server_option(recover, "each recovered run's runtime")
    run.set_defaults(handler=_handle_run)
    recover.set_defaults(handler=_handle_recover)
