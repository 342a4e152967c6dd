"""The ringleader error hierarchy: one root, few meaningful branches, all picklable.

::

    RingleaderError(Exception)                       root of everything ringleader raises
    ├── ConfigError(RingleaderError, ValueError)     bad user configuration or CLI arguments
    │   └── AgentOptionsError(.., TypeError)         a native agent's options or call arguments
    ├── OutputValidationError                        a native run's answer never matched its output schema
    ├── AdapterError                                 anything from one runtime adapter (.adapter, .session_key)
    │   ├── RuntimeNotFoundError                     runtime binary missing (.path, .install_hint)
    │   ├── RuntimeStartError                        spawn or handshake failed
    │   ├── RuntimeExitedError                       the runtime exited badly (.exit_code, .stderr_tail)
    │   ├── ProtocolError                            a line or frame we cannot read (.line, truncated)
    │   │   └── LineTooLongError                     the line framer's cap tripped (.limit)
    │   ├── RuntimeReportedError                     the runtime itself said it failed (.code)
    │   └── McpServerError                           an MCP server of the native runtime (.server)
    │       ├── McpStartError                        it could not start, connect or list its tools
    │       └── McpServerDiedError                   it exited or its connection broke mid-run
    ├── ActorError                                   supervision (.actor_id)
    │   ├── ActorCrashedError                        an actor's task tree raised
    │   ├── MailboxClosedError                       a message was sent to a finished actor
    │   ├── CapabilityError                          the runtime does not support what was asked
    │   └── BreakerOpenError                         the runtime's circuit breaker is open (fail fast)
    ├── BudgetExceededError                          a cost, turn or time limit was reached
    │   └── MaxTurnsError                            a native agent run hit its turn limit (.max_turns)
    ├── PromptCancelledError                         a native agent run was cancelled (.reason)
    ├── AbortError                                   a native Glove request was aborted (.reason, .result)
    ├── ToolCallError                                a native agent's call_tool failed (.tool_name, .kind)
    ├── ToolApprovalRequiredError                    a tool call needs approval, no handler (.request)
    └── HostError                                    a host could not place or keep a task
        ├── NoNodeForRuntimeError                    no node of the cluster can run the runtime
        └── NodeLostError                            the node running the task died

trio's own ``Cancelled``, ``ClosedResourceError`` and ``BrokenResourceError`` are used as they are.

Every error keeps its constructor arguments in ``args`` order so that ``type(e)(*e.args)``
rebuilds it, which is what :mod:`pickle` does; keyword-only data is carried through
``__reduce__``. Messages never contain secrets: adapters pass text through
:func:`redact_secrets` before building an error from runtime output, and every event is redacted
again at the run's actor (:mod:`orchestrator.core.redact`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import trio

from orchestrator.core.redact import redact_text

__all__ = [
    "AbortError",
    "ActorCrashedError",
    "ActorError",
    "AdapterError",
    "AgentOptionsError",
    "ApplyRefusedError",
    "BreakerOpenError",
    "BudgetExceededError",
    "CapabilityError",
    "ConfigError",
    "HostError",
    "LineTooLongError",
    "MailboxClosedError",
    "MaxTurnsError",
    "McpServerDiedError",
    "McpServerError",
    "McpStartError",
    "NoNodeForRuntimeError",
    "NodeLostError",
    "OutputValidationError",
    "PromptCancelledError",
    "ProtocolError",
    "ReviewError",
    "RingleaderError",
    "RuntimeExitedError",
    "RuntimeNotFoundError",
    "RuntimeReportedError",
    "RuntimeStartError",
    "ToolApprovalRequiredError",
    "ToolCallError",
    "exception_leaves",
    "redact_secrets",
    "single_exception",
]

_MAX_LINE_IN_ERROR = 200


def redact_secrets(text: str) -> str:
    """Replace every known secret (by value, in its common encodings) and anything shaped like an
    API key or token in ``text`` with ``[REDACTED]`` (see :mod:`orchestrator.core.redact`)."""
    return redact_text(text)


class RingleaderError(Exception):
    """Root of every error ringleader raises.

    ``event_code`` is the stable string an adapter puts in ``error{code}`` when it reports this
    error on the event stream.
    """

    event_code: str = "ringleader_error"


class ConfigError(RingleaderError, ValueError):
    """Bad user configuration, options or command-line arguments."""

    event_code = "config_error"


class AgentOptionsError(ConfigError, TypeError):
    """A native agent's options or call arguments are invalid (Anvia raises ``TypeError`` for
    an invalid id: this is both a :class:`ConfigError` and a ``TypeError``)."""

    event_code = "agent_options_error"


class OutputValidationError(RingleaderError):
    """The native loop's final answer still did not match the output schema after the
    bounded retries: ``problems`` (one ``"<field>: <what>"`` line each) of the last answer,
    ``attempts`` (answers checked) and ``text`` (the last answer)."""

    event_code = "output_invalid"

    def __init__(self, problems: tuple[str, ...] | list[str], attempts: int, text: str = ""):
        self.problems = tuple(problems)
        self.attempts = attempts
        self.text = text
        shown = "; ".join(self.problems[:3]) + ("; …" if len(self.problems) > 3 else "")
        super().__init__(
            f"the answer did not match the output schema after {attempts} attempt"
            f"{'s' if attempts != 1 else ''}: {shown}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problems, self.attempts, self.text))


class AdapterError(RingleaderError):
    """Something went wrong in one runtime adapter."""

    event_code = "adapter_error"

    def __init__(
        self, message: str, *, adapter: str | None = None, session_key: str | None = None
    ) -> None:
        super().__init__(message)
        self.adapter = adapter
        self.session_key = session_key

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def _extra(self) -> dict[str, Any]:
        return {"adapter": self.adapter, "session_key": self.session_key}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, self._extra()))


def _rebuild(cls: type[AdapterError], args: tuple[Any, ...], extra: dict[str, Any]) -> Any:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(extra)
    return err


class RuntimeNotFoundError(AdapterError):
    """The runtime's binary is not installed; ``install_hint`` says how to install it."""

    event_code = "runtime_not_found"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        install_hint: str | None = None,
        adapter: str | None = None,
        session_key: str | None = None,
    ) -> None:
        super().__init__(message, adapter=adapter, session_key=session_key)
        self.path = path
        self.install_hint = install_hint

    def _extra(self) -> dict[str, Any]:
        return {**super()._extra(), "path": self.path, "install_hint": self.install_hint}


