"""The one child-process driver every CLI adapter shares (Claude Code, Codex, Hermes ACP, …).

:func:`open_child` spawns a runtime CLI and is the only way to get a :class:`ChildProcess`::

    env = child_env(extra={"HOME": home, "CLAUDE_CONFIG_DIR": state})
    async with open_child([str(claude), "-p", prompt, ...], env=env, adapter="claude-code") as child:
        async for batch in child.batches():        # one batch per pipe read
            for frame in batch:
                if isinstance(frame, LineTooLongError):
                    ...                            # report it; the next lines keep coming
                else:
                    ...                            # one line of bytes, without the newline
        code = await child.wait()
        if code != 0 and not child.terminated_by_us:
            raise child.exit_error()

What it guarantees:

* **No shell, own process group.** ``argv`` is a list; the child is started with
  ``start_new_session=True``, so it leads a new session and process group, and every signal we send
  goes to the whole group (its tools, their children).
* **Allow-listed environment.** Pass ``env=child_env(...)``: only ``PATH``, locale, terminal,
  time zone, temp dir, CA bundle and user-identity variables come from our environment; the run adds
  its own (state dirs, model URL, key). Nothing else leaks into the child.
* **stdin** is the null device unless ``stdin=True`` (then :meth:`ChildProcess.send_line`).
* **stdout** goes through :class:`~adapters._jsonl.LineFramer` (hard line cap) and is delivered in
  batches, one per pipe read, so a consumer pays one checkpoint per read, not per line. An over-cap
  line arrives in place as a :class:`~orchestrator.core.errors.LineTooLongError` frame.
* **stderr** is drained continuously (so the child never blocks on it) into a bounded tail (last
  64 KiB by default); :attr:`ChildProcess.stderr_tail` is that text with secrets redacted.
* **Termination** (:meth:`ChildProcess.terminate`) sends SIGINT to the group, waits ``sigint_grace``
  seconds for the whole group to be gone, then SIGTERM and ``sigterm_grace``, then SIGKILL. It waits
  for the group — not just the direct child — to disappear (a reference bug stopped escalating when
  the direct child exited and orphaned its grandchildren). It is idempotent, safe to call at any
  time from any task, shielded from cancellation and bounded by the graces.
* **Leaving the ``async with``** — normally, by an exception or by cancellation — always terminates
  and reaps the group (draining stdout meanwhile so a child blocked on a full pipe can still exit).

Exit codes follow :mod:`subprocess`: ``-N`` means killed by signal ``N`` (a shell would say
``128+N``, e.g. 143 for SIGTERM; in a PID namespace, below, the shim reports ``128+N``).

* **A PID namespace per child** (Linux, where ``unshare`` may create one: as root, or with an
  unprivileged user namespace): the child runs under ``unshare --pid --fork --kill-child`` and a
  small init shim (:data:`_PID1_SHIM`, PID 1 of the namespace; the runtime is PID 2, so its
  signals behave as usual). When the runtime exits, or ringleader dies (the parent-death signal
  kills ``unshare``, whose ``--kill-child`` kills the shim), the kernel kills every process left
  in the namespace — tools that left the session and scrubbed their environment included, at
  once, not at the next start. This is only the PID-namespace part: the filesystem sandbox is
  not here. ``RINGLEADER_PID_NAMESPACE=0`` turns it off; where it cannot be made, children run
  as before (marks, process groups and the registry still apply).
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager, suppress
from typing import Any, Final, TypeVar

import trio

from orchestrator.core.errors import (
    RuntimeExitedError,
    RuntimeNotFoundError,
    RuntimeStartError,
    redact_secrets,
)
from orchestrator.core.lifetime import (
    MARK_ENV,
    PID_NS_ENV,
    current_process_registry,
    marked_pids,
)
from orchestrator.core.redact import register_env_secrets
from orchestrator.core.sandbox import SandboxPolicy, current_sandbox, wrap

from ._jsonl import DEFAULT_MAX_LINE_BYTES, Frame, LineFramer
from ._runtimes import runtimes_dir

__all__ = [
    "DEFAULT_ENV_ALLOW",
    "DEFAULT_SIGINT_GRACE",
    "DEFAULT_SIGTERM_GRACE",
    "DEFAULT_STDERR_TAIL_BYTES",
    "ChildProcess",
    "child_env",
    "open_child",
]

T = TypeVar("T")

DEFAULT_ENV_ALLOW: Final[tuple[str, ...]] = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "SHELL",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
)
"""Variables a child inherits from our environment by default. ``NAME*`` matches a prefix.

