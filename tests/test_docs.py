"""The README as a front page and the docs site's sources, checked in well under a second each:
the README's size, its two commands and its links; the site's nav naming pages that exist; the
generated reference pages (scripts/mkdocs_hooks.py) covering every command, option, config key
and event kind; and the terminal picture (docs/images/terminal.svg) drawn by the live view
from a scripted side-by-side run. The whole site is built with ``mkdocs build --strict`` by
scripts/test, which fails on a broken link or a page missing from the nav."""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from pydantic import BaseModel
from rich.console import Console

from orchestrator.cli.live import RichView, comparison_table, lane_key
from orchestrator.core import EventFactory, RuntimeEvent, Usage
from tests import docs_images

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
README_LIMIT = 15 * 1024
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_is_a_front_page_of_at_most_15_kb() -> None:
    size = len(README.read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes; move reference material to docs/"


def test_the_readme_keeps_the_two_commands() -> None:
    """.ci/run runs scripts/test: the README's test command is the CI's."""
    text = README.read_text(encoding="utf-8")
    assert re.search(r"^scripts/demo +# ", text, re.M)
    assert re.search(r"^scripts/test +# ", text, re.M)
    assert "exec scripts/test" in (REPO / ".ci" / "run").read_text()


def test_every_relative_link_of_the_readme_exists() -> None:
    text = README.read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if not re.match(r"[a-z]+:|#", t)]
    assert targets, "the README links into the docs"
    missing = [t for t in targets if not (REPO / t.split("#", 1)[0]).exists()]
    assert missing == []


def test_every_page_of_the_nav_exists_or_is_generated() -> None:
    """mkdocs.yml's nav names pages that exist, or that the build generates (a page left out
    of the nav is listed under "More" by scripts/mkdocs_hooks.py)."""
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    listed = set(re.findall(r":\s+(\S+\.md)\s*$", nav, re.M))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    generated = listed - pages
    assert generated == {
        "reference/cli.md",
        "reference/configuration.md",
        "reference/events.md",
        *(
            f"reference/api/{name}.md"
            for name in (
                "orchestrator.core",
                "orchestrator.engine",
                "adapters",
                "adapters.native",
                "contract",
                "tiers",
            )
        ),
    }


