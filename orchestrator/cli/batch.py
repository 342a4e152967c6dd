"""``ringleader batch FILE.toml``: the batch file.

::

    jobs = 2                      # optional: how many tasks run at once (--jobs wins)

    [[task]]
    id = "parser"                 # names the task in the view, the table and the event log
    prompt = "Fix the failing parser test."
    runtime = "native"            # see `ringleader runtimes`
    model = "anthropic:claude-haiku-4-5"   # optional
    cwd = "services/parser"       # optional; relative to the batch file's folder; default "."
    workspace = true              # optional: work in a git worktree / temporary copy (default)
    depends_on = ["plan"]         # optional: start when these tasks succeeded; a dependency
                                  # that failed, was aborted or skipped skips this one
    # the prompt may use a dependency's {{ plan.summary }}, {{ plan.diff }}, {{ plan.status }}
    account = "work"              # optional: [runtimes.<runtime>.accounts.work] (default: its own)
    fallback = ["personal", "codex"]  # optional: where to go while this one is held at a limit
                                  # (an account of the runtime, a runtime, or "runtime@account")

Part of the CLI: the library never imports this module.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from orchestrator.core.errors import ConfigError
from orchestrator.engine.chains import check_graph, check_placeholders

__all__ = ["BatchFile", "BatchTask", "load_batch"]


class BatchTask(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    prompt: str = Field(min_length=1)
    runtime: str = Field(min_length=1)
    model: str | None = None
    cwd: str = "."
    workspace: bool = True
    depends_on: tuple[str, ...] = ()
    account: str | None = Field(default=None, min_length=1)
    fallback: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _prompt_not_blank(self) -> BatchTask:
        if not self.prompt.strip():
            raise ValueError("prompt is empty")
        return self


class BatchFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    jobs: int | None = Field(default=None, ge=1, le=64)
    task: tuple[BatchTask, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> BatchFile:
        seen: set[str] = set()
        for task in self.task:
            if task.id in seen:
                raise ValueError(f"task id {task.id!r} appears twice")
            seen.add(task.id)
        return self


def load_batch(path: str | Path) -> BatchFile:
    """Read and validate a batch file; every problem is one :class:`ConfigError` line. Each
    task's ``cwd`` comes back absolute (relative ones are taken from the file's folder)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"batch file {file}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"batch file {file}: is a directory") from None
    except UnicodeDecodeError:
        raise ConfigError(f"batch file {file}: not a text file (not valid UTF-8)") from None
    except OSError as exc:
        raise ConfigError(f"batch file {file}: cannot read it ({exc.strerror or exc})") from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"batch file {file}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"batch file {file}: nested too deeply") from None
    try:
        batch = BatchFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ConfigError(f"batch file {file}: {where}: {first['msg']}{more}") from None
    depends = {t.id: t.depends_on for t in batch.task}
    check_graph(depends, where=f"batch file {file}")
    check_placeholders(depends, {t.id: t.prompt for t in batch.task}, where=f"batch file {file}")
    base = file.resolve().parent
    tasks = tuple(t.model_copy(update={"cwd": str((base / t.cwd).resolve())}) for t in batch.task)
    return batch.model_copy(update={"task": tasks})
