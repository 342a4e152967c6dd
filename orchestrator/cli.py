"""The ``ringleader`` command. Thin: parsing and rendering only; the library never imports it."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import itertools
import json
import os
import signal
import sys
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import attrs
import trio

from .actor import RunActor
from .config import LoadedConfig, RuntimeConfig, load_config
from .errors import ConfigError, RingleaderError, RuntimeNotFoundError, exception_leaves
from .eventlog import EventLog
from .events import RuntimeEvent, event_to_json
from .feed import Feed, RecordingSink, serve_feed
from .integration import resolve_runtime_integration
from .registry import ModelServerHook, RuntimeRegistry, RuntimeSpec, discover_runtimes
from .runner import Runner, TaskOutcome, TaskSpec, default_state_dir
from .supervisor import RetryNotice

__all__ = ["main"]

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class TerminalRenderer:
    """Live rendering of events for a person at a terminal (or JSON Lines with ``as_json``)."""

    def __init__(self, out: TextIO, *, as_json: bool = False, spinner: bool = False) -> None:
        self._out = out
        self._json = as_json
        self._in_text = False
        self._spinner = spinner and not as_json
        self._spinning = False
        self.last_event_at = 0.0

    def _clear_spinner(self) -> None:
        if self._spinning:
            self._out.write("\r\x1b[K")
            self._spinning = False

    def spin(self, frame: str) -> None:
        if self._spinner and not self._in_text:
            self._out.write(f"\r{frame} waiting…")
            self._out.flush()
            self._spinning = True

    def _line(self, text: str) -> None:
        self._clear_spinner()
        if self._in_text:
            self._out.write("\n")
            self._in_text = False
        self._out.write(text + "\n")

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        for event in events:
            self.render(event)
        self.last_event_at = trio.current_time()
        await trio.lowlevel.checkpoint()

    def render(self, event: RuntimeEvent) -> None:
        if self._json:
            self._out.write(event_to_json(event) + "\n")
            self._out.flush()
            return
        match event.kind:
            case "text-delta":
                if event.channel == "reasoning":
                    self._line(f"  (thinking) {_short(event.text)}")
                else:
                    self._clear_spinner()
                    self._out.write(event.text)
                    self._in_text = True
            case "tool-call":
                self._line(f"→ {event.name} {_short(event.input)}")
            case "tool-result":
                mark = "✗" if event.is_error else "✓"
                self._line(f"{mark} {event.name}: {_short(event.output)}")
            case "status":
                detail = f" ({event.detail})" if event.detail else ""
                model = f" model={event.model}" if event.model else ""
                self._line(f"· {event.phase}{model}{detail}")
            case "cost":
                usd = "unknown" if event.cost_usd is None else f"${event.cost_usd:.4f}"
                self._line(
                    f"· tokens in={event.usage.input_tokens} out={event.usage.output_tokens}"
                    f" cost={usd}{' (estimated)' if event.estimated else ''}"
                )
            case "done":
                self._line(f"■ done: {event.reason}")
            case "error":
                self._line(f"! error{f' [{event.code}]' if event.code else ''}: {event.message}")
        self._out.flush()


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
    # the model server is the test kit's; imported lazily so the library never depends on it
    model_server = importlib.import_module("contract.model_server")
    source: Any = _default_script(hook)
    if script:
        try:
            source = model_server.load_script(script)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{script}: not a model server script: {_one_line(exc)}") from None
    os.environ[MODEL_SERVER_KEY_ENV] = "ringleader-model-server-placeholder"
    async with model_server.serve_model_server(source) as server:
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


def _state_dir() -> Path:
    return default_state_dir()


FORCE_WINDOW_S = 2.0
"""A second Ctrl-C within this many seconds of the first forces the exit."""

RESUME_PROMPT = "Continue where you left off."


@attrs.define
class _Interrupt:
    """Ctrl-C during a run: the first aborts it cleanly (``done{aborted}`` in the log, the child
    gone), a second within :data:`FORCE_WINDOW_S` forces."""

    actors: list[RunActor] = attrs.field(factory=list[RunActor])
    requested: bool = False
    forced: bool = False

    def on_actor(self, actor: RunActor) -> None:
        self.actors.append(actor)
        if self.requested:
            self._abort(actor)

    def abort(self) -> None:
        self.requested = True
        for actor in self.actors:
            self._abort(actor)

    @staticmethod
    def _abort(actor: RunActor) -> None:
        with contextlib.suppress(RingleaderError):  # already finished
            actor.abort()

    async def watch(self, signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
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


async def _run_task(
    registry: RuntimeRegistry,
    runtime_id: str,
    prompt: str,
    *,
    model: str | None,
    as_json: bool,
    out: TextIO,
    resume: str | None = None,
) -> tuple[TaskOutcome, bool]:
    """Run (or resume) one task with live rendering; ``(outcome, interrupted by Ctrl-C)``."""
    renderer = TerminalRenderer(out, as_json=as_json, spinner=out.isatty())
    state = _state_dir()
    interrupt = _Interrupt()
    outcomes: list[TaskOutcome] = []
    async with EventLog.open(state / "events.db") as log:
        runner = Runner(
            registry,
            sink=RecordingSink(log, extra=[renderer]),
            state_dir=state,
            event_log=log,
            on_actor=interrupt.on_actor,
            on_retry=_print_retry,
        )
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(interrupt.watch, signals, nursery.cancel_scope)

                async def spin() -> None:
                    for frame in itertools.cycle(SPINNER):
                        await trio.sleep(0.1)
                        if trio.current_time() - renderer.last_event_at > 0.3:
                            renderer.spin(frame)

                if out.isatty() and not as_json:
                    nursery.start_soon(spin)
                if resume is not None:
                    outcome = await runner.resume_task(resume, prompt, agent_id="cli", model=model)
                else:
                    task = TaskSpec(
                        task_id=uuid.uuid4().hex[:8],
                        title=prompt,
                        model=model,
                        cwd=os.getcwd(),
                        agent_id="cli",
                    )
                    outcome = await runner.run_task(runtime_id, task)
                outcomes.append(outcome)
                nursery.cancel_scope.cancel()
    if not outcomes:  # forced: the run was cancelled where it stood
        raise KeyboardInterrupt
    return outcomes[0], interrupt.requested


async def _find_resumable(key: str) -> tuple[str, str]:
    """``(run key, runtime id)`` of the run to resume (``last``: the newest resumable one)."""
    async with EventLog.open(_state_dir() / "events.db") as log:
        if key == "last":
            for run in reversed(await log.runs()):
                session = await log.get_session(run.run_key)
                if session is not None and (session.codec_blob or session.native_session_id):
                    return run.run_key, session.runtime_id
            raise ConfigError("the event log has no resumable run yet")
        session = await log.get_session(key)
    if session is None or not (session.codec_blob or session.native_session_id):
        raise ConfigError(
            f"run {key!r} recorded no resumable session (see `ringleader replay --list`)"
        )
    return key, session.runtime_id


async def _replay(run_key: str, as_json: bool, out: TextIO) -> int:
    async with EventLog.open(_state_dir() / "events.db") as log:
        if run_key == "last":
            runs = await log.runs()
            if not runs:
                raise ConfigError("the event log has no runs yet")
            run_key = runs[-1].run_key
        events = await log.read(run_key)
    if not events:
        raise ConfigError(f"no events for run {run_key!r} (see `ringleader replay --list`)")
    renderer = TerminalRenderer(out, as_json=as_json)
    for event in events:
        renderer.render(event)
    return 0


async def _list_runs(out: TextIO) -> int:
    async with EventLog.open(_state_dir() / "events.db") as log:
        for run in await log.runs():
            out.write(f"{run.run_key}  {run.runtime_id}  {run.status}\n")
    return 0


async def _serve(host: str, port: int, token: str | None, out: TextIO) -> int:
    feed = Feed()
    async with (
        EventLog.open(_state_dir() / "events.db") as log,
        serve_feed(feed, log, host=host, port=port, token=token) as served,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(_tail_log, log, feed)
        out.write(f"{served.url}/events\n")
        out.flush()
        await trio.sleep_forever()
    return 0


async def _tail_log(log: EventLog, feed: Feed, interval_s: float = 0.2) -> None:
    """Publish what other processes append to the log (``ringleader serve`` runs apart)."""
    cursor = await log.last_gid()
    while True:
        batch = await log.read_since(cursor)
        if batch:
            cursor = batch[-1].gid
            await feed.publish(batch)
        else:
            await trio.sleep(interval_s)


def _print_outcome(outcome: TaskOutcome, out: TextIO) -> None:
    usd = "unknown" if outcome.cost_usd is None else f"${outcome.cost_usd:.4f}"
    if not outcome.cost_complete and outcome.cost_usd is not None:
        usd += " (lower bound)"
    rotated = f", {outcome.rotations} rotation(s)" if outcome.rotations else ""
    out.write(
        f"\n{outcome.status}: tokens in={outcome.usage.input_tokens} "
        f"out={outcome.usage.output_tokens}, cost {usd}{rotated}\n"
    )


DEMO_PROMPT = "List the files in the workspace, then summarize."


async def _demo(as_json: bool, out: TextIO) -> int:
    """``run --runtime native --model-server <demo script>``: the native runtime runs one tool
    turn (``list_files`` on the working directory) against the built-in scripted model server on
    127.0.0.1, speaking the Anthropic Messages API."""
    specs = discover_runtimes()
    config = _load_config(None, specs)
    spec = _spec(specs, "native")
    model_server = importlib.import_module("contract.model_server")
    script = Path(str(model_server.__file__)).parent / "scripts" / "demo.json"
    async with _model_server(spec, config, str(script)) as served:
        outcome, interrupted = await _run_task(
            _registry(specs, served), "native", DEMO_PROMPT, model=None, as_json=as_json, out=out
        )
    if not as_json:
        _print_outcome(outcome, out)
    if interrupted:
        return 130
    return 0 if outcome.status == "success" else 1


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
        help="config file (wins over ./ringleader.toml and the user config)",
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
    return prompt, script


async def _cmd_run(args: argparse.Namespace, prompt: str, script: str | None, out: TextIO) -> int:
    specs = discover_runtimes()
    config = _load_config(args.config_file, specs)
    runtime_id: str | None = args.runtime
    resume: str | None = None
    if args.resume:
        resume, resumed_runtime = await _find_resumable(args.resume)
        if runtime_id is not None and runtime_id != resumed_runtime:
            raise ConfigError(
                f"run {resume!r} ran on {resumed_runtime!r}; it cannot resume on {runtime_id!r}"
            )
        runtime_id = resumed_runtime
    assert runtime_id is not None  # checked with the arguments
    spec = _spec(specs, runtime_id)
    async with AsyncExitStack() as stack:
        if script is not None:
            config = await stack.enter_async_context(_model_server(spec, config, script or None))
        outcome, interrupted = await _run_task(
            _registry(specs, config),
            spec.id,
            prompt,
            model=args.model,
            as_json=bool(args.json),
            out=out,
            resume=resume,
        )
    if not args.json:
        if resume is not None:
            out.write(f"\n(resumed {resume})")
        _print_outcome(outcome, out)
    if interrupted:
        return 130
    return 0 if outcome.status == "success" else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ringleader", description="Run heterogeneous coding agents side by side."
    )
    parser.add_argument(
        "--config",
        dest="config_file",
        default=None,
        metavar="FILE",
        help="config file (wins over ./ringleader.toml and the user config)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the built-in demo (no keys, nothing leaves 127.0.0.1)")
    demo.add_argument("--json", action="store_true", help="print events as JSON Lines")
    run = sub.add_parser("run", help="run a prompt on one runtime")
    run.add_argument("--runtime", default=None, help="runtime id (see `ringleader runtimes`)")
    run.add_argument(
        "--resume",
        metavar="RUN_KEY|last",
        default=None,
        help="continue a recorded run's session on its runtime, from its working directory "
        f"(PROMPT defaults to {RESUME_PROMPT!r})",
    )
    run.add_argument("--model", default=None, help="model override for this run")
    run.add_argument("--json", action="store_true", help="print events as JSON Lines")
    run.add_argument(
        "--model-server",
        nargs="?",
        const="",
        default=None,
        metavar="SCRIPT",
        help="start the built-in scripted model server on 127.0.0.1 and point the runtime at it "
        "(no keys needed); SCRIPT is a .json/.toml script, else a built-in one (a tool turn, "
        "then a text answer)",
    )
    _config_option(run)
    run.add_argument("prompt", nargs="?", default=None, help="the instruction")
    runtimes = sub.add_parser(
        "runtimes", help="list runtimes: installed, health, capabilities, plan"
    )
    _config_option(runtimes)
    config = sub.add_parser(
        "config", help="print the effective configuration (secrets redacted) and its sources"
    )
    config.add_argument("--json", action="store_true", help="print it as JSON")
    _config_option(config)
    replay = sub.add_parser("replay", help="replay a run from the event log")
    replay.add_argument("run_key", nargs="?", default="last", help="run key, or `last`")
    replay.add_argument("--json", action="store_true", help="print events as JSON Lines")
    replay.add_argument("--list", action="store_true", help="list the runs in the log")
    serve = sub.add_parser("serve", help="serve the board feed (SSE) over the event log")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (loopback by default)")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument(
        "--token", default=os.environ.get("RINGLEADER_FEED_TOKEN"), help="required off loopback"
    )
    sub.add_parser(
        "model-server", help="serve the scripted model server on 127.0.0.1", add_help=False
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["model-server"]:
        # contract/ is the test kit; imported lazily so the library never depends on it
        model_server = importlib.import_module("contract.model_server")
        return int(model_server.main(args_list[1:]))
    args = _parser().parse_args(args_list)
    out = sys.stdout
    try:
        if args.command == "demo":
            return trio.run(_demo, bool(args.json), out)
        if args.command == "runtimes":
            return trio.run(_runtimes, args.config_file, out)
        if args.command == "replay":
            if args.list:
                return trio.run(_list_runs, out)
            return trio.run(_replay, args.run_key, bool(args.json), out)
        if args.command == "serve":
            return trio.run(_serve, args.host, args.port, args.token, out)
        if args.command == "config":
            return _config(args.config_file, bool(args.json), out)
        if args.command == "run":
            prompt, script = _prompt_and_script(args)
            return trio.run(_cmd_run, args, prompt, script, out)
    except BaseExceptionGroup as group:
        found = exception_leaves(group)
        if all(isinstance(e, BrokenPipeError) for e in found):
            return 0
        if all(isinstance(e, KeyboardInterrupt) for e in found):
            return 130
        first = found[0]
        if isinstance(first, RingleaderError):
            print(f"ringleader: {first}", file=sys.stderr)
            return 2
        raise
    except BrokenPipeError:
        return 0
    except RuntimeNotFoundError as exc:
        hint = f"\n  install it with: {exc.install_hint}" if exc.install_hint else ""
        print(f"ringleader: {exc}{hint}", file=sys.stderr)
        return 3
    except RingleaderError as exc:
        print(f"ringleader: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