``HOME`` is deliberately absent: every run gets its own (docs/architecture.md, Security), passed in ``extra``.
"""

DEFAULT_SIGINT_GRACE: Final = 3.0
DEFAULT_SIGTERM_GRACE: Final = 3.0
DEFAULT_STDERR_TAIL_BYTES: Final = 64 * 1024
_KILL_WAIT: Final = 5.0
"""How long to wait for the group to vanish after SIGKILL (only a process stuck in the kernel,
state D, survives that long)."""
_STDERR_EOF_WAIT: Final = 1.0
"""How long :meth:`ChildProcess.wait` waits for stderr's end after the exit (a process that left
the group may keep the pipe open)."""
_READ_SIZE: Final = 65536


def child_env(
    allow: Iterable[str] = DEFAULT_ENV_ALLOW,
    extra: Mapping[str, str] | None = None,
    *,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Build a child's environment: allow-listed variables from ``base`` plus the run's own.

    Args:
        allow: names to copy from ``base``; a name ending in ``*`` copies every variable with that
            prefix (``"LC_*"``).
        extra: the run's own variables (state dirs, ``HOME``, model URL and key); they win.
        base: where allowed variables come from; defaults to :data:`os.environ`.
    """
    src = os.environ if base is None else base
    exact: set[str] = set()
    prefixes: list[str] = []
    for name in allow:
        if name.endswith("*"):
            prefixes.append(name[:-1])
        else:
            exact.add(name)
    env = {k: v for k, v in src.items() if k in exact or any(k.startswith(p) for p in prefixes)}
    if extra:
        env.update(extra)
    return env


