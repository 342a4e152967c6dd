"""``ringleader diff`` (what one run changed in its workspace) and ``ringleader compare`` (the
runs of one side-by-side task next to each other)."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

import trio

from orchestrator.cli.options import json_option, sub_command

__all__ = ["register"]


async def _diff(ref: str, *, stat: bool, as_json: bool, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.review.diff import workspace_diff
    from orchestrator.engine.review.records import checkout_of, resolve_run, workspace_dir

    async with EventLog.open(usable_state_dir() / "events.db") as log:
        run = await resolve_run(log, ref)
    checkout = checkout_of(run.workspace)
    diff = await trio.to_thread.run_sync(workspace_diff, checkout)
    if as_json:
        body: dict[str, Any] = {
            "run": run.key,
            "task": run.workspace.group_id,
            "label": run.workspace.label,
            "runtime": run.workspace.runtime_id,
            "workspace": workspace_dir(run.workspace),
            "kind": run.workspace.kind,
            **diff.to_json(hunks=not stat),
        }
        out.write(json.dumps(body) + "\n")
    elif stat:
        out.write(diff.stat())
    else:
        out.write(diff.unified())
    out.flush()
    return 0


async def _compare(ref: str, *, show: str | None, as_json: bool, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.core.errors import ReviewError
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.review.compare import compare_runs
    from orchestrator.engine.review.records import resolve_group, workspace_dir

    async with EventLog.open(usable_state_dir() / "events.db") as log:
        runs = await resolve_group(log, ref)
    group = runs[0].workspace.group_id
    comparison = await trio.to_thread.run_sync(compare_runs, group, runs)
    if show is not None:
        picked = [r for r in comparison.runs if show in (r.label, r.run.workspace.runtime_id)]
        if not picked:
            labels = ", ".join(r.label for r in comparison.runs)
            raise ReviewError(f"task {group} has no run {show!r} (its runs: {labels})")
        one = picked[0]
        if one.diff is None:
            raise ReviewError(one.error or f"run {show} cannot be diffed")
        if as_json:
            out.write(json.dumps({"task": group, "label": one.label, **one.diff.to_json()}) + "\n")
        else:
            out.write(one.diff.unified())
        return 0
    if as_json:
        out.write(json.dumps(comparison.to_json()) + "\n")
        return 0
    from rich.table import Table

    from orchestrator.cli.live import table_console

    console = table_console(out)
    first = comparison.runs[0].run.workspace
    console.print(
        f"task {group}: {len(comparison.runs)} runs of {first.origin} "
        f"(from {(first.base or '?')[:12]})",
        markup=False,
    )
    runs_table = Table(title="runs", title_justify="left")
    for name in ("run", "runtime", "outcome", "files", "lines", "workspace"):
        runs_table.add_column(name, overflow="fold")
    for r in comparison.runs:
        last = r.run.last
        files = "?" if r.diff is None else str(len(r.diff.files))
        lines = "-" if r.diff is None else f"+{r.diff.added} -{r.diff.removed}"
        runs_table.add_row(
            r.label,
            r.run.workspace.runtime_id,
            last.status if last else "never started",
            files,
            lines,
            r.error or workspace_dir(r.run.workspace),
        )
    console.print(runs_table)
    paths = comparison.files()
    if not paths:
        console.print("no run changed any file", markup=False)
        return 0
    files_table = Table(title="files", title_justify="left")
    files_table.add_column("file", overflow="fold")
    for r in comparison.runs:
        files_table.add_column(r.label, justify="right")
    files_table.add_column("runs agree?")
    for path in paths:
        touched = comparison.touched_by(path)
        cells: list[str] = []
        for r in comparison.runs:
            if r in touched and r.diff is not None:
                f = next(x for x in r.diff.files if x.path == path)
                cells.append(f"{f.status} +{f.added} -{f.removed}")
            else:
                cells.append("-")
        if len(touched) == 1:
            verdict = f"only {touched[0].label}"
        elif comparison.agree(path):
            verdict = "agree (same content)"
        else:
            verdict = "differ"
        files_table.add_row(path, *cells, verdict)
    console.print(files_table)
    console.print(
        f"a run's diff: ringleader compare {group} --diff LABEL (or ringleader diff "
        f"{group}/LABEL); land one: ringleader apply {group}/LABEL",
        markup=False,
    )
    return 0


def _handle_diff(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(lambda: _diff(args.run, stat=bool(args.stat), as_json=bool(args.json), out=out))


def _handle_compare(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(lambda: _compare(args.task, show=args.diff, as_json=bool(args.json), out=out))


def register(sub: Any) -> None:
    """Add diff and compare to the command line."""
    diff = sub_command(
        sub,
        "diff",
        "what a run changed in its workspace",
        "The run's changes against the commit its workspace started from (a temporary copy: "
        "its snapshot; a run in your own checkout: the working tree as the run found it), "
        "untracked files included, renames detected, binary and large files marked. RUN is a "
        "run key, a task id, TASK/LABEL, a runtime (its newest run) or last.",
        [
            "ringleader diff last",
            "ringleader diff last --stat",
            "ringleader diff 3f9a1c2b/codex --json | jq '.files[].path'",
        ],
    )
    diff.add_argument("run", nargs="?", default="last", help="the run (default: last)")
    diff.add_argument("--stat", action="store_true", help="a line per file, then the totals")
    json_option(diff, "the files with their status and hunks (one JSON object)")
    diff.set_defaults(handler=_handle_diff)
    compare = sub_command(
        sub,
        "compare",
        "the runs of one side-by-side task next to each other",
        "Each run of the task (outcome, files, lines added/removed), then every file any of "
        "them touched: which runs changed it and whether they agree (the same content) or "
        "differ. --diff LABEL shows one run's diff.",
        [
            "ringleader compare last",
            "ringleader compare 3f9a1c2b --diff codex",
            "ringleader compare last --json | jq '.files[] | select(.agree | not) | .path'",
        ],
    )
    compare.add_argument(
        "task", nargs="?", default="last", help="the task (its id, one of its runs, or last)"
    )
    compare.add_argument("--diff", metavar="LABEL", help="show this run's diff; e.g. --diff codex")
    json_option(compare, "the runs and files (one JSON object)")
    compare.set_defaults(handler=_handle_compare)
