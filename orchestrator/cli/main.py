"""The ``ringleader`` command: the top-level parser, dispatch, and the one line a person sees for
their own mistake. Each command group's arguments and body live in its own module
(``cmd_*.py``, registered in :data:`COMMANDS`); the library never imports this package."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import argparse

# Only the standard library at import: `ringleader --version` answers before anything else is
# imported; each command's modules are imported when the parser is built.

__all__ = ["STARTED", "commands", "main"]

STARTED = time.perf_counter()
"""When this process started running ringleader (``perf_counter``): "first event" counts from
here, so the table shows what a person waited, imports included."""


def _version() -> str:
    from orchestrator import __version__

    return __version__


def _model_server_help(sub: Any) -> None:
    """``model-server`` passes its arguments to the model server's own parser (see :func:`main`);
    this entry only lists it in ``--help``."""
    from orchestrator.cli.options import sub_command

    sub_command(
        sub,
        "model-server",
        "serve the scripted model server on 127.0.0.1",
        "Serve the scripted model server (Anthropic Messages, OpenAI Responses and Chat "
        "Completions) on 127.0.0.1; a JSON or TOML script decides the answers. Prints its URL.",
        ["ringleader model-server --script script.json --port 0"],
    )


def commands() -> tuple[Callable[[Any], None], ...]:
    """Each command group's ``register``, in the order ``--help`` lists them."""
    from orchestrator.cli import (
        cmd_acp,
        cmd_apply,
        cmd_approvals,
        cmd_batch,
        cmd_checkpoints,
        cmd_comment,
        cmd_demo,
        cmd_diff,
        cmd_doctor,
        cmd_inbox,
        cmd_install,
        cmd_mcp,
        cmd_open,
        cmd_prune,
        cmd_replay,
        cmd_run,
        cmd_runtimes,
        cmd_say,
        cmd_schedules,
        cmd_serve,
        cmd_trust,
        cmd_usage,
        cmd_workspaces,
    )

    return (
        cmd_demo.register,
        cmd_run.register,  # run and recover
        cmd_batch.register,
        cmd_doctor.register,
        cmd_runtimes.register,  # runtimes and config
        cmd_install.register,
        cmd_usage.register,
        cmd_replay.register,
        cmd_prune.register,
        cmd_diff.register,  # diff and compare
        cmd_apply.register,
        cmd_workspaces.register,
        cmd_serve.register,
        cmd_schedules.register,
        _model_server_help,
        cmd_acp.register,
        cmd_mcp.register,
        cmd_approvals.register,  # approvals and approve
        cmd_say.register,
        cmd_comment.register,
        cmd_checkpoints.register,  # checkpoints and rewind
        cmd_open.register,
        cmd_trust.register,
        cmd_inbox.register,
    )


def _parser() -> argparse.ArgumentParser:
    import argparse

    from orchestrator.cli.options import RAW

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
        "$XDG_STATE_HOME/ringleader), NO_COLOR (plain output); see docs/guide/configuration.md, 'Environment'.",
        formatter_class=RAW,
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
    for register in commands():
        register(sub)
    return parser


def _model_server_command(args_list: list[str]) -> int:
    from orchestrator.model_server import main as serve_main

    return int(serve_main(args_list))


def _dispatch(args: argparse.Namespace, out: TextIO) -> int:
    handler: Callable[[argparse.Namespace, TextIO], int] = args.handler
    return handler(args, out)


def _broken_pipe(exc: BaseException) -> bool:
    """A write to a closed pipe: the error itself, or rich's ``SystemExit`` raised for it."""
    if isinstance(exc, BrokenPipeError):
        return True
    return isinstance(exc, SystemExit) and isinstance(exc.__context__, BrokenPipeError)


def _silence_stdout() -> None:
    """Point stdout at the null device, so flushing it at exit does not fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _interrupt(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a Ctrl-C: a ``KeyboardInterrupt`` (or the cancellation it caused), also
    one Python wrapped as the cause of another error — a Ctrl-C while a class is created during
    an import surfaces as ``RuntimeError: Error calling __set_name__ …``."""
    import trio

    while exc is not None:
        if isinstance(exc, KeyboardInterrupt | trio.Cancelled):
            return True
        exc = exc.__cause__
    return False


def _failure(exc: BaseException, args: argparse.Namespace | None) -> int | None:
    """The exit code for an operator mistake or an interrupt (its one line printed), else None."""

    from orchestrator.core.errors import RingleaderError, RuntimeNotFoundError, exception_leaves

    found = exception_leaves(exc)
    if all(_broken_pipe(e) for e in found):  # `ringleader … | head -1`: the reader left
        _silence_stdout()
        return 0
    if all(_interrupt(e) for e in found):
        print("ringleader: interrupted", file=sys.stderr)
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
    if args_list == ["--version"]:  # nothing else to import
        print(f"ringleader {_version()}")
        return 0
    import os

    try:
        os.getcwd()
    except FileNotFoundError:
        print(
            "ringleader: the current directory no longer exists (deleted?); cd to one that does",
            file=sys.stderr,
        )
        return 2
    quiet: _Handler | None = None
    try:
        quiet = _interrupts_raise()
        if args_list[:1] == ["model-server"]:
            return _model_server_command(args_list[1:])
        args = _parser().parse_args(args_list)
        return _dispatch(args, sys.stdout)
    except SystemExit:
        raise
    except BaseException as exc:
        _interrupts_quiet(quiet)  # a second Ctrl-C while this is reported: quietly 130
        code = _failure(exc, args)
        if code is None:
            from orchestrator.cli.commands import crash_report

            print(crash_report(exc), file=sys.stderr)
            return 1
        return code
    finally:
        _interrupts_quiet(quiet)  # and while the interpreter exits


_Handler = Callable[[int, Any], None]


def _interrupts_raise() -> _Handler | None:
    """From here Ctrl-C is a ``KeyboardInterrupt`` that :func:`main` handles (one line, 130).
    Returns the quiet handler the ``ringleader`` process started with (see
    ``orchestrator/cli/__init__.py``), or ``None`` when there was none (main called in a
    program or a test: SIGINT is left alone)."""
    import signal

    from orchestrator import cli

    quiet = cli._quiet_exit  # pyright: ignore[reportPrivateUsage]
    if signal.getsignal(signal.SIGINT) is not quiet:
        return None
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return quiet


def _interrupts_quiet(quiet: _Handler | None) -> None:
    """Back to the quiet handler (a Ctrl-C exits 130 at once, printing nothing) — unless Ctrl-C
    is ignored by now (a run was aborted: the exit is 130 already, see ``Interrupt.run``)."""
    if quiet is not None:
        import signal

        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, quiet)


if __name__ == "__main__":
    raise SystemExit(main())
