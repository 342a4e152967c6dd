"""The ``ringleader`` command. Thin: parsing and rendering only; the library never imports it."""

from __future__ import annotations

import argparse
import importlib
import itertools
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import trio

from .acp_server import serve_acp_stdio
from .errors import ConfigError, RingleaderError, RuntimeNotFoundError, exception_leaves
from .eventlog import EventLog
from .events import RuntimeEvent, event_to_json
from .feed import Feed, RecordingSink, serve_feed
from .integration import resolve_runtime_integration
from .registry import RuntimeRegistry
from .runner import Runner, TaskOutcome, TaskSpec, default_state_dir

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


def builtin_registry() -> RuntimeRegistry:
    adapters = importlib.import_module("adapters.builtin")
    registry: RuntimeRegistry = adapters.builtin_registry()
    return registry


def _state_dir() -> Path:
    return default_state_dir()


async def _run_task(
    registry: RuntimeRegistry,
    runtime_id: str,
    prompt: str,
    *,
    model: str | None,
    as_json: bool,
    out: TextIO,
) -> TaskOutcome:
    renderer = TerminalRenderer(out, as_json=as_json, spinner=out.isatty())
    state = _state_dir()
    async with EventLog.open(state / "events.db") as log:
        runner = Runner(
            registry,
            sink=RecordingSink(log, extra=[renderer]),
            state_dir=state,
            event_log=log,
        )
        task = TaskSpec(
            task_id=uuid.uuid4().hex[:8], title=prompt, model=model, cwd=os.getcwd(), agent_id="cli"
        )
        async with trio.open_nursery() as nursery:

            async def spin() -> None:
                for frame in itertools.cycle(SPINNER):
                    await trio.sleep(0.1)
                    if trio.current_time() - renderer.last_event_at > 0.3:
                        renderer.spin(frame)

            if out.isatty() and not as_json:
                nursery.start_soon(spin)
            outcome = await runner.run_task(runtime_id, task)
            nursery.cancel_scope.cancel()
    return outcome


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


async def _acp(runtime_id: str, model: str | None) -> int:
    registry = builtin_registry()
    if runtime_id not in registry:
        raise ConfigError(f"unknown runtime {runtime_id!r}; known: {', '.join(registry.ids())}")
    async with EventLog.open(_state_dir() / "events.db") as log:
        await serve_acp_stdio(registry, runtime_id, event_log=log, model=model)
    return 0


def _print_outcome(outcome: TaskOutcome, out: TextIO) -> None:
    usd = "unknown" if outcome.cost_usd is None else f"${outcome.cost_usd:.4f}"
    if not outcome.cost_complete and outcome.cost_usd is not None:
        usd += " (lower bound)"
    rotated = f", {outcome.rotations} rotation(s)" if outcome.rotations else ""
    out.write(
        f"\n{outcome.status}: tokens in={outcome.usage.input_tokens} "
        f"out={outcome.usage.output_tokens}, cost {usd}{rotated}\n"
    )


async def _demo(as_json: bool, out: TextIO) -> int:
    """The native runtime runs one tool turn (``list_files`` on the working directory) against
    the built-in scripted model server on 127.0.0.1, speaking the Anthropic Messages API."""
    # the demo borrows the test kit's model server; the library itself never imports contract/
    model_server = importlib.import_module("contract.model_server")
    native_demo = importlib.import_module("adapters.native.demo")
    script = Path(str(model_server.__file__)).parent / "scripts" / "demo.json"
    async with model_server.serve_model_server(script) as server:
        registry = RuntimeRegistry()
        registry.register_factory(
            "native", lambda: native_demo.demo_adapter(server.url, root=os.getcwd())
        )
        outcome = await _run_task(
            registry, "native", native_demo.DEMO_PROMPT, model=None, as_json=as_json, out=out
        )
    if not as_json:
        _print_outcome(outcome, out)
    return 0 if outcome.status == "success" else 1


async def _runtimes(out: TextIO) -> int:
    registry = builtin_registry()
    rows: list[tuple[str, ...]] = [
        ("runtime", "health", "streaming", "steerable", "resume", "context", "home")
    ]
    for runtime_id in registry.ids():
        adapter = registry.create(runtime_id)
        caps = adapter.capabilities()
        health = await adapter.health()
        plan = resolve_runtime_integration(caps)
        status = "ok" if health.ok else f"no: {_short(health.message or '', 60)}"
        rows.append(
            (
                runtime_id,
                status,
                _yes(caps.streaming),
                _yes(caps.steerable),
                _yes(caps.resume),
                str(caps.context_window_tokens or "-"),
                plan.home.kind,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
        )
    return 0


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ringleader", description="Run heterogeneous coding agents side by side."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the built-in demo (no keys, nothing leaves 127.0.0.1)")
    demo.add_argument("--json", action="store_true", help="print events as JSON Lines")
    run = sub.add_parser("run", help="run a prompt on one runtime")
    run.add_argument("--runtime", required=True, help="runtime id (see `ringleader runtimes`)")
    run.add_argument("--model", default=None, help="model override for this run")
    run.add_argument("--json", action="store_true", help="print events as JSON Lines")
    run.add_argument("prompt", help="the instruction")
    sub.add_parser("runtimes", help="list runtimes: installed, health, capabilities, plan")
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
    acp = sub.add_parser(
        "acp",
        help="serve a runtime as an Agent Client Protocol agent on stdin/stdout",
        description="Serve a ringleader runtime as an ACP agent over stdio, for editors that "
        "speak ACP (Zed and others). Runs are recorded in the event log. "
        "Example: ringleader acp --runtime claude-code",
    )
    acp.add_argument("--runtime", required=True, help="runtime id (see `ringleader runtimes`)")
    acp.add_argument("--model", default=None, help="model for every prompt (provider:model)")
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
            return trio.run(_runtimes, out)
        if args.command == "replay":
            if args.list:
                return trio.run(_list_runs, out)
            return trio.run(_replay, args.run_key, bool(args.json), out)
        if args.command == "serve":
            return trio.run(_serve, args.host, args.port, args.token, out)
        if args.command == "acp":
            return trio.run(_acp, args.runtime, args.model)
        if args.command == "run":
            registry = builtin_registry()
            if args.runtime not in registry:
                raise ConfigError(
                    f"unknown runtime {args.runtime!r}; known: {', '.join(registry.ids())}"
                )
            outcome = trio.run(
                lambda: _run_task(
                    registry,
                    args.runtime,
                    args.prompt,
                    model=args.model,
                    as_json=args.json,
                    out=out,
                )
            )
            if not args.json:
                _print_outcome(outcome, out)
            return 0 if outcome.status == "success" else 1
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
