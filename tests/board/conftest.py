"""Fixtures of the board's browser tests: a real ``ringleader serve`` (a child process), Debian's
chromium driven by Playwright's sync API (the tests are plain functions: the server is trio in
its own process, the browser driver stays out of trio)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("RINGLEADER_TEST_ARTIFACTS", REPO / "test-artifacts"))
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
START_TIMEOUT_S = 60.0


def chromium_path() -> str | None:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def first_line(proc: subprocess.Popen[str], timeout_s: float = START_TIMEOUT_S) -> str:
    """The child's first stdout line, or fail (with its stderr) after ``timeout_s``."""
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=timeout_s)
    except queue.Empty:
        proc.kill()
        pytest.fail(f"no output within {timeout_s}s: {proc.args}")
    if not line:
        err = proc.stderr.read() if proc.stderr else ""
        pytest.fail(f"{proc.args} exited before printing its URL: {err[-2000:]}")
    return line.strip()


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGINT) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


class Served:
    """A running ``ringleader serve``, restartable (same port, same log). The first start binds
    port 0 and reads the port the server got from its first line (no port picked here and bound
    later: another process could take it in between); a restart binds that port again."""

    def __init__(
        self, state: Path, env: dict[str, str], config: Path | None, extra: tuple[str, ...] = ()
    ) -> None:
        self.extra = extra
        self.state = state
        self.env = env
        self.config = config
        self.port = 0
        self.url = ""
        self.token = ""
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        args = [sys.executable, "-m", "orchestrator.cli", "serve", "--port", str(self.port)]
        if self.config is not None:
            args += ["--config", str(self.config)]
        args += self.extra
        self.proc = subprocess.Popen(
            args,
            cwd=self.state,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        events = urlsplit(first_line(self.proc))
        assert events.scheme == "http" and events.path == "/events", events
        assert events.hostname == "127.0.0.1" and events.port, events
        assert self.port in (0, events.port), f"restarted on {events.port}, not {self.port}"
        self.port = events.port
        self.url = f"http://127.0.0.1:{self.port}"
        # a generated token is printed once, on the events URL; a configured one never is
        self.token = parse_qs(events.query).get("token", [""])[0] or self.token

    @property
    def page_url(self) -> str:
        """The board's URL as printed: the token in the fragment."""
        return f"{self.url}/#token={self.token}"

    def auth(self, headers: dict[str, str] | None = None) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"} | (headers or {})

    def get(self, path: str, **kwargs: Any) -> httpx2.Response:
        """``GET url+path`` with the token (unless ``headers`` set an authorization)."""
        kwargs["headers"] = self.auth(kwargs.get("headers"))
        return httpx2.get(self.url + path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx2.Response:
        kwargs["headers"] = self.auth(kwargs.get("headers"))
        return httpx2.post(self.url + path, **kwargs)

    def kill(self) -> None:
        assert self.proc is not None
        stop(self.proc, signal.SIGKILL)

    def close(self) -> None:
        if self.proc is not None:
            stop(self.proc)


def scripted_frames(texts: list[str], *, pause_s: float, tail_sleep_s: float = 0) -> list[Any]:
    frames: list[Any] = [{"type": "init", "sessionId": "x", "model": "scripted-model"}]
    for n, text in enumerate(texts):
        frames.append({"type": "text", "text": text})
        frames.append({"type": "sleep", "seconds": pause_s})
        if n == 0:
            frames += [
                {"type": "tool-call", "id": "t1", "name": "bash", "input": {"command": "ls -l"}},
                {
                    "type": "tool-result",
                    "id": "t1",
                    "name": "bash",
                    "output": "\n".join(f"file-{i}.txt" for i in range(40)),
                },
            ]
    frames.append({"type": "usage", "inputTokens": 1200, "outputTokens": 340, "costUsd": 0.0123})
    if tail_sleep_s:
        frames.append({"type": "sleep", "seconds": tail_sleep_s})
    frames.append({"type": "result", "ok": True, "summary": "".join(texts)[-80:]})
    return frames


@pytest.fixture
def chromium() -> str:
    path = chromium_path()
    if path is None:
        # scripts/test installs it (scripts/install-chromium); only where that is impossible
        pytest.skip("chromium is not installed and cannot be here: run scripts/install-chromium")
    return path


@pytest.fixture
def browser(chromium: str, tmp_path: Path) -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is in the dev extra: scripts/setup"
    )
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1440, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def board_env(tmp_path: Path) -> dict[str, str]:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLEADER_")}
    env |= {
        "RINGLEADER_STATE_DIR": str(state),
        "NO_COLOR": "1",
        "RINGLEADER_MODEL_SERVER_KEY": "placeholder-key",
    }
    return env


def write_script(tmp_path: Path, name: str, frames: list[Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(frames), encoding="utf-8")
    return path


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def native_turns(*turns: dict[str, Any]) -> dict[str, Any]:
    """A model-server script of one conversation with ``turns``."""
    return {"conversations": [{"name": "native", "turns": list(turns)}]}


def start_native_model(
    tmp_path: Path, env: dict[str, str], script: dict[str, Any]
) -> tuple[subprocess.Popen[str], Path]:
    """A scripted model server (a child) playing ``script``, and a config file pointing the
    native runtime at it; ``stop`` the process when done."""
    model_script = tmp_path / "model.json"
    model_script.write_text(json.dumps(script))
    model = subprocess.Popen(
        [
            *(sys.executable, "-m", "orchestrator.cli", "model-server"),
            *("--script", str(model_script), "--port", "0"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    config = tmp_path / "ringleader.toml"
    config.write_text(
        "[runtimes.native]\n"
        f'base_url = "{first_line(model)}"\n'
        'api_key_env = "RINGLEADER_MODEL_SERVER_KEY"\n'
        'provider = "anthropic"\n'
        'model = "claude-haiku-4-5"\n'
    )
    return model, config
