"""A fake runtime CLI: a real child process that replays a transcript, with injected faults.

Adapters are tested against it through the real process driver (:mod:`adapters._process`), so
pipes, signals, exit codes and framing are exercised for real, with no runtime installed. It uses
only the standard library, because it runs as a child (started with ``-I -S``: isolated, no
``site``, so nothing from the project or the venv is imported).

Build its argv with :func:`fake_cli_argv`, or run it by hand::

    python -m contract.fake_cli --transcript tests/fixtures/claude-code/2.1.330/text.jsonl \\
        --delay 0.01 --stall-at 3 --ignore-sigint

Transcript
    A JSONL file (``--transcript FILE``; lines are written byte for byte, each followed by
    ``\\n``; a trailing ``\\r`` is kept, blank lines are skipped) and/or inline lines
    (``--line TEXT``, repeatable, appended after the file's). Nothing is parsed: any bytes work.

Faults (``N`` is a 0-based line index: "before line N is written", so ``N`` = number of lines
already written; ``N`` equal to the number of lines means "at the end")
    ``--delay S``           sleep S seconds after each line (and before the first, if
                            ``--initial-delay`` is given)
    ``--truncate-at N``     write the first half of line N without its newline, then exit
                            (``--exit-code``): a runtime dying mid-write
    ``--overlong-at N``     write one line of ``--overlong-bytes`` bytes (default 9 MiB, above the
                            framer's 8 MiB cap) before line N; the transcript continues after it
    ``--stall-at N``        stop before line N and sleep forever (signals still act)
    ``--exit-at N``         exit with ``--exit-code`` before line N
    ``--exit-code C``       the exit code at ``--exit-at``/``--truncate-at`` and at the normal end
    ``--ignore-sigint``     ignore SIGINT; ``--ignore-sigterm`` ignore SIGTERM too
    ``--on-sigint LINE``    on SIGINT write LINE and exit with ``--on-sigint-exit-code`` (default
                            0): a runtime that ends cleanly when interrupted (Claude Code writes
                            a ``result`` line and exits 0)
    ``--stderr TEXT``       write TEXT and a newline to stderr at start (repeatable)
    ``--spawn-grandchild``  at start, fork a grandchild that sleeps forever in the same process
                            group (stdio on the null device, default signal handling): a tool
                            the runtime started. Its pid is written to ``--grandchild-pidfile``
    ``--version``           print ``fake-cli 1.0.0`` and exit 0 (a health probe's answer)
    ``--hang-switch FILE``  if FILE exists at start, sleep forever before anything else (signals
                            still act): the hung runtime of the contract's health check. Every
                            :func:`fake_cli_argv` carries the switch of :func:`hang_switch`

    Signal handlers are installed before anything is written, so once the first stdout line has
    been read, a test can signal the process deterministically.

Reading stdin (long-lived protocols: Claude ``--input-format stream-json``, Codex app-server, ACP)
    ``--rules JSON``        a JSON list of rules (or ``@FILE`` holding one). While the transcript
                            plays, a thread reads stdin lines; for each JSON object, the first
                            rule whose ``match`` is a subset of it fires. After the transcript the
                            process keeps serving stdin until end of file, then exits with
                            ``--exit-code``. Lines that are not JSON or match no rule are ignored.
    ``--stdin-log FILE``    append every stdin line received to FILE (for assertions)
    ``--start-on JSON``     hold the transcript until a stdin object matches this pattern (the
                            rules' ``match`` form), e.g. an ACP agent that streams its updates
                            only once the prompt request has arrived; implies reading stdin

    A rule is ``{"match": {...}, "reply": [LINE, ...], "exit": CODE}`` (``reply`` and ``exit``
    optional). ``match`` is a subset pattern: each key must be present with an equal value, nested
    objects matching recursively; ``{}`` matches any object. In reply lines ``{{a.b}}`` is replaced
    by the JSON encoding of the incoming object's field ``a.b`` (so ids keep their type), e.g.::

        {"match": {"method": "initialize"}, "reply": ["{\\"id\\": {{id}}, \\"result\\": {}}"]}
        {"match": {"type": "control_request", "request": {"subtype": "interrupt"}},
         "reply": ["{\\"type\\":\\"control_response\\",\\"response\\":{\\"subtype\\":\\"success\\",\\"request_id\\":{{request_id}}}}"]}
        {"match": {"method": "shutdown"}, "exit": 0}

    ``"echo": true`` in a rule writes the incoming line back as is (after ``reply``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, NoReturn, cast

__all__ = [
    "DEFAULT_OVERLONG_BYTES",
    "FAKE_CLI_VERSION",
    "NAMED_FAULTS",
    "clear_grandchild_records",
    "fake_cli_argv",
    "grandchild_pids",
    "hang_switch",
    "main",
]

DEFAULT_OVERLONG_BYTES = 9 * 1024 * 1024
"""Default size of the ``--overlong-at`` line: above the framer's default 8 MiB cap."""

