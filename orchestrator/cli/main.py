"""The ``ringleader`` command. Thin: parsing and rendering only; the library never imports it."""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import shlex
import signal
import sys
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import attrs
import trio

from orchestrator.core.config import LoadedConfig, RuntimeConfig, load_config
from orchestrator.core.errors import (
    ConfigError,
    RingleaderError,
    RuntimeNotFoundError,
    exception_leaves,
)
from orchestrator.core.integration import resolve_runtime_integration
from orchestrator.core.registry import (
    ModelServerHook,
    RuntimeRegistry,
    RuntimeSpec,
    discover_runtimes,
)

# What only some commands need is imported where it is used: `ringleader runtimes`, `config` and
# `--help` start without the runner, the event log, the board server, rich's live view or Ray.
if TYPE_CHECKING:
    from orchestrator.engine.governance import Governance
    from orchestrator.engine.hosts import Host
    from orchestrator.engine.runner import Runner
    from orchestrator.engine.supervisor import RetryNotice

__all__ = ["main"]


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


MODEL_SERVER_KEY_ENV = "RINGLEADER_MODEL_SERVER_KEY"
"""The variable ``--model-server`` names as the runtime's key (a placeholder; the server takes
any key)."""


def _load_config(config_file: str | None, specs: Sequence[RuntimeSpec]) -> LoadedConfig:
    return load_config(config_file, runtime_ids=[spec.id for spec in specs])


def _registry(specs: Sequence[RuntimeSpec], config: LoadedConfig) -> RuntimeRegistry:
    return RuntimeRegistry.from_specs(specs, config.runtime)


def _spec(specs: Sequence[RuntimeSpec], runtime_id: str) -> RuntimeSpec:
    for spec in specs:
        if spec.id == runtime_id:
            return spec
    raise ConfigError(
        f"unknown runtime {runtime_id!r}; known: {', '.join(s.id for s in specs) or 'none'}"
    )


def _default_script(hook: ModelServerHook) -> dict[str, Any]:
    """The built-in script: one real tool turn (a tool the runtime offers), then a text turn."""
    turns: list[dict[str, Any]] = []
    if hook.tool_call is not None:
        turns.append(
            {
                "text": "Let me look at the workspace first.",
                "tool_calls": [dict(hook.tool_call)],
                "usage": {"input_tokens": 400, "output_tokens": 30},
            }
        )
    turns.append(
        {
            "text": "Done: this answer comes from ringleader's built-in scripted model server.",
            "usage": {"input_tokens": 500, "output_tokens": 20},
        }
    )
    return {"model": hook.model, "conversations": [{"name": "default", "turns": turns}]}


@asynccontextmanager
async def _model_server(
    spec: RuntimeSpec, config: LoadedConfig, script: str | None
) -> AsyncGenerator[LoadedConfig]:
    """Serve the scripted model server on 127.0.0.1 and point ``spec``'s runtime at it."""
    hook = spec.model_server
    if hook is None:
        raise ConfigError(f"runtime {spec.id!r} cannot be pointed at the model server")
    # imported when used: the other commands do not pay for Starlette and Hypercorn
    from orchestrator.model_server import load_script, serve_model_server

    source: Any = _default_script(hook)
    if script:
        try:
            source = load_script(script)
        except ConfigError:
            raise  # already one line naming the file and the problem
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{script}: not a model server script: {_one_line(exc)}") from None
    os.environ[MODEL_SERVER_KEY_ENV] = "ringleader-model-server-placeholder"
    async with serve_model_server(source) as server:
        url = str(server.url) if hook.api == "anthropic" else str(server.base_url)
        values: dict[str, Any] = {
            "base_url": url,
            "api_key_env": MODEL_SERVER_KEY_ENV,
            "model": hook.model,
        }
        if hook.provider is not None:
            values["provider"] = hook.provider
        yield config.with_runtime(spec.id, f"--model-server ({url})", **values)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


