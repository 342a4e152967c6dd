"""examples/localhost/side_by_side.py: one task on two runtimes side by side on LocalHost, their
normalized events consumed through an event sink, then a summary — run as the example says."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from .kit import EXAMPLES, clean_env

SCRIPT = EXAMPLES / "localhost" / "side_by_side.py"


def test_two_runs_side_by_side_as_json_lines(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", "What is here?"],
        cwd=tmp_path, env=clean_env(tmp_path), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines: list[dict[str, Any]] = [json.loads(line) for line in result.stdout.splitlines()]
    summary = lines.pop()
    assert summary["kind"] == "summary" and summary["prompt"] == "What is here?"
    by_run: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in lines:
        by_run[event["runKey"]].append(event)
    runs = {run["runtime"]: run for run in summary["runs"]}
    assert set(runs) == {"native", "scripted"}
    assert set(by_run) == {run["runKey"] for run in runs.values()}
    for run in runs.values():  # each stream: seq 1..n without gaps, exactly one done, last
        events = by_run[run["runKey"]]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert [e["kind"] for e in events].count("done") == 1 == run["dones"]
        assert events[-1]["kind"] == "done" and events[-1]["reason"] == run["status"]
        assert run["events"] == len(events)

    native = by_run[runs["native"]["runKey"]]
    call = next(e for e in native if e["kind"] == "tool-call")
    result_event = next(e for e in native if e["kind"] == "tool-result")
    assert (call["name"], result_event["toolCallId"]) == ("list_files", call["toolCallId"])
    assert result_event["output"] == "README.md\nsrc/"  # it ran in the example's folder
    assert runs["native"]["summary"] == "I see a README and a src folder."
    assert runs["native"]["toolCalls"] == 1 and runs["native"]["status"] == "success"
    assert runs["scripted"]["summary"] == "Hello from the scripted runtime."
    assert runs["scripted"]["costUsd"] is None  # not reported: unknown, never 0


def test_the_readable_view_and_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("EXAMPLE_MODEL_SERVER_KEY", "placeholder-not-a-key")
    main = runpy.run_path(str(SCRIPT))["main"]
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "[native] tool-call list_files {}" in out
    assert "[native] tool-result list_files: 'README.md\\nsrc/'" in out
    assert "[scripted] done success: 'Hello from the scripted runtime.'" in out
    table = out[out.index("runtime    status") :].splitlines()
    assert table[1].split()[:4] == ["native", "success", "15", "1"]
    assert table[2].split()[:4] == ["scripted", "success", "4", "0"]
