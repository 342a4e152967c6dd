"""Redaction catches the secrets tools commonly print — an env secret under any name (a
``DATABASE_URL``'s password), GitHub, AWS, Slack, Stripe, Google and JWT tokens, PEM private
keys — at the one redaction point, and redacts values, never variable names."""

from __future__ import annotations

import pytest

from orchestrator.core.events import EventFactory
from orchestrator.core.redact import REDACTED, StreamRedactor, redact_text, register_env_secrets

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAt3st\nq7ktW0Lp8gQ=\n"
    "-----END RSA PRIVATE KEY-----"
)
TOKENS = {
    "github": "ghp_" + "Ab3" * 12,
    "github fine-grained": "github_pat_11ABCDEFG0" + "x1Y2z3" * 8,
    "aws key id": "AKIA" + "IOSFODNN7EXAMPL2",
    "aws sts key id": "ASIA" + "Y3FZQ2ABCDEFGH7K",
    "slack": "xoxb-" + "2403958125-" + "aB3dE5fG7hI9",
    "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "google api key": "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3",
    "pem": PEM,
}


@pytest.mark.parametrize("name", list(TOKENS))
def test_common_token_formats_are_redacted(name: str) -> None:
    token = TOKENS[name]
    for text in (token, f"found {token} in the output", f'{{"value": "{token}"}}'):
        redacted = redact_text(text)
        assert token not in redacted and REDACTED in redacted, (name, redacted)
    # through the one choke point, in a tool's output
    make = EventFactory(run_id="r")
    [event] = StreamRedactor().push(make.tool_result("c1", f"$ env\n{token}\n", name="bash"))
    assert token not in str(event.model_dump())


def test_ordinary_text_is_left_alone() -> None:
    for text in (
        "right through the night, though ghosts AKIA-like ASIA travel",
        "git@github.com:org/repo.git and https://example.com/a_b?x=1",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "x_test_y sk_live AIza",
    ):
        assert redact_text(text) == text


def test_an_env_secret_under_any_name_and_values_not_names() -> None:
    register_env_secrets(
        {
            "DATABASE_URL": "postgres://app:Zq8vL2pRw7Xt@db.internal:5432/main",
            "RINGLEADER_NATIVE_API_KEY_ENV": "ANTHROPIC_API_KEY",
            "ANTHROPIC_API_KEY": "t11-AbCdEfGh-12345678",
            "GH_TOKEN_FILE": "/home/me/.config/gh/token",
        }
    )
    out = redact_text("Zq8vL2pRw7Xt was the password")
    assert "Zq8vL2pRw7Xt" not in out
    env = "ANTHROPIC_API_KEY=t11-AbCdEfGh-12345678\nGH_TOKEN_FILE=/home/me/.config/gh/token"
    assert redact_text(env) == (
        "ANTHROPIC_API_KEY=[REDACTED]\nGH_TOKEN_FILE=/home/me/.config/gh/token"
    )
    # a password in any URL, registered or not
    assert redact_text("clone https://bob:hunter22xy@git.example/r.git") == (
        "clone https://bob:[REDACTED]@git.example/r.git"
    )
