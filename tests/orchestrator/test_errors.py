"""The error hierarchy: shape, pickling with attributes, secret redaction, group helpers."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
import trio

from orchestrator.core import (
    ActorCrashedError,
    ActorError,
    AdapterError,
    BudgetExceededError,
    CapabilityError,
    ConfigError,
    LineTooLongError,
    MailboxClosedError,
    McpServerDiedError,
    McpServerError,
    McpStartError,
    ProtocolError,
    RingleaderError,
    RuntimeExitedError,
    RuntimeNotFoundError,
    RuntimeReportedError,
    RuntimeStartError,
    exception_leaves,
    redact_secrets,
    single_exception,
)
from orchestrator.core.errors import (
    AgentOptionsError,
    MaxTurnsError,
    PromptCancelledError,
    ToolCallError,
)

PARENTS: list[tuple[type[BaseException], type[BaseException]]] = [
    (RingleaderError, Exception),
    (ConfigError, RingleaderError),
    (ConfigError, ValueError),
    (AdapterError, RingleaderError),
    (RuntimeNotFoundError, AdapterError),
    (RuntimeStartError, AdapterError),
    (RuntimeExitedError, AdapterError),
    (ProtocolError, AdapterError),
    (LineTooLongError, ProtocolError),
    (RuntimeReportedError, AdapterError),
    (McpServerError, AdapterError),
    (McpStartError, McpServerError),
    (McpServerDiedError, McpServerError),
    (ActorError, RingleaderError),
    (ActorCrashedError, ActorError),
    (MailboxClosedError, ActorError),
    (CapabilityError, ActorError),
    (BudgetExceededError, RingleaderError),
    (AgentOptionsError, ConfigError),
    (AgentOptionsError, TypeError),
    (MaxTurnsError, BudgetExceededError),
    (PromptCancelledError, RingleaderError),
    (ToolCallError, RingleaderError),
]


@pytest.mark.parametrize(("child", "parent"), PARENTS, ids=lambda c: c.__name__)
def test_hierarchy(child: type[BaseException], parent: type[BaseException]) -> None:
    assert issubclass(child, parent)


def test_branches_are_separate() -> None:
    assert not issubclass(AdapterError, ValueError)
    assert not issubclass(ActorError, AdapterError)
    assert not issubclass(BudgetExceededError, (AdapterError, ActorError))
    assert issubclass(LineTooLongError, AdapterError)
    assert issubclass(LineTooLongError, RingleaderError)


ERRORS: list[tuple[RingleaderError, dict[str, Any]]] = [
    (RingleaderError("root"), {}),
    (ConfigError("bad flag --x"), {}),
    (BudgetExceededError("over $5"), {}),
    (
        AdapterError("adapter broke", adapter="codex", session_key="k"),
        {"adapter": "codex", "session_key": "k"},
    ),
    (
        RuntimeNotFoundError(
            "claude not found",
            path="/usr/bin/claude",
            install_hint="scripts/install-runtimes claude",
            adapter="claude-code",
        ),
        {
            "path": "/usr/bin/claude",
            "install_hint": "scripts/install-runtimes claude",
            "adapter": "claude-code",
            "session_key": None,
        },
    ),
    (
        RuntimeStartError("spawn failed", adapter="hermes", session_key="s"),
        {"adapter": "hermes", "session_key": "s"},
    ),
    (
        RuntimeExitedError(
            "exited 3", exit_code=3, stderr_tail="last words", adapter="codex", session_key="k"
        ),
        {"exit_code": 3, "stderr_tail": "last words", "adapter": "codex", "session_key": "k"},
    ),
    (
        ProtocolError("bad frame", line="{oops", adapter="openclaw"),
        {"line": "{oops", "adapter": "openclaw"},
    ),
    (
        LineTooLongError(
            "too long", limit=1024, line=b"xyz", adapter="claude-code", session_key="k"
        ),
        {"limit": 1024, "line": "xyz", "adapter": "claude-code", "session_key": "k"},
    ),
    (
        RuntimeReportedError("rate limited", code="429", adapter="native"),
        {"code": "429", "adapter": "native"},
    ),
    (McpServerError("MCP server 'db' failed", server="db"), {"server": "db"}),
    (
        McpStartError("MCP server 'db' could not start", server="db", adapter="native"),
        {"server": "db", "adapter": "native", "session_key": None},
    ),
    (
        McpServerDiedError("MCP server 'db' died", server="db", session_key="k"),
        {"server": "db", "session_key": "k"},
    ),
    (ActorError("actor failed", actor_id="a1"), {"actor_id": "a1"}),
    (ActorCrashedError("crashed", actor_id="a2"), {"actor_id": "a2"}),
    (MailboxClosedError("closed", actor_id="a3"), {"actor_id": "a3"}),
    (CapabilityError("not steerable", actor_id=None), {"actor_id": None}),
    (AgentOptionsError("bad id"), {}),
    (
        MaxTurnsError(3, ["history"], "prompt"),
        {"max_turns": 3, "chat_history": ["history"], "prompt": "prompt"},
    ),
    (PromptCancelledError("stop", ["h"]), {"reason": "stop", "chat_history": ["h"]}),
    (ToolCallError("Tool not found: x", "x", "not_found"), {"tool_name": "x", "kind": "not_found"}),
]


@pytest.mark.parametrize(
    ("error", "attributes"),
    ERRORS,
    ids=lambda e: type(e).__name__ if isinstance(e, BaseException) else "",
)
def test_every_error_pickles_with_its_attributes(
    error: RingleaderError, attributes: dict[str, Any]
) -> None:
    for attr, value in attributes.items():
        assert getattr(error, attr) == value
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        copy = pickle.loads(pickle.dumps(error, protocol=protocol))
        assert type(copy) is type(error)
        assert copy.args == error.args
        assert str(copy) == str(error)
        assert copy.__dict__ == error.__dict__
        for attr, value in attributes.items():
            assert getattr(copy, attr) == value
        assert copy.event_code == error.event_code


def test_every_error_class_is_covered_and_has_its_own_event_code() -> None:
    covered = {type(e) for e, _ in ERRORS}
    assert covered == {c for pair in PARENTS for c in pair if issubclass(c, RingleaderError)}
    codes = [cls.event_code for cls in covered]
    assert len(set(codes)) == len(codes)
    assert LineTooLongError.event_code == "line_too_long"
    assert ConfigError.event_code == "config_error"


def test_adapter_error_defaults_and_message() -> None:
    err = AdapterError("plain")
    assert (err.adapter, err.session_key, err.message) == (None, None, "plain")
    copy = pickle.loads(pickle.dumps(err))
    assert copy.message == "plain"


def test_cause_is_chained_and_pickling_keeps_the_error() -> None:
    cause = OSError("pipe closed")
    with pytest.raises(ActorCrashedError) as info:
        raise ActorCrashedError("actor died", actor_id="x") from cause
    assert info.value.__cause__ is cause
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.actor_id, str(copy)) == ("x", "actor died")


def test_pickled_errors_can_be_raised_and_caught_by_their_base() -> None:
    copy = pickle.loads(pickle.dumps(LineTooLongError("x", limit=5)))
    with pytest.raises(ProtocolError):
        raise copy


# -- redaction -------------------------------------------------------------------------------------

SECRETS = [
    ("sk-ant-api03-abcdefghijklmnopqrstuv", "key: sk-ant-api03-abcdefghijklmnopqrstuv end"),
    ("sk-proj-0123456789abcdef", "OPENAI sk-proj-0123456789abcdef"),
    ("sk-or-v1-0123456789", "openrouter=sk-or-v1-0123456789"),
    ("sk-abcdefgh12", "plain sk-abcdefgh12."),
    ("eyJhbGciOiJIUzI1NiJ9.payload.sig", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"),
    ("abc123def456", "authorization: bearer abc123def456"),
    ("s3cr3tvalue", '{"api_key": "s3cr3tvalue"}'),
    ("hunter2hunter2", "api_key=hunter2hunter2 next"),
    ("tok-98765", "API-KEY: tok-98765"),
    ("xyzw1234", "x-api-key: xyzw1234"),
    ("p4ssw0rd!", "password=p4ssw0rd!"),
    ("at-5555", "access_token=at-5555&x=1"),
    ("authvalue", "auth_token: 'authvalue'"),
]


@pytest.mark.parametrize(("secret", "text"), SECRETS)
def test_redact_secrets_removes_keys_and_tokens(secret: str, text: str) -> None:
    out = redact_secrets(text)
    assert secret not in out
    assert "[REDACTED]" in out


def test_redaction_keeps_the_labels_and_harmless_text() -> None:
    assert redact_secrets("Authorization: Bearer abcdef123456") == (
        "Authorization: Bearer [REDACTED]"
    )
    assert redact_secrets("api_key=hunter2hunter2 next") == "api_key=[REDACTED] next"
    harmless = "ask-me: the task-runner uses sk- prefixes; bearer of news; api_key is required"
    assert redact_secrets(harmless) == harmless
    assert redact_secrets("") == ""


def test_runtime_exited_error_redacts_its_stderr_tail() -> None:
    err = RuntimeExitedError(
        "codex exited with 1",
        exit_code=1,
        stderr_tail="error: 401 for key sk-proj-abcdefghijklmnop (Authorization: Bearer tok123456789)",
    )
    assert "sk-proj-abcdefghijklmnop" not in err.stderr_tail
    assert "tok123456789" not in err.stderr_tail
    assert "error: 401 for key" in err.stderr_tail
    copy = pickle.loads(pickle.dumps(err))
    assert copy.stderr_tail == err.stderr_tail
    assert "sk-proj" not in repr(copy.__dict__)


def test_protocol_error_truncates_and_redacts_its_line() -> None:
    err = ProtocolError("bad", line="x" * 1000)
    assert err.line == "x" * 200
    secret = ProtocolError("bad", line='{"api_key": "supersecret"}')
    assert "supersecret" not in secret.line
    raw = LineTooLongError("cap", limit=10, line=b"\xff\xfe" + b"y" * 2000)
    assert raw.line.startswith("\ufffd\ufffd")
    assert len(raw.line) == 200


# -- exception groups ------------------------------------------------------------------------------


def test_exception_leaves_flattens_groups() -> None:
    a, b, c = ValueError("a"), KeyError("b"), ConfigError("c")
    group = BaseExceptionGroup("outer", [a, BaseExceptionGroup("inner", [b, c])])
    assert exception_leaves(group) == [a, b, c]
    assert exception_leaves(a) == [a]


def test_single_exception() -> None:
    err = RuntimeStartError("x")
    assert single_exception(err) is err
    assert single_exception(ExceptionGroup("g", [ExceptionGroup("h", [err])])) is err
    assert single_exception(ExceptionGroup("g", [err, ValueError()])) is None

    cancelled: list[BaseException] = []

    async def main() -> None:
        with trio.CancelScope() as scope:
            scope.cancel()
            try:
                await trio.sleep(1)
            except trio.Cancelled as exc:
                cancelled.append(exc)
                raise

    trio.run(main)
    assert single_exception(BaseExceptionGroup("g", cancelled)) is None
