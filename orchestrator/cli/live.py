"""What the ``ringleader`` command shows while runs go, and the comparison after them.

One :class:`Lane` per run folds that run's events into display state (phase, last lines of
text, tool calls, tokens, cost, timings). Three views draw lanes:

* :class:`RichView` — a person at a colour terminal: a ``rich`` live view with a panel per run
  (runtime, phase, last lines of text with reasoning dimmed, tool calls with ✓/✗ and their JSON
  input, tokens, cost, elapsed) and a spinner while any run is waiting;
* :class:`PlainView` — ``NO_COLOR`` or not a terminal: plain lines, each prefixed by its run;
* :class:`JsonView` — ``--json``: JSON Lines, each event's wire JSON with ``runKey`` first.

:func:`comparison_table` is the table printed when the runs have ended. Part of the CLI: the
library never imports this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections import deque
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import TextIO, TypeAlias, Union

import attrs
import trio
from rich.console import Console, Group, RenderableType
from rich.highlighter import JSONHighlighter
from rich.live import Live
from rich.panel import Panel
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from orchestrator.core.events import RuntimeEvent, Usage, event_to_json
from orchestrator.core.refusals import Refusals
from orchestrator.engine.rotation import RotationRecord

__all__ = [
    "JsonView",
    "Lane",
    "PlainView",
    "RichView",
    "View",
    "comparison_table",
    "format_cost",
    "lane_key",
    "make_view",
    "table_console",
    "wants_color",
]

WAITING_AFTER_S = 0.5
"""A run that has shown nothing for this long is drawn as waiting (with a spinner)."""
PANEL_LINES = 8
_KEEP_LINES = 64
_JSON = JSONHighlighter()


def lane_key(runtime_id: str, task_id: str) -> str:
    """The run-key prefix of every run of ``task_id`` on ``runtime_id`` (the runner's base key;
    retries and rotations append ``:a<n>`` / ``:r<n>``)."""
    return f"runtime:{runtime_id}:task:{task_id}"


def format_cost(cost_usd: float | None, *, seen: bool, estimated: bool) -> str:
    """``unknown`` when no run reported a price, else dollars; ``est.`` marks a list-price
    estimate (never a bill)."""
    if not seen or cost_usd is None:
        return "unknown"
    return f"${cost_usd:.4f}{' est.' if estimated else ''}"


def _short(text: str, limit: int) -> str:
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_input(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


@attrs.define
class _Line:
    """One display line: text (``assistant``/``reasoning``), a tool call, or a note."""

    kind: str
    text: str
    ok: bool | None = None
    """For a tool call: None while it runs, then whether its result was ok."""
    detail: str = ""


@attrs.define(eq=False)
class Lane:
    """Display state of one run, folded from its events (see :meth:`apply`)."""

    label: str
    runtime: str
    key: str
    started: float = attrs.field(factory=trio.current_time)
    workspace: str | None = None
    workspace_kind: str | None = None
    phase: str = "starting"
    model: str | None = None
    first_event: float | None = None
    command_started: float | None = None
    """When the command started, on trio's clock (the table's "first event" counts from it:
    what a person waited, imports and startup included); ``None``: from :attr:`started`."""
    last_event: float | None = None
    ended: float | None = None
    outcome: str | None = None
    error: str | None = None
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    usage: Usage = attrs.field(factory=Usage)
    cost_usd: float | None = None
    cost_seen: bool = False
    estimated: bool = False
    files_changed: str = "-"
    lines_changed: str = "-"
    """Lines added/removed in the run's workspace (``+12 -3``)."""
    rotations: int = 0
    refusals: Refusals = attrs.field(factory=Refusals)
    """The run's tool calls that were refused (needs approval) or denied: why a run that ended
    ``success`` may have changed nothing (the summary says so)."""
    _usage_before: Usage = attrs.field(factory=Usage)
    """Usage of the runs before the last rotation (a run reports only its own)."""
    _cost_before: float | None = None
    lines: deque[_Line] = attrs.field(factory=lambda: deque[_Line](maxlen=_KEEP_LINES))
    _partial: str = ""
    _partial_channel: str = "assistant"
    _in_turn: bool = False
    _calls: dict[str, _Line] = attrs.field(factory=dict[str, _Line])

    also: tuple[str, ...] = ()
    """More run-key prefixes of the same task (its fallback runtimes)."""

    def owns(self, run_key: str) -> bool:
        if run_key == self.key or run_key.startswith(self.key + ":"):
            return True
        return any(run_key == k or run_key.startswith(k + ":") for k in self.also)

    @property
    def done(self) -> bool:
        return self.outcome is not None

    def waiting(self, now: float) -> bool:
        """Not finished, and nothing shown for :data:`WAITING_AFTER_S`."""
        if self.done:
            return False
        since = self.last_event if self.last_event is not None else self.started
        return now - since >= WAITING_AFTER_S

    def elapsed(self, now: float) -> float:
        return (self.ended if self.ended is not None else now) - self.started

    def _turn(self) -> None:
        if not self._in_turn:
            self._in_turn = True
            self.turns += 1

    def _flush(self, out: list[str]) -> None:
        if self._partial:
            self._add_text(self._partial_channel, self._partial, out)
            self._partial = ""

    def _add_text(self, channel: str, text: str, out: list[str]) -> None:
        if not text.strip():
            return
        self.lines.append(_Line(channel, text))
        out.append(f"(thinking) {text}" if channel == "reasoning" else text)

    def apply(self, event: RuntimeEvent, now: float) -> list[str]:
        """Fold ``event`` in; the complete plain lines it produced (for :class:`PlainView`)."""
        out: list[str] = []
        if event.kind == "status" and event.phase == "queued":  # not the run's output yet
            self.phase = f"queued: {event.detail}" if event.detail else "queued"
            out.append(f"· queued ({event.detail})" if event.detail else "· queued")
            return out
        if self.first_event is None:
            self.first_event = now
        self.last_event = now
        self.refusals.apply(event)
        if event.kind != "text-delta" or event.channel != self._partial_channel:
            self._flush(out)
        match event.kind:
            case "text-delta":
                self._turn()
                self._partial_channel = event.channel
                *complete, self._partial = (self._partial + event.text).split("\n")
                for line in complete:
                    self._add_text(event.channel, line, out)
                self.phase = "thinking" if event.channel == "reasoning" else "writing"
            case "tool-call":
                self._turn()
                line = self._calls.get(event.tool_call_id)
                if line is None:
                    line = _Line("tool", event.name, detail=_json_input(event.input))
                    self._calls[event.tool_call_id] = line
                    self.lines.append(line)
                    self.tool_calls += 1
                else:
                    line.detail = _json_input(event.input)
                if not event.partial:
                    out.append(f"→ {event.name} {_short(line.detail, 200)}")
                self.phase = f"tool {event.name}"
            case "tool-result":
                self._in_turn = False
                line = self._calls.get(event.tool_call_id)
                if line is None:  # a result without its call: show it anyway
                    line = _Line("tool", event.name, detail="")
                    self.lines.append(line)
                line.ok = not event.is_error
                if event.is_error:
                    self.tool_errors += 1
                    line.detail = f"{line.detail} {_short(event.output, 80)}".strip()
                out.append(
                    f"{'✗' if event.is_error else '✓'} {event.name}: {_short(event.output, 120)}"
                )
            case "status":
                self.phase = event.phase
                if event.phase == "turn-complete":
                    self._in_turn = False
                if event.model:
                    self.model = event.model
                model = f" model={event.model}" if event.model else ""
                detail = f" ({event.detail})" if event.detail else ""
                out.append(f"· {event.phase}{model}{detail}")
            case "cost":
                self.usage = self._usage_before + event.usage
                if event.cost_usd is not None:
                    self.cost_usd, self.cost_seen = self._plus_before(event.cost_usd), True
                self.estimated = self.estimated or event.estimated
                if event.model and not self.model:
                    self.model = event.model
                out.append(
                    f"· tokens in={event.usage.input_tokens} out={event.usage.output_tokens}"
                    f" cost={format_cost(event.cost_usd, seen=event.cost_usd is not None, estimated=event.estimated)}"
                )
            case "error":
                code = f" [{event.code}]" if event.code else ""
                self.error = f"{event.message}{code}"
                self.lines.append(_Line("error", _short(event.message, 200)))
                out.append(f"! error{code}: {event.message}")
            case "done":
                self.outcome = event.reason
                self.phase = f"done: {event.reason}"
                self.ended = now
                if event.usage is not None:
                    self.usage = self._usage_before + event.usage
                if event.cost_usd is not None:
                    self.cost_usd, self.cost_seen = self._plus_before(event.cost_usd), True
                refused = self.refusals.summary()
                also = f" · {refused}" if refused else ""
                out.append(f"■ done: {event.reason}{self.rotation_suffix()}{also}")
        return out

    def _plus_before(self, cost_usd: float) -> float:
        return cost_usd if self._cost_before is None else self._cost_before + cost_usd

    def rotation_suffix(self) -> str:
        if not self.rotations:
            return ""
        return f" after {self.rotations} rotation{'s' if self.rotations > 1 else ''}"

    def rotate(self, record: RotationRecord) -> str:
        """A rotation began a fresh session (its predecessor's ``done`` is already in): the lane
        goes on with the successor; usage and cost keep adding up. The line that tells it."""
        handoff = record.handoff
        return self.rotated_to(
            index=handoff.rotation_index,
            reason=handoff.reason,
            tokens_used=handoff.tokens_used,
            window=handoff.context_window_tokens,
            runtime=record.successor.adapter_id,
            session_key=record.successor.session_key,
            note_bytes=record.note_bytes,
        )

    def rotated_to(
        self,
        *,
        index: int,
        reason: str,
        tokens_used: int,
        window: int | None,
        runtime: str,
        session_key: str,
        note_bytes: int,
    ) -> str:
        """See :meth:`rotate` (also used by ``replay`` from what the event log recorded)."""
        self.rotations += 1
        self._usage_before = self.usage
        self._cost_before = self.cost_usd
        self.outcome = self.ended = None
        self.phase = "rotating"
        self._in_turn = False
        at = f" at {tokens_used / window:.0%} of {window:,} tokens" if window else ""
        line = (
            f"↻ rotation #{index} ({reason}{at}) → new {runtime} session {session_key}, "
            f"handoff note {note_bytes} bytes"
        )
        self.lines.append(_Line("rotation", line))
        return line

    def finish(self, outcome: str, now: float) -> None:
        """The task ended without this view seeing its ``done`` (it raised before starting)."""
        if self.outcome is None:
            self.outcome = outcome
            self.phase = f"done: {outcome}"
            self.ended = now

    # -- rich -------------------------------------------------------------------------------------

    def panel(self, now: float, spinner: Spinner) -> Panel:
        body = Text()
        for line in list(self.lines)[-PANEL_LINES:]:
            if body:
                body.append("\n")
            match line.kind:
                case "reasoning":
                    body.append(_short(line.text, 300), style="dim italic")
                case "tool":
                    mark, style = {
                        None: ("…", "yellow"),
                        True: ("✓", "green"),
                        False: ("✗", "red"),
                    }[line.ok]
                    body.append(f"{mark} ", style=style)
                    body.append(line.text, style="bold")
                    if line.detail:
                        body.append(" ")
                        body.append(_JSON(Text(_short(line.detail, 160))))
                case "error":
                    body.append(f"! {line.text}", style="bold red")
                case "rotation":
                    body.append(line.text, style="bold magenta")
                case _:
                    body.append(_short(line.text, 300))
        if self._partial:
            if body:
                body.append("\n")
            style = "dim italic" if self._partial_channel == "reasoning" else ""
            body.append(_short(self._partial, 300), style=style)
        footer = Text(
            f"tokens {self.usage.input_tokens} in / {self.usage.output_tokens} out · "
            f"{format_cost(self.cost_usd, seen=self.cost_seen, estimated=self.estimated)} · "
            f"{self.elapsed(now):.1f}s",
            style="cyan",
        )
        title = Text.assemble((self.label, "bold"), (f" · {self.model}" if self.model else "", ""))
        phase_style = {"success": "green", "error": "red", "aborted": "yellow"}.get(
            self.outcome or "", "magenta"
        )
        head: RenderableType = Text(self.phase, style=phase_style)
        if self.waiting(now):
            head = Table.grid(padding=(0, 1))
            head.add_row(spinner, Text(f"{self.phase} · waiting", style=phase_style))
        return Panel(
            Group(head, body if body else Text("(no output yet)", style="dim"), footer),
            title=title,
            title_align="left",
            border_style=phase_style if self.done else "blue",
        )


