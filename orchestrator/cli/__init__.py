"""The ``ringleader`` command: :mod:`.main` parses and dispatches; one module per command group
(:mod:`.run`, :mod:`.approvals`, :mod:`.serve`, …) holds its arguments and its body. A surface:
the library never imports it."""

# Before anything else of ours runs: a Ctrl-C while the command is still importing (its first
# tens of milliseconds) ends it quietly with 130, never a KeyboardInterrupt traceback; `main`
# hands SIGINT back to Python (KeyboardInterrupt, handled) once it is inside its error handling.
# Only in the `ringleader` process itself (the console script, or `python -m orchestrator.cli`
# while the module is being located), never when a program or a test imports this package.
import _signal  # pyright: ignore[reportMissingImports] - builtin; `signal` would import enum first
import _thread  # builtin, loaded at the interpreter's start
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


def _interrupt_again(unraisable: "_sys.UnraisableHookArgs") -> None:
    """A Ctrl-C whose ``KeyboardInterrupt`` was raised inside a finalizer or a weakref callback
    (Python can only print "Exception ignored" there, and carries on): send SIGINT again, so it
    reaches the code that handles it. Seen in a full run: a SIGINT landing in importlib's
    module-lock callback while ``run`` imported, and the command ran on as if never
    interrupted. Anything else goes to the hook that was there before.

    The signal comes from a new thread (:func:`_send_again`): raised here, in this hook, it
    would be ignored the same way."""
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        try:
            _thread.start_new_thread(_send_again, ())
        except RuntimeError:  # no new thread (the interpreter is exiting): the Ctrl-C still ends it
            _quiet_exit(2, None)
        return
    _previous_hook(unraisable)


def _send_again() -> None:
    """SIGINT to the main thread; while the quiet handler is in place, every 20 ms until it has
    ended the process. One signal can be lost too: this thread gets the interpreter lock when
    the main thread lets go of it, which is often right before a blocking call (a sleep, a
    read); a signal landing before that call starts runs no handler until the call returns (under
    load, one process in eight lost it so). A second signal interrupts the call. Once
    ``main`` has made Ctrl-C a ``KeyboardInterrupt`` it is sent once: a repeat would interrupt
    the handling of the first. There the command's waits are trio's, which the signal wakes
    whenever it lands (trio's wakeup fd)."""
    pause = _thread.allocate_lock()
    pause.acquire()
    while True:
        quiet = _signal.getsignal(2) is _quiet_exit  # pyright: ignore[reportUnknownMemberType]
        _signal.pthread_kill(_MAIN_THREAD, 2)  # pyright: ignore[reportUnknownMemberType]
        if not quiet:
            return
        pause.acquire(timeout=0.02)


_MAIN_THREAD = _thread.get_ident()  # this package is imported on the main thread


_previous_hook = _sys.unraisablehook
if _os.path.basename(_sys.argv[0]) in ("ringleader", "-m") and (
    _signal.getsignal(2) is _signal.default_int_handler  # pyright: ignore[reportUnknownMemberType]
):
    _signal.signal(2, _quiet_exit)  # SIGINT  # pyright: ignore[reportUnknownMemberType]
    _sys.unraisablehook = _interrupt_again
