"""A run in the person's own checkout (one ``ringleader run``, no workspace made) has a diff: its
starting point — the working tree as the run found it, uncommitted edits and untracked files
included — is recorded without touching the person's index, branches or ``HEAD``, so ``ringleader
diff`` shows what the run changed and nothing that was there before. ``apply`` refuses (the
changes already are in the checkout) and ``workspaces --prune`` never lists the checkout.

The run is a real ``ringleader run --runtime native`` (a child process) against the scripted
model server, its agent writing files with its tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.orchestrator.review_kit import GIT_ID, git

CLI = (sys.executable, "-m", "orchestrator.cli")
APP = "def main():\n    return 1\n"
CHANGED_APP = "def main():\n    return 2\n"


def writes(*files: tuple[str, str]) -> dict[str, Any]:
    return {
        "conversations": [
            {
                "name": "task",
                "turns": [
                    {
                        "tool_calls": [
                            {"name": "write_file", "input": {"path": path, "content": content}}
                            for path, content in files
                        ]
                    },
                    {"text": "Done."},
                ],
            }
        ]
    }


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if not k.startswith(("RINGLEADER_", "GIT_"))}
    return (
        found
        | GIT_ID
        | {
            "RINGLEADER_STATE_DIR": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "NO_COLOR": "1",
        }
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP)
    (root / "README.md").write_text("# demo\n")
    (root / "staged.txt").write_text("one\n")
    (root / ".gitignore").write_text(".env\n")
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "init", cwd=root)
    # the person's own work in progress, there before the run: none of it is the run's
    (root / "README.md").write_text("# demo\n\nmy uncommitted edit\n")
    (root / "notes.txt").write_text("my untracked notes\n")
    (root / "staged.txt").write_text("two\n")
    git("add", "staged.txt", cwd=root)
    (root / ".env").write_text("TOKEN=abc\n")
    return root


def ringleader(
    *args: str, cwd: Path, env: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def run_in_place(
    repo: Path, env: dict[str, str], tmp_path: Path, script: dict[str, Any], name: str
) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(script))
    done = ringleader(
        *("run", "--runtime", "native", "--model-server", str(path), "--json", "do it"),
        cwd=repo,
        env=env,
    )
    return json.loads(done.stdout.splitlines()[0])["runKey"]


def person_state(repo: Path) -> dict[str, str]:
    """What must not move: HEAD, the branches and tags, the index's entries (staged work)."""
    return {
        "head": git("rev-parse", "HEAD", cwd=repo),
        "refs": git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", cwd=repo),
        "index": git("ls-files", "-s", "--cached", cwd=repo),
        "staged": git("diff", "--cached", "--name-status", cwd=repo),
    }


