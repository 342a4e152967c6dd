"""In a real browser (Debian's chromium through Playwright) against a real ``ringleader serve``:
a run whose tool call was refused says so on its card and its page (the server's refusal fold,
orchestrator/core/refusals.py); the standing grants are listed on the board and revoked from it;
a diff's line numbers are reached and operated by keyboard alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from orchestrator.core.approvals import ApprovalBook, RunInfo
from orchestrator.core.asking import NO_ONE_TO_ASK
from orchestrator.engine.eventlog import EventLog
from tests.orchestrator.review_kit import GIT_ID, git, make_runs

from .conftest import Served, write_script
from .test_board_browser import card_selector, post_task
from .test_board_grants import listed_by_cli, plant_grants

TIMEOUT_MS = 30_000


def test_a_refused_call_is_on_the_card_and_the_grants_are_revocable_from_the_board(
    tmp_path: Path, board_env: dict[str, str], browser: Any, artifacts: Path
) -> None:
    frames: list[dict[str, Any]] = [
        {"type": "init", "sessionId": "x", "model": "scripted-model"},
        {"type": "tool-call", "id": "t1", "name": "bash", "input": {"command": "touch x"}},
        {"type": "sleep", "seconds": 0.5},
        {
            "type": "tool-result",
            "id": "t1",
            "name": "bash",
            "output": NO_ONE_TO_ASK,
            "isError": True,
        },
        {"type": "text", "text": "I could not write the file.\n"},
        {"type": "sleep", "seconds": 4},
        {"type": "result", "ok": True, "summary": "I could not write the file."},
    ]
    script = write_script(tmp_path, "refused.json", frames)
    state = Path(board_env["RINGLEADER_STATE_DIR"])
    plant_grants(state)

    async def scripted_grant() -> None:  # one that applies to the scripted run below
        here = RunInfo(runtime_id="scripted", cwd="/elsewhere")
        await ApprovalBook.in_state_dir(state).grant("Edit", "always", here, "ap-3")

    trio.run(scripted_grant)
    server = Served(tmp_path, board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)}, None)
    server.start()
    try:
        page = browser.new_page()
        page.goto(server.page_url)
        page.wait_for_selector('#conn[data-state="live"]', timeout=TIMEOUT_MS)
        # the grants the CLI lists, each with its Revoke button (named for what it revokes)
        page.wait_for_selector("#grants:not([hidden]) li.grant", timeout=TIMEOUT_MS)
        assert page.locator("#grants li.grant").count() == 3
        revoke = page.get_by_role(
            "button", name="Revoke: bash: allowed always on native in /w/repo"
        )
        # the page watches: the card says what was refused as soon as it was (the server's fold,
        # asked after a failed call), and still once the run has ended
        prefix = post_task(server, "scripted", "make the file")
        running = page.wait_for_selector(
            card_selector(prefix, "running") + ' [data-testid="refused"]', timeout=TIMEOUT_MS
        )
        assert running.text_content() == "1 tool call refused (needs approval)"
        done = page.wait_for_selector(
            card_selector(prefix, "done") + ' [data-testid="refused"]', timeout=TIMEOUT_MS
        )
        assert done.text_content() == "1 tool call refused (needs approval)"
        assert "nobody was asked" in (done.get_attribute("title") or "")
        card = page.locator(card_selector(prefix))
        assert card.locator('[data-testid="refused"]').count() == 1
        revoke.click()
        page.wait_for_function(
            "() => document.querySelectorAll('#grants li.grant').length === 2", timeout=TIMEOUT_MS
        )
        assert listed_by_cli(board_env) == [("write_file", "run"), ("Edit", "always")]
        page.screenshot(path=str(artifacts / "board-refused-and-grants.png"), full_page=True)
        # a fresh page starts from GET /board: the same line
        page.reload()
        again = page.wait_for_selector(
            card_selector(prefix, "done") + ' [data-testid="refused"]', timeout=TIMEOUT_MS
        )
        assert again.text_content() == "1 tool call refused (needs approval)"
        # the run page says it with what a person can do about it
        page.click(card_selector(prefix))
        hint = page.wait_for_selector('#run-summary [data-testid="refused"]', timeout=TIMEOUT_MS)
        text = hint.text_content() or ""
        assert text.startswith("1 tool call refused (needs approval): nobody was asked.")
        assert "ringleader serve" in text and "--approvals wait" in text
        # and lists the grants that apply to its run, revocable there too (by keyboard here)
        mine = page.wait_for_selector("#grants:not([hidden]) li.grant", timeout=TIMEOUT_MS)
        assert mine.text_content() == "Edit: allowed always on scripted in /elsewhere Revoke"
        assert page.locator("#grants li.grant").count() == 1
        page.focus("#grants li.grant button")
        page.keyboard.press("Enter")
        page.wait_for_selector("#grants[hidden]", state="attached", timeout=TIMEOUT_MS)
        assert listed_by_cli(board_env) == [("write_file", "run")]
    finally:
        server.close()


def test_a_diff_line_is_commented_on_by_keyboard_alone(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def main():\n    return 1\n")
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    state = Path(board_env["RINGLEADER_STATE_DIR"])
    made = make_runs(repo, state, ("native",))
    (made["native"] / "app.py").write_text("def main():\n    return 2\n")
    key = "runtime:native:task:t-native:run-0001"

    async def session() -> None:  # comments go to a run that recorded its session
        async with EventLog.open(state / "events.db") as log:
            await log.record_session(
                key,
                runtime_id="native",
                native_session_id="s1",
                codec_blob=None,
                origin_cwd=str(made["native"]),
            )
            await log.flush()

    trio.run(session)
    server = Served(tmp_path, board_env | GIT_ID, None)
    server.start()
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/run/{key}#token={server.token}")
        diff = 'details.diff-file[data-path="app.py"]'
        page.wait_for_selector(f"{diff}[open] .diff-row", timeout=TIMEOUT_MS)
        active = (
            "() => { const a = document.activeElement;"
            " return a ? [a.className, a.dataset.line ?? null, a.getAttribute('aria-label')]"
            " : null; }"
        )
        first = ["ln ln-new pick", "1", "comment on line 1 of app.py"]
        for _ in range(80):  # Tab through the page to the first line number
            page.keyboard.press("Tab")
            if page.evaluate(active) == first:
                break
        assert page.evaluate(active) == first
        page.keyboard.press("Enter")
        assert page.text_content("#comment-where") == "app.py, line 1"
        assert page.evaluate("() => document.activeElement.id") == "comment-text"
        page.keyboard.press("Escape")  # cancelled: back on the line number
        assert page.evaluate(active) == first
        assert page.is_hidden("#comment-box")
        page.keyboard.press(" ")
        assert page.text_content("#comment-where") == "app.py, line 1"
        for _ in range(3):  # Add comment, Cancel, then the next line's number
            page.keyboard.press("Tab")
        assert page.evaluate(active) == ["ln ln-new pick", "2", "comment on line 2 of app.py"]
        page.keyboard.press("Shift+Enter")  # the range from line 1
        assert page.text_content("#comment-where") == "app.py, lines 1–2"
        page.keyboard.type("return a constant")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")  # Add comment
        page.wait_for_selector("#comment-list li[data-comment]", timeout=TIMEOUT_MS)
        assert page.text_content("#comment-list li .comment-where") == "app.py:1-2"
        assert page.evaluate(active)[1] == "2"  # focus back where the person was
        [comment] = server.get(f"/runs/{key}/comments").json()
        assert (comment["file"], comment["start"], comment["end"]) == ("app.py", 1, 2)
    finally:
        server.close()
