"""The native runtime's demo: one tool turn against a model server (or an in-process script).

:func:`demo_adapter` builds a :class:`~.adapter.NativeAdapter` whose model talks to ``base_url``
(the built-in scripted model server, started by the CLI) with a ``list_files`` tool confined to
the run's working directory. :func:`scripted_demo_adapter` does the same with the in-process
scripted model, so the demo also runs with nothing listening.
"""

from __future__ import annotations

import os
from pathlib import Path

import trio
from pydantic import BaseModel, Field

from orchestrator.adapter import StartOpts

from .adapter import NativeAdapter
from .models.base import ModelAdapter
from .models.providers import create_adapter
from .models.scripted import Reply, ScriptedModel
from .tools import Tool, ToolContext

__all__ = ["DEMO_PROMPT", "demo_adapter", "list_files_tool", "scripted_demo_adapter"]

DEMO_PROMPT = "List the files in the workspace, then summarize."


class ListFilesInput(BaseModel):
    path: str = Field(default=".", description="Directory relative to the workspace.")


def list_files_tool(root: str | os.PathLike[str] | None = None) -> Tool[ListFilesInput]:
    """``list_files``: sorted entries of a directory under ``root`` (the cwd by default)."""

    def listing(path: str) -> list[str]:
        base = Path(root or Path.cwd()).resolve()
        target = (base / path).resolve()
        if target != base and base not in target.parents:
            raise ValueError(f"path {path!r} is outside the workspace")
        return sorted(p.name for p in target.iterdir())

    async def list_files(inp: ListFilesInput, ctx: ToolContext) -> str:
        entries = await trio.to_thread.run_sync(listing, inp.path)
        return "\n".join(entries) or "(empty)"

    return Tool(
        name="list_files",
        description="List the files in a workspace directory.",
        do=list_files,
        input_model=ListFilesInput,
        parallel_safe=True,
    )


def demo_adapter(
    base_url: str,
    *,
    provider: str = "anthropic",
    model: str = "claude-haiku-4-5",
    api_key: str = "demo-key",
    root: str | None = None,
) -> NativeAdapter:
    """A native adapter on a (scripted) model server at ``base_url``."""

    def factory(opts: StartOpts) -> ModelAdapter:
        return create_adapter(
            provider=provider, model=opts.model or model, api_key=api_key, base_url=base_url
        )

    return NativeAdapter(
        model_factory=factory,
        tools=[list_files_tool(root)],
        system_prompt="You are ringleader's native demo agent.",
    )


def scripted_demo_adapter(root: str | None = None) -> NativeAdapter:
    """The same demo with the in-process scripted model (no network at all)."""

    def factory(opts: StartOpts) -> ModelAdapter:
        return ScriptedModel(
            [
                Reply(
                    text="Let me look at the workspace. ",
                    tool_calls=[("list_files", {"path": "."})],
                    tokens_in=120,
                    tokens_out=24,
                ),
                Reply(text="The workspace listing is above.", tokens_in=180, tokens_out=16),
            ],
            model="claude-haiku-4-5",
        )

    return NativeAdapter(model_factory=factory, tools=[list_files_tool(root)])
