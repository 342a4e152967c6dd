"""The README's and the docs' pictures of the board, taken in a real browser (Debian's chromium
through Playwright) against a real ``ringleader serve``: the board with runs done and one waiting
for approval, the compare page of a side-by-side task, a run's diff, and that diff landed on the
branch. Each scene is checked before its picture is saved to ``docs/images/`` (see
``tests/docs_images.py`` for when a picture is rewritten)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import docs_images
from tests.orchestrator.review_kit import GIT_ID, git, make_runs

from .conftest import Served, native_turns, start_native_model, stop, write_script

TIMEOUT_MS = 30_000
THIS = Path(__file__)


def print_of(scene: str) -> str:
    return docs_images.fingerprint((*docs_images.BOARD_SOURCES, THIS), scene)


def parser_fix_frames() -> list[Any]:
    return [
        {"type": "init", "sessionId": "s", "model": "scripted-model"},
        {"type": "text", "text": "Running the parser tests first.\n"},
        {
            "type": "tool-call",
            "id": "t1",
            "name": "bash",
            "input": {"command": "pytest tests/test_parser.py -q"},
        },
        {"type": "tool-result", "id": "t1", "name": "bash", "output": "1 failed, 23 passed"},
        {"type": "sleep", "seconds": 0.2},
        {"type": "text", "text": "Fixed the off-by-one in parse_range(); 24 passed.\n"},
        {"type": "usage", "inputTokens": 5120, "outputTokens": 640, "costUsd": 0.0187},
        {"type": "result", "ok": True, "summary": "Fixed the off-by-one in parse_range()."},
    ]


def test_the_board_with_runs_done_and_one_waiting_for_approval(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    script = write_script(tmp_path, "scripted.json", parser_fix_frames())
    model, config = start_native_model(
        tmp_path,
        board_env,
        native_turns(
            {
                "text": "The build directory is stale; cleaning it.",
                "tool_calls": [{"name": "bash", "input": {"command": "make clean"}}],
            },
            {"text": "Cleaned."},
        ),
    )
    server = Served(tmp_path, board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)}, config)
    try:
        server.start()
        page = browser.new_page()
        page.goto(server.page_url)
        page.wait_for_selector('#conn[data-state="live"]', timeout=TIMEOUT_MS)
        prompts = [
            "Fix the failing parser test.",
            "Add a --verbose flag to the CLI.",
            "Document the public API of parse.py.",
        ]
        for prompt in prompts:
            answer = server.post("/tasks", json={"prompt": prompt, "runtime": "scripted"})
            assert answer.status_code == 201, answer.text
        waiting = server.post(
            "/tasks", json={"prompt": "Clean the build directory.", "runtime": "native"}
        )
        assert waiting.status_code == 201, waiting.text
        page.wait_for_function(
            "() => document.querySelectorAll('article.card[data-column=\"done\"]').length === 3",
            timeout=TIMEOUT_MS,
        )
        card = page.wait_for_selector('article.card[data-column="waiting"]', timeout=TIMEOUT_MS)
        assert card is not None
        assert "Clean the build directory." in (card.text_content() or "")
        pending = server.get("/approvals").json()
        assert [(p["tool"], p["input"]["command"]) for p in pending] == [("bash", "make clean")]
        titles = page.eval_on_selector_all(
            'article.card[data-column="done"] .title', "ts => ts.map(t => t.textContent)"
        )
        assert sorted(titles) == sorted(prompts)
        page.set_viewport_size({"width": 1440, "height": 500})
        docs_images.save(
            "board.png", print_of("board"), lambda path: page.screenshot(path=str(path))
        )
    finally:
        server.close()
        stop(model)


CLI = """import argparse


def main() -> None:
    parser = argparse.ArgumentParser(prog="greet")
    parser.add_argument("name")
    args = parser.parse_args()
    print(f"hello {args.name}")
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "greeter"
    root.mkdir()
    (root / "cli.py").write_text(CLI)
    (root / "README.md").write_text("# greeter\n")
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "init", cwd=root)
    return root


@pytest.fixture
def reviewed(tmp_path: Path, board_env: dict[str, str], repo: Path) -> Iterator[Served]:
    """Three runs of one side-by-side task that each added a --verbose flag their own way."""
    made = make_runs(repo, tmp_path / "state", ("native", "claude-code", "codex"))
    flag = '    parser.add_argument("-v", "--verbose", action="store_true")\n'
    verbose = CLI.replace(
        '    parser.add_argument("name")\n', '    parser.add_argument("name")\n' + flag
    )
    (made["native"] / "cli.py").write_text(verbose)
    (made["claude-code"] / "cli.py").write_text(
        verbose.replace(
            '    print(f"hello {args.name}")\n',
            '    if args.verbose:\n        print("greeting", args.name)\n'
            '    print(f"hello {args.name}")\n',
        )
    )
    (made["codex"] / "cli.py").write_text(
        verbose.replace(
            '    print(f"hello {args.name}")\n',
            '    if args.verbose:\n        print("greeting", args.name)\n'
            '    print(f"hello {args.name}")\n',
        )
    )
    (made["codex"] / "README.md").write_text(
        "# greeter\n\n`greet NAME [--verbose]`: `--verbose` says what it does.\n"
    )
    server = Served(tmp_path, board_env | GIT_ID, None)
    server.start()
    try:
        yield server
    finally:
        server.close()


def test_the_compare_page_a_diff_and_the_diff_landed(
    reviewed: Served, repo: Path, browser: Any
) -> None:
    page = browser.new_page()
    codex = "runtime:codex:task:t-codex:run-0001"
    page.goto(f"{reviewed.url}/run/{codex}#token={reviewed.token}")
    page.wait_for_selector("#compare-link:not([hidden])", timeout=TIMEOUT_MS)
    page.click("#compare-link")
    page.wait_for_selector('[data-testid="compare-files"] tr[data-path]', timeout=TIMEOUT_MS)
    assert page.text_content("#compare-title") == "task task1: 3 runs"
    verdict = page.text_content(
        '[data-testid="compare-files"] tr[data-path="README.md"] td:last-child'
    )
    assert verdict == "only codex"
    cli_row = page.text_content('[data-testid="compare-files"] tr[data-path="cli.py"]') or ""
    assert "differ" in cli_row
    docs_images.save(
        "compare.png",
        print_of("compare"),
        lambda path: page.screenshot(
            path=str(path), clip={"x": 0, "y": 0, "width": 1440, "height": 320}
        ),
    )

    page.goto(f"{reviewed.url}/run/{codex}#token={reviewed.token}")
    page.wait_for_selector('[data-testid="changes"]:not([hidden])', timeout=TIMEOUT_MS)
    page.wait_for_selector('details.diff-file[data-path="cli.py"][open]', timeout=TIMEOUT_MS)
    assert (page.text_content("#changes-total") or "").startswith("2 files, +5 −0")
    changes = page.locator("#changes")
    docs_images.save("diff.png", print_of("diff"), lambda path: changes.screenshot(path=str(path)))

    page.click("#apply-button")
    page.wait_for_function(
        "() => document.querySelector('#apply-result').textContent.includes('landed on main')",
        timeout=TIMEOUT_MS,
    )
    assert "--verbose" in (repo / "cli.py").read_text()
    assert git("log", "-1", "--format=%s", cwd=repo).strip() == "codex: added the greeting"
    docs_images.save(
        "landed.png", print_of("landed"), lambda path: changes.screenshot(path=str(path))
    )
