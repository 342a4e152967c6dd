"""Path 7: prompt-prefix reuse of a native run on Anthropic Messages, through the runner.

A task with all three tiers (a stable task statement, a context tier, a volatile memory + date
tier) runs on the native runtime against the scripted model server (in process): three tool
turns, then ``max_turns`` rotates it into a fresh session that finishes in two turns. The server
measures each request's prompt in cache order (tools, system, messages) against the request
before it (:func:`orchestrator.model_server.prefix_reuse_report`). Reported:

* ours — the share of prompt bytes (≈ input tokens, at the server's four bytes per token) that
  repeat the previous request, median over every turn after a session's first;
* the share a prompt cache with the request's ``cache_control`` breakpoints would serve;
* across the rotation — the successor's first request against the predecessor's last: the stable
  tier survives, the context tier (which now holds the handoff note) does not;
* the share of turns that reused the whole stable tier (the tiers' contract: 100%).

Not a speed figure: the same bytes every pass, so one pass is the measurement.
"""

from __future__ import annotations

import datetime as dt
import statistics
import tempfile
from pathlib import Path
from typing import Any

from ._core import Config, Row, figure, path

_LIST = {"name": "list_files", "input": {"path": "."}}


def _script() -> dict[str, Any]:
    return {
        "model": "claude-haiku-4-5",
        "conversations": [
            {
                "name": "after",
                "marker": "Session handoff (rotation)",
                "turns": [
                    {"text": "Picking it up.", "tool_calls": [_LIST]},
                    {"text": "Done after the rotation."},
                ],
            },
            {
                "name": "before",
                "marker": "[[bench:prefix]]",
                "turns": [
                    {"text": "Looking.", "tool_calls": [_LIST]},
                    {"text": "Still looking.", "tool_calls": [_LIST]},
                    {"text": "And again.", "tool_calls": [_LIST]},
                ],
            },
        ],
    }


def measure(tmp: Path) -> dict[str, Any]:
    """Run the task once; the reuse figures (shares in 0–1) and the requests' sizes."""
    import trio

    from adapters.native import NativeAdapter
    from adapters.native.models.providers import create_adapter
    from orchestrator.core import RuntimeRegistry
    from orchestrator.engine import Runner, TaskSpec
    from orchestrator.model_server import prefix_reuse_report, serve_model_server

    workspace = tmp / "ws"
    workspace.mkdir()
    (workspace / "parse.py").write_text("x = 1\n")

    async def main() -> dict[str, Any]:
        async with serve_model_server(_script()) as server:
            registry = RuntimeRegistry()
            registry.register_factory(
                "native",
                lambda: NativeAdapter(
                    model_factory=lambda opts: create_adapter(
                        provider="anthropic",
                        model="claude-haiku-4-5",
                        api_key="bench-key",
                        base_url=server.url,
                    ),
                    workspace=workspace,
                ),
            )
            runner = Runner(registry, state_dir=tmp / "state", today=lambda: dt.date(2026, 11, 23))
            task = TaskSpec(
                task_id="prefix",
                title="[[bench:prefix]] Tidy the parser",
                description="Keep the public names; add a test for the empty input. " * 8,
                context="Repo: ringleader. The tokenizer lives in parse/. " * 8,
                memory="Remember: the tests run with -x.",
                cwd=str(workspace),
                max_turns=3,
            )
            outcome = await runner.run_task("native", task)
            if outcome.rotations != 1 or outcome.status != "success":
                raise RuntimeError(f"the scenario did not rotate and finish: {outcome.status}")
            before, after = server.requests_for("before"), server.requests_for("after")
        turns = prefix_reuse_report(before)[1:] + prefix_reuse_report(after)[1:]
        across = prefix_reuse_report([before[-1], after[0]])[1]
        return {
            "shares": [t.share for t in turns],
            "cached": [t.cached_share for t in turns],
            "stable": [t.first_tier_reused for t in turns],
            "across": across.share,
            "across_stable": across.first_tier_reused,
            "prompt_bytes": [r.prompt_bytes for r in prefix_reuse_report(before + after)],
        }

    return trio.run(main)


@path("prefix-reuse", "prompt-prefix reuse of the cache tiers (native, Anthropic Messages)")
def prefix_reuse(cfg: Config) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="ringleader-bench-") as tmpdir:
        got = measure(Path(tmpdir))
    shares = [100 * s for s in got["shares"]]
    row = Row(
        "prefix-reuse",
        "7. reused prompt prefix per turn (native on Anthropic Messages, tiers + rotation)",
        "%",
        "higher",
        ours=figure("reused prefix", shares, "%", "higher", "median over turns after the first"),
    )
    row.peers.append(figure("cache-served", [100 * s for s in got["cached"]], "%", "higher"))
    row.peers.append(figure("across the rotation", [100 * got["across"]], "%", "higher"))
    stable = 100 * sum(got["stable"]) / len(got["stable"])
    row.peers.append(figure("turns reusing the stable tier", [stable], "%", "higher"))
    row.notes.append(
        f"per turn: {', '.join(f'{s:.1f}%' for s in shares)}; across the rotation "
        f"{100 * got['across']:.1f}% (stable tier kept: {got['across_stable']}); prompts "
        f"{min(got['prompt_bytes'])}–{max(got['prompt_bytes'])} bytes; median "
        f"{statistics.median(shares):.1f}%"
    )
    row.extra.update({"turns": len(shares), "across_stable": got["across_stable"]})
    return [row]
