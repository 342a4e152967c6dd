"""The native runtime's workspace tools through the real executor: happy paths, typed errors,
confinement (symlinks, a symlink swapped in mid-write), output caps, the permission policy."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from adapters.native.cancel import CancelToken
from adapters.native.executor import Executor, PermissionRequest, ToolBatch
from adapters.native.messages import ToolCall, ToolResultData
from adapters.native.output import HeadTail, cap_text
from adapters.native.policy import FULL_ACCESS, READ_ONLY, PermissionPolicy
from adapters.native.stores.memory import MemoryStore
from adapters.native.subscriber import SubscriberEvent
from adapters.native.tools import Tool
from adapters.native.workspace import WorkspaceLimits, glob_regex, workspace_tools
from orchestrator.core.errors import ConfigError
from orchestrator.core.lifetime import ProcessIdentity


async def _ignore(event: SubscriberEvent) -> None:
    pass


async def call(
    tools: Sequence[Tool[Any]],
    name: str,
    handler: Any = None,
    **args: Any,
) -> ToolResultData:
    """One tool call through the executor (lookup, validation, policy, run)."""
    executor = Executor(MemoryStore("s"), _ignore, permission_handler=handler, unhandled="deny")
    for t in tools:
        executor.register(t)
    batch = ToolBatch([ToolCall(tool_name=name, input_args=args, id="c1")])
    await executor.execute(batch, CancelToken())
    (result,) = batch.done()
    return result.result


def ok(result: ToolResultData) -> str:
    assert result.status == "success", result
    assert isinstance(result.data, str)
    return result.data


def err(result: ToolResultData, kind: str) -> str:
    assert result.status == "error", result
    assert result.error_kind == kind, result
    assert result.message
    return result.message


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "a.py").write_text("import os\n\ndef alpha():\n    return 1\n")
    (root / "src" / "b.py").write_text("def beta():\n    return 2\n")
    (root / "README.md").write_text("# Title\nhello world\n")
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "x.py").write_text("def alpha(): pass\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET alpha\n")
    return root


@pytest.fixture
def tools(ws: Path) -> list[Tool[Any]]:
    return workspace_tools(ws, policy=FULL_ACCESS)


# -- read_file ----------------------------------------------------------------------------------


async def test_read_file(tools: list[Tool[Any]], ws: Path) -> None:
    assert ok(await call(tools, "read_file", path="README.md")) == "# Title\nhello world\n"
    assert ok(await call(tools, "read_file", path="./src/../README.md")).startswith("# Title")
    paged = ok(await call(tools, "read_file", path="src/pkg/a.py", offset=3, limit=1))
    assert paged.startswith("def alpha():\n")
    assert "read_file offset=4" in paged
    (ws / "bin.dat").write_bytes(b"\x00\x01\x02" * 10)
    assert "binary file of 30 bytes" in ok(await call(tools, "read_file", path="bin.dat"))
    (ws / "empty.txt").write_text("")
    assert "is empty" in ok(await call(tools, "read_file", path="empty.txt"))


async def test_read_file_errors(tools: list[Tool[Any]], ws: Path) -> None:
    assert "does not exist" in err(await call(tools, "read_file", path="nope.txt"), "not_found")
    assert "directory" in err(await call(tools, "read_file", path="src"), "invalid_input")
    err(await call(tools, "read_file", path="README.md/x"), "invalid_input")
    assert "path" in err(await call(tools, "read_file"), "invalid_input")  # validation
    err(await call(tools, "read_file", path="a", offset=0), "invalid_input")
    for path in ("../outside/secret.txt", "/etc/passwd", "src/../../outside/secret.txt"):
        msg = err(await call(tools, "read_file", path=path), "denied")
        assert "outside the workspace" in msg


async def test_symlinks_inside_followed_outside_refused(tools: list[Tool[Any]], ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "link_in").symlink_to("src/b.py")
    (ws / "link_out").symlink_to(outside / "secret.txt")
    (ws / "dir_out").symlink_to("../outside")
    assert "beta" in ok(await call(tools, "read_file", path="link_in"))
    err(await call(tools, "read_file", path="link_out"), "denied")
    err(await call(tools, "read_file", path="dir_out/secret.txt"), "denied")
    err(await call(tools, "write_file", path="link_out", content="x"), "denied")
    err(await call(tools, "write_file", path="dir_out/new.txt", content="x"), "denied")
    err(await call(tools, "edit_file", path="link_out", old_string="TOP", new_string="x"), "denied")
    err(await call(tools, "list_files", path="dir_out"), "denied")
    # walks do not enter symlinked directories nor read symlinked files
    assert "secret" not in ok(await call(tools, "glob", pattern="**/*.txt"))
    assert "No matches" in ok(await call(tools, "grep", pattern="TOP SECRET"))
    assert (outside / "secret.txt").read_text() == "TOP SECRET alpha\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


# -- write_file and edit_file ------------------------------------------------------------------


async def test_write_file(tools: list[Tool[Any]], ws: Path) -> None:
    msg = ok(await call(tools, "write_file", path="new/deep/f.txt", content="héllo\n"))
    assert msg == "Created new/deep/f.txt (7 bytes)."
    assert (ws / "new" / "deep" / "f.txt").read_text() == "héllo\n"
    msg = ok(await call(tools, "write_file", path="new/deep/f.txt", content="x"))
    assert msg.startswith("Overwrote")
    assert (ws / "new" / "deep" / "f.txt").read_text() == "x"
    err(await call(tools, "write_file", path="src", content="x"), "invalid_input")
    err(await call(tools, "write_file", path="../escape.txt", content="x"), "denied")
    assert not (ws.parent / "escape.txt").exists()


async def test_edit_file(tools: list[Tool[Any]], ws: Path) -> None:
    f = ws / "src" / "b.py"
    args = {"path": "src/b.py"}
    msg = ok(await call(tools, "edit_file", **args, old_string="return 2", new_string="return 3"))
    assert msg == "Edited src/b.py: 1 replacement."
    assert f.read_text() == "def beta():\n    return 3\n"
    missing = err(
        await call(tools, "edit_file", **args, old_string="return 9", new_string="x"), "not_found"
    )
    assert "not found" in missing
    f.write_text("x = 1\nx = 1\n")
    twice = err(
        await call(tools, "edit_file", **args, old_string="x = 1", new_string="y"), "invalid_input"
    )
    assert "occurs 2 times" in twice
    assert f.read_text() == "x = 1\nx = 1\n"
    msg = ok(
        await call(tools, "edit_file", **args, old_string="x = 1", new_string="y", replace_all=True)
    )
    assert msg.endswith("2 replacements.")
    assert f.read_text() == "y\ny\n"
    err(await call(tools, "edit_file", **args, old_string="y", new_string="y"), "invalid_input")
    err(await call(tools, "edit_file", **args, old_string="", new_string="z"), "invalid_input")
    err(await call(tools, "edit_file", path="no.py", old_string="a", new_string="b"), "not_found")
    (ws / "latin.txt").write_bytes(b"caf\xe9")
    err(
        await call(tools, "edit_file", path="latin.txt", old_string="caf", new_string="x"),
        "invalid_input",
    )


# -- list_files, glob, grep ----------------------------------------------------------------------


async def test_list_files(tools: list[Tool[Any]], ws: Path) -> None:
    (ws / "ln").symlink_to("README.md")
    listing = ok(await call(tools, "list_files"))
    assert listing.splitlines() == ["README.md", "ln -> README.md", "node_modules/", "src/"]
    assert ok(await call(tools, "list_files", path="src")).splitlines() == ["b.py", "pkg/"]
    (ws / "empty").mkdir()
    assert ok(await call(tools, "list_files", path="empty")) == "(empty directory)"
    err(await call(tools, "list_files", path="missing"), "not_found")
    err(await call(tools, "list_files", path="README.md"), "invalid_input")
    err(await call(tools, "list_files", path=".."), "denied")


def test_glob_regex() -> None:
    assert glob_regex("*.py").match("a.py")
    assert not glob_regex("*.py").match("src/a.py")
    assert glob_regex("**/*.py").match("a.py")
    assert glob_regex("**/*.py").match("src/pkg/a.py")
    assert glob_regex("src/**").match("src/pkg/a.py")
    assert glob_regex("src/*.{py,md}").match("src/b.md")
    assert not glob_regex("src/*.{py,md}").match("src/b.txt")
    assert glob_regex("[ab].py").match("b.py")
    assert not glob_regex("[!ab].py").match("b.py")
    assert glob_regex("?.py").match("c.py")


async def test_glob(tools: list[Tool[Any]], ws: Path) -> None:
    assert ok(await call(tools, "glob", pattern="**/*.py")).splitlines() == [
        "src/b.py",
        "src/pkg/a.py",
    ]
    assert ok(await call(tools, "glob", pattern="*.md")) == "README.md"
    # searched from inside a skipped directory, it is searched
    assert ok(await call(tools, "glob", pattern="**/*.py", path="node_modules")) == (
        "node_modules/dep/x.py"
    )
    assert ok(await call(tools, "glob", pattern="*.py", path="src")) == "src/b.py"
    assert "No files match" in ok(await call(tools, "glob", pattern="*.rs"))
    err(await call(tools, "glob", pattern="*", path="../outside"), "denied")


async def test_glob_result_cap(ws: Path) -> None:
    tools = workspace_tools(ws, limits=WorkspaceLimits(max_results=3))
    for i in range(10):
        (ws / f"f{i}.txt").write_text("")
    out = ok(await call(tools, "glob", pattern="*.txt"))
    assert out.splitlines()[:3] == ["f0.txt", "f1.txt", "f2.txt"]
    assert "and 7 more" in out


async def test_grep(tools: list[Tool[Any]], ws: Path) -> None:
    out = ok(await call(tools, "grep", pattern=r"def \w+"))
    assert out.splitlines() == ["src/b.py:1:def beta():", "src/pkg/a.py:3:def alpha():"]
    assert ok(await call(tools, "grep", pattern="HELLO", ignore_case=True)) == (
        "README.md:2:hello world"
    )
    assert (
        ok(await call(tools, "grep", pattern="def", include="a.py"))
        == "src/pkg/a.py:3:def alpha():"
    )
    assert ok(await call(tools, "grep", pattern="def", include="*.py")).count("\n") == 1
    assert ok(await call(tools, "grep", pattern="def", include="src/pkg/*.py")) == (
        "src/pkg/a.py:3:def alpha():"
    )
    assert ok(await call(tools, "grep", pattern="def", path="./src/")).splitlines() == [
        "src/b.py:1:def beta():",
        "src/pkg/a.py:3:def alpha():",
    ]
    assert ok(await call(tools, "glob", pattern="*.py", path="./src/")) == "src/b.py"
    assert ok(await call(tools, "grep", pattern="return", path="src/b.py")) == (
        "src/b.py:2:    return 2"
    )
    assert "No matches" in ok(await call(tools, "grep", pattern="zzz"))
    assert "regular expression" in err(await call(tools, "grep", pattern="("), "invalid_input")
    err(await call(tools, "grep", pattern="x", path="../outside"), "denied")
    (ws / "many.txt").write_text("hit\n" * 50)
    out = ok(await call(tools, "grep", pattern="hit", max_results=5))
    assert len(out.splitlines()) == 6
    assert "and 45 more matches" in out


# -- output caps ---------------------------------------------------------------------------------


def test_cap_text_keeps_head_and_tail() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 1001))
    capped, cut = cap_text(text, 200, hint="read more")
    assert cut is not None
    first, last = cut
    lines = capped.splitlines()
    assert lines[0] == "line 1"
    assert lines[-1] == "line 1000"
    assert lines[first - 1].startswith("[… ")
    assert f"({last - first + 1:,} lines) omitted; read more …]" in capped
    assert lines[first - 2] == f"line {first - 1}"
    assert lines[first] == f"line {last + 1}"
    assert len(capped.encode()) < 200 + 80
    assert cap_text("short", 200) == ("short", None)


def test_head_tail_collector() -> None:
    out = HeadTail(100)
    for i in range(1, 501):
        out.feed(f"row {i}\n".encode())
    text = out.text("hint")
    assert text.startswith("row 1\n")
    assert text.endswith("row 500\n")
    assert "omitted; hint …]" in text
    assert len(text.encode()) < 100 + 80
    small = HeadTail(100)
    small.feed(b"tiny\n")
    assert small.text() == "tiny\n"


async def test_read_file_cap_names_the_lines_to_read(ws: Path) -> None:
    tools = workspace_tools(ws, limits=WorkspaceLimits(output_bytes=300))
    (ws / "big.txt").write_text("".join(f"{i:04d}\n" for i in range(1, 1001)))
    out = ok(await call(tools, "read_file", path="big.txt"))
    assert out.startswith("0001\n")
    assert "1000\n" in out
    assert "read them with read_file offset=" in out
    hinted = out.split("offset=")[1].split(" ")[0]
    # the named range is exactly the lines left out
    first = int(hinted)
    assert f"{first - 1:04d}\n" in out
    assert f"\n{first:04d}\n" not in out


# -- bash ------------------------------------------------------------------------------------------


async def test_bash_runs_in_the_workspace(tools: list[Tool[Any]], ws: Path) -> None:
    out = ok(await call(tools, "bash", command="pwd; echo out; echo err >&2; ls src"))
    assert out.splitlines() == [os.path.realpath(ws), "out", "err", "b.py", "pkg"]
    failed = await call(tools, "bash", command="echo before; exit 3")
    assert err(failed, "failed") == "exit code 3"
    assert failed.data == "before\n"
    assert ok(await call(tools, "bash", command="true")) == "(no output)"


async def test_bash_output_is_capped(ws: Path) -> None:
    from adapters.native.shell import BashOptions

    tools = workspace_tools(ws, policy=FULL_ACCESS, bash=BashOptions(output_bytes=400))
    out = ok(await call(tools, "bash", command="seq 1 100000"))
    assert out.startswith("1\n2\n")
    assert out.endswith("99999\n100000\n")
    assert "omitted" in out
    assert "redirect it to a file" in out
    assert len(out.encode()) < 400 + 150
    long_line = ok(await call(tools, "bash", command="head -c 5000 /dev/zero | tr '\\0' a; echo"))
    assert "a line longer than 400 bytes was left out" in long_line


async def test_bash_env_has_no_secrets(
    tools: list[Tool[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-verysecretvalue")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secrettokenvalue123")
    monkeypatch.setenv("MY_PASSWORD", "hunter2-secret")
    out = ok(await call(tools, "bash", command="env"))
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    assert "PATH" in names
    for secret in ("sk-ant-api03-verysecretvalue", "ghp_secrettokenvalue123", "hunter2-secret"):
        assert secret not in out
    assert not names & {"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MY_PASSWORD"}


RECORD_BG = "echo $! $(cut -d' ' -f22 /proc/$!/stat)"
"""The background job's pid and start time: its identity (the command runs in a PID namespace
of its own, so ``$!`` is that namespace's pid)."""


