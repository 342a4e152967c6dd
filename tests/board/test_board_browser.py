"""The board in a real browser (Debian's chromium through Playwright) against a real
``ringleader serve``: cards move to their final column, text streams in, the page resumes after
the server is killed and restarted without duplicates, abort and steer work from the page, and
run text stays text. Screenshots of the board and a run page are saved as test artifacts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from .conftest import (
    Served,
    first_line,
    native_turns,
    scripted_frames,
    start_native_model,
    stop,
    write_script,
)

TIMEOUT_MS = 30_000
INJECTED = "<script>window.__pwned = 1</script><img src=x onerror=window.__pwned=2>"


@pytest.fixture
def served(tmp_path: Path, board_env: dict[str, str]) -> Iterator[Served]:
    script = write_script(
        tmp_path,
        "scripted.json",
        scripted_frames(
            ["Looking at the files.\n", f"They print {INJECTED}\n", "All done: 40 files.\n"],
            pause_s=0.6,
        ),
    )
    env = board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)}
    server = Served(tmp_path, env, None)
    server.start()
    try:
        yield server
    finally:
        server.close()


def post_task(server: Served, runtime: str, prompt: str) -> str:
    answer = server.post("/tasks", json={"prompt": prompt, "runtime": runtime, "model": None})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["runKeyPrefix"]) + ":"


def card_selector(prefix: str, column: str | None = None) -> str:
    where = f'[data-column="{column}"]' if column else ""
    return f'article.card[data-run-key^="{prefix}"]{where}'


def test_cards_stream_and_move_to_their_final_column(
    served: Served, browser: Any, artifacts: Path
) -> None:
    page = browser.new_page()
    page.goto(served.page_url)
    page.wait_for_selector('#conn[data-state="live"]', timeout=TIMEOUT_MS)
    # every rendering of a card's last line, as it happened (each render makes new nodes, so
    # a batch of mutations still shows each intermediate line)
    page.evaluate(
        """() => { window.__lines = [];
            new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes)
                if (n.classList && n.classList.contains('last-line') && n.textContent)
                    window.__lines.push(n.textContent); })
            .observe(document.getElementById('board'), { childList: true, subtree: true }); }"""
    )
    # a task from the page's own form
    page.fill("#task-prompt", "count the files <b>bold?</b>")
    page.select_option("#task-runtime", "scripted")
    page.click("#new-task button[type=submit]")
    running = page.wait_for_selector(
        card_selector("runtime:scripted:task:", "running"), timeout=TIMEOUT_MS
    )
    assert running is not None
    done = page.wait_for_selector(
        card_selector("runtime:scripted:task:", "done"), timeout=TIMEOUT_MS
    )
    assert done is not None
    assert done.query_selector(".title").text_content() == "count the files <b>bold?</b>"
    assert done.query_selector(".last-line").text_content() == "All done: 40 files."
    assert done.query_selector(".cost").text_content() == "$0.01"
    assert "1200 in" in done.query_selector(".tokens").text_content()
    assert page.evaluate("window.__pwned") is None
    # text streamed in: the card showed each line in turn while the run ran
    lines = list(dict.fromkeys(page.evaluate("window.__lines")))
    assert lines == ["Looking at the files.", f"They print {INJECTED}", "All done: 40 files."]
    # what the page projected live is what GET /board replays from the log
    snapshot = served.get("/board").json()
    shown = page.eval_on_selector_all(
        "article.card", "cs => cs.map(c => [c.dataset.runKey, c.dataset.column])"
    )
    assert sorted(map(tuple, shown)) == sorted(
        (c["runKey"], c["column"]) for c in snapshot["cards"]
    )
    page.screenshot(path=str(artifacts / "board.png"), full_page=True)

    # the run page: text (escaped), the tool call with its long output collapsed, cost, raw events
    done.click()
    page.wait_for_selector('[data-testid="done"]', timeout=TIMEOUT_MS)
    text = page.inner_text('[data-testid="transcript"]')
    assert INJECTED in text
    assert text.count("Looking at the files.") == 1
    assert page.evaluate("window.__pwned") is None
    assert page.query_selector("script:not([src])") is None
    tool = page.wait_for_selector('details.tool[data-tool-call="t1"]')
    assert "ls -l" in tool.query_selector(".tool-input").text_content()
    assert tool.query_selector("details.long-output") is not None  # 40 lines: collapsed
    assert "$0.01 after" in page.inner_text("#cost-label")
    page.click("#raw summary")
    page.wait_for_function("() => document.querySelector('#raw-events').textContent.length > 0")
    raw = page.inner_text("#raw-events").strip().splitlines()
    kinds = [json.loads(line)["kind"] for line in raw]
    assert kinds[-1] == "done" and kinds.count("done") == 1
    page.screenshot(path=str(artifacts / "run-page.png"), full_page=True)


def test_abort_from_the_page_ends_the_run_as_aborted(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    script = write_script(
        tmp_path, "slow.json", scripted_frames(["Working on it…\n"], pause_s=0.1, tail_sleep_s=120)
    )
    server = Served(tmp_path, board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)}, None)
    server.start()
    try:
        page = browser.new_page()
        page.goto(server.page_url)
        prefix = post_task(server, "scripted", "a long job")
        page.wait_for_selector(card_selector(prefix, "running"), timeout=TIMEOUT_MS)
        page.wait_for_function(
            f"""() => document.querySelector('{card_selector(prefix)} .last-line')
                      ?.textContent === 'Working on it…'""",
            timeout=TIMEOUT_MS,
        )
        page.locator(card_selector(prefix) + " button.abort").click(timeout=TIMEOUT_MS)
        page.wait_for_selector(card_selector(prefix, "aborted"), timeout=TIMEOUT_MS)
        # steer is refused clearly for a runtime that is not steerable
        key = page.get_attribute(card_selector(prefix), "data-run-key")
        refused = server.post("/steer", json={"run": key, "text": "go faster"})
        assert refused.status_code == 409 and "finished" in refused.json()["error"]
    finally:
        server.close()


def test_steer_is_refused_for_scripted_and_reaches_a_native_run(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    # the native runtime on the scripted model server: a slow first turn (a tool call), then a
    # second turn; the steer sent during the first must be in the second request
    model_script = tmp_path / "model.json"
    model_script.write_text(
        json.dumps(
            {
                "conversations": [
                    {
                        "name": "steer",
                        "turns": [
                            {
                                "text": "Let me look at the workspace, slowly. " * 4,
                                "chunk_chars": 8,
                                "chunk_delay_s": 0.25,
                                "tool_calls": [{"name": "list_files", "input": {"path": "."}}],
                            },
                            {"text": "Done, steered."},
                        ],
                    }
                ]
            }
        )
    )
    requests_log = tmp_path / "requests.jsonl"
    model = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "model-server",
            "--script",
            str(model_script),
            "--port",
            "0",
            "--log",
            str(requests_log),
        ],
        env=board_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        model_url = first_line(model)
        config = tmp_path / "ringleader.toml"
        config.write_text(
            "[runtimes.native]\n"
            f'base_url = "{model_url}"\n'
            'api_key_env = "RINGLEADER_MODEL_SERVER_KEY"\n'
            'provider = "anthropic"\n'
            'model = "claude-haiku-4-5"\n'
        )
        slow = write_script(
            tmp_path, "slow.json", scripted_frames(["hm\n"], pause_s=0.1, tail_sleep_s=120)
        )
        server = Served(tmp_path, board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(slow)}, config)
        server.start()
        try:
            page = browser.new_page()
            # scripted is not steerable: the page shows the refusal
            prefix = post_task(server, "scripted", "not steerable")
            page.goto(server.page_url)
            page.wait_for_selector(card_selector(prefix, "running"), timeout=TIMEOUT_MS).click()
            page.wait_for_selector("#actions:not([hidden])", timeout=TIMEOUT_MS)
            page.fill("#steer-text", "please hurry")
            page.click("#steer-form button")
            page.wait_for_function(
                "() => document.querySelector('#notice').textContent.includes('not steerable')",
                timeout=TIMEOUT_MS,
            )
            page.click("#abort")
            page.wait_for_selector('[data-testid="run-column"]:text("aborted")', timeout=TIMEOUT_MS)

            # native is: the steer reaches the model in the next request
            prefix = post_task(server, "native", "list the files")
            page.goto(server.page_url)
            page.wait_for_selector(card_selector(prefix, "running"), timeout=TIMEOUT_MS).click()
            page.wait_for_selector("#actions:not([hidden])", timeout=TIMEOUT_MS)
            page.fill("#steer-text", "STEER: also count them")
            page.click("#steer-form button")
            page.wait_for_function(
                "() => document.querySelector('#notice').textContent === 'steer sent'",
                timeout=TIMEOUT_MS,
            )
            page.wait_for_selector('[data-testid="run-column"]:text("done")', timeout=TIMEOUT_MS)
            assert "Done, steered." in page.inner_text('[data-testid="transcript"]')
        finally:
            server.close()
    finally:
        stop(model)
    requests = [json.loads(line) for line in requests_log.read_text().splitlines()]
    main = [r for r in requests if not r["side"]]
    assert len(main) == 2, requests
    # the second request carries the tool result with the steer (one user message: the
    # Messages API alternates roles); the loop reported it applied (steering_applied above)
    assert main[0]["roles"] == ["user"]
    assert main[1]["roles"] == ["user", "assistant", "user"]


def test_an_approval_request_waits_on_the_board_and_is_answered_from_the_run_page(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    """The native runtime asks before ``bash`` (its default policy); ``serve`` routes the
    question to the board: the card waits in its column until Allow is clicked."""
    model, config = start_native_model(
        tmp_path,
        board_env,
        native_turns(
            {
                "text": "I need to run a command.",
                "tool_calls": [{"name": "bash", "input": {"command": "echo approved-ok"}}],
            },
            {"text": "Done after approval."},
        ),
    )
    try:
        server = Served(tmp_path, board_env, config)
        server.start()
        try:
            page = browser.new_page()
            page.goto(server.page_url)
            prefix = post_task(server, "native", "echo something")
            page.wait_for_selector(card_selector(prefix, "waiting"), timeout=TIMEOUT_MS)
            pending = server.get("/approvals").json()
            assert [(p["tool"], p["input"]["command"]) for p in pending] == [
                ("bash", "echo approved-ok")
            ]
            page.click(card_selector(prefix))
            page.click('.approval button:text("Allow")', timeout=TIMEOUT_MS)
            page.wait_for_selector('[data-testid="run-column"]:text("done")', timeout=TIMEOUT_MS)
            tool = page.wait_for_selector("details.tool .tool-output")
            assert "approved-ok" in tool.text_content()
            assert "Done after approval." in page.inner_text('[data-testid="transcript"]')
            assert server.get("/approvals").json() == []
        finally:
            server.close()
    finally:
        stop(model)


def test_a_killed_and_restarted_server_resumes_the_page_without_duplicates(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    """The run goes on in another process (``ringleader run``) while the server is killed and
    restarted on the same port: the page reconnects with Last-Event-ID and ends with every
    event exactly once."""
    chunks = [f"chunk {n}\n" for n in range(12)]
    script = write_script(tmp_path, "long.json", scripted_frames(chunks, pause_s=0.5))
    env = board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)}
    server = Served(tmp_path, env, None)
    server.start()
    runner: subprocess.Popen[str] | None = None
    try:
        page = browser.new_page()
        page.goto(server.page_url)
        page.wait_for_selector('#conn[data-state="live"]', timeout=TIMEOUT_MS)
        runner = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "orchestrator.cli",
                "run",
                "--runtime",
                "scripted",
                "--json",
                "restart me",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        card = card_selector("runtime:scripted:task:", "running")
        page.wait_for_selector(card, timeout=TIMEOUT_MS)
        page.wait_for_function(
            f"() => document.querySelector('{card} .last-line')?.textContent === 'chunk 2'",
            timeout=TIMEOUT_MS,
        )
        key = page.get_attribute(card, "data-run-key")
        run_page = browser.new_page()
        run_page.goto(f"{server.url}/run/{key}#token={server.token}")
        run_page.wait_for_function(
            "() => document.querySelector('[data-testid=\"transcript\"]').innerText.includes('chunk 3')",
            timeout=TIMEOUT_MS,
        )
        server.kill()
        page.wait_for_selector('#conn[data-state="reconnecting"]', timeout=TIMEOUT_MS)
        server.start()
        page.wait_for_selector(card_selector("runtime:scripted:task:", "done"), timeout=TIMEOUT_MS)
        run_page.wait_for_selector('[data-testid="done"]', timeout=TIMEOUT_MS)
        assert runner.wait(timeout=60) == 0
        text = run_page.eval_on_selector_all(
            '[data-testid="assistant-text"]', "ns => ns.map(n => n.textContent).join('')"
        )
        assert text == "".join(chunks)  # every chunk once, in order
        logged = server.get(f"/runs/{key}").text.strip().splitlines()
        run_page.click("#raw summary")
        run_page.wait_for_function(
            "() => document.querySelector('#raw-events').textContent.length > 0"
        )
        raw = run_page.inner_text("#raw-events").strip().splitlines()
        assert [json.loads(x)["seq"] for x in raw] == [json.loads(x)["seq"] for x in logged]
        snapshot = {c["runKey"]: c for c in server.get("/board").json()["cards"]}
        events_shown = page.evaluate(
            f"() => document.querySelector('{card_selector('runtime:scripted:task:', 'done')}')"
            ".dataset.events"
        )
        assert int(events_shown) == snapshot[key]["events"] == len(logged)
    finally:
        if runner is not None:
            stop(runner)
        server.close()


def test_actions_need_the_token_in_a_header_and_a_json_body(served: Served) -> None:
    token = served.token
    body = {"prompt": "x", "runtime": "scripted"}
    assert httpx2.post(served.url + "/tasks", json=body).status_code == 401
    # a form post (what another site's page can send without a preflight) is refused
    form = served.post(
        "/tasks",
        data=body,
        headers={"authorization": f"Bearer {token}"},
    )
    assert form.status_code == 415
    cross = served.post(
        "/tasks",
        json=body,
        headers={"authorization": f"Bearer {token}", "origin": "http://evil.example"},
    )
    assert cross.status_code == 403
    unknown = served.post(
        "/tasks",
        json={"prompt": "x", "runtime": "nope"},
        headers={"authorization": f"Bearer {token}"},
    )
    assert unknown.status_code == 409 and "unknown runtime" in unknown.json()["error"]


def test_a_failed_run_does_not_leave_the_page_reconnecting(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    """Issue 34 item 5: a run's error event is not named ``error`` on the wire (EventSource
    takes that name for a broken connection): after a failed run the page stays live."""
    script = write_script(
        tmp_path,
        "fails.json",
        [
            {"type": "init", "sessionId": "x", "model": "scripted-model"},
            {"type": "text", "text": "trying\n"},
            {"type": "result", "ok": False, "errorMessage": "it broke"},
        ],
    )
    server = Served(tmp_path, board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)}, None)
    server.start()
    try:
        page = browser.new_page()
        page.goto(server.page_url)
        page.wait_for_selector('#conn[data-state="live"]', timeout=TIMEOUT_MS)
        page.evaluate(
            """() => { window.__states = [];
              new MutationObserver(() => window.__states.push(
                document.getElementById('conn').dataset.state))
              .observe(document.getElementById('conn'), { attributes: true }); }"""
        )
        prefix = post_task(server, "scripted", "fail please")
        page.wait_for_selector(card_selector(prefix, "failed"), timeout=TIMEOUT_MS)
        page.wait_for_timeout(1500)  # an EventSource error would have flipped the state by now
        assert page.get_attribute("#conn", "data-state") == "live"
        states = page.evaluate("window.__states")
        assert "reconnecting" not in states, states
        # the error itself reached the page: the run page shows it
        page.click(card_selector(prefix, "failed"))
        page.wait_for_selector('[data-testid="done"]', timeout=TIMEOUT_MS)
        assert "it broke" in page.inner_text("body")
    finally:
        server.close()


def test_the_page_never_asks_for_the_whole_board_per_event(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    """A run of another process (untitled until it ends) streams 30 events: the page loads the
    board once and asks for that run's title by its key, not for ``GET /board`` per event."""
    chunks = [f"chunk {n}\n" for n in range(25)]
    script = write_script(tmp_path, "long.json", scripted_frames(chunks, pause_s=0.15))
    env = board_env | {"RINGLEADER_SCRIPTED_SCRIPT": str(script)}
    server = Served(tmp_path, env, None)
    server.start()
    try:
        page = browser.new_page()
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url.split(server.url, 1)[-1]))
        page.goto(server.page_url)
        page.wait_for_selector('#conn[data-state="live"]', timeout=TIMEOUT_MS)
        runner = subprocess.run(
            [
                *(sys.executable, "-m", "orchestrator.cli", "run", "--runtime", "scripted"),
                *("--json", "another shell's run"),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert runner.returncode == 0, runner.stderr
        card = card_selector("runtime:scripted:task:", "done")
        page.wait_for_selector(card, timeout=TIMEOUT_MS)
        page.wait_for_function(
            f"() => document.querySelector('{card} .title')?.textContent === \"another shell's run\"",
            timeout=TIMEOUT_MS,
        )
        boards = [u for u in asked if u.split("?")[0] == "/board"]
        assert len(boards) == 1, asked
        assert 1 <= len([u for u in asked if u.startswith("/run-meta")]) <= 2, asked
    finally:
        server.close()


def test_the_quota_gauge_shows_each_accounts_window_and_unknown_as_unknown(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    """Issue 38: the board's gauge per runtime and account, from the quota meters in the state
    directory: a reported window shows its use and a filled bar; a held one says until when; a
    runtime nobody reported for says unknown (never 0 %)."""
    from orchestrator.core.quota import QuotaBook, QuotaReading

    now = int(time.time() * 1000)
    hour = 3_600_000
    QuotaBook.in_state_dir(tmp_path / "state").record(
        [
            QuotaReading("codex", "default", "primary", 42.0, now + hour, 300, "allowed",
                         "codex account/rateLimits/updated", now),
            QuotaReading("claude-code", "work", "five_hour", 100.0, now + 2 * hour, 300,
                         "rejected", "claude-code rate_limit_event", now),
        ]
    )  # fmt: skip
    server = Served(tmp_path, board_env, None)
    server.start()
    try:
        page = browser.new_page()
        page.goto(server.page_url)
        codex = '.meter[data-runtime="codex"][data-account="default"]'
        page.wait_for_selector(codex, timeout=TIMEOUT_MS)
        assert "primary: 42% used" in page.inner_text(codex)
        width = page.eval_on_selector(f"{codex} .fill", "e => e.style.width")
        assert width == "42%"
        held = '.meter[data-runtime="claude-code"][data-account="work"]'
        assert "(work)" in page.inner_text(held)
        assert "held until" in page.inner_text(held)
        assert page.query_selector(f"{held} .gauge.limited") is not None
        native = '.meter[data-runtime="native"][data-account="default"]'
        assert "quota unknown" in page.inner_text(native)
        assert "0%" not in page.inner_text(native)
        assert page.query_selector(f"{native} .fill") is None
    finally:
        server.close()


def start_claude_model(
    tmp_path: Path, env: dict[str, str], turns: list[dict[str, Any]]
) -> tuple[subprocess.Popen[str], Path]:
    """The scripted model server (a child) playing ``turns`` for Claude Code, and a config that
    points Claude Code at it (``serve`` makes it ask: long-lived mode, every prompt to a
    person)."""
    model, native = start_native_model(
        tmp_path, env, {"model": "claude-sonnet-4-6", **native_turns(*turns)}
    )
    lines = native.read_text().splitlines()
    url = next(line.split('"')[1] for line in lines if line.startswith("base_url"))
    config = tmp_path / "claude.toml"
    config.write_text(
        "[runtimes.claude-code]\n"
        f'base_url = "{url}"\n'
        'api_key_env = "RINGLEADER_MODEL_SERVER_KEY"\n'
        'model = "claude-sonnet-4-6"\n'
    )
    return model, config


def test_a_real_claude_code_call_is_allowed_by_a_click_and_the_run_succeeds(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    """Claude Code (long-lived, asking) under ``serve``: its Bash call waits in the book, the
    card sits in the waiting column, Allow on the run page lets it run, and the run is done."""
    from adapters._runtimes import runtime_binary

    runtime_binary("claude-code")  # fails with the install command when it is missing
    # (a command that changes something: Claude Code's own rules allow read-only ones unasked)
    touch = "touch board-allowed.txt && echo board-allowed-ok"
    bash = {"name": "Bash", "input": {"command": touch, "description": "x"}}
    model, config = start_claude_model(
        tmp_path, board_env, [{"tool_calls": [bash]}, {"text": "Done after the click."}]
    )
    try:
        server = Served(tmp_path, board_env, config)
        server.start()
        try:
            page = browser.new_page()
            page.goto(server.page_url)
            prefix = post_task(server, "claude-code", "echo something")
            page.wait_for_selector(card_selector(prefix, "waiting"), timeout=90_000)
            [pending] = server.get("/approvals").json()
            assert (pending["tool"], pending["runtime"]) == ("Bash", "claude-code")
            page.click(card_selector(prefix))
            page.click('.approval button:text-is("Allow")', timeout=TIMEOUT_MS)
            page.wait_for_selector('[data-testid="run-column"]:text("done")', timeout=90_000)
            tool = page.wait_for_selector("details.tool .tool-output")
            assert "board-allowed-ok" in tool.text_content()
            assert "Done after the click." in page.inner_text('[data-testid="transcript"]')
            assert server.get("/approvals").json() == []
            assert list(tmp_path.rglob("board-allowed.txt"))  # it ran, once allowed
        finally:
            server.close()
    finally:
        stop(model)


def test_a_call_denied_with_a_message_from_the_board_does_not_run_and_the_model_is_told(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    """Deny with a message typed on the run page: the command does not run, the model reads the
    message in the tool's result, and the run goes on to success."""
    denial = "DENIED-FROM-BOARD-9: not on this machine"
    bash = {"name": "bash", "input": {"command": "touch board-denied.txt"}}
    model, config = start_native_model(
        tmp_path,
        board_env,
        native_turns({"tool_calls": [bash]}, {"text": "Understood, I will not."}),
    )
    try:
        server = Served(tmp_path, board_env, config)
        server.start()
        try:
            page = browser.new_page()
            page.goto(server.page_url)
            prefix = post_task(server, "native", "make a file")
            page.wait_for_selector(card_selector(prefix, "waiting"), timeout=TIMEOUT_MS)
            page.click(card_selector(prefix))
            page.fill(".approval .approval-message", denial, timeout=TIMEOUT_MS)
            page.click('.approval button:text-is("Deny")')
            page.wait_for_selector('[data-testid="run-column"]:text("done")', timeout=TIMEOUT_MS)
            tool = page.wait_for_selector("details.tool .tool-output")
            assert denial in tool.text_content()  # what the model was told
            assert "Understood, I will not." in page.inner_text('[data-testid="transcript"]')
            assert server.get("/approvals").json() == []
            assert not list(tmp_path.rglob("board-denied.txt"))
        finally:
            server.close()
    finally:
        stop(model)


def test_a_call_allowed_with_an_edited_input_from_the_board_runs_the_edited_input(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    """Edit input on the run page: the JSON of the call is edited and allowed; the call runs
    with the edited input, not the model's."""
    bash = {"name": "bash", "input": {"command": "echo the-models-own"}}
    model, config = start_native_model(
        tmp_path, board_env, native_turns({"tool_calls": [bash]}, {"text": "Edited and done."})
    )
    try:
        server = Served(tmp_path, board_env, config)
        server.start()
        try:
            page = browser.new_page()
            page.goto(server.page_url)
            prefix = post_task(server, "native", "say something")
            page.wait_for_selector(card_selector(prefix, "waiting"), timeout=TIMEOUT_MS)
            page.click(card_selector(prefix))
            page.click('.approval button:text-is("Edit input")', timeout=TIMEOUT_MS)
            page.fill(".approval .approval-edit", '{"command": "echo edited-by-a-person"}')
            page.click('.approval button:text-is("Edit input")')
            page.wait_for_selector('[data-testid="run-column"]:text("done")', timeout=TIMEOUT_MS)
            tool = page.wait_for_selector("details.tool .tool-output")
            assert "edited-by-a-person" in tool.text_content()
            assert "the-models-own" not in tool.text_content()
        finally:
            server.close()
    finally:
        stop(model)


def test_the_page_of_a_long_run_starts_from_its_last_events(
    tmp_path: Path, board_env: dict[str, str], browser: Any
) -> None:
    """A run of 2,500 events: its page shows the last 2,000 (the first one is not in the
    transcript), says how many came before, shows the run's own totals (its card, not the
    shown events'), and the link replays every event."""
    import trio

    from orchestrator.core.events import EventFactory, RuntimeEvent, Usage
    from orchestrator.engine.eventlog import EventLog

    key = "runtime:scripted:task:0000abcd:run-0000abcd"
    make = EventFactory(run_id="long", session_id=key)
    # the run's only cost report comes first: shown only through the run's card
    events: list[RuntimeEvent] = [
        make.cost(Usage(input_tokens=1234, output_tokens=7), cost_usd=0.5)
    ]
    events.append(make.text_delta("FIRST LINE\n"))
    events += [make.text_delta(f"line {i}\n") for i in range(2496)]
    events += make.finish("success", "ok")

    async def fill() -> None:
        async with EventLog.open(Path(board_env["RINGLEADER_STATE_DIR"]) / "events.db") as log:
            await log.start_run(key, runtime_id="scripted", session_key=key)
            await log.append(key, events)
            await log.finish_run(key, status="success", outcome={"title": "long"})

    trio.run(fill)
    server = Served(tmp_path, board_env, None)
    server.start()
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/run/{key}#token={server.token}")
        page.wait_for_selector('[data-testid="done"]', timeout=TIMEOUT_MS)
        earlier = page.inner_text('[data-testid="earlier"]')
        assert f"{len(events) - 2000} earlier events not shown" in earlier
        text = page.inner_text('[data-testid="transcript"]')
        assert "FIRST LINE" not in text and "line 2495" in text
        assert "1234 in" in page.inner_text("#run-summary")
        page.click('[data-testid="show-all"]')
        page.wait_for_function(
            "() => document.querySelector('[data-testid=\"transcript\"]').innerText"
            ".includes('FIRST LINE')",
            timeout=TIMEOUT_MS,
        )
        page.wait_for_selector('[data-testid="done"]', timeout=TIMEOUT_MS)
        assert page.query_selector('[data-testid="earlier"]') is None
    finally:
        server.close()
