"""How Claude Code is launched and spoken to: configuration, argv, environment, homes, control.

Everything here is about the *process*; the event mapping lives in :mod:`.normalize`.

* :class:`ClaudeCodeConfig` — the adapter's settings (mode, model, permissions, retries, …).
* :func:`claude_args` — the argv after the binary (no shell): ``-p``, stream-json output with
  ``--verbose`` (mandatory) and ``--include-partial-messages`` (true deltas); in long-lived mode
  ``--input-format stream-json`` and ``--permission-prompt-tool stdio``; model, resume, max turns,
  permission mode and tool lists; in one-shot mode the prompt last, after ``--`` (a prompt that
  starts with ``-`` stays a prompt).
* :func:`run_env` — the allow-listed environment plus the run's own ``CLAUDE_CONFIG_DIR`` and
  ``HOME``, the variables that stop all non-essential traffic (docs/runtimes.md §1.2: with them the CLI
  makes exactly one connection, to the model server, and no DNS lookups) and a retry cap
  (``CLAUDE_CODE_MAX_RETRIES``; the CLI's default of 10 takes 165 s on a persistent 500).
* :func:`prepare_home` — the run's state directory (mode 0700) with ``home/`` inside.
* :class:`ControlClient` — our side of the long-lived control protocol (``initialize``,
  ``interrupt``, ``set_model``), responses routed back by the adapter's reader.
* :class:`PermissionDecision` / :data:`PermissionPolicy` — how ``can_use_tool`` prompts are
  answered in long-lived mode; the default, :func:`deny_all`, denies whatever the CLI's own rules
  did not already allow.
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, cast

import attrs

from orchestrator.core.adapter import PromptImage, RunMcpServer
from orchestrator.core.errors import ConfigError, RuntimeReportedError, redact_secrets

from .._cli import Answers
from .._process import DEFAULT_ENV_ALLOW, child_env
from .dialect import ControlResponse, encode_line

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "QUIET_ENV",
    "ClaudeCodeConfig",
    "ControlClient",
    "Launcher",
    "Mode",
    "PermissionDecision",
    "PermissionPolicy",
    "allow_all",
    "ask_all",
    "claude_args",
    "default_state_root",
    "deny_all",
    "permission_answer",
    "prepare_home",
    "run_env",
    "user_message",
]

Mode: TypeAlias = Literal["one-shot", "long-lived"]
Launcher: TypeAlias = Callable[[Sequence[str]], Sequence[str]]
"""Turns Claude Code's arguments into the argv to run (default: the native binary first)."""

DEFAULT_MAX_RETRIES: Final = 2

QUIET_ENV: Final[Mapping[str, str]] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
}
"""Variables that stop every request that is not a model call (updates, telemetry, error
reports, the ``/api/hello`` preconnect and its DNS lookups). Always set; a run cannot unset them."""


@attrs.frozen
class PermissionDecision:
    """The answer to one ``can_use_tool`` prompt."""

    allow: bool
    message: str = "denied by the ringleader permission policy"
    """Why it was denied (the model sees it as the tool's error result)."""
    updated_input: Mapping[str, Any] | None = None
    """Run the tool with this input instead (allow only)."""
    ask: bool = False
    """Ask a person (the run's approval book, :mod:`orchestrator.core.asking`); with nobody to
    ask the call is denied."""


PermissionPolicy: TypeAlias = Callable[[str, Mapping[str, Any]], PermissionDecision]
"""``(tool_name, tool_input) -> decision`` for a long-lived run's permission prompts."""


def deny_all(tool_name: str, tool_input: Mapping[str, Any]) -> PermissionDecision:
    """The default policy: deny what the CLI's own rules (mode, allowed tools) did not allow."""
    return PermissionDecision(allow=False)


def allow_all(tool_name: str, tool_input: Mapping[str, Any]) -> PermissionDecision:
    """Allow every prompt (only for a sandboxed workspace)."""
    return PermissionDecision(allow=True)


def ask_all(tool_name: str, tool_input: Mapping[str, Any]) -> PermissionDecision:
    """Ask a person about every prompt (the CLI's own rules still allow read-only tools)."""
    return PermissionDecision(allow=False, ask=True)


