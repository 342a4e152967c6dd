"""``ringleader inbox``: the inbox items runs posted (the native runtime's
``glove_post_to_inbox``) in the state directory, listed and resolved from the command line.

Each runtime that keeps inbox items says how through its spec's ``inbox`` hook
(:class:`~orchestrator.core.registry.InboxHook`); ``--resolve`` marks pending items resolved
with ``--response`` (any process may do it, the run need not be live), and the run's next
request reads the answer."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from orchestrator.cli.options import json_option, sub_command
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import InboxHook, InboxItemRow

__all__ = ["register"]


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    from orchestrator.cli.commands import usable_state_dir
    from orchestrator.core.registry import discover_runtimes

    run_id: str | None = args.run_id
    to_resolve: list[str] = args.resolve or []
    response: str | None = args.response
    if to_resolve and response is None:
        raise ConfigError("inbox --resolve needs --response TEXT (what the agent is told)")
    if response is not None and not to_resolve:
        raise ConfigError("inbox --response goes with --resolve ITEM_ID")
    if to_resolve and run_id is None:
        raise ConfigError("inbox --resolve needs the run id: ringleader inbox RUN_ID --resolve ID")
    state = usable_state_dir()
    found: list[tuple[InboxHook, InboxItemRow]] = []
    for spec in discover_runtimes():
        if spec.inbox is not None:
            found += [(spec.inbox, row) for row in spec.inbox.list_items(state, run_id)]
    if run_id is not None and not found:
        raise ConfigError(f"no inbox items for run {run_id} in the state directory")
    if to_resolve:
        pending = {row.item_id: hook for hook, row in found if row.status == "pending"}
        known = {row.item_id for _hook, row in found}
        for item_id in to_resolve:
            if item_id not in known:
                raise ConfigError(f"run {run_id} has no inbox item {item_id}")
            if item_id not in pending:
                raise ConfigError(f"inbox item {item_id} is not pending")
        assert run_id is not None and response is not None
        for item_id in to_resolve:
            pending[item_id].resolve(state, run_id, item_id, response)
            out.write(f"resolved {item_id}\n")
        return 0
    shown = [row for _hook, row in found if args.all or row.status == "pending"]
    for row in shown:
        if args.json:
            out.write(json.dumps({"runId": row.run_id, **_fields(row)}) + "\n")
            continue
        kind = "blocking" if row.blocking else "non-blocking"
        answer = f" -> {row.response}" if row.response else ""
        out.write(
            f"{row.item_id}  {row.run_id}  {row.status}  {kind}  [{row.tag}] {row.request}"
            f"{answer}\n"
        )
    if not shown and not args.json:
        out.write("no pending inbox items\n" if not args.all else "no inbox items\n")
    return 0


def _fields(row: InboxItemRow) -> dict[str, Any]:
    return {
        "id": row.item_id,
        "tag": row.tag,
        "request": row.request,
        "status": row.status,
        "blocking": row.blocking,
        "response": row.response,
        "createdAt": row.created_at,
        "resolvedAt": row.resolved_at,
    }


def register(sub: Any) -> None:
    """Add ``inbox`` to the command line."""
    parser = sub_command(
        sub,
        "inbox",
        "list or resolve the inbox items native runs posted (glove_post_to_inbox)",
        "List the pending inbox items of the native runs in the state directory (of one run "
        "with RUN_ID; --all shows resolved and consumed ones too), or resolve pending items of "
        "a run: --resolve ITEM_ID [ITEM_ID …] --response TEXT. The run reads the answer at its "
        "next request, in this process or any other.",
        [
            "ringleader inbox",
            "ringleader inbox native-3f2c9a1b7e40aa01 --all --json | jq .status",
            "ringleader inbox native-3f2c9a1b7e40aa01 --resolve inbox_1_ab12cd "
            "--response 'restocked: 40 units'",
        ],
    )
    parser.add_argument("run_id", nargs="?", metavar="RUN_ID", help="the run (its session id)")
    parser.add_argument(
        "--resolve",
        nargs="+",
        metavar="ITEM_ID",
        help="resolve these pending items of RUN_ID; e.g. --resolve inbox_1_ab12cd",
    )
    parser.add_argument(
        "--response", metavar="TEXT", help="with --resolve: the answer; e.g. --response 'done'"
    )
    parser.add_argument("--all", action="store_true", help="list every item, not only pending")
    json_option(parser, "the items (one JSON object per line)")
    parser.set_defaults(handler=_handle)