def test_a_run_in_your_own_checkout_has_a_diff_of_what_it_changed(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    before = person_state(repo)
    key = run_in_place(
        repo,
        env,
        tmp_path,
        writes(("src/app.py", CHANGED_APP), ("src/new.py", "print('new')\n")),
        "first",
    )
    assert (repo / "src" / "new.py").exists()  # the agent really wrote in the checkout
    assert person_state(repo) == before  # index, HEAD and branches as they were

    for ref in ("last", key):
        shown = json.loads(ringleader("diff", ref, "--json", cwd=repo, env=env).stdout)
        files = {f["path"]: f["status"] for f in shown["files"]}
        assert files == {"src/app.py": "modified", "src/new.py": "added"}, ref
        assert shown["kind"] == "your checkout" and shown["workspace"] == str(repo)
        assert shown["run"] == key
    [app] = [f for f in shown["files"] if f["path"] == "src/app.py"]
    assert [line for h in app["hunks"] for line in h["lines"] if line[0] in "+-"] == [
        "-    return 1",
        "+    return 2",
    ]
    stat = ringleader("diff", key, "--stat", cwd=repo, env=env).stdout
    assert "2 files changed, 2 insertions(+), 1 deletion(-)" in stat

    # the starting point is a commit on a private ref (on no branch), parent HEAD
    refs = git("for-each-ref", "--format=%(refname)", "refs/ringleader/starts", cwd=repo).split()
    assert len(refs) == 1
    assert git("rev-parse", f"{refs[0]}^", cwd=repo) == before["head"]
    assert git("show", f"{refs[0]}:notes.txt", cwd=repo) == "my untracked notes\n"
    shown_env = git("ls-tree", "-r", "--name-only", refs[0], cwd=repo).split()
    assert ".env" not in shown_env  # ignored files never go into git objects

    # apply refuses: the changes already are here, untouched
    refused = ringleader("apply", key, cwd=repo, env=env, check=False)
    assert refused.returncode == 2
    assert "worked in your own checkout" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert (repo / "src" / "app.py").read_text() == CHANGED_APP
    # housekeeping never lists the person's checkout as a workspace
    listed = ringleader("workspaces", "--json", cwd=repo, env=env).stdout
    assert str(repo) not in listed
    ringleader("workspaces", "--prune", cwd=repo, env=env)  # nothing old asked for: kept
    assert len(git("for-each-ref", "refs/ringleader/starts", cwd=repo).splitlines()) == 1

    # a second run in the same checkout gets its own starting point; the first keeps its own
    second = run_in_place(repo, env, tmp_path, writes(("src/other.py", "x = 1\n")), "second")
    mine = json.loads(ringleader("diff", second, "--json", cwd=repo, env=env).stdout)
    assert [f["path"] for f in mine["files"]] == ["src/other.py"]
    first = json.loads(ringleader("diff", key, "--json", cwd=repo, env=env).stdout)
    assert "src/app.py" in {f["path"] for f in first["files"]}

    # pruning old ones forgets the recorded starts (their refs), never the person's files
    pruned = ringleader("workspaces", "--prune", "--older-than", "0s", "--json", cwd=repo, env=env)
    forgotten = [json.loads(line) for line in pruned.stdout.splitlines()]
    assert [(f["removed"], f["reason"]) for f in forgotten] == [(True, "its start, old")] * 2
    assert git("for-each-ref", "refs/ringleader/starts", cwd=repo) == ""
    assert (repo / "src" / "new.py").exists() and (repo / "notes.txt").exists()
    assert person_state(repo) == before


def test_a_run_outside_git_says_it_has_no_diff(env: dict[str, str], tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    key = run_in_place(plain, env, tmp_path, writes(("a.txt", "a\n")), "plain")
    done = ringleader("diff", key, cwd=plain, env=env, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "no workspace is recorded" in done.stderr or "outside git" in done.stderr


def test_a_follow_up_turn_in_your_checkout_is_diffed_against_the_first_runs_start(
    repo: Path, tmp_path: Path
) -> None:
    """A turn that resumes an in-place run in the same folder (comments sent from the board)
    records no start of its own: its diff is the first run's, against where that started."""
    import trio

    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.review.inplace import record_in_place
    from orchestrator.engine.review.records import resolve_run

    async def go() -> tuple[str, str]:
        async with EventLog.open(tmp_path / "events.db") as log:
            await record_in_place(
                log, cwd=repo, task_id="t1", runtime_id="native", label="native", group_id="t1"
            )
            first = "runtime:native:task:t1:run-1"
            await log.start_run(first, runtime_id="native", session_key=first)
            follow = "runtime:native:task:board-1:run-1"
            await log.start_run(follow, runtime_id="native", session_key=follow)
            await log.record_session(
                follow,
                runtime_id="native",
                native_session_id="s",
                codec_blob=None,
                origin_cwd=str(repo),
                run_key=follow,
            )
            found = await resolve_run(log, follow)
            return found.workspace.task_id, found.key

    assert trio.run(go) == ("t1", "runtime:native:task:board-1:run-1")


def test_comments_sent_from_the_command_line_continue_the_runs_diff(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """`ringleader comment … --send` resumes the run in the same checkout: the follow-up records
    no start of its own, so its diff is the whole work, the first turn's and its own."""
    script = {
        "conversations": [
            {
                "name": "review",
                "marker": "A reviewer left",
                "turns": [
                    {
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "input": {"path": "src/app.py", "content": "def main():\n"},
                            }
                        ]
                    },
                    {"text": "Fixed."},
                ],
            },
            {
                "name": "task",
                "turns": [
                    {
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "input": {"path": "src/new.py", "content": "print('new')\n"},
                            }
                        ]
                    },
                    {"text": "Done."},
                ],
            },
        ]
    }
    key = run_in_place(repo, env, tmp_path, script, "both")
    ringleader("comment", key, "src/new.py:1", "say more", cwd=repo, env=env)
    second = ringleader("comment", key, "src/new.py:1", "never mind", "--json", cwd=repo, env=env)
    dropped = json.loads(second.stdout)["id"]
    gone = ringleader("comment", key, "--withdraw", str(dropped), cwd=repo, env=env)
    assert f"comment #{dropped} on {key} withdrawn (1 waiting)" in gone.stdout
    again = ringleader("comment", key, "--withdraw", str(dropped), cwd=repo, env=env, check=False)
    assert again.returncode == 2 and "sent already?" in again.stderr
    sent = ringleader(
        *("comment", key, "--send", "--json", "--model-server", str(tmp_path / "both.json")),
        cwd=repo,
        env=env,
    )
    follow = json.loads(sent.stdout.splitlines()[0])["runKey"]
    listed = ringleader("comment", key, "--list", "--json", cwd=repo, env=env).stdout
    assert [json.loads(line)["text"] for line in listed.splitlines()] == ["say more"]
    assert follow != key
    assert (repo / "src" / "app.py").read_text() == "def main():\n"
    shown = json.loads(ringleader("diff", follow, "--json", cwd=repo, env=env).stdout)
    assert {f["path"] for f in shown["files"]} == {"src/app.py", "src/new.py"}
    starts = git("for-each-ref", "--format=%(refname)", "refs/ringleader/starts", cwd=repo)
    assert len(starts.split()) == 1  # the first run's only


def test_a_huge_untracked_file_is_left_out_of_the_starting_snapshot(repo: Path) -> None:
    """A stray data file is not hashed into git objects (and kept alive by the start ref)
    before every run; a file named with pathspec magic characters is taken literally."""
    from orchestrator.engine.review.inplace import HUGE_BYTES, record_start

    (repo / "data*.bin").write_bytes(b"\0" * (HUGE_BYTES + 1))
    (repo / "data1.bin").write_bytes(b"\0" * 10)  # matched by the huge one's name as a glob
    start = record_start(repo, "t1")
    assert start is not None
    names = git("ls-tree", "-r", "--name-only", start.base, cwd=repo).split("\n")
    assert "data*.bin" not in names
    assert {"data1.bin", "notes.txt", "src/app.py"} <= set(names)