async def _serve(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.serve import serve_board

    specs = discover_runtimes()
    registry = _registry(specs, _load_config(args.config_file, specs))
    return await serve_board(
        registry, host=args.host, port=args.port, token=_feed_token(args), out=out
    )


def _feed_token(args: argparse.Namespace) -> str | None:
    """The feed token: ``--token-file``, else ``$RINGLEADER_FEED_TOKEN_FILE``, else
    ``$RINGLEADER_FEED_TOKEN``, else ``--token`` (which shows in ``ps``). One source only."""
    path: Path | None = args.token_file
    if path is None and os.environ.get("RINGLEADER_FEED_TOKEN_FILE"):
        path = Path(os.environ["RINGLEADER_FEED_TOKEN_FILE"])
    token: str | None = args.token
    if path is not None:
        if token is not None:
            raise ConfigError("give the feed token once: --token-file or --token, not both")
        try:
            token = path.expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"cannot read the feed token file {path}: {exc.strerror}") from None
        if not token:
            raise ConfigError(f"the feed token file {path} is empty")
    elif token is None:
        token = os.environ.get("RINGLEADER_FEED_TOKEN") or None
    return token


async def _acp(
    runtime_id: str, model: str | None, config_file: str | None, approvals: bool = False
) -> int:
    from orchestrator.acp.server import serve_acp_stdio
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog

    specs = discover_runtimes()
    registry = _registry(specs, _load_config(config_file, specs))
    if runtime_id not in registry:
        raise ConfigError(f"unknown runtime {runtime_id!r}; known: {', '.join(registry.ids())}")
    async with EventLog.open(usable_state_dir() / "events.db") as log:
        await serve_acp_stdio(registry, runtime_id, event_log=log, model=model, approvals=approvals)
    return 0


async def _approve(args: argparse.Namespace, out: TextIO) -> int:
    """``approve ID``: decide it; a run whose process is gone resumes here (see its --help)."""
    from orchestrator.cli.approvals import approve_command, decision_from_args
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.cli.live import make_view
    from orchestrator.cli.sidebyside import Job, run_jobs
    from orchestrator.engine.runner import TaskSpec

    decision = decision_from_args(bool(args.allow), args.message, args.edit)
    state = usable_state_dir()

    async def resume(runtime_id: str, task: TaskSpec) -> int:
        specs = discover_runtimes()
        registry = _registry(specs, _load_config(args.config_file, specs))
        job = Job(label=runtime_id, runtime_id=runtime_id, task=task)
        interrupt = _Interrupt()
        results = await interrupt.run(
            lambda: run_jobs(
                registry,
                [job],
                make_view(out, as_json=bool(args.json)),
                state_dir=state,
                on_host=interrupt.attach,
                on_retry=_print_retry,
                approvals=True,
            )
        )
        if interrupt.requested:
            return 130
        return 0 if all(r.ok for r in results) else 1

    return await approve_command(state, args.id, decision, resume=resume, out=out)


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
        return _one_line(exc)
    if not Path(found.path).is_file():
        return f"{spec.id} is not installed (run scripts/install-runtimes {spec.id})"
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
    config = _load_config(None, specs)
    chosen: list[RuntimeSpec] = []
    for runtime_id in dict.fromkeys(runtime_ids or DEMO_RUNTIMES):
        spec = _spec(specs, runtime_id)
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
                config = await stack.enter_async_context(_model_server(spec, config, None))
            results = await run_jobs(
                _registry(specs, config), jobs, view, state_dir=state, estimates=True
            )
    return 0 if all(r.ok for r in results) else 1


@attrs.frozen
class _RuntimeRow:
    runtime: str
    installed: str
    auth: str
    health: str
    capabilities: str
    plan: str


async def _runtime_row(spec: RuntimeSpec, config: RuntimeConfig) -> _RuntimeRow:
    """One row of ``ringleader runtimes``; a runtime that cannot even be built says why."""
    installed = "in-process"
    if spec.locate is not None:
        try:
            where = spec.locate(config)
            installed = f"{where.path} ({where.version})" if where.version else where.path
        except RuntimeNotFoundError as exc:
            installed = f"no: {exc.install_hint or 'not installed'}"
    if spec.key_envs is None:
        auth = "not needed"
    else:
        names = spec.key_envs(config)
        present = [n for n in names if os.environ.get(n)]
        auth = f"yes (${present[0]})" if present else f"no (set ${' or $'.join(names)})"
    try:
        adapter = spec.create(config)  # imports the runtime's module: before any clock runs
    except Exception as exc:
        return _RuntimeRow(spec.id, installed, auth, f"no: {_one_line(exc)}", "-", "-")
    await trio.lowlevel.checkpoint()
    async with adapter:
        caps = adapter.capabilities()
        health = await adapter.health()
    plan = resolve_runtime_integration(caps)
    flags = [
        name
        for name, on in (
            ("streaming", caps.streaming),
            ("steerable", caps.steerable),
            ("resume", caps.resume),
            ("approval", caps.tool_approval),
            ("mcp", caps.mcp),
        )
        if on
    ]
    if caps.context_window_tokens:
        flags.append(f"ctx={caps.context_window_tokens // 1000}k")
    status = "ok" if health.ok else f"no: {_short(health.message or '', 60)}"
    return _RuntimeRow(spec.id, installed, auth, status, ",".join(flags) or "-", plan.home.kind)


