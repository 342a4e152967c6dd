"""The CLI's live view, drawn into rich's recording console; the plain and JSON Lines views."""

from __future__ import annotations

import io
import json

import trio
from rich.console import Console

from orchestrator.cli.live import (
    JsonView,
    PlainView,
    RichView,
    comparison_table,
    format_cost,
    lane_key,
    wants_color,
)
from orchestrator.core import EventFactory, RuntimeEvent, Usage, event_from_json


def script(run_id: str) -> list[RuntimeEvent]:
    make = EventFactory(run_id=run_id, clock=lambda: 1)
    return [
        make.status("init", model="claude-haiku-4-5"),
        make.text_delta("considering the listing", channel="reasoning"),
        make.text_delta("Let me look.\nSecond line"),
        make.tool_call("t1", "list_files", {"path": "."}),
        make.tool_result("t1", "README.md\nsrc"),
        make.tool_call("t2", "read_file", {"path": "missing"}),
        make.tool_result("t2", "no such file", is_error=True),
        make.text_delta("Done."),
        make.cost(Usage(input_tokens=412, output_tokens=31), cost_usd=0.0012, estimated=True),
        *make.finish("success"),
    ]


def console(width: int = 160) -> Console:
    return Console(
        file=io.StringIO(), record=True, width=width, force_terminal=True, color_system="truecolor"
    )


async def test_rich_view_draws_a_panel_per_run_with_tools_tokens_and_cost(
    autojump_clock: trio.abc.Clock,
) -> None:
    view = RichView(console=console())
    view.add_lane("native", "native", lane_key("native", "a"))
    view.add_lane("codex", "codex", lane_key("codex", "a"))
    await view.deliver(lane_key("native", "a"), script("r1"))
    await trio.sleep(2)  # codex has shown nothing for 2 s: it is waiting
    assert view.console is not None
    view.console.print(view.renderable())
    text = view.console.export_text(clear=False)
    assert "native · claude-haiku-4-5" in text
    assert "done: success" in text
    assert '✓ list_files {"path": "."}' in text
    assert '✗ read_file {"path": "missing"}' in text
    assert "Let me look." in text and "Done." in text
    assert "tokens 412 in / 31 out · $0.0012 est." in text
    assert "codex" in text and "(no output yet)" in text
    assert "waiting for codex" in text
    # side by side: both panel titles on one line of the drawing
    assert any("native" in line and "codex" in line for line in text.splitlines())
    html = view.console.export_html()
    assert "italic" in html  # reasoning is dimmed (dim italic)


async def test_comparison_table_marks_unknown_and_estimated_cost(
    autojump_clock: trio.abc.Clock,
) -> None:
    view = RichView(console=console(220))
    view.add_lane("native", "native", lane_key("native", "a"))
    view.add_lane("scripted", "scripted", lane_key("scripted", "b"))
    await trio.sleep(0.25)
    await view.deliver(lane_key("native", "a"), script("r1"))
    make = EventFactory(run_id="r2", clock=lambda: 1)
    await view.deliver(
        lane_key("scripted", "b"),
        [
            make.text_delta("hi"),
            make.cost(Usage(input_tokens=5, output_tokens=2), cost_usd=None),
            *make.finish("error"),
        ],
    )
    view.lanes[0].files_changed = "1 file changed, 2 insertions(+)"
    assert view.console is not None
    view.console.print(comparison_table(view.lanes))
    text = view.console.export_text()
    header = next(line for line in text.splitlines() if "outcome" in line)
    for column in ("runtime", "turns", "tool calls", "tokens in", "cost", "wall", "first event"):
        assert column in header
    native = next(line for line in text.splitlines() if "│ native" in line)
    assert "success" in native and "$0.0012 est." in native
    assert "2 (1 ✗)" in native  # two tool calls, one failed
    assert "0.25s" in native  # time to first event
    assert "1 file changed" in native
    cells = [c.strip() for c in native.split("│")]
    assert cells[4] == "3"  # turns: each model answer after tool results starts one
    scripted = next(line for line in text.splitlines() if "│ scripted" in line)
    assert "unknown" in scripted and "error" in scripted