class ChildProcess:
    """A running runtime CLI in its own process group. Created only by :func:`open_child`."""

    def __init__(
        self,
        proc: trio.Process,
        argv: Sequence[str],
        *,
        framer: LineFramer,
        stderr_tail_bytes: int,
        sigint_grace: float,
        sigterm_grace: float,
        adapter: str | None,
        session_key: str | None,
        mark: str | None = None,
        namespaced: bool = False,
    ) -> None:
        self._proc = proc
        self._namespaced = namespaced
        self.mark = mark
        """The value of ``RINGLEADER_PROC_MARK`` in the environment of the child's whole tree."""
        self.argv: Final = tuple(argv)
        self.pid: Final = proc.pid
        """The child's pid, which is also its process group id."""
        self._pgid = proc.pid
        self._framer = framer
        self._eof = False
        self._stderr = bytearray()
        self._stderr_cap = stderr_tail_bytes
        self._stderr_cut = False
        self._stderr_done = trio.Event()
        self._send_lock = trio.Lock()
        self.sigint_grace = sigint_grace
        self.sigterm_grace = sigterm_grace
        self.adapter = adapter
        self.session_key = session_key
        self._term_started = False
        self._term_done = trio.Event()
        self.terminated_by_us = False
        """True when :meth:`terminate` found the child still running (so an exit that follows is
        our abort, not the runtime's failure)."""
        self.group_survived = False
        """True if some member of the group was still there after SIGKILL and the kill wait."""

    # ------------------------------------------------------------------ state

    @property
    def returncode(self) -> int | None:
        """The exit status (``-N``: killed by signal ``N``), or ``None`` while running."""
        return self._code(self._proc.returncode)

    def _code(self, code: int | None) -> int | None:
        """In a PID namespace the shim reports a death by signal ``N`` as ``128+N`` (PID 1 cannot
        die of a signal it sends itself): given back as ``-N``; SIGKILL of the whole namespace
        from here comes back as ``-9`` already."""
        if self._namespaced and code is not None and 128 < code <= 128 + 64:
            return 128 - code
        return code

    @property
    def stderr_tail(self) -> str:
        """The last bytes of stderr (at most ``stderr_tail_bytes``), decoded, secrets redacted.

        When older output was dropped, the first (partial) line is dropped too, so a cut never
        leaves half a secret that the redaction patterns no longer recognize.
        """
        data = bytes(self._stderr[-self._stderr_cap :])
        if self._stderr_cut or len(self._stderr) > self._stderr_cap:
            nl = data.find(b"\n")
            if nl >= 0:
                data = data[nl + 1 :]
        return redact_secrets(data.decode("utf-8", "replace"))

    def exit_error(self, message: str | None = None) -> RuntimeExitedError:
        """A :class:`RuntimeExitedError` for this child's exit, carrying the stderr tail."""
        code = self.returncode
        if message is None:
            name = os.path.basename(self.argv[0]) if self.argv else "runtime"
            message = f"{name} exited with status {code}"
        return RuntimeExitedError(
            message,
            exit_code=code,
            stderr_tail=self.stderr_tail,
            adapter=self.adapter,
            session_key=self.session_key,
        )

    # ------------------------------------------------------------------ stdout

    async def receive_batch(self) -> Sequence[Frame]:
        """The next non-empty batch of frames from stdout; an empty sequence at end of output.

        The final unterminated line (a truncated frame, if the child died mid-write) comes in the
        last batch. Only one task may read at a time (trio raises ``BusyResourceError``).
        """
        stdout = self._proc.stdout
        assert stdout is not None
        framer = self._framer
        while not self._eof:
            data = await stdout.receive_some(_READ_SIZE)
            if isinstance(data, bytearray):  # pipes give bytes; the stream type allows either
                data = bytes(data)
            if not data:
                self._eof = True
                return framer.close()
            frames = framer.feed(data)
            if frames:
                return frames
        return ()

    async def batches(self) -> AsyncIterator[Sequence[Frame]]:
        """Iterate over stdout in batches (one per pipe read) until end of output."""
        while batch := await self.receive_batch():
            yield batch

    async def lines(self) -> AsyncIterator[Frame]:
        """Iterate over stdout frame by frame (convenience; :meth:`batches` is cheaper)."""
        while batch := await self.receive_batch():
            for frame in batch:
                yield frame

    # ------------------------------------------------------------------ stdin

    async def send_line(self, line: bytes) -> None:
        """Write one line (a ``\\n`` is appended if missing) to the child's stdin.

        Safe to call from several tasks. Raises ``trio.BrokenResourceError`` if the child closed its
        stdin (exited), ``trio.ClosedResourceError`` after :meth:`close_stdin`, and ``RuntimeError``
        if the child was started without ``stdin=True``.
        """
        stdin = self._proc.stdin
        if stdin is None:
            raise RuntimeError("this child was started without stdin=True")
        if not line.endswith(b"\n"):
            line += b"\n"
        async with self._send_lock:
            await stdin.send_all(line)

    async def close_stdin(self) -> None:
        """Close stdin: the child reads end of file. Idempotent; a no-op without ``stdin=True``."""
        if self._proc.stdin is not None:
            async with self._send_lock:
                await self._proc.stdin.aclose()

    # ------------------------------------------------------------------ exit

    async def wait(self) -> int:
        """Wait for the child to exit (and, briefly, for the rest of its stderr); return its code."""
        code = self._code(await self._proc.wait())
        assert code is not None
        # Members of the group left behind (tools still running) hold stderr open: no EOF to wait for.
        if not _group_has_live_members(self._pgid):
            with trio.move_on_after(_STDERR_EOF_WAIT):
                await self._stderr_done.wait()
        return code

    async def terminate(self) -> int | None:
        """Stop the whole process group: SIGINT, grace, SIGTERM, grace, SIGKILL; then reap.

        Idempotent and safe at any time: concurrent callers wait for the first one's escalation.
        Returns once every member of the group is gone (or, after SIGKILL, the kill wait has passed:
        see :attr:`group_survived`). The escalation is shielded from cancellation and bounded by
        ``sigint_grace + sigterm_grace`` plus a few seconds. Returns the exit code.
        """
        if self._term_started:
            await self._term_done.wait()
            return self.returncode
        self._term_started = True
        try:
            with trio.CancelScope(shield=True):
                if self._proc.returncode is None:
                    self.terminated_by_us = True
                steps = (
                    (signal.SIGINT, self.sigint_grace),
                    (signal.SIGTERM, self.sigterm_grace),
                    (signal.SIGKILL, _KILL_WAIT),
                )
                for sig, grace in steps:
                    if not self._group_alive():
                        break
                    self._signal_group(sig)
                    if await self._wait_group_gone(grace):
                        break
                else:
                    self.group_survived = True
                with trio.move_on_after(_KILL_WAIT):
                    await self._proc.wait()
        finally:
            self._term_done.set()
        return self.returncode

    def _escaped(self) -> list[int]:
        """Descendants that left the group (their own session): found by the inherited mark.
        Members of the group are left out (the group signal reaches them once, not twice)."""
        if not self.mark:
            return []
        out: list[int] = []
        for pid in marked_pids(self.mark):
            try:
                if os.getpgid(pid) != self._pgid:
                    out.append(pid)
            except ProcessLookupError:
                continue
        return out

    def _signal_group(self, sig: int) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self._pgid, sig)
        for pid in self._escaped():
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def _tree_alive(self) -> bool:
        return _group_has_live_members(self._pgid) or bool(self._escaped())

    def _group_alive(self) -> bool:
        if self._proc.returncode is None:
            return True
        return self._tree_alive()

    async def _wait_group_gone(self, grace: float) -> bool:
        with trio.move_on_after(grace):
            await self._proc.wait()
            delay = 0.002
            while self._tree_alive():
                await trio.sleep(delay)
                delay = min(delay * 2, 0.05)
            return True
        return False

    # ------------------------------------------------------------------ internals

    async def _drain_stderr(self) -> None:
        stderr = self._proc.stderr
        assert stderr is not None
        buf = self._stderr
        keep = self._stderr_cap
        try:
            while data := await stderr.receive_some(_READ_SIZE):
                buf += data
                if len(buf) > 2 * keep:
                    del buf[:-keep]
                    self._stderr_cut = True
        except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
            pass
        finally:
            self._stderr_done.set()

    async def _drain_stdout(self, done: trio.Event) -> None:
        """Discard stdout until end of output (used while shutting down with no reader left)."""
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            while not self._eof and await stdout.receive_some(_READ_SIZE):
                pass
        except (trio.ClosedResourceError, trio.BrokenResourceError, trio.BusyResourceError):
            pass
        finally:
            done.set()

    async def _shutdown(self) -> None:
        """Terminate (while draining stdout, so a child blocked on a full pipe can exit); close."""
        stdout_done = trio.Event()
        async with trio.open_nursery() as nursery:
            if self._eof:
                stdout_done.set()
            else:
                nursery.start_soon(self._drain_stdout, stdout_done)
            await self.terminate()
            # With the group gone both pipes are at end of file, unless a process escaped the
            # group (setsid) and holds them open: wait a moment for the drains, then stop them.
            with trio.move_on_after(0.1):
                await stdout_done.wait()
                await self._stderr_done.wait()
            nursery.cancel_scope.cancel()
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                await stream.aclose()


