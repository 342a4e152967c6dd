"""MkDocs hooks (``hooks:`` in mkdocs.yml): the reference pages, generated from the code at
every build, so none is committed and none can go stale.

- ``reference/cli.md``: every ``ringleader`` command, walked from the argument parser
  (``orchestrator/cli/main.py``): its summary, usage, description, arguments and examples.
- ``reference/configuration.md``: every table and key of ``ringleader.toml``, walked from the
  pydantic models of ``orchestrator/core/config.py`` (types, defaults, limits, the field
  docstrings), and which runtime takes which ``[runtimes.ID]`` key (their specs).
- ``reference/events.md``: the event wire format, from the JSON Schema pydantic makes of
  ``orchestrator/core/events.py``'s models, with their docstrings.

Nothing here is copied into ``docs/``: the pages exist only in the build (``File.generated``).

A page someone adds under ``docs/`` without listing it in ``mkdocs.yml``'s nav still gets into
the site's navigation, under "More" (:func:`on_nav`), so the strict build does not depend on the
order in which branches land; mkdocs.yml is where it gets its proper place.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import io
import json
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

API = {
    "orchestrator.core": (
        "What an adapter may import: the adapter trait, the events, the one error hierarchy, the "
        "approval book, the registry and the configuration."
    ),
    "orchestrator.engine": (
        "What runs tasks: actors, supervision, the runner, workspaces, the event log and its "
        "feed, governance and hosts (`LocalHost`, `RayHost`)."
    ),
    "adapters": (
        "The shipped runtime adapters and what an adapter author builds on (`AdapterBase`, "
        "`RunEmitter`, the child-process run loop). See "
        "[Writing an adapter](../../guide/adapters.md)."
    ),
    "adapters.native": (
        "The native runtime: ringleader's own agent loop (the Glove and Anvia surfaces, tools, "
        "MCP, models). See [the native runtime](../../runtimes/native.md)."
    ),
    "contract": (
        "The reusable adapter contract suite (`pip install 'ringleader[contract]'`). See "
        "[Writing an adapter](../../guide/adapters.md)."
    ),
    "tiers": (
        "Cache-tier prompt assembly: stable → context → volatile, with UTF-8 cache breakpoints. "
        "See [Rotation and prompt-cache tiers](../../guide/rotation.md)."
    ),
}
"""The public packages whose API pages are generated (``reference/api/<package>.md``): each
page is a mkdocstrings block listing the names the package re-exports."""
_GENERATED_NOTE = (
    "<!-- generated at build time by scripts/mkdocs_hooks.py from {source}; "
    "do not edit: change the code -->\n"
)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated reference pages to the site's files."""
    makers = {
        "reference/cli.md": cli_page,
        "reference/configuration.md": configuration_page,
        "reference/events.md": events_page,
    }
    for uri, make in makers.items():
        files.append(File.generated(config, uri, content=make()))
    for package, intro in API.items():
        uri = f"reference/api/{package}.md"
        files.append(File.generated(config, uri, content=api_page(package, intro)))
    return files


def on_nav(nav: Navigation, config: MkDocsConfig, files: Files) -> Navigation:
    """Every page of ``docs/`` that the nav does not list: right after the page
    ``extra.place_after`` in mkdocs.yml names for it (pages other branches bring, placed once
    they exist), else under a last section "More"."""
    listed = {page.file.src_uri for page in nav.pages}
    extra = sorted(
        (f for f in files.documentation_pages() if f.src_uri not in listed),
        key=lambda f: f.src_uri,
    )
    if not extra:
        return nav
    extra_config: Any = config.extra
    place_after: dict[str, str] = dict(extra_config.get("place_after") or {})
    by_uri = {page.file.src_uri: page for page in nav.pages}
    items: list[Any] = typing.cast(list[Any], nav.items)  # pyright: ignore[reportUnknownMemberType]
    rest: list[Page] = []
    for file in extra:
        page = file.page if isinstance(file.page, Page) else Page(None, file, config)
        anchor = by_uri.get(place_after.get(file.src_uri, ""))
        if anchor is None:
            rest.append(page)
            continue
        siblings: list[Any] = anchor.parent.children if anchor.parent is not None else items
        siblings.insert(siblings.index(anchor) + 1, page)
        page.parent = anchor.parent
        nav.pages.insert(nav.pages.index(anchor) + 1, page)
        by_uri[file.src_uri] = page
    if rest:
        section = Section("More", rest)  # pyright: ignore[reportArgumentType]
        for page in rest:
            page.parent = section
        items.append(section)
        nav.pages.extend(rest)
    for before, after in zip(nav.pages, nav.pages[1:], strict=False):
        before.next_page, after.previous_page = after, before
    return nav