async def _runtimes(config_file: str | None, out: TextIO) -> int:
    specs = discover_runtimes()
    config = _load_config(config_file, specs)
    rows: list[_RuntimeRow | None] = [None] * len(specs)

    async def fill(index: int, spec: RuntimeSpec) -> None:
        rows[index] = await _runtime_row(spec, config.runtime(spec.id))

    async with trio.open_nursery() as nursery:  # health checks run side by side (≤ 2 s each)
        for index, spec in enumerate(specs):
            nursery.start_soon(fill, index, spec)
    table: list[tuple[str, ...]] = [
        ("runtime", "health", "installed", "auth", "capabilities", "plan")
    ]
    for row in rows:
        assert row is not None
        table.append((row.runtime, row.health, row.installed, row.auth, row.capabilities, row.plan))
    _table(table, out)
    return 0


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        dest="config_file",
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="config file (wins over ./ringleader.toml and the user config); "
        "e.g. --config team.toml",
    )


def _config(config_file: str | None, as_json: bool, out: TextIO) -> int:
    specs = discover_runtimes()
    loaded = _load_config(config_file, specs)
    rows = loaded.describe(spec.id for spec in specs)
    if as_json:
        out.write(
            json.dumps(
                {
                    "files": [str(f) for f in loaded.files],
                    "values": [{"key": k, "value": v, "source": src} for k, v, src in rows],
                }
            )
            + "\n"
        )
        return 0
    files = ", ".join(str(f) for f in loaded.files) or "none (defaults and environment only)"
    out.write(f"config files: {files}\n")
    _table([("key", "value", "source"), *rows], out)
    return 0