def _group_has_live_members(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a member that is not a zombie."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) also succeeds for zombies, which an init that does not reap orphans leaves behind
    # forever. On Linux, look at the members' states; elsewhere trust killpg.
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return True
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split(b" ", 3)
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


class _Spawner:
    """One thread that lives as long as the process and forks every runtime child.

    ``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child ends, not the process
    (trio forks from its worker threads, which end after 10 s idle), so children are forked from
    this thread: their death signal then fires exactly when our process dies.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="ringleader-spawner", daemon=True
                )
                self._thread.start()
        self._queue.put((future, fn))
        return future

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the spawner thread. Waited for without a worker thread of trio's (one
        thread wake-up per spawn, not two) and not cancellable: once ``fn`` has forked, the
        child is ours to reap, so the caller always gets it."""
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        future = self.submit(fn)

        def wake(_: Future[T]) -> None:
            with suppress(trio.RunFinishedError):  # only if our run crashed meanwhile
                token.run_sync_soon(done.set)

        future.add_done_callback(wake)
        with trio.CancelScope(shield=True):
            await done.wait()
        return future.result()

    def _serve(self) -> None:
        while True:
            future, fn = self._queue.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)


_SPAWNER = _Spawner()
_PR_SET_PDEATHSIG: Final = 1


def _find_prctl() -> Callable[..., int] | None:
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_LIBC_PRCTL: Final = _find_prctl()