def _alive(recorded: str) -> bool:
    pid, start = recorded.split()
    return ProcessIdentity(int(pid), int(start)).alive()


def _wait_for_file(path: Path) -> None:
    """Block (a worker thread) until ``path`` exists; fail after a minute of real time."""
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} was never written"
        time.sleep(0.01)


async def test_bash_timeout_kills_the_process_group(
    ws: Path, mock_clock: trio.testing.MockClock
) -> None:
    from adapters.native.shell import BashOptions

    # The clock stands still (rate 0) until the command has printed its line and recorded its
    # background job, then runs at the real rate: the 0.5 s timeout can only fire after that
    # (on a loaded machine the PID-namespace shim and bash took longer than 0.5 s to get there,
    # and the output was empty), and the kill's graces are real ones.
    tools = workspace_tools(ws, policy=FULL_ACCESS, bash=BashOptions(kill_grace_s=0.2))
    command = (
        f"sleep 300 & {RECORD_BG} > bg.pid; (sleep 300; echo never) & echo started; : > ready; wait"
    )
    results: list[ToolResultData] = []

    async def run() -> None:
        results.append(await call(tools, "bash", command=command, timeout_s=0.5))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await trio.to_thread.run_sync(_wait_for_file, ws / "ready")
        await trio.testing.wait_all_tasks_blocked()  # the tool has read the line
        assert not results  # no time has passed: the command still runs
        mock_clock.rate = 1.0
        began = time.monotonic()
    elapsed = time.monotonic() - began
    [result] = results
    msg = err(result, "timeout")
    assert "timed out after 0.5s" in msg and "process group was killed" in msg
    assert result.data == "started\n"
    assert not _alive((ws / "bg.pid").read_text()), "a background job survived the timeout"
    assert elapsed < 10


