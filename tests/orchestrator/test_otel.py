"""OpenTelemetry spans from a native run with tool calls (the SDK's in-memory exporter)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from adapters.native import NativeAdapter
from adapters.native.models.providers import create_adapter
from orchestrator.core import RuntimeRegistry, StartOpts
from orchestrator.engine import Runner, TaskSpec
from orchestrator.engine.otel import OtelSink
from orchestrator.model_server import serve_model_server

SCRIPT: dict[str, Any] = {
    "conversations": [
        {
            "name": "tools",
            "turns": [
                {
                    "text": "Looking. ",
                    "tool_calls": [
                        {"name": "list_files", "input": {"path": "."}},
                        {"name": "read_file", "input": {"path": "secret-plan.txt"}},
                    ],
                    "usage": {"input_tokens": 300, "output_tokens": 20},
                },
                {"text": "All done.", "usage": {"input_tokens": 400, "output_tokens": 10}},
            ],
        }
    ]
}


async def traced_run(tmp_path: Path, record_content: bool) -> list[Any]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secret-plan.txt").write_text("the plan")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with serve_model_server(SCRIPT) as server:

        def factory(opts: StartOpts) -> Any:
            return create_adapter(
                provider="anthropic",
                model="claude-haiku-4-5",
                api_key="sk-test-0000000000",
                base_url=server.url,
            )

        registry = RuntimeRegistry()
        registry.register_factory(
            "native", lambda: NativeAdapter(model_factory=factory, workspace=ws)
        )
        sink = OtelSink(tracer_provider=provider, record_content=record_content)
        runner = Runner(registry, sink=sink, state_dir=tmp_path / "state")
        with trio.fail_after(60):
            outcome = await runner.run_task("native", TaskSpec(task_id="o1", title="look"))
    assert outcome.status == "success"
    return list(exporter.get_finished_spans())


async def test_spans_per_run_turn_and_tool_call_without_content(tmp_path: Path) -> None:
    spans = await traced_run(tmp_path, record_content=False)
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    [run] = by_name["invoke_agent native"]
    tools = by_name["execute_tool list_files"] + by_name["execute_tool read_file"]
    assert len(tools) == 2
    assert all(t.parent is not None and t.parent.span_id == run.context.span_id for t in tools)
    assert all(t.attributes["gen_ai.operation.name"] == "execute_tool" for t in tools)
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.usage.input_tokens"] == 700
    assert run.attributes["gen_ai.usage.output_tokens"] == 30
    assert run.attributes["ringleader.cost.usd"] > 0
    assert run.attributes["ringleader.done.reason"] == "success"
    assert run.status.status_code != StatusCode.ERROR
    turns = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert all(t.parent is not None and t.parent.span_id == run.context.span_id for t in turns)
    everything = str([dict(s.attributes) for s in spans])
    assert "secret-plan" not in everything and "All done" not in everything  # no content


async def test_content_is_recorded_only_when_asked(tmp_path: Path) -> None:
    spans = await traced_run(tmp_path, record_content=True)
    [read] = [s for s in spans if s.name == "execute_tool read_file"]
    assert "secret-plan.txt" in read.attributes["gen_ai.tool.call.arguments"]
    assert read.attributes["gen_ai.tool.call.result"] == "the plan"
    [run] = [s for s in spans if s.name == "invoke_agent native"]
    assert "All done." in run.attributes["gen_ai.output.messages"]


def test_cli_trace_file_writes_the_spans(tmp_path: Path, monkeypatch: Any) -> None:
    import io
    import json

    from orchestrator.cli.main import main

    monkeypatch.setenv("RINGLEADER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdout", io.StringIO())
    trace = tmp_path / "trace.jsonl"
    assert main(["run", "--runtime", "scripted", "--trace-file", str(trace), "say hi"]) == 0
    spans = [json.loads(line) for line in trace.read_text().splitlines()]
    [run] = [s for s in spans if s["name"] == "invoke_agent scripted"]
    assert run["attributes"]["gen_ai.usage.output_tokens"] > 0
    assert "say hi" not in trace.read_text()  # the prompt is not recorded
    assert trace.stat().st_mode & 0o777 == 0o600  # private like the log: spans carry run details
    trace.chmod(0o644)  # a file that was there already is made private too
    assert main(["run", "--runtime", "scripted", "--trace-file", str(trace), "say hi"]) == 0
    assert trace.stat().st_mode & 0o777 == 0o600
