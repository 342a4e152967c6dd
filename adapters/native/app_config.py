"""The app layer declared in ``ringleader.toml``: hooks, skills and sub-agents without Python
glue, for ``ringleader run --runtime native``.

::

    [runtimes.native.hooks]
    compact = "myapp.hooks:compact"          # /compact: a hook handler (HookContext)
    [runtimes.native.skills.concise]
    handler = "myapp.skills:concise"         # /concise: a skill handler (SkillContext)
    expose_to_agent = true                   #   … also offered through glove_invoke_skill
    [runtimes.native.skills.python-debug]
    dir = "docs/skills/python-debug"         # a content skill: SKILL.md and its sections
    [runtimes.native.subagents.reviewer]
    factory = "myapp.agents:reviewer"        # a sub-agent factory (SubAgentFactoryContext)
    [runtimes.native.subagents.summarizer]
    instructions = "Summarize what you are given in one paragraph."

A ``module:function`` path is imported when the runtime is built (the working directory is on
the import path, so a project's own modules are found); a missing module or attribute, or an
attribute that is not callable, is one :class:`~orchestrator.core.errors.ConfigError` naming the
key. Handlers and factories may be sync or async. Content skill directories are read for each
run, relative to its working directory, alongside ``skills_dir`` (one ``glove_read_skill``).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.core.adapter import StartOpts
from orchestrator.core.config import SkillConfig, SubagentConfig
from orchestrator.core.errors import ConfigError

from .extensions import (
    HookContext,
    HookResult,
    SkillContext,
    SubAgentFactoryContext,
)
from .messages import ContentPart

if TYPE_CHECKING:
    from .glove import Glove

__all__ = ["config_app", "load_callable"]


def load_callable(path: str, where: str) -> Callable[..., Any]:
    """``module:function`` (``function`` may be dotted: ``module:Class.method``) imported now."""
    module_name, _, attr_path = path.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # the project's own modules, as `python -m` would find them
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import {module_name} ({exc})") from None
    except Exception as exc:  # the user's module raised while importing
        raise ConfigError(
            f"{where}: importing {module_name} failed: {type(exc).__name__}: {exc}"
        ) from None
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(f"{where}: {module_name} has no attribute {attr_path}") from None
    if not callable(target):
        raise ConfigError(f"{where}: {path} is not callable")
    return target


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    made = fn(*args)
    return await made if inspect.isawaitable(made) else made


def _hook(fn: Callable[..., Any]) -> Callable[[HookContext], Any]:
    async def hook(ctx: HookContext) -> HookResult | None:
        return await _call(fn, ctx)

    return hook


def _skill(fn: Callable[..., Any]) -> Callable[[SkillContext], Any]:
    async def skill(ctx: SkillContext) -> str | Sequence[ContentPart]:
        return await _call(fn, ctx)

    return skill


def _factory(fn: Callable[..., Any]) -> Callable[[SubAgentFactoryContext], Any]:
    async def factory(ctx: SubAgentFactoryContext) -> Any:
        return await _call(fn, ctx)

    return factory


def _instructed(
    sub: SubagentConfig,
    opts: StartOpts,
    model_factory: Callable[[StartOpts], Any],
    glove_class: type[Glove],
) -> Callable[[SubAgentFactoryContext], Any]:
    """A fresh child Glove per call: its own model client, the instructions as system prompt."""

    def factory(ctx: SubAgentFactoryContext) -> Glove:
        del ctx
        model = model_factory(opts.model_copy(update={"model": sub.model or opts.model}))
        return glove_class(model=model, system_prompt=sub.instructions or "").build()

    return factory


def config_app(
    hooks: Mapping[str, str],
    skills: Mapping[str, SkillConfig],
    subagents: Mapping[str, SubagentConfig],
    model_factory: Callable[[StartOpts], Any],
) -> Callable[[Glove, StartOpts], None] | None:
    """The ``app`` setup that defines the declared hooks, handler skills and sub-agents on each
    run's Glove (content skill directories go to the adapter's ``skill_dirs``); ``None`` when
    nothing is declared. Every import path is resolved here, before any run."""
    hook_fns = {
        name: load_callable(path, f"runtimes.native.hooks.{name}") for name, path in hooks.items()
    }
    skill_fns = {
        name: (load_callable(skill.handler, f"runtimes.native.skills.{name}.handler"), skill)
        for name, skill in skills.items()
        if skill.handler is not None
    }
    factories = {
        name: load_callable(sub.factory, f"runtimes.native.subagents.{name}.factory")
        for name, sub in subagents.items()
        if sub.factory is not None
    }
    if not (hook_fns or skill_fns or subagents):
        return None

    def app(glove: Glove, opts: StartOpts) -> None:
        from .glove import Glove as GloveClass

        for name, fn in hook_fns.items():
            glove.define_hook(name, _hook(fn))
        for name, (fn, skill) in skill_fns.items():
            glove.define_skill(
                name,
                _skill(fn),
                description=skill.description,
                expose_to_agent=skill.expose_to_agent,
            )
        for name, sub in subagents.items():
            factory_fn = factories.get(name)
            if factory_fn is not None:
                description = sub.description or f"The {name} sub-agent."
                glove.define_sub_agent(name, _factory(factory_fn), description=description)
            else:
                assert sub.instructions is not None
                description = sub.description or sub.instructions.strip().splitlines()[0]
                made = _instructed(sub, opts, model_factory, GloveClass)
                glove.define_sub_agent(name, made, description=description)

    return app
