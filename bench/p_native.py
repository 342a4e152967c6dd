"""Path 3: the native loop's cost per tool turn, on a 10-turn scripted in-process model.

Every contender runs the same conversation: ten model replies that each call an ``echo`` tool
(the tool returns ``echo:<i>``), then a final text reply; µs per tool turn = run time / 10.

* ours — a full run through ``NativeAdapter`` (start → loop → executor → normalizer → event
  stream drained to ``done``) on trio, with ``ScriptedModel``; and the loop alone
  (``Glove.process_request``, no adapter, no events) as a second figure;
* the limit — a bare trio loop of the same shape (await the scripted reply, await the tool,
  append both to a history list);
* pydantic-ai — ``Agent`` with a ``FunctionModel`` answering from the message count (asyncio);
* openai-agents — ``Runner.run`` with a minimal scripted ``Model`` returning precomputed
  responses (asyncio; tracing disabled, so nothing leaves the process).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ._core import Config, Figure, Row, Target, failed, figure, path

TURNS = 10
UNIT = "µs/turn"


def _runs(cfg: Config) -> int:
    return 1 if cfg.smoke else 5 if cfg.quick else 20


def _passes_sync(run_many: Callable[[], None], cfg: Config) -> list[float]:
    for _ in range(cfg.warmup):
        run_many()
    out = []
    for _ in range(cfg.min_passes):
        gc.collect()
        t0 = time.process_time()
        run_many()
        out.append(time.process_time() - t0)
    return out


async def _passes_async(
    one_run: Callable[[], Awaitable[None]], runs: int, cfg: Config
) -> list[float]:
    for _ in range(cfg.warmup * 2):
        await one_run()
    out = []
    for _ in range(cfg.min_passes):
        gc.collect()
        t0 = time.process_time()
        for _ in range(runs):
            await one_run()
        out.append(time.process_time() - t0)
    return out


def _us_per_turn(name: str, seconds: list[float], runs: int, note: str | None = None) -> Figure:
    return figure(name, [s / runs / TURNS * 1e6 for s in seconds], UNIT, "lower", note)


# -- ours -------------------------------------------------------------------------------------------


def _ours(cfg: Config) -> tuple[Figure, Figure, Figure]:
    import trio
    from pydantic import BaseModel

    from adapters.native import Glove, NativeAdapter, ScriptedModel, Tool, ToolContext
    from adapters.native.models.scripted import Reply
    from orchestrator.core.adapter import StartOpts, TaskHandle
    from orchestrator.core.events import Done

    class EchoInput(BaseModel):
        text: str = ""

    async def echo(inp: EchoInput, ctx: ToolContext) -> str:
        return f"echo:{inp.text}"

    tool = Tool(name="echo", description="Echo text.", do=echo, input_model=EchoInput)

    def script() -> list[Reply]:
        return [
            Reply(text=f"step {i}. ", tool_calls=[("echo", {"text": str(i)})]) for i in range(TURNS)
        ] + [Reply(text="All ten done.")]

    runs = _runs(cfg)
    results: dict[str, list[float]] = {}

    async def main() -> None:
        counter = iter(range(10**9))

        async with NativeAdapter(
            model_factory=lambda o: ScriptedModel(script(), model="bench-model"),
            tools=[tool],
            max_turns=TURNS + 4,
        ) as adapter:

            async def adapter_run() -> None:
                run = await adapter.start(
                    TaskHandle(),
                    StartOpts(agent_id="a", session_key=f"bench:{next(counter)}", message="go"),
                )
                async with adapter.events(run) as events:
                    async for event in events:
                        if isinstance(event, Done):
                            assert event.reason == "success", event
                            break

            results["adapter"] = await _passes_async(adapter_run, runs, cfg)

        async def glove_run() -> None:
            glove = Glove(model=ScriptedModel(script(), model="bench-model")).add_tool(tool).build()
            await glove.process_request("go")

        results["glove"] = await _passes_async(glove_run, runs, cfg)

        replies = script()

        async def bare_run() -> None:
            history: list[Any] = []
            for reply in replies:
                await trio.lowlevel.checkpoint()  # the model call
                history.append(reply)
                for _name, args in reply.tool_calls:  # type: ignore[misc]
                    await trio.lowlevel.checkpoint()  # the tool call
                    history.append(f"echo:{args['text']}")

        results["bare"] = await _passes_async(bare_run, runs, cfg)

    trio.run(main)
    return (
        _us_per_turn("ringleader NativeAdapter", results["adapter"], runs),
        _us_per_turn("ringleader loop only (Glove)", results["glove"], runs),
        _us_per_turn("bare trio loop", results["bare"], runs),
    )


# -- peers (asyncio, in this worker only) -----------------------------------------------------------


def _pydantic_ai(cfg: Config) -> Figure:
    import asyncio  # noqa: TID251 - the peer runs on asyncio

    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
    except ImportError as exc:
        return failed("pydantic-ai", UNIT, "lower", f"not installed here: {exc}")

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        turn = (len(messages) - 1) // 2
        if turn < TURNS:
            return ModelResponse(
                parts=[
                    TextPart(f"step {turn}. "),
                    ToolCallPart("echo", {"text": str(turn)}, tool_call_id=f"call_{turn}"),
                ]
            )
        return ModelResponse(parts=[TextPart("All ten done.")])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain
    def echo(text: str = "") -> str:
        return f"echo:{text}"

    runs = _runs(cfg)

    async def many() -> None:
        for _ in range(runs):
            result = await agent.run("go")
            assert result.output == "All ten done.", result.output

    seconds = _passes_sync(lambda: asyncio.run(many()), cfg)
    return _us_per_turn("pydantic-ai", seconds, runs, "FunctionModel, asyncio")


def _openai_agents(cfg: Config) -> Figure:
    import asyncio  # noqa: TID251 - the peer runs on asyncio

    try:
        from agents import Agent, Runner, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.testing import assistant_message, function_call
        from agents.usage import Usage
    except ImportError as exc:
        return failed("openai-agents", UNIT, "lower", f"not installed here: {exc}")

    set_tracing_disabled(True)
    responses = [
        ModelResponse(
            output=[
                assistant_message(f"step {i}. ", item_id=f"msg_{i}"),
                function_call("echo", {"text": str(i)}, call_id=f"call_{i}"),
            ],
            usage=Usage(),
            response_id=None,
        )
        for i in range(TURNS)
    ] + [
        ModelResponse(output=[assistant_message("All ten done.")], usage=Usage(), response_id=None)
    ]

    class Scripted(Model):
        def __init__(self) -> None:
            self.i = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            r = responses[self.i]
            self.i += 1
            return r

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    @function_tool
    def echo(text: str = "") -> str:
        """Echo text."""
        return f"echo:{text}"

    runs = _runs(cfg)

    async def many() -> None:
        for _ in range(runs):
            agent = Agent(name="bench", model=Scripted(), tools=[echo])
            result = await Runner.run(agent, "go", max_turns=TURNS + 4)
            assert result.final_output == "All ten done.", result.final_output

    seconds = _passes_sync(lambda: asyncio.run(many()), cfg)
    return _us_per_turn("openai-agents", seconds, runs, "scripted Model, asyncio, no tracing")


@path("native-loop", "native loop µs per tool turn", timeout_s=180)
def native_loop(cfg: Config) -> list[Row]:
    adapter, glove, bare = _ours(cfg)
    peers = []
    for measure in (_pydantic_ai, _openai_agents):
        if cfg.smoke:
            name = "pydantic-ai" if measure is _pydantic_ai else "openai-agents"
            peers.append(failed(name, UNIT, "lower", "skipped in --smoke"))
            continue
        try:
            peers.append(measure(cfg))
        except Exception as exc:  # a peer's API drifted: say so in its cell
            name = "pydantic-ai" if measure is _pydantic_ai else "openai-agents"
            peers.append(failed(name, UNIT, "lower", f"failed: {type(exc).__name__}: {exc}"[:120]))
    row = Row(
        "native-loop",
        "3. native loop, 10 tool turns, scripted in-process model",
        UNIT,
        "lower",
        Target("≤ 170 µs/turn", "max", 170.0),
        ours=adapter,
        limit=bare,
        peers=[glove, *peers],
    )
    row.notes.append(
        f"ours = a whole NativeAdapter run (events drained); loop only (Glove) "
        f"{glove.value:.0f} µs/turn; median of {len(adapter.passes)} passes × {_runs(cfg)} runs"
    )
    row.extra["loop_only_us_per_turn"] = statistics.median(glove.passes)
    return [row]