def _die_with_parent(parent: int) -> Callable[[], None]:
    prctl = _LIBC_PRCTL
    assert prctl is not None

    def preexec() -> None:  # runs in the forked child, before exec
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # we died before the signal was armed
            os._exit(127)

    return preexec


def _kill_group(pid: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


PID_NAMESPACE_ENV: Final = "RINGLEADER_PID_NAMESPACE"

_PID1_SHIM: Final = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)  # no handler: PID 1 ignores what comes from outside
pid = os.fork()
if pid == 0:
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # what Python ignores, the runtime must not
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    except OSError as exc:
        sys.stderr.write(f"{sys.argv[1]}: {exc.strerror}\\n")
        os._exit(127)
# PID 1 of the namespace: signals from outside without a handler are ignored here, so the group
# signal reaches the runtime (PID 2) alone; reap every orphan, leave with the runtime's status
while True:
    try:
        done, status = os.wait()
    except ChildProcessError:
        os._exit(0)
    if done == pid:
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)
"""
"""PID 1 of a child's namespace (run with ``python -c``): forks the runtime, reaps orphans, exits
with the runtime's status (the kernel then kills whatever is left in the namespace)."""


def _pid_namespace_prefix() -> tuple[str, ...] | None:
    """The argv prefix that starts a child in a PID namespace of its own, or None where one
    cannot be made (``unshare`` missing, no privilege: probed once) or it is turned off
    (``RINGLEADER_PID_NAMESPACE=0``, read at each spawn)."""
    if os.environ.get(PID_NAMESPACE_ENV, "1").lower() in ("0", "off", "no", "false"):
        return None
    return _probe_pid_namespace()


