"""Drive ringleader from Python: one task on two runtimes side by side with ``LocalHost``,
their normalized events printed as they arrive, then a summary of each run.

The runtimes are built from their registered specs (``discover_runtimes()``), as ``ringleader
run`` builds them: the native agent loop, pointed at a scripted model server on 127.0.0.1 (it
lists the folder with its ``list_files`` tool, then answers), and the scripted runtime (canned
frames). No keys, nothing leaves 127.0.0.1. Every event is one of seven kinds, whatever the
runtime (text-delta, tool-call, tool-result, status, cost, error, done); each run ends in
exactly one ``done``.

    python examples/localhost/side_by_side.py           # events, then a summary table
    python examples/localhost/side_by_side.py --json    # JSON Lines: the events, the summary

Nothing is recorded here. To keep the runs in the event log as the CLI does (for ``ringleader
replay``, ``diff``, the board), open one (``async with EventLog.open(path) as log``) and give
the runner ``event_log=log, sink=RecordingSink(log, extra=[this_sink])``. With real keys,
point the registry at your runtimes instead (``RuntimeConfig(model=…)``, or ``load_config()``
for your ringleader.toml) and submit to ``"claude-code"`` or ``"codex"``.
Tested by tests/examples/test_localhost.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import trio

from orchestrator.core import (
    Cost,
    Done,
    ErrorEvent,
    RuntimeConfig,
    RuntimeEvent,
    RuntimeRegistry,
    Status,
    TextDelta,
    ToolCall,
    ToolResult,
    discover_runtimes,
    event_to_json,
)
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.hosts import LocalHost
from orchestrator.model_server import serve_model_server

MODEL_SCRIPT: dict[str, Any] = {  # what the scripted model server answers the native runtime
    "conversations": [
        {
            "name": "look",
            "turns": [
                {"text": "Let me look.", "tool_calls": [{"name": "list_files", "input": {}}]},
                {"text": "I see a README and a src folder.", "usage": {"output_tokens": 9}},
            ],
        }
    ]
}
KEY_ENV = "EXAMPLE_MODEL_SERVER_KEY"  # the server takes any key; the native runtime wants one


class PrintingSink:
    """An event sink (``deliver(run_key, events)``): the runner hands it every run's events in
    order. It prints each one and keeps them per run for the summary."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.events: defaultdict[str, list[RuntimeEvent]] = defaultdict(list)

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        self.events[run_key].extend(events)
        runtime = run_key.split(":")[1]  # runtime:<id>:task:<task>:run-<n>
        for event in events:
            if self.as_json:  # the wire format: camelCase JSON, as `ringleader run --json`
                line = json.dumps({"runKey": run_key, **json.loads(event_to_json(event))})
                print(line, flush=True)
            else:
                print(f"[{runtime}] {describe(event)}", flush=True)


def describe(event: RuntimeEvent) -> str:
    match event:
        case TextDelta(text=text):
            return f"text {text!r}"
        case ToolCall(name=name, input=args):
            return f"tool-call {name} {json.dumps(args)}"
        case ToolResult(name=name, output=output, is_error=is_error):
            return f"tool-result {name}{' (error)' if is_error else ''}: {output!r}"
        case Status(phase=phase, detail=detail):
            return f"status {phase}{f' ({detail})' if detail else ''}"
        case Cost(usage=usage, cost_usd=usd):
            price = "unknown" if usd is None else f"${usd:.6f}"  # None: not reported, never 0
            return f"cost in={usage.input_tokens} out={usage.output_tokens} usd={price}"
        case ErrorEvent(code=code, message=message):
            return f"error {code}: {message}"
        case Done(reason=reason, summary=summary):
            return f"done {reason}: {summary!r}"


async def side_by_side(prompt: str, work: Path, state: Path, as_json: bool) -> dict[str, Any]:
    specs = [spec for spec in discover_runtimes() if spec.id in ("native", "scripted")]
    sink = PrintingSink(as_json)
    async with serve_model_server(MODEL_SCRIPT) as server:
        os.environ.setdefault(KEY_ENV, "placeholder-not-a-key")
        native = RuntimeConfig(
            provider="anthropic",
            model="claude-haiku-4-5",
            base_url=str(server.url),
            api_key_env=KEY_ENV,
        )
        registry = RuntimeRegistry.from_specs(
            specs, lambda runtime_id: native if runtime_id == "native" else RuntimeConfig()
        )
        runner = Runner(registry, sink=sink, state_dir=state)
        async with LocalHost(runner) as host:  # leaving it aborts whatever still runs
            refs = [
                host.submit(runtime_id, TaskSpec(task_id="look", title=prompt, cwd=str(work)))
                for runtime_id in ("native", "scripted")
            ]
            outcomes = [await ref.outcome() for ref in refs]
    runs: list[dict[str, Any]] = []
    for ref, outcome in zip(refs, outcomes, strict=True):
        run_key = outcome.runs[-1].outcome.run_key
        kinds = [event.kind for event in sink.events[run_key]]
        runs.append(
            {
                "runtime": ref.runtime_id,
                "runKey": run_key,
                "status": outcome.status,
                "summary": outcome.summary,
                "events": len(kinds),
                "toolCalls": kinds.count("tool-call"),
                "tokensIn": outcome.usage.input_tokens,
                "tokensOut": outcome.usage.output_tokens,
                "costUsd": outcome.cost_usd,
                "dones": kinds.count("done"),
            }
        )
    return {"kind": "summary", "prompt": prompt, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one task on two runtimes side by side")
    parser.add_argument("--json", action="store_true", help="JSON Lines: each event, the summary")
    parser.add_argument("prompt", nargs="?", default="What is in this folder?")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ringleader-example-") as tmp:
        work, state = Path(tmp, "work"), Path(tmp, "state")  # a folder to look at; the state
        (work / "src").mkdir(parents=True)
        (work / "README.md").write_text("# a project\n")
        summary = trio.run(side_by_side, args.prompt, work, state, args.json)
    if args.json:
        print(json.dumps(summary))
    else:
        print()
        print(
            f"{'runtime':<10} {'status':<8} {'events':>6} {'tools':>5} {'in':>5} {'out':>5}  summary"
        )
        for run in summary["runs"]:
            print(
                f"{run['runtime']:<10} {run['status']:<8} {run['events']:>6} "
                f"{run['toolCalls']:>5} {run['tokensIn']:>5} {run['tokensOut']:>5}  {run['summary']}"
            )
    return 0 if all(run["status"] == "success" for run in summary["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