def test_format_cost() -> None:
    assert format_cost(None, seen=False, estimated=False) == "unknown"
    assert format_cost(0.0, seen=True, estimated=False) == "$0.0000"
    assert format_cost(0.5, seen=True, estimated=True) == "$0.5000 est."


async def test_plain_view_prefixes_every_line_with_its_run() -> None:
    out = io.StringIO()
    view = PlainView(console=Console(file=out, no_color=True, width=200))
    view.add_lane("native", "native", lane_key("native", "a"))
    view.add_lane("codex", "codex", lane_key("codex", "b"))
    await view.deliver(lane_key("native", "a"), script("r1")[:5])
    await view.deliver(lane_key("codex", "b"), script("r2"))
    lines = out.getvalue().splitlines()
    assert lines
    assert all(line.startswith(("[native] ", "[codex] ")) for line in lines)
    assert "\x1b[" not in out.getvalue()
    assert '[native] → list_files {"path": "."}' in lines
    assert "[native] ✓ list_files: README.md⏎src" in lines
    assert "[native] (thinking) considering the listing" in lines
    assert "[codex] ■ done: success" in lines


async def test_json_view_puts_the_run_key_on_every_line() -> None:
    out = io.StringIO()
    view = JsonView(out=out)
    await view.deliver("runtime:native:task:a", script("r1"))
    await view.deliver("runtime:codex:task:b", script("r2"))
    lines = out.getvalue().splitlines()
    assert len(lines) == 20
    keys = [json.loads(line)["runKey"] for line in lines]
    assert keys == ["runtime:native:task:a"] * 10 + ["runtime:codex:task:b"] * 10
    assert [event_from_json(line).kind for line in lines].count("done") == 2


def test_colour_only_for_terminals_without_no_color() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert wants_color(Tty(), {"TERM": "xterm"})
    assert not wants_color(Tty(), {"TERM": "xterm", "NO_COLOR": "1"})
    assert not wants_color(Tty(), {"TERM": "dumb"})
    assert not wants_color(io.StringIO(), {"TERM": "xterm"})


async def test_what_a_run_says_cannot_drive_the_terminal() -> None:
    """A model's text, a tool's name, input and output, a status and an error are shown with
    their control characters made visible: no escape sequence (a colour, a window title, a
    clipboard write) reaches the terminal from what a provider or a tool sends."""
    make = EventFactory(run_id="r", clock=lambda: 1)
    evil = "\x1b]0;pwned\x07\x1b[31mred\x1b[0m\r\x9bX"
    events = [
        make.status("init", model=f"m{evil}", detail=evil),
        make.text_delta(f"hello {evil}\n"),
        make.tool_call("t1", f"bash{evil}", {"command": evil}),
        make.tool_result("t1", f"out {evil}", is_error=True),
        make.error(f"failed {evil}", code="x"),
        *make.finish("error"),
    ]
    for view in (
        PlainView(console=Console(file=io.StringIO(), no_color=True, width=400)),
        RichView(console=console(400)),
    ):
        view.add_lane("native", "native", lane_key("native", "a"))
        await view.deliver(lane_key("native", "a"), events)
        assert view.console is not None
        if isinstance(view, RichView):
            view.console.print(view.renderable())
        shown = view.console.export_text() if isinstance(view, RichView) else ""
        written = view.console.file
        assert isinstance(written, io.StringIO)
        shown += written.getvalue()
        for raw in ("\x1b]", "\x07", "\x1b[31mred", "\r", "\x9b"):
            assert raw not in shown, (type(view).__name__, raw)
        assert "\\x1b]0;pwned" in shown and "hello" in shown
