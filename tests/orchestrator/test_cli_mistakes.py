"""Operator mistakes: each gets one clear line on stderr and exit code 2, never a traceback; the
last-resort handler keeps the traceback in a file; `--version`; help with examples; NO_COLOR."""

from __future__ import annotations

import os
import pty
import select
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def ringleader(
    *args: str | bytes, state: Path | None = None, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full["RINGLEADER_STATE_DIR"] = str(state or tempfile.mkdtemp(prefix="ringleader-cli-"))
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
        check=False,
        env=full,
        cwd=cwd,
    )


def one_line_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ringleader")
    return lines[0]


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


SCRIPTS: dict[str, tuple[bytes, str]] = {
    "malformed.json": (b'{"conversations": [', "not valid JSON"),
    "malformed.toml": (b"conversations = [", "not valid TOML"),
    "binary.json": (bytes(range(128, 256)), "not a text file"),
    "deep.json": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "shape.json": (b'{"conversations": 3}', "not a model-server script: conversations"),
    "shape.toml": (b'model = 3\n[[conversations]]\nname = "c"\n', "not a model-server script"),
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_bad_script_is_one_line(name: str, tmp_path: Path) -> None:
    content, expected = SCRIPTS[name]
    (tmp_path / name).write_bytes(content)
    line = one_line_error(ringleader("model-server", "--script", str(tmp_path / name)))
    assert expected in line
    assert name in line


def test_a_missing_or_unreadable_script_is_one_line(tmp_path: Path) -> None:
    missing = one_line_error(ringleader("model-server", "--script", str(tmp_path / "nope.json")))
    assert "no such file" in missing
    if os.getuid() == 0:  # root reads any file: a directory is the unreadable script here
        unreadable = one_line_error(ringleader("model-server", "--script", str(tmp_path)))
        assert "is a directory" in unreadable
    else:
        locked = tmp_path / "locked.json"
        locked.write_text("{}")
        locked.chmod(0)
        unreadable = one_line_error(ringleader("model-server", "--script", str(locked)))
        assert "cannot read it" in unreadable


def test_a_port_in_use_says_so_and_suggests_port_0(busy_port: int, tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"conversations": []}')
    for args in (
        ("serve", "--port", str(busy_port)),
        ("model-server", "--script", str(script), "--port", str(busy_port)),
    ):
        line = one_line_error(ringleader(*args))
        assert f"port {busy_port} on 127.0.0.1 is in use" in line
        assert "--port 0" in line


@pytest.mark.parametrize("port", ["65536", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(port: str, tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"conversations": []}')
    for args in (
        ("serve", "--port", port),
        ("model-server", "--script", str(script), "--port", port),
    ):
        result = ringleader(*args)
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        assert "--port" in result.stderr
        assert "out of range" in result.stderr or "not a port number" in result.stderr


def test_model_server_port_0_prints_its_url(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"conversations": []}')
    env = dict(os.environ, RINGLEADER_STATE_DIR=str(tmp_path))
    # stderr goes to a file (a full, undrained pipe would block the server before it prints its
    # URL) and the URL is awaited with a deadline: a server that never prints fails, not hangs
    with (
        (tmp_path / "stderr.txt").open("w+") as errors,
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "orchestrator.cli",
                "model-server",
                "--script",
                str(script),
                "--port",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=env,
        ) as server,
    ):
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], 120)
        if not ready:
            server.kill()
            pytest.fail(f"the model server printed no URL within 120 s: {errors.read()}")
        url = server.stdout.readline().strip()
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:  # leaving the `with` would wait for it forever
            server.kill()
            server.wait()
            errors.seek(0)
            pytest.fail(f"the model server ignored Ctrl-C for 30 s: {errors.read()}")
        errors.seek(0)
        err = errors.read()
    assert url.startswith("http://127.0.0.1:")
    assert int(url.rsplit(":", 1)[1]) > 0
    assert server.returncode == 0, err


