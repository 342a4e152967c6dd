"""``ringleader apply``: land a run's changes as a commit on ``ringleader/<task>-<runtime>`` and
onto your branch (or push it and open a pull request; a temporary copy: copy the files back)."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

import trio

from orchestrator.cli.options import json_option, sub_command

__all__ = ["register"]


async def _apply(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.engine.eventlog import EventLog
    from orchestrator.engine.review.diff import workspace_diff
    from orchestrator.engine.review.land import ApplyOptions, apply_and_record
    from orchestrator.engine.review.records import checkout_of, resolve_run

    async with EventLog.open(usable_state_dir() / "events.db") as log:
        run = await resolve_run(log, args.run)
        opts = ApplyOptions(
            onto=args.onto,
            mode="merge" if args.merge else "squash",
            message=args.message,
            author=args.author,
            push=args.push,
            pr=bool(args.pr),
        )
        result = await apply_and_record(log, run, opts)
    diff = await trio.to_thread.run_sync(workspace_diff, checkout_of(run.workspace))
    if args.json:
        out.write(json.dumps({"run": run.key, **result.to_json()}) + "\n")
        return 0
    what = diff.summary()
    if result.copied_to is not None:
        out.write(f"copied {what} of run {run.key} back to {result.copied_to}\n")
        return 0
    assert result.commit is not None
    out.write(f"committed run {run.key} ({what}) as {result.commit[:12]} on {result.branch}\n")
    if result.landed_on is not None and result.landed is not None:
        out.write(f"landed on {result.landed_on} ({result.how}): {result.landed[:12]}\n")
    if result.pushed_to is not None:
        out.write(f"pushed {result.branch} to {result.pushed_to}\n")
    if result.pr_url:
        out.write(f"pull request: {result.pr_url}\n")
    elif result.pr_command:
        out.write(
            "gh is not installed or not logged in; open the pull request with:\n"
            f"  {result.pr_command}\n"
        )
    return 0


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    return trio.run(_apply, args, out)


def register(sub: Any) -> None:
    """Add apply to the command line."""
    apply = sub_command(
        sub,
        "apply",
        "land a run's changes: a commit on ringleader/<task>-<runtime>, then onto your branch",
        "Commit the run's workspace as one commit on the branch ringleader/<task>-<runtime> "
        "(message from the run's summary), then put it onto the current branch (or --onto): "
        "--squash (default) as one commit, --merge with a merge commit. Refused, with nothing "
        "changed, when your working tree has uncommitted changes, the target branch is "
        "checked out in another worktree, or the changes conflict (the files are listed). "
        "--push REMOTE / --pr publish the branch instead (a pull request with gh when it is "
        "installed and logged in, else the command to run). A run of a directory that is not "
        "a git repository has its changed files copied back (refused for files that changed "
        "there since the run's snapshot).",
        [
            "ringleader apply last",
            "ringleader apply 3f9a1c2b/codex --onto release --merge",
            "ringleader apply codex --push origin --pr",
            "ringleader apply last --message 'parser: handle empty input' --author 'Ann <ann@x.org>'",
        ],
    )
    apply.add_argument("run", nargs="?", default="last", help="the run (default: last)")
    apply.add_argument("--onto", metavar="BRANCH", help="land on this branch (default: current)")
    how = apply.add_mutually_exclusive_group()
    how.add_argument("--squash", action="store_true", help="one commit on the target (default)")
    how.add_argument("--merge", action="store_true", help="a merge commit joining the run's branch")
    apply.add_argument(
        "--message", "-m", metavar="M", help="the commit message (default: from the run)"
    )
    apply.add_argument(
        "--author",
        metavar="'NAME <EMAIL>'",
        help="the commit's author (default: your git identity)",
    )
    apply.add_argument(
        "--push", metavar="REMOTE", help="push the run's branch to REMOTE (instead of landing it)"
    )
    apply.add_argument(
        "--pr",
        action="store_true",
        help="open a pull request with gh (pushes to --push REMOTE, default origin)",
    )
    json_option(apply, "what was done (one JSON object)")
    apply.set_defaults(handler=_handle)
