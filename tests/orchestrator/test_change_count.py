"""The change count sees every file a run created (issue 34 item 3): a run in the working
directory itself is counted too, and a folder the run creates that copies leave out (a ``git
init``'s ``.git``) is counted, while such folders that were already there are not walked."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from rich.console import Console

from adapters import ScriptedAdapter
from orchestrator.cli.live import PlainView
from orchestrator.cli.sidebyside import Job, run_jobs
from orchestrator.core import RuntimeRegistry, StartOpts, TaskHandle
from orchestrator.core.adapter import RunHandle
from orchestrator.engine import TaskSpec, create_workspace, workspace_changes
from orchestrator.engine.workspaces import changes_since, snapshot

BOOTSTRAP = ("AGENTS.md", "BOOTSTRAP.md", "IDENTITY.md", "SOUL.md", "USER.md")


class Bootstrapping(ScriptedAdapter):
    """A runtime that drops its own files into the directory it works in (as OpenClaw did)."""

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        assert opts.cwd is not None
        for name in BOOTSTRAP:
            (Path(opts.cwd) / name).write_text("# mine\n")
        (Path(opts.cwd) / ".git").mkdir()
        (Path(opts.cwd) / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        return await super().start(task, opts)


async def test_a_run_in_the_working_directory_counts_what_it_created(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "marker.txt").write_text("hi\n")
    registry = RuntimeRegistry()
    registry.register_factory(
        "boot", lambda: Bootstrapping([{"type": "result", "ok": True, "summary": "ok"}])
    )
    job = Job(
        label="boot", runtime_id="boot", task=TaskSpec(task_id="b", title="t", cwd=str(project))
    )
    view = PlainView(console=Console(file=io.StringIO(), width=200))
    [result] = await run_jobs(registry, [job], view, state_dir=tmp_path / "state")
    assert result.ok
    assert result.lane.files_changed == "6 files changed (+6 ~0 -0)"


async def test_a_folder_created_in_a_copy_is_counted_one_already_there_is_not(
    tmp_path: Path,
) -> None:
    origin = tmp_path / "plain"
    (origin / ".venv").mkdir(parents=True)
    (origin / ".venv" / "lib.py").write_text("x\n")
    (origin / "notes.txt").write_text("hello\n")
    ws = await create_workspace(origin, "native", state_dir=tmp_path / "state")
    try:
        (ws.path / ".git" / "objects").mkdir(parents=True)
        (ws.path / ".git" / "HEAD").write_text("ref\n")
        (ws.path / ".git" / "objects" / "ab").write_text("blob\n")
        assert await workspace_changes(ws) == "2 files changed (+2 ~0 -0)"
    finally:
        shutil.rmtree(ws.path)
    before = await snapshot(origin)
    assert before is not None
    (origin / ".venv" / "more.py").write_text("y\n")  # an existing cache: not walked
    (origin / "new.txt").write_text("n\n")
    assert await changes_since(before) == "1 file changed (+1 ~0 -0)"
