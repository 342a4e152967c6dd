"""The native runtime's ``bash`` tool: one command line through ``bash -c`` in the workspace.

The command runs as a child process through :func:`adapters._process.open_child`, the driver every
CLI adapter shares: its own process group, stdin the null device, an **allow-listed environment**
(:func:`adapters._process.child_env`: ``PATH``, locale, terminal, temp dir, CA bundles, user
identity — never the run's model keys or anything else from ours), the workspace as its working
directory. stdout and stderr are merged (``exec 2>&1``) and collected in bounded memory, head and
tail kept (:class:`~.output.HeadTail`).

On its timeout, or when the run is aborted, the **whole process group** is stopped (SIGINT,
SIGTERM, SIGKILL, with short graces) and reaped before the tool returns: background jobs the
command started go too. A non-zero exit is an error result carrying the output.

``bash`` is not a sandbox: the command can read and write whatever the user running ringleader
can. That is why the default :class:`~.policy.PermissionPolicy` asks before running it (and a
run with no way to ask denies it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import attrs
import trio
from pydantic import BaseModel, Field

from orchestrator.core.errors import LineTooLongError, RuntimeNotFoundError, RuntimeStartError

from .._process import DEFAULT_ENV_ALLOW, ChildProcess, child_env, open_child
from .messages import ToolResultData
from .output import DEFAULT_OUTPUT_LIMIT, HeadTail
from .tools import Tool, ToolContext

__all__ = ["BashOptions", "bash_tool"]

_HINT: Final = "to keep all of it, redirect it to a file (> out.log 2>&1) and read that"


@attrs.frozen
class BashOptions:
    """How ``bash`` runs commands."""

    timeout_s: float = 120.0
    """Seconds a command may run when the model does not say."""
    max_timeout_s: float = 600.0
    """The longest timeout a model may ask for."""
    env_allow: tuple[str, ...] = DEFAULT_ENV_ALLOW
    """Variables copied from our environment (``NAME*`` is a prefix); nothing else is."""
    extra_env: Mapping[str, str] = attrs.field(factory=dict[str, str], converter=dict)
    """Variables set for every command (they win)."""
    output_bytes: int = DEFAULT_OUTPUT_LIMIT
    """Bytes of output the model sees (head and tail kept)."""
    kill_grace_s: float = 1.0
    """Seconds after SIGINT, then after SIGTERM, before the group is killed."""
    shell: str = "bash"
    """The shell (looked up on ``PATH``); run as ``<shell> -c <command>``."""


class BashInput(BaseModel):
    command: str = Field(
        min_length=1,
        description="The command line; run with `bash -c` in the workspace root. Output "
        "(stdout and stderr merged) is returned; long output keeps its head and tail.",
    )
    timeout_s: float | None = Field(
        default=None, gt=0, description="Seconds before the command is killed."
    )


def command_env(
    options: BashOptions, root: str, *, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The command's complete environment (allow-listed; see the module docstring)."""
    src = os.environ if base is None else base
    extra: dict[str, str] = {
        "PWD": root,
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
    }
    if "HOME" in src:
        extra["HOME"] = src["HOME"]
    extra.update(options.extra_env)
    return child_env(options.env_allow, extra, base=src)


def bash_tool(root: str, options: BashOptions | None = None) -> Tool[BashInput]:
    """``bash`` running in ``root`` (see the module docstring)."""
    opts = options or BashOptions()

    async def bash(inp: BashInput, ctx: ToolContext) -> Any:
        timeout = min(inp.timeout_s or opts.timeout_s, opts.max_timeout_s)
        out = HeadTail(opts.output_bytes)
        code: int | None = None
        ran: list[ChildProcess] = []
        with trio.move_on_after(timeout) as timer:
            try:
                async with open_child(
                    [opts.shell, "-c", "exec 2>&1\n" + inp.command],
                    env=command_env(opts, root),
                    cwd=root,
                    max_line_bytes=opts.output_bytes,
                    sigint_grace=opts.kill_grace_s,
                    sigterm_grace=opts.kill_grace_s,
                    adapter="native",
                ) as child:
                    ran.append(child)
                    async for batch in child.batches():
                        for frame in batch:
                            if isinstance(frame, LineTooLongError):
                                out.note_long_line(frame.limit)
                            else:
                                out.feed(frame + b"\n")
                    code = await child.wait()
            except (RuntimeStartError, RuntimeNotFoundError) as exc:
                return ToolResultData(
                    status="error", message=f"could not run the command: {exc}", error_kind="failed"
                )
        text = out.text(_HINT)
        if timer.cancelled_caught:
            note = f"the command timed out after {timeout:g}s and its process group was killed"
            if any(c.group_survived for c in ran):
                note += " (a process survived SIGKILL)"
            return ToolResultData(status="error", message=note, data=text, error_kind="timeout")
        if code != 0:
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"{code}"
            return ToolResultData(
                status="error", message=f"exit code {how}", data=text, error_kind="failed"
            )
        return text or "(no output)"

    return Tool(
        name="bash", description=_DESCRIPTION, do=bash, input_model=BashInput, max_retries=0
    )


_DESCRIPTION: Final = (
    "Run a shell command with bash in the workspace root (non-interactive: stdin is empty). "
    "Returns the merged stdout and stderr; a non-zero exit is an error. The command is killed "
    "(with everything it started) at its timeout."
)