NAMED_FAULTS = (
    "truncated-line",
    "truncated-line-exit-0",
    "over-cap-line",
    "stall",
    "exit-nonzero",
    "ignore-sigint",
    "grandchild",
)
"""Presets for ``fake_cli_argv(fault=...)`` (the contract suite's process faults), each placed at
the middle line of the transcript: ``truncated-line`` (cut that line mid-JSON, exit 1),
``truncated-line-exit-0`` (the same, but exit 0: a lost frame behind a clean exit),
``over-cap-line`` (an over-cap line before it), ``stall`` (sleep forever before it),
``exit-nonzero`` (exit 1 before it), ``ignore-sigint`` (ignore SIGINT and stall before it),
``grandchild`` (fork a grandchild that sleeps forever, recorded for :func:`grandchild_pids`, and
stall before it)."""

FAKE_CLI_VERSION = "fake-cli 1.0.0"
"""What ``--version`` prints."""

_PLACEHOLDER = re.compile(r"\{\{([A-Za-z0-9_.\-]+)\}\}")


def fake_cli_argv(
    transcript: str | os.PathLike[str] | Sequence[str] | None = None,
    *,
    delay: float = 0.0,
    initial_delay: bool = False,
    truncate_at: int | None = None,
    overlong_at: int | None = None,
    overlong_bytes: int = DEFAULT_OVERLONG_BYTES,
    stall_at: int | None = None,
    exit_at: int | None = None,
    exit_code: int = 0,
    ignore_sigint: bool = False,
    ignore_sigterm: bool = False,
    on_sigint: str | None = None,
    on_sigint_exit_code: int = 0,
    stderr: Sequence[str] = (),
    rules: Sequence[Mapping[str, Any]] | None = None,
    stdin_log: str | os.PathLike[str] | None = None,
    start_on: Mapping[str, Any] | None = None,
    spawn_grandchild: bool = False,
    fault: str | None = None,
) -> list[str]:
    """The argv that runs the fake CLI with ``sys.executable``; see the module docstring.

    Args:
        transcript: a JSONL file path, or the lines themselves (each without its newline).
        rules: stdin rules; giving them (even ``[]``) makes the fake read stdin, so start it with
            ``stdin=True``.
        fault: one of :data:`NAMED_FAULTS`, placed at the transcript's middle line; it fills in
            the matching options above (``exit_code`` becomes 1 where the preset exits with
            an error).
        spawn_grandchild: fork a grandchild at start (recorded for :func:`grandchild_pids`).

    Every argv carries ``--hang-switch`` (see :func:`hang_switch`).
    """
    if fault is not None:
        n = _count_lines(transcript)
        at = min(n // 2, max(n - 1, 0))
        match fault:
            case "truncated-line":
                if n == 0:
                    raise ValueError("truncated-line needs a transcript with at least one line")
                truncate_at, exit_code = at, exit_code or 1
            case "truncated-line-exit-0":
                if n == 0:
                    raise ValueError("truncated-line needs a transcript with at least one line")
                truncate_at, exit_code = at, 0
            case "over-cap-line":
                overlong_at = at
            case "stall":
                stall_at = at
            case "exit-nonzero":
                exit_at, exit_code = at, exit_code or 1
            case "ignore-sigint":
                ignore_sigint, stall_at = True, at
            case "grandchild":
                spawn_grandchild, stall_at = True, at
            case _:
                raise ValueError(f"unknown fault {fault!r}; known: {', '.join(NAMED_FAULTS)}")
    argv = [sys.executable, "-I", "-S", os.path.abspath(__file__)]
    if isinstance(transcript, (str, os.PathLike)):
        argv += ["--transcript", os.fspath(transcript)]
    elif transcript is not None:
        for line in transcript:
            argv += ["--line", line]
    if delay:
        argv += ["--delay", repr(float(delay))]
    if initial_delay:
        argv.append("--initial-delay")
    for flag, value in (
        ("--truncate-at", truncate_at),
        ("--overlong-at", overlong_at),
        ("--stall-at", stall_at),
        ("--exit-at", exit_at),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if overlong_bytes != DEFAULT_OVERLONG_BYTES:
        argv += ["--overlong-bytes", str(overlong_bytes)]
    if exit_code:
        argv += ["--exit-code", str(exit_code)]
    if ignore_sigint:
        argv.append("--ignore-sigint")
    if ignore_sigterm:
        argv.append("--ignore-sigterm")
    if on_sigint is not None:
        argv += ["--on-sigint", on_sigint, "--on-sigint-exit-code", str(on_sigint_exit_code)]
    for text in stderr:
        argv += ["--stderr", text]
    if rules is not None:
        argv += ["--rules", json.dumps(list(rules))]
    if stdin_log is not None:
        argv += ["--stdin-log", os.fspath(stdin_log)]
    if start_on is not None:
        argv += ["--start-on", json.dumps(start_on)]
    if spawn_grandchild:
        pidfile = _state_dir() / f"grandchild-{uuid.uuid4().hex}.pid"
        argv += ["--spawn-grandchild", "--grandchild-pidfile", str(pidfile)]
    argv += ["--hang-switch", str(_state_dir() / "hang")]
    return argv


def _state_dir() -> Path:
    """This (parent) process's directory for the hang switch and grandchild records."""
    path = Path(tempfile.gettempdir()) / f"ringleader-fake-cli-{os.getpid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


@contextmanager
def hang_switch() -> Generator[None]:
    """While inside, every fake CLI started from an argv of :func:`fake_cli_argv` (built in this
    process) hangs at start, before writing anything or answering ``--version``: a runtime that
    never answers. The contract's hung-runtime health check uses it."""
    switch = _state_dir() / "hang"
    switch.touch()
    try:
        yield
    finally:
        switch.unlink(missing_ok=True)


def grandchild_pids() -> list[int]:
    """Pids of the grandchildren forked by fake CLIs (``--spawn-grandchild``) started from argvs
    built in this process since the last :func:`clear_grandchild_records`."""
    pids: list[int] = []
    for record in sorted(_state_dir().glob("grandchild-*.pid")):
        with suppress(OSError, ValueError):
            text = record.read_text().strip()
            if not text:  # not resolved yet: find it while it runs, and remember it
                found = _find_tagged(str(record))
                if found is None:
                    continue
                record.write_text(str(found))
                text = str(found)
            pids.append(int(text))
    return pids


def clear_grandchild_records() -> None:
    """Forget the recorded grandchildren (the processes themselves are not touched)."""
    for record in _state_dir().glob("grandchild-*.pid"):
        record.unlink(missing_ok=True)


def _count_lines(transcript: str | os.PathLike[str] | Sequence[str] | None) -> int:
    if transcript is None:
        return 0
    if isinstance(transcript, (str, os.PathLike)):
        return len(_load_transcript(os.fspath(transcript), ()))
    return len(transcript)


# --------------------------------------------------------------------------- the child side


class _Out:
    """Whole-line writes to stdout, shared by the transcript and the stdin-rules thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def line(self, data: bytes, *, newline: bool = True) -> None:
        with self.lock:
            _write_all(1, data + b"\n" if newline else data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BrokenPipeError:
            os._exit(141)  # the reader went away, like a CLI killed by SIGPIPE
        view = view[n:]


def _exit(code: int) -> NoReturn:
    os._exit(code)  # no buffered output to lose: every write went straight to the fd


def _load_transcript(path: str | None, inline: Sequence[str]) -> list[bytes]:
    lines: list[bytes] = []
    if path:
        lines += [line for line in Path(path).read_bytes().split(b"\n") if line.strip()]
    lines += [line.encode("utf-8") for line in inline]
    return lines


def _matches(pattern: object, value: object) -> bool:
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return False
        val = cast("dict[str, object]", value)
        pat = cast("dict[str, object]", pattern)
        return all(k in val and _matches(v, val[k]) for k, v in pat.items())
    return pattern == value


def _lookup(obj: object, path: str) -> object:
    for part in path.split("."):
        if isinstance(obj, dict):
            obj = obj.get(part)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):  # pyright: ignore[reportUnknownArgumentType]
            obj = obj[int(part)]  # pyright: ignore[reportUnknownVariableType]
        else:
            return None
    return obj  # pyright: ignore[reportUnknownVariableType]


def _render(template: str, incoming: object) -> bytes:
    text = _PLACEHOLDER.sub(lambda m: json.dumps(_lookup(incoming, m.group(1))), template)
    return text.encode("utf-8")


def _serve_stdin(
    out: _Out,
    rules: list[dict[str, Any]],
    log_path: str | None,
    start_on: object = None,
    started: threading.Event | None = None,
) -> None:
    log = open(log_path, "ab") if log_path else None  # noqa: SIM115 (lives as long as the thread)
    for raw in sys.stdin.buffer:
        line = raw.rstrip(b"\r\n")
        if log is not None:
            log.write(line + b"\n")
            log.flush()
        try:
            decoded: object = json.loads(line)
        except ValueError:
            continue
        if not isinstance(decoded, dict):
            continue
        incoming = cast("dict[str, object]", decoded)
        if started is not None and start_on is not None and _matches(start_on, incoming):
            started.set()
        for rule in rules:
            if not _matches(rule.get("match", {}), incoming):
                continue
            for template in rule.get("reply", ()):
                out.line(_render(template, incoming))
            if rule.get("echo"):
                out.line(line)
            if "exit" in rule:
                _exit(int(rule["exit"]))
            break


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fake_cli", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--transcript", help="JSONL file to replay")
    p.add_argument("--line", action="append", default=[], help="an inline transcript line")
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--initial-delay", action="store_true")
    p.add_argument("--truncate-at", type=int)
    p.add_argument("--overlong-at", type=int)
    p.add_argument("--overlong-bytes", type=int, default=DEFAULT_OVERLONG_BYTES)
    p.add_argument("--stall-at", type=int)
    p.add_argument("--exit-at", type=int)
    p.add_argument("--exit-code", type=int, default=0)
    p.add_argument("--ignore-sigint", action="store_true")
    p.add_argument("--ignore-sigterm", action="store_true")
    p.add_argument("--on-sigint")
    p.add_argument("--on-sigint-exit-code", type=int, default=0)
    p.add_argument("--stderr", action="append", default=[])
    p.add_argument("--rules", help="JSON list of stdin rules, or @FILE")
    p.add_argument("--stdin-log")
    p.add_argument("--start-on", help="JSON pattern: hold the transcript until stdin matches it")
    p.add_argument("--spawn-grandchild", action="store_true")
    p.add_argument("--grandchild-pidfile")
    p.add_argument("--version", action="store_true")
    p.add_argument("--hang-switch")
    return p.parse_args(argv)


_signal_wakeup: int | None = None
"""The read end of the pipe a handled signal writes a byte to (``signal.set_wakeup_fd``), once
:func:`_wake_on_signals` made it. CPython runs a signal's handler between bytecodes, and a
signal that comes after the last check but before a wait's system call (``time.sleep``,
``Thread.join``) is handled only when that wait ends: for a stalled fake, never (its SIGINT line
lost, SIGTERM after the grace instead). A wait that selects on this pipe wakes at once."""


def _wake_on_signals() -> None:
    global _signal_wakeup
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    _signal_wakeup = read


def _wait_for(fd: int | None = None) -> None:
    """Block until ``fd`` is readable (``None``: for ever); a handled signal's handler runs
    meanwhile, however close to the start of the wait the signal came."""
    fds = [f for f in (fd, _signal_wakeup) if f is not None]
    while True:
        if _signal_wakeup is None and fd is None:
            time.sleep(3600)
            continue
        ready, _, _ = select.select(fds, [], [])
        if fd in ready:
            return
        if _signal_wakeup in ready:
            os.read(_signal_wakeup, 512)  # its handler runs as select returns


def _sleep_forever() -> NoReturn:
    while True:
        _wait_for(None)


def _spawn_grandchild(pidfile: str | None) -> None:
    """Fork a grandchild that sleeps forever in our process group (like a tool we started).

    Its record is written only once the grandchild has exec'd, so it can be found by its
    command line as soon as the record exists (and so before this fake CLI's first line): the
    pipe's write end is close-on-exec, and its end of file here is that exec (or the child
    giving up on it)."""
    global _signal_wakeup
    execed, exec_done = os.pipe()  # non-inheritable: the exec closes the child's copy
    pid = os.fork()
    if pid == 0:  # the grandchild
        os.close(execed)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)  # the signals of its own: none handled, nothing to wake for
        _signal_wakeup = None
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        if pidfile:  # named in its command line: the harness finds its pid by it, as it sees
            # it (in a PID namespace of its own the child driver may start runtimes in, the pid
            # known here is the namespace's)
            code = "import time\nwhile True: time.sleep(3600)"
            with suppress(OSError):
                os.execv(sys.executable, [sys.executable, "-c", code, _GRANDCHILD_TAG, pidfile])
        os.close(exec_done)
        _sleep_forever()
    os.close(exec_done)
    while os.read(execed, 1):  # end of file: the grandchild has exec'd
        pass
    os.close(execed)
    if pidfile:
        tmp = f"{pidfile}.tmp"
        Path(tmp).write_text("")  # the pid is found by grandchild_pids() (see above)
        os.replace(tmp, pidfile)


_GRANDCHILD_TAG = "ringleader-fake-cli-grandchild"


def _find_tagged(pidfile: str) -> int | None:
    """The pid (as this process sees it) of the grandchild whose command line names ``pidfile``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if _GRANDCHILD_TAG.encode() in argv and pidfile.encode() in argv:
            return int(entry.name)
    return None


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the fake CLI (the child side); never returns."""
    args = _parse_args(argv)
    out = _Out()
    if args.hang_switch and os.path.exists(args.hang_switch):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _sleep_forever()
    if args.version:
        _write_all(1, FAKE_CLI_VERSION.encode() + b"\n")
        _exit(0)

    # Signals first, so that a reader that has seen one line can signal deterministically.
    if args.ignore_sigint:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    elif args.on_sigint is not None:
        goodbye = args.on_sigint.encode("utf-8") + b"\n"
        code = args.on_sigint_exit_code

        def on_sigint(_sig: int, _frame: object) -> None:
            _write_all(1, goodbye)  # not under the lock: the main thread may hold it
            _exit(code)

        signal.signal(signal.SIGINT, on_sigint)
        _wake_on_signals()
    else:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # die by the signal, like a plain CLI
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    lines = _load_transcript(args.transcript, args.line)
    if args.spawn_grandchild:
        _spawn_grandchild(args.grandchild_pidfile)  # before any thread exists: fork is safe
    for text in args.stderr:
        _write_all(2, text.encode("utf-8") + b"\n")

    reader: threading.Thread | None = None
    reader_done, reader_ended = os.pipe()  # end of file once the reader is done
    started: threading.Event | None = None
    start_on: object = json.loads(args.start_on) if args.start_on else None
    if args.rules is not None or start_on is not None:
        spec: str = args.rules or "[]"
        if spec.startswith("@"):
            spec = Path(spec[1:]).read_text(encoding="utf-8")
        rules: list[dict[str, Any]] = json.loads(spec)
        started = threading.Event() if start_on is not None else None

        def serve() -> None:
            try:
                _serve_stdin(out, rules, args.stdin_log, start_on, started)
            finally:
                os.close(reader_ended)

        reader = threading.Thread(target=serve, daemon=True)
        reader.start()
    if started is not None:
        started.wait()

    if args.initial_delay and args.delay:
        time.sleep(args.delay)
    for i in range(len(lines) + 1):
        if i == args.stall_at:
            _sleep_forever()
        if i == args.exit_at:
            _exit(args.exit_code)
        if i == args.overlong_at:
            filler = b"x" * max(0, args.overlong_bytes - 30)
            out.line(b'{"type":"overlong","data":"' + filler + b'"}')
        if i == len(lines):
            break
        if i == args.truncate_at:
            line = lines[i]
            out.line(line[: max(1, len(line) // 2)], newline=False)
            _exit(args.exit_code)
        out.line(lines[i])
        if args.delay:
            time.sleep(args.delay)

    if reader is not None:
        _wait_for(reader_done)  # (not reader.join(): a SIGINT just before it would wait too)
        reader.join()
    _exit(args.exit_code)


if __name__ == "__main__":
    main()
