"""Cache tiers, measured: a native run on Anthropic Messages through the runner, against the
scripted model server. The task's prompt reaches the model cut at its tiers with
``cache_control`` exactly at the tiers' UTF-8 offsets; every turn after the first reuses the whole
stable tier (and the context tier) byte for byte; a rotation successor reuses the stable tier too
(its context tier differs: it holds the handoff note)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from adapters.native import NativeAdapter
from adapters.native.models.providers import create_adapter
from adapters.native.prompt_cache import tiered_request
from orchestrator.core import RuntimeRegistry, StartOpts
from orchestrator.engine import Runner, TaskSpec, build_rotation_handoff_note
from orchestrator.engine.rotation import RotationHandoff
from orchestrator.model_server import (
    LoggedRequest,
    ModelServer,
    prefix_reuse_report,
    serve_model_server,
)
from tiers import PromptTiers, assemble_tiers, utf8_len

TITLE = "[[tiers]] Tidy the parser"
DESCRIPTION = "Keep naïve café names intact: é 日本 🙂."
CONTEXT = "Repo: ringleader — the tokenizer lives in parse/ (ünïcode everywhere)."
MEMORY = "Remember: the tests run with -x."
TODAY = dt.date(2026, 11, 23)

LIST = {"name": "list_files", "input": {"path": "."}}


def script() -> dict[str, Any]:
    return {
        "model": "claude-haiku-4-5",
        "conversations": [
            {
                "name": "after",
                "marker": "Session handoff (rotation)",
                "turns": [
                    {"text": "Picking it up.", "tool_calls": [LIST]},
                    {"text": "Done after the rotation."},
                ],
            },
            {
                "name": "before",
                "marker": "[[tiers]]",
                "turns": [
                    {"text": "Looking.", "tool_calls": [LIST]},
                    {"text": "Still looking.", "tool_calls": [LIST]},
                    {"text": "And again.", "tool_calls": [LIST]},
                ],
            },
        ],
    }


def across_share(before: list[LoggedRequest], after: list[LoggedRequest]) -> float:
    return round(prefix_reuse_report([before[-1], after[0]])[1].share, 3)


def registry(server: ModelServer, workspace: Path) -> RuntimeRegistry:
    reg = RuntimeRegistry()
    reg.register_factory(
        "native",
        lambda: NativeAdapter(
            model_factory=lambda opts: create_adapter(
                provider="anthropic",
                model="claude-haiku-4-5",
                api_key="test-key",
                base_url=server.url,
            ),
            workspace=workspace,
        ),
    )
    return reg


def first_message_blocks(request: LoggedRequest) -> list[dict[str, Any]]:
    first = request.body["messages"][0]
    assert first["role"] == "user"
    return first["content"]


def check_tiers(request: LoggedRequest, context: str, *, last_message: bool) -> None:
    """The first user message is the tiered prompt, cut (and cache-marked) at the tiers' ends."""
    expected = assemble_tiers(
        PromptTiers(
            stable=f"# Task: {TITLE}\n\n{DESCRIPTION}",
            context=context,
            volatile=f"{MEMORY}\n\nToday: 2026-11-23",
        )
    )
    blocks = first_message_blocks(request)
    assert "".join(b["text"] for b in blocks) == expected.prompt
    ends: list[int] = []
    total = 0
    for block in blocks:
        total += utf8_len(block["text"])
        ends.append(total)
    marked = [end for end, block in zip(ends, blocks, strict=True) if "cache_control" in block]
    breakpoints = [bp.offset for bp in expected.cache_breakpoints]
    assert ends[:-1] == breakpoints  # cut exactly at the tiers' UTF-8 offsets
    # cache_control on every tier's end; on the volatile tier only while it is the last block
    assert marked == breakpoints + ([ends[-1]] if last_message else [])
    assert all(block["cache_control"] == {"type": "ephemeral"} for block in blocks[:-1])


async def test_every_turn_reuses_the_stable_tier_and_a_rotation_keeps_it(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "parse.py").write_text("x = 1\n")
    async with serve_model_server(script()) as server:
        runner = Runner(
            registry(server, workspace),
            state_dir=tmp_path / "state",
            today=lambda: TODAY,
        )
        task = TaskSpec(
            task_id="tiers",
            title=TITLE,
            description=DESCRIPTION,
            context=CONTEXT,
            memory=MEMORY,
            cwd=str(workspace),
            max_turns=3,
        )
        outcome = await runner.run_task("native", task)
    assert outcome.status == "success" and outcome.rotations == 1
    assert outcome.runs[0].outcome.reason == "max_turns"
    before, after = server.requests_for("before"), server.requests_for("after")
    assert len(before) == 3 and len(after) == 2
    note = build_rotation_handoff_note(
        RotationHandoff(
            task_id="tiers",
            predecessor_session_key="",
            predecessor_session_id=None,
            reason="max_turns",
            last_summary="Looking.Still looking.And again.",
            tokens_used=0,
            rotation_index=1,
        )
    )
    for index, request in enumerate(before):
        check_tiers(request, CONTEXT, last_message=index == 0)
    for index, request in enumerate(after):
        check_tiers(request, f"{CONTEXT}\n\n{note}", last_message=index == 0)

    report = prefix_reuse_report(before)
    for turn in report[1:]:
        assert turn.first_tier_reused  # the whole stable tier, every turn after the first
        assert turn.reused_bytes >= before[0].cache_marks[1]  # and the context tier
        assert turn.cached_bytes >= before[0].cache_marks[1]
        assert 0.9 < turn.share <= 1.0
    shares = [round(t.share, 3) for t in report]
    print(f"prefix reuse per turn: {shares}, across the rotation: {across_share(before, after)}")
    assert report[2].reused_bytes > report[1].reused_bytes  # the reused prefix grows

    across = prefix_reuse_report([before[-1], after[0]])[1]
    assert across.first_tier_reused  # the stable tier survives the rotation
    assert across.reused_bytes < after[0].cache_marks[1]  # the context tier holds the note
    assert across.cached_bytes == after[0].cache_marks[0]
    within = prefix_reuse_report(after)[1]
    assert within.first_tier_reused and within.reused_bytes >= after[1].cache_marks[1]


@pytest.mark.parametrize(
    ("context", "memory"), [("", ""), (CONTEXT, ""), ("", MEMORY), (CONTEXT, MEMORY)]
)
def test_the_prompt_is_cut_at_each_tier_present(context: str, memory: str) -> None:
    tiers = assemble_tiers(PromptTiers(f"# Task: {TITLE}", context, memory))
    opts = StartOpts(
        agent_id="a",
        session_key="k",
        message=tiers.prompt,
        cache_breakpoints=tuple(bp.offset for bp in tiers.cache_breakpoints),
    )
    request = tiered_request(opts)
    assert not isinstance(request, str)
    assert "".join(p.text or "" for p in request) == tiers.prompt
    assert [bool(p.cache) for p in request] == [True] * (len(request) - (1 if memory else 0)) + (
        [False] if memory else []
    )
    # a context block before the message shifts every cut
    with_context = tiered_request(opts.model_copy(update={"context": "ctx"}))
    assert not isinstance(with_context, str)
    assert "".join(p.text or "" for p in with_context) == f"ctx\n\n{tiers.prompt}"
    assert with_context[0].text == f"ctx\n\n# Task: {TITLE}"
    # no breakpoints: the plain string, as before
    assert tiered_request(opts.model_copy(update={"cache_breakpoints": ()})) == tiers.prompt
