"""Review comments over the board's HTTP actions (``POST /runs/KEY/comments``, ``GET`` them,
``POST /runs/KEY/comments/send``), on a real ``ringleader serve`` hosting the native runtime
against the scripted model server: a finished run gets a resumed turn hosted by the server; a
live run on a steerable runtime is steered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import trio

from orchestrator.engine import create_workspace

from .conftest import Served, start_native_model, stop

GREETER = 'def greet(name):\n    return "hi " + name\n'
REVIEWED = 'def greet(name: str) -> str:\n    return f"hi {name}"\n'


def git(*args: str, cwd: Path) -> None:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


Cards = list[dict[str, Any]]


def wait_for(fetch: Callable[[], Cards], ok: Callable[[Cards], bool], what: str) -> Cards:
    for _ in range(900):
        value = fetch()
        if ok(value):
            return value
        threading.Event().wait(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_comments_from_the_board_go_back_to_a_finished_run_as_a_resumed_turn(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greeter.py").write_text(GREETER)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    state = Path(board_env["RINGLEADER_STATE_DIR"])
    ws = trio.run(lambda: create_workspace(repo, "native", state_dir=state)).path
    script = {
        "conversations": [
            {
                "name": "review",
                "marker": "A reviewer left",
                "turns": [
                    {
                        "text": "On it.",
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "input": {"path": "greeter.py", "content": REVIEWED},
                            }
                        ],
                    },
                    {"text": "Added the hints."},
                ],
            },
            {"name": "task", "marker": "[[task]]", "turns": [{"text": "Looked at greet."}]},
        ]
    }
    model, config = start_native_model(tmp_path, board_env, script)
    try:
        first = subprocess.run(
            [
                *(sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "native"),
                *("--config", str(config), "--json", "[[task]] look at greet"),
            ],
            cwd=ws,
            env=board_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert first.returncode == 0, first.stderr
        key = json.loads(first.stdout.splitlines()[0])["runKey"]
        server = Served(tmp_path, board_env, config)
        server.start()
        try:
            url = server.url
            bearer = server.auth()  # the token serve printed (every read and action needs it)
            comments = f"{url}/runs/{key}/comments"
            body = {"file": "greeter.py", "start": 1, "end": 2, "text": "add type hints"}
            # the action rules: a token, a JSON body, no foreign origin
            assert httpx2.post(comments, json=body, timeout=60).status_code in (401, 403)
            assert (
                httpx2.post(
                    comments, content=b"file=x", headers=bearer | {"content-type": "text/plain"}
                ).status_code
                == 415
            )
            foreign = bearer | {"origin": "http://evil.example"}
            assert httpx2.post(comments, json=body, headers=foreign).status_code == 403
            bad = httpx2.post(comments, json=body | {"end": 9}, headers=bearer, timeout=60)
            assert bad.status_code == 409 and "past its end" in bad.json()["error"]

            made = httpx2.post(comments, json=body, headers=bearer, timeout=60)
            assert made.status_code == 201, made.text
            assert made.json()["lines"] == GREETER.splitlines()
            listed = httpx2.get(comments, headers=bearer, timeout=60).json()
            assert [(c["file"], c["start"], c["end"], c["sentMs"]) for c in listed] == [
                ("greeter.py", 1, 2, None)
            ]
            sent = httpx2.post(comments + "/send", json={}, headers=bearer, timeout=60)
            assert sent.status_code == 202, sent.text
            answer = sent.json()
            assert answer["via"] == "resume"
            prefix = answer["runKeyPrefix"]
            cards = wait_for(
                lambda: httpx2.get(url + "/board", headers=bearer, timeout=60).json()["cards"],
                lambda cs: any(
                    c["runKey"].startswith(prefix) and c["column"] == "done" for c in cs
                ),
                "the follow-up run to finish",
            )
            [follow] = [c for c in cards if c["runKey"].startswith(prefix)]
            assert follow["resumedFrom"] == key  # the same session, resumed
            assert (ws / "greeter.py").read_text() == REVIEWED  # the agent acted on it
            done = httpx2.get(comments, headers=bearer, timeout=60).json()
            assert done[0]["sentVia"] == "resume" and done[0]["followUp"] == prefix
            again = httpx2.post(comments + "/send", json={}, headers=bearer, timeout=60)
            assert again.status_code == 409 and "no comments waiting" in again.json()["error"]
        finally:
            server.close()
    finally:
        stop(model)


def test_comments_sent_to_a_live_steerable_run_are_steered_into_it(
    tmp_path: Path, board_env: dict[str, str]
) -> None:
    state = Path(board_env["RINGLEADER_STATE_DIR"])
    (state / "notes.txt").write_text("first line\nsecond line\n")  # serve's runs work here
    script = {
        "conversations": [
            {
                "name": "live",
                "turns": [
                    {"text": "working " * 60, "chunk_chars": 8, "chunk_delay_s": 0.1},
                    {"text": "Steered: I read the comment."},
                ],
            }
        ]
    }
    model, config = start_native_model(tmp_path, board_env, script)
    try:
        server = Served(state, board_env, config)
        server.start()
        try:
            url = server.url
            bearer = server.auth()  # the token serve printed (every read and action needs it)
            started = httpx2.post(
                url + "/tasks", json={"prompt": "take notes", "runtime": "native"}, headers=bearer
            )
            assert started.status_code == 201, started.text
            prefix = started.json()["runKeyPrefix"]
            cards = wait_for(
                lambda: httpx2.get(url + "/board", headers=bearer, timeout=60).json()["cards"],
                lambda cs: any(
                    c["runKey"].startswith(prefix) and "working" in (c["lastLine"] or "")
                    for c in cs
                ),
                "the run to be streaming",
            )
            [card] = [c for c in cards if c["runKey"].startswith(prefix)]
            key = card["runKey"]
            comments = f"{url}/runs/{key}/comments"
            made = httpx2.post(
                comments,
                json={"file": "notes.txt", "start": 2, "text": "expand this"},
                headers=bearer,
                timeout=60,
            )
            assert made.status_code == 201, made.text
            sent = httpx2.post(comments + "/send", json={}, headers=bearer, timeout=60)
            assert sent.status_code == 202, sent.text
            assert sent.json() == {"ok": True, "via": "steer", "run": key}
            listed = httpx2.get(comments, headers=bearer, timeout=60).json()
            assert listed[0]["sentVia"] == "steer" and listed[0]["followUp"] == key
            wait_for(
                lambda: httpx2.get(url + "/board", headers=bearer, timeout=60).json()["cards"],
                lambda cs: any(c["runKey"] == key and c["column"] == "done" for c in cs),
                "the steered run to finish",
            )
            events = httpx2.get(f"{url}/runs/{key}", headers=bearer, timeout=60).text
            assert "Steered: I read the comment." in events  # a second turn, after the steer
        finally:
            server.close()
    finally:
        stop(model)


GREETER4 = 'def greet(name):\n    return "hi " + name\n\ndef bye():\n    return "bye"\n'


def test_lines_selected_on_the_run_page_are_sent_to_the_agent_as_comments(
    tmp_path: Path, board_env: dict[str, str], browser: Any, artifacts: Path
) -> None:
    """In a real browser: a click on a line number, a shift-click for a range, two comments
    collected, sent; the agent's session resumes with one turn quoting both, and acts on it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greeter.py").write_text(GREETER)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    script = {
        "conversations": [
            {
                "name": "review",
                "marker": "A reviewer left 2 comments",
                "turns": [
                    {
                        "text": "On it.",
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "input": {"path": "greeter.py", "content": REVIEWED},
                            }
                        ],
                    },
                    {"text": "Added the hints and dropped bye."},
                ],
            },
            {
                "name": "task",
                "marker": "[[task]]",
                "turns": [
                    {
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "input": {"path": "greeter.py", "content": GREETER4},
                            }
                        ]
                    },
                    {"text": "Added bye."},
                ],
            },
        ]
    }
    model, config = start_native_model(tmp_path, board_env, script)
    try:
        # a run in the person's own checkout: its starting point is recorded, so it has a diff
        first = subprocess.run(
            [
                *(sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "native"),
                *("--config", str(config), "--json", "[[task]] add bye"),
            ],
            cwd=repo,
            env=board_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert first.returncode == 0, first.stderr
        key = json.loads(first.stdout.splitlines()[0])["runKey"]
        assert (repo / "greeter.py").read_text() == GREETER4
        server = Served(tmp_path, board_env, config)
        server.start()
        try:
            page = browser.new_page()
            page.goto(f"{server.url}/run/{key}#token={server.token}")
            diff = 'details.diff-file[data-path="greeter.py"]'
            page.wait_for_selector(f"{diff}[open] .diff-row", timeout=30_000)

            def number(line: int) -> str:
                return f'{diff} .diff-row[data-new="{line}"] .ln-new'

            page.click(number(1))
            page.click(number(2), modifiers=["Shift"])
            assert page.text_content("#comment-where") == "greeter.py, lines 1–2"
            selected = page.eval_on_selector_all(
                f"{diff} .diff-row.selected", "rows => rows.map(r => r.dataset.new)"
            )
            assert selected == ["1", "2"]
            page.fill("#comment-text", "add type hints")
            page.click("#comment-add")
            page.wait_for_selector("#comment-list li:nth-child(1)", timeout=30_000)
            page.click(number(4))
            assert page.text_content("#comment-where") == "greeter.py, line 4"
            page.fill("#comment-text", "drop bye, nobody calls it")
            page.click("#comment-add")
            page.wait_for_selector("#comment-list li:nth-child(2)", timeout=30_000)
            page.click(number(5))  # a third one, then taken back before sending
            page.fill("#comment-text", "second thoughts")
            page.click("#comment-add")
            page.wait_for_selector("#comment-list li:nth-child(3)", timeout=30_000)
            page.click("#comment-list li:nth-child(3) button.comment-remove")
            page.wait_for_selector("#comment-list li:nth-child(3)", state="detached")
            assert page.locator("#comment-list li").all_text_contents() == [
                "greeter.py:1-2 add type hints remove",
                "greeter.py:4 drop bye, nobody calls it remove",
            ]
            commented = page.eval_on_selector_all(
                f"{diff} .diff-row.commented", "rows => rows.map(r => r.dataset.new)"
            )
            assert commented == ["1", "2", "4"]
            page.screenshot(path=str(artifacts / "board-comments.png"), full_page=True)
            page.click("#comments-send")
            page.wait_for_function(
                "() => document.querySelector('#comment-notice').textContent"
                ".includes('resumes its session')",
                timeout=30_000,
            )
            assert page.is_hidden("#comments")  # nothing waiting any more

            bearer = server.auth()
            listed = httpx2.get(
                f"{server.url}/runs/{key}/comments", headers=bearer, timeout=60
            ).json()
            assert [(c["file"], c["start"], c["end"], c["sentVia"]) for c in listed] == [
                ("greeter.py", 1, 2, "resume"),
                ("greeter.py", 4, 4, "resume"),
            ]  # the withdrawn one is gone
            gone = server.post(f"/runs/{key}/comments/withdraw", json={"id": listed[0]["id"]})
            assert gone.status_code == 409 and "sent already" in gone.json()["error"]
            prefix = listed[0]["followUp"]
            cards = wait_for(
                lambda: httpx2.get(server.url + "/board", headers=bearer, timeout=60).json()[
                    "cards"
                ],
                lambda cs: any(
                    c["runKey"].startswith(prefix) and c["column"] == "done" for c in cs
                ),
                "the follow-up run to finish",
            )
            [follow] = [c for c in cards if c["runKey"].startswith(prefix)]
            assert follow["resumedFrom"] == key  # the same session, resumed
            # the one turn the agent got: both comments, each with its file, lines and text
            prompt = follow["title"]
            assert prompt.startswith("A reviewer left 2 comments on your changes.")
            assert "1. greeter.py, lines 1-2:\n    1 | def greet(name):\n" in prompt
            assert "Comment: add type hints" in prompt
            assert "2. greeter.py, line 4:\n    4 | def bye():\n" in prompt
            assert "Comment: drop bye, nobody calls it" in prompt
            assert "second thoughts" not in prompt
            assert (repo / "greeter.py").read_text() == REVIEWED  # and it acted on them
        finally:
            server.close()
    finally:
        stop(model)