_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """A link from a page to a file of the repository outside ``docs/`` (a source file, an
    example) has no page on the site: it becomes the file's path as code, so the page reads
    the same on GitHub and here. A link to a file that exists nowhere is left for the strict
    build to report."""
    docs = Path(config.docs_dir).resolve()
    repo = docs.parent
    here = (docs / page.file.src_uri).parent

    def plain(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return match.group(0)
        path = (here / target).resolve()
        if path.is_relative_to(docs) or not path.is_relative_to(repo) or not path.exists():
            return match.group(0)
        where = path.relative_to(repo).as_posix()
        return text if where in text else f"{text} (`{where}`)"

    return _LINK.sub(plain, markdown)


# -- the Python API ---------------------------------------------------------------------------


def public_names(package: str) -> list[str]:
    """The names a package exports: its ``__all__``, else its explicit re-exports
    (``from .x import Name as Name``), in source order, read from the source."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ValueError(f"no package {package}")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    names: list[str] = []
    for node in _module_level(tree.body):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                value: Any = ast.literal_eval(node.value) if node.value is not None else []
                return [str(v) for v in typing.cast(list[object], value)]
        if isinstance(node, ast.ImportFrom):
            names += [a.name for a in node.names if a.asname == a.name]
    return names


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's statements, those under a top-level ``try``/``if`` included."""
    for node in body:
        yield node
        if isinstance(node, ast.Try):
            for part in (node.body, node.orelse, node.finalbody):
                yield from _module_level(part)
        elif isinstance(node, ast.If):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)


def api_page(package: str, intro: str) -> str:
    names = public_names(package)
    lines = [
        f"# `{package}`",
        "",
        _GENERATED_NOTE.format(source=f"the docstrings of {package}"),
        intro,
        "",
        f"Rendered from the docstrings at every build: the {len(names)} names `{package}` "
        "exports, each imported from it (`from " + package + " import " + names[0] + "`).",
        "",
        f"::: {package}",
        "    options:",
        "      show_submodules: false",
        "      members:",
        *(f"        - {name}" for name in names),
        "",
    ]
    return "\n".join(lines)