def comparison_table(lanes: Sequence[Lane], *, now: float | None = None) -> Table:
    """Runtime, outcome, turns, tool calls, tokens in/out, cost, wall time, time to first event,
    files changed in the run's workspace, lines added/removed there, and where the workspace
    is."""
    at = trio.current_time() if now is None else now
    table = Table(title="comparison", title_justify="left")
    for name in ("run", "runtime", "outcome", "turns", "tool calls", "tokens in", "tokens out"):
        table.add_column(
            name, justify="right" if name.startswith(("turns", "tool", "tok")) else "left"
        )
    table.add_column("cost")
    table.add_column("wall", justify="right")
    table.add_column("first event", justify="right")
    table.add_column("files changed")
    table.add_column("lines", justify="right")
    table.add_column("workspace", overflow="fold")
    for lane in lanes:
        since = lane.started if lane.command_started is None else lane.command_started
        first = "-" if lane.first_event is None else f"{lane.first_event - since:.2f}s"
        tools = str(lane.tool_calls) + (f" ({lane.tool_errors} ✗)" if lane.tool_errors else "")
        where = lane.workspace or "-"
        if lane.workspace and lane.workspace_kind:
            where = f"{lane.workspace} ({lane.workspace_kind})"
        table.add_row(
            lane.label,
            lane.runtime,
            (lane.outcome or "running") + lane.rotation_suffix(),
            str(lane.turns),
            tools,
            str(lane.usage.input_tokens),
            str(lane.usage.output_tokens),
            format_cost(lane.cost_usd, seen=lane.cost_seen, estimated=lane.estimated),
            f"{lane.elapsed(at):.1f}s",
            first,
            lane.files_changed,
            lane.lines_changed,
            where,
        )
    return table