async def test_bash_timeout_is_bounded_by_the_maximum(ws: Path) -> None:
    from adapters.native.shell import BashOptions

    tools = workspace_tools(ws, policy=FULL_ACCESS, bash=BashOptions(max_timeout_s=0.3))
    result = await call(tools, "bash", command="sleep 30", timeout_s=1000)
    assert "timed out after 0.3s" in err(result, "timeout")


# -- permission policy -------------------------------------------------------------------------


async def test_default_policy_reads_writes_and_asks_for_bash(ws: Path) -> None:
    tools = workspace_tools(ws)
    ok(await call(tools, "read_file", path="README.md"))
    ok(await call(tools, "write_file", path="w.txt", content="x"))
    msg = err(await call(tools, "bash", command="touch ran"), "denied")
    assert "no approval handler" in msg
    assert not (ws / "ran").exists()


async def test_ask_goes_to_the_handler(ws: Path) -> None:
    tools = workspace_tools(ws)
    asked: list[PermissionRequest] = []

    async def yes(request: PermissionRequest) -> bool:
        asked.append(request)
        return True

    async def no(request: PermissionRequest) -> bool:
        return False

    ok(await call(tools, "bash", handler=yes, command="touch ran"))
    assert (ws / "ran").exists()
    assert [(r.tool_name, r.tool_input["command"]) for r in asked] == [("bash", "touch ran")]
    err(await call(tools, "bash", handler=no, command="touch ran2"), "denied")
    assert not (ws / "ran2").exists()