# -- helpers ----------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped, and ``<`` outside code spans
    escaped (``ringleader/<task>`` is not an HTML tag)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):  # outside code spans
        parts[i] = parts[i].replace("<", "&lt;")
    return "`".join(parts)


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def _rst_to_md(text: str) -> str:
    """Docstrings use reST's double backticks and ``:class:`X``` roles; Markdown wants single."""
    text = re.sub(r":(?:class|func|data|mod|meth|attr|exc):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _attribute_docs(cls: type) -> dict[str, str]:
    """The docstrings written under a class's fields (``x: int`` then a string), for the class
    and its bases, read from the source."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ in ("builtins",) or klass.__module__.startswith("pydantic"):
            continue
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        tree = ast.parse(inspect.cleandoc("\n" + source) if source[:1].isspace() else source)
        node = tree.body[0]
        if not isinstance(node, ast.ClassDef):
            continue
        body = node.body
        for stmt, nxt in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(nxt.value.value)
    return docs


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return inspect.cleandoc(doc).split("\n\n", 1)[0]


# -- the command line -------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, Any]]:
    """(name, one-line summary, sub-parser) for each command, in ``--help`` order."""
    for action in parser._actions:  # pyright: ignore[reportPrivateUsage]
        if isinstance(action, argparse._SubParsersAction):  # pyright: ignore[reportPrivateUsage]
            summaries = {
                choice.dest: choice.help or ""
                for choice in action._choices_actions  # pyright: ignore[reportPrivateUsage]
            }
            choices = typing.cast(dict[str, Any], action.choices)  # pyright: ignore[reportUnknownMemberType]
            for name, sub in choices.items():
                yield name, summaries.get(name, ""), sub


def _argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows: list[str] = []
    for action in parser._actions:  # pyright: ignore[reportPrivateUsage]
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):  # pyright: ignore[reportPrivateUsage]
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            names = ", ".join(action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar or (
                    "{" + ",".join(map(str, action.choices)) + "}"
                    if action.choices
                    else action.dest.upper()
                )
                names += f" {metavar if isinstance(metavar, str) else ' '.join(metavar)}"
        else:
            metavar = action.metavar or action.dest
            names = metavar if isinstance(metavar, str) else " ".join(metavar)
            if action.nargs in ("?", "*"):
                names = f"[{names}]"
        extra: list[str] = []
        if action.choices and action.option_strings and action.metavar:
            extra.append("one of " + ", ".join(_code(str(c)) for c in action.choices))
        if action.required and action.option_strings:
            extra.append("required")
        if action.nargs in ("*", "+") or isinstance(action, argparse._AppendAction):  # pyright: ignore[reportPrivateUsage]
            extra.append("repeatable" if action.option_strings else "one or more")
        text = (action.help or "").replace("%(default)s", str(action.default))
        if extra:
            text = f"{text} ({'; '.join(extra)})" if text else "; ".join(extra)
        rows.append(f"| {_code(names)} | {_cell(text)} |")
    return rows


def _model_server_help() -> str:
    """``model-server`` hands its arguments to the model server's own parser: its ``--help``."""
    from orchestrator.model_server.serve import main as serve_main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        serve_main(["--help"])
    return out.getvalue()


def cli_page() -> str:
    from orchestrator.cli.main import _parser  # pyright: ignore[reportPrivateUsage]

    parser = _parser()
    lines = [
        "# Command line reference",
        "",
        _GENERATED_NOTE.format(source="the argument parser, orchestrator/cli/main.py"),
        "Generated from the argument parser at every build of these pages: each command, its "
        "arguments and their help, exactly as `ringleader COMMAND --help` says them. The guides "
        "say when to use which; this page says what each takes.",
        "",
        "```text",
        parser.format_usage().strip(),
        "```",
        "",
        "| global option | what it does |",
        "|---|---|",
        *_argument_rows(parser),
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    commands = list(_subcommands(parser))
    lines += [f"| [`{name}`](#{name}) | {_cell(summary)} |" for name, summary, _ in commands]
    lines.append("")
    for name, summary, sub in commands:
        lines += [f"## {name}", ""]
        if name == "model-server":
            lines += [
                _cell(summary) + ": its arguments go to the model server's own parser "
                "(`orchestrator/model_server/serve.py`):",
                "",
                "```text",
                _model_server_help().strip(),
                "```",
                "",
            ]
            continue
        lines += ["```text", sub.format_usage().replace("usage: ", "").strip(), "```", ""]
        if sub.description:
            lines += [_cell(sub.description), ""]
        rows = _argument_rows(sub)
        if rows:
            lines += ["| argument | what it does |", "|---|---|", *rows, ""]
        if sub.epilog:
            lines += ["```bash", inspect.cleandoc(sub.epilog.removeprefix("examples:")), "```", ""]
    return "\n".join(lines)


# -- the configuration ------------------------------------------------------------------------


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "none"
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(names)
    if origin is typing.Literal:
        return ", ".join(json.dumps(a) for a in args)
    if origin is tuple:
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"table of {_type_name(args[1])}"
    if typing.get_origin(annotation) is typing.Annotated:
        return _type_name(args[0])
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if annotation in names:
        return names[annotation]
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    if field.default_factory is not None:
        value = field.default_factory()
        if hasattr(value, "model_dump"):
            return "(table)"
        return "" if not value else _code(json.dumps(value))
    if field.default is PydanticUndefined:
        return "required"
    if field.default is None:
        return ""
    value: Any = field.default
    if isinstance(value, tuple):
        value = list(typing.cast(tuple[object, ...], value))
    return _code(json.dumps(value))


def _limits(field: Any) -> str:
    parts: list[str] = []
    for meta in field.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(f"{sign} {value}")
        for attr, word in (("min_length", "length ≥"), ("max_length", "length ≤")):
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(f"{word} {value}")
        pattern = getattr(meta, "pattern", None)
        if pattern is not None:
            parts.append(f"matches {_code(pattern)}")
    return ", ".join(parts)


def _model_of(annotation: Any) -> type | None:
    """The config model a field holds (itself, in a table, in a list, or optional)."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _table(title: str, model: Any, out: list[str], seen: set[str]) -> None:
    """One table's keys, then each nested table (``[a.b]``, ``[a.b.NAME]``, ``[[a]]``)."""
    doc = _rst_to_md(inspect.cleandoc(model.__doc__ or ""))
    docs = _attribute_docs(model)
    out += [f"## `{title}`", "", f"{_cell(doc)} (`{model.__name__}`)", ""]
    out += ["| key | type | default | limits | what it does |", "|---|---|---|---|---|"]
    nested: list[tuple[str, Any]] = []
    for name, field in model.model_fields.items():
        inner = _model_of(field.annotation)
        annotation = field.annotation
        if inner is not None:
            origin = typing.get_origin(annotation)
            if origin is dict:
                child = f"{title.strip('[]')}.{name}.NAME"
            elif origin is tuple:
                child = f"[{title.strip('[]')}.{name}]"
            else:
                child = f"{title.strip('[]')}.{name}"
            child = child if child.startswith("[") else f"[{child}]"
            child = child if origin is not tuple else f"[{child}]"
            nested.append((child, inner))
            what = f"see [`{child}`](#{_anchor(child)})"
        else:
            what = _rst_to_md(docs.get(name, field.description or ""))
        out.append(
            f"| `{name}` | {_cell(_type_name(annotation))} | {_default(field)} | "
            f"{_cell(_limits(field))} | {_cell(what)} |"
        )
    out.append("")
    for child, inner in nested:
        if child not in seen:
            seen.add(child)
            _table(child, inner, out, seen)


def _anchor(title: str) -> str:
    """The id the toc extension gives a heading ``## `TITLE` ``."""
    from markdown.extensions.toc import slugify

    return slugify(title, "-")


def configuration_page() -> str:
    from orchestrator.core import config as config_module
    from orchestrator.core.registry import RUN_SETTINGS

    lines = [
        "# Configuration reference",
        "",
        _GENERATED_NOTE.format(source="the models of orchestrator/core/config.py"),
        "Generated from the configuration's pydantic models at every build of these pages: every "
        "table and key `ringleader.toml` (and the user config, and `--config FILE`) may hold, its "
        "type, default and limits. An unknown key is an error naming the file and the key. "
        "[Configuration](../guide/configuration.md) explains the sources, their precedence and "
        "what an untrusted project file may not set. Each runtime field can also be set by the "
        "environment variable `RINGLEADER_<RUNTIME>_<FIELD>` (`"
        + config_module.env_var_for("claude-code", "base_url")
        + "`).",
        "",
    ]
    root = config_module.Config
    out: list[str] = []
    seen: set[str] = set()
    for name, field in root.model_fields.items():
        inner = _model_of(field.annotation)
        if inner is None:
            continue
        if name == "runtimes":
            title = "[runtimes.ID]"
        elif typing.get_origin(field.annotation) is tuple:
            title = f"[[{name}]]"
        else:
            title = f"[{name}]"
        _table(title, inner, out, seen)
    lines += out
    lines += [
        "## Which runtime takes which `[runtimes.ID]` key",
        "",
        "A key a runtime cannot use is refused (its spec's `settings`; every runtime takes "
        + ", ".join(f"`{s}`" for s in sorted(RUN_SETTINGS))
        + "). The runtimes ringleader ships:",
        "",
        "| runtime | keys |",
        "|---|---|",
    ]
    for spec in _specs():
        keys = (
            "all"
            if spec.settings is None
            else ", ".join(f"`{k}`" for k in sorted(spec.settings | RUN_SETTINGS))
        )
        lines.append(f"| `{spec.id}` | {keys} |")
    lines.append("")
    return "\n".join(lines)


def _specs() -> list[Any]:
    """The runtimes ringleader ships (a third party's installed plugin is not documented here)."""
    from adapters.builtin import builtin_runtimes

    return list(builtin_runtimes())


# -- the event wire format --------------------------------------------------------------------


_SHARED = ("Usage", "ApprovalCall", "QuotaWindow")
"""The models the events share, each under its own heading on the events page."""


def _schema_type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        if name in _SHARED:
            return f"[`{name}`](#{name.lower()})"
        return "any JSON" if name == "JsonValue" else name
    if "const" in prop:
        return json.dumps(prop["const"])
    if "enum" in prop:
        return ", ".join(json.dumps(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " or ".join(_schema_type(p, defs) for p in prop["anyOf"])
    if prop.get("type") == "array":
        items = prop.get("items")
        return f"array of {_schema_type(items, defs)}" if items else "array"
    if "type" in prop:
        return str(prop["type"])
    return "any JSON"


def _properties_table(model: Any, schema: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    docs = _attribute_docs(model)
    by_alias = {(f.alias or n): n for n, f in model.model_fields.items()}
    required = set(schema.get("required", []))
    rows = ["| field | type | default | what it is |", "|---|---|---|---|"]
    for key, prop in schema.get("properties", {}).items():
        name = by_alias.get(key, key)
        if key == "kind":
            docs.setdefault(name, "Which of the seven kinds this event is.")
        default = "required" if key in required else _code(json.dumps(prop.get("default")))
        rows.append(
            f"| `{key}` | {_cell(_schema_type(prop, defs))} | {default} "
            f"| {_cell(_rst_to_md(docs.get(name) or prop.get('description') or ''))} |"
        )
    return rows


def events_page() -> str:
    from pydantic import TypeAdapter

    from orchestrator.core import events

    schema = TypeAdapter(events.RuntimeEvent).json_schema(by_alias=True, mode="serialization")
    defs: dict[str, Any] = schema.get("$defs", {})
    kinds = [
        events.TextDelta,
        events.ToolCall,
        events.ToolResult,
        events.Status,
        events.Cost,
        events.Done,
        events.ErrorEvent,
    ]
    module_doc = _rst_to_md(inspect.cleandoc(events.__doc__ or ""))
    lines = [
        "# Event wire format",
        "",
        _GENERATED_NOTE.format(source="the JSON Schema of orchestrator/core/events.py"),
        "Generated at every build of these pages from the JSON Schema pydantic makes of the event "
        "models. This is what `--json`, `/events` (SSE), `/runs/KEY` and the event log carry: "
        "one JSON object per event, `kind` naming which.",
        "",
        module_doc,
        "",
        "## The envelope",
        "",
        "Every event carries these fields (`EventBase`); `parentRunId` and `agentId` are left out "
        "of the JSON when absent.",
        "",
        *_properties_table(
            events.EventBase, events.EventBase.model_json_schema(by_alias=True), defs
        ),
        "",
    ]
    envelope = set(events.EventBase.model_json_schema(by_alias=True)["properties"])
    for model in kinds:
        name = model.__name__
        sub = defs[name]
        kind = sub["properties"]["kind"]["const"]
        payload = {k: v for k, v in sub["properties"].items() if k not in envelope}
        lines += [
            f"## `{kind}`",
            "",
            _cell(_rst_to_md(inspect.cleandoc(model.__doc__ or ""))) + f" (`{name}`)",
            "",
            *_properties_table(model, {**sub, "properties": payload}, defs),
            "",
        ]
    lines += ["## Shared types", ""]
    for name in _SHARED:
        model = getattr(events, name)
        if name not in defs:
            continue
        lines += [
            f"### `{name}`",
            "",
            _cell(_rst_to_md(_first_paragraph(model.__doc__))),
            "",
            *_properties_table(model, defs[name], defs),
            "",
        ]
    lines += [
        "## The JSON Schema",
        "",
        "The whole union, as `TypeAdapter(RuntimeEvent).json_schema(by_alias=True)` gives it:",
        "",
        '??? note "JSON Schema of `RuntimeEvent`"',
        "",
        "    ```json",
        *("    " + line for line in json.dumps(schema, indent=2).splitlines()),
        "    ```",
        "",
    ]
    return "\n".join(lines)


if (
    __name__ == "__main__"
):  # print one page: python scripts/mkdocs_hooks.py cli|configuration|events
    import sys

    pages = {"cli": cli_page, "configuration": configuration_page, "events": events_page}
    print(pages[sys.argv[1] if len(sys.argv) > 1 else "cli"]())
