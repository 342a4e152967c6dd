"""The native runtime's demo: one tool turn against a model server (or an in-process script).

:func:`demo_adapter` builds a :class:`~.adapter.NativeAdapter` whose model talks to ``base_url``
(the built-in scripted model server, started by the CLI), with the default workspace tools
(``list_files`` among them) confined to the run's working directory. :func:`scripted_demo_adapter`
does the same with the in-process scripted model, so the demo also runs with nothing listening.
"""

from __future__ import annotations

from orchestrator.core.adapter import StartOpts

from .adapter import NativeAdapter
from .models.base import ModelAdapter
from .models.providers import create_adapter
from .models.scripted import Reply, ScriptedModel

__all__ = ["DEMO_PROMPT", "demo_adapter", "scripted_demo_adapter"]

DEMO_PROMPT = "List the files in the workspace, then summarize."


def demo_adapter(
    base_url: str,
    *,
    provider: str = "anthropic",
    model: str = "claude-haiku-4-5",
    api_key: str = "demo-key",
    root: str | None = None,
) -> NativeAdapter:
    """A native adapter on a (scripted) model server at ``base_url``; ``root`` is the workspace
    when a run has no ``cwd``."""

    def factory(opts: StartOpts) -> ModelAdapter:
        return create_adapter(
            provider=provider, model=opts.model or model, api_key=api_key, base_url=base_url
        )

    return NativeAdapter(
        model_factory=factory,
        workspace=root,
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

    return NativeAdapter(model_factory=factory, workspace=root)