@functools.cache
def _probe_pid_namespace() -> tuple[str, ...] | None:
    if sys.platform != "linux":
        return None
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    # a /proc of the namespace's own: what runs inside sees its own pids there (Codex's shell
    # tool needs it); the orchestrator reads the host's
    base = [unshare, "--pid", "--fork", "--kill-child", "--mount-proc"]
    tries = [base] if os.geteuid() == 0 else []
    tries.append([unshare, "--user", "--map-current-user", *base[1:]])
    for prefix in tries:
        try:
            probe = subprocess.run(
                [*prefix, sys.executable, "-c", _PID1_SHIM, "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if probe.returncode == 0:
            return (*prefix, sys.executable, "-c", _PID1_SHIM)
    return None


async def _spawn(
    args: list[str],
    *,
    stdin: bool,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None,
    on_spawned: Callable[[int], None] | None = None,
) -> trio.Process:
    """Start the child in its own session; on Linux it is SIGKILLed if we die (see _Spawner).

    ``on_spawned(pid)`` (blocking; e.g. recording the child in the process registry) runs right
    after the fork — on the spawner thread, so it costs no thread hop of its own. If it raises,
    the child's group is killed and reaped and the error propagates."""
    if _LIBC_PRCTL is None:
        started = await trio.lowlevel.open_process(
            args,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )
        if on_spawned is not None:
            try:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(on_spawned, started.pid)
            except BaseException:
                _kill_group(started.pid)
                with trio.CancelScope(shield=True):
                    await started.wait()
                raise
        return started
    ours: list[int] = []
    theirs: list[int] = []
    try:
        in_r = in_w = None
        if stdin:
            in_r, in_w = os.pipe()
            ours.append(in_w)
            theirs.append(in_r)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        ours += [out_r, err_r]
        theirs += [out_w, err_w]
        popen = functools.partial(
            subprocess.Popen,
            args,
            stdin=in_r if in_r is not None else subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            env=env,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
            preexec_fn=_die_with_parent(os.getpid()),
        )

        def spawn() -> subprocess.Popen[bytes]:
            proc = popen()
            if on_spawned is not None:
                try:
                    on_spawned(proc.pid)
                except BaseException:
                    _kill_group(proc.pid)
                    proc.wait()
                    raise
            return proc

        proc: subprocess.Popen[bytes] = await _SPAWNER.run(spawn)
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    make = trio.lowlevel.FdStream
    return trio.Process._create(  # pyright: ignore[reportPrivateUsage]
        proc, make(in_w) if in_w is not None else None, make(out_r), make(err_r)
    )


def _with_install(policy: SandboxPolicy, argv0: str, env: Mapping[str, str]) -> SandboxPolicy:
    """``policy`` showing what the program needs even if it lives in the hidden home: the
    folder of its real executable, the runtimes' install folder, and this Python (a child may
    be ringleader's own MCP server)."""
    found = _resolve_executable(argv0, env)
    readable = [str(runtimes_dir()), sys.prefix, sys.base_prefix]
    if found is not None:
        readable.append(os.path.dirname(os.path.realpath(found)))
    return policy.with_paths(readable=readable)


def _resolve_executable(argv0: str, env: Mapping[str, str]) -> str | None:
    if os.sep in argv0:
        return argv0 if os.path.isfile(argv0) and os.access(argv0, os.X_OK) else None
    return shutil.which(argv0, path=env.get("PATH", os.defpath))


@asynccontextmanager
async def open_child(
    argv: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None = None,
    stdin: bool = False,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    stderr_tail_bytes: int = DEFAULT_STDERR_TAIL_BYTES,
    sigint_grace: float = DEFAULT_SIGINT_GRACE,
    sigterm_grace: float = DEFAULT_SIGTERM_GRACE,
    adapter: str | None = None,
    session_key: str | None = None,
    install_hint: str | None = None,
    pid_namespace: bool = True,
    writable: Sequence[str | os.PathLike[str]] = (),
) -> AsyncGenerator[ChildProcess]:
    """Spawn ``argv`` in its own process group; terminate and reap the group on leaving.

    ``pid_namespace=False``: never in a PID namespace of its own. Every runtime child, the native
    runtime's ``bash`` commands and MCP stdio servers included, has one: a ringleader running in
    there (``ringleader mcp`` as an MCP server, ``ringleader run`` in a tool) records owners that
    others still recognize (:meth:`~orchestrator.core.lifetime.ProcessIdentity.locate`) and is
    told it is namespaced (``PID_NS_ENV``), so it never takes an owner it cannot see for dead.

    Args:
        argv: program and arguments (never a shell). A bare program name is looked up on ``env``'s
            ``PATH``.
        env: the child's complete environment; build it with :func:`child_env`.
        cwd: the child's working directory.
        stdin: give the child a stdin pipe (for :meth:`ChildProcess.send_line`); otherwise stdin is
            the null device (Claude Code ``-p`` and ``codex exec`` wait on an open stdin pipe).
        max_line_bytes: the stdout line cap.
        stderr_tail_bytes: how much of the end of stderr to keep.
        sigint_grace: seconds between SIGINT and SIGTERM during :meth:`ChildProcess.terminate`.
        sigterm_grace: seconds between SIGTERM and SIGKILL.
        adapter: adapter id recorded on errors.
        session_key: session key recorded on errors.
        install_hint: how to install the program, carried by :class:`RuntimeNotFoundError`.
        writable: folders the child must be able to change besides its ``cwd`` (its own state,
            e.g. a gateway's), when the run is sandboxed (:mod:`orchestrator.core.sandbox`).

    Raises:
        RuntimeNotFoundError: the program does not exist or is not executable.
        RuntimeStartError: spawning failed for another reason (bad ``cwd``, resource limits, …).
    """
    if not argv:
        raise RuntimeStartError("empty argv", adapter=adapter, session_key=session_key)
    if sigint_grace < 0 or sigterm_grace < 0 or math.isnan(sigint_grace + sigterm_grace):
        raise ValueError("grace periods must be non-negative")
    args = [os.fspath(a) for a in argv]
    env = dict(env)
    # whatever key the child is given, it may print: redact it by value from now on
    register_env_secrets(env)
    if _resolve_executable(args[0], env) is None:
        hint = f"; {install_hint}" if install_hint else ""
        raise RuntimeNotFoundError(
            f"runtime binary not found or not executable: {args[0]}{hint}",
            path=args[0],
            install_hint=install_hint,
            adapter=adapter,
            session_key=session_key,
        )
    policy = current_sandbox.get()
    if policy is not None:  # the run is confined: its children go through bubblewrap
        policy = _with_install(policy, args[0], env).with_paths(
            writable=[os.fspath(p) for p in writable]
        )
        args = wrap(policy, args, os.fspath(cwd) if cwd else None)
    mark = uuid.uuid4().hex
    env[MARK_ENV] = mark  # inherited by every descendant, whatever session it moves to
    registry = current_process_registry.get()
    record = (
        None
        if registry is None
        else functools.partial(registry.record, mark, adapter=adapter, session_key=session_key)
    )
    prefix = (
        await trio.to_thread.run_sync(_pid_namespace_prefix)  # probed once
        if pid_namespace
        else None
    )
    if prefix:  # a ringleader in there cannot see the processes outside: see PID_NS_ENV
        env[PID_NS_ENV] = "1"
    try:
        proc = await _spawn(
            [*prefix, *args] if prefix else args, stdin=stdin, env=env, cwd=cwd, on_spawned=record
        )
    except OSError as exc:
        raise RuntimeStartError(
            f"could not start {args[0]}: {exc}", adapter=adapter, session_key=session_key
        ) from exc
    child = ChildProcess(
        proc,
        args,
        framer=LineFramer(max_line_bytes, adapter=adapter, session_key=session_key),
        stderr_tail_bytes=stderr_tail_bytes,
        sigint_grace=sigint_grace,
        sigterm_grace=sigterm_grace,
        adapter=adapter,
        session_key=session_key,
        mark=mark,
        namespaced=bool(prefix),
    )
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(child._drain_stderr)  # pyright: ignore[reportPrivateUsage]
            try:
                yield child
            finally:
                with trio.CancelScope(shield=True):
                    await child._shutdown()  # pyright: ignore[reportPrivateUsage]
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The stderr task never raises, so a group here wraps what the caller's body raised: give
        # the caller its own exception back, not a group it never asked for.
        if len(group.exceptions) != 1:
            raise
        exc = group.exceptions[0]
        context = exc.__context__
        try:
            raise exc
        finally:
            exc.__context__ = context
            del exc, context
    finally:
        # Reached without _shutdown only if the nursery itself failed; make sure of the group.
        if not child._term_done.is_set():  # pyright: ignore[reportPrivateUsage]
            with trio.CancelScope(shield=True):
                await child.terminate()
        if registry is not None and not child.group_survived:
            registry.forget(mark)