def permission_answer(
    decision: PermissionDecision, tool_input: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``response`` of a ``control_response`` for a ``can_use_tool`` prompt."""
    if decision.allow:
        updated = decision.updated_input if decision.updated_input is not None else tool_input
        return {"behavior": "allow", "updatedInput": dict(updated)}
    return {"behavior": "deny", "message": decision.message}


def default_state_root() -> Path:
    """Where per-run Claude Code homes go when the host gives none: ``$XDG_STATE_HOME`` (else
    ``~/.local/state``) ``/ringleader/claude-code``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ringleader" / "claude-code"


@attrs.frozen
class ClaudeCodeConfig:
    """How the adapter runs Claude Code. Everything has a safe default; a run's ``StartOpts`` win
    where they overlap (model, cwd, home, max turns, environment)."""

    mode: Mode = "one-shot"
    """``one-shot``: one ``claude -p`` process per run, stdin closed, abort by SIGINT (the CLI
    then writes its result and exits 0). ``long-lived``: one process per session over stream-json
    stdin; each run is a turn; abort by the ``interrupt`` control request, so the process and its
    prompt cache survive; permission prompts answered by :attr:`permission_policy`; text written
    with ``write_context`` is steered into the running turn."""
    binary: str | None = None
    """The Claude Code executable; ``None``: the native binary installed by
    ``scripts/install-runtimes``."""
    launcher: Launcher | None = None
    """Replaces the argv entirely (tests run a fake CLI with it)."""
    launcher_stdin: bool = False
    """One-shot mode with a launcher: give the process a stdin pipe (a fake CLI fed by tests)."""
    model: str | None = None
    """Default model (``StartOpts.model`` wins); any string passes (aliases: sonnet, opus, haiku)."""
    base_url: str | None = None
    """``ANTHROPIC_BASE_URL`` (no ``/v1``); ``None``: from the run's ``env``, else the CLI's default."""
    api_key: str | None = attrs.field(default=None, repr=False)
    """``ANTHROPIC_API_KEY``; ``None``: from the run's ``env``. Never logged or put on the argv."""
    permission_mode: str | None = None
    """``--permission-mode`` (``default``, ``acceptEdits``, ``dontAsk``, ``plan``, …; as root
    ``bypassPermissions`` needs ``IS_SANDBOX=1``). ``None``: the CLI's ``default``."""
    allowed_tools: Sequence[str] = ()
    """``--allowedTools`` rules, e.g. ``"Bash(git add:*)"``."""
    disallowed_tools: Sequence[str] = ()
    """``--disallowedTools`` (a run's ``child_tool_blocklist`` is added)."""
    tools: Sequence[str] | None = None
    """``--tools``: the built-in tools offered at all (``()`` offers none)."""
    permission_policy: PermissionPolicy = deny_all
    """Long-lived mode: answers ``can_use_tool`` prompts (the default denies)."""
    max_retries: int = DEFAULT_MAX_RETRIES
    """``CLAUDE_CODE_MAX_RETRIES`` (a run's ``env`` may override it)."""
    partial_messages: bool = True
    """``--include-partial-messages``: text arrives as true deltas."""
    append_system_prompt: str | None = None
    extra_args: Sequence[str] = ()
    """More arguments, placed before the prompt."""
    extra_env: Mapping[str, str] = attrs.field(factory=dict[str, str], repr=False)
    """More environment for every run (a run's ``env`` wins)."""
    env_allow: Sequence[str] = DEFAULT_ENV_ALLOW
    state_root: Path | None = None
    """Parent of per-run homes when ``StartOpts.home_dir`` is not given."""
    keep_homes: bool = False
    """Keep adapter-made homes when the adapter closes (they are deleted by default)."""
    context_window_tokens: int = 200_000
    """Reported in capabilities (Claude Code 2.1.330 reports 200 000 for its models)."""
    sigint_grace: float = 3.0
    sigterm_grace: float = 3.0
    interrupt_grace: float = 5.0
    """Long-lived: how long an ``interrupt`` may take before the process is terminated."""
    handshake_timeout: float = 30.0
    """Long-lived: how long ``initialize`` may take."""
    idle_timeout: float = 300.0
    """Long-lived: an idle session process is closed after this many seconds."""

    def __attrs_post_init__(self) -> None:
        if self.mode not in ("one-shot", "long-lived"):
            raise ConfigError(f"unknown claude-code mode {self.mode!r}")
        if self.max_retries < 0:
            raise ConfigError("max_retries must be >= 0")


def claude_args(
    config: ClaudeCodeConfig,
    *,
    prompt: str | None,
    model: str | None,
    resume: str | None = None,
    max_turns: int | None = None,
    blocklist: Sequence[str] = (),
    fork_at: str | None = None,
    plan: bool = False,
    fork: bool = False,
    mcp_config: str | None = None,
    stream_input: bool = False,
    project_settings: bool = True,
) -> list[str]:
    """Claude Code's arguments (the binary is added by the launcher).

    ``prompt`` is ``None`` in long-lived mode (prompts then go over stdin). ``plan``: plan mode
    (``--permission-mode plan``, whatever the configured mode). ``fork``: the resumed session
    goes on as a new one (``--fork-session``). ``mcp_config``: a ``--mcp-config`` file of the
    run's own MCP servers. ``stream_input``: a one-shot run whose prompt is one stream-json
    user message on stdin (a prompt with images). ``project_settings``: the working directory
    is trusted (``ringleader trust``); otherwise its ``.claude/settings*.json`` (hooks run
    commands) and ``.mcp.json`` (servers are commands) are not loaded — ``-p`` skips Claude
    Code's own workspace trust dialog.
    """
    args = ["-p", "--output-format", "stream-json", "--verbose"]
    if not project_settings:  # only the run's private home's settings, and our MCP servers
        args += ["--setting-sources", "user", "--strict-mcp-config"]
    if config.partial_messages:
        args.append("--include-partial-messages")
    if config.mode == "long-lived":
        args += ["--input-format", "stream-json", "--permission-prompt-tool", "stdio"]
    elif stream_input:
        args += ["--input-format", "stream-json"]
    if model:
        args += ["--model", model]
    if resume:
        args += ["--resume", resume]
        if fork_at:  # the session up to that message, continued as a new session
            args += ["--resume-session-at", fork_at, "--fork-session"]
        elif fork:  # the whole session, continued as a new session
            args += ["--fork-session"]
    if mcp_config:
        args += ["--mcp-config", mcp_config]
    if max_turns is not None:
        args += ["--max-turns", str(max_turns)]
    if plan:
        args += ["--permission-mode", "plan"]
    elif config.permission_mode:
        args += ["--permission-mode", config.permission_mode]
    if config.allowed_tools:
        args += ["--allowedTools", ",".join(config.allowed_tools)]
    disallowed = [
        *config.disallowed_tools,
        *(t for t in blocklist if t not in config.disallowed_tools),
    ]
    if disallowed:
        args += ["--disallowedTools", ",".join(disallowed)]
    if config.tools is not None:
        args += ["--tools", ",".join(config.tools)]
    if config.append_system_prompt:
        args += ["--append-system-prompt", config.append_system_prompt]
    args += list(config.extra_args)
    if prompt is not None:
        args += ["--", prompt]
    return args


def run_env(config: ClaudeCodeConfig, *, home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: allow-listed variables, the configured defaults, the run's own
    ``env``, then what a run cannot change (its homes and the traffic switches)."""
    own: dict[str, str] = {"CLAUDE_CODE_MAX_RETRIES": str(config.max_retries)}
    if config.base_url:
        own["ANTHROPIC_BASE_URL"] = config.base_url
    if config.api_key:
        own["ANTHROPIC_API_KEY"] = config.api_key
    own.update(config.extra_env)
    own.update(extra)
    own.update(QUIET_ENV)
    own["CLAUDE_CONFIG_DIR"] = str(home)
    own["HOME"] = str(home / "home")
    return child_env(config.env_allow, own)


def prepare_home(home_dir: str | None, state_root: Path | None, run_name: str) -> tuple[Path, bool]:
    """The run's ``CLAUDE_CONFIG_DIR`` (created, mode 0700, with ``home/`` inside) and whether
    the adapter owns it (to delete). The host's ``home_dir`` is used as is (blocking I/O)."""
    if home_dir:
        path = Path(home_dir)
        owned = False
    else:
        path = (state_root or default_state_root()) / run_name
        owned = True
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    (path / "home").mkdir(exist_ok=True, mode=0o700)
    return path, owned


def user_message(text: str, images: Sequence[PromptImage] = ()) -> bytes:
    """A stdin line that sends ``text`` as a user message (a new turn, or a steer mid-turn),
    with ``images`` after it as image content blocks."""
    if not images:
        return encode_line({"type": "user", "message": {"role": "user", "content": text}})
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    blocks += [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
        }
        for image in images
    ]
    return encode_line({"type": "user", "message": {"role": "user", "content": blocks}})


def mcp_config_file(home: Path, servers: Sequence[RunMcpServer]) -> str | None:
    """The run's own MCP servers as a ``--mcp-config`` file in its home (0600: a server's
    ``env`` and ``headers`` may hold secrets, never put on the argv); ``None`` for none."""
    if not servers:
        return None
    entries: dict[str, Any] = {}
    for server in servers:
        if server.url is not None:
            entries[server.name] = {
                "type": "http",
                "url": server.url,
                "headers": dict(server.headers),
            }
        else:
            entries[server.name] = {
                "type": "stdio",
                "command": server.command,
                "args": list(server.args),
                "env": dict(server.env),
            }
    path = home / f"mcp-{uuid.uuid4().hex[:12]}.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"mcpServers": entries}, f)
    return str(path)


class ControlClient:
    """Our control requests over the long-lived process's stdin.

    ``send`` writes one line; the adapter's reader passes every ``control_response`` to
    :meth:`resolve`. :meth:`request` waits for the answer; an error answer raises
    :class:`RuntimeReportedError`.
    """

    def __init__(self, send: Callable[[bytes], Any], *, adapter: str = "claude-code") -> None:
        self._send = send
        self._ids = itertools.count(1)
        self._answers = Answers[ControlResponse]("the claude process")
        self._adapter = adapter

    @property
    def closed(self) -> bool:
        return self._answers.closed

    async def request(self, subtype: str, **fields: Any) -> dict[str, Any]:
        request_id = f"ringleader-{next(self._ids)}"
        line = encode_line(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {"subtype": subtype, **fields},
            }
        )
        answer = await self._answers.ask(request_id, lambda: self._send(line), subtype)
        if answer.subtype != "success":
            text = redact_secrets(str(answer.error))
            raise RuntimeReportedError(
                f"{subtype}: {text}", code="control_error", adapter=self._adapter
            )
        return dict(answer.response or {})

    async def respond(self, request_id: str, response: Mapping[str, Any]) -> None:
        """Answer one of the CLI's control requests (``can_use_tool``)."""
        await self._send(
            encode_line(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": request_id,
                        "response": dict(response),
                    },
                }
            )
        )

    async def respond_error(self, request_id: str, message: str) -> None:
        await self._send(
            encode_line(
                {
                    "type": "control_response",
                    "response": {"subtype": "error", "request_id": request_id, "error": message},
                }
            )
        )

    def resolve(self, response: ControlResponse) -> bool:
        """Route an answer to its request; False if nobody waits for it."""
        return self._answers.resolve(response.request_id, response)

    def close(self) -> None:
        """The process ended: every pending request fails with ``BrokenResourceError``."""
        self._answers.close()