class RuntimeStartError(AdapterError):
    """Spawning the runtime or its handshake failed."""

    event_code = "runtime_start_failed"


class RuntimeExitedError(AdapterError):
    """The runtime exited before finishing its run (``exit_code``, last lines of stderr)."""

    event_code = "runtime_exited"

    def __init__(
        self,
        message: str,
        *,
        exit_code: int | None = None,
        stderr_tail: str = "",
        adapter: str | None = None,
        session_key: str | None = None,
    ) -> None:
        super().__init__(message, adapter=adapter, session_key=session_key)
        self.exit_code = exit_code
        self.stderr_tail = redact_secrets(stderr_tail)

    def _extra(self) -> dict[str, Any]:
        return {**super()._extra(), "exit_code": self.exit_code, "stderr_tail": self.stderr_tail}


class ProtocolError(AdapterError):
    """A line or frame from the runtime could not be read; ``line`` holds its (truncated) start."""

    event_code = "protocol_error"

    def __init__(
        self,
        message: str,
        *,
        line: str | bytes = "",
        adapter: str | None = None,
        session_key: str | None = None,
    ) -> None:
        super().__init__(message, adapter=adapter, session_key=session_key)
        if isinstance(line, bytes):
            line = line[: _MAX_LINE_IN_ERROR * 4].decode("utf-8", "replace")
        self.line = redact_secrets(line[:_MAX_LINE_IN_ERROR])

    def _extra(self) -> dict[str, Any]:
        return {**super()._extra(), "line": self.line}


class LineTooLongError(ProtocolError):
    """A line exceeded the framer's hard cap (``limit`` bytes); it was discarded."""

    event_code = "line_too_long"

    def __init__(
        self,
        message: str,
        *,
        limit: int,
        line: str | bytes = "",
        adapter: str | None = None,
        session_key: str | None = None,
    ) -> None:
        super().__init__(message, line=line, adapter=adapter, session_key=session_key)
        self.limit = limit

    def _extra(self) -> dict[str, Any]:
        return {**super()._extra(), "limit": self.limit}


class RuntimeReportedError(AdapterError):
    """The runtime itself reported a failure (``code`` is its own error code, if any)."""

    event_code = "runtime_reported"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        adapter: str | None = None,
        session_key: str | None = None,
    ) -> None:
        super().__init__(message, adapter=adapter, session_key=session_key)
        self.code = code

    def _extra(self) -> dict[str, Any]:
        return {**super()._extra(), "code": self.code}


class McpServerError(AdapterError):
    """An MCP server the native runtime connected to failed (``server`` is its name)."""

    event_code = "mcp_server_error"

    def __init__(
        self,
        message: str,
        *,
        server: str = "",
        adapter: str | None = None,
        session_key: str | None = None,
    ) -> None:
        super().__init__(message, adapter=adapter, session_key=session_key)
        self.server = server

    def _extra(self) -> dict[str, Any]:
        return {**super()._extra(), "server": self.server}


class McpStartError(McpServerError):
    """An MCP server could not be started, connected to, initialized or asked for its tools."""

    event_code = "mcp_start_failed"


class McpServerDiedError(McpServerError):
    """An MCP server exited, or its connection broke, while its run was still using it."""

    event_code = "mcp_server_died"


class ActorError(RingleaderError):
    """Supervision and actor failures."""

    event_code = "actor_error"

    def __init__(self, message: str, *, actor_id: str | None = None) -> None:
        super().__init__(message)
        self.actor_id = actor_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_actor, (type(self), self.args, {"actor_id": self.actor_id}))


