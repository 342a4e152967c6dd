"""The page's projection (``applyEvent`` in orchestrator/board/static/common.js, run by Node on
the module itself) gives the card the server's (orchestrator/board/projection.py ``apply``)
gives, field for field — except the refused calls, which the page never classifies: it carries
over what the server said (``GET /board``, ``/run-tail``, ``/run-meta`` when a run ends), so the
classification rules live once, in orchestrator/core/refusals.py."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from orchestrator.board.projection import project
from orchestrator.core.events import ApprovalCall, EventFactory, RuntimeEvent, Usage, event_to_json
from tests.orchestrator.test_board import ENDINGS, build_stream
from tests.orchestrator.test_board_refusals import refused_run

COMMON = Path(__file__).resolve().parents[2] / "orchestrator" / "board" / "static" / "common.js"
PAGE = (
    "globalThis.location = {hash: '', pathname: '/', search: ''};"
    "globalThis.sessionStorage = {getItem: () => null, setItem: () => {}};"
    "globalThis.history = {replaceState: () => {}};"
    "globalThis.document = {querySelector: () => null};"
)


def streams() -> dict[str, list[RuntimeEvent]]:
    make = EventFactory(run_id="r", clock=iter(range(5000, 100_000, 3)).__next__)
    asked = ApprovalCall(id="ap-9", tool_call_id="c1", name="bash", input={"command": "ls"})
    busy = [
        make.status("queued", detail="waiting for a free codex slot"),
        make.text_delta("thinking it over", "reasoning"),
        make.text_delta("first line\nsecond "),
        make.text_delta("line\r\n\n"),
        make.tool_call("c1", "bash", {"command": "ls"}),
        make.waiting_approval(asked, detail="approval ap-9: bash"),
        make.status("running", detail="approval ap-9: bash allowed"),
        make.tool_result("c1", "a\nb"),
        make.cost(Usage(input_tokens=1200, output_tokens=40), cost_usd=None),
        make.cost(Usage(input_tokens=2400, output_tokens=90), cost_usd=0.0123, estimated=True),
        make.error("the tool broke", fatal=False),
        *make.fail("boom", code="interrupted"),
        make.text_delta("after the end"),
    ]
    out = {"refused": refused_run(), "busy": busy}
    rnd = random.Random(
        7
    )  # the property test's kinds of streams (tests/orchestrator/test_board.py)
    for n in range(40):
        steps: list[tuple[Any, ...]] = []
        for _ in range(rnd.randrange(12)):
            kind = rnd.choice(["text", "tool", "status", "cost", "error"])
            if kind == "text":
                text = rnd.choice(["", "a", "line\n", "x\r\ny", "  \n", "é" * 250])
                steps.append((kind, text, rnd.choice(["assistant", "reasoning"])))
            elif kind == "tool":
                steps.append((kind, rnd.choice(["bash", "read_file"]), rnd.random() < 0.7))
            elif kind == "status":
                steps.append((kind, rnd.choice(["init", "thinking", "running", "turn-complete"])))
            elif kind == "cost":
                price = rnd.choice([None, 0.0, 0.5, 1.25])
                steps.append((kind, rnd.randrange(5000), rnd.randrange(5000), price))
            else:
                steps.append((kind, rnd.choice(["", "oops"])))
        out[f"random-{n}"] = build_stream(steps, rnd.choice(ENDINGS))
    return out


def run_node(cases: dict[str, Any]) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (scripts/install-runtimes needs it too)")
    script = (
        f"{PAGE} const {{ applyEvent, newCard }} = await import({json.dumps(COMMON.as_uri())});"
        "const { readFileSync } = await import('node:fs');"
        "const cases = JSON.parse(readFileSync(0, 'utf8')); const out = {};"
        "for (const [name, c] of Object.entries(cases)) {"
        "  let card = { ...newCard(c.runKey), ...c.start };"
        "  for (const ev of c.events) card = applyEvent(card, ev);"
        "  out[name] = card; }"
        "console.log(JSON.stringify(out));"
    )
    done = subprocess.run(
        [node, "--no-warnings", "--input-type=module", "-e", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_page_projects_the_cards_the_server_projects() -> None:
    said = {"needsApproval": 0, "denied": 1, "summary": "1 tool call denied", "hint": "h"}
    cases: dict[str, Any] = {}
    for name, events in streams().items():
        wire = [json.loads(event_to_json(e)) for e in events]
        cases[name] = {"runKey": name, "events": wire, "start": {}}
        cases[f"{name}-told"] = {"runKey": name, "events": wire, "start": {"refusals": said}}
    got = run_node(cases)
    for name, events in streams().items():
        server = project(name, events).to_json()
        page = got[name]
        assert server["refusals"] is not None or name != "refused"
        assert {k: v for k, v in page.items() if k != "refusals"} == {
            k: v for k, v in server.items() if k != "refusals"
        }, name
        assert page["refusals"] is None  # not classified on the page
        assert got[f"{name}-told"]["refusals"] == said  # what the server said, carried over
