"""What the commands share: the configuration and registry of a command, the shared options
(--config, --json, budgets, --ray, --approvals), --model-server, Ctrl-C during runs, tables."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO, TypeVar

import attrs
import trio

from orchestrator.core.config import LoadedConfig, load_config
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import (
    ModelServerHook,
    RuntimeRegistry,
    RuntimeSpec,
)

if TYPE_CHECKING:
    from orchestrator.core.sandbox import SandboxPolicy
    from orchestrator.engine.governance import Governance
    from orchestrator.engine.hosts import Host
    from orchestrator.engine.runner import Runner
    from orchestrator.engine.supervisor import RetryNotice

__all__ = [
    "FORCE_WINDOW_S",
    "MODEL_SERVER_KEY_ENV",
    "RAW",
    "Interrupt",
    "approvals_option",
    "asking",
    "budget_options",
    "check_runtime_tables",
    "config_option",
    "default_script",
    "governance_for",
    "host_maker",
    "json_option",
    "load_cli_config",
    "model_server",
    "model_server_option",
    "model_server_targets",
    "model_servers",
    "notify_sinks",
    "one_line",
    "percent",
    "port_arg",
    "positive",
    "positive_float",
    "print_retry",
    "ray_option",
    "registry_for",
    "sandbox_for",
    "short",
    "spec_named",
    "sub_command",
    "table",
    "trace_sinks",
]


def short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


MODEL_SERVER_KEY_ENV = "RINGLEADER_MODEL_SERVER_KEY"
"""The variable ``--model-server`` names as the runtime's key (a placeholder; the server takes
any key)."""


def load_cli_config(config_file: str | None, specs: Sequence[RuntimeSpec]) -> LoadedConfig:
    """The configuration; what an untrusted project file could not set is said on stderr, one
    line per key. A ``[runtimes.ID]`` table must name a known runtime and set only what it uses
    (:func:`check_runtime_tables`)."""
    loaded = load_config(config_file, runtime_ids=[spec.id for spec in specs])
    for line in loaded.ignored:
        print(f"ringleader: {line}", file=sys.stderr)
    check_runtime_tables(loaded, specs)
    return loaded


def check_runtime_tables(loaded: LoadedConfig, specs: Sequence[RuntimeSpec]) -> None:
    """A ``[runtimes.ID]`` table must name a known runtime (a typo gets a did-you-mean), and
    set only what that runtime uses.

    Raises:
        ConfigError: one line naming the file, the key and the problem.
    """
    import difflib

    from orchestrator.core.registry import RUN_SETTINGS

    by_id = {spec.id: spec for spec in specs}
    for runtime_id in loaded.config.runtimes:
        prefix = f"runtimes.{runtime_id}."
        keys = sorted(k for k in loaded.sources if k.startswith(prefix))
        where = loaded.sources[keys[0]] if keys else "the configuration"
        spec = by_id.get(runtime_id)
        if spec is None:
            close = difflib.get_close_matches(
                runtime_id.replace("_", "-"), list(by_id), n=1, cutoff=0.6
            )
            hint = f"; did you mean [runtimes.{close[0]}]?" if close else ""
            raise ConfigError(
                f"{where}: [runtimes.{runtime_id}]: unknown runtime{hint} "
                f"(known: {', '.join(sorted(by_id))})"
            )
        if spec.settings is None:
            continue
        usable = spec.settings | RUN_SETTINGS
        for key in keys:
            field = key[len(prefix) :].split(".", 1)[0]
            if field not in usable:
                raise ConfigError(
                    f"{loaded.sources[key]}: runtimes.{runtime_id}.{field}: {runtime_id} cannot "
                    f"use {field} (it uses: {', '.join(sorted(usable))})"
                )


def registry_for(specs: Sequence[RuntimeSpec], config: LoadedConfig) -> RuntimeRegistry:
    """The runtimes, and each configured account as ``<runtime>@<name>``."""
    from orchestrator.engine.accounts import register_accounts

    registry = RuntimeRegistry.from_specs(specs, config.runtime)
    register_accounts(registry, specs, config.config)
    registry.sandbox = sandbox_for(config)
    return registry


def sandbox_for(config: LoadedConfig) -> SandboxPolicy | None:
    """``[sandbox] kind = "bubblewrap"``: the policy every run's children go through (the
    user's home and the state directory hidden); ``None`` when off, or (one line on stderr)
    when bubblewrap does not work here."""
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.core.sandbox import SandboxPolicy, bwrap_binary, home_of_user, probe

    wanted = config.config.sandbox
    if wanted.kind != "bubblewrap":
        return None
    why = probe()
    found = bwrap_binary()
    if why is not None or found is None:
        print(f"ringleader: sandbox off, runs are not confined: {why}", file=sys.stderr)
        return None

    def absolute(paths: Sequence[str]) -> tuple[str, ...]:
        return tuple(str(Path(p).expanduser().resolve()) for p in paths)

    return SandboxPolicy(
        writable=absolute(wanted.write),
        readable=absolute(wanted.read),
        hidden=(str(home_of_user()), str(usable_state_dir())),
        bwrap=found,
    )


_ASKING: Final = frozenset({"claude-code", "codex", "hermes", "acp", "openclaw"})
"""Runtimes whose CLI asks before acting, in a protocol ringleader answers."""


def asking(config: LoadedConfig, runtime_ids: Iterable[str], source: str) -> LoadedConfig:
    """``--approvals wait`` (``serve``, ``acp``): each runtime whose ``permission`` the
    configuration leaves unset asks (``permission = "ask"``), so its CLI's approval requests
    wait in the book. Only runtimes whose CLI asks are changed (the native runtime asks by its
    own policy); a set ``permission`` stays."""
    for runtime_id in runtime_ids:
        if runtime_id in _ASKING and config.config.runtime(runtime_id).permission is None:
            config = config.with_runtime(runtime_id, source, permission="ask")
    return config


def spec_named(specs: Sequence[RuntimeSpec], runtime_id: str) -> RuntimeSpec:
    for spec in specs:
        if spec.id == runtime_id:
            return spec
    raise ConfigError(
        f"unknown runtime {runtime_id!r}; known: {', '.join(s.id for s in specs) or 'none'}"
    )


def default_script(hook: ModelServerHook) -> dict[str, Any]:
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


def default_script_for(hook: ModelServerHook, runs: int) -> dict[str, Any]:
    """The built-in script for ``runs`` runs of one runtime (a batch's tasks): a conversation
    each (a run's session takes the next one no session has taken)."""
    one = default_script(hook)
    if runs <= 1:
        return one
    conversation = one["conversations"][0]
    copies = [conversation | {"name": f"default-{n}"} for n in range(1, runs + 1)]
    return one | {"conversations": copies}


@asynccontextmanager
async def model_server(
    spec: RuntimeSpec, config: LoadedConfig, script: str | None, *, runs: int = 1
) -> AsyncGenerator[LoadedConfig]:
    """Serve the scripted model server on 127.0.0.1 and point ``spec``'s runtime at it
    (``runs``: how many runs the built-in script answers)."""
    hook = spec.model_server
    if hook is None:
        raise ConfigError(f"runtime {spec.id!r} cannot be pointed at the model server")
    # imported when used: the other commands do not pay for Starlette and Hypercorn
    from orchestrator.model_server import load_script, serve_model_server

    source: Any = default_script_for(hook, runs)
    if script:
        try:
            source = load_script(script)
        except ConfigError:
            raise  # already one line naming the file and the problem
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{script}: not a model server script: {one_line(exc)}") from None
    os.environ[MODEL_SERVER_KEY_ENV] = "ringleader-model-server-placeholder"
    async with serve_model_server(source) as server:
        url = str(server.url) if hook.api in ("anthropic", "gemini") else str(server.base_url)
        values: dict[str, Any] = {
            "base_url": url,
            "api_key_env": MODEL_SERVER_KEY_ENV,
            "model": hook.model,
        }
        if hook.provider is not None:
            values["provider"] = hook.provider
        yield config.with_runtime(spec.id, f"--model-server ({url})", **values)


def model_server_option(parser: argparse.ArgumentParser, which: str) -> None:
    """``--model-server [SCRIPT]``, as ``run`` has it, for a command whose runs are ``which``."""
    parser.add_argument(
        "--model-server",
        nargs="?",
        const="",
        default=None,
        metavar="SCRIPT",
        help="start the built-in scripted model server on 127.0.0.1 (one per runtime) and point "
        f"{which} at it (no keys needed); SCRIPT is a .json/.toml script, else a built-in one; "
        "e.g. --model-server or --model-server script.json",
    )


def model_server_targets(specs: Sequence[RuntimeSpec], runtime_ids: Sequence[str]) -> list[str]:
    """The runtimes of ``runtime_ids`` (once each, in order) that ``--model-server`` points at
    a server: beside runtimes that take one, a runtime with no model-server hook that takes no
    ``base_url`` (the scripted runtime) is left as it is; alone, it is returned (and refused)."""

    def talks_to_no_model(runtime_id: str) -> bool:
        spec = next((s for s in specs if s.id == runtime_id), None)
        return (
            spec is not None
            and spec.model_server is None
            and spec.settings is not None
            and "base_url" not in spec.settings
        )

    named = list(dict.fromkeys(runtime_ids))
    return [r for r in named if not talks_to_no_model(r)] or named


async def model_servers(
    stack: Any,
    specs: Sequence[RuntimeSpec],
    config: LoadedConfig,
    runtime_ids: Sequence[str],
    script: str | None,
) -> LoadedConfig:
    """``--model-server``: one scripted model server per runtime of ``runtime_ids`` (entered on
    ``stack``, an ``AsyncExitStack``), each runtime pointed at its own; ``script`` ``None``: the
    configuration as it is, ``""``: the built-in script."""
    if script is None:
        return config
    if script and not await trio.Path(script).is_file():
        raise ConfigError(f"{script}: model server script not found")
    for runtime_id in model_server_targets(specs, runtime_ids):
        config = await stack.enter_async_context(
            model_server(
                spec_named(specs, runtime_id),
                config,
                script or None,
                runs=runtime_ids.count(runtime_id),
            )
        )
    return config


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def table(rows: Sequence[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
        )


def config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        dest="config_file",
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="config file (wins over ./ringleader.toml and the user config); "
        "e.g. --config team.toml",
    )


FORCE_WINDOW_S = 2.0
"""A second Ctrl-C within this many seconds of the first forces the exit."""


T = TypeVar("T")


@attrs.define
class Interrupt:
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
            host.abort_all()  # runs submitted later too: nothing starts after a Ctrl-C

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


def print_retry(notice: RetryNotice) -> None:
    print(f"ringleader: {notice}", file=sys.stderr, flush=True)


def governance_for(args: argparse.Namespace, config: LoadedConfig) -> Governance:
    """Budgets and breakers from ``[budget]``/``[breaker]``, the flags winning."""
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.governance import Governance

    return Governance.from_config(
        config.config,
        usd=args.budget_usd,
        tokens=args.budget_tokens,
        wall_s=args.max_wall,
        stall_s=getattr(args, "max_stall", None),
        allow_estimates=True if args.allow_estimates else None,
        state_dir=usable_state_dir(),  # breakers outlive the command
    )


async def notify_sinks(config: LoadedConfig, stack: Any, *, title: str = "") -> list[Any]:
    """``[notify]`` with URLs: a :class:`~orchestrator.engine.notify.Notifier` running until
    ``stack`` (an async exit stack) closes; none without URLs."""
    if not config.config.notify.urls:
        return []
    from orchestrator.engine.notify import Notifier

    notifier = Notifier(config.config.notify, default_title=title)
    return [await stack.enter_async_context(notifier.running())]


def trace_sinks(args: argparse.Namespace, stack: Any) -> list[Any]:
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
    try:  # private like the log (0600): spans carry run details
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        handle = os.fdopen(fd, "w", encoding="utf-8")
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


def budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget-usd",
        type=positive_float,
        default=None,
        metavar="USD",
        help="stop a task once it has spent this much (runtime-reported USD, or list-price "
        "estimates with --allow-estimates); the run ends error{budget_exceeded}; "
        "e.g. --budget-usd 0.50",
    )
    parser.add_argument(
        "--budget-tokens",
        type=positive,
        default=None,
        metavar="N",
        help="stop a task once it has used N tokens (input + output); e.g. --budget-tokens 200000",
    )
    parser.add_argument(
        "--max-wall",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="stop a run after this much wall time; e.g. --max-wall 600",
    )
    parser.add_argument(
        "--max-stall",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="end a run as error{stalled} once its runtime has gone this long without progress "
        "(no text, tool call or result; statuses such as reconnect attempts do not count); "
        "default 1200; e.g. --max-stall 300",
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


def ray_option(
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


def host_maker(
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


RAW = argparse.RawDescriptionHelpFormatter


def sub_command(
    sub: Any, name: str, summary: str, description: str, examples: Sequence[str]
) -> argparse.ArgumentParser:
    """A subcommand with a one-line summary, a description and examples in its ``--help``."""
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=summary, description=description, epilog=epilog, formatter_class=RAW
    )
    return parser


def json_option(parser: argparse.ArgumentParser, what: str = "events") -> None:
    """``--json``: for a command that prints runs' events, their JSON Lines (each with its run
    key); for any other, ``what`` as JSON (said as ``what`` says it: "one JSON object", …)."""
    if what == "events":
        text = (
            "print events as JSON Lines (one object per line, run key on each) instead of the "
            "view; e.g. --json | jq .kind"
        )
    else:
        text = f"print {what} as JSON instead of text; e.g. --json | jq ."
    parser.add_argument("--json", action="store_true", help=text)


def approvals_option(
    parser: argparse.ArgumentParser, default: str = "deny", also: str = ""
) -> None:
    parser.add_argument(
        "--approvals",
        choices=("deny", "wait"),
        default=default,
        help="a tool call that needs approval (the native runtime's bash, by default; with wait, "
        "Claude Code, Codex, Hermes and ACP agents whose permission is unset ask too) is denied "
        f"(fail-closed) or waits for `ringleader approve`{also} or the board, durably: the "
        f"run resumes even if this process is gone (default: {default}); e.g. --approvals wait",
    )


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def port_arg(text: str) -> int:
    from orchestrator.core.listen import port_number

    return port_number(text)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive number")
    return value


def percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage in (0, 100]")
    return value