# -- views -----------------------------------------------------------------------------------------


View: TypeAlias = Union["JsonView", "PlainView", "RichView"]
"""A sink for the runner with a lifetime (``async with view.active():`` around the runs)."""


@attrs.define(eq=False)
class _Lanes:
    lanes: list[Lane] = attrs.field(factory=list[Lane])

    def add_lane(self, label: str, runtime: str, key: str) -> Lane:
        lane = Lane(label=label, runtime=runtime, key=key)
        self.lanes.append(lane)
        return lane

    def lane_for(self, run_key: str) -> Lane:
        for lane in self.lanes:
            if lane.owns(run_key):
                return lane
        return self.add_lane(run_key, "?", run_key)

    def _rotation_line(self, record: RotationRecord) -> tuple[Lane, str]:
        lane = self.lane_for(record.successor.session_key)
        return lane, lane.rotate(record)


@attrs.define(eq=False)
class JsonView(_Lanes):
    """JSON Lines: each event's wire JSON with ``"runKey"`` first (``event_from_json`` reads it)."""

    out: TextIO | None = None
    console: Console | None = None

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        assert self.out is not None
        lane = self.lane_for(run_key)
        now = trio.current_time()
        prefix = '{"runKey":' + json.dumps(run_key) + ","
        lines: list[str] = []
        for event in events:
            lane.apply(event, now)
            lines.append(prefix + event_to_json(event)[1:] + "\n")
        try:
            self.out.write("".join(lines))
            self.out.flush()
        except BrokenPipeError:  # the reader left (`| head -1`): the runs go on, unseen
            self.out = _discard(self.out)
        await trio.lowlevel.checkpoint()

    @asynccontextmanager
    async def active(self) -> AsyncGenerator[None]:
        yield

    def note(self, text: str) -> None:
        """Notes go to stderr: stdout holds only events."""
        print(text, file=sys.stderr)

    def rotated(self, record: RotationRecord) -> None:
        """A rotation is a note on stderr (the successor's events follow on stdout)."""
        lane, line = self._rotation_line(record)
        print(f"ringleader: [{lane.label}] {line}", file=sys.stderr, flush=True)


