"""The ``ringleader`` command: :mod:`.main` parses and dispatches; one module per command group
(:mod:`.run`, :mod:`.approvals`, :mod:`.serve`, …) holds its arguments and its body. A surface:
the library never imports it."""

# Before anything else of ours runs: a Ctrl-C while the command is still importing (its first
# tens of milliseconds) ends it quietly with 130, never a KeyboardInterrupt traceback; `main`
# hands SIGINT back to Python (KeyboardInterrupt, handled) once it is inside its error handling.
# Only in the `ringleader` process itself (the console script, or `python -m orchestrator.cli`
# while the module is being located), never when a program or a test imports this package.
import _signal  # pyright: ignore[reportMissingImports] - builtin; `signal` would import enum first
import os as _os  # already imported by the interpreter's start: free
import sys as _sys


def _quiet_exit(signum: int, frame: object) -> None:
    """SIGINT before ``main`` handles interrupts itself: exit 130 at once, printing nothing
    (what is already written is flushed)."""
    for stream in (_sys.stdout, _sys.stderr):
        try:  # noqa: SIM105 - contextlib would be one more import before the handler
            stream.flush()
        except BaseException:
            pass
    _os._exit(130)


if _os.path.basename(_sys.argv[0]) in ("ringleader", "-m") and (
    _signal.getsignal(2) is _signal.default_int_handler  # pyright: ignore[reportUnknownMemberType]
):
    _signal.signal(2, _quiet_exit)  # SIGINT  # pyright: ignore[reportUnknownMemberType]
