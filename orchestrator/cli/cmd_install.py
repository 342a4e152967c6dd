"""``ringleader install RUNTIME…``: the real runtimes at their pinned versions, for this user
(the installer, ``install_runtimes.sh`` beside this module, also serves
``scripts/install-runtimes``)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

from orchestrator.cli.options import sub_command
from orchestrator.core.errors import ConfigError
from orchestrator.core.installs import RUNTIMES_DIR_ENV, runtimes_dir

__all__ = ["INSTALLABLE", "register"]

INSTALLABLE = (
    "claude-code",
    "codex",
    "hermes",
    "openclaw",
    "claude-agent-acp",
    "codex-acp",
    "opencode",
    "qwen-code",
    "gemini-cli",
)
"""What the installer installs (its pins are in ``install_runtimes.sh``); the last five are the
ACP agents behind ``--runtime acp:NAME`` (``acp-agents`` installs all five)."""

_SCRIPT = Path(__file__).with_name("install_runtimes.sh")


def _handle(args: argparse.Namespace, out: TextIO) -> int:
    wanted: list[str] = list(dict.fromkeys(args.runtimes))
    unknown = [r for r in wanted if r not in (*INSTALLABLE, "all", "acp-agents")]
    if unknown:
        raise ConfigError(
            f"install: unknown runtime {', '.join(map(repr, unknown))}; installable: "
            f"{', '.join(INSTALLABLE)} (native and scripted need no install)"
        )
    dest = runtimes_dir()
    print(f"ringleader: installing {', '.join(wanted)} into {dest}", file=sys.stderr, flush=True)
    # the installer's progress lines (each step, its time, the version) go straight to stderr
    done = subprocess.run(
        ["bash", str(_SCRIPT), *wanted],
        env=os.environ | {RUNTIMES_DIR_ENV: str(dest)},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        print("ringleader: install failed (its last lines above say why)", file=sys.stderr)
        return 1
    out.write(f"installed in {dest}; `ringleader runtimes` shows them\n")
    return 0


def register(sub: Any) -> None:
    """Add install to the command line."""
    install = sub_command(
        sub,
        "install",
        "install real runtimes (pinned versions) for this user",
        "Install Claude Code, Codex, Hermes, OpenClaw or the third-party ACP agents behind "
        "--runtime acp:NAME (acp-agents: all five; docs/acp-agents.md) at the versions ringleader "
        "was measured "
        "against, isolated per runtime, into $RINGLEADER_RUNTIMES_DIR (default: a source "
        "checkout's .runtimes/, else ~/.local/share/ringleader/runtimes), with progress on "
        "stderr. Needs npm (and Python 3.11+ for Hermes); contacts only the package registries. "
        "To use a runtime you installed yourself instead, set runtimes.ID.binary in the config.",
        [
            "ringleader install claude-code codex",
            "ringleader install acp-agents",
            "ringleader install all",
        ],
    )
    install.add_argument(
        "runtimes",
        nargs="+",
        metavar="RUNTIME",
        help=f"{', '.join(INSTALLABLE)}, acp-agents or all",
    )
    install.set_defaults(handler=_handle)