def _rebuild_actor(cls: type[ActorError], args: tuple[Any, ...], extra: dict[str, Any]) -> Any:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(extra)
    return err


class ActorCrashedError(ActorError):
    """An actor's task tree raised; the cause is chained as ``__cause__``."""

    event_code = "actor_crashed"


class MailboxClosedError(ActorError):
    """A message was sent to an actor that has finished or been fenced."""

    event_code = "mailbox_closed"


class CapabilityError(ActorError):
    """The runtime's capabilities do not allow what was asked (e.g. steering a non-steerable run)."""

    event_code = "capability_error"


class BreakerOpenError(ActorError):
    """The runtime (or native provider) failed too often; its breaker is open for a cool-down."""

    event_code = "breaker_open"


class BudgetExceededError(RingleaderError):
    """A cost, turn, rotation or time budget was exhausted."""

    event_code = "budget_exceeded"


class MaxTurnsError(BudgetExceededError):
    """A native agent run reached its turn limit (Anvia's ``MaxTurnsError``): ``max_turns``,
    the run's ``chat_history`` and the ``prompt`` it was answering."""

    event_code = "max_turns"

    def __init__(self, max_turns: int, chat_history: Sequence[Any] = (), prompt: Any = None):
        super().__init__(f"Reached max turn limit: {max_turns}")
        self.max_turns = max_turns
        self.chat_history = list(chat_history)
        self.prompt = prompt

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.max_turns, self.chat_history, self.prompt))


class PromptCancelledError(RingleaderError):
    """A native agent run was cancelled (Anvia's ``PromptCancelledError``): the ``reason`` and
    the run's ``chat_history`` up to the cancel (every tool call closed by a result)."""

    event_code = "prompt_cancelled"

    def __init__(self, reason: str, chat_history: Sequence[Any] = ()):
        super().__init__(f"Prompt cancelled: {reason}")
        self.reason = reason
        self.chat_history = list(chat_history)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.chat_history))


class AbortError(RingleaderError):
    """A native Glove request was aborted (Glove's ``AbortError``): by its cancel token, or by a
    lifecycle hook that stopped it (``reason`` says which and why). ``result`` is what the request
    had reached (the loop's ``AskResult``: text so far, usage, turns), every open tool call closed."""

    event_code = "aborted"

    def __init__(self, message: str = "Request aborted", result: Any = None) -> None:
        super().__init__(message)
        self.reason = message
        self.result = result

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.result))


class ToolCallError(RingleaderError):
    """A native agent's ``call_tool`` ended in an error result (``kind``: not_found,
    invalid_input, denied, timeout, aborted, failed); the message is the model-visible text."""

    event_code = "tool_call_error"

    def __init__(self, message: str, tool_name: str = "", kind: str = "failed") -> None:
        super().__init__(message, tool_name, kind)
        self.tool_name = tool_name
        self.kind = kind

    def __str__(self) -> str:
        return str(self.args[0])


class ToolApprovalRequiredError(RingleaderError):
    """A tool call needs approval and the run has no approval handler (Anvia's error); ``request``
    is the :class:`~orchestrator.core.approvals.ApprovalRequest`."""

    event_code = "tool_approval_required"

    def __init__(self, message: str, *, request: Any = None) -> None:
        super().__init__(message)
        self.request = request

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_actor, (type(self), self.args, {"request": self.request}))


class HostError(RingleaderError):
    """A host (e.g. :class:`~orchestrator.engine.hosts.ray.RayHost`) could not place or keep a task."""

    event_code = "host_error"


class NoNodeForRuntimeError(HostError):
    """No node of the cluster has the runtime installed (or declares its resource)."""

    event_code = "no_node_for_runtime"


class NodeLostError(HostError):
    """The node running the task died; its runs were marked ``interrupted`` on the head."""

    event_code = "node_lost"


class ReviewError(RingleaderError):
    """A run's workspace cannot be diffed, compared, applied or pruned as asked (no such run, no
    workspace recorded, the workspace is gone, git failed)."""

    event_code = "review_error"


class ApplyRefusedError(ReviewError):
    """``apply`` refused before changing anything the person has: a dirty working tree, a target
    branch checked out in another worktree, a conflict (``files`` lists them), an original that
    changed since the snapshot."""

    event_code = "apply_refused"

    def __init__(self, message: str, *, files: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.files = files


def exception_leaves(error: BaseException) -> list[BaseException]:
    """Every non-group exception inside ``error`` (``[error]`` for a plain exception)."""
    if isinstance(error, BaseExceptionGroup):
        inner = cast(tuple[BaseException, ...], error.exceptions)  # pyright: ignore[reportUnknownMemberType]
        return [leaf for e in inner for leaf in exception_leaves(e)]
    return [error]


def single_exception(error: BaseException) -> BaseException | None:
    """The one exception wrapped by (nested) groups, if there is exactly one and it is not a
    cancellation (which must stay inside its group for trio to route it)."""
    found = exception_leaves(error)
    if len(found) == 1 and not isinstance(found[0], trio.Cancelled):
        return found[0]
    return None