def _is_prompt(entry: Mapping[str, Any]) -> bool:
    """A user entry that is a prompt (not tool results, not a meta line)."""
    if entry.get("type") != "user" or entry.get("isMeta"):
        return False
    message = entry.get("message")
    content = cast(dict[str, Any], message).get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return True
    if isinstance(content, list):
        kinds = [
            cast(dict[str, Any], block).get("type")
            for block in cast(list[Any], content)
            if isinstance(block, dict)
        ]
        return "tool_result" not in kinds
    return False


def turn_end_uuid(transcript: Path, turn: int, prompt_index: int = 0) -> str | None:
    """The ``uuid`` of the last conversation entry of turn ``turn`` of one run in a Claude Code
    session transcript (``projects/<dir>/<session>.jsonl``): the run whose prompt is the
    session's ``prompt_index``-th (0: the first run; each resumed run adds a prompt). A turn is
    one model answer (its entries share a ``message.id``) with the tool results that follow it;
    turn ``0`` ends at the run's prompt. ``None``: no such turn, or no transcript.

    Only ``user`` and ``assistant`` entries of the main chain count (attachments, sidechains of
    subagents, meta lines and bookkeeping are skipped). What ``--resume-session-at`` takes."""
    try:
        lines = transcript.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    prompts = -1
    answers: list[str] = []
    last_of_turn: dict[int, str] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        entry = cast(dict[str, Any], entry)
        kind = entry.get("type")
        uuid_ = entry.get("uuid")
        if kind not in ("user", "assistant") or not isinstance(uuid_, str):
            continue
        if entry.get("isSidechain") or entry.get("isMeta"):
            continue
        if _is_prompt(entry):
            prompts += 1
            if prompts > prompt_index:
                break  # the next run's prompt
            if prompts == prompt_index:
                last_of_turn = {0: uuid_}
            continue
        if prompts != prompt_index:
            continue
        if kind == "assistant":
            message = entry.get("message")
            message_id = (
                cast(dict[str, Any], message).get("id") if isinstance(message, dict) else None
            )
            key = str(message_id or uuid_)
            if not answers or answers[-1] != key:
                answers.append(key)
        last_of_turn[len(answers)] = uuid_
    return last_of_turn.get(turn)
