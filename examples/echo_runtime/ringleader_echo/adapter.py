"""``EchoAdapter``: drives the echo agent (``agent.py --json PROMPT``) as a child process.

Built on ringleader's shared run loop for agent CLIs (``adapters.CliRun``): it spawns the child
in its own process group with an allow-listed environment, reads its stdout line by line, hands
each line to :class:`EchoDialect` (decode one line, normalize one frame into ringleader's seven
normalized events), and ends the run with exactly one ``done`` once the child is gone. The loop
keeps the exit rules for us: a line that is not JSON, exit 0 without a result, a non-zero exit,
an abort (SIGINT → SIGTERM → SIGKILL to the whole group).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from adapters import (
    AdapterBase,
    ChildSpec,
    CliDialect,
    CliRun,
    RecordedCall,
    child_env,
    confined_path,
    probe_version,
    validate_context_key,
)
from orchestrator.core import (
    Capabilities,
    EventFactory,
    HealthResult,
    ProtocolError,
    RunHandle,
    RuntimeEvent,
    StartOpts,
    TaskHandle,
    Usage,
)

__all__ = ["EchoAdapter", "EchoConfig", "EchoDialect", "agent_command"]

AGENT = Path(__file__).with_name("agent.py")


def agent_command(args: Sequence[str]) -> list[str]:
    """The echo agent's command line for ``args`` (this Python, the agent's file)."""
    return [sys.executable, str(AGENT), *args]


class EchoDialect(CliDialect):
    """The echo agent's own part of the run loop: one instance per run."""

    name = "echo"

    def __init__(self) -> None:
        self.text: list[str] = []

    @property
    def summary(self) -> str:
        return "".join(self.text)

    def decode(self, line: bytes) -> Any:
        try:
            return json.loads(line)
        except ValueError:  # a cut or garbled line: the loop counts it, never drops it silently
            raise ProtocolError("echo wrote a line that is not JSON", line=line) from None

    def runtime_id(self, frame: Any) -> str | None:
        return frame.get("session") if frame.get("t") == "hello" else None

    def normalize(self, frame: Any, make: EventFactory) -> list[RuntimeEvent] | None:
        match frame:
            case {"t": "hello"}:
                return [make.status("init")]
            case {"t": "text", "text": str(text)}:
                self.text.append(text)
                return [make.text_delta(text)]
            case {"t": "call", "id": str(call_id), "name": str(name)}:
                return [make.tool_call(call_id, name, frame.get("args"))]
            case {"t": "called", "id": str(call_id), "out": str(out)}:
                return [make.tool_result(call_id, out, is_error=bool(frame.get("err")))]
            case {"t": "usage", "in": int(tokens_in), "out": int(tokens_out)}:
                usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out)
                return [make.cost(usage, cost_usd=frame.get("usd"))]  # None: unknown, never 0
            case {"t": "end"}:  # the terminal group: stand-ins for open tool calls, then done
                return make.finish("success", frame.get("summary") or self.summary)
            case {"t": "fail", "message": str(message)}:
                return make.fail(message, code="runtime_reported")
            case _:
                return None  # unknown: counted and surfaced once as a status detail


@attrs.frozen
class EchoConfig:
    argv: Callable[[Sequence[str]], Sequence[str]] = agent_command
    """The agent's command line for some arguments (the contract test points it at a fake)."""
    stdin: bool = False
    """Keep a stdin pipe open (the contract test's fake CLI reads its frames from it)."""
    grace: float = 3.0
    """Seconds after SIGINT, then after SIGTERM, before the next signal of an abort."""


class EchoAdapter(AdapterBase):
    id = "echo"

    def __init__(self, config: EchoConfig | None = None) -> None:
        super().__init__()
        self.config = config or EchoConfig()
        self.calls: list[RecordedCall] = []
        self.live: dict[str, tuple[CliRun, StartOpts]] = {}

    def capabilities(self) -> Capabilities:
        return Capabilities(
            streaming=True,
            mcp=False,
            worktrees=False,
            resume=False,
            tool_approval=False,
            runtime_class="wrapped-oneshot",
        )

    async def probe_health(self) -> HealthResult:  # health() bounds it to 2 s, never raises
        return await probe_version(self.config.argv(["--version"]), child_env(), adapter=self.id)

    async def start(self, task: TaskHandle, opts: StartOpts) -> RunHandle:
        run = CliRun(self.new_run(opts.session_key), EchoDialect())
        self.live[opts.session_key] = (run, opts)
        grace = self.config.grace
        spec = ChildSpec(
            self.config.argv(["--json", opts.full_message()]),
            child_env(extra=opts.env),
            cwd=opts.cwd,
            stdin=self.config.stdin,
            sigint_grace=grace,
            sigterm_grace=grace,
        )
        await run.launch(self.nursery, spec, adapter=self.id)  # spawn errors raise here
        return run.handle  # run_id is bound later, from the "hello" frame

    def cli_run(self, run: RunHandle) -> CliRun | None:
        live = self.live.get(run.session_key)
        return live[0] if live else None

    async def abort(self, run: RunHandle) -> None:
        self.calls.append(RecordedCall("abort", {"sessionKey": run.session_key}))
        cli = self.cli_run(run)
        if cli is not None:
            await cli.abort()  # SIGINT → SIGTERM → SIGKILL to the group, then done{aborted}

    async def set_model(self, run: RunHandle, model: str) -> None:
        self.calls.append(RecordedCall("setModel", {"model": model}))  # echo has no model
        await trio.lowlevel.checkpoint()

    async def write_context(self, run: RunHandle, key: str, value: str) -> None:
        validate_context_key(key)  # no absolute paths, no ".."
        live = self.live.get(run.session_key)
        if live is not None and live[1].cwd:
            await trio.Path(confined_path(live[1].cwd, key)).write_text(value)
        self.calls.append(RecordedCall("writeContext", {"key": key, "value": value}))
