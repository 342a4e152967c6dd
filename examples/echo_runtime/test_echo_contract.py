"""The echo adapter passes ringleader's adapter contract suite: every stream rule
(``AdapterContract``) and every child-process fault (``ProcessFaultContract``).

The suite drives the adapter through a *harness*: it makes the adapter, starts runs, and pushes
native frames into them. The echo agent prints a fixed answer, so the harness runs the contract
kit's fake CLI (``contract.fake_cli``, a real child process) instead: it writes back every
``{"emit": FRAME}`` line it reads on stdin, and the adapter reads FRAME from its stdout as it
would read the agent's. Run it with the package installed (``pip install -e .[test]``):

    cd examples/echo_runtime && pytest -m contract

Run by tests/examples/test_echo_runtime.py, against the package installed in a throwaway venv.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
import trio
from ringleader_echo import EchoAdapter, EchoConfig

from adapters import RecordedCall
from contract import AdapterContract, ProcessFaultContract
from contract.fake_cli import fake_cli_argv
from orchestrator.core import RunHandle, RuntimeAdapter, StartOpts, TaskHandle

# the fake CLI's stdin rules: {"emit": FRAME} → FRAME on stdout; {"exit": N} → exit N
ECHO_BACK: list[dict[str, Any]] = [
    {"match": {"emit": {}}, "reply": ["{{emit}}"]},
    {"match": {"exit": 0}, "exit": 0},
    {"match": {"exit": 1}, "exit": 1},
]


class EchoFrames:
    """The agent's own frames for each normalized event the suite asks for (a list: one line
    each; "exit N" ends the child with that code)."""

    def delta(self, text: str) -> Any:
        return [{"t": "text", "text": text}]

    def tool_call(self, name: str, input: Any, call_id: str) -> Any:
        return [{"t": "call", "id": call_id, "name": name, "args": input}]

    def tool_result(self, call_id: str, name: str, output: str, *, is_error: bool = False) -> Any:
        return [{"t": "called", "id": call_id, "out": output, "err": is_error}]

    def cost(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> Any:
        return [{"t": "usage", "in": input_tokens, "out": output_tokens, "usd": cost_usd}]

    def final(self, summary: str) -> Any:
        return [{"t": "end", "summary": summary}, "exit 0"]

    def aborted(self) -> Any:
        return []  # abort() stops the child; the agent writes nothing

    def error(self, message: str) -> Any:
        return [{"t": "fail", "message": message}, "exit 1"]

    def unknown(self) -> Any:
        return [{"t": "telemetry", "x": 1}]


class EchoHarness:
    label = "echo"
    frames = EchoFrames()

    def make_adapter(self) -> RuntimeAdapter:
        self.pids: dict[str, int] = {}

        def fake_agent(args: Sequence[str]) -> list[str]:  # a fresh session id per run
            hello = json.dumps({"t": "hello", "session": f"echo-{uuid.uuid4().hex}"})
            return fake_cli_argv([hello], rules=ECHO_BACK)

        self.adapter = EchoAdapter(EchoConfig(argv=fake_agent, stdin=True, grace=0.5))
        return self.adapter

    async def start(self, adapter: RuntimeAdapter, session_key: str | None = None) -> RunHandle:
        key = session_key or f"agent:echo-{len(self.pids)}:main"
        self.last = await adapter.start(
            TaskHandle(), StartOpts(agent_id="echo", session_key=key, message="hi")
        )
        cli = self.adapter.cli_run(self.last)
        assert cli is not None and cli.child is not None
        self.pids[key] = cli.child.pid
        return self.last

    async def emit(self, frame: Any, run: RunHandle | None = None) -> None:
        cli = self.adapter.cli_run(run or self.last)
        if cli is None or cli.child is None:
            return
        for item in frame:  # one line each on the fake's stdin
            message = {"exit": int(item[5:])} if item in ("exit 0", "exit 1") else {"emit": item}
            try:
                await cli.child.send_line(json.dumps(message).encode())
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the child is gone (aborted or finished): nothing to write to
        await trio.sleep(0.01)  # let the fake write it back before another run's frame

    def recorded_calls(self) -> list[RecordedCall]:
        return self.adapter.calls

    def child_pids(self, run: RunHandle) -> list[int]:  # checked gone and reaped at done
        return [self.pids[run.session_key]]

    # no make_hung_adapter(): with child_pids, the suite hangs the fake CLI for health()


AGENT_RUN = [  # what `agent.py --json hi` printed; start_faulty puts a fault on its middle line
    '{"t": "hello", "session": "echo-0"}',
    '{"t": "call", "id": "c1", "name": "list_dir", "args": {"path": "."}}',
    '{"t": "called", "id": "c1", "out": "README.md"}',
    '{"t": "text", "text": "You said: hi"}',
    '{"t": "usage", "in": 1, "out": 3}',
    '{"t": "end", "summary": "You said: hi"}',
]


class EchoFaultHarness:
    label = "echo-faults"

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.fault = ""

    def make_adapter(self) -> RuntimeAdapter:
        def faulty(args: Sequence[str]) -> list[str]:
            return fake_cli_argv(AGENT_RUN, fault=self.fault)

        self.adapter = EchoAdapter(EchoConfig(argv=faulty, grace=0.5))
        return self.adapter

    async def start_faulty(self, adapter: RuntimeAdapter, fault: str) -> RunHandle:
        self.fault = fault
        run = await adapter.start(
            TaskHandle(), StartOpts(agent_id="echo", session_key="echo:fault", message="hi")
        )
        cli = self.adapter.cli_run(run)
        assert cli is not None and cli.child is not None
        self.pids.append(cli.child.pid)
        return run

    def spawned_pids(self) -> list[int]:
        return self.pids


class TestEchoAdapter(AdapterContract, ProcessFaultContract):
    @pytest.fixture
    def harness(self) -> EchoHarness:
        return EchoHarness()

    @pytest.fixture
    def fault_harness(self) -> EchoFaultHarness:
        return EchoFaultHarness()
