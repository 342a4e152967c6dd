"""``ringleader runtimes`` (installed, health, capabilities, plan; --ray: the nodes) and
``ringleader config`` (the effective configuration and its sources)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, TextIO

import attrs
import trio

from orchestrator.cli.options import (
    config_option,
    json_option,
    load_cli_config,
    one_line,
    ray_option,
    short,
    sub_command,
    table,
)
from orchestrator.core.config import RuntimeConfig
from orchestrator.core.errors import ConfigError, RuntimeNotFoundError
from orchestrator.core.events import now_ms
from orchestrator.core.integration import resolve_runtime_integration
from orchestrator.core.lifetime import existing_state_dir
from orchestrator.core.quota import QuotaBook, summarize
from orchestrator.core.registry import (
    RuntimeSpec,
    discover_runtimes,
)

__all__ = ["register"]


@attrs.frozen
class _RuntimeRow:
    runtime: str
    installed: str
    auth: str
    health: str
    capabilities: str
    plan: str


async def _runtime_row(spec: RuntimeSpec, config: RuntimeConfig) -> _RuntimeRow:
    """One row of ``ringleader runtimes``; a runtime that cannot even be built says why."""
    installed = "in-process"
    if spec.locate is not None:
        try:
            where = spec.locate(config)
            installed = f"{where.path} ({where.version})" if where.version else where.path
        except RuntimeNotFoundError as exc:
            installed = f"no: {exc.install_hint or 'not installed'}"
    if spec.key_envs is None:
        auth = "not needed"
    else:
        names = spec.key_envs(config)
        present = [n for n in names if os.environ.get(n)]
        auth = f"yes (${present[0]})" if present else f"no (set ${' or $'.join(names)})"
    try:
        adapter = spec.create(config)  # imports the runtime's module: before any clock runs
    except Exception as exc:
        return _RuntimeRow(spec.id, installed, auth, f"no: {one_line(exc)}", "-", "-")
    await trio.lowlevel.checkpoint()
    async with adapter:
        caps = adapter.capabilities()
        health = await adapter.health()
    plan = resolve_runtime_integration(caps)
    flags = [
        name
        for name, on in (
            ("streaming", caps.streaming),
            ("steerable", caps.steerable),
            ("resume", caps.resume),
            ("approval", caps.tool_approval),
            ("mcp", caps.mcp),
        )
        if on
    ]
    if caps.context_window_tokens:
        flags.append(f"ctx={caps.context_window_tokens // 1000}k")
    status = "ok" if health.ok else f"no: {short(health.message or '', 60)}"
    return _RuntimeRow(spec.id, installed, auth, status, ",".join(flags) or "-", plan.home.kind)


async def _runtimes(config_file: str | None, out: TextIO) -> int:
    specs = discover_runtimes()
    config = load_cli_config(config_file, specs)
    rows: list[_RuntimeRow | None] = [None] * len(specs)

    async def fill(index: int, spec: RuntimeSpec) -> None:
        rows[index] = await _runtime_row(spec, config.runtime(spec.id))

    async with trio.open_nursery() as nursery:  # health checks run side by side (≤ 2 s each)
        for index, spec in enumerate(specs):
            nursery.start_soon(fill, index, spec)
    cells: list[tuple[str, ...]] = [
        ("runtime", "health", "installed", "auth", "capabilities", "plan", "quota")
    ]
    readings = QuotaBook.in_state_dir(existing_state_dir()).readings()
    now = now_ms()
    for row in rows:
        assert row is not None
        quota = summarize([r for r in readings if r.runtime_id == row.runtime], now)
        cells.append(
            (row.runtime, row.health, row.installed, row.auth, row.capabilities, row.plan, quota)
        )
    table(cells, out)
    return 0


def _ray_runtimes(address: str, as_json: bool, out: TextIO) -> int:
    """``runtimes --ray``: each node of the cluster and what it can run."""
    from rich.console import Console
    from rich.table import Table

    from orchestrator.engine.hosts import ray_nodes

    nodes = ray_nodes(None if address == "local" else address)
    if as_json:  # JSON Lines: a node per line
        for node in nodes:
            out.write(json.dumps(node) + "\n")
        return 0
    table = Table(title="Ray nodes")
    for column in ("node", "address", "runtimes (version)", "declared slots"):
        table.add_column(column)
    for node in nodes:
        runtimes = ", ".join(
            f"{rid} ({version})" if version else rid for rid, version in node["runtimes"].items()
        )
        slots = ", ".join(f"{rid}: {amount:g}" for rid, amount in node["slots"].items())
        table.add_row(node["node"], node["address"], runtimes or "none", slots or "-")
    Console(file=out).print(table)
    return 0


_DEFAULTS: dict[str, str] = {
    "max_runs": "no limit",
    "watermark": "85 (%)",
    "rotate_to": "the same runtime",
    "permission": "the runtime's own",
}
"""What an unset ``[runtimes.ID]`` field means, where ringleader decides it."""


def _config_rows(loaded: Any, specs: Any) -> list[tuple[str, str, str]]:
    """Every setting with its value (an unset one: its default, the binary: where it is found)
    and source; a runtime's rows only for what it uses; then ``[budget]``, ``[breaker]`` and
    ``[sandbox]``."""
    from orchestrator.core.registry import RUN_SETTINGS

    by_id = {spec.id: spec for spec in specs}
    rows: list[tuple[str, str, str]] = []
    for key, value, source in loaded.describe(by_id):
        _, runtime_id, field = key.split(".", 2)
        field = field.split(".", 1)[0]
        spec = by_id.get(runtime_id)
        if (
            spec is not None
            and spec.settings is not None
            and field not in spec.settings | RUN_SETTINGS
        ):
            continue
        if value == "-" and source == "default":
            if field == "binary" and spec is not None and spec.locate is not None:
                try:
                    value = spec.locate(loaded.runtime(runtime_id)).path
                    source = "installed"
                except (RuntimeNotFoundError, OSError):
                    value = "not installed (ringleader install " + runtime_id + ")"
            else:
                value = _DEFAULTS.get(field, "the runtime's own default")
        rows.append((key, value, source))
    config = loaded.config
    for section, model in (
        ("budget", config.budget),
        ("breaker", config.breaker),
        ("sandbox", config.sandbox),
    ):
        if model is None:
            rows.append((section, "off (no [breaker] table)", "default"))
            continue
        for field, value in model.model_dump().items():
            key = f"{section}.{field}"
            shown = "-" if value is None else json.dumps(value)
            if value is None:
                shown = "no limit" if section == "budget" else "-"
            rows.append((key, shown, loaded.sources.get(key, "default")))
    return rows


def _config(config_file: str | None, as_json: bool, out: TextIO) -> int:
    specs = discover_runtimes()
    loaded = load_cli_config(config_file, specs)
    rows = _config_rows(loaded, specs)
    if as_json:  # JSON Lines: the files, then one object per setting
        out.write(json.dumps({"files": [str(f) for f in loaded.files]}) + "\n")
        for k, v, src in rows:
            out.write(json.dumps({"key": k, "value": v, "source": src}) + "\n")
        return 0
    files = ", ".join(str(f) for f in loaded.files) or "none (defaults and environment only)"
    out.write(f"config files: {files}\n")
    table([("key", "value", "source"), *rows], out)
    return 0


def _handle_runtimes(args: argparse.Namespace, out: TextIO) -> int:
    if args.json and not args.ray:
        raise ConfigError("runtimes: --json lists the nodes of a Ray cluster; add --ray ADDRESS")
    if args.ray:
        return _ray_runtimes(args.ray, bool(args.json), out)
    return trio.run(_runtimes, args.config_file, out)


def _handle_config(args: argparse.Namespace, out: TextIO) -> int:
    return _config(args.config_file, bool(args.json), out)


def register(sub: Any) -> None:
    """Add runtimes and config to the command line."""
    runtimes = sub_command(
        sub,
        "runtimes",
        "list runtimes: installed, health, capabilities, plan",
        "List every runtime ringleader knows, whether it is installed and healthy, and what it "
        "can do (streaming, steering, resume, context window, home).",
        ["ringleader runtimes", "ringleader runtimes --config team.toml"],
    )
    config_option(runtimes)
    ray_option(runtimes, "list what each node of the Ray cluster can run")
    json_option(runtimes, "the nodes, with --ray (one JSON object per line)")
    config = sub_command(
        sub,
        "config",
        "print the effective configuration (secrets redacted) and its sources",
        "Print every configuration value ringleader would use, and where it comes from: "
        "defaults, ./ringleader.toml, the user config, --config, the environment. Keys appear "
        "by variable name only.",
        ["ringleader config", "ringleader config --json"],
    )
    json_option(config, "the files, then each setting (one JSON object per line)")
    config_option(config)
    runtimes.set_defaults(handler=_handle_runtimes)
    config.set_defaults(handler=_handle_config)