def _table(rows: Sequence[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
        )


FORCE_WINDOW_S = 2.0
"""A second Ctrl-C within this many seconds of the first forces the exit."""


T = TypeVar("T")


@attrs.define
class _Interrupt:
    """Ctrl-C during runs: the first aborts them cleanly (``done{aborted}`` in the log, children
    gone, exit 130), a second within :data:`FORCE_WINDOW_S` forces."""

    hosts: list[Host] = attrs.field(factory=list["Host"])
    requested: bool = False
    forced: bool = False

    def attach(self, host: Host) -> None:
        self.hosts.append(host)
        if self.requested:
            self.abort()

    def abort(self) -> None:
        self.requested = True
        for host in self.hosts:
            for ref in host.tasks:
                if not ref.finished:
                    ref.abort()

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """``await work()`` with Ctrl-C handled (a forced exit raises ``KeyboardInterrupt``)."""
        results: list[T] = []
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch, signals, nursery.cancel_scope)
                results.append(await work())
                nursery.cancel_scope.cancel()
        if self.requested:
            # the exit is 130 from here on: a later Ctrl-C (the second one arriving after the
            # clean abort already ended the runs) must not kill the process on its way out
            # (Python resets a Python-level handler to the default at shutdown; SIG_IGN stays)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        if not results:  # forced: the runs were cancelled where they stood
            raise KeyboardInterrupt
        return results[0]

    async def _watch(self, signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
        last: float | None = None
        async for _ in signals:
            now = trio.current_time()
            if last is not None and now - last <= FORCE_WINDOW_S:
                self.forced = True
                print("ringleader: forced exit", file=sys.stderr, flush=True)
                scope.cancel()
                return
            last = now
            print(
                "\nringleader: interrupted, aborting the run (Ctrl-C again within 2 s forces)",
                file=sys.stderr,
                flush=True,
            )
            self.abort()


def _print_retry(notice: RetryNotice) -> None:
    print(f"ringleader: {notice}", file=sys.stderr, flush=True)


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
        from orchestrator.engine.runner import RESUME_PROMPT

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
    """``--acp-command "gemini --experimental-acp"``: the agent process of ``--runtime acp``
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
    from orchestrator.cli.serve import board_for_run
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.runner import ResumeFrom, resumable_task

    specs = discover_runtimes()
    config = _load_config(args.config_file, specs)
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
        _spec(specs, runtime_id)  # unknown ids fail before anything starts
    if args.acp_command is not None:
        config = _with_acp_command(config, args.acp_command, runtime_ids)
    config = _native_app_flags(args, config, runtime_ids)
    rotation = _rotation(args, config, runtime_ids)
    for rotate_to, _ in rotation.values():
        if rotate_to is not None:
            _spec(specs, rotate_to)
    interrupt = _Interrupt()
    async with AsyncExitStack() as stack:
        if script is not None:  # one server per runtime, each with that runtime's script
            successors = [to for to, _ in rotation.values() if to is not None]
            for runtime_id in dict.fromkeys([*runtime_ids, *successors]):
                config = await stack.enter_async_context(
                    _model_server(_spec(specs, runtime_id), config, script or None)
                )
        registry = _registry(specs, config)
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
                on_retry=_print_retry,
                board=partial(
                    board_for_run,
                    notice=sys.stderr,
                    approvals=ApprovalBook.in_state_dir(usable_state_dir())
                    if args.approvals == "wait"
                    else None,
                )
                if args.board
                else None,
                approvals=args.approvals == "wait",
                rotation=rotation,
                make_host=_host_maker(
                    args.ray, config, [MODEL_SERVER_KEY_ENV] if script is not None else []
                ),
                governance=_governance(args, config),
                sinks=_trace_sinks(args, stack),
            )
        )
    if interrupt.requested:
        return 130
    return 0 if all(r.ok for r in results) else 1


async def _recover(config_file: str | None, as_json: bool, out: TextIO) -> int:
    """``recover``: resume every interrupted run that recorded a session (see its --help)."""
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.cli.live import make_view
    from orchestrator.cli.sidebyside import Job, run_jobs
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.runner import recoverable_tasks

    async with EventLog.open(usable_state_dir() / "events.db") as log:
        found = await recoverable_tasks(log)
    if not found:
        print("ringleader: nothing to recover (no interrupted run with a recorded session)")
        return 0
    specs = discover_runtimes()
    registry = _registry(specs, _load_config(config_file, specs))
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
    interrupt = _Interrupt()
    results = await interrupt.run(
        lambda: run_jobs(
            registry,
            jobs,
            make_view(out, as_json=as_json),
            state_dir=usable_state_dir(),
            on_host=interrupt.attach,
            on_retry=_print_retry,
        )
    )
    if interrupt.requested:
        return 130
    return 0 if all(r.ok for r in results) else 1


def _governance(args: argparse.Namespace, config: LoadedConfig) -> Governance:
    """Budgets and breakers from ``[budget]``/``[breaker]``, the flags winning."""
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.governance import Governance

    return Governance.from_config(
        config.config,
        usd=args.budget_usd,
        tokens=args.budget_tokens,
        wall_s=args.max_wall,
        allow_estimates=True if args.allow_estimates else None,
        state_dir=usable_state_dir(),  # breakers outlive the command
    )


def _trace_sinks(args: argparse.Namespace, stack: Any) -> list[Any]:
    """``--trace-file FILE``: every run's spans (OpenTelemetry, GenAI conventions) as JSON Lines
    in FILE; flushed when the command ends (``stack``: an exit stack it registers with)."""
    path: Path | None = args.trace_file
    if path is None:
        return []
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    except ImportError:
        raise ConfigError(
            "--trace-file needs the otel extra: pip install 'ringleader[otel]'"
        ) from None
    try:
        handle = path.open("w", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--trace-file {path}: {exc.strerror or exc}") from None
    stack.callback(handle.close)
    provider = TracerProvider()
    exporter = ConsoleSpanExporter(
        out=handle, formatter=lambda span: span.to_json(indent=None) + "\n"
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    from orchestrator.engine.otel import OtelSink

    stack.callback(provider.shutdown)
    return [OtelSink(tracer_provider=provider, record_content=bool(args.trace_content))]


def _budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget-usd",
        type=_positive_float,
        default=None,
        metavar="USD",
        help="stop a task once it has spent this much (runtime-reported USD, or list-price "
        "estimates with --allow-estimates); the run ends error{budget_exceeded}; "
        "e.g. --budget-usd 0.50",
    )
    parser.add_argument(
        "--budget-tokens",
        type=_positive,
        default=None,
        metavar="N",
        help="stop a task once it has used N tokens (input + output); e.g. --budget-tokens 200000",
    )
    parser.add_argument(
        "--max-wall",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="stop a run after this much wall time; e.g. --max-wall 600",
    )
    parser.add_argument(
        "--trace-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="write every run's OpenTelemetry spans (run, model turn, tool call; usage and cost; "
        "no prompts or outputs) to FILE as JSON Lines; needs ringleader[otel]; "
        "e.g. --trace-file trace.jsonl",
    )
    parser.add_argument(
        "--trace-content",
        action="store_true",
        help="with --trace-file: also record prompts, outputs and tool arguments in the spans; "
        "e.g. --trace-file t.jsonl --trace-content",
    )
    parser.add_argument(
        "--allow-estimates",
        action="store_true",
        help="estimate USD from list prices for runtimes that report only tokens (shown as "
        "'est.'; your config's prices first, then ringleader's dated table); "
        "e.g. --budget-usd 1 --allow-estimates",
    )


def _ray_option(
    parser: argparse.ArgumentParser,
    what: str = "run the tasks on a Ray cluster (pip install 'ringleader[ray]')",
) -> None:
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help=f"{what}: auto (the running cluster), local (start one here for this command), or "
        "the cluster's address; e.g. --ray auto",
    )


def _host_maker(
    address: str | None, config: LoadedConfig, forward_env: Sequence[str]
) -> Callable[[Runner], Host]:
    """``LocalHost``, or with ``--ray`` a ``RayHost`` that ships the runtimes' configuration (key
    variable names only) and the model server's placeholder key variable to the nodes."""
    from orchestrator.engine.hosts import LocalHost, RayHost

    if address is None:
        return LocalHost
    target = None if address == "local" else address
    return lambda runner: RayHost(
        runner, address=target, configs=config.runtime, forward_env=forward_env
    )