def generated(page: str) -> str:
    """One reference page as the docs build makes it (the hook module run as a script)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "mkdocs_hooks.py"), page],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return done.stdout


def test_the_cli_reference_has_every_command_and_option() -> None:
    from orchestrator.cli.main import _parser  # pyright: ignore[reportPrivateUsage]

    page = generated("cli")
    parser = _parser()
    subs: list[Any] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # pyright: ignore[reportPrivateUsage]
    commands: dict[str, Any] = dict(subs[0].choices)
    assert len(commands) > 20
    for name, command in commands.items():
        assert f"\n## {name}\n" in page, name
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        if name == "model-server":
            assert "--script FILE" in section
            continue
        for action in command._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in section or f", {option}" in section, (name, option)
        if command.description:
            assert " ".join(command.description.split())[:60] in section, name


def test_the_configuration_reference_has_every_table_and_key() -> None:
    from orchestrator.core import config

    page = generated("configuration")
    seen: set[type[BaseModel]] = set()

    def models_in(annotation: Any) -> list[type[BaseModel]]:
        """The config models a field holds: itself, in a table, a list, or optional."""
        found: list[type[BaseModel]] = []
        for inner in (annotation, *getattr(annotation, "__args__", ())):
            for candidate in (inner, *getattr(inner, "__args__", ())):
                if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                    found.append(candidate)
        return found

    def walk(model: type[BaseModel]) -> None:
        seen.add(model)
        for name, field in model.model_fields.items():
            assert f"| `{name}` |" in page, (model.__name__, name)
            for inner in models_in(field.annotation):
                if inner not in seen:
                    walk(inner)

    for field in config.Config.model_fields.values():
        for inner in models_in(field.annotation):
            walk(inner)
    assert {m.__name__ for m in seen} >= {
        "RuntimeConfig",
        "AccountConfig",
        "McpServerConfig",
        "BudgetConfig",
        "BreakerConfig",
        "ScheduleConfig",
        "NotifyConfig",
        "SandboxConfig",
        "WorkspaceConfig",
    }
    for title in ("[runtimes.ID]", "[budget]", "[breaker]", "[[schedule]]", "[sandbox]"):
        assert f"## `{title}`" in page
    assert "| `codex` |" in page  # which runtime takes which key


def test_the_event_reference_has_every_kind_and_the_schema() -> None:
    page = generated("events")
    for kind in ("text-delta", "tool-call", "tool-result", "status", "cost", "done", "error"):
        assert f"\n## `{kind}`\n" in page
    for field in ("`runId`", "`seq`", "`toolCallId`", "`costUsd`", "`resetsAt`"):
        assert field in page
    schema = page.split("```json\n", 1)[1].split("```", 1)[0]
    parsed = json.loads("\n".join(line.removeprefix("    ") for line in schema.splitlines()))
    assert set(parsed["discriminator"]["mapping"]) >= {"text-delta", "done", "error"}


def test_the_board_guide_lists_every_http_route() -> None:
    """docs/guide/board.md's HTTP API table names every route the board and its feed serve."""
    sources = [
        REPO / "orchestrator" / "board" / "server.py",
        REPO / "orchestrator" / "engine" / "feed.py",
        REPO / "orchestrator" / "mcp" / "server.py",
    ]
    paths = {
        re.sub(r"\{(\w+)(:path)?\}", lambda m: m.group(1).upper(), path)
        for source in sources
        for path in re.findall(r'(?:Route|Mount)\(\s*"([^"]+)"', source.read_text())
    }
    assert {"/", "/events", "/runs/KEY/apply", "/mcp", "/static"} <= paths
    guide = (DOCS / "guide" / "board.md").read_text(encoding="utf-8")
    table = guide.split("## The HTTP API", 1)[1]
    missing = [
        path
        for path in sorted(paths)
        if f" {path}`" not in table and f" {path}/" not in table and f" {path}?" not in table
    ]
    assert missing == []


def test_every_ringleader_variable_the_code_reads_is_documented() -> None:
    """The configuration guide's Environment table names every ``RINGLEADER_*`` variable the
    package's code names (the per-runtime ``RINGLEADER_<RUNTIME>_<FIELD>`` ones by that rule)."""
    named: set[str] = set()
    for package in ("orchestrator", "adapters", "contract", "tiers"):
        for source in (REPO / package).rglob("*.py"):
            named |= set(re.findall(r"\"(RINGLEADER_[A-Z_]+)\"", source.read_text("utf-8")))
    assert "RINGLEADER_STATE_DIR" in named
    table = (DOCS / "guide" / "configuration.md").read_text(encoding="utf-8")
    table = table.split("## Environment", 1)[1]
    missing = sorted(name for name in named if f"`{name}`" not in table)
    assert missing == []


def test_the_code_tour_runs_its_example(capsys: Any) -> None:
    """docs/code-tour.md's run through the trait, by hand: it runs, and prints the events."""
    page = (DOCS / "code-tour.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", page, re.S)
    assert block is not None
    exec(compile(block.group(1), "docs/code-tour.md", "exec"), {"__name__": "tour"})
    kinds = [json.loads(line)["kind"] for line in capsys.readouterr().out.splitlines()]
    assert kinds[0] == "text-delta" and kinds[-1] == "done"
    assert "tool-call" in kinds and "tool-result" in kinds


