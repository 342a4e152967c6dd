"""Review and land (issue 32): `ringleader diff`, `compare`, `apply` and `workspaces` against real
git repositories in temporary directories. The workspaces are made by the engine's own
``create_workspace`` and recorded in a real event log, as a side-by-side run records them; the
runs' changes are written into them as an agent would."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import sys
from pathlib import Path

import pytest
import trio

from orchestrator.cli.main import main
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.review.diff import LARGE_BYTES
from tests.orchestrator.review_kit import GIT_ID, git, make_runs


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "state"
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(where))
    monkeypatch.setenv("NO_COLOR", "1")
    for name, value in GIT_ID.items():  # the person's git identity
        monkeypatch.setenv(name, value)
    return where


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "README.md").write_text("# demo\n\nline\n")
    (root / "old_name.txt").write_text("".join(f"line {i}\n" for i in range(40)))
    (root / "gone.txt").write_text("bye\n")
    (root / ".gitignore").write_text(".env\n")
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "init", cwd=root)
    return root


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("ringleader: "), (code, err)
    return lines[0]


def tree_fingerprint(root: Path, *, with_git: bool = True) -> dict[str, str]:
    """Every file of a checkout (the .git folder included: HEAD, refs, index), byte for byte."""
    found: dict[str, str] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            if not with_git and rel.startswith(".git/"):
                continue
            if rel.startswith(".git/objects/") or rel.startswith(".git/logs/"):
                continue  # objects may be added (never referenced); reflogs follow refs
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def change_native(ws: Path) -> None:
    (ws / "src" / "app.py").write_text(
        "def main():\n    return 2\n\n\ndef hello():\n    return 'hi'\n"
    )
    (ws / "hello.py").write_text("print('hello')\n")
    (ws / "gone.txt").unlink()
    (ws / "old_name.txt").rename(ws / "new_name.txt")
    (ws / "logo.bin").write_bytes(bytes(range(256)) * 4)
    (ws / ".env").write_text("SECRET=1\n")  # ignored: not a change


# -- diff ------------------------------------------------------------------------------------------


def test_diff_json_lists_every_kind_of_change_against_the_starting_commit(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_runs(repo, state, ("native",))["native"]
    index = Path(git("rev-parse", "--git-path", "index", cwd=ws).strip())
    index = index if index.is_absolute() else ws / index
    before_index = index.read_bytes()
    change_native(ws)
    (ws / "big.txt").write_text("x" * (LARGE_BYTES + 10))
    code, out, err = cli("diff", "last", "--json", capsys=capsys)
    assert code == 0, err
    body = json.loads(out)
    files = {f["path"]: f for f in body["files"]}
    assert set(files) == {
        "src/app.py",
        "hello.py",
        "gone.txt",
        "new_name.txt",
        "logo.bin",
        "big.txt",
    }
    assert files["src/app.py"]["status"] == "modified"
    assert (files["src/app.py"]["added"], files["src/app.py"]["removed"]) == (5, 1)
    hunk = files["src/app.py"]["hunks"][0]
    assert hunk["oldStart"] == 1 and "-    return 1" in hunk["lines"]
    assert files["hello.py"]["status"] == "added" and files["hello.py"]["added"] == 1
    assert files["gone.txt"]["status"] == "deleted" and files["gone.txt"]["removed"] == 1
    renamed = files["new_name.txt"]
    assert renamed["status"] == "renamed" and renamed["oldPath"] == "old_name.txt"
    assert files["logo.bin"]["binary"] and not files["logo.bin"]["hunks"]
    assert files["big.txt"]["large"] and not files["big.txt"]["hunks"]
    assert body["totals"]["files"] == 6
    assert body["run"] == "runtime:native:task:t-native:run-0001"
    assert index.read_bytes() == before_index  # the agent's index is never touched

    code, out, _ = cli("diff", "native", "--stat", capsys=capsys)
    assert code == 0
    assert "old_name.txt => new_name.txt" in out and "| Bin" in out
    assert " ".join(out.split()).count("big.txt | large file (not diffed)") == 1
    assert out.strip().splitlines()[-1].startswith(" 6 files changed")

    code, out, _ = cli("diff", capsys=capsys)  # default: last, unified
    assert code == 0
    assert "+++ b/hello.py" in out and "rename from old_name.txt" in out


def test_diff_of_a_workspace_with_no_changes_is_empty(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_runs(repo, state, ("native",))
    code, out, _ = cli("diff", "last", "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["files"] == []
    code, out, _ = cli("diff", "last", "--stat", capsys=capsys)
    assert out == "no changes\n"


def test_a_temporary_copy_is_diffed_against_its_snapshot(
    tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    (plain / "node_modules" / "x").mkdir(parents=True)
    (plain / "node_modules" / "x" / "i.js").write_text("1\n")
    (plain / "a.txt").write_text("one\n")
    ws = make_runs(plain, state, ("native",))["native"]
    assert not (ws / ".git").exists()  # the agent sees no repository
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "b.txt").write_text("new\n")
    (ws / "node_modules").mkdir(exist_ok=True)
    (ws / "node_modules" / "y.js").write_text("2\n")  # a folder copies leave out
    code, out, err = cli("diff", "last", "--json", capsys=capsys)
    assert code == 0, err
    body = json.loads(out)
    assert body["kind"] == "temporary copy"
    assert {f["path"]: (f["status"], f["added"]) for f in body["files"]} == {
        "a.txt": ("modified", 1),
        "b.txt": ("added", 1),
    }


def test_an_unknown_run_and_an_empty_log_are_one_line_errors(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli("diff", "last", capsys=capsys)
    assert "no workspace is recorded yet" in one_line_error(code, err)
    make_runs(repo, state, ("native",))
    code, _, err = cli("diff", "nope", capsys=capsys)
    assert "no run or workspace matches 'nope'" in one_line_error(code, err)
    code, _, err = cli("apply", "nope", capsys=capsys)
    assert "no run or workspace matches" in one_line_error(code, err)


# -- compare ---------------------------------------------------------------------------------------


def test_compare_shows_which_files_each_run_touched_and_where_they_agree(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = make_runs(repo, state, ("native", "codex", "claude-code"))
    (made["native"] / "native.txt").write_text("n\n")
    (made["codex"] / "codex.txt").write_text("c\n")
    for label in ("native", "codex"):  # the same edit in two runs
        (made[label] / "README.md").write_text("# demo\n\nline\nsame\n")
    (made["claude-code"] / "README.md").write_text("# demo\n\nother\n")
    code, out, err = cli("compare", "last", "--json", capsys=capsys)
    assert code == 0, err
    body = json.loads(out)
    assert body["task"] == "task1"
    runs = {r["label"]: r for r in body["runs"]}
    assert runs["native"]["files"] == ["README.md", "native.txt"]
    assert runs["codex"]["files"] == ["README.md", "codex.txt"]
    assert (runs["codex"]["added"], runs["codex"]["removed"]) == (2, 0)
    files = {f["path"]: f for f in body["files"]}
    assert set(files["README.md"]["runs"]) == {"native", "codex", "claude-code"}
    assert files["README.md"]["agree"] is False  # claude-code wrote something else
    assert files["native.txt"]["untouchedBy"] == ["codex", "claude-code"]

    (made["claude-code"] / "README.md").write_text("# demo\n\nline\nsame\n")
    code, out, _ = cli("compare", "task1", capsys=capsys)
    assert code == 0
    readme = next(line for line in out.splitlines() if "README.md" in line)
    assert "agree (same content)" in readme
    assert "only codex" in next(line for line in out.splitlines() if "codex.txt" in line)

    code, out, _ = cli("diff", "last/codex", "--stat", capsys=capsys)
    assert code == 0 and "codex.txt" in out and "native.txt" not in out
    code, out, _ = cli("compare", "last", "--diff", "codex", capsys=capsys)
    assert code == 0 and "+++ b/codex.txt" in out and "native.txt" not in out
    code, _, err = cli("compare", "last", "--diff", "hermes", capsys=capsys)
    assert "has no run 'hermes'" in one_line_error(code, err)


# -- apply -----------------------------------------------------------------------------------------


def test_apply_lands_the_run_as_one_commit_on_the_current_branch(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_runs(repo, state, ("native",))["native"]
    change_native(ws)
    code, out, err = cli("apply", "last", "--author", "Ann <ann@example.org>", capsys=capsys)
    assert code == 0, err
    assert "on ringleader/t-native-native" in out and "landed on main" in out
    assert (repo / "hello.py").read_text() == "print('hello')\n"
    assert not (repo / "gone.txt").exists() and (repo / "new_name.txt").exists()
    assert not (repo / ".env").exists()  # ignored files never land
    log = git("log", "-1", "--format=%an <%ae>%n%s%n%b", cwd=repo)
    assert log.startswith("Ann <ann@example.org>\nnative: added the greeting\n")
    assert "Prompt: add a greeting" in log and "Runtime: native" in log and "$0.0123" in log
    assert git("rev-parse", "main", cwd=repo) == git(
        "rev-parse", "ringleader/t-native-native", cwd=repo
    )
    assert git("status", "--porcelain", cwd=repo) == ""
    code, out, _ = cli("workspaces", "--json", capsys=capsys)
    assert json.loads(out)["applied"]["landedOn"] == "main"


def test_apply_after_the_branch_moved_squashes_or_merges(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = make_runs(repo, state, ("native", "codex"))
    (made["native"] / "native.txt").write_text("n\n")
    (made["codex"] / "codex.txt").write_text("c\n")
    (repo / "mine.txt").write_text("mine\n")
    git("add", "mine.txt", cwd=repo)
    git("commit", "-qm", "mine", cwd=repo)
    code, out, err = cli("apply", "task1/native", "--message", "take native", capsys=capsys)
    assert code == 0, err and "squash" in out
    assert git("log", "-1", "--format=%s %P", cwd=repo).split()[0] == "take"
    assert len(git("log", "-1", "--format=%P", cwd=repo).split()) == 1
    code, out, err = cli("apply", "task1/codex", "--merge", capsys=capsys)
    assert code == 0, err
    assert len(git("log", "-1", "--format=%P", cwd=repo).split()) == 2
    assert {p.name for p in repo.iterdir()} >= {"mine.txt", "native.txt", "codex.txt"}


def test_a_conflict_is_refused_listing_the_files_and_changes_nothing(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_runs(repo, state, ("native",))["native"]
    (ws / "README.md").write_text("# agent\n")
    (ws / "fine.txt").write_text("ok\n")
    (repo / "README.md").write_text("# person\n")
    git("commit", "-qam", "person", cwd=repo)
    before = tree_fingerprint(repo)
    code, _, err = cli("apply", "last", capsys=capsys)
    line = one_line_error(code, err)
    assert "conflicts with main in 1 file: README.md; nothing was applied" in line
    assert tree_fingerprint(repo) == before
    assert "ringleader/" not in git("branch", "--list", cwd=repo)


def test_a_dirty_working_tree_is_refused_and_left_byte_identical(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_runs(repo, state, ("native",))["native"]
    (ws / "hello.py").write_text("x\n")
    (repo / "src" / "app.py").write_text("edited by the person\n")
    (repo / "scratch.txt").write_text("untracked\n")
    before = tree_fingerprint(repo)
    code, _, err = cli("apply", "last", capsys=capsys)
    line = one_line_error(code, err)
    assert "uncommitted changes (src/app.py)" in line
    assert tree_fingerprint(repo) == before
    assert "ringleader/" not in git("branch", "--list", cwd=repo)


def test_untracked_files_the_result_would_overwrite_are_refused(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_runs(repo, state, ("native",))["native"]
    (ws / "hello.py").write_text("agent\n")
    (repo / "hello.py").write_text("the person's own, untracked\n")
    before = tree_fingerprint(repo)
    code, _, err = cli("apply", "last", capsys=capsys)
    assert "untracked files in" in one_line_error(code, err)
    assert tree_fingerprint(repo) == before


def test_a_target_checked_out_in_another_worktree_is_named(
    repo: Path, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_runs(repo, state, ("native",))["native"]
    (ws / "hello.py").write_text("agent\n")
    other = tmp_path / "other"
    git("worktree", "add", "-q", "-b", "feature", str(other), cwd=repo)
    before, before_other = tree_fingerprint(repo), tree_fingerprint(other)
    code, _, err = cli("apply", "last", "--onto", "feature", capsys=capsys)
    line = one_line_error(code, err)
    assert f"branch 'feature' is checked out in another worktree, {other}" in line
    assert tree_fingerprint(repo) == before and tree_fingerprint(other) == before_other


def test_onto_a_branch_checked_out_nowhere_moves_only_that_branch(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_runs(repo, state, ("native",))["native"]
    (ws / "hello.py").write_text("agent\n")
    git("branch", "release", cwd=repo)
    before = tree_fingerprint(repo, with_git=False)
    index = (repo / ".git" / "index").read_bytes()
    code, out, err = cli("apply", "last", "--onto", "release", capsys=capsys)
    assert code == 0, err and "landed on release" in out
    assert git("show", "release:hello.py", cwd=repo) == "agent\n"
    assert tree_fingerprint(repo, with_git=False) == before  # the checkout (main): untouched
    assert (repo / ".git" / "index").read_bytes() == index
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=repo) == "main\n"
    code, _, err = cli("apply", "last", "--onto", "nosuch", capsys=capsys)
    assert "there is no branch 'nosuch'" in one_line_error(code, err)


def test_push_sends_the_branch_to_a_bare_repository(
    repo: Path, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=repo)
    ws = make_runs(repo, state, ("codex",))["codex"]
    (ws / "codex.txt").write_text("c\n")
    before = tree_fingerprint(repo, with_git=False)
    code, out, err = cli("apply", "last", "--push", "origin", "--json", capsys=capsys)
    assert code == 0, err
    body = json.loads(out)
    assert body["pushedTo"] == "origin" and body["branch"] == "ringleader/t-codex-codex"
    assert (
        git("rev-parse", "refs/heads/ringleader/t-codex-codex", cwd=bare).strip() == body["commit"]
    )
    assert git("show", f"{body['commit']}:codex.txt", cwd=bare) == "c\n"
    assert tree_fingerprint(repo, with_git=False) == before  # published, not landed


def _stand_in_gh(folder: Path, record: Path, *, logged_in: bool) -> None:
    folder.mkdir()
    script = folder / "gh"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "if sys.argv[1:3] == ['auth', 'status']:\n"
        f"    sys.exit({0 if logged_in else 1})\n"
        "print('https://github.example/acme/demo/pull/7')\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_pr_opens_a_pull_request_with_gh(
    repo: Path,
    state: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=repo)
    record = tmp_path / "gh-argv.jsonl"
    _stand_in_gh(tmp_path / "bin", record, logged_in=True)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    ws = make_runs(repo, state, ("native",))["native"]
    (ws / "hello.py").write_text("agent\n")
    code, out, err = cli("apply", "last", "--pr", capsys=capsys)
    assert code == 0, err
    assert "pull request: https://github.example/acme/demo/pull/7" in out
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert calls[0] == ["auth", "status"]
    argv = calls[1]
    assert argv[:2] == ["pr", "create"]
    flags = dict(zip(argv[2::2], argv[3::2], strict=True))
    assert flags["--head"] == "ringleader/t-native-native" and flags["--base"] == "main"
    assert flags["--title"] == "native: added the greeting"
    body = flags["--body"]
    for part in (
        "add a greeting",
        "native: added the greeting",
        "native",
        "$0.0123",
        "tokens in 10",
    ):
        assert part in body
    assert git("rev-parse", "ringleader/t-native-native", cwd=bare).strip()


def test_pr_without_a_logged_in_gh_prints_the_command(
    repo: Path,
    state: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=repo)
    record = tmp_path / "gh-argv.jsonl"
    _stand_in_gh(tmp_path / "bin", record, logged_in=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    ws = make_runs(repo, state, ("native",))["native"]
    (ws / "hello.py").write_text("agent\n")
    code, out, err = cli("apply", "last", "--pr", capsys=capsys)
    assert code == 0, err
    assert "gh is not installed or not logged in" in out
    assert "gh pr create --base main --head ringleader/t-native-native" in out
    assert [json.loads(line) for line in record.read_text().splitlines()] == [["auth", "status"]]


def test_a_copy_gets_its_files_copied_back_unless_the_original_changed(
    tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("one\n")
    (plain / "b.txt").write_text("bee\n")
    (plain / "c.txt").write_text("sea\n")
    ws = make_runs(plain, state, ("native",))["native"]
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "new.txt").write_text("new\n")
    (ws / "c.txt").unlink()
    (plain / "b.txt").write_text("changed by the person\n")  # not touched by the run: fine
    code, out, err = cli("apply", "last", "--onto", "main", capsys=capsys)
    assert "need git" in one_line_error(code, err)
    (plain / "a.txt").write_text("the person edited it too\n")
    before = tree_fingerprint(plain)
    code, _, err = cli("apply", "last", capsys=capsys)
    assert "changed since the run's snapshot (a.txt)" in one_line_error(code, err)
    assert tree_fingerprint(plain) == before
    (plain / "a.txt").write_text("one\n")
    code, out, err = cli("apply", "last", capsys=capsys)
    assert code == 0, err
    assert "copied 3 files, +2 -1 of run" in out
    assert (plain / "a.txt").read_text() == "one\ntwo\n"
    assert (plain / "sub" / "new.txt").read_text() == "new\n"
    assert not (plain / "c.txt").exists()
    assert (plain / "b.txt").read_text() == "changed by the person\n"


def test_a_run_that_changed_nothing_has_nothing_to_apply(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_runs(repo, state, ("native",))
    code, _, err = cli("apply", "last", capsys=capsys)
    assert "changed nothing in its workspace; nothing to apply" in one_line_error(code, err)


# -- workspaces --------------------------------------------------------------------------------------


def test_workspaces_lists_and_prunes_applied_and_old_but_never_live_ones(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = make_runs(repo, state, ("native", "codex", "claude-code"))
    (made["native"] / "hello.py").write_text("agent\n")
    assert cli("apply", "task1/native", capsys=capsys)[0] == 0
    # claude-code's run is live: running, owned by a process that is alive (this one)
    with sqlite3.connect(state / "events.db") as db:
        db.execute(
            "UPDATE runs SET status = 'running', owner_pid = ?, owner_start = NULL "
            "WHERE runtime_id = 'claude-code'",
            (os.getpid(),),
        )
    code, out, err = cli("workspaces", "--json", capsys=capsys)
    assert code == 0, err
    rows = {r["label"]: r for r in map(json.loads, out.splitlines())}
    assert rows["native"]["applied"]["branch"] == "ringleader/t-native-native"
    assert rows["codex"]["applied"] is None and rows["codex"]["sizeBytes"] > 0
    assert rows["claude-code"]["live"] is True
    code, out, _ = cli("workspaces", "--prune", capsys=capsys)
    assert code == 0 and f"removed {made['native']} (native, applied)" in out
    assert not made["native"].exists() and made["codex"].exists()
    assert "ringleader/t-native-native" not in git("branch", "--list", cwd=repo)
    assert str(made["native"]) not in git("worktree", "list", cwd=repo)
    code, out, _ = cli("workspaces", "--prune", "--older-than", "1s", capsys=capsys)
    assert code == 0 and "(codex, old)" in out and "claude-code" not in out.split("workspaces")[0]
    assert made["claude-code"].exists() and not made["codex"].exists()
    code, out, _ = cli("workspaces", capsys=capsys)
    assert "claude-code" in out and "live" in out
    code, _, err = cli("diff", "task1/codex", capsys=capsys)
    assert "was removed" in one_line_error(code, err)
    code, _, err = cli("workspaces", "--older-than", "7d", capsys=capsys)
    assert "--older-than goes with --prune" in one_line_error(code, err)


def test_applying_a_run_twice_says_it_is_already_there(
    repo: Path, tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = make_runs(repo, state, ("native",))["native"]
    (ws / "hello.py").write_text("agent\n")
    assert cli("apply", "last", capsys=capsys)[0] == 0
    (repo / "later.txt").write_text("later\n")
    git("add", "later.txt", cwd=repo)
    git("commit", "-qm", "later", cwd=repo)
    head = git("rev-parse", "HEAD", cwd=repo)
    code, _, err = cli("apply", "last", capsys=capsys)
    assert "are already on main" in one_line_error(code, err)
    assert git("rev-parse", "HEAD", cwd=repo) == head
    assert git("branch", "--list", "ringleader/*", cwd=repo).split() == [
        "ringleader/t-native-native"
    ]  # the same change reuses its branch

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("".join(f"line {i}\n" for i in range(30)))
    copy = make_runs(plain, state, ("codex",), group="task2")["codex"]
    (copy / "a.txt").rename(copy / "b.txt")
    assert cli("apply", "task2/codex", capsys=capsys)[0] == 0
    assert not (plain / "a.txt").exists() and (plain / "b.txt").exists()
    code, _, err = cli("apply", "task2/codex", capsys=capsys)
    assert "are already in" in one_line_error(code, err)


def test_a_failed_push_is_one_line_without_the_secret_in_its_url(
    repo: Path, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-ant-api03-" + "Q" * 40
    ws = make_runs(repo, state, ("native",))["native"]
    (ws / "hello.py").write_text("agent\n")
    code, _, err = cli("apply", "last", "--push", str(tmp_path / secret), capsys=capsys)
    line = one_line_error(code, err)
    assert "could not push ringleader/t-native-native" in line and secret not in line
    assert "(the branch ringleader/t-native-native is kept)" in line


def test_a_running_run_is_not_applied_and_a_deleted_workspace_is_one_line(
    repo: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = make_runs(repo, state, ("native", "codex"))
    (made["native"] / "hello.py").write_text("agent\n")
    with sqlite3.connect(state / "events.db") as db:
        db.execute(
            "UPDATE runs SET status = 'running', owner_pid = ?, owner_start = NULL "
            "WHERE runtime_id = 'native'",
            (os.getpid(),),
        )
    code, _, err = cli("apply", "task1/native", capsys=capsys)
    assert "is still running; apply it once it has ended" in one_line_error(code, err)
    assert not (repo / "hello.py").exists()
    shutil.rmtree(made["codex"])  # removed by hand, not pruned
    code, _, err = cli("diff", "task1/codex", capsys=capsys)
    assert "is gone (removed or pruned)" in one_line_error(code, err)
    code, out, _ = cli("workspaces", "--prune", capsys=capsys)
    assert code == 0 and "(codex, gone)" in out and "native" not in out.split("\n")[0]


def test_runs_under_reads_the_runs_of_a_task_only(state: Path) -> None:
    async def go() -> list[str]:
        async with EventLog.open(state / "events.db") as log:
            for key in (
                "runtime:codex:task:ab:run-1",
                "runtime:codex:task:ab:r1:run-2",
                "runtime:codex:task:abc:run-3",  # another task whose id starts the same
                "runtime:native:task:ab:run-4",
            ):
                await log.start_run(key, runtime_id="codex", session_key=key)
                await log.finish_run(key, status="success", outcome={})
            return [r.run_key for r in await log.runs_under(["runtime:codex:task:ab"])]

    assert trio.run(go) == ["runtime:codex:task:ab:run-1", "runtime:codex:task:ab:r1:run-2"]
