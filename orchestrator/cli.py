"""The ``ringleader`` command. Thin: parsing and rendering only; the library never imports it."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import trio

from ._commands import (
    batch,
    bind_error,
    check_prompt,
    crash_report,
    list_runs,
    port_number,
    replay,
    run_side_by_side,
    serve_banner,
    usable_state_dir,
)
from .errors import ConfigError, RingleaderError, RuntimeNotFoundError, exception_leaves
from .eventlog import EventLog
from .feed import Feed, serve_feed
from .integration import resolve_runtime_integration
from .registry import RuntimeRegistry
from .runner import TaskOutcome

__all__ = ["main"]


def builtin_registry() -> RuntimeRegistry:
    adapters = importlib.import_module("adapters.builtin")
    registry: RuntimeRegistry = adapters.builtin_registry()
    return registry


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _run_task(
    registry: RuntimeRegistry,
    runtime_id: str,
    prompt: str,
    *,
    model: str | None,
    as_json: bool,
    out: TextIO,
) -> TaskOutcome:
    """One task on one runtime, in the working directory, drawn by the live view."""
    (result,) = await run_side_by_side(
        registry, [runtime_id], check_prompt(prompt), model=model, as_json=as_json, out=out
    )
    assert result.outcome is not None  # a failure to run raises instead
    return result.outcome


async def _serve(host: str, port: int, token: str | None, out: TextIO) -> int:
    state = usable_state_dir()
    feed = Feed()
    async with (
        EventLog.open(state / "events.db") as log,
        serve_feed(feed, log, host=host, port=port, token=token) as served,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(_tail_log, log, feed)
        out.write(serve_banner(served.url, token=bool(token)) + "\n")
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


async def _demo(as_json: bool, out: TextIO) -> int:
    """The native runtime runs one tool turn (``list_files`` on the working directory) against
    the built-in scripted model server on 127.0.0.1, speaking the Anthropic Messages API."""
    # contract.model_server needs no test dependencies (contract/__init__ imports its suite lazily)
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
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = _sub(
        sub,
        "demo",
        "run the built-in demo (no keys, nothing leaves 127.0.0.1)",
        "Run the demo task against ringleader's scripted model server on 127.0.0.1: no real "
        "model, no keys, no spend. Costs are list-price estimates, marked 'est.'.",
        ["ringleader demo", "ringleader demo --json"],
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
        ],
    )
    run.add_argument(
        "--runtime",
        action="append",
        required=True,
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
    run.add_argument("prompt", help="the instruction; e.g. 'add a test for parse()'")

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

    runtimes = _sub(
        sub,
        "runtimes",
        "list runtimes: installed, health, capabilities, plan",
        "List every runtime ringleader knows, whether it is installed and healthy, and what it "
        "can do (streaming, steering, resume, context window, home).",
        ["ringleader runtimes"],
    )
    del runtimes

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

    serve = _sub(
        sub,
        "serve",
        "serve the board feed (SSE) over the event log",
        "Serve the event log to boards: /events (Server-Sent Events, resumable), /runs (JSON), "
        "/runs/KEY (JSON Lines). Loopback by default; any other address needs a token.",
        [
            "ringleader serve",
            "ringleader serve --port 0",
            "RINGLEADER_FEED_TOKEN=… ringleader serve --host 0.0.0.0",
        ],
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="bind address (loopback by default; others need a token); e.g. --host ::1",
    )
    serve.add_argument(
        "--port",
        type=port_number,
        default=8765,
        help="TCP port, 0 for a free one (printed); default 8765; e.g. --port 0",
    )
    serve.add_argument(
        "--token",
        default=os.environ.get("RINGLEADER_FEED_TOKEN"),
        help="bearer token clients must send; required off loopback (default: "
        '$RINGLEADER_FEED_TOKEN); e.g. --token "$(cat token.txt)"',
    )

    _sub(
        sub,
        "model-server",
        "serve the scripted model server on 127.0.0.1",
        "Serve the scripted model server (Anthropic Messages, OpenAI Responses and Chat "
        "Completions) on 127.0.0.1; a JSON or TOML script decides the answers. Prints its URL.",
        ["ringleader model-server --script script.json --port 0"],
    )
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _model_server(args_list: list[str]) -> int:
    # contract.model_server needs no test dependencies (contract/__init__ imports its suite lazily)
    model_server = importlib.import_module("contract.model_server")
    return int(model_server.main(args_list))


def _dispatch(args: argparse.Namespace, out: TextIO) -> int:
    if args.command == "demo":
        return trio.run(_demo, bool(args.json), out)
    if args.command == "runtimes":
        return trio.run(_runtimes, out)
    if args.command == "replay":
        if args.list:
            return trio.run(lambda: list_runs(as_json=bool(args.json), out=out))
        return trio.run(lambda: replay(args.run_key, as_json=bool(args.json), out=out))
    if args.command == "serve":
        return trio.run(_serve, args.host, args.port, args.token, out)
    if args.command == "batch":
        registry = builtin_registry()
        return trio.run(
            lambda: batch(registry, args.file, jobs=args.jobs, as_json=bool(args.json), out=out)
        )
    if args.command == "run":
        registry = builtin_registry()
        for runtime_id in args.runtime:
            if runtime_id not in registry:
                raise ConfigError(
                    f"unknown runtime {runtime_id!r}; known: {', '.join(registry.ids())}"
                )
        prompt = check_prompt(args.prompt)
        results = trio.run(
            lambda: run_side_by_side(
                registry, args.runtime, prompt, model=args.model, as_json=args.json, out=out
            )
        )
        return 0 if all(r.ok for r in results) else 1
    raise ConfigError(f"unknown command {args.command!r}")


def _failure(exc: BaseException, args: argparse.Namespace | None) -> int | None:
    """The exit code for an operator mistake or an interrupt (its one line printed), else None."""
    found = exception_leaves(exc)
    if all(isinstance(e, BrokenPipeError) for e in found):
        return 0
    if all(isinstance(e, KeyboardInterrupt | trio.Cancelled) for e in found):
        return 130
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
            return _model_server(args_list[1:])
        args = _parser().parse_args(args_list)
        return _dispatch(args, sys.stdout)
    except SystemExit:
        raise
    except BaseException as exc:
        code = _failure(exc, args)
        if code is None:
            print(crash_report(exc), file=sys.stderr)
            return 1
        return code


if __name__ == "__main__":
    raise SystemExit(main())