async def test_deny_and_read_only(ws: Path) -> None:
    tools = workspace_tools(ws, policy=READ_ONLY)
    ok(await call(tools, "grep", pattern="beta"))

    async def yes(request: PermissionRequest) -> bool:
        return True

    for name, args in (
        ("write_file", {"path": "w.txt", "content": "x"}),
        ("edit_file", {"path": "README.md", "old_string": "hello", "new_string": "bye"}),
        ("bash", {"command": "touch ran"}),
    ):
        msg = err(await call(tools, name, handler=yes, **args), "denied")  # deny never asks
        assert "permission policy" in msg
    assert not (ws / "w.txt").exists()
    assert not (ws / "ran").exists()
    assert "hello" in (ws / "README.md").read_text()
    per_tool = workspace_tools(ws, policy=PermissionPolicy(tools={"grep": "deny"}))
    err(await call(per_tool, "grep", pattern="x"), "denied")
    ok(await call(per_tool, "glob", pattern="*"))


def test_policy_presets_and_bad_values() -> None:
    assert PermissionPolicy.preset("read-only") == READ_ONLY
    assert PermissionPolicy.preset("full-access").bash == "allow"
    assert PermissionPolicy() == PermissionPolicy.preset("workspace-write")
    assert PermissionPolicy().decision_for("my_tool") is None
    assert PermissionPolicy(tools={"my_tool": "deny"}).decision_for("my_tool") == "deny"
    with pytest.raises(ConfigError, match="unknown permission preset 'yolo'"):
        PermissionPolicy.preset("yolo")
    with pytest.raises(ConfigError, match="bash: 'maybe' is not one of allow, ask, deny"):
        PermissionPolicy(bash="maybe")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="for tool 'x'"):
        PermissionPolicy(tools={"x": "sure"})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="unknown workspace tool"):
        workspace_tools(".", names=["read_file", "rm_rf"])


