"""``run --board`` (issue 34 item 2): the board opens and closes around the runs without
misnesting their scopes, and at a terminal its URL is printed above the live view."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from adapters import ScriptedAdapter
from orchestrator.cli.live import RichView
from orchestrator.cli.serve import board_for_run
from orchestrator.cli.sidebyside import Job, run_jobs
from orchestrator.core import RuntimeRegistry
from orchestrator.engine import TaskSpec


def registry() -> RuntimeRegistry:
    found = RuntimeRegistry()
    found.register_factory(
        "scripted",
        lambda: ScriptedAdapter(
            [{"type": "text", "text": "quick"}, {"type": "result", "ok": True, "summary": "quick"}]
        ),
    )
    return found


async def test_a_run_with_its_board_succeeds_and_the_url_is_drawn_above_the_live_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    console = Console(file=io.StringIO(), record=True, width=160, force_terminal=True)
    view = RichView(console=console)
    jobs = [Job(label="scripted", runtime_id="scripted", task=TaskSpec(task_id="1", title="hi"))]
    results = await run_jobs(registry(), jobs, view, state_dir=tmp_path, board=board_for_run)
    assert [r.ok for r in results] == [True]
    drawn = console.export_text()
    assert "ringleader: board at http://127.0.0.1:" in drawn  # through the live view's console
    assert "board at" not in capsys.readouterr().err  # not written past it (a redraw erases it)
    assert "comparison" in drawn