def test_every_command_and_flag_the_docs_show_exists() -> None:
    """A ``ringleader COMMAND --flag`` in the README or docs/ (a code span, or a line of a code
    block) names a real command and one of its options: moved or old text cannot advertise a
    flag that is gone. Quoted prompts are left out (``'add a --verbose flag'``)."""
    from orchestrator.cli.main import _parser  # pyright: ignore[reportPrivateUsage]

    parser = _parser()
    subs: list[Any] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # pyright: ignore[reportPrivateUsage]
    options = {
        name: {o for a in sub._actions for o in a.option_strings}
        for name, sub in subs[0].choices.items()
    }
    options["model-server"] |= {"--script", "--port", "--log"}  # its own parser
    shared = {o for a in parser._actions for o in a.option_strings}
    wrong: list[str] = []
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        spans = re.findall(r"`([^`\n]+)`", text)
        blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M)
        lines = [line.strip().removeprefix("$ ") for block in blocks for line in block.splitlines()]
        for code in [*spans, *(line for line in lines if line.startswith("ringleader "))]:
            code = re.sub(r"'[^']*'|\"[^\"]*\"", "''", code)
            for found in re.finditer(r"^ringleader ([a-z][a-z-]*)([^|;#]*)", code):
                command, rest = found.group(1), found.group(2)
                if command not in options:
                    wrong.append(f"{page.name}: no command {command!r}: {code}")
                    continue
                for flag in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", rest):
                    if flag not in options[command] | shared:
                        wrong.append(f"{page.name}: {command} has no {flag}: {code}")
    assert wrong == []


# -- the terminal picture ---------------------------------------------------------------------


def demo_run(run_id: str, model: str, tool: str, tool_input: dict[str, Any]) -> list[Any]:
    """One runtime's side of the demo: a real tool turn, then the answer (the scripted model
    server's built-in script, as `ringleader demo` plays it)."""
    make = EventFactory(run_id=run_id, clock=lambda: 1_764_000_000_000)
    return [
        make.status("init", model=model),
        make.text_delta("Let me look at the workspace first.\n"),
        make.tool_call("t1", tool, tool_input),
        make.tool_result("t1", "README.md\ngreeter.py\ntest_greeter.py"),
        make.cost(Usage(input_tokens=400, output_tokens=30), cost_usd=0.0006, estimated=True),
        make.text_delta(
            "Done: this answer comes from ringleader's built-in scripted model server."
        ),
        make.cost(Usage(input_tokens=900, output_tokens=50), cost_usd=0.0011, estimated=True),
        *make.finish("success"),
    ]


async def test_the_terminal_picture_is_the_live_view_of_a_side_by_side_run(
    autojump_clock: trio.abc.Clock,
) -> None:
    console = Console(
        file=io.StringIO(), record=True, width=196, force_terminal=True, color_system="truecolor"
    )
    view = RichView(console=console)
    runs: list[tuple[str, str, str, dict[str, Any], float]] = [
        ("native", "anthropic:claude-haiku-4-5", "list_files", {"path": "."}, 0.9),
        ("claude-code", "claude-sonnet-4-6", "Bash", {"command": "ls"}, 4.2),
        ("codex", "gpt-5.5", "exec_command", {"cmd": "ls"}, 2.8),
    ]
    for label, *_ in runs:
        lane = view.add_lane(label, label, lane_key(label, "demo"))
        lane.workspace = f"/tmp/ringleader-{label}-k2v9x1qe"
        lane.workspace_kind = "temporary copy"
        lane.files_changed, lane.lines_changed = "none", "-"
    steps: list[tuple[float, str, list[RuntimeEvent]]] = []
    for label, model, tool, tool_input, after in runs:
        events = demo_run(f"run-{label}", model, tool, tool_input)
        steps += [(after / 4, label, events[:1]), (after, label, events[1:])]
    for at, label, events in sorted(steps, key=lambda step: step[0]):
        await trio.sleep(at - trio.current_time())
        await view.deliver(lane_key(label, "demo"), events)
    console.print(view.renderable())
    console.print(comparison_table(view.lanes))
    text = console.export_text(clear=False)
    for label, model, tool, _, _ in runs:
        assert f"{label} · {model}" in text
        assert f"✓ {tool}" in text
    assert text.count("done: success") == 3
    assert "$0.0011 est." in text
    svg = console.export_svg(title="ringleader demo")
    docs_images.save_text("terminal.svg", svg)
