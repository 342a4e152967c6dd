"""Item 11: the feed token comes from a file or the environment by default, so it never shows in
``ps``; ``--help`` says so, and ``--token`` (still accepted) is marked as discouraged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

TOKEN = "feed-token-4f1c9a0d7e"


def _serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    full = {**os.environ, "RINGLEADER_STATE_DIR": str(tmp_path / "state"), **(env or {})}
    if "RINGLEADER_FEED_TOKEN" not in (env or {}):
        full.pop("RINGLEADER_FEED_TOKEN", None)
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
    )


def test_help_says_where_the_token_comes_from() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    text = " ".join(result.stdout.split())
    assert "--token-file" in text
    assert "$RINGLEADER_FEED_TOKEN" in text
    assert "discouraged" in text and "ps" in text


@pytest.mark.parametrize("source", ["file", "file-env", "env"])
def test_token_from_a_file_or_the_environment_is_not_on_the_command_line(
    tmp_path: Path, source: str
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    if source == "file":
        args = ("--token-file", str(token_file))
    elif source == "file-env":
        env = {"RINGLEADER_FEED_TOKEN_FILE": str(token_file)}
    else:
        env = {"RINGLEADER_FEED_TOKEN": TOKEN}
    proc = _serve(tmp_path, *args, env=env)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.endswith("/events"), proc.stderr.read() if proc.stderr else ""
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert TOKEN.encode() not in cmdline
        assert httpx2.get(url.replace("/events", "/runs"), timeout=5).status_code == 401
        ok = httpx2.get(
            url.replace("/events", "/runs"),
            headers={"authorization": f"Bearer {TOKEN}"},
            timeout=5,
        )
        assert ok.status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_an_empty_token_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    proc = _serve(tmp_path, "--token-file", str(empty))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "is empty" in err