def test_an_unusable_state_directory_is_one_line(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    for args in (
        ("run", "--runtime", "scripted", "hi"),
        ("replay", "--list"),
        ("serve", "--port", "0"),
    ):
        line = one_line_error(ringleader(*args, state=not_a_dir))
        assert f"the state directory {not_a_dir} is unusable" in line
        assert "RINGLEADER_STATE_DIR" in line


def test_an_invalid_utf8_prompt_is_refused() -> None:
    line = one_line_error(ringleader("run", "--runtime", "scripted", b"fix \xff\xfe it"))
    assert "the prompt is not valid UTF-8" in line


@pytest.mark.parametrize("prompt", ["", "   \n\t"])
def test_an_empty_prompt_is_refused(prompt: str) -> None:
    line = one_line_error(ringleader("run", "--runtime", "scripted", prompt))
    assert "the prompt is empty" in line


def test_an_internal_error_leaves_its_traceback_in_the_state_directory(tmp_path: Path) -> None:
    (tmp_path / "events.db").write_bytes(b"this is not a database\n" * 100)
    line = one_line_error(ringleader("replay", "--list", state=tmp_path), code=1)
    assert line.startswith("ringleader: internal error (DatabaseError:")
    (report,) = tmp_path.glob("crash-*.txt")
    assert str(report) in line
    text = report.read_text()
    assert text.startswith("Traceback") and "DatabaseError" in text


def test_version() -> None:
    result = ringleader("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == "ringleader 0.1.0"


def test_every_subcommand_and_option_has_a_description_and_an_example() -> None:
    main = ringleader("--help")
    assert main.returncode == 0
    commands = ["demo", "run", "batch", "runtimes", "replay", "serve", "model-server"]
    for command in commands:
        assert command in main.stdout
    assert "examples:" in main.stdout
    for command in commands:
        if command == "model-server":
            continue  # its own parser, below
        text = ringleader(command, "--help").stdout
        assert "examples:" in text, command
        assert f"ringleader {command}" in text.split("examples:")[1], command
        options = text.split("options:")[1].split("examples:")[0]
        for block in options.split("\n  -")[1:]:
            if block.startswith("h, --help"):
                continue
            assert "e.g." in block, (command, block)
    run = ringleader("run", "--help").stdout
    for needle in ("PROVIDER:MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "_BASE_URL"):
        assert needle in run
    server = ringleader("model-server", "--help")
    assert server.returncode == 0
    assert "--script" in server.stdout and "e.g." in server.stdout


def _pty_output(env: dict[str, str]) -> bytes:
    main_fd, child_fd = pty.openpty()
    full = dict(os.environ, RINGLEADER_STATE_DIR=tempfile.mkdtemp(), TERM="xterm-256color")
    full.pop("NO_COLOR", None)
    full.update(env)
    with subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "scripted", "hello"],
        stdin=child_fd,
        stdout=child_fd,
        stderr=child_fd,
        env=full,
    ) as proc:
        os.close(child_fd)
        chunks: list[bytes] = []
        while True:
            ready, _, _ = select.select([main_fd], [], [], 60)
            if not ready:
                break
            try:
                data = os.read(main_fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=60)
    os.close(main_fd)
    assert proc.returncode == 0, b"".join(chunks)
    return b"".join(chunks)


def test_no_color_gives_plain_lines_even_on_a_terminal() -> None:
    coloured = _pty_output({})
    assert b"\x1b[" in coloured  # the live view on a terminal (so the check below can fail)
    plain = _pty_output({"NO_COLOR": "1"})
    assert b"\x1b" not in plain
    text = plain.decode()
    assert "[scripted] Hello from the scripted runtime." in text
    assert "[scripted] ■ done: success" in text
    assert "comparison" in text


def test_a_reader_that_goes_away_is_not_an_internal_error(tmp_path: Path) -> None:
    """Issue 34 item 11: ``ringleader run … | head -1``: the pipe closes before the output is
    written; the command ends quietly (exit 0), no internal error."""
    env = dict(os.environ, RINGLEADER_STATE_DIR=str(tmp_path / "state"), NO_COLOR="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "scripted", "hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader left before anything was written
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0, err
    assert "internal error" not in err and "Traceback" not in err, err


def test_a_deleted_working_directory_is_one_line(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'mkdir {gone} && cd {gone} && rmdir {gone} && exec "$0" -m orchestrator.cli '
            "run --runtime scripted hi",
            sys.executable,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, RINGLEADER_STATE_DIR=str(tmp_path / "state")),
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "ringleader: the current directory no longer exists (deleted?); cd to one that does"
    )


def test_a_runtime_that_is_not_installed_exits_3(tmp_path: Path) -> None:
    result = ringleader(
        "run",
        "--runtime",
        "claude-code",
        "hi",
        state=tmp_path / "state",
        cwd=tmp_path,
        RINGLEADER_RUNTIMES_DIR=str(tmp_path / "no-runtimes"),
        NO_COLOR="1",
    )
    assert result.returncode == 3, result.stderr
    assert "claude-code is not installed" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("command", "events"),
    [
        ("run", True),
        ("batch", True),
        ("recover", True),
        ("config", False),
        ("doctor", False),
        ("approvals", False),
        ("runtimes", False),
        ("replay", False),
    ],
)
def test_json_help_says_what_each_command_prints(command: str, events: bool) -> None:
    """Issue 34 item 11: the events' --json help (a run key on each line) only on commands
    that print runs' events; the others say what they print."""
    shown = ringleader(command, "--help", COLUMNS="300")
    assert shown.returncode == 0, shown.stderr
    flat = " ".join(shown.stdout.split())
    assert "--json" in flat
    assert ("run key on each" in flat) is events, flat


def test_runtimes_json_without_ray_is_one_line() -> None:
    result = ringleader("runtimes", "--json")
    assert one_line_error(result) == (
        "ringleader: runtimes: --json lists the nodes of a Ray cluster; add --ray ADDRESS"
    )
