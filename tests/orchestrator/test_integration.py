"""The integration plan: every branch of the original executor's integration plans and its capability matrix."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.core import (
    Capabilities,
    ConnectedHome,
    EphemeralHome,
    NativeHomeClaim,
    PersistentHome,
    RuntimeIntegrationPlan,
    resolve_runtime_integration,
)

PER_IDENTITY = NativeHomeClaim(scope="per-identity", persist=True)
PER_IDENTITY_NO_PERSIST = NativeHomeClaim(scope="per-identity", persist=False)
PER_RUN = NativeHomeClaim(scope="per-run", persist=False)
PER_RUN_PERSIST = NativeHomeClaim(scope="per-run", persist=True)
CLASSES: list[Any] = [None, "wrapped-oneshot", "native", "connected-substrate"]


def caps(**seam: Any) -> Capabilities:
    return Capabilities(
        streaming=True, mcp=False, worktrees=False, resume=True, tool_approval=False, **seam
    )


def plan_row(plan: RuntimeIntegrationPlan) -> tuple[str, bool, bool, bool]:
    assert plan.co_run_scheduler is False
    return (plan.home.kind, plan.preserve_skills, plan.preserve_memory, plan.use_gateway_channels)


@pytest.mark.parametrize(
    ("seam", "expected"),
    [
        pytest.param({}, ("ephemeral", False, False, False), id="omitted-seam"),
        pytest.param(
            {"runtime_class": "connected-substrate", "native_channels": "gateway"},
            ("connected", False, False, True),
            id="connected+gateway",
        ),
        pytest.param(
            {"runtime_class": "connected-substrate"},
            ("connected", False, False, False),
            id="connected-without-channel-claim",
        ),
        pytest.param(
            {"runtime_class": "connected-substrate", "native_channels": "none"},
            ("connected", False, False, False),
            id="connected-channels-none",
        ),
        pytest.param(
            {
                "runtime_class": "connected-substrate",
                "native_home": PER_IDENTITY,
                "native_skills": "preserve",
                "native_memory": "preserve",
            },
            ("connected", False, False, False),
            id="connected-ignores-home-skills-memory",
        ),
        pytest.param(
            {
                "runtime_class": "wrapped-oneshot",
                "native_home": PER_IDENTITY,
                "native_skills": "preserve",
                "native_memory": "preserve",
                "native_channels": "none",
                "native_scheduler": True,
            },
            ("persistent", True, True, False),
            id="hermes-shape",
        ),
        pytest.param(
            {"runtime_class": "wrapped-oneshot", "native_home": PER_RUN},
            ("ephemeral", False, False, False),
            id="codex-per-run-non-persist",
        ),
        pytest.param(
            {"native_home": PER_RUN_PERSIST, "native_skills": "preserve"},
            ("ephemeral", False, False, False),
            id="per-run+persist-is-ephemeral",
        ),
        pytest.param(
            {"native_home": PER_IDENTITY_NO_PERSIST, "native_memory": "preserve"},
            ("ephemeral", False, False, False),
            id="per-identity-non-persist-is-ephemeral",
        ),
        pytest.param(
            {"native_skills": "preserve", "native_memory": "preserve"},
            ("ephemeral", False, False, False),
            id="preserve-without-home-clamped",
        ),
        pytest.param(
            {"native_home": PER_RUN, "native_skills": "preserve", "native_memory": "preserve"},
            ("ephemeral", False, False, False),
            id="preserve-in-per-run-home-clamped",
        ),
        pytest.param(
            {"native_home": PER_IDENTITY, "native_skills": "preserve", "native_memory": "none"},
            ("persistent", True, False, False),
            id="persistent-skills-only",
        ),
        pytest.param(
            {"runtime_class": "native", "native_home": PER_IDENTITY, "native_memory": "preserve"},
            ("persistent", False, True, False),
            id="native-memory-only",
        ),
        pytest.param(
            {"native_channels": "gateway"},
            ("ephemeral", False, False, False),
            id="gateway-claim-ignored-unless-connected",
        ),
        pytest.param(
            {"runtime_class": "native", "native_home": PER_IDENTITY, "native_channels": "gateway"},
            ("persistent", False, False, False),
            id="native-gateway-claim-ignored",
        ),
    ],
)
def test_every_branch(seam: dict[str, Any], expected: tuple[str, bool, bool, bool]) -> None:
    assert plan_row(resolve_runtime_integration(caps(**seam))) == expected


def test_home_types_are_the_three_kinds() -> None:
    assert isinstance(resolve_runtime_integration(caps()).home, EphemeralHome)
    persistent = resolve_runtime_integration(caps(native_home=PER_IDENTITY)).home
    assert persistent == PersistentHome()
    assert persistent.scope == "per-identity"
    connected = resolve_runtime_integration(caps(runtime_class="connected-substrate")).home
    assert isinstance(connected, ConnectedHome)


SEAMS: list[dict[str, Any]] = [
    {},
    {"native_home": PER_IDENTITY},
    {"native_home": PER_IDENTITY, "native_skills": "preserve", "native_memory": "preserve"},
    {"native_home": PER_IDENTITY, "native_skills": "none", "native_memory": "preserve"},
    {"native_home": PER_RUN, "native_skills": "preserve"},
    {"native_home": PER_RUN_PERSIST, "native_memory": "preserve"},
    {"native_skills": "preserve", "native_channels": "gateway"},
    {"native_home": PER_IDENTITY, "native_channels": "gateway", "native_scheduler": True},
]


@pytest.mark.parametrize("seam", SEAMS)
def test_native_resolves_exactly_like_wrapped_oneshot(seam: dict[str, Any]) -> None:
    native = resolve_runtime_integration(caps(runtime_class="native", **seam))
    assert native == resolve_runtime_integration(caps(runtime_class="wrapped-oneshot", **seam))
    # an omitted class is the conservative wrapped-oneshot
    assert native == resolve_runtime_integration(caps(**seam))


@pytest.mark.parametrize("runtime_class", CLASSES)
@pytest.mark.parametrize("seam", SEAMS)
def test_co_run_scheduler_is_false_for_every_class(
    runtime_class: Any, seam: dict[str, Any]
) -> None:
    plan = resolve_runtime_integration(caps(runtime_class=runtime_class, **seam))
    assert plan.co_run_scheduler is False
    assert plan.model_dump(by_alias=True)["coRunScheduler"] is False


@pytest.mark.parametrize("runtime_class", CLASSES)
@pytest.mark.parametrize("seam", SEAMS)
def test_native_scheduler_never_matters(runtime_class: Any, seam: dict[str, Any]) -> None:
    base = {k: v for k, v in seam.items() if k != "native_scheduler"}
    plans = {
        resolve_runtime_integration(
            caps(runtime_class=runtime_class, native_scheduler=flag, **base)
        ).model_dump_json()
        for flag in (None, False, True)
    }
    assert len(plans) == 1


def test_resolution_is_pure() -> None:
    c = caps(runtime_class="native", native_home=PER_IDENTITY, native_memory="preserve")
    before = c.model_dump()
    assert resolve_runtime_integration(c) == resolve_runtime_integration(c)
    assert c.model_dump() == before


def test_plan_wire_names_are_camel_case() -> None:
    plan = resolve_runtime_integration(caps(native_home=PER_IDENTITY, native_skills="preserve"))
    assert plan.model_dump(by_alias=True) == {
        "home": {"kind": "persistent", "scope": "per-identity"},
        "preserveSkills": True,
        "preserveMemory": False,
        "useGatewayChannels": False,
        "coRunScheduler": False,
    }


# -- the shipped runtimes' capability matrix and their resolved plans -------

MATRIX: dict[str, tuple[dict[str, Any], tuple[str, bool, bool, bool]]] = {
    "openclaw": (
        {
            "streaming": True,
            "mcp": False,
            "worktrees": False,
            "resume": True,
            "tool_approval": True,
            "models": (),
            "runtime_class": "connected-substrate",
            "native_skills": "preserve",
            "native_memory": "preserve",
            "native_channels": "gateway",
            "native_scheduler": True,
        },
        ("connected", False, False, True),
    ),
    "claude-code": (
        {
            "streaming": True,
            "mcp": True,
            "worktrees": True,
            "resume": True,
            "tool_approval": True,
            "models": ("sonnet", "opus", "haiku"),
            "context_window_tokens": 200_000,
            "runtime_class": "wrapped-oneshot",
            "native_skills": "none",
            "native_memory": "none",
            "native_channels": "none",
            "native_scheduler": False,
        },
        ("ephemeral", False, False, False),
    ),
    "codex": (
        {
            "streaming": True,
            "mcp": True,
            "worktrees": True,
            "resume": True,
            "tool_approval": True,
            "models": ("gpt-5-codex", "gpt-5", "o4-mini"),
            "runtime_class": "wrapped-oneshot",
            "native_home": PER_IDENTITY,
            "native_skills": "none",
            "native_memory": "none",
            "native_channels": "none",
            "native_scheduler": False,
        },
        ("persistent", False, False, False),
    ),
    "hermes": (
        {
            "streaming": False,
            "mcp": True,
            "worktrees": True,
            "resume": True,
            "tool_approval": True,
            "models": (),
            "runtime_class": "wrapped-oneshot",
            "native_home": PER_IDENTITY,
            "native_skills": "preserve",
            "native_memory": "preserve",
            "native_channels": "none",
            "native_scheduler": True,
        },
        ("persistent", True, True, False),
    ),
    "clawboo-native": (
        {
            "streaming": True,
            "mcp": True,
            "worktrees": True,
            "resume": True,
            "tool_approval": True,
            "steerable": True,
            "models": ("claude-haiku-4-5", "claude-sonnet-4-6", "gpt-4o-mini", "gpt-4o"),
            "context_window_tokens": 200_000,
            "runtime_class": "native",
            "native_home": PER_IDENTITY,
            "native_skills": "none",
            "native_memory": "preserve",
            "native_channels": "none",
            "native_scheduler": False,
        },
        ("persistent", False, True, False),
    ),
    "clawboo-mock": (
        {
            "streaming": True,
            "mcp": False,
            "worktrees": False,
            "resume": False,
            "tool_approval": False,
            "models": ("mock",),
        },
        ("ephemeral", False, False, False),
    ),
}


@pytest.mark.parametrize("runtime", list(MATRIX))
def test_capability_matrix_resolves_to_the_reference_plan_row(runtime: str) -> None:
    declared, expected = MATRIX[runtime]
    assert plan_row(resolve_runtime_integration(Capabilities(**declared))) == expected