@attrs.define(eq=False)
class PlainView(_Lanes):
    """Plain lines, each prefixed by its run's label (``NO_COLOR``, pipes, files, CI logs)."""

    console: Console | None = None
    prefix: bool = True

    def _print(self, text: str) -> None:
        assert self.console is not None
        self.console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        lane = self.lane_for(run_key)
        now = trio.current_time()
        head = f"[{lane.label}] " if self.prefix else ""
        for event in events:
            for line in lane.apply(event, now):
                self._print(head + line)
        assert self.console is not None
        self.console.file.flush()
        await trio.lowlevel.checkpoint()

    @asynccontextmanager
    async def active(self) -> AsyncGenerator[None]:
        yield

    def note(self, text: str) -> None:
        self._print(text)

    def rotated(self, record: RotationRecord) -> None:
        lane, line = self._rotation_line(record)
        self._print((f"[{lane.label}] " if self.prefix else "") + line)


@attrs.define(eq=False)
class RichView(_Lanes):
    """The live view: a panel per run, side by side, redrawn ten times a second."""

    console: Console | None = None
    columns: int = 3
    _spinner: Spinner = attrs.field(factory=lambda: Spinner("dots", style="cyan"))
    _live: Live | None = None

    def renderable(self, now: float | None = None) -> RenderableType:
        at = trio.current_time() if now is None else now
        rows: list[RenderableType] = []
        for start in range(0, len(self.lanes), self.columns):
            chunk = self.lanes[start : start + self.columns]
            grid = Table.grid(expand=True, padding=(0, 1))
            for _ in range(self.columns if len(self.lanes) > self.columns else len(chunk)):
                grid.add_column(ratio=1)
            grid.add_row(*(lane.panel(at, self._spinner) for lane in chunk))
            rows.append(grid)
        waiting = [lane.label for lane in self.lanes if lane.waiting(at)]
        if waiting:
            line = Table.grid(padding=(0, 1))
            line.add_row(self._spinner, Text(f"waiting for {', '.join(waiting)}", style="dim"))
            rows.append(line)
        return Group(*rows)

    async def deliver(self, run_key: str, events: list[RuntimeEvent]) -> None:
        lane = self.lane_for(run_key)
        now = trio.current_time()
        for event in events:
            lane.apply(event, now)
        await trio.lowlevel.checkpoint()

    @asynccontextmanager
    async def active(self) -> AsyncGenerator[None]:
        assert self.console is not None
        # auto_refresh off: rich would redraw from its own thread while trio mutates the lanes
        with Live(
            self.renderable(),
            console=self.console,
            auto_refresh=False,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        ) as live:
            self._live = live
            async with trio.open_nursery() as nursery:

                async def redraw() -> None:
                    while True:
                        live.update(self.renderable(), refresh=True)
                        await trio.sleep(0.1)

                nursery.start_soon(redraw)
                try:
                    yield
                finally:
                    nursery.cancel_scope.cancel()
            live.update(self.renderable(), refresh=True)
            self._live = None

    def note(self, text: str) -> None:
        assert self.console is not None
        self.console.print(text, markup=False, highlight=False)

    def rotated(self, record: RotationRecord) -> None:
        self._rotation_line(record)  # drawn in the lane's panel