# -- the race: a symlink swapped in while the tool writes ----------------------------------------


async def test_write_file_with_a_symlink_swapped_in_never_escapes(ws: Path) -> None:
    outside = ws.parent / "outside"
    (ws / "d").mkdir()
    grave = ws.parent / "grave"
    grave.mkdir()
    tools = workspace_tools(ws)
    stop = threading.Event()

    def swapper() -> None:
        # alternate ws/d between a real directory and a symlink to outside; write_file's mkdirs
        # may recreate d at any moment, so each step moves whatever is there out of the way
        n = 0
        while not stop.is_set():
            n += 1
            with contextlib.suppress(OSError):
                os.rename(ws / "d", grave / str(n))
            try:
                if n % 2:
                    os.symlink(outside, ws / "d")
                else:
                    os.mkdir(ws / "d")
            except OSError:
                pass

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    kinds: dict[str, int] = {}
    deadline = time.monotonic() + 60
    attempts = 0
    try:
        while attempts < 2000 or not ("denied" in kinds and "success" in kinds):
            attempts += 1
            result = await call(tools, "write_file", path="d/sub/pwned.txt", content="x")
            key = result.error_kind or result.status
            kinds[key] = kinds.get(key, 0) + 1
            if time.monotonic() > deadline:
                break
    finally:
        stop.set()
        thread.join(5)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"], "a write escaped"
    assert kinds.get("denied", 0) > 0, kinds  # the swap was really hit
    assert kinds.get("success", 0) > 0, kinds
