"""How ringleader runs git on a person's repository: the one environment every git command of
ours gets (workspaces, snapshots, review, landing, chains, checkpoints, setup scripts).

It points git at nothing but the repository the command names (no inherited ``GIT_DIR`` or
``GIT_INDEX_FILE``), never prompts, and parses in the C locale. And it runs nothing the
repository itself configures: a repository's own ``.git/config`` can name programs that git
runs by itself — a ``core.fsmonitor`` program on every ``status`` and ``add``, clean and smudge
filters whenever a file is read or checked out — and ``.git/hooks`` runs on checkout. A clone
brings none of these; a repository unpacked from an archive, or someone else's copied folder,
brings them all, and ringleader runs git there before any agent does (a worktree for the run,
a snapshot, a diff on the board). So ours run with:

- ``core.fsmonitor=false`` (git then stats files itself; it only speeds up ``status``);
- ``core.hooksPath=/dev/null``: no hooks (a worktree's ``post-checkout`` included) — except for
  ``apply --push``, the person's own publishing, which runs their ``pre-push`` hook as
  ``git push`` would;
- every filter driver the repository's own configuration defines passing content through
  unchanged (``clean``/``smudge`` = ``cat``, no ``process``); drivers from the person's global
  configuration (Git LFS's, installed with ``git lfs install``) still run.

Overrides travel as ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (git 2.31+),
which outrank every configuration file. Plumbing commands we use run no external diff or
textconv programs anyway.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

__all__ = ["SAFE_CONFIG", "git_env", "local_filter_overrides", "run_git"]

_SCRUB = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX")

SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
)
"""Set for every git command of ours (``hooks=True`` leaves out the second)."""

_FILTER_PARTS = {"clean": "cat", "smudge": "cat", "process": ""}


def _base_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"})
    if extra:
        env.update(extra)
    return env


def local_filter_overrides(cwd: Path, git_flags: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Pass-through settings for each filter driver the repository at ``cwd`` defines in its own
    configuration (``[]`` outside a repository, or without git). Reading configuration runs
    nothing."""
    try:
        listed = subprocess.run(
            ["git", *git_flags, "config", "--local", "--includes", "--null", "--name-only",
             "--get-regexp", r"^filter\."],
            cwd=cwd, capture_output=True, env=_base_env(None), check=False,
        )  # fmt: skip
    except OSError:
        return []
    drivers: list[str] = []
    for key in listed.stdout.decode("utf-8", "replace").split("\0"):
        name, dot, _part = key.removeprefix("filter.").rpartition(".")
        if key.startswith("filter.") and dot and name and name not in drivers:
            drivers.append(name)
    return [(f"filter.{d}.{part}", value) for d in drivers for part, value in _FILTER_PARTS.items()]


def git_env(
    extra: Mapping[str, str] | None = None,
    *,
    repo: Path | None = None,
    git_flags: tuple[str, ...] = (),
    hooks: bool = False,
) -> dict[str, str]:
    """The environment a git command of ours runs with (see the module docstring): the
    caller's, without variables that would point git at another repository or index, no
    prompts, C locale, then ``extra``; with :data:`SAFE_CONFIG` and, given the repository the
    command runs in (``repo``, with ``git_flags`` such as ``--git-dir``), its own filter drivers
    passing content through. ``hooks``: keep the person's hooks (``apply --push`` only)."""
    env = _base_env(extra)
    overrides = [kv for kv in SAFE_CONFIG if not (hooks and kv[0] == "core.hooksPath")]
    if repo is not None:
        overrides += local_filter_overrides(repo, git_flags)
    try:  # the person's own GIT_CONFIG_* settings stay; ours come after them, and win
        first = max(int(env.get("GIT_CONFIG_COUNT", "0")), 0)
    except ValueError:
        first = 0
    env["GIT_CONFIG_COUNT"] = str(first + len(overrides))
    for n, (key, value) in enumerate(overrides, start=first):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env


@overload
def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    text: Literal[True],
    errors: str = "strict",
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    git_flags: Sequence[str] = (),
    hooks: bool = False,
) -> subprocess.CompletedProcess[str]: ...
@overload
def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    text: Literal[False] = False,
    errors: str = "strict",
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    git_flags: Sequence[str] = (),
    hooks: bool = False,
) -> subprocess.CompletedProcess[bytes]: ...
def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    text: bool = False,
    errors: str = "strict",
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    git_flags: Sequence[str] = (),
    hooks: bool = False,
) -> subprocess.CompletedProcess[Any]:
    """``git [GIT_FLAGS] ARGS`` in ``cwd`` with :func:`git_env` (``env`` on top of it), output
    captured, never raising for git's exit status: the one way our code runs git. ``text``:
    str in and out, decoded with ``errors``. Blocking."""
    flags = tuple(git_flags)
    return subprocess.run(
        ["git", *flags, *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=text,
        errors=errors if text else None,
        check=False,
        env=git_env(env, repo=cwd, git_flags=flags, hooks=hooks),
    )