def _ray_runtimes(address: str, as_json: bool, out: TextIO) -> int:
    """``runtimes --ray``: each node of the cluster and what it can run."""
    from rich.console import Console
    from rich.table import Table

    from orchestrator.engine.hosts import ray_nodes

    nodes = ray_nodes(None if address == "local" else address)
    if as_json:
        out.write(json.dumps(nodes) + "\n")
        return 0
    table = Table(title="Ray nodes")
    for column in ("node", "address", "runtimes (version)", "declared slots"):
        table.add_column(column)
    for node in nodes:
        runtimes = ", ".join(
            f"{rid} ({version})" if version else rid for rid, version in node["runtimes"].items()
        )
        slots = ", ".join(f"{rid}: {amount:g}" for rid, amount in node["slots"].items())
        table.add_row(node["node"], node["address"], runtimes or "none", slots or "-")
    Console(file=out).print(table)
    return 0


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


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage in (0, 100]")
    return value


def _version() -> str:
    try:
        return importlib.metadata.version("ringleader")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


_RAW = argparse.RawDescriptionHelpFormatter


def _sub(
    sub: Any, name: str, summary: str, description: str, examples: Sequence[str]
) -> argparse.ArgumentParser:
    """A subcommand with a one-line summary, a description and examples in its ``--help``."""
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=summary, description=description, epilog=epilog, formatter_class=_RAW
    )
    return parser


def _json_option(parser: argparse.ArgumentParser, what: str = "events") -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help=f"print {what} as JSON Lines (one object per line, run key on each) instead of the "
        "view; e.g. --json | jq .kind",
    )


