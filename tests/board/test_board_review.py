"""The run page's changes and apply in a real browser (Debian's chromium through Playwright)
against a real ``ringleader serve``: the changed files and their unified diff (long files
collapsed, run text inserted as text), an apply refused with its one line (a dirty working tree,
the checkout left as it was), then applied from the page."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.orchestrator.review_kit import GIT_ID, git, make_runs

from .conftest import Served

TIMEOUT_MS = 30_000
INJECTED = "<img src=x onerror=window.__pwned=1>"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "init", cwd=root)
    return root


@pytest.fixture
def served(tmp_path: Path, board_env: dict[str, str], repo: Path) -> Iterator[Served]:
    made = make_runs(repo, tmp_path / "state", ("native", "codex"))
    (made["native"] / "app.py").write_text(f"def main():\n    return 2  # {INJECTED}\n")
    (made["native"] / "hello.py").write_text("print('hello')\n")
    (made["native"] / "long.txt").write_text("".join(f"line {i}\n" for i in range(500)))
    (made["codex"] / "codex.txt").write_text("c\n")
    server = Served(tmp_path, board_env | GIT_ID, None)
    server.start()
    try:
        yield server
    finally:
        server.close()


def test_the_run_page_shows_the_diff_and_applies_the_run(
    served: Served, repo: Path, browser: Any, artifacts: Path
) -> None:
    key = "runtime:native:task:t-native:run-0001"
    answer = served.get(f"/runs/{key}/diff")
    assert answer.status_code == 200, answer.text
    assert {f["path"] for f in answer.json()["files"]} == {"app.py", "hello.py", "long.txt"}
    assert served.get("/runs/no-such-run/diff").status_code == 404

    page = browser.new_page()
    page.goto(f"{served.url}/run/{key}#token={served.token}")
    page.wait_for_selector('[data-testid="changes"]:not([hidden])', timeout=TIMEOUT_MS)
    page.wait_for_selector('details.diff-file[data-path="hello.py"][open]', timeout=TIMEOUT_MS)
    total = page.text_content("#changes-total") or ""
    assert total.startswith("3 files, +502 −1 · native in git worktree")
    added = page.locator('details.diff-file[data-path="app.py"] .diff-add').all_text_contents()
    assert added == [f"+    return 2  # {INJECTED}\n"]  # text, never markup
    assert page.evaluate("window.__pwned") is None
    long = page.locator('details.diff-file[data-path="long.txt"]')
    assert long.get_attribute("open") is None  # 500 lines: collapsed
    assert "collapsed" in (long.locator("summary").text_content() or "")
    page.screenshot(path=str(artifacts / "board-run-diff.png"), full_page=True)

    (repo / "app.py").write_text("the person's own edit\n")
    page.click("#apply-button")
    page.wait_for_selector('#apply-result[data-error="yes"]', timeout=TIMEOUT_MS)
    assert "uncommitted changes (app.py)" in (page.text_content("#apply-result") or "")
    assert (repo / "app.py").read_text() == "the person's own edit\n"
    assert not (repo / "hello.py").exists()

    git("checkout", "--", "app.py", cwd=repo)
    page.click("#apply-button")
    page.wait_for_function(
        "() => document.querySelector('#apply-result').textContent.includes('landed on main')",
        timeout=TIMEOUT_MS,
    )
    assert (repo / "hello.py").read_text() == "print('hello')\n"
    assert git("log", "-1", "--format=%s", cwd=repo).strip() == "native: added the greeting"
    applied = served.get(f"/runs/{key}/diff").json()["applied"]
    assert applied["landedOn"] == "main" and applied["branch"] == "ringleader/t-native-native"


def test_apply_needs_the_token_and_says_what_is_wrong(served: Served) -> None:
    key = "runtime:codex:task:t-codex:run-0001"
    denied = served.post(f"/runs/{key}/apply", json={}, headers={"authorization": "Bearer no"})
    assert denied.status_code == 401
    bad = served.post(f"/runs/{key}/apply", json={"mode": "rebase"})
    assert bad.status_code == 409 and bad.json()["error"] == "'mode' must be squash or merge"
    missing = served.post("/runs/nope/apply", json={})
    assert missing.status_code == 409 and "no run or workspace matches" in missing.json()["error"]
    done = served.post(f"/runs/{key}/apply", json={"onto": "main"})
    assert done.status_code == 200, done.text
    assert done.json()["landedOn"] == "main" and done.json()["how"] == "squash"


def test_the_compare_page_puts_the_runs_of_a_task_next_to_each_other(
    served: Served, browser: Any, artifacts: Path
) -> None:
    assert served.get("/compare-data/no-such-task").status_code == 404
    page = browser.new_page()
    page.goto(f"{served.url}/run/runtime:codex:task:t-codex:run-0001#token={served.token}")
    page.wait_for_selector("#compare-link:not([hidden])", timeout=TIMEOUT_MS)
    page.click("#compare-link")
    page.wait_for_selector('[data-testid="compare-files"] tr[data-path]', timeout=TIMEOUT_MS)
    assert page.text_content("#compare-title") == "task task1: 2 runs"
    runs = page.locator('[data-testid="compare-runs"] tr[data-label]')
    assert runs.count() == 2
    native = page.text_content('tr[data-label="native"]') or ""
    assert "3" in native and "+502 −1" in native
    verdicts = {
        path: page.text_content(
            f'[data-testid="compare-files"] tr[data-path="{path}"] td:last-child'
        )
        for path in ("app.py", "codex.txt", "long.txt")
    }
    assert verdicts == {
        "app.py": "only native",
        "codex.txt": "only codex",
        "long.txt": "only native",
    }
    page.click('tr[data-label="codex"] button.show-diff')
    page.wait_for_selector('[data-testid="compare-diff"][data-run="codex"]', timeout=TIMEOUT_MS)
    assert page.locator('[data-testid="compare-diff"] details.diff-file').count() == 1
    assert "+c" in (page.text_content('[data-testid="compare-diff"] .diff-add') or "")
    page.screenshot(path=str(artifacts / "board-compare.png"), full_page=True)


def test_the_diff_is_syntax_highlighted_under_the_boards_policy(
    served: Served, browser: Any
) -> None:
    """highlight.js (shipped in the package's static files) colours a .py file's diff; run text
    stays text; the page's Content-Security-Policy holds (no violation reported)."""
    key = "runtime:native:task:t-native:run-0001"
    page = browser.new_page()
    messages: list[str] = []

    def heard(message: Any) -> None:
        messages.append(str(getattr(message, "text", message)))

    page.on("console", heard)
    page.on("pageerror", heard)
    answer = page.goto(f"{served.url}/run/{key}#token={served.token}")
    assert answer is not None
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    app = 'details.diff-file[data-path="app.py"]'
    page.wait_for_selector(f"{app} .diff-row span.hljs-keyword", timeout=TIMEOUT_MS)
    assert page.get_attribute(f"{app} .diff-body", "data-language") == "py"
    keywords = page.locator(f"{app} .diff-row span.hljs-keyword").all_text_contents()
    assert "def" in keywords and "return" in keywords
    comment = page.locator(f"{app} .diff-add span.hljs-comment").all_text_contents()
    assert comment == [f"# {INJECTED}"]  # highlighted, and still text
    assert page.evaluate("window.__pwned") is None
    strings = page.locator('details.diff-file[data-path="hello.py"] span.hljs-string')
    assert strings.all_text_contents() == ["'hello'"]
    # line numbers: old and new side
    numbers = page.eval_on_selector_all(
        f"{app} .diff-row",
        "rows => rows.map(r => [r.querySelector('.ln-old').textContent, r.dataset.new])",
    )
    assert numbers == [["1", "1"], ["2", ""], ["", "2"]]
    # a long plain file: collapsed, built only when opened, never coloured
    long = page.locator('details.diff-file[data-path="long.txt"]')
    assert long.locator(".diff-row").count() == 0
    long.locator("summary").click()
    page.wait_for_selector('details.diff-file[data-path="long.txt"] .diff-row', timeout=TIMEOUT_MS)
    assert long.locator(".diff-row").count() == 500
    assert long.locator("[class^=hljs]").count() == 0
    violations = [m for m in messages if "Content Security Policy" in m or "Refused" in m]
    assert violations == [] and not [m for m in messages if "Error" in m], messages


def test_the_diff_follows_a_running_run_and_keeps_what_the_person_chose(
    tmp_path: Path, board_env: dict[str, str], repo: Path, browser: Any
) -> None:
    """While the run works the diff view refreshes by itself: a file the agent writes appears,
    and a file the person closed, the lines they selected and the comment they are typing stay."""
    made = make_runs(repo, tmp_path / "state", ("native",), status="running")
    ws = made["native"]
    (ws / "app.py").write_text("def main():\n    return 2\n")
    server = Served(tmp_path, board_env | GIT_ID, None)
    server.start()
    try:
        key = "runtime:native:task:t-native:run-0001"
        page = browser.new_page()
        page.goto(f"{server.url}/run/{key}#token={server.token}")
        app = 'details.diff-file[data-path="app.py"]'
        page.wait_for_selector(f"{app}[open] .diff-row", timeout=TIMEOUT_MS)
        page.click(f'{app} .diff-row[data-new="1"] .ln-new')
        page.fill("#comment-text", "half typed")
        page.locator(f"{app} > summary").click()  # the person closes it
        assert page.get_attribute(app, "open") is None
        (ws / "later.py").write_text("x = 1\n")  # the agent goes on working
        page.wait_for_selector('details.diff-file[data-path="later.py"][open]', timeout=TIMEOUT_MS)
        assert page.get_attribute(app, "open") is None  # still closed
        assert page.input_value("#comment-text") == "half typed"
        assert page.text_content("#comment-where") == "app.py, line 1"
        assert "2 files" in (page.text_content("#changes-total") or "")
    finally:
        server.close()


def test_a_diff_of_many_files_is_built_as_it_is_scrolled_to(
    tmp_path: Path, board_env: dict[str, str], repo: Path, browser: Any
) -> None:
    """A change to 120 files: the first files are built at once, the rest only when they come
    near the screen (a 2,000-file diff stays quick to open), and every one is there when
    scrolled to."""
    made = make_runs(repo, tmp_path / "state", ("native",))
    ws = made["native"]
    for i in range(120):
        (ws / f"f{i:03d}.py").write_text(f"value = {i}\n")
    server = Served(tmp_path, board_env | GIT_ID, None)
    server.start()
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/run/runtime:native:task:t-native:run-0001#token={server.token}")
        page.wait_for_selector(
            'details.diff-file[data-path="f000.py"] .diff-row', timeout=TIMEOUT_MS
        )
        assert page.locator("details.diff-file").count() == 120
        built = page.locator("details.diff-file:has(.diff-row)").count()
        assert 30 <= built < 120, built
        last = page.locator('details.diff-file[data-path="f119.py"]')
        assert last.locator(".diff-row").count() == 0
        last.scroll_into_view_if_needed()
        page.wait_for_selector(
            'details.diff-file[data-path="f119.py"] .diff-row span.hljs-number',
            timeout=TIMEOUT_MS,
        )
    finally:
        server.close()


def test_a_task_started_from_the_board_in_a_checkout_has_a_diff(
    tmp_path: Path, board_env: dict[str, str], repo: Path
) -> None:
    """`ringleader serve` started in a git checkout runs the board's tasks there: each records
    where it started, so its run page has a diff (what was uncommitted before is not in it)."""
    (repo / "app.py").write_text("my own uncommitted edit\n")
    server = Served(repo, board_env | GIT_ID, None)
    server.start()
    try:
        made = server.post("/tasks", json={"prompt": "say hello", "runtime": "scripted"})
        assert made.status_code == 201, made.text
        prefix = made.json()["runKeyPrefix"]
        key = ""
        for _ in range(600):
            cards = server.get("/board").json()["cards"]
            done = [c for c in cards if c["runKey"].startswith(prefix) and c["column"] == "done"]
            if done:
                key = done[0]["runKey"]
                break
            threading.Event().wait(0.1)
        assert key, "the board's task did not finish"
        shown = server.get(f"/runs/{key}/diff")
        assert shown.status_code == 200, shown.text
        body = shown.json()
        assert body["kind"] == "your checkout" and body["workspace"] == str(repo)
        assert body["files"] == []  # the edit was there before the run
    finally:
        server.close()