def _discard(out: TextIO) -> TextIO:
    """Where output goes once its reader has left: nowhere (the stream's descriptor is
    pointed at the null device too, so flushing it at exit does not fail again)."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    return open(os.devnull, "w", encoding="utf-8")


class _Console(Console):
    """A console that goes quiet when its reader leaves (``| head -1``) instead of raising
    ``SystemExit`` from inside a run: the runs go on to their end, logged, unseen."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), self.file.fileno())


def wants_color(out: TextIO, environ: dict[str, str] | None = None) -> bool:
    """Colour and a live view only for a terminal, and never with ``NO_COLOR`` (any value,
    https://no-color.org) or ``TERM=dumb``."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", "") != "" or env.get("TERM") == "dumb":
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def table_console(out: TextIO) -> Console:
    """A console for printing tables to ``out``: the terminal's width and colours at a
    terminal, else plain and wide (``COLUMNS``, default 200) so rows are not wrapped."""
    if wants_color(out):
        return Console(file=out, highlight=False)
    width = int(os.environ.get("COLUMNS", "0") or 0) or 200
    return Console(
        file=out, no_color=True, force_terminal=False, width=width, highlight=False, emoji=False
    )


def make_view(out: TextIO, *, as_json: bool) -> JsonView | PlainView | RichView:
    """The view for ``out``: JSON Lines, the rich live view, or plain prefixed lines."""
    if as_json:
        return JsonView(out=out)
    if wants_color(out):
        return RichView(console=_Console(file=out))
    width = int(os.environ.get("COLUMNS", "0") or 0) or 200
    console = _Console(
        file=out, no_color=True, force_terminal=False, width=width, highlight=False, emoji=False
    )
    return PlainView(console=console)
