"""The shared child-process driver, tested with real child processes (no mocks)."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from adapters._jsonl import Frame
from adapters._process import _SPAWNER, PID_NAMESPACE_ENV, ChildProcess, child_env, open_child  # pyright: ignore[reportPrivateUsage]
from orchestrator.core.errors import (
    LineTooLongError,
    RuntimeExitedError,
    RuntimeNotFoundError,
    RuntimeStartError,
)
from orchestrator.core.lifetime import ProcessRegistry, current_process_registry

GRACE = 0.3


def py(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def env() -> dict[str, str]:
    return child_env(extra={"PYTHONUNBUFFERED": "1"})


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (an init that does not reap leaves zombies)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


async def read_all(child: ChildProcess) -> list[Frame]:
    out: list[Frame] = []
    async for batch in child.batches():
        out.extend(batch)
    return out


async def read_until(child: ChildProcess, marker: bytes) -> list[bytes]:
    """Lines up to and including ``marker`` (the child's way of saying its handlers are set)."""
    seen: list[bytes] = []
    while marker not in seen:
        batch = await child.receive_batch()
        assert batch, f"EOF before {marker!r}; got {seen!r}; stderr: {child.stderr_tail}"
        seen.extend(f for f in batch if isinstance(f, bytes))
    return seen


IGNORE_INT = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
IGNORE_INT_TERM = IGNORE_INT + "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"


async def test_lines_and_exit_code() -> None:
    code = """
        import sys
        sys.stdout.write('{"a":1}\\n{"b":2}\\r\\n\\n')
        sys.stdout.write('{"trunc')
        sys.exit(3)
    """
    async with open_child(py(code), env=env()) as child:
        frames = await read_all(child)
        assert await child.wait() == 3
    assert frames == [b'{"a":1}', b'{"b":2}', b"", b'{"trunc']
    assert child.returncode == 3
    assert not child.terminated_by_us


async def test_many_lines_arrive_in_batches() -> None:
    code = "import sys\nsys.stdout.write(''.join(f'{{\"i\":{i}}}\\n' for i in range(50000)))"
    async with open_child(py(code), env=env()) as child:
        batches = 0
        n = 0
        async for batch in child.batches():
            batches += 1
            n += len(batch)
        assert await child.wait() == 0
    assert n == 50000
    assert batches < n / 100  # one batch per pipe read, not per line


async def test_huge_line_reported_and_later_lines_still_arrive() -> None:
    code = "import sys\nsys.stdout.write('first\\n' + 'x' * 200000 + '\\nafter\\nlast\\n')"
    async with open_child(py(code), env=env(), max_line_bytes=1000, adapter="t") as child:
        frames = await read_all(child)
        assert await child.wait() == 0
    assert frames[0] == b"first"
    assert isinstance(frames[1], LineTooLongError)
    assert frames[1].limit == 1000
    assert frames[1].adapter == "t"
    assert frames[2:] == [b"after", b"last"]


async def test_stderr_tail_is_bounded_redacted_and_never_blocks_the_child() -> None:
    # 300 KiB of stderr is far more than a pipe holds: the child only finishes if it is drained.
    code = """
        import sys
        sys.stderr.write('noise\\n' * 50000)
        sys.stderr.write('auth failed for key sk-ant-api03-abcdefghijklmnop\\n')
        sys.stderr.write('api_key=hunter2hunter2 bye\\n')
        sys.exit(2)
    """
    async with open_child(py(code), env=env(), stderr_tail_bytes=1024) as child:
        assert await read_all(child) == []
        assert await child.wait() == 2
        tail = child.stderr_tail
        err = child.exit_error()
    assert len(tail) <= 1024
    assert tail.endswith("bye\n")
    assert "sk-ant-api03" not in tail
    assert "hunter2" not in tail
    assert "[REDACTED]" in tail
    assert isinstance(err, RuntimeExitedError)
    assert err.exit_code == 2
    assert err.stderr_tail == tail


async def test_sigint_is_tried_first_and_lines_after_it_arrive() -> None:
    # The child answers SIGINT with a last line and exit 0 within the 0.3 s grace. It takes the
    # signal with sigwait (blocked until then: one that comes before is kept pending, never
    # missed) and leaves with os._exit (no interpreter shutdown): with a Python handler and
    # sys.exit, a loaded machine outlasted the grace (SIGTERM came first: -15).
    code = """
        import os, signal
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        print('ready', flush=True)
        signal.sigwait({signal.SIGINT})
        print('{"type":"result","subtype":"interrupted"}', flush=True)
        os._exit(0)
    """
    async with open_child(py(code), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        await read_until(child, b"ready")
        async with trio.open_nursery() as nursery:
            rest: list[Frame] = []

            async def reader() -> None:
                rest.extend(await read_all(child))

            nursery.start_soon(reader)
            assert await child.terminate() == 0
    assert rest == [b'{"type":"result","subtype":"interrupted"}']
    assert child.terminated_by_us


async def test_child_ignoring_sigint_gets_sigterm() -> None:
    code = IGNORE_INT + "print('ready', flush=True)\ntime.sleep(30)"
    async with open_child(py(code), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        await read_until(child, b"ready")
        t0 = trio.current_time()
        assert await child.terminate() == -signal.SIGTERM
        assert 0.25 < trio.current_time() - t0 < 1.5
    assert child.terminated_by_us


async def test_child_ignoring_sigint_and_sigterm_gets_sigkill() -> None:
    code = IGNORE_INT_TERM + "print('ready', flush=True)\ntime.sleep(30)"
    async with open_child(py(code), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        await read_until(child, b"ready")
        t0 = trio.current_time()
        assert await child.terminate() == -signal.SIGKILL
        assert 0.55 < trio.current_time() - t0 < 2.0
    assert not child.group_survived


GRANDCHILD_CODE = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('g-ready', flush=True)\n"
    "time.sleep(60)\n"
)
GRANDCHILD = (
    "import subprocess, sys\n"
    f"g = subprocess.Popen([sys.executable, '-c', {GRANDCHILD_CODE!r}], stdout=subprocess.PIPE)\n"
    "assert g.stdout.readline() == b'g-ready\\n'\n"
    "print(g.pid, flush=True)\n"
    "print('ready', flush=True)\n"
)
"""A child that starts a grandchild ignoring SIGINT and SIGTERM, then prints its pid and 'ready'."""


async def test_grandchild_is_dead_after_terminate_even_when_the_child_exits_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the group mechanisms alone, as where no PID namespace can be made (the pids printed are
    # then the host's; in a namespace the kernel ends the grandchild with the namespace)
    monkeypatch.setenv(PID_NAMESPACE_ENV, "0")
    # The child dies on SIGINT at once; its grandchild ignores SIGINT and SIGTERM. Escalation must
    # continue on the group after the direct child is gone (the original executor's bug orphaned it).
    # "At once": by the signal's default action, in the kernel, as a plain CLI dies (and as the
    # fake CLI does). Python's own handler raises KeyboardInterrupt and then finalizes, which on
    # a loaded machine took longer than the 0.3 s grace (SIGTERM came first: -15), and a SIGINT
    # landing just before time.sleep() can be missed altogether (seen once: 30 s asleep).
    code = (
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_DFL)\n"
        + GRANDCHILD
        + "import time\ntime.sleep(30)"
    )
    async with open_child(py(code), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        lines = await read_until(child, b"ready")
        gpid = int(lines[0])
        assert alive(gpid)
        await child.terminate()
        assert child.returncode == -signal.SIGINT
        assert not alive(gpid)


async def test_grandchild_of_a_child_that_already_exited_is_cleaned_up_on_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the group mechanisms alone, as where no PID namespace can be made (the pids printed are
    # then the host's; in a namespace the kernel ends the grandchild with the namespace)
    monkeypatch.setenv(PID_NAMESPACE_ENV, "0")
    # The child exits by itself, leaving a grandchild that holds stdout open: leaving the scope kills it.
    async with open_child(
        py(GRANDCHILD), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE
    ) as child:
        lines = await read_until(child, b"ready")
        gpid = int(lines[0])
        assert await child.wait() == 0
        assert alive(gpid)
    assert not child.terminated_by_us  # the child had exited on its own
    assert not alive(gpid)


async def test_cancelling_the_enclosing_scope_reaps_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the group mechanisms alone, as where no PID namespace can be made (the pids printed are
    # then the host's; in a namespace the kernel ends the grandchild with the namespace)
    monkeypatch.setenv(PID_NAMESPACE_ENV, "0")
    code = IGNORE_INT + GRANDCHILD + "time.sleep(30)"
    gpid = 0
    seen: list[ChildProcess] = []
    with trio.CancelScope() as scope:
        async with open_child(
            py(code), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE
        ) as child:
            seen.append(child)
            lines = await read_until(child, b"ready")
            gpid = int(lines[0])
            scope.cancel()
            await trio.sleep_forever()
    assert scope.cancelled_caught
    (child,) = seen
    assert child.returncode == -signal.SIGTERM
    assert child.terminated_by_us
    assert not alive(child.pid)
    assert not alive(gpid)


async def test_a_spawn_cancelled_while_forking_is_still_reaped() -> None:
    """The fork runs on the spawner thread and is never abandoned half-way: a caller cancelled
    while it waits still gets its child, and leaving ``open_child`` terminates and reaps it."""
    gate = threading.Event()
    _SPAWNER.submit(gate.wait)  # the spawner is busy: open_child waits for its turn
    seen: list[ChildProcess] = []

    async def spawn(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            async with open_child(
                py("import time; time.sleep(30)"),
                env=env(),
                sigint_grace=GRACE,
                sigterm_grace=GRACE,
            ) as child:
                seen.append(child)
                await trio.sleep_forever()
        assert scope.cancelled_caught

    try:
        async with trio.open_nursery() as nursery:
            scope = await nursery.start(spawn)
            await wait_all_tasks_blocked()
            scope.cancel()  # while the fork waits for the spawner
            await wait_all_tasks_blocked()
            gate.set()
    finally:
        gate.set()
    (child,) = seen
    assert child.returncode is not None
    assert not alive(child.pid)


async def test_the_process_registry_holds_the_child_while_it_runs(tmp_path: Path) -> None:
    registry = ProcessRegistry(tmp_path / "procs")
    token = current_process_registry.set(registry)
    try:
        async with open_child(
            py("import time; time.sleep(30)"), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE
        ) as child:
            entry = json.loads((registry.directory / f"{child.mark}.json").read_text())
            assert entry["pid"] == child.pid
            assert entry["ownerPid"] == os.getpid()
    finally:
        current_process_registry.reset(token)
    assert list(registry.directory.iterdir()) == []  # forgotten once the tree is gone


def _alive_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds ``marker``."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    held = marker.encode() in f.read()
            except OSError:
                continue
            if held and alive(int(entry)):
                found.append(int(entry))
    return found


async def test_a_child_the_registry_cannot_record_is_not_left_running(tmp_path: Path) -> None:
    """Recording happens right after the fork; if it fails, the start fails and the child is
    killed and reaped (it would otherwise run on with nobody to end it)."""
    blocked = tmp_path / "procs"
    blocked.write_text("not a directory")
    marker = f"ringleader-unrecorded-{os.getpid()}-{id(blocked)}"
    token = current_process_registry.set(ProcessRegistry(blocked))
    try:
        with pytest.raises(RuntimeStartError):
            async with open_child(py(f"import time; time.sleep(30)  # {marker}"), env=env()):
                pytest.fail("must not start")
    finally:
        current_process_registry.reset(token)
    # the child was killed and reaped; inside its PID namespace the kernel ends the rest just
    # after (asynchronously: milliseconds, more on a loaded machine)
    with trio.move_on_after(10):
        while True:  # processes of another namespace: polled (nothing to wait on)
            if not _alive_with(marker):
                break
            await trio.sleep(0.05)
    assert _alive_with(marker) == []


async def test_leaving_the_scope_with_an_exception_terminates() -> None:
    code = "import time\nprint('ready', flush=True)\ntime.sleep(30)"
    seen: list[ChildProcess] = []

    async def body() -> None:
        async with open_child(
            py(code), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE
        ) as child:
            seen.append(child)
            await read_until(child, b"ready")
            raise KeyError("boom")

    with pytest.raises(KeyError):  # the caller's own exception, not wrapped in a group
        await body()
    assert seen[0].returncode is not None
    assert seen[0].terminated_by_us


async def test_unread_full_stdout_pipe_does_not_stall_shutdown() -> None:
    # The child blocks writing a full pipe nobody reads, and ignores SIGINT only after it writes:
    # shutdown drains stdout, so the child can finish writing and take the SIGINT... or the SIGTERM.
    code = "import sys, time\nsys.stdout.write('x' * 1_000_000 + '\\n')\nsys.stdout.flush()\ntime.sleep(30)"
    t0 = trio.current_time()
    async with open_child(py(code), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        pass
    assert child.returncode is not None
    assert trio.current_time() - t0 < 1.5


async def test_terminate_is_idempotent_and_concurrent_safe() -> None:
    code = IGNORE_INT + "print('ready', flush=True)\ntime.sleep(30)"
    async with open_child(py(code), env=env(), sigint_grace=GRACE, sigterm_grace=GRACE) as child:
        await read_until(child, b"ready")
        results: list[int | None] = []

        async def stop() -> None:
            results.append(await child.terminate())

        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(stop)
        assert results == [-signal.SIGTERM] * 3
        assert await child.terminate() == -signal.SIGTERM


async def test_terminate_after_natural_exit_is_not_an_abort() -> None:
    async with open_child(py("print('hi')"), env=env()) as child:
        assert await read_all(child) == [b"hi"]
        assert await child.wait() == 0
        assert await child.terminate() == 0
    assert not child.terminated_by_us


async def test_stdin_send_line_and_close() -> None:
    code = """
        import sys
        for line in sys.stdin:
            print(line.strip().upper(), flush=True)
        print('eof', flush=True)
    """
    async with open_child(py(code), env=env(), stdin=True) as child:
        await child.send_line(b'{"q":"a"}')
        await child.send_line(b"two\n")
        assert await read_until(child, b"TWO") == [b'{"Q":"A"}', b"TWO"]
        await child.close_stdin()
        assert await read_all(child) == [b"eof"]
        assert await child.wait() == 0


async def test_stdin_is_the_null_device_by_default() -> None:
    code = "import sys\nprint(repr(sys.stdin.read()))"
    async with open_child(py(code), env=env()) as child:
        assert await read_all(child) == [b"''"]
        with pytest.raises(RuntimeError, match="stdin=True"):
            await child.send_line(b"x")


async def test_own_process_group_and_allow_listed_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RINGLEADER_TEST_SECRET", "do-not-leak")
    monkeypatch.setenv("LC_RINGLEADER_TEST", "kept")
    # its own group and session: led by the child itself, or (0 seen from inside) by the PID
    # namespace's wrapper it runs under
    code = (
        "import os\nprint(os.getpgid(0) in (os.getpid(), 0), os.getsid(0) in (os.getpid(), 0))"
        "\nprint(sorted(os.environ))"
    )
    async with open_child(py(code), env=child_env(extra={"HOME": "/nonexistent"})) as child:
        frames = await read_all(child)
    assert frames[0] == b"True True"
    names = frames[1]
    assert isinstance(names, bytes)
    assert b"RINGLEADER_TEST_SECRET" not in names
    assert b"'LC_RINGLEADER_TEST'" in names
    assert b"'HOME'" in names


def test_child_env_allow_list() -> None:
    base = {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "HOME": "/root",
        "ANTHROPIC_API_KEY": "sk-ant-x",
        "TMPDIR": "/t",
    }
    assert child_env(base=base) == {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TMPDIR": "/t",
    }
    got = child_env(["PATH", "LC_*"], {"HOME": "/run/h", "PATH": "/x"}, base=base)
    assert got == {"PATH": "/x", "LC_ALL": "C", "HOME": "/run/h"}


async def test_missing_binary_raises_runtime_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "claude"
    with pytest.raises(RuntimeNotFoundError) as info:
        async with open_child(
            [missing, "--version"],
            env=env(),
            adapter="claude-code",
            install_hint="run scripts/install-runtimes claude-code",
        ):
            pytest.fail("must not start")
    assert info.value.path == str(missing)
    assert info.value.install_hint == "run scripts/install-runtimes claude-code"
    assert "install-runtimes claude-code" in str(info.value)
    with pytest.raises(RuntimeNotFoundError):
        async with open_child(["no-such-program-ringleader"], env=env()):
            pass


async def test_spawn_failure_raises_runtime_start_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeStartError):
        async with open_child(py("pass"), env=env(), cwd=tmp_path / "nope"):
            pass
    not_exec = tmp_path / "script"
    not_exec.write_text("#!/bin/sh\n")
    with pytest.raises(RuntimeNotFoundError):
        async with open_child([not_exec], env=env()):
            pass