def _parser() -> argparse.ArgumentParser:
    from orchestrator.engine.runner import (
        RESUME_PROMPT,  # the help names it (the runner is light once imported)
    )

    parser = argparse.ArgumentParser(
        prog="ringleader",
        description="Run heterogeneous coding agents (ringleader's native loop, Claude Code, "
        "Codex, …) side by side behind one normalized event stream.",
        epilog="examples:\n"
        "  ringleader demo\n"
        "  ringleader run --runtime native --runtime claude-code 'add a test for parse()'\n"
        "  ringleader batch tasks.toml --jobs 2\n"
        "  ringleader replay --list\n"
        "\n"
        "environment: RINGLEADER_STATE_DIR (event log, homes, crash reports; default "
        "$XDG_STATE_HOME/ringleader), NO_COLOR (plain output); see README 'Environment'.",
        formatter_class=_RAW,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"ringleader {_version()}",
        help="print the version and exit; e.g. ringleader --version",
    )
    parser.add_argument(
        "--config",
        dest="config_file",
        default=None,
        metavar="FILE",
        help="config file (wins over ./ringleader.toml and the user config); "
        "e.g. --config team.toml",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = _sub(
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
    _json_option(demo)

    run = _sub(
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
            "ringleader run --runtime acp --acp-command 'gemini --experimental-acp' 'fix it'",
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
        "--model",
        default=None,
        metavar="MODEL",
        help="model for this run; PROVIDER:MODEL for the native runtime; "
        "e.g. --model anthropic:claude-haiku-4-5",
    )
    _json_option(run)
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
        "'gemini --experimental-acp'",
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
        type=_percent,
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
    _approvals_option(run)
    _budget_options(run)
    _config_option(run)
    _ray_option(run)
    run.add_argument(
        "prompt", nargs="?", default=None, help="the instruction; e.g. 'add a test for parse()'"
    )

    batch = _sub(
        sub,
        "batch",
        "run the tasks of a TOML file, N at a time",
        "Run every [[task]] of a TOML batch file (id, prompt, runtime, optional model, cwd and "
        "workspace), --jobs at a time, each in its own workspace and recorded in the event "
        "log; a comparison table ends the batch. Format: see README 'Batches'.",
        ["ringleader batch tasks.toml", "ringleader batch tasks.toml --jobs 4 --json"],
    )
    batch.add_argument("file", metavar="FILE.toml", help="the batch file; e.g. tasks.toml")
    batch.add_argument(
        "--jobs",
        type=_positive,
        default=None,
        metavar="N",
        help="how many tasks run at once (default: the file's `jobs`, else all); e.g. --jobs 2",
    )
    _json_option(batch)
    _budget_options(batch)
    _config_option(batch)
    _ray_option(batch)

    doctor_cmd = _sub(
        sub,
        "doctor",
        "report runtime drift, the runtime versions runs used, and open breakers",
        "Read the event log and report, per runtime version, the frame types its adapter did not "
        "know and the frames that came without fields it expects (a runtime upgrade that changed "
        "its output), how many runs saw them and since when; how many runs used each runtime "
        "version; and the circuit breakers open now. Exit status 1 when there is drift or an "
        "open breaker.",
        ["ringleader doctor", "ringleader doctor --json"],
    )
    _json_option(doctor_cmd, "findings")
    _config_option(doctor_cmd)

    runtimes = _sub(
        sub,
        "runtimes",
        "list runtimes: installed, health, capabilities, plan",
        "List every runtime ringleader knows, whether it is installed and healthy, and what it "
        "can do (streaming, steering, resume, context window, home).",
        ["ringleader runtimes", "ringleader runtimes --config team.toml"],
    )
    _config_option(runtimes)
    _ray_option(runtimes, "list what each node of the Ray cluster can run")
    _json_option(runtimes, "the nodes (with --ray)")

    config = _sub(
        sub,
        "config",
        "print the effective configuration (secrets redacted) and its sources",
        "Print every configuration value ringleader would use, and where it comes from: "
        "defaults, ./ringleader.toml, the user config, --config, the environment. Keys appear "
        "by variable name only.",
        ["ringleader config", "ringleader config --json"],
    )
    _json_option(config, "the configuration")
    _config_option(config)

    replay = _sub(
        sub,
        "replay",
        "replay a run from the event log, or list the runs",
        "Show a logged run as it was shown live, or (--list) every run in the log: time, "
        "runtime, status, prompt, cost, run key.",
        [
            "ringleader replay --list",
            "ringleader replay last",
            "ringleader replay 'runtime:native:task:1a2b3c4d' --json",
        ],
    )
    replay.add_argument(
        "run_key",
        nargs="?",
        default="last",
        help="run key from `replay --list`, or `last` (default); e.g. last",
    )
    _json_option(replay, "events (with --list: runs)")
    replay.add_argument(
        "--list", action="store_true", help="list the runs in the log; e.g. replay --list --json"
    )

    recover = _sub(
        sub,
        "recover",
        "resume the runs a killed orchestrator left interrupted",
        "Find every run left 'interrupted' by an orchestrator that died (killed, crashed, the "
        "machine rebooted) whose session was recorded, and continue each on its runtime from its "
        "session and working directory, logged as a new run linked to the old one. A run that "
        "was already resumed, or recorded no session, is left alone.",
        ["ringleader recover", "ringleader recover --json"],
    )
    _json_option(recover)
    _config_option(recover)

    serve = _sub(
        sub,
        "serve",
        "serve the board (a web page) and its feed over the event log; hosts runs",
        "Serve the board at / (a column per state, a card per run, live; a page per run with "
        "abort, steer and approvals) and the event log to other boards: /events (Server-Sent "
        "Events, resumable), /runs (JSON), /runs/KEY (JSON Lines). Runs posted to /tasks (or "
        "from the board's form) run in this process, in the current directory. Loopback by "
        "default; any other address needs a token.",
        [
            "ringleader serve",
            "ringleader serve --port 0",
            "ringleader serve --host 0.0.0.0 --token-file ~/.config/ringleader/feed-token",
        ],
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="bind address (loopback by default; others need a token); e.g. --host ::1",
    )
    serve.add_argument(
        "--port",
        type=_port_number,
        default=8765,
        help="TCP port, 0 for a free one (printed); default 8765; e.g. --port 0",
    )
    serve.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="file holding the bearer token clients must send (required off loopback); by "
        "default the token comes from the file named by $RINGLEADER_FEED_TOKEN_FILE, else from "
        "$RINGLEADER_FEED_TOKEN; e.g. --token-file ~/.config/ringleader/feed-token",
    )
    serve.add_argument(
        "--token",
        default=None,
        help="the token itself (discouraged: any local user can read it in `ps`; prefer "
        "--token-file); e.g. --token local-test-only",
    )
    _config_option(serve)

    _sub(
        sub,
        "model-server",
        "serve the scripted model server on 127.0.0.1",
        "Serve the scripted model server (Anthropic Messages, OpenAI Responses and Chat "
        "Completions) on 127.0.0.1; a JSON or TOML script decides the answers. Prints its URL.",
        ["ringleader model-server --script script.json --port 0"],
    )
    acp = _sub(
        sub,
        "acp",
        "serve a runtime as an Agent Client Protocol agent on stdin/stdout",
        "Serve a ringleader runtime as an ACP agent over stdio, for editors that speak ACP (Zed "
        "and others): point the editor's agent command at this. Runs are recorded in the "
        "event log like any other.",
        ["ringleader acp --runtime claude-code", "ringleader acp --runtime native"],
    )
    acp.add_argument("--runtime", required=True, help="runtime id (see `ringleader runtimes`)")
    acp.add_argument(
        "--model", default=None, help="model for every prompt; e.g. --model anthropic:claude-x"
    )
    _approvals_option(acp, "wait", ", the ACP client (session/request_permission)")

    approvals = _sub(
        sub,
        "approvals",
        "list the tool calls waiting for a person's approval",
        "List the pending approvals of the state directory: runs started with --approvals wait, "
        "by `ringleader serve` or `ringleader acp --approvals wait`, in any process. A run "
        "whose process is gone resumes when its approval is decided (`ringleader approve`).",
        ["ringleader approvals", "ringleader approvals --json | jq .id"],
    )
    _json_option(approvals, "the pending approvals")

    approve = _sub(
        sub,
        "approve",
        "allow or deny a tool call waiting for approval (resumes its run if need be)",
        "Decide a pending approval (see `ringleader approvals`): --allow runs the call (with "
        "--edit, on that input instead), --deny skips it and the model sees --message (or "
        "'Tool approval was rejected.'). The run waiting on it goes on in its process; if that "
        "process is gone, the run resumes here from its session and runs to its end.",
        [
            "ringleader approve ap-1a2b3c4d5e6f --allow",
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
    _json_option(approve, "the resumed run's events")
    _config_option(approve)
    return parser


def _approvals_option(
    parser: argparse.ArgumentParser, default: str = "deny", also: str = ""
) -> None:
    parser.add_argument(
        "--approvals",
        choices=("deny", "wait"),
        default=default,
        help="a tool call that needs approval (the native runtime's bash, by default) is denied "
        f"(fail-closed) or waits for `ringleader approve`{also} or the board, durably: the "
        f"run resumes even if this process is gone (default: {default}); e.g. --approvals wait",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _port_number(text: str) -> int:
    from orchestrator.core.listen import port_number

    return port_number(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive number")
    return value


def _model_server_command(args_list: list[str]) -> int:
    from orchestrator.model_server import main as serve_main

    return int(serve_main(args_list))


def _dispatch(args: argparse.Namespace, out: TextIO) -> int:
    if args.command == "demo":
        return trio.run(_demo, args.runtime, bool(args.json), out)
    if args.command == "runtimes":
        if args.ray:
            return _ray_runtimes(args.ray, bool(args.json), out)
        return trio.run(_runtimes, args.config_file, out)
    if args.command == "config":
        return _config(args.config_file, bool(args.json), out)
    if args.command == "replay":
        from orchestrator.cli.commands import list_runs, replay

        if args.list:
            return trio.run(lambda: list_runs(as_json=bool(args.json), out=out))
        return trio.run(lambda: replay(args.run_key, as_json=bool(args.json), out=out))
    if args.command == "recover":
        return trio.run(_recover, args.config_file, bool(args.json), out)
    if args.command == "serve":
        return trio.run(_serve, args, out)
    if args.command == "acp":
        return trio.run(
            _acp,
            args.runtime,
            args.model,
            getattr(args, "config_file", None),
            args.approvals == "wait",
        )
    if args.command == "approvals":
        from orchestrator.cli.approvals import list_approvals
        from orchestrator.cli.commands import usable_state_dir

        return trio.run(lambda: list_approvals(usable_state_dir(), as_json=args.json, out=out))
    if args.command == "approve":
        return trio.run(_approve, args, out)
    if args.command == "doctor":
        from orchestrator.cli.doctor import doctor

        specs = discover_runtimes()
        loaded = _load_config(args.config_file, specs)
        return trio.run(lambda: doctor(specs, loaded, as_json=bool(args.json), out=out))
    if args.command == "batch":
        from orchestrator.cli.commands import batch

        specs = discover_runtimes()
        loaded = _load_config(args.config_file, specs)
        registry = _registry(specs, loaded)
        governance = _governance(args, loaded)
        with contextlib.ExitStack() as stack:
            sinks = _trace_sinks(args, stack)
            return trio.run(
                lambda: batch(
                    registry,
                    args.file,
                    jobs=args.jobs,
                    as_json=bool(args.json),
                    out=out,
                    make_host=_host_maker(args.ray, loaded, []),
                    governance=governance,
                    sinks=sinks,
                )
            )
    if args.command == "run":
        from orchestrator.cli.commands import check_prompt

        prompt, script = _prompt_and_script(args)
        return trio.run(_cmd_run, args, check_prompt(prompt), script, out)
    raise ConfigError(f"unknown command {args.command!r}")


def _failure(exc: BaseException, args: argparse.Namespace | None) -> int | None:
    """The exit code for an operator mistake or an interrupt (its one line printed), else None."""
    found = exception_leaves(exc)
    if all(isinstance(e, BrokenPipeError) for e in found):
        return 0
    if all(isinstance(e, KeyboardInterrupt | trio.Cancelled) for e in found):
        return 130
    from orchestrator.core.listen import bind_error

    port = getattr(args, "port", None)
    if isinstance(port, int):
        line = bind_error(exc, getattr(args, "host", "127.0.0.1"), port)
        if line is not None:
            print(f"ringleader: {line}", file=sys.stderr)
            return 2
    for leaf in found:
        if isinstance(leaf, RuntimeNotFoundError):
            hint = f"\n  install it with: {leaf.install_hint}" if leaf.install_hint else ""
            print(f"ringleader: {leaf}{hint}", file=sys.stderr)
            return 3
    for leaf in found:
        if isinstance(leaf, RingleaderError):
            print(f"ringleader: {' '.join(str(leaf).split())}", file=sys.stderr)
            return 2
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """The ``ringleader`` command. Operator mistakes print one line (exit 2, or 3 for a runtime
    that is not installed); anything else prints one line and leaves its traceback in a file in
    the state directory (exit 1)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    args: argparse.Namespace | None = None
    try:
        if args_list[:1] == ["model-server"]:
            return _model_server_command(args_list[1:])
        args = _parser().parse_args(args_list)
        return _dispatch(args, sys.stdout)
    except SystemExit:
        raise
    except BaseException as exc:
        code = _failure(exc, args)
        if code is None:
            from orchestrator.cli.commands import crash_report

            print(crash_report(exc), file=sys.stderr)
            return 1
        return code


if __name__ == "__main__":
    raise SystemExit(main())
