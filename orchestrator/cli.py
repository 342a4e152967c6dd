"""The ``ringleader`` command. Thin: parsing and rendering only; the library never imports it."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import trio

from .adapter import RuntimeAdapter, StartOpts, TaskHandle
from .errors import RingleaderError
from .events import RuntimeEvent, event_to_json

__all__ = ["main"]


class TerminalRenderer:
    """Live rendering of a run's events for a person at a terminal."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._in_text = False

    def _line(self, text: str) -> None:
        if self._in_text:
            self._out.write("\n")
            self._in_text = False
        self._out.write(text + "\n")

    def render(self, event: RuntimeEvent) -> None:
        match event.kind:
            case "text-delta":
                if event.channel == "reasoning":
                    self._line(f"  (thinking) {event.text}")
                else:
                    self._out.write(event.text)
                    self._in_text = True
            case "tool-call":
                self._line(f"→ {event.name} {_short(event.input)}")
            case "tool-result":
                mark = "✗" if event.is_error else "✓"
                self._line(f"{mark} {event.name}: {_short(event.output)}")
            case "status":
                detail = f" ({event.detail})" if event.detail else ""
                model = f" model={event.model}" if event.model else ""
                self._line(f"· {event.phase}{model}{detail}")
            case "cost":
                usd = "unknown" if event.cost_usd is None else f"${event.cost_usd:.4f}"
                self._line(
                    f"· tokens in={event.usage.input_tokens} out={event.usage.output_tokens}"
                    f" cost={usd}"
                )
            case "done":
                self._line(f"■ done: {event.reason}")
            case "error":
                self._line(f"! error{f' [{event.code}]' if event.code else ''}: {event.message}")
        self._out.flush()


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _drain(adapter: RuntimeAdapter, opts: StartOpts, as_json: bool, out: TextIO) -> int:
    renderer = TerminalRenderer(out)
    run = await adapter.start(TaskHandle(), opts)
    code = 1
    async with adapter.events(run) as stream:
        async for event in stream:
            if as_json:
                out.write(event_to_json(event) + "\n")
                out.flush()
            else:
                renderer.render(event)
            if event.kind == "done":
                code = 0 if event.reason == "success" else 1
    return code


DEMO_PROMPT = "List the files in the workspace, then summarize."


async def _demo(as_json: bool, out: TextIO) -> int:
    from adapters.scripted import ScriptedAdapter

    script: list[dict[str, Any]] = [
        {"type": "init", "sessionId": "demo-session", "model": "scripted-model"},
        {"type": "text", "text": "Let me look at the workspace. "},
        {"type": "tool-call", "id": "call-1", "name": "list_files", "input": {"path": "."}},
        {"type": "tool-result", "id": "call-1", "output": "README.md\npyproject.toml"},
        {"type": "usage", "inputTokens": 120, "outputTokens": 24, "costUsd": None},
        {"type": "text", "text": "The workspace holds a README and a pyproject."},
        {"type": "usage", "inputTokens": 180, "outputTokens": 40, "costUsd": None},
        {"type": "result", "ok": True, "summary": "The workspace holds a README and a pyproject."},
    ]
    async with ScriptedAdapter(script) as adapter:
        opts = StartOpts(agent_id="demo", session_key="demo:main", message=DEMO_PROMPT)
        return await _drain(adapter, opts, as_json, out)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ringleader", description="Run heterogeneous coding agents side by side."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the built-in demo (no keys, no network)")
    demo.add_argument("--json", action="store_true", help="print events as JSON Lines")
    ms = sub.add_parser("model-server", help="serve the scripted model server on 127.0.0.1")
    ms.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["model-server"]:
        # contract/ is the test kit; imported lazily so the library never depends on it
        model_server = importlib.import_module("contract.model_server")
        return int(model_server.main(args_list[1:]))
    args = _parser().parse_args(args_list)
    try:
        if args.command == "demo":
            return trio.run(_demo, bool(args.json), sys.stdout)
    except RingleaderError as exc:
        print(f"ringleader: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
