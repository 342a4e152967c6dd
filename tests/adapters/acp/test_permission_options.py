"""Which of an ACP agent's permission options a decision picks (:func:`adapters.acp.driver.
pick_option`), with the options Hermes offers (``allow_session`` is of kind ``allow_always``:
ACP has no session kind) and with a plain agent's."""

from __future__ import annotations

from typing import Any

from adapters.acp.driver import pick_option

HERMES = {
    "options": [
        {"optionId": "allow_once", "kind": "allow_once", "name": "Allow once"},
        {"optionId": "allow_session", "kind": "allow_always", "name": "Allow for session"},
        {"optionId": "allow_always", "kind": "allow_always", "name": "Allow always"},
        {"optionId": "deny", "kind": "reject_once", "name": "Deny"},
        {"optionId": "deny_always", "kind": "reject_always", "name": "Deny always"},
    ]
}
PLAIN = {
    "options": [
        {"optionId": "yes", "kind": "allow_once", "name": "Yes"},
        {"optionId": "yes-all", "kind": "allow_always", "name": "Yes, don't ask again"},
        {"optionId": "no", "kind": "reject_once", "name": "No"},
    ]
}


def picked(params: dict[str, Any], allow: bool, **scope: bool) -> str:
    outcome = pick_option(params, allow, **scope)["outcome"]
    return outcome.get("optionId") or outcome["outcome"]


def test_always_picks_the_agents_permanent_option_not_its_session_one() -> None:
    assert picked(HERMES, True, always=True) == "allow_always"
    assert picked(PLAIN, True, always=True) == "yes-all"


def test_for_the_run_picks_a_session_option_else_once() -> None:
    assert picked(HERMES, True, session=True) == "allow_session"
    assert picked(PLAIN, True, session=True) == "yes"  # never a permanent grant for one run


def test_once_and_reject() -> None:
    assert picked(HERMES, True) == "allow_once"
    assert picked(HERMES, False) == "deny"
    assert picked(PLAIN, False) == "no"
    assert picked({"options": []}, True) == "cancelled"
    only_always = {"options": [{"optionId": "a", "kind": "allow_always", "name": "A"}]}
    assert picked(only_always, True) == "a"
